//===- Passes.td - the CPU target (runtime kernels, threads) --*- tablegen -*-===//

#ifndef TFM_CODEGEN_CPU_PASSES_TD
#define TFM_CODEGEN_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

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
    the `_rows_i8` variants as stored, widened in the kernel;
    `tfm.gated_delta_rule` becomes a call of `tfm_rt_gated_delta_rule`
    (whole heads to each core, their states in cache). Then what still
    reads a weight in block panels: a table's lookups call
    `tfm_rt_embedding_blocks` (only the rows read are widened), and a
    `tfm.dequantize` another op needs calls `tfm_rt_dequantize_blocks`
    (BlockReads.cpp). The attention calls are made by
    codegen/linalg/AttentionCall.h's patterns, which a target without
    these kernels runs alone (`tfm-call-attention-kernel`). The
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
           "Lower tfm.attention (and Gated DeltaNet's recurrence) to the "
           "runtime's fused kernels">,
    Option<"bf16Products", "bf16-products", "bool", /*default=*/"true",
           "GEMMs over bf16 panels may round their activations to bf16 "
           "(vdpbf16ps, where it outruns widening); false: every product "
           "over float panels in f32 (tfm_rt_linear_panels_bf16_widened; "
           "tfmc refuses --compute-dtype=f32 with block formats, whose "
           "kernels multiply int8 activations)">,
    Option<"bf16Attention", "bf16-attention", "bool", /*default=*/"false",
           "Prefill attention's scores and weighted values by vdpbf16ps "
           "over operands rounded to bf16 where the CPU has AVX512-BF16 "
           "(tfm_rt_attention_bf16_dot; --compute-dtype bf16 or int8)">
  ];
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

    Loops whose bodies are equal (the same operations over the same flow,
    locations aside) share one outlined function: a model's layers and its
    derived entry points repeat the same few loops, and LLVM would
    otherwise optimize and emit every copy.
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

def LowerCollectivesToMPIPass : Pass<"tfm-lower-collectives-to-mpi", "ModuleOp"> {
  let summary = "shard.all_reduce over the ranks as an in-place MPI_Allreduce";
  let description = [{
    A model split over ranks (tfm-shard-tensor-parallel, shard-partition)
    sums partial products with `shard.all_reduce` over its one-axis grid
    `@ranks`, whose size is MPI_COMM_WORLD's. Each becomes a buffer the
    partial sum is copied into, `mpi.allreduce` of it in place (MPI_IN_PLACE)
    on `mpi.comm_world`, and the buffer as the result tensor. A module also
    split into pipeline stages (`tfm.pipeline_stages`) runs a grid per
    stage: its collectives use the communicator of the rank's stage, which
    the runtime splits at load and `tfm_rt_stage_comm()` returns. The module
    gets the DLTI entry naming the MPI implementation (`MPI:Implementation`)
    the MPI lowering reads, and loses the grid.

    Upstream's convert-shard-to-mpi is not used for these: it splits a new
    communicator (MPI_Comm_split, itself a collective, never freed) for
    every all-reduce it runs, and sizes the buffer of a tensor with a
    dynamic dimension from a wrong index (LLVM 22), which a prefill's
    `tensor<?x4096xf32>` has.
  }];
  let options = [
    Option<"implementation", "implementation", "std::string", "\"OpenMPI\"",
           "The MPI the program links against: OpenMPI or MPICH (their "
           "handles differ)">,
  ];
  let dependentDialects = ["mpi::MPIDialect", "bufferization::BufferizationDialect",
                           "memref::MemRefDialect", "DLTIDialect",
                           "func::FuncDialect"];
}

def ConvertMPIToLLVMPass : Pass<"tfm-convert-mpi-to-llvm", "ModuleOp"> {
  let summary = "mpi ops as calls to the MPI library (upstream's patterns)";
  let description = [{
    Upstream's MPI-to-LLVM patterns (`populateMPIToLLVMConversionPatterns`)
    as a pass of the CPU pipeline, which converts dialect by dialect rather
    than through convert-to-llvm: `mpi.comm_world` and `mpi.allreduce`
    become `MPI_Allreduce` on the implementation's predefined handles, per
    the module's `MPI:Implementation` DLTI entry.
  }];
  let dependentDialects = ["LLVM::LLVMDialect"];
}

#endif // TFM_CODEGEN_CPU_PASSES_TD
