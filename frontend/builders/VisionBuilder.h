//===- VisionBuilder.h - a VisionSpec as tfm IR -----------------*- C++ -*-===//
//
// The module of a vision transformer (ViT, DeiT, and AST over a
// spectrogram; VisionTransformer.h reads their configs): @encode(pixels)
// returns the last hidden state, @classify a classifier's logits.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_BUILDERS_VISIONBUILDER_H
#define TFM_FRONTEND_BUILDERS_VISIONBUILDER_H

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

/// A ViT, DeiT or AST model's sizes and head.
struct VisionSpec {
  std::string family, prefix; // "vit." / "deit." in classifiers' checkpoints
  int64_t hiddenSize = 0, numLayers = 0, numHeads = 0, intermediateSize = 0,
          height = 0, width = 0, patchSize = 0, channels = 3;
  /// Overlapping patches (AST): the rows and columns between patches; 0:
  /// the patch size.
  int64_t strideY = 0, strideX = 0;
  /// AST's input is the [mel bins, frames] filterbank, one channel.
  bool spectrogram = false;
  double normEpsilon = 1e-12;
  ActivationKind activation = ActivationKind::gelu;
  bool distillationToken = false;
  /// Heads: none (@encode), `classifier` on the class token, DeiT's
  /// teacher pair averaged, or AST's MLP head on the two tokens' mean.
  enum class Head {
    None,
    Class,
    ClassAndDistillation,
    TokensMean
  } head = Head::None;
  int64_t labels = 0;

  int64_t stepY() const { return strideY ? strideY : patchSize; }
  int64_t stepX() const { return strideX ? strideX : patchSize; }
  int64_t patches() const {
    return ((height - patchSize) / stepY() + 1) *
           ((width - patchSize) / stepX() + 1);
  }
  int64_t tokens() const { return patches() + 1 + (distillationToken ? 1 : 0); }
};

/// `@encode` or `@classify`. Tensors of the checkpoint that the model does
/// not read are refused unless `isIgnoredWeight`.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>> buildVisionTransformer(
    mlir::MLIRContext &context, const VisionSpec &spec,
    const WeightStore &weights, llvm::StringRef checkpoint,
    llvm::function_ref<bool(llvm::StringRef)> isIgnoredWeight);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_BUILDERS_VISIONBUILDER_H
