//===- ClipBuilder.h - a ClipSpec as tfm IR ---------------------*- C++ -*-===//
//
// The module of a CLIP model (Clip.h reads its configs): per tower present,
// @encode_text / @encode_image (the last hidden state) and @embed_text /
// @embed_image (the projected embedding, or the pooled state of a tower
// without a projection); or SDXL's two text towers as one @encode_text;
// or a vision-language model's @encode_image, its image tokens.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_BUILDERS_CLIPBUILDER_H
#define TFM_FRONTEND_BUILDERS_CLIPBUILDER_H

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

/// What both towers share: the transformer.
struct ClipTowerSpec {
  std::string prefix; // "text_model." or "vision_model."
  int64_t hiddenSize = 0, numLayers = 0, numHeads = 0, intermediateSize = 0;
  double normEpsilon = 1e-5;
  ActivationKind activation = ActivationKind::quick_gelu;
  /// The projection's weight ("text_projection.weight"); empty: none.
  std::string projection;
  /// SigLIP's tower (transformers' modeling_siglip.py) instead of CLIP's:
  /// the text tower attends both ways and pools its last row through a
  /// biased head (the projection); the image tower has no class token, a
  /// biased patch embedding, no pre_layrnorm, its hidden state after
  /// post_layernorm, pooled by attention from a learned probe (head.*).
  bool siglip = false;
};

struct ClipTextSpec : ClipTowerSpec {
  int64_t vocabSize = 0, maxPositions = 0;
  /// The end-of-text id pooled at; nullopt: the largest id's position.
  std::optional<int64_t> eosTokenId;
};

struct ClipImageSpec : ClipTowerSpec {
  int64_t imageSize = 0, patchSize = 0, channels = 3;
  int64_t patches() const {
    return (imageSize / patchSize) * (imageSize / patchSize);
  }
  /// The patches, and CLIP's class token.
  int64_t tokens() const { return patches() + (siglip ? 0 : 1); }
};

struct ClipSpec {
  std::string family;
  std::optional<ClipTextSpec> text;
  std::optional<ClipImageSpec> image;
  int64_t projectionDim = 0;
  /// SDXL's second text tower (with its projection): the module is then
  /// the pair's one @encode_text (buildTextPair).
  std::optional<ClipTextSpec> text2;
};

/// A vision-language model's image tokens (LLaVA's): the CLIP image
/// tower's hidden_states[`layers`] (its first `layers` blocks after
/// pre_layrnorm, without post_layernorm), the class token's row dropped
/// unless `keepClassToken`, through the projector `projector` + linear_1,
/// `activation`, linear_2 (both biased) into the text model's width.
///
/// Or, with `poolKernel` (Gemma 3's Gemma3MultiModalProjector over a
/// SigLIP tower): the tower's last hidden state (after post_layernorm) as
/// its grid of patches, averaged over `poolKernel` x `poolKernel` squares,
/// an RMSNorm (`projector` + "mm_soft_emb_norm.weight", stored with
/// Gemma's 1 added) and an unbiased linear ("mm_input_projection_weight",
/// read as [textHidden, vision hidden]).
///
/// Or, with `pixelShuffle` (Idefics3's Idefics3Connector over its SigLIP
/// tower): the last hidden state's `pixelShuffle` x `pixelShuffle` squares
/// of patches each one row, their states side by side (pixel_shuffle), and
/// an unbiased linear ("modality_projection.proj.weight").
struct ImageTokensSpec {
  ClipImageSpec tower;
  int64_t layers = 0;
  bool keepClassToken = false;
  std::string projector; // "multi_modal_projector."
  int64_t textHidden = 0;
  ActivationKind activation = ActivationKind::gelu;
  /// A [textHidden] tensor @encode_image returns beside the rows
  /// (LLaVA-NeXT's image_newline), or empty.
  std::string newline;
  int64_t poolKernel = 0;
  double projectorNormEpsilon = 1e-6;
  int64_t pixelShuffle = 0;
  /// Patches along a side of the tower's grid.
  int64_t side() const { return tower.imageSize / tower.patchSize; }
  /// The side of the squares of patches a row stands for (0: none).
  int64_t square() const { return poolKernel ? poolKernel : pixelShuffle; }
  int64_t rows() const {
    if (int64_t k = square())
      return (side() / k) * (side() / k);
    return tower.patches() + (keepClassToken ? 1 : 0);
  }
};

/// The towers' entry points (`spec.text2`: SDXL's pair). Tensors of the
/// checkpoint that the model does not read are refused unless
/// `isIgnoredWeight`.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildClip(mlir::MLIRContext &context, const ClipSpec &spec,
          const WeightStore &weights, llvm::StringRef checkpoint,
          llvm::function_ref<bool(llvm::StringRef)> isIgnoredWeight);

/// @encode_image(pixels [C, H, W]) -> the image's tokens [rows,
/// textHidden] (and the `newline` tensor, where the spec names one);
/// tensors the module does not read are refused unless `isIgnoredWeight`.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildImageTokens(mlir::MLIRContext &context, const ImageTokensSpec &spec,
                 const WeightStore &weights, llvm::StringRef checkpoint,
                 llvm::function_ref<bool(llvm::StringRef)> isIgnoredWeight);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_BUILDERS_CLIPBUILDER_H
