//===- DiffusionSpec.h - a Stable Diffusion UNet's and VAE's shape -*- C++ -*-===//
//
// What frontend/families/StableDiffusion.cpp reads from a diffusers
// folder's unet/config.json and vae/config.json (UNet2DConditionModel,
// AutoencoderKL) and the builders turn into @denoise and @decode_latents.
// Feature maps are batches [N, H, W, C] inside the module; entry points
// take and return diffusers' channel-first [N, C, H, W] (the VAE's one
// image without the batch).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_BUILDERS_DIFFUSIONSPEC_H
#define TFM_FRONTEND_BUILDERS_DIFFUSIONSPEC_H

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::tfm {

/// One stage of the UNet's down (or, reversed, up) path.
struct UNetStage {
  int64_t channels = 0;
  /// Cross-attention transformers after each resnet (CrossAttn*Block2D);
  /// false: resnets only (DownBlock2D, UpBlock2D).
  bool crossAttention = false;
  /// Attention heads of its transformers and their blocks each
  /// (transformer_layers_per_block; SDXL's 1, 2, 10).
  int64_t heads = 0, transformerLayers = 1;
};

struct UNetSpec {
  int64_t inChannels = 4, outChannels = 4;
  /// The latents' rows and columns the module is compiled for.
  int64_t height = 64, width = 64;
  /// Images per @denoise call: classifier-free guidance's two halves.
  int64_t batch = 2;
  std::vector<UNetStage> stages;
  /// The mid block's heads (num_attention_heads' last).
  int64_t midHeads = 0;
  int64_t layersPerBlock = 2, normGroups = 32;
  double normEpsilon = 1e-5;
  int64_t crossAttentionDim = 768;
  /// proj_in/proj_out as linears (SD 2.x, SDXL) rather than 1x1 convs.
  bool linearProjection = false;
  /// Timesteps(): flip_sin_to_cos and freq_shift.
  bool flipSinToCos = true;
  double freqShift = 0;
  /// SDXL's `text_time` added conditioning: the pooled text embedding
  /// ([pooledDim]) and six time ids, each embedded in addTimeDim sinusoids,
  /// through add_embedding into the time embedding.
  bool textTime = false;
  int64_t addTimeDim = 256, pooledDim = 1280;
  /// The text tokens (77) the cross-attention reads.
  int64_t textTokens = 77;
  /// Weight names' prefix in the combined store ("unet.").
  std::string prefix;

  int64_t timeEmbedDim() const { return stages.front().channels * 4; }
};

struct VaeSpec {
  int64_t inChannels = 3, outChannels = 3, latentChannels = 4;
  /// The latents' rows and columns (the image's divided by 8).
  int64_t height = 64, width = 64;
  std::vector<int64_t> blockChannels;
  int64_t layersPerBlock = 2, normGroups = 32;
  /// latents / scaling_factor is what the decoder reads.
  double scalingFactor = 0.18215;
  std::string prefix;
  /// The mid block's attention: diffusers' names (to_q, ...) or the
  /// deprecated ones older folders keep (query, key, value, proj_attn).
  bool deprecatedAttentionNames = false;

  /// How many times the decoder doubles the latents' size.
  int64_t upsamplings() const { return int64_t(blockChannels.size()) - 1; }
};

} // namespace mlir::tfm

#endif // TFM_FRONTEND_BUILDERS_DIFFUSIONSPEC_H
