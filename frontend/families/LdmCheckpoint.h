//===- LdmCheckpoint.h - a single-file Stable Diffusion checkpoint --*- C++ -*-===//
//
// The single .safetensors files users trade (v1-5-pruned-emaonly,
// v2-1_768-ema-pruned, ...) keep the original LDM names:
// model.diffusion_model.* (the UNet), first_stage_model.* (the VAE),
// cond_stage_model.transformer.* (SD 1.x's CLIP text encoder) or
// cond_stage_model.model.* (SD 2.x's OpenCLIP one), or SDXL's
// conditioner.embedders.0.transformer.* and .1.model.* (CLIP, then
// OpenCLIP with its projection). Their tensors are
// sorted into the components' stores under diffusers' names, as diffusers'
// single_file_utils converts them: renamed, the VAE attention's 1x1
// convolutions read as matrices, OpenCLIP's stacked q, k, v split and its
// projection transposed. What the names do not say (group counts, heads,
// the VAE's scaling factor, the tokenizer) comes from a diffusers folder's
// configs (tfmc FILE --config-folder DIR).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FAMILIES_LDMCHECKPOINT_H
#define TFM_FRONTEND_FAMILIES_LDMCHECKPOINT_H

#include "frontend/formats/WeightStore.h"

#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace mlir::tfm {

/// Whether the tensors of `store` are an LDM single-file checkpoint's.
bool isLdmCheckpoint(const WeightStore &store);

/// The shapes the LDM names depend on, from the diffusers configs.
struct LdmLayout {
  /// The UNet's layers_per_block and, per stage, whether it has attention
  /// blocks (their upsampler sits one slot later).
  int64_t unetLayersPerBlock = 2;
  std::vector<bool> unetStageAttention;
  /// The VAE's stages (its decoder counts them the other way round).
  int64_t vaeStages = 4;
  /// The text encoder's layers: an OpenCLIP tower's later ones (SD 2.x
  /// keeps 23 of 24) are not read.
  int64_t textLayers = 12;
  /// Whether the text encoder keeps its projection
  /// (CLIPTextModelWithProjection); SD 2.x's CLIPTextModel does not.
  bool textProjection = false;
  /// SDXL's second (OpenCLIP) text encoder's layers; 0 without one.
  int64_t text2Layers = 0;
};

/// Moves the tensors of `file` (read from `path`) into `text` (diffusers'
/// CLIPTextModel names), `text2` (SDXL's second encoder,
/// CLIPTextModelWithProjection's names; null for SD 1.x and 2.x), `unet`
/// and `vae` (their own names, no prefix).
/// Buffers of the training code (the noise schedule, EMA counters) and an
/// OpenCLIP tower's unused layers are dropped, counted in `notes`; a
/// tensor of none of the components is an error naming it.
llvm::Error splitLdmCheckpoint(WeightStore &&file, llvm::StringRef path,
                               const LdmLayout &layout, WeightStore &text,
                               WeightStore *text2, WeightStore &unet,
                               WeightStore &vae,
                               std::vector<std::string> &notes);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FAMILIES_LDMCHECKPOINT_H
