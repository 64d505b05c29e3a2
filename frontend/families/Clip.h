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

#ifndef TFM_FRONTEND_CLIP_H
#define TFM_FRONTEND_CLIP_H

#include "frontend/ModelLoader.h"
#include "frontend/formats/ConfigReader.h"

namespace mlir::tfm {

/// Whether config.json's model_type is CLIP's.
bool isClipFamily(llvm::StringRef modelType);

/// The CLIP families, for messages.
std::string supportedClipFamilies();

/// Builds the module of the CLIP model `config` describes (read from
/// `configPath`) into `model`, whose weights are loaded from `checkpoint`.
llvm::Error loadClip(MLIRContext &context, llvm::StringRef modelType,
                     ConfigReader &config,
                     llvm::ArrayRef<std::string> architectures,
                     llvm::StringRef checkpoint, llvm::StringRef configPath,
                     LoadedModel &model);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_CLIP_H
