//===- Clip.h - CLIP's text and image encoders ------------------*- C++ -*-===//
//
// transformers' CLIPModel, CLIPTextModel(WithProjection) and
// CLIPVisionModel(WithProjection) from Hugging Face directories
// (model_type clip, clip_text_model, clip_vision_model). The text encoder
// is the one Stable Diffusion conditions on; each tower has an @encode_*
// entry point (its last hidden state) and an @embed_* one (its pooled state
// through its projection, or the pooled state where it has none).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FAMILIES_CLIP_H
#define TFM_FRONTEND_FAMILIES_CLIP_H

#include "frontend/builders/ClipBuilder.h"
#include "frontend/families/LoadedModel.h"
#include "frontend/formats/ConfigReader.h"

namespace mlir::tfm {

/// Whether config.json's model_type is CLIP's.
bool isClipFamily(llvm::StringRef modelType);

/// The CLIP families, for messages.
std::string supportedClipFamilies();

/// A CLIPVisionConfig (its defaults where it says nothing), checked; the
/// tensors under "vision_model.". Problems are recorded in `config`.
void readClipImageConfig(ConfigReader &config, ClipImageSpec &image);

/// Builds the module of the CLIP model `config` describes (read from
/// `configPath`) into `model`, whose weights are loaded from `checkpoint`.
llvm::Error loadClip(MLIRContext &context, llvm::StringRef modelType,
                     ConfigReader &config,
                     llvm::ArrayRef<std::string> architectures,
                     llvm::StringRef checkpoint, llvm::StringRef configPath,
                     LoadedModel &model);

/// SDXL's two text encoders (StableDiffusionXLPipeline.encode_prompt) as
/// one entry point, @encode_text(ids [T], ids_2 [T]) -> (prompt_embeds
/// [T, D1 + D2], text_embeds [P]): each tower's penultimate hidden state
/// (hidden_states[-2]: all blocks but the last, no final_layer_norm) side
/// by side, and the second tower's pooled state through its
/// text_projection. `model.weights` holds the first tower's tensors under
/// their own names and the second's under `secondPrefix`; `first` and
/// `second` are their config.json's.
llvm::Error loadClipTextPair(MLIRContext &context, ConfigReader &first,
                             ConfigReader &second, llvm::StringRef secondPrefix,
                             llvm::StringRef checkpoint, LoadedModel &model);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FAMILIES_CLIP_H
