//===- DiffusionAttr.h - the tfm.diffusion module attribute -----*- C++ -*-===//
//
// Apart from TfmDialect.h so that the few files that read it (the
// verifier, the diffusion frontend, the compiler's description, the
// packager) are all that a change to it rebuilds.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_IR_DIFFUSIONATTR_H
#define TFM_IR_DIFFUSIONATTR_H

#include "llvm/ADT/StringRef.h"

namespace mlir::tfm {

/// On the module of a Stable Diffusion pipeline: what its sampling loop
/// needs beside the entry points, a DictionaryAttr of the integers
/// latent_channels, unet_in_channels, latent_height, latent_width,
/// vae_scale_factor, text_tokens, pad_token, pad_token_2 (SDXL's second
/// tokenizer's; -1 without one) and force_zeros_for_empty_prompt (0 or 1:
/// an absent negative prompt's states are zeros), the float scaling_factor
/// (the VAE's), and scheduler_config: the scalar fields of the folder's
/// scheduler_config.json as "key=value" lines.
inline constexpr llvm::StringLiteral kDiffusionAttrName = "tfm.diffusion";
/// The integer fields of kDiffusionAttrName, in tfm_diffusion_desc's order.
inline constexpr llvm::StringLiteral kDiffusionIntegerFields[] = {
    "latent_channels", "unet_in_channels", "latent_height", "latent_width",
    "vae_scale_factor", "text_tokens", "pad_token", "pad_token_2",
    "force_zeros_for_empty_prompt"};

} // namespace mlir::tfm

#endif // TFM_IR_DIFFUSIONATTR_H
