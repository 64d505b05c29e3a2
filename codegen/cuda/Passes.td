//===- Passes.td - the CUDA target (GPU kernels, NVVM) --*- tablegen -*-===//

#ifndef TFM_CODEGEN_CUDA_PASSES_TD
#define TFM_CODEGEN_CUDA_PASSES_TD

include "mlir/Pass/PassBase.td"

def CopiesToLinalgPass : Pass<"tfm-copies-to-linalg", "func::FuncOp"> {
  let summary = "memref.copy as linalg.copy, so that copies become kernels";
  let description = [{
    Bufferization copies buffers with `memref.copy`, which the CPU lowers
    to a runtime call on the host. On a GPU the buffers live in device
    memory, where the host cannot read them: each copy becomes a
    `linalg.copy`, which turns into a parallel loop and then a kernel like
    every other linalg op.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def FillPerUsePass : Pass<"tfm-fill-per-use", "func::FuncOp"> {
  let summary = "Give each user of a filled tensor its own fill";
  let description = [{
    CSE makes one `linalg.fill` of the zeros that every matrix product
    accumulates into; bufferization then allocates it once and copies it
    into a fresh buffer for each product that writes it. On a GPU each copy
    is a kernel launch (a third of a decode step's). Run before
    bufferization, this pass clones a fill (and the `tensor.empty` it
    fills) for each further user, so that every product fills its own
    buffer in place.

    ```mlir
    %z = linalg.fill ins(%c0 : f32) outs(%e : tensor<1x64xf32>) -> tensor<1x64xf32>
    %a = linalg.matmul ins(...) outs(%z : tensor<1x64xf32>)
    %b = linalg.matmul ins(...) outs(%z : tensor<1x64xf32>)
    // becomes
    %z = linalg.fill ...   %a = linalg.matmul ins(...) outs(%z ...)
    %z1 = linalg.fill ...  %b = linalg.matmul ins(...) outs(%z1 ...)
    ```
  }];
}

def WidenInMatmulsPass : Pass<"tfm-widen-in-matmuls", "func::FuncOp"> {
  let summary = "Products read narrow float weights as stored";
  let description = [{
    A weight stored as bf16 or f16 reaches a `linalg.matmul` through an
    elementwise `arith.extf` over the whole matrix. On the CPU the kernel
    selection reads the narrow panels directly; on a GPU that widening
    would be a kernel of its own writing an f32 copy of every matrix at
    every call, three times the bytes the product then reads. Run on
    tensors, this pass makes each product whose operand is such a widening
    read the narrow tensor itself (a mixed-precision `linalg.matmul`,
    whose body widens each element as it multiplies); the widening goes
    when nothing else uses it. The GPU lowerings of matrix products
    (tfm-lower-matvec-to-gpu, tfm-lower-matmul-to-gpu-tiles) then load the
    narrow elements and widen them in registers.

    ```mlir
    %wide = linalg.generic {identity maps} ins(%w : tensor<96x64xbf16>)
        outs(%e : tensor<96x64xf32>) { arith.extf ... }
    %y = linalg.matmul ins(%x, %wide : tensor<?x64xf32>, tensor<96x64xf32>) ...
    // becomes
    %y = linalg.matmul ins(%x, %w : tensor<?x64xf32>, tensor<96x64xbf16>) ...
    ```
  }];
}

def LowerMatvecToGpuPass : Pass<"tfm-lower-matvec-to-gpu", "func::FuncOp"> {
  let summary = "Decode's x·Wᵀ as one warp reduction per output";
  let description = [{
    A decode step multiplies a few rows (`max-rows`, known at compile time)
    by each weight matrix: as parallel loops, one thread per output would
    walk a weight row alone, and neighbouring threads would read addresses
    a row apart. This pass makes each such `linalg.matmul` (C[m, n] +=
    A[m, k] · B[n, k]) a `gpu.launch` with one warp per output element,
    `threads` / 32 warps per block: the warp's lanes stride through k
    together, so that it reads one contiguous run of the weight row, 16
    bytes per lane and load (`ld.global.v4`: four f32 weights, or eight
    bf16 or f16 ones, widened in registers) where the rows turn out
    aligned at run time (four such loads a lane in flight at once while
    whole runs of them fit: a warp per output leaves few warps on an SM
    when the outputs are few), one element otherwise; `gpu.shuffle xor` sums the
    lanes' partial sums. Where the outputs are too few to give the GPU
    `target-warps` warps (a 1.1 B model's 2048-wide projections: 16 warps
    an SM of an H200), 2, 4 or 8 warps share an output, each taking every
    second, fourth or eighth 16-byte run of its k; their sums meet in
    workgroup memory, and after a barrier the block's first threads add
    them up and write them. The weights stream from memory once, coalesced,
    with no shared memory or block barrier. When the output was just
    filled with zeros (tfm-fill-per-use gives each product its own fill),
    the fill goes and the sums are written instead of added: one launch
    fewer.

    ```mlir
    linalg.matmul indexing_maps = [(m, k), (n, k), (m, n)]
        ins(%x, %w : memref<1x768xf32>, memref<2048x768xf32>) outs(%y : memref<1x2048xf32>)
    // becomes
    gpu.launch blocks(%g, %m, %z) in (256, 1, 1) threads(%t, ...) in (256, 1, 1) {
      %n = %g * 8 + %t / 32
      scf.if %n < 2048 {
        %part = scf.if %aligned { scf.for %k = 4 * lane to 768 step 128 ... }
                else { scf.for %k = lane to 768 step 32 ... }
        %sum = 5 x (gpu.shuffle xor + addf)
        scf.if %lane == 0 { y[m, n] = %sum }
      }
    }
    ```
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect"];
  let options = [
    Option<"threads", "threads", "int64_t", /*default=*/"256",
           "Threads of a block: a multiple of 32 (a warp per output), at most 1024">,
    Option<"maxRows", "max-rows", "int64_t", /*default=*/"8",
           "Most rows of x that count as a matrix-vector product">,
    Option<"targetWarps", "target-warps", "int64_t", /*default=*/"8192",
           "Warps a product's launch aims for (an H100 or H200 holds 64 on "
           "each of its 132 SMs): where its outputs are fewer, 2, 4 or 8 "
           "warps share each output's k">
  ];
}

def LowerMatmulToGpuTilesPass
    : Pass<"tfm-lower-matmul-to-gpu-tiles", "func::FuncOp"> {
  let summary = "x·Wᵀ over many rows as a GEMM staged through shared memory";
  let description = [{
    The matrix products `tfm-lower-matvec-to-gpu` leaves (a prefill's:
    rows known at run time only) would run one thread per output, each
    reading a row of x and a row of W from memory. This pass makes each
    `linalg.matmul` (C[m, n] += A[m, k] · B[n, k]) a `gpu.launch` over
    32 x 32 tiles of C: a block of 32 x 8 threads stages 32 x 32 tiles of A
    and B in workgroup memory (neighbouring threads loading neighbouring k,
    each tile padded by a column against bank conflicts), synchronizes,
    and each thread accumulates four outputs of one column from the staged
    tiles; out-of-range rows and depths read as zero. Narrow weights
    (bf16, f16: `tfm-widen-in-matmuls`) are widened as they are staged,
    so the tiles and sums stay f32. Over a fresh zero fill, the sums are
    written and the fill goes.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect"];
}

def LowerMatmulToMmaPass
    : Pass<"tfm-lower-matmul-to-mma", "func::FuncOp"> {
  let summary = "x·Wᵀ with bf16 or f16 weights on tensor cores (mma.sync)";
  let description = [{
    The matrix products `tfm-lower-matvec-to-gpu` leaves (a prefill's)
    whose weights are bf16 or f16 (`tfm-widen-in-matmuls`) and whose
    activations and outputs are f32 run on the tensor cores (sm_80 and
    newer): each `linalg.matmul` (C[m, n] += A[m, k] · B[n, k]) becomes a
    `gpu.launch` over 64 x 64 tiles of C, a block of 4 warps each owning
    32 x 32 outputs as 2 x 4 `nvvm.mma.sync` m16n8k16 blocks with f32
    accumulators. Per stage of 32 k, the block stages both tiles in
    workgroup memory as pairs of 16-bit elements (the activations rounded
    to the weights' type, as PyTorch's bf16 products round them;
    out-of-range rows and depths as zeros), so that each fragment register
    is one 32-bit load (rows padded against bank conflicts); where a
    stage's tiles lie wholly inside both operands and their rows are
    16-byte aligned (tested at run time), each thread loads runs of 16
    bytes instead of single elements. Sums are
    written (over a fresh zero fill, which goes) or added. f32 weights
    keep `tfm-lower-matmul-to-gpu-tiles`' f32 path.

    ```mlir
    linalg.matmul ins(%x, %w : memref<?x64xf32>, memref<96x64xbf16>) outs(%y : memref<?x96xf32>)
    // becomes
    gpu.launch blocks(...) in (2, (%m + 63) / 64, 1) threads(%t, ...) in (128, 1, 1)
        workgroup(%xs : memref<64x20xi32, 3>, %ws : memref<64x20xi32, 3>) {
      scf.for %k0 = 0 to 64 step 32 iter_args(32 x f32) {
        scf.if %inside { runs of 16 bytes: 4 x (4 f32 of x), 2 x (8 bf16 of W) }
        else { 8 x (xs[row][word] = pack(truncf x[..][k], truncf x[..][k+1]), ws[..] = pack(w, w)) }
        gpu.barrier
        2 x (4 words of xs per 16 rows, 2 of ws per 8 columns, 8 x nvvm.mma.sync)
        gpu.barrier
      }
      32 x (scf.if inside { y[row, column] = sum })
    }
    ```
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::LLVM::LLVMDialect", "::mlir::NVVM::NVVMDialect"];
}

def LowerAttentionToGpuPass
    : Pass<"tfm-lower-attention-to-gpu", "ModuleOp"> {
  let summary = "Attention's kernel call as one fused GPU kernel";
  let description = [{
    For `--target=cuda`, `tfm-select-cpu-kernels` (with
    `plain-attention-only`) turns each `tfm.attention` without a bias,
    packed sequences or an int8 cache into a call of `tfm_rt_attention(q,
    k, v, out, scale, causal, window)`; after bufferization, this pass
    replaces each such call with a `gpu.launch` computing it whole: a block
    per (head, query), keys taken by chunks of as many as the block has
    threads (each scores one: q · k scaled, masked by causality and the
    window), `gpu.all_reduce` giving the chunk's maximum and sum of
    exponentials (online softmax: the running sum and the outputs are
    rescaled when the maximum grows), the weights staged in shared memory,
    and each thread accumulating one output column over its share of the
    chunk's keys. Query head h reads KV head h / (heads / kv_heads). What
    the linalg lowering takes eleven kernels for (scores, mask, maximum,
    exponentials, sum, division, weighted sum and their fills) is one, and
    the scores never reach memory. Any other runtime kernel call left in
    the module is an error: the GPU has none.

    Decode (queries known at compile time: one per step) splits the keys
    as flash-decoding does: heads blocks would leave most of the GPU idle,
    so a block of 64 threads (or the head's width) takes each (head,
    query, span of as many keys), writes the span's unnormalized outputs,
    maximum and sum to a buffer [heads, queries, spans, width + 2], and a
    second kernel, a thread per output column, rescales the spans to their
    common maximum (a span with no visible key weighs 0) and divides.

    A prefill (queries known at run time only) whose heads are a multiple
    of 8 and at most 128 wide goes by tiles instead (flash attention on
    CUDA cores, codegen/cuda/TiledAttention.cpp): a block of 256 threads
    per (head, 64 queries; 32 past 64-wide heads) stages its queries,
    scaled, in workgroup memory, then walks the keys its queries see by
    tiles of 32 (16), staging each tile of K and V once for all its
    queries. Eight lanes share a query row: each scores every eighth key of
    the tile, shuffles give the row's maximum and sum, the weights pass
    through workgroup memory, and each lane accumulates every eighth output
    column in registers. A key row is read once per 64 queries instead of
    once per query.

    ```mlir
    call @tfm_rt_attention(%q, %k, %v, %out, %scale, %causal, %window)
    // becomes
    gpu.launch blocks(%h, %i, %z) in (12, %s, 1) threads(%t, ...) in (128, 1, 1)
        workgroup(%weights : memref<128xf32, 3>, %partials : memref<128xf32, 3>) {
      scf.for %chunk = %first to %end step %c128 iter_args(%max, %sum, %acc) {
        %score = q · k[%chunk + %t] * scale      // -inf when masked
        %m = gpu.all_reduce maximumf %score uniform
        %w = exp(%score - max(%max, %m)); weights[%t] = %w
        %l = gpu.all_reduce add %w uniform
        %acc' = %acc * rescale + Σ weights[j] · v[%chunk + j, h / group, col]
      }
      out[%i, %h, col] = Σ partials / %sum
    }
    ```
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect",
                           "::mlir::memref::MemRefDialect",
                           "::mlir::math::MathDialect"];
  let options = [
    Option<"splitDecodeKeys", "split-decode-keys", "bool", /*default=*/"true",
           "Split a static number of queries' keys across blocks "
           "(flash-decoding)">,
  ];
}

def LowerReductionsToGpuPass
    : Pass<"tfm-lower-reductions-to-gpu", "func::FuncOp"> {
  let summary = "Row reductions (norms, softmax) as one block reduction per row";
  let description = [{
    A `linalg.generic` that reduces its innermost dimension (a norm's sum of
    squares, softmax's maximum and sum) would run, as parallel loops, one
    thread per row walking the whole row: a chain of dependent loads, the
    slowest part of a decode step. This pass makes each one a `gpu.launch`
    with a block per row (the parallel dimensions, innermost on the grid's
    x): its threads stride through the row, each folding its elements into
    its own accumulators (starting from the combiner's neutral element: 0
    for `addf`, -inf for `maximumf`) and writing the outputs the generic
    writes elementwise; `gpu.all_reduce` joins the accumulators and thread 0
    folds the totals into the reduced outputs, as the generic would.

    A reduced dimension between parallel ones (attention's weighted sum
    of values: queries, heads, positions reduced, head width) is first
    moved innermost (`linalg::interchangeGenericOp`): left in place, it
    would become a loop around the inner parallel dimensions, run by the
    few threads of the outer ones.

    The elementwise generic right after one (a norm's scaling after its
    sum of squares) that reads its reduced outputs over the same rows
    joins its kernel (`fuse-consumers`): once the totals are known, the
    block strides through the row again applying it, one launch instead
    of two. A reduced output that a `linalg.fill` sets just before the
    generic (nothing between them touching it) takes the fill's value
    instead of its old one, and the fill goes: a one-thread kernel fewer.
    Rows few enough to leave the GPU idle (`few-rows`: a decode step's
    norm) get blocks of up to `few-rows-threads` threads.

    Generics qualify with one reduced dimension, the innermost, at most
    three parallel ones, every reduced output combined by `addf` or
    `maximumf` of itself, and rows of at least `min-length` elements (or of
    unknown length), or at most `max-rows` rows: a prefill's attention
    scores (many rows of one head's width) stay one thread per row.

    ```mlir
    linalg.generic {iterator_types = ["parallel", "reduction"]}
        ins(%x : memref<1x768xf32>) outs(%sum : memref<1xf32>) {
      ^bb0(%in: f32, %acc: f32):
        %sq = arith.mulf %in, %in : f32
        %s = arith.addf %sq, %acc : f32
        linalg.yield %s : f32
    }
    // becomes
    gpu.launch blocks(%row, ...) in (1, 1, 1) threads(%t, ...) in (128, 1, 1) {
      %part = scf.for %r = %t to %c768 step %c128 iter_args(%a = 0.0) -> (f32)
      %total = gpu.all_reduce add %part uniform {} : (f32) -> f32
      scf.if %t == 0 { sum[row] = sum[row] + %total }
    }
    ```
  }];
  let dependentDialects = ["::mlir::affine::AffineDialect",
                           "::mlir::gpu::GPUDialect", "::mlir::scf::SCFDialect"];
  let options = [
    Option<"threads", "threads", "int64_t", /*default=*/"128",
           "Most threads of a block (a multiple of 32, at most 1024)">,
    Option<"fewRows", "few-rows", "int64_t", /*default=*/"16",
           "Reductions of at most this many rows (known at compile time) "
           "get blocks of few-rows-threads">,
    Option<"fewRowsThreads", "few-rows-threads", "int64_t", /*default=*/"1024",
           "Most threads of a block when the rows are few (a decode step's "
           "norm: a block alone on the GPU, its loads in flight at once)">,
    Option<"minLength", "min-length", "int64_t", /*default=*/"256",
           "Rows at least this long get a block each">,
    Option<"maxRows", "max-rows", "int64_t", /*default=*/"4096",
           "As do at most this many rows of any length">,
    Option<"fuseConsumers", "fuse-consumers", "bool", /*default=*/"true",
           "Apply the elementwise generic that follows a reduction and reads "
           "its totals in the same kernel">
  ];
}

def MapLoopsToGpuPass : Pass<"tfm-map-loops-to-gpu", "func::FuncOp"> {
  let summary = "Split each outermost parallel loop into blocks of threads";
  let description = [{
    `convert-parallel-loops-to-gpu` makes a kernel of an outermost
    `scf.parallel` mapped to the grid whose nested parallel loop is mapped
    to a block's threads. Linalg's parallel loops have no such nest. This
    pass tiles every outermost parallel loop: its innermost dimension (the
    contiguous one) in tiles of up to `threads`, then, while a tile holds
    fewer than `threads` iterations, the dimensions outside it. The tile
    loop's dimensions become the threads, the outer loop's the blocks, each
    innermost first (x), so that neighbouring threads touch neighbouring
    elements (coalesced loads); dimensions beyond three, and parallel loops
    nested deeper, run sequentially.

    ```mlir
    scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c512) step (%c1, %c1)
    // becomes
    scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c512) step (%c1, %c128) {
      scf.parallel (%ii, %jj) = (%c0, %c0) to (%c1, %c128) step (%c1, %c1) {
      } {mapping = [thread_y, thread_x]}
    } {mapping = [block_y, block_x]}
    ```
  }];
  let dependentDialects = ["::mlir::affine::AffineDialect",
                           "::mlir::gpu::GPUDialect"];
  let options = [
    Option<"threads", "threads", "int64_t", /*default=*/"128",
           "Threads per block to aim for">
  ];
}

def PlaceBuffersOnDevicePass : Pass<"tfm-place-buffers-on-device", "ModuleOp"> {
  let summary = "Allocate buffers on the GPU; copy inputs in and results out";
  let description = [{
    Runs once the parallel loops are `gpu.launch` regions, before they are
    outlined. Every buffer a host function allocates becomes device memory
    (`gpu.alloc`, `gpu.dealloc`). The weights blob and the caches are the
    runtime's device memory already; the integer inputs (token ids,
    positions, lengths) come from the caller's host memory and are copied
    to the device at entry; each returned buffer is copied into a host
    buffer the caller owns (MLIR's C interface: results from
    `_mlir_memref_to_llvm_alloc`). Those are the only host copies.

    The host may still compute sizes and views, but an op outside a kernel
    that reads or writes a buffer's elements would read device memory from
    the CPU: the pass refuses it, naming the op.

    A constant tensor folded to a `memref.global` (a RoPE scaling's
    frequencies, T5's relative-position buckets) is host memory too: each
    kernel that reads one gets its own `memref.get_global` (and the views
    of it), which outlining copies into the kernel's module, so the data
    is in the PTX as a device global. A kernel reading a global that is not
    constant is refused.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect",
                           "::mlir::memref::MemRefDialect"];
}

def FuseElementwiseForGpuPass
    : Pass<"tfm-fuse-elementwise-for-gpu", "func::FuncOp"> {
  let summary = "Fuse elementwise producers into their consumers (one "
                "kernel instead of several)";
  let description = [{
    On the GPU every `linalg.generic` left is a kernel launch, and a decode
    step is launch-bound. An all-parallel producer fuses into the generic
    that consumes it (linalg's elementwise fusion) when it has that one use,
    or when recomputing it per element is cheap wherever it is used: its
    only tensor inputs are smaller than its result (RoPE's inverse
    frequencies, the cosines and sines of a position, which each layer's q
    and k rotations would otherwise read from kernels of their own).
    Producers that gather (`tensor.extract`: embeddings) stay as they are.
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def NameKernelsByModulePass : Pass<"tfm-name-kernels-by-module", "ModuleOp"> {
  let summary = "Give each outlined kernel its gpu.module's unique name";
  let description = [{
    Runs after `gpu-kernel-outlining`, which names every kernel of a
    function alike (`forward_kernel`) in modules it numbers
    (`@forward_kernel_3`). The kernel of a module takes the module's name
    (of a module with several, `<module>_<kernel>`), and the launches
    follow, so that the PTX's entries, the runtime's kernel profile
    (TFM_CUDA_PROFILE) and the CUDA emulator (which looks kernels up by
    name alone) tell the kernels apart.
  }];
  let dependentDialects = ["::mlir::gpu::GPUDialect"];
}

#endif // TFM_CODEGEN_CUDA_PASSES_TD
