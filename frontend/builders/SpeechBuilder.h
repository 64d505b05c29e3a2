//===- SpeechBuilder.h - a SpeechSpec as tfm IR -----------------*- C++ -*-===//
//
// The module of a Wav2Vec2 or HuBERT model (Wav2Vec2.h reads its config):
// @recognize(samples) returns a CTC head's logits per 20 ms frame, @encode a
// base model's last hidden state.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_BUILDERS_SPEECHBUILDER_H
#define TFM_FRONTEND_BUILDERS_SPEECHBUILDER_H

#include "frontend/builders/DecoderSpec.h"
#include "frontend/formats/WeightStore.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::tfm {

/// A Wav2Vec2 or HuBERT model's sizes and head.
struct SpeechSpec {
  std::string family;
  /// "wav2vec2." / "hubert." in the heads' checkpoints; "" in base models'.
  std::string prefix;
  int64_t hiddenSize = 0, numLayers = 0, numHeads = 0, intermediateSize = 0;
  std::vector<int64_t> convDim, convKernel, convStride;
  bool convBias = false;
  enum class FeatureNorm { Group, Layer } featureNorm = FeatureNorm::Group;
  ActivationKind featureActivation = ActivationKind::gelu;
  ActivationKind activation = ActivationKind::gelu;
  /// HuBERT may leave the feature projection's LayerNorm out.
  bool projectionNorm = true;
  bool stableLayerNorm = false;
  int64_t positionKernel = 128, positionGroups = 16;
  double normEpsilon = 1e-5;
  /// The feature extractor's zero-mean, unit-variance normalization.
  bool normalizeInput = true;
  /// The CTC head's labels (0: a base model, @encode).
  int64_t vocabSize = 0;

  /// Samples one output frame hears, and samples between frames.
  int64_t receptiveField() const {
    int64_t field = 1, jump = 1;
    for (size_t i = 0; i < convKernel.size(); ++i) {
      field += (convKernel[i] - 1) * jump;
      jump *= convStride[i];
    }
    return field;
  }
  int64_t frameSamples() const {
    int64_t jump = 1;
    for (int64_t stride : convStride)
      jump *= stride;
    return jump;
  }
  std::string name(llvm::StringRef suffix) const {
    return prefix + suffix.str();
  }
  std::string positionConv() const {
    return name("encoder.pos_conv_embed.conv.");
  }
  /// The weight of group g of the positional convolution (split by
  /// prepareSpeechWeights).
  std::string positionGroup(int64_t g) const {
    return positionConv() + "group" + std::to_string(g) + ".weight";
  }
};

/// The positional convolution's weight from its weight norm (dim 2, as
/// nn.utils.weight_norm stores it: `weight_g` [1, 1, k], `weight_v`
/// [d, d / groups, k]; or the parametrization's original0 and original1):
/// w[:, :, j] = g[j] · v[:, :, j] / |v[:, :, j]|, split by group into
/// [d / groups, (d / groups) · k] matrices, the windows' layout.
llvm::Error prepareSpeechWeights(const SpeechSpec &spec, WeightStore &store,
                                 llvm::StringRef checkpoint);

/// `@recognize` or `@encode`, over the weights prepareSpeechWeights made.
/// Tensors of the checkpoint that the model does not read are refused
/// unless `isIgnoredWeight`.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildSpeechModel(mlir::MLIRContext &context, const SpeechSpec &spec,
                 const WeightStore &weights, llvm::StringRef checkpoint,
                 llvm::function_ref<bool(llvm::StringRef)> isIgnoredWeight);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_BUILDERS_SPEECHBUILDER_H
