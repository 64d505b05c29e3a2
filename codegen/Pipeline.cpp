//===- Pipeline.cpp - the registered pipeline, picking by target ---------===//

#include "codegen/Pipeline.h"
#include "codegen/cpu/Passes.h"
#include "codegen/packaging/Passes.h"
#include "passes/Pipeline.h"

#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::tfm;

/// tfm -> linalg/tensor/arith/math on tensors: the weight layout (panels
/// for the CPU's GEMM), the target's kernel selection (the runtime's
/// kernels on the CPU; on CUDA only attention's call, which
/// tfm-lower-attention-to-gpu makes a kernel of), the target-independent
/// lowering, cleanups.
static void addLowerToLinalgPasses(OpPassManager &pm,
                                   const CodegenPipelineOptions &options) {
  bool cuda = targetsCuda(options);
  LayOutWeightsPassOptions layout;
  layout.packWeights = options.packWeights && !cuda;
  pm.addPass(createLayOutWeightsPass(layout));
  SelectCpuKernelsPassOptions kernels;
  kernels.fusedAttention = options.fusedAttention;
  kernels.plainAttentionOnly = cuda;
  pm.addPass(createSelectCpuKernelsPass(kernels));
  LowerToLinalgPassOptions lowering;
  lowering.markHostInputs = cuda;
  pm.addPass(createLowerToLinalgPass(lowering));
  // Every sequence-length dim back to the one of the tokens argument: the
  // buffers sized by it (kernel outputs included) can then all be
  // allocated up front and planned into one arena.
  pm.addPass(memref::createResolveRankedShapeTypeResultDimsPass());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}

void mlir::tfm::buildCodegenPipeline(OpPassManager &pm,
                                 const CodegenPipelineOptions &options,
                                 PipelineStage first,
                                 PipelineStage last) {
  auto runs = [&](PipelineStage stage) {
    return first <= stage && stage <= last;
  };
  TfmPipelineOptions tfm;
  tfm.kvCache = options.kvCache;
  tfm.maxContext = options.maxContext;
  tfm.kvDtype = options.kvDtype;
  tfm.fuseQKV = options.fuseQKV;
  tfm.expandLatentAttention = options.expandLatentAttention;
  tfm.fuseMLP = options.fuseMLP;
  tfm.fuseNorm = options.fuseNorm;
  tfm.convolutionsAsGemm = options.convolutionsAsGemm;
  tfm.weightsDtype = options.weightsDtype;
  tfm.edgeDtype = options.edgeDtype;
  tfm.keepWeights = options.keepWeights;
  tfm.weightsDtypeFor = options.weightsDtypeFor;
  tfm.ranks = options.ranks;
  // The GPU target runs one sequence per call so far: the batched entry
  // points (the serving engine's) are not derived for it.
  tfm.batchedEntryPoints = !targetsCuda(options);
  if (runs(PipelineStage::Tfm))
    buildTfmPipeline(pm, tfm);
  if (runs(PipelineStage::Partition))
    buildTfmPartitionPipeline(pm, tfm);
  if (runs(PipelineStage::Linalg)) {
    // The runtime's kernels (GEMM panels, fused attention) are CPU code: the
    // GPU target lowers everything to linalg but plain attention, whose
    // call tfm-lower-attention-to-gpu makes a fused kernel.
    addLowerToLinalgPasses(pm, options);
  }
  if (runs(PipelineStage::LLVM)) {
    ExportEntryPointsPassOptions exported;
    exported.prefix = options.prefix;
    pm.addPass(createExportEntryPointsPass(exported));
    if (targetsCuda(options)) {
      LinalgToCudaOptions cuda;
      cuda.cudaArch = options.cudaArch;
      cuda.planArena = options.planArena;
      cuda.tensorCores = options.cudaTensorCores;
      cuda.splitAttention = options.cudaSplitAttention;
      cuda.fuseNorms = options.cudaFuseNorms;
      cuda.fuseElementwise = options.cudaFuseElementwise;
      cuda.kernelsOnly = options.cudaKernelsOnly;
      buildLinalgToCudaPipeline(pm, cuda);
      return;
    }
    LinalgToLLVMOptions llvm;
    llvm.planArena = options.planArena;
    llvm.annotateParallelLoops = options.annotateParallelLoops;
    llvm.parallelizeLoops = options.parallelizeLoops;
    buildLinalgToLLVMPipeline(pm, llvm);
  }
}

void mlir::tfm::registerCodegenPipeline() {
  PassPipelineRegistration<CodegenPipelineOptions>(
      "tfm-codegen-pipeline",
      "A model's tfm IR to the LLVM dialect for the target the options name "
      "(cpu or cuda): the tfm-level passes (KV cache, fusion), the lowering "
      "to linalg, then the target's pipeline; what tfmc runs",
      [](OpPassManager &pm, const CodegenPipelineOptions &options) {
        buildCodegenPipeline(pm, options);
      });
}

void mlir::tfm::registerCodegenExtensions(DialectRegistry &registry) {
  registerMPIMemoryEffects(registry);
}

void mlir::tfm::registerLLVMTranslations(DialectRegistry &registry) {
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
  registerCudaTranslations(registry);
}

