//===- StableDiffusion.h - a diffusers pipeline folder ----------*- C++ -*-===//
//
// A folder with model_index.json (StableDiffusionPipeline and its img2img
// and inpainting siblings, as diffusers saves and the Hub serves them):
// text_encoder/ (CLIPTextModel, Clip.cpp's @encode_text) with tokenizer/,
// unet/ (UNet2DConditionModel: @denoise) and vae/ (AutoencoderKL:
// @decode_latents), each component's weights under its folder's name
// ("unet.conv_in.weight"), in f32, f16 or bf16 safetensors, or the `fp16`
// variant files.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FAMILIES_STABLEDIFFUSION_H
#define TFM_FRONTEND_FAMILIES_STABLEDIFFUSION_H

#include "frontend/families/LoadedModel.h"

namespace mlir::tfm {

/// Whether `directory` is a diffusers pipeline folder (model_index.json).
bool isDiffusionPipelineFolder(llvm::StringRef directory);

/// The pipelines tfmc compiles, for messages.
std::string supportedDiffusionPipelines();

/// Reads the pipeline folder `directory` into one module.
/// Reads the pipeline folder `directory` into one module, for images of
/// `diffusion`'s size (0: the UNet's sample_size times 8); with
/// `checkpoint`, a single-file LDM checkpoint's weights with the folder's
/// configs and tokenizer (LdmCheckpoint.h).
llvm::Expected<LoadedModel>
loadDiffusionPipeline(MLIRContext &context, llvm::StringRef directory,
                      const DiffusionOptions &diffusion,
                      llvm::StringRef checkpoint = "");

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FAMILIES_STABLEDIFFUSION_H
