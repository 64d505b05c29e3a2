//===- Passes.td - target-independent lowering (tfm -> linalg -> buffers) --*- tablegen -*-===//

#ifndef TFM_CODEGEN_LINALG_PASSES_TD
#define TFM_CODEGEN_LINALG_PASSES_TD

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
    cache argument becomes `bufferization.writable`, and with
    `mark-host-inputs` (the GPU target) a tensor input `tfm.host_input`:
    the caller's memory, which `tfm-place-buffers-on-device` copies in.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::bufferization::BufferizationDialect",
    "::mlir::linalg::LinalgDialect", "::mlir::math::MathDialect",
    "::mlir::memref::MemRefDialect", "::mlir::tensor::TensorDialect",
    "::mlir::func::FuncDialect", "::mlir::scf::SCFDialect"
  ];
  let options = [
    Option<"markHostInputs", "mark-host-inputs", "bool", /*default=*/"false",
           "Mark each tensor input tfm.host_input (for a target whose "
           "buffers live elsewhere than the caller's)">
  ];
}

def CallAttentionKernelPass : Pass<"tfm-call-attention-kernel", "ModuleOp"> {
  let summary = "Hand plain tfm.attention to a fused kernel's call";
  let description = [{
    For a target without the CPU runtime's kernels, on tfm IR after
    `tfm-lay-out-weights`: a `tfm.attention` without a `[heads, s, t]`
    bias, packed sequences, relative bias or keys and values read as a
    narrow cache stores them becomes a call of `tfm_rt_attention(q, k, v,
    sinks, out, scale, causal, window, softcap)` (AttentionCall.h), which
    the target makes a kernel of (CUDA: `tfm-lower-attention-to-gpu`).
    Every other attention is left to `tfm-lower-to-linalg`'s reference
    lowering. The CPU's `tfm-select-cpu-kernels` takes these calls and
    their variants itself.
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::bufferization::BufferizationDialect",
    "::mlir::memref::MemRefDialect", "::mlir::tensor::TensorDialect",
    "::mlir::func::FuncDialect"
  ];
}

def PlaceKernelReadsPass : Pass<"tfm-place-kernel-reads", "ModuleOp"> {
  let summary = "Give each runtime-kernel call its own read-only buffers, right before it";
  let description = [{
    A kernel call reads a tensor through `bufferization.to_buffer
    read_only` (cast to the kernels' strided layout). One-Shot Bufferize
    sees the tensor read at that conversion, not at the call, so the
    conversion must sit right before its call. CSE merges identical
    conversions of calls apart, and then a write between the calls may
    reuse the tensor's buffer while a later call still reads it: OLMoE's
    norm of Q, written into the buffer of the attention norm's output that
    the K and V projections were still to read. This pass, run right
    before bufferization, gives every call operand its own conversion
    immediately before its call and drops the merged ones.
  }];
  let dependentDialects = ["bufferization::BufferizationDialect",
                           "memref::MemRefDialect"];
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

#endif // TFM_CODEGEN_LINALG_PASSES_TD
