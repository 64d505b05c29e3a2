//===- Pipeline.cpp - the registered pipeline, picking by target ---------===//

#include "codegen/Pipeline.h"
#include "codegen/Targets.h"
#include "codegen/linalg/Passes.h"
#include "codegen/packaging/Passes.h"
#include "passes/Pipeline.h"

#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::tfm;

/// tfm -> linalg/tensor/arith/math on tensors: the weight layout (panels
/// for the runtime's GEMM), the target's kernel selection, the
/// target-independent lowering, cleanups.
static void addLowerToLinalgPasses(OpPassManager &pm,
                                   const CodegenPipelineOptions &options,
                                   const CodegenTarget &target) {
  LayOutWeightsPassOptions layout;
  layout.packWeights = options.packWeights && target.packsWeights;
  pm.addPass(createLayOutWeightsPass(layout));
  target.addKernelSelection(pm, options);
  LowerToLinalgPassOptions lowering;
  lowering.markHostInputs = target.deviceInputs;
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
  const CodegenTarget &target = targetOf(options);
  TfmPipelineOptions tfm;
  tfm.kvCache = options.kvCache;
  tfm.maxContext = options.maxContext;
  tfm.kvDtype = options.kvDtype;
  tfm.verify = options.verify;
  tfm.loraSlots = options.loraSlots;
  tfm.loraRank = options.loraRank;
  tfm.loraTargets = options.loraTargets;
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
  tfm.pipelineStages = options.pipelineStages;
  tfm.pipelineLayers = options.pipelineLayers;
  tfm.batchedEntryPoints = target.batchedEntryPoints;
  tfm.sharedExpertFunctions = target.sharedExpertFunctions;
  if (runs(PipelineStage::Tfm))
    buildTfmPipeline(pm, tfm);
  if (runs(PipelineStage::Partition))
    buildTfmPartitionPipeline(pm, tfm);
  if (runs(PipelineStage::Linalg))
    addLowerToLinalgPasses(pm, options, target);
  if (runs(PipelineStage::LLVM)) {
    ExportEntryPointsPassOptions exported;
    exported.prefix = options.prefix;
    pm.addPass(createExportEntryPointsPass(exported));
    target.addLowering(pm, options);
  }
}

void mlir::tfm::registerCodegenPipeline() {
  PassPipelineRegistration<CodegenPipelineOptions>(
      "tfm-codegen-pipeline",
      "A model's tfm IR to the LLVM dialect for the target the options name "
      "(codegen/Targets.h): the tfm-level passes (KV cache, fusion), the "
      "lowering to linalg, then the target's pipeline; what tfmc runs",
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

