//===- Llava.h - LLaVA: a CLIP image tower before a decoder -----*- C++ -*-===//
//
// transformers' LlavaForConditionalGeneration from a Hugging Face folder
// (model_type llava): a CLIP vision tower read from a chosen layer, an MLP
// projector into the text model's width, and a LLaMA, Mistral or Qwen2
// text model. The text model is compiled as any decoder of its family
// (frontend/HuggingFace.cpp reads it through this file's hooks); this file
// reads the config, names the tensors, and adds @encode_image, the image's
// tokens, whose rows a prompt's placeholder tokens (tfm.image_token) take.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FAMILIES_LLAVA_H
#define TFM_FRONTEND_FAMILIES_LLAVA_H

#include "frontend/builders/ClipBuilder.h"
#include "frontend/families/LoadedModel.h"
#include "frontend/formats/ConfigReader.h"

#include "llvm/Support/JSON.h"

namespace mlir::tfm {

/// Where the image side's tensors are, named as transformers names them.
constexpr llvm::StringLiteral kLlavaVisionTower = "vision_tower.";
constexpr llvm::StringLiteral kLlavaProjector = "multi_modal_projector.";
/// LLaVA-NeXT's row after each row of an image's patches.
constexpr llvm::StringLiteral kLlavaImageNewline = "image_newline";

struct LlavaSpec {
  /// text_config's model_type, and its fields over that model class's
  /// defaults (transformers writes only the fields that differ).
  std::string textModelType;
  llvm::json::Object textConfig;
  /// The image side; its textHidden is the text model's, known once that
  /// is read.
  ImageTokensSpec image;
  /// The placeholder id whose positions take the image's rows.
  int64_t imageToken = 0;
  /// LLaVA-NeXT (llava_next): image_grid_pinpoints' height and width
  /// pairs, which tile an image (empty: one 336 px image, LLaVA 1.5).
  std::vector<int64_t> gridPinpoints;
};

/// Reads config.json's vision_config (over `defaults`, its class's, where
/// given), which must describe a `towerType` tower (clip_vision_model, or
/// SigLIP's siglip_vision_model or Idefics3's idefics3_vision) into
/// `image`'s tower, its tensors under "vision_tower.", the projector's
/// under "multi_modal_projector."; problems are recorded in `config`,
/// naming `family`. False on one.
bool readVisionTowerConfig(ConfigReader &config, llvm::StringRef family,
                           llvm::StringRef towerType, ImageTokensSpec &image,
                           const llvm::json::Object *defaults = nullptr);

/// Reads config.json's text_config: its model_type (LlamaConfig's where
/// it gives none, as LlavaConfig and Idefics3Config read it) into
/// `modelType`, and its fields over that class's defaults into
/// `textConfig` (transformers writes only the fields that differ).
/// Problems are recorded in `config`, naming `family`; false on one.
bool readTextConfigOverDefaults(ConfigReader &config, llvm::StringRef family,
                                std::string &modelType,
                                llvm::json::Object &textConfig);

/// Whether config.json's model_type is LLaVA's.
bool isLlavaFamily(llvm::StringRef modelType);

/// The LLaVA families, for messages.
std::string supportedLlavaFamilies();

/// Reads a llava config.json into `spec`; problems are recorded in
/// `config`.
void readLlavaConfig(ConfigReader &config, LlavaSpec &spec);

/// Renames the checkpoint's tensors to the text model's own names
/// ("model.", "lm_head.") and the image side's ("vision_tower.",
/// "multi_modal_projector.", "image_newline"), as transformers 4.40
/// (language_model.model.) and later releases (model.language_model.) save
/// them.
void renameLlavaWeights(WeightStore &store);

/// Renames every tensor of `store` that starts with a pair's first prefix
/// to start with its second instead (the first pair that matches).
void renamePrefixes(
    WeightStore &store,
    llvm::ArrayRef<std::pair<llvm::StringLiteral, llvm::StringLiteral>>
        renames);

/// Whether a (renamed) tensor is the image side's.
bool isLlavaImageWeight(llvm::StringRef name);

/// A token id of `directory`'s config.json (its field `field`) inside the
/// text model's vocabulary, or the error that names it.
llvm::Error checkTokenInVocabulary(llvm::StringRef directory,
                                   llvm::StringRef field, int64_t id,
                                   const LoadedModel &model);

/// Adds @encode_image (`image` over `model.weights`, whose tensors outside
/// it are the text model's), the placeholder `imageToken`
/// (tfm.image_token) and the image preprocessing to `model`: the step
/// shared by Hugging Face folders and llama.cpp's mmproj files (Mmproj.h).
llvm::Error addImageTokens(MLIRContext &context, const ImageTokensSpec &image,
                           int64_t imageToken, llvm::StringRef checkpoint,
                           ImagePreprocessingAttr preprocessing,
                           LoadedModel &model);

/// Adds @encode_image and the placeholder (tfm.image_token) to `model`,
/// the text model read from `directory`, with the image preprocessing of
/// its preprocessor_config.json (LLaVA-NeXT's: tiled by the config's grid
/// pinpoints, @encode_image returning image_newline too).
llvm::Error addLlavaImageTokens(MLIRContext &context, LlavaSpec &spec,
                                llvm::StringRef directory,
                                llvm::StringRef checkpoint, LoadedModel &model);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FAMILIES_LLAVA_H
