//===- Passes.td - codegen passes (tfm -> linalg -> LLVM) --*- tablegen -*-===//

#ifndef TFM_CODEGEN_PASSES_TD
#define TFM_CODEGEN_PASSES_TD

include "mlir/Pass/PassBase.td"

def LayOutWeightsPass : Pass<"tfm-lay-out-weights", "ModuleOp"> {
  let summary = "Place every weight in one blob; weights become its views";
  let description = [{
    Lays out every distinct `tfm.weight` of the module in one byte blob
    (64-byte aligned, in order of first use), records the layout as the
    module attribute `tfm.weight_layout` (name -> byte offset) and the
    blob's size as `tfm.weight_bytes`, and gives each function that reads
    weights a leading `memref<?xi8>` argument (location "weights"), the
    blob's base. A `tfm.weight` becomes a `memref.view` of that blob at its
    offset, read as a tensor; a `tfm.concat` of weights only is placed back
    to back and becomes one view. The `tfm.weight_decl`s go: the layout now
    says where each weight is.

    With `pack-weights` (the default), weights that only `tfm.linear` reads
    (directly or joined by `tfm.concat`) are stored as panels of 32 output
    features, `panels[p][k][j] = W[32p + j][k]`, zero-padded: the layout
    the CPU's GEMM kernel streams, so that nothing repacks them at run time.
    They are listed in the module attribute `tfm.weight_panels` (name ->
    [rows, cols]) for the packager, and read as `linalg.unpack` of a
    `[panels, cols, 32]` view, which tfm-select-cpu-kernels reads through
    (a target without that kernel lays out with `pack-weights=false`).
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::bufferization::BufferizationDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::memref::MemRefDialect",
    "::mlir::tensor::TensorDialect", "::mlir::func::FuncDialect"
  ];
  let options = [
    Option<"packWeights", "pack-weights", "bool", /*default=*/"true",
           "Store linear weights as panels for the runtime's GEMM kernel">
  ];
}

def SelectCpuKernelsPass : Pass<"tfm-select-cpu-kernels", "ModuleOp"> {
  let summary = "Hand the tfm ops the CPU runtime has kernels for to them";
  let description = [{
    CPU kernel selection, on tfm IR after `tfm-lay-out-weights`: a
    `tfm.linear` whose weight is stored as panels becomes a call of the
    runtime's GEMM kernel `tfm_rt_linear_panels[_bias]` (bias added in the
    kernel, the activation or gate an elementwise epilogue), and with
    `fused-attention` (the default) a `tfm.attention` without a `[heads, s,
    t]` bias a call of `tfm_rt_attention` (flash-style: online softmax over
    key tiles, causal tiles skipped, a single-query path for decode, on
    every core), or of `tfm_rt_attention_biased` with a `relative_bias`,
    whose terms it reads by distance from a `[heads, s + t - 1]` tensor;
    keys and values that are `tfm.dequantize_rows` of an int8 cache go to
    the `_rows_i8` variants as stored, widened in the kernel. The
    kernels are declared in the module (`llvm.emit_c_interface`,
    runtime/include/tfm/runtime_kernels.h) and take their operands as strided memrefs.
    Everything else is left to `tfm-lower-to-linalg`.

    ```mlir
    %y = tfm.linear %x, %w : ...   // %w = linalg.unpack of a panel view
    // becomes
    call @tfm_rt_linear_panels(%x_buffer, %panels, %out)
    %y = bufferization.to_tensor %out restrict writable
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::bufferization::BufferizationDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::memref::MemRefDialect",
    "::mlir::tensor::TensorDialect", "::mlir::func::FuncDialect"
  ];
  let options = [
    Option<"fusedAttention", "fused-attention", "bool", /*default=*/"true",
           "Lower tfm.attention to the runtime's fused kernel">,
    Option<"plainAttentionOnly", "plain-attention-only", "bool",
           /*default=*/"false",
           "Select only tfm_rt_attention (no packed sequences, relative "
           "bias or int8 rows): the call tfm-lower-attention-to-gpu turns "
           "into a kernel for --target=cuda">
  ];
}

def LowerToLinalgPass : Pass<"tfm-lower-to-linalg", "ModuleOp"> {
  let summary = "Lower tfm ops to linalg, tensor, arith and math on tensors";
  let description = [{
    The target-independent lowering of every tfm op left in the module:
    `tfm.linear` a `linalg.matmul` with a transposed weight (checkpoint
    layout `[out, in]`) and its epilogue, norms and softmax reductions plus
    elementwise `linalg.generic`s, and `tfm.attention` the reference
    lowering: materialized scores, masked softmax and weighted sum. The
    patterns are public per op family (`populateLowerEmbeddingPatterns`,
    `populateLowerLinearAndElementwisePatterns`,
    `populateLowerNormPatterns`, `populateLowerAttentionPatterns`,
    `populateLowerKVCachePatterns`) for other targets' pipelines.

    Runs after `tfm-lay-out-weights` (a `tfm.weight` left is an error) and
    after the target's kernel selection (`tfm-select-cpu-kernels`). The
    entry points' `tfm.input`/`tfm.output`/`tfm.cache` descriptions go; a
    cache argument becomes `bufferization.writable`.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::bufferization::BufferizationDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::tensor::TensorDialect",
    "::mlir::func::FuncDialect", "::mlir::scf::SCFDialect"
  ];
}

def ExportEntryPointsPass : Pass<"tfm-export-entry-points", "ModuleOp"> {
  let summary = "Give a model's public functions a C interface and its prefix";
  let description = [{
    The runtime calls a model's entry points (`@forward`, `@prefill`,
    `@decode`, ...) from C through MLIR's C interface: each public function
    gets `llvm.emit_c_interface`. With a non-empty `prefix` (libraries) each
    is also renamed `@<prefix>_<name>`, so that several models link into one
    program; call sites follow the rename. The module's `tfm.model`, read
    by the packager before lowering, is dropped: the result is code that
    LLVM-level tools read without the tfm dialect.

    ```mlir
    // tfm-export-entry-points{prefix=story}
    func.func @forward(...)  ->  func.func @story_forward(...) attributes {llvm.emit_c_interface}
    ```
  }];
  let options = [
    Option<"prefix", "prefix", "std::string", /*default=*/"\"\"",
           "C identifier prefixing every public function's name">
  ];
}

def DropReturnedArgumentsPass : Pass<"tfm-drop-returned-arguments", "ModuleOp"> {
  let summary = "Drop results that return a function's own memref argument";
  let description = [{
    After bufferization, @prefill and @decode update the KV cache argument in
    place and return it. The caller (the runtime) already holds that buffer,
    and a public function returning a buffer it does not own makes buffer
    deallocation clone it on every call: the whole cache per token. This
    pass removes such results from public functions (upstream
    `drop-equivalent-buffer-results` leaves them alone, since it cannot see
    their callers; the runtime is ours); calls inside the module (a
    `@decode` that calls `@prefill`) use the operand they passed instead.
    A buffer carried through an `scf.for` unchanged (@decode_batch's cache,
    updated row by row in place) is first folded out of the loop's results
    (scf.for's canonicalization), so that the return sees the argument.
  }];
  let dependentDialects = ["::mlir::scf::SCFDialect"];
}

def PlanArenaPass : Pass<"tfm-plan-arena", "func::FuncOp"> {
  let summary = "Place a function's temporary buffers in one arena";
  let description = [{
    Runs after bufferization and deallocation, which leave every temporary
    buffer allocated at the function's start and freed at its end: a
    prefill then holds every layer's activations at once. This pass plans,
    at compile time, one arena for the buffers that the function allocates
    and frees itself (not those it returns): each buffer's lifetime runs
    from its first to its last use in the function's body (views and casts
    of it included), and buffers whose lifetimes overlap never share bytes.

    Sizes may be dynamic (they grow with the sequence), so the plan kept
    is an order, not numbers. It is found with sizes evaluated at 128
    positions: largest first, each buffer at the lowest offset where it
    fits between the placed buffers whose lifetimes overlap its own. Each
    buffer then sits on top of the overlapping buffers found below it, and
    the offsets are emitted as index arithmetic (sums and maxima of the
    sizes, 64-byte aligned) at the function's start: every overlapping
    pair is ordered, so that holds for any runtime sizes.
    One `memref.alloc` of the total replaces the buffers' allocations, each
    buffer becomes a `memref.view` of it, and one dealloc frees it.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::memref::MemRefDialect"];
}

def ParallelizeLoopsPass : Pass<"tfm-parallelize-loops", "ModuleOp"> {
  let summary = "Run the generated parallel loops on the runtime's threads";
  let description = [{
    Runs after memref-to-LLVM, on the top-level `scf.parallel` loops that
    linalg's parallel iterators lowered to (norms, activations, RoPE, cache
    copies): the GEMMs and attention already split their work over the
    runtime's thread pool, and without this every other loop ran on one
    core while the others spun.

    Each loop's body moves into a function of its own with the signature
    of the pool's work items, `(context, begin, end, thread)`, which runs
    iterations [begin, end) of one dimension: the first whose trip count
    is not known to be 1, so that a decode step's single row does not
    leave nothing to split. The values the loop uses from outside are
    stored into a context buffer (one per function, on its stack) and
    loaded back in the outlined function; constants, and casts of them,
    are recomputed there instead, so that LLVM still sees constant trip
    counts and strides. The loop itself becomes a call of the runtime's
    `tfm_rt_parallel_loop(iterations, cost, body, context)`, where `cost`
    is the estimated operations per iteration (nested trip counts
    included; 64 where unknown); the runtime runs small loops inline and
    splits the others into chunks (runtime/core/thread_pool.h).

    Left alone: loops with reductions (`scf.reduce` operands), loops that
    call functions (the runtime's allocator and kernels are not entered
    from pool threads), and loops that use a value without an LLVM type.
    Iterations of a linalg op's parallel dimensions are independent, so
    the results are bit-identical with any number of threads.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect",
                           "::mlir::func::FuncDialect",
                           "::mlir::scf::SCFDialect"];
}

def AnnotateParallelLoopsPass : Pass<"tfm-annotate-parallel-loops", "func::FuncOp"> {
  let summary = "Parallel loops to scf.for that tell LLVM their iterations are independent";
  let description = [{
    Runs after memref-to-LLVM, on the `scf.parallel` loops that linalg's
    parallel iterators lowered to. LLVM's loop vectorizer must otherwise
    prove that a loop's loads and stores do not depend on each other across
    iterations, and cannot: every activation is a view of one arena (or a
    buffer from the runtime's allocator), so it sees one object at unknown
    offsets and gives up ("unknown data dependence", "too many memory
    checks"), leaving norms and activations scalar.

    Each `scf.parallel` becomes a nest of `scf.for` whose
    `loop_annotation` (kept on the loop's back edge by scf-to-cf) lists a
    fresh access group in `parallelAccesses`, and every `llvm.load` and
    `llvm.store` in its body joins that group: LLVM's
    `llvm.loop.parallel_accesses`, which the vectorizer takes as the proof.
    That holds because a linalg op's parallel dimensions carry no
    dependence (an op updating a buffer in place reads and writes each
    element in the same iteration). Loops with reductions (`scf.reduce`
    operands) are left to upstream's lowering.

    Inside a parallel loop, a sequential `scf.for` (a linalg reduction
    dimension) whose only stores go to loop-invariant addresses, each
    loaded once, keeps those accumulators in `iter_args` instead (loaded
    before the loop, stored after) with reassociating float arithmetic, so
    that the reduction vectorizes too: the op's output is disjoint from
    its inputs, which LLVM could not know.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect", "::mlir::scf::SCFDialect"];
}

def LowerMatmulToRuntimePass : Pass<"tfm-lower-matmul-to-runtime", "ModuleOp"> {
  let summary = "Call the runtime's BLAS-backed kernel for x·Wᵀ matmuls";
  let description = [{
    On bufferized IR: every f32 `linalg.matmul` of the form `C[m, n] +=
    A[m, k] · B[n, k]` (what `tfm.linear` lowers to: the checkpoint's
    `[out, in]` weight read transposed) becomes a call of the runtime's
    `tfm_rt_matmul_nt`, which runs OpenBLAS (`sgemm`, or `sgemv` for the
    single row of a decode step) on both cores. Operands are cast to fully
    dynamic strided memrefs so that one C entry point serves every shape.
  }];
  let dependentDialects = ["::mlir::func::FuncDialect",
                           "::mlir::memref::MemRefDialect"];
}

def ApproximateMathPass : Pass<"tfm-approximate-math"> {
  let summary = "Polynomial tanh, erf and exp so that activations vectorize";
  let description = [{
    GELU (tanh or erf) and SiLU/softmax (exp) would otherwise become one
    libm call per element, which no loop vectorizer can widen. Upstream's
    polynomial approximations are accurate to a few ulp of f32 and lower to
    plain arithmetic that LLVM vectorizes.
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect",
                           "::mlir::math::MathDialect",
                           "::mlir::vector::VectorDialect"];
  let options = [
    Option<"everyFunction", "every-function", "bool", /*default=*/"false",
           "Also sin, cos, log and the rest upstream has polynomials for "
           "(GPU kernels: no libdevice to call)">
  ];
}

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
    aligned at run time, one element otherwise; `gpu.shuffle xor` sums the
    lanes' partial sums. The weights stream from memory once, coalesced,
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
           "Most rows of x that count as a matrix-vector product">
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
    of two.

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

#endif // TFM_CODEGEN_PASSES_TD
