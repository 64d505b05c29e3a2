//===- Pipeline.cpp - the tfm-level pass pipeline -----------------------===//

#include "passes/Pipeline.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Shard/Transforms/Passes.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;
using namespace mlir::tfm;

/// Fusions and weight storage: after the split when there is one, so that
/// joined weights (QKV, gate and up) are joins of the rank's parts.
static void addFusionPasses(OpPassManager &pm,
                            const TfmPipelineOptions &options) {
  // Before the fusions, which then join the expansion's two projections
  // of the latent rows as they join Q, K and V.
  if (options.expandLatentAttention)
    pm.addPass(createExpandLatentAttentionPass());
  // Experts as projections first: the fusions and weight storage then
  // treat them as any other.
  ExpandExpertsPassOptions experts;
  experts.shareFunctions = options.sharedExpertFunctions;
  experts.ranks = options.ranks;
  pm.addPass(createExpandExpertsPass(experts));
  // Convolutions as projections too: their weights then take every
  // storage format and their products the GEMM kernels.
  if (options.convolutionsAsGemm)
    pm.addNestedPass<func::FuncOp>(createConvolutionsAsGemmPass());
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

/// The batch twins of encoders and image models (@<name>_batch): for a
/// model split over ranks, after its partition, since their loops over
/// images and their packed attention are not split themselves.
static void addBatchingPasses(OpPassManager &pm,
                              const TfmPipelineOptions &options) {
  if (!options.batchedEntryPoints)
    return;
  if (options.packSequences)
    pm.addPass(createPackSequencesPass());
  if (options.batchImages)
    pm.addPass(createBatchImagesPass());
}

void mlir::tfm::buildTfmPipeline(OpPassManager &pm,
                                 const TfmPipelineOptions &options) {
  // On @forward, so that every derived entry point keeps each update on the
  // rows of its tokens (the derivations pick rows below it, never above).
  if (options.loraSlots > 0) {
    LoraSlotsPassOptions lora;
    lora.slots = options.loraSlots;
    lora.rank = options.loraRank;
    lora.targets = options.loraTargets;
    pm.addPass(createLoraSlotsPass(lora));
  }
  // Before the cache: each stage's cached entry points follow from its
  // own layers.
  if (options.pipelineStages > 1) {
    PipelineStagesPassOptions pipeline;
    pipeline.stages = options.pipelineStages;
    pipeline.ranks = options.ranks;
    pipeline.stageLayers = options.pipelineLayers;
    pm.addPass(createPipelineStagesPass(pipeline));
  }
  if (options.kvCache) {
    KVCachePassOptions kvCache;
    kvCache.maxContext = options.maxContext;
    kvCache.kvDtype = options.kvDtype;
    kvCache.verify = options.verify;
    // Whisper's word timestamps read some heads of the cross-attention,
    // which a split model has a part of on each rank: none there.
    kvCache.align = options.ranks <= 1;
    // A split model's batched entry points come after its partition (their
    // loops over sequences hold the attention, and shard-partition
    // partitions a function's top level only).
    kvCache.decodeBatch = kvCache.prefillBatch =
        options.batchedEntryPoints && options.ranks <= 1;
    pm.addPass(createKVCachePass(kvCache));
    // @decode calls @prefill: inline it so that codegen sees one token.
    pm.addPass(createInlinerPass());
  }
  // A split model's batched entry points come after its partition.
  if (options.ranks <= 1)
    addBatchingPasses(pm, options);
  if (options.ranks > 1) {
    pm.addPass(createCanonicalizerPass());
    pm.addPass(createCSEPass());
    ShardTensorParallelPassOptions split;
    split.ranks = options.ranks;
    pm.addPass(createShardTensorParallelPass(split));
    return;
  }
  addFusionPasses(pm, options);
  if (options.pipelineStages > 1)
    pm.addPass(createPipelineLastStagePass());
}

void mlir::tfm::buildTfmPartitionPipeline(OpPassManager &pm,
                                          const TfmPipelineOptions &options) {
  if (options.ranks <= 1)
    return;
  pm.addNestedPass<func::FuncOp>(shard::createPartition());
  pm.addPass(createTakeRankPartsPass());
  pm.addPass(createLocalizeShardedWeightsPass());
  // The batched entry points, from the rank's own functions.
  if (options.kvCache && options.batchedEntryPoints)
    pm.addPass(createBatchKVCachePass());
  addBatchingPasses(pm, options);
  addFusionPasses(pm, options);
  if (options.pipelineStages > 1)
    pm.addPass(createPipelineLastStagePass());
}
