//===- CpuPipeline.h - tfm to LLVM for the host CPU -------------*- C++ -*-===//
//
// The pass pipelines of the CPU target, in stages so that the driver can stop
// after each (--emit=linalg, --emit=llvm-mlir), and the translation of the
// final module into native code.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_CPUPIPELINE_H
#define TFM_CODEGEN_CPUPIPELINE_H

#include "codegen/cpu/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"
#include "mlir/Pass/PassRegistry.h"

#include "llvm/IR/Module.h"

#include <memory>
#include <string>

namespace mlir::tfm {

/// The options of the whole CPU pipeline (tfm-cpu-pipeline): every pass
/// that can be turned off, to measure what it buys, and the KV cache's
/// capacity. `tfmc`'s --no-* flags set these; `tfm-opt
/// --tfm-cpu-pipeline="fuse-qkv=false ..."` runs the same passes.
struct CpuPipelineOptions : PassPipelineOptions<CpuPipelineOptions> {
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
  Option<std::string> weightsDtype{
      *this, "weights-dtype",
      llvm::cl::desc("Storage of the weight matrices: f32, bf16, f16, int8, "
                     "int4, int4-min or checkpoint (tfm-quantize-weights; "
                     "empty: f32, "
                     "or for a model read from a checkpoint, checkpoint)"),
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
  Option<std::string> prefix{
      *this, "prefix",
      llvm::cl::desc("C identifier prefixing the entry points (libraries)"),
      llvm::cl::init("")};
};

/// Where the CPU pipeline stops: after the tfm-level passes, after the
/// lowering to linalg on tensors, or in the LLVM dialect.
enum class CpuPipelineStage { Tfm, Linalg, LLVM };

/// The CPU pipeline from a model's tfm IR through `last`, as
/// `tfm-cpu-pipeline` registers it (with `last` = LLVM).
void buildCpuPipeline(OpPassManager &pm, const CpuPipelineOptions &options,
                      CpuPipelineStage first = CpuPipelineStage::Tfm,
                      CpuPipelineStage last = CpuPipelineStage::LLVM);

/// Registers `tfm-cpu-pipeline` (for tfm-opt).
void registerCpuPipeline();

struct LowerToLinalgOptions {
  /// Linear weights stored as panels for the runtime's GEMM.
  bool packWeights = true;
  /// Attention through the runtime's fused kernel.
  bool fusedAttention = true;
  /// Only plain attention's call (tfm_rt_attention), which the GPU target
  /// makes a kernel of (tfm-lower-attention-to-gpu).
  bool plainAttentionOnly = false;
};

/// tfm -> linalg/tensor/arith/math on tensors for the CPU: weight layout,
/// CPU kernel selection, the target-independent lowering, cleanups.
void buildLowerToLinalgPipeline(OpPassManager &pm,
                                const LowerToLinalgOptions &options = {});

struct LinalgToLLVMOptions {
  /// Temporary buffers in one arena planned at compile time
  /// (tfm-plan-arena); otherwise each is allocated on its own.
  bool planArena = true;
  /// Loops from linalg's parallel dimensions tell LLVM that their
  /// iterations are independent (tfm-annotate-parallel-loops), so that they
  /// vectorize without alias checks.
  bool annotateParallelLoops = true;
  /// Those loops run on the runtime's threads (tfm-parallelize-loops).
  bool parallelizeLoops = true;
};

/// Bufferization of a model's linalg on tensors, shared by both targets:
/// one-shot across function boundaries (identity layouts), caches updated
/// in place no longer returned (tfm-drop-returned-arguments), allocations
/// hoisted, ownership-based deallocation.
void buildBufferizationPipeline(OpPassManager &pm);

/// The end of both targets' host code: math, arith, index, (with
/// `launchesKernels`, the GPU runtime calls,) functions and control flow
/// to the LLVM dialect. Memrefs must be converted already.
void addHostToLLVMPasses(OpPassManager &pm, bool launchesKernels);

/// linalg on tensors -> bufferized loops -> the LLVM dialect. Functions to be
/// called from C get `llvm.emit_c_interface` before this runs.
void buildLinalgToLLVMPipeline(OpPassManager &pm,
                               const LinalgToLLVMOptions &options = {});

/// Whether `options` compile for an NVIDIA GPU (--target=cuda).
inline bool targetsCuda(const CpuPipelineOptions &options) {
  return options.target == "cuda";
}

struct LinalgToCudaOptions {
  /// The PTX's target architecture (nvvm-attach-target's chip).
  std::string cudaArch = "sm_80";
  /// Temporary buffers in one device allocation (tfm-plan-arena).
  bool planArena = true;
  /// Prefill's bf16 and f16 products on tensor cores (sm_80 and newer).
  bool tensorCores = true;
  /// Decode attention's keys split across blocks (flash-decoding).
  bool splitAttention = true;
  /// A norm's scaling in its reduction's kernel (tfm-lower-reductions-to-gpu).
  bool fuseNorms = true;
  /// Elementwise producers fused into their consumers
  /// (tfm-fuse-elementwise-for-gpu).
  bool fuseElementwise = true;
  /// Stop once the kernels are in the NVVM dialect (gpu.module ops of LLVM
  /// functions): no PTX, no host lowering (--emit=cuda-emulator).
  bool kernelsOnly = false;
};

/// The number of an architecture named sm_XY (sm_90a: 90), 0 when it is
/// not so named.
int cudaArchNumber(llvm::StringRef cudaArch);

/// linalg on tensors -> device buffers and GPU kernels (PTX in
/// gpu.binary ops) launched from host code in the LLVM dialect: the
/// --target=cuda counterpart of buildLinalgToLLVMPipeline
/// (codegen/cuda/CudaPipeline.cpp).
void buildLinalgToCudaPipeline(OpPassManager &pm,
                               const LinalgToCudaOptions &options = {});

/// The PTX of every kernel module of `module` (after the CUDA pipeline),
/// each under a comment naming it.
void printKernelAssembly(ModuleOp module, llvm::raw_ostream &os);

/// Registers the GPU and NVVM dialect translations (the PTX of kernel
/// modules, and the host code that embeds and launches it).
void registerCudaTranslations(DialectRegistry &registry);

/// Registers the dialect translations the LLVM IR export needs.
void registerLLVMTranslations(DialectRegistry &registry);

/// Options of native code emission.
struct NativeTarget {
  /// CPU to tune and select instructions for; "native" is the compiling
  /// machine.
  std::string cpu = "native";
  /// LLVM optimization level, 0-3.
  unsigned optLevel = 3;
};

/// Translates an LLVM-dialect module to LLVM IR and optimizes it for
/// `target`. Returns null after reporting a diagnostic on failure.
std::unique_ptr<llvm::Module>
translateAndOptimize(ModuleOp module, llvm::LLVMContext &llvmContext,
                     const NativeTarget &target);

/// Sets `module`'s target (triple, data layout, each function's CPU and
/// features) and runs LLVM's optimization pipeline at `target.optLevel`.
/// Returns an error message, empty on success.
std::string optimizeForTarget(llvm::Module &module, const NativeTarget &target);

/// Writes `module` as an object file (or assembly when `assembly`) to
/// `path` ("-" for stdout). Returns an error message, empty on success.
std::string emitNativeCode(llvm::Module &module, const NativeTarget &target,
                           bool assembly, llvm::StringRef path);

} // namespace mlir::tfm

#endif // TFM_CODEGEN_CPUPIPELINE_H
