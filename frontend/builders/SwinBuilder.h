//===- SwinBuilder.h - a SwinSpec as tfm IR ---------------------*- C++ -*-===//
//
// The module of a Swin Transformer (Swin.h reads its config): @encode(pixels)
// returns the last stage's tokens, @classify the classifier's logits. The
// windows' token orders and biases are computed at compile time.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_BUILDERS_SWINBUILDER_H
#define TFM_FRONTEND_BUILDERS_SWINBUILDER_H

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

/// SwinModel's sizes and head.
struct SwinSpec {
  std::string prefix; // "swin." in the classifier's checkpoint
  int64_t imageSize = 224, patchSize = 4, channels = 3, embedDim = 96,
          window = 7;
  std::vector<int64_t> depths, heads;
  double mlpRatio = 4.0, normEpsilon = 1e-5;
  ActivationKind activation = ActivationKind::gelu;
  int64_t labels = 0; // 0: SwinModel's @encode

  int64_t resolution(size_t stage) const {
    return (imageSize / patchSize) >> stage;
  }
  int64_t width(size_t stage) const { return embedDim << stage; }
  /// A stage no larger than the window has one window and no shift.
  int64_t windowAt(size_t stage) const {
    return std::min(window, resolution(stage));
  }
  int64_t shiftAt(size_t stage, int64_t block) const {
    return block % 2 && resolution(stage) > window ? window / 2 : 0;
  }
  std::string name(size_t stage, int64_t block, llvm::StringRef what) const {
    return prefix + "encoder.layers." + std::to_string(stage) + ".blocks." +
           std::to_string(block) + "." + what.str();
  }
};

/// `@encode` or `@classify`. Each block's window bias is computed from the
/// checkpoint's relative position table into a weight of its own, added to
/// `weights`. Tensors of the checkpoint that the model does not read are
/// refused unless `isIgnoredWeight`.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildSwin(mlir::MLIRContext &context, const SwinSpec &spec,
          WeightStore &weights, llvm::StringRef checkpoint,
          llvm::function_ref<bool(llvm::StringRef)> isIgnoredWeight);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_BUILDERS_SWINBUILDER_H
