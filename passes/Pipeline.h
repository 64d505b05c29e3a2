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
  /// Derive @decode_batch and @prefill_batch (the serving engine's).
  bool batchedEntryPoints = true;
  /// Derive @<name>_batch over packed sequences (encoders only).
  bool packSequences = true;
  bool batchImages = true;
  /// The fusion passes (each can be turned off to measure what it buys).
  bool fuseQKV = true;
  bool fuseMLP = true;
  bool fuseNorm = true;
  /// tfm-quantize-weights' dtype, edge-dtype and keep; it runs unless
  /// both dtypes are empty or f32.
  std::string weightsDtype, edgeDtype, keepWeights, weightsDtypeFor;
};

void buildTfmPipeline(OpPassManager &pm, const TfmPipelineOptions &options);

} // namespace mlir::tfm

#endif // TFM_PASSES_PIPELINE_H
