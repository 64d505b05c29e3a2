//===- Pipeline.h - the tfm-level pass pipeline -----------------*- C++ -*-===//
//
// The tfm -> tfm passes tfmc runs on a model before codegen.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_PASSES_PIPELINE_H
#define TFM_PASSES_PIPELINE_H

#include "mlir/Pass/PassManager.h"

#include <string>

namespace mlir::tfm {

struct TfmPipelineOptions {
  /// Derive @prefill/@decode (causal decoders only).
  bool kvCache = true;
  /// Cache capacity; 0 takes the model's maximum context.
  int64_t maxContext = 0;
  /// The self-attention cache's storage: f32, bf16, f16 or int8
  /// (tfm-kv-cache).
  std::string kvDtype = "f32";
  /// Derive @verify (speculative decoding's every-position @prefill).
  bool verify = false;
  /// Derive @decode_batch and @prefill_batch (the serving engine's).
  bool batchedEntryPoints = true;
  /// A mixture's experts expanded once for all the entry points holding it
  /// (tfm-expand-experts' share-functions).
  bool sharedExpertFunctions = true;
  /// Derive @<name>_batch over packed sequences (encoders only).
  bool packSequences = true;
  bool batchImages = true;
  /// The fusion passes (each can be turned off to measure what it buys).
  bool fuseQKV = true;
  bool fuseMLP = true;
  bool fuseNorm = true;
  /// Multi-head latent attention's expanded form where it costs less
  /// (tfm-expand-latent-attention).
  bool expandLatentAttention = true;
  /// 2-D convolutions as image windows and a tfm.linear.
  bool convolutionsAsGemm = true;
  /// tfm-quantize-weights' dtype, edge-dtype and keep; it runs unless
  /// both dtypes are empty or f32.
  std::string weightsDtype, edgeDtype, keepWeights, weightsDtypeFor;
  /// Run-time LoRA adapter slots (tfm-lora-slots; 0: none), the largest
  /// rank a slot holds, and the modules adapted (comma-separated; empty:
  /// every projection of the layers).
  int64_t loraSlots = 0;
  int64_t loraRank = 16;
  std::string loraTargets;
  /// Processes the model is split over (tensor parallelism, --ranks): more
  /// than one ends the tfm stage with the split's annotations
  /// (tfm-shard-tensor-parallel), and the partition stage carries it out
  /// before fusing.
  int64_t ranks = 1;
  /// Processes a decoder's layers are split over in stages (pipeline
  /// parallelism, --pipeline-stages; tfm-pipeline-stages before the KV
  /// cache, so that each rank's cache holds its stage's layers).
  int64_t pipelineStages = 1;
  /// Each stage's layers ("8,4"); empty: balanced by their weights.
  std::string pipelineLayers;
};

/// The tfm stage: the derived entry points, then (one rank) the fusions and
/// weight storage, or (several) the split's annotations.
void buildTfmPipeline(OpPassManager &pm, const TfmPipelineOptions &options);

/// The partition stage, between the tfm stage and codegen: for several
/// ranks, upstream shard-partition, the rank's weight parts, then the
/// fusions and weight storage on the per-rank program; nothing for one.
void buildTfmPartitionPipeline(OpPassManager &pm,
                               const TfmPipelineOptions &options);

} // namespace mlir::tfm

#endif // TFM_PASSES_PIPELINE_H
