//===- Mmproj.h - llama.cpp's mmproj files, an image side -*- C++ -*-===//
//
// llama.cpp keeps a vision-language model in two GGUF files: the text model
// (any decoder GGUF) and an "mmproj" file (general.architecture "clip")
// holding the vision tower and the projector, which its mtmd library runs.
// tfmc reads LLaVA 1.5's and LLaVA-NeXT's (clip.projector_type "mlp": a
// CLIP tower and a two-layer MLP, as llama.cpp's
// convert_image_encoder_to_gguf.py writes it from a CLIP folder and
// LLaVA's projector; NeXT's with its tiles and newline row) into the same
// @encode_image as a llava or llava_next folder's (Llava.h), placeholder
// `<image>` of the text model's vocabulary; Gemma 3's
// (clip.projector_type "gemma3": SigLIP, pooled, as a gemma3 folder's,
// Gemma3Vision.h); and SmolVLM's (clip.projector_type "idefics3": SigLIP,
// pixel-shuffled tiles, as an idefics3 folder's, Idefics3.h).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FAMILIES_MMPROJ_H
#define TFM_FRONTEND_FAMILIES_MMPROJ_H

#include "frontend/families/LoadedModel.h"

namespace mlir::tfm {

/// Adds the image side of the mmproj file at `path` to `model`, a text
/// model read from a GGUF file.
llvm::Error addMmprojImageTokens(MLIRContext &context, llvm::StringRef path,
                                 LoadedModel &model);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FAMILIES_MMPROJ_H
