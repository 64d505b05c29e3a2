//===- Pipeline.cpp - the tfm-level pass pipeline -----------------------===//

#include "passes/Pipeline.h"
#include "passes/Passes.h"

#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::tfm;

void mlir::tfm::buildTfmPipeline(OpPassManager &pm,
                                 const TfmPipelineOptions &options) {
  if (options.kvCache) {
    KVCachePassOptions kvCache;
    kvCache.maxContext = options.maxContext;
    kvCache.kvDtype = options.kvDtype;
    kvCache.decodeBatch = kvCache.prefillBatch = options.batchedEntryPoints;
    pm.addPass(createKVCachePass(kvCache));
    // @decode calls @prefill: inline it so that codegen sees one token.
    pm.addPass(createInlinerPass());
  }
  if (options.packSequences && options.batchedEntryPoints)
    pm.addPass(createPackSequencesPass());
  if (options.batchImages && options.batchedEntryPoints)
    pm.addPass(createBatchImagesPass());
  pm.addPass(createCanonicalizerPass());
  // The fusions match projections of one input value: @prefill's last rows
  // are sliced once per use (pickRows), and only CSE makes them one, so
  // without it the last layer's gate and up stayed apart until the IR was
  // compiled a second time.
  pm.addPass(createCSEPass());
  if (options.fuseQKV)
    pm.addNestedPass<func::FuncOp>(createFuseQKVPass());
  if (options.fuseMLP)
    pm.addNestedPass<func::FuncOp>(createFuseMLPPass());
  if (options.fuseNorm)
    pm.addNestedPass<func::FuncOp>(createFuseNormPass());
  // After fusion: joins of weights are stored in one format.
  auto narrow = [](const std::string &dtype) {
    return !dtype.empty() && dtype != "f32";
  };
  if (narrow(options.weightsDtype) || narrow(options.edgeDtype) ||
      !options.weightsDtypeFor.empty()) {
    QuantizeWeightsPassOptions quantize;
    quantize.dtype =
        options.weightsDtype.empty() ? "f32" : options.weightsDtype;
    quantize.edgeDtype = options.edgeDtype;
    quantize.keep = options.keepWeights;
    quantize.dtypeFor = options.weightsDtypeFor;
    pm.addPass(createQuantizeWeightsPass(quantize));
  }
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
}
