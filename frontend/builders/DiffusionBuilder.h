//===- DiffusionBuilder.h - a UNet's and VAE's entry points -----*- C++ -*-===//
//
// Builds Stable Diffusion's image halves into a module that already holds
// the text encoder (Clip.cpp's @encode_text):
//   @denoise(latents [C, h, w], timestep [1], text [77, D]
//            [, text_embeds [P], time_ids [6]]) -> the UNet's [4, h, w]
//   @decode_latents(latents [4, h, w]) -> the VAE's image [3, 8h, 8w]
// from UNet2DConditionModel's and AutoencoderKL's blocks (diffusers
// 0.27): ResnetBlock2D, Transformer2DModel with BasicTransformerBlock
// (self-attention, cross-attention to the text, GEGLU), Downsample2D,
// Upsample2D, the VAE's mid-block attention.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_DIFFUSIONBUILDER_H
#define TFM_FRONTEND_DIFFUSIONBUILDER_H

#include "frontend/builders/DiffusionSpec.h"
#include "frontend/builders/ModelIRBuilder.h"

#include <array>
#include <optional>

namespace mlir::tfm {

class DiffusionIRBuilder : public ModelIRBuilder {
public:
  DiffusionIRBuilder(MLIRContext &context, const WeightStore &weights,
                     llvm::StringRef checkpoint, llvm::StringRef family)
      : ModelIRBuilder(context, weights, checkpoint, family) {}

  /// Appends @denoise to `module`.
  void buildDenoise(ModuleOp module, const UNetSpec &spec);
  /// Appends @decode_latents to `module`.
  void buildDecodeLatents(ModuleOp module, const VaeSpec &spec);
  /// Appends @encode_image to `module`: the VAE encoder's moments.
  void buildEncodeImage(ModuleOp module, const VaeSpec &spec);

private:
  /// [h, w, c] f32.
  RankedTensorType featureMap(int64_t h, int64_t w, int64_t c) {
    return RankedTensorType::get({h, w, c}, b.getF32Type());
  }
  static int64_t channelsOf(Value x) {
    return cast<RankedTensorType>(x.getType()).getDimSize(2);
  }
  /// Conv2d `name` (its .weight [out, C, k, k] and .bias) on x, padded by
  /// kernel / 2 on every side unless `padding` ([top, left, bottom,
  /// right]) says otherwise.
  Value conv(Value x, const std::string &name, int64_t out, int64_t kernel,
             int64_t stride = 1, Value bias = {},
             std::optional<std::array<int64_t, 4>> padding = std::nullopt);
  /// The VAE's mid block (resnet, single-head attention, resnet) of
  /// `coder` ("decoder" or "encoder").
  Value vaeMidBlock(Value x, const VaeSpec &spec, const std::string &coder);
  /// GroupNorm `name` (.weight, .bias), optionally followed by SiLU.
  Value groupNorm(Value x, const std::string &name, int64_t groups,
                  double epsilon, bool silu);
  /// ResnetBlock2D: `timeFeatures` is silu(the time embedding) ([1, T]) or
  /// null (the VAE's, without time_emb_proj).
  Value resnet(Value x, const std::string &name, int64_t out, int64_t groups,
               double epsilon, Value timeFeatures);
  /// Transformer2DModel over x with the text states.
  Value transformer(Value x, const std::string &name, const UNetSpec &spec,
                    int64_t heads, int64_t layers, Value text);
  /// diffusers' Attention on rows [S, D]: to_q of x, to_k and to_v of
  /// `context` (x itself when null), `heads` heads, to_out.0; with
  /// `biased` the projections have biases (the VAE's). `names` gives the
  /// four projections' weight names.
  Value attention(Value x, Value context, int64_t heads,
                  ArrayRef<std::string> names, bool biased);
  /// [h, w, c] <-> [h·w, c] views.
  Value rowsOf(Value map);
  Value mapOf(Value rows, int64_t h, int64_t w);
  /// diffusers' channel-first [c, h, w] <-> [h, w, c].
  Value channelsLast(Value chw);
  Value channelsFirst(Value hwc);
  /// Columns [start, start + n) of rows [S, D].
  Value columns(Value rows, int64_t start, int64_t n);
  /// x + y of one type.
  Value add(Value x, Value y);
  /// The UNet's time embedding, silu applied ([1, T]): time_proj,
  /// time_embedding, and SDXL's add_embedding of the text_time condition.
  Value timeFeatures(Value timestep, Value textEmbeds, Value timeIds,
                     const UNetSpec &spec);
  /// A function `name` with `inputs` (features), built by `body`.
  void entryPoint(ModuleOp module, llvm::StringRef name,
                  ArrayRef<Type> inputs,
                  llvm::function_ref<Value(ValueRange)> body);
};

} // namespace mlir::tfm

#endif // TFM_FRONTEND_DIFFUSIONBUILDER_H
