//===- Pipeline.h - tfm to LLVM, for the target the options name -*- C++ -*-===//
//
// The registered pipeline (tfm-codegen-pipeline), in stages so that the
// driver can stop after each (--emit=linalg, --emit=llvm-mlir): the
// tfm-level passes of passes/, the target-independent lowering of linalg/,
// then the target's own pipeline, cpu/CpuPipeline.h or cuda/CudaPipeline.h.
// It only picks and composes; each folder owns its passes.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_PIPELINE_H
#define TFM_CODEGEN_PIPELINE_H

#include "codegen/cpu/CpuPipeline.h"
#include "codegen/cuda/CudaPipeline.h"

#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

#include <string>

namespace mlir::tfm {


/// The options of the whole CPU pipeline (tfm-codegen-pipeline): every pass
/// that can be turned off, to measure what it buys, and the KV cache's
/// capacity. `tfmc`'s --no-* flags set these; `tfm-opt
/// --tfm-codegen-pipeline="fuse-qkv=false ..."` runs the same passes.
struct CodegenPipelineOptions : PassPipelineOptions<CodegenPipelineOptions> {
  Option<bool> kvCache{*this, "kv-cache",
                       llvm::cl::desc("Derive @prefill/@decode from @forward "
                                      "(tfm-kv-cache)"),
                       llvm::cl::init(true)};
  Option<int64_t> maxContext{
      *this, "max-context",
      llvm::cl::desc("KV cache capacity (0: the model's maximum context)"),
      llvm::cl::init(0)};
  Option<std::string> kvDtype{
      *this, "kv-dtype",
      llvm::cl::desc("Storage of the self-attention KV cache: f32, bf16, "
                     "f16, or int8 (each position's row of a KV head as "
                     "codes and a scale)"),
      llvm::cl::init("f32")};
  Option<bool> verify{
      *this, "verify",
      llvm::cl::desc("Also derive @verify, speculative decoding's "
                     "every-position @prefill (tfm-kv-cache)"),
      llvm::cl::init(false)};
  Option<int64_t> loraSlots{
      *this, "lora-slots",
      llvm::cl::desc("Run-time LoRA adapters loaded at once (tfm-lora-slots; "
                     "0: none)"),
      llvm::cl::init(0)};
  Option<int64_t> loraRank{
      *this, "lora-rank",
      llvm::cl::desc("The largest rank of a run-time LoRA adapter"),
      llvm::cl::init(16)};
  Option<std::string> loraTargets{
      *this, "lora-targets",
      llvm::cl::desc("Modules run-time LoRA adapters may adapt, "
                     "comma-separated (empty: every projection of the "
                     "layers)"),
      llvm::cl::init("")};
  Option<std::string> weightsDtype{
      *this, "weights-dtype",
      llvm::cl::desc("Storage of the weight matrices: f32, bf16, f16, int8, "
                     "int8-channel, int4, int4-min or checkpoint "
                     "(tfm-quantize-weights; "
                     "empty: f32, "
                     "or for a model read from a checkpoint, checkpoint)"),
      llvm::cl::init("")};
  Option<std::string> computeDtype{
      *this, "compute-dtype",
      llvm::cl::desc("What the GEMMs multiply in: f32 (bf16 and f16 "
                     "weights widened, activations never rounded), bf16 "
                     "(weights stored bf16, activations rounded to bf16 "
                     "where the CPU's bf16 dot product outruns widening), "
                     "int8 (weights stored int8 per channel, activations "
                     "quantized per row at each call; per block of 32 with "
                     "int8 weights), or empty: bf16 where the "
                     "weights are bf16"),
      llvm::cl::init("")};
  Option<std::string> edgeDtype{
      *this, "edge-dtype",
      llvm::cl::desc("Storage of embedding tables and the LM head (empty: "
                     "int8 for int4, else weights-dtype)"),
      llvm::cl::init("")};
  Option<std::string> weightsDtypeFor{
      *this, "weights-dtype-for",
      llvm::cl::desc("REGEX=DTYPE: the weights whose names match take DTYPE"),
      llvm::cl::init("")};
  Option<std::string> keepWeights{
      *this, "keep-weights",
      llvm::cl::desc("Regex of weight names that stay f32"),
      llvm::cl::init("")};
  Option<bool> fuseQKV{*this, "fuse-qkv",
                       llvm::cl::desc("Q, K and V as one GEMM (tfm-fuse-qkv)"),
                       llvm::cl::init(true)};
  Option<bool> fuseMLP{*this, "fuse-mlp",
                       llvm::cl::desc("Bias, activation and gate as GEMM "
                                      "epilogues (tfm-fuse-mlp)"),
                       llvm::cl::init(true)};
  Option<bool> fuseNorm{*this, "fuse-norm",
                        llvm::cl::desc("Residual adds into the following "
                                       "norm (tfm-fuse-norm)"),
                        llvm::cl::init(true)};
  Option<bool> expandLatentAttention{
      *this, "expand-latent-attention",
      llvm::cl::desc("Multi-head latent attention's expanded form for long "
                     "prompts (tfm-expand-latent-attention)"),
      llvm::cl::init(true)};
  Option<bool> convolutionsAsGemm{
      *this, "convolutions-as-gemm",
      llvm::cl::desc("2-D convolutions as windows and a GEMM "
                     "(tfm-convolutions-as-gemm); else linalg's loops"),
      llvm::cl::init(true)};
  Option<bool> fusedAttention{
      *this, "fused-attention",
      llvm::cl::desc("Attention through the runtime's fused kernel"),
      llvm::cl::init(true)};
  Option<bool> packWeights{
      *this, "pack-weights",
      llvm::cl::desc("Linear weights as panels for the runtime's GEMM"),
      llvm::cl::init(true)};
  Option<bool> planArena{*this, "plan-arena",
                         llvm::cl::desc("Temporary buffers in one arena "
                                        "(tfm-plan-arena)"),
                         llvm::cl::init(true)};
  Option<bool> annotateParallelLoops{
      *this, "annotate-parallel-loops",
      llvm::cl::desc("Parallel loops marked independent for LLVM "
                     "(tfm-annotate-parallel-loops)"),
      llvm::cl::init(true)};
  Option<bool> parallelizeLoops{
      *this, "parallelize-loops",
      llvm::cl::desc("Parallel loops on the runtime's threads "
                     "(tfm-parallelize-loops)"),
      llvm::cl::init(true)};
  Option<bool> cudaTensorCores{
      *this, "cuda-tensor-cores",
      llvm::cl::desc("Prefill's bf16 and f16 products on tensor cores "
                     "(tfm-lower-matmul-to-mma; --target=cuda)"),
      llvm::cl::init(true)};
  Option<bool> cudaSplitAttention{
      *this, "cuda-split-attention",
      llvm::cl::desc("Decode attention's keys split across blocks "
                     "(flash-decoding; --target=cuda)"),
      llvm::cl::init(true)};
  Option<bool> cudaFuseNorms{
      *this, "cuda-fuse-norms",
      llvm::cl::desc("A norm's scaling in the kernel of its sum of squares "
                     "(tfm-lower-reductions-to-gpu; --target=cuda)"),
      llvm::cl::init(true)};
  Option<std::string> target{
      *this, "target",
      llvm::cl::desc("What the code runs on: cpu (the host), or cuda (NVIDIA "
                     "GPUs: kernels as PTX, the host code launching them)"),
      llvm::cl::init("cpu")};
  Option<std::string> cudaArch{
      *this, "cuda-arch",
      llvm::cl::desc("The GPU architecture the PTX targets (--target=cuda; "
                     "the driver compiles it for newer GPUs too)"),
      llvm::cl::init("sm_80")};
  Option<bool> cudaFuseElementwise{
      *this, "cuda-fuse-elementwise",
      llvm::cl::desc("Elementwise producers in their consumers' kernels "
                     "(tfm-fuse-elementwise-for-gpu; --target=cuda)"),
      llvm::cl::init(true)};
  Option<bool> cudaKernelsOnly{
      *this, "cuda-kernels-only",
      llvm::cl::desc("Stop the CUDA pipeline once the kernels are in the "
                     "NVVM dialect, before PTX and the host code: what "
                     "--emit=cuda-emulator compiles for the CPU"),
      llvm::cl::init(false)};
  Option<int64_t> ranks{
      *this, "ranks",
      llvm::cl::desc("Processes (MPI ranks) the model is split over: "
                     "attention by heads, the MLP by its features, "
                     "all-reduced (tensor parallelism)"),
      llvm::cl::init(1)};
  Option<int64_t> pipelineStages{
      *this, "pipeline-stages",
      llvm::cl::desc("Processes (MPI ranks) a decoder's layers are split "
                     "over in contiguous stages, each sending its rows to "
                     "the next (pipeline parallelism)"),
      llvm::cl::init(1)};
  Option<std::string> pipelineLayers{
      *this, "pipeline-layers",
      llvm::cl::desc("Each pipeline stage's layers, first to last (\"8,4\"; "
                     "default: the stages balanced by their weights)"),
      llvm::cl::init("")};
  Option<std::string> prefix{
      *this, "prefix",
      llvm::cl::desc("C identifier prefixing the entry points (libraries)"),
      llvm::cl::init("")};
};

/// Where the CPU pipeline stops: after the tfm-level passes, after the
/// split over ranks is carried out (and the fusions that follow it; with
/// one rank the tfm stage does them), after the lowering to linalg on
/// tensors, or in the LLVM dialect.
enum class PipelineStage { Tfm, Partition, Linalg, LLVM };

/// The pipeline from a model's tfm IR through `last` for the target the
/// options name (cpu or cuda), as `tfm-codegen-pipeline` registers it (with
/// `last` = LLVM): the tfm-level passes (passes/), the lowering to linalg
/// (linalg/, with the target's kernel selection), then cpu/ or cuda/.
void buildCodegenPipeline(OpPassManager &pm, const CodegenPipelineOptions &options,
                      PipelineStage first = PipelineStage::Tfm,
                      PipelineStage last = PipelineStage::LLVM);

/// Registers `tfm-codegen-pipeline` (for tfm-opt).
void registerCodegenPipeline();

/// Registers what codegen adds to upstream dialects (mpi.allreduce's
/// memory effects).
void registerCodegenExtensions(DialectRegistry &registry);

/// Registers the dialect translations the LLVM IR export needs.
void registerLLVMTranslations(DialectRegistry &registry);

} // namespace mlir::tfm

#endif // TFM_CODEGEN_PIPELINE_H
