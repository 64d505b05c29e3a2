//===- DiffusionBuilder.h - a UNet's and VAE's entry points -----*- C++ -*-===//
//
// Builds Stable Diffusion's image halves into a module that already holds
// the text encoder (Clip.cpp's @encode_text):
//   @text_keys_values(text [77, D]) -> [N]: every cross-attention's keys
//            and values of the text, computed once per prompt
//   @denoise(latents [2, C, h, w], timestep [1], keys_values [2, N]
//            [, text_embeds [2, P], time_ids [6]]) -> the UNet's
//            [2, 4, h, w]: classifier-free guidance's two halves (the
//            negative prompt's, then the prompt's) in one batched call
//   @decode_latents(latents [4, h, w]) -> the VAE's image [3, 8h, 8w]
// from UNet2DConditionModel's and AutoencoderKL's blocks (diffusers
// 0.27): ResnetBlock2D, Transformer2DModel with BasicTransformerBlock
// (self-attention, cross-attention to the text, GEGLU), Downsample2D,
// Upsample2D, the VAE's mid-block attention.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_BUILDERS_DIFFUSIONBUILDER_H
#define TFM_FRONTEND_BUILDERS_DIFFUSIONBUILDER_H

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

  /// Appends @text_keys_values and @denoise to `module`.
  void buildDenoise(ModuleOp module, const UNetSpec &spec);
  /// Appends @decode_latents to `module`.
  void buildDecodeLatents(ModuleOp module, const VaeSpec &spec);
  /// Appends @encode_image to `module`: the VAE encoder's moments.
  void buildEncodeImage(ModuleOp module, const VaeSpec &spec);

private:
  /// A batch of maps [n, h, w, c] f32.
  RankedTensorType featureMap(int64_t n, int64_t h, int64_t w, int64_t c) {
    return RankedTensorType::get({n, h, w, c}, b.getF32Type());
  }
  static int64_t channelsOf(Value x) {
    return cast<RankedTensorType>(x.getType()).getDimSize(3);
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
  /// Transformer2DModel over x, its cross-attention reading the next
  /// keys and values of `keysValues`.
  Value transformer(Value x, const std::string &name, const UNetSpec &spec,
                    int64_t heads, int64_t layers);
  /// diffusers' Attention on the rows [images·S, D] of `images` maps:
  /// to_q (and, for self-attention, to_k and to_v) of all rows at once,
  /// `heads` heads, each image attending alone, to_out.0; with `biased`
  /// the projections have biases (the VAE's). `names` gives the four
  /// projections' weight names. `keysValues`, for cross-attention, are
  /// each image's keys and values already projected ([T, D] each).
  Value attention(Value x, int64_t images, int64_t heads,
                  ArrayRef<std::string> names, bool biased,
                  ArrayRef<std::pair<Value, Value>> keysValues = {});
  /// The next cross-attention's keys and values ([T, c] each, per image)
  /// from the @denoise argument, checked against the order
  /// crossAttentions lists.
  std::vector<std::pair<Value, Value>>
  nextKeysValues(const std::string &attention, int64_t channels);
  /// [n, h, w, c] <-> [n·h·w, c] views.
  Value rowsOf(Value map);
  Value mapOf(Value rows, int64_t n, int64_t h, int64_t w);
  /// x with its dimensions in `permutation`'s order.
  Value permuted(Value x, ArrayRef<int64_t> permutation);
  /// diffusers' channel-first [n, c, h, w] <-> [n, h, w, c].
  Value channelsLast(Value nchw);
  Value channelsFirst(Value nhwc);
  /// x as a batch of one ([1, ...]), and the one image of such a batch.
  Value batchOfOne(Value x);
  Value onlyImage(Value x);
  /// Rows [start, start + n) of x (its first dimension).
  Value rowRange(Value rows, int64_t start, int64_t n);
  /// rows [r, D] repeated `times` times: [times·r, D].
  Value repeatRows(Value rows, int64_t times);
  /// Upsample2D's nearest doubling.
  Value upsample(Value x, const std::string &name);
  /// Columns [start, start + n) of rows [S, D].
  Value columns(Value rows, int64_t start, int64_t n);
  /// x + y of one type.
  Value add(Value x, Value y);
  /// The UNet's time embedding, silu applied: time_proj and
  /// time_embedding ([1, T], shared by the batch), and SDXL's
  /// add_embedding of each image's text_time condition ([N, T]).
  Value timeFeatures(Value timestep, Value textEmbeds, Value timeIds,
                     const UNetSpec &spec);
  /// Every cross-attention (attn2) of the UNet, in the order @denoise
  /// reads them: its weight prefix and channels.
  struct CrossAttention {
    std::string name;
    int64_t channels;
  };
  std::vector<CrossAttention> crossAttentions(const UNetSpec &spec) const;
  /// While @denoise is built: the keys and values argument, where the
  /// next attention's start, and which attention that is.
  Value keysValues;
  int64_t keysValuesOffset = 0, textTokens = 0;
  std::vector<CrossAttention> pendingCross;
  size_t nextCross = 0;

  /// A function `name` with `inputs` (features), built by `body`.
  void entryPoint(ModuleOp module, llvm::StringRef name,
                  ArrayRef<Type> inputs,
                  llvm::function_ref<Value(ValueRange)> body);
};

} // namespace mlir::tfm

#endif // TFM_FRONTEND_BUILDERS_DIFFUSIONBUILDER_H
