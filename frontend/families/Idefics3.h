//===- Idefics3.h - SmolVLM and Idefics3: tiles of an image -----*- C++ -*-===//
//
// transformers' Idefics3ForConditionalGeneration from a Hugging Face folder
// (model_type idefics3, transformers 4.46; SmolVLM's checkpoints): a SigLIP
// vision tower's last hidden state on each 512 px tile of an image,
// pixel-shuffled (each square of patches one row, their states side by
// side) and projected into a LLaMA text model. The text model is compiled
// as any decoder of its family (frontend/HuggingFace.cpp reads it, its
// tensors renamed to LLaVA's names); this file reads the config, adds
// @encode_image (one tile's rows), the image processor's splitting and
// the tokens its processor writes around the tiles' rows, which the
// runtime lays out (tfm_image_prompt_ids).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FAMILIES_IDEFICS3_H
#define TFM_FRONTEND_FAMILIES_IDEFICS3_H

#include "frontend/builders/ClipBuilder.h"
#include "frontend/families/LoadedModel.h"
#include "frontend/formats/ConfigReader.h"
#include "frontend/formats/WeightStore.h"

#include "llvm/Support/JSON.h"

namespace mlir::tfm {

struct Idefics3Spec {
  /// text_config's model_type and fields over its class's defaults.
  std::string textModelType;
  llvm::json::Object textConfig;
  /// The image side; its textHidden is the text model's, known once that
  /// is read.
  ImageTokensSpec image;
  /// The placeholder whose positions take a tile's rows (<image>).
  int64_t imageToken = 0;
};

/// Whether config.json's model_type is Idefics3's (`idefics3`, or SmolVLM2's
/// `smolvlm`, the same model under another name).
bool isIdefics3Family(llvm::StringRef modelType);
/// For messages.
std::string supportedIdefics3Families();
/// Reads an idefics3 config.json into `spec`; problems are recorded in
/// `config`.
void readIdefics3Config(ConfigReader &config, Idefics3Spec &spec);
/// Renames the checkpoint's tensors as LLaVA's (renameLlavaWeights):
/// model.text_model. to model., model.vision_model. under vision_tower.,
/// model.connector. under multi_modal_projector..
void renameIdefics3Weights(WeightStore &store);
/// Adds to `model` the image side of `spec` (its tensors in
/// `model.weights` under the folder's names; `source` names them in
/// messages): @encode_image (one tile's rows), the placeholder
/// (tfm.image_token), the tokens around the tiles (tfm.image_tile_tokens,
/// found in the text model's tokenizer) and `preprocessing`. The step a
/// folder and llama.cpp's mmproj file (Mmproj.h) share.
llvm::Error addIdefics3Image(MLIRContext &context, Idefics3Spec &spec,
                             llvm::StringRef source,
                             ImagePreprocessingAttr preprocessing,
                             LoadedModel &model);

/// Adds to `model`, the text model read from `directory`: @encode_image
/// (one tile's rows), the placeholder (tfm.image_token), the tokens around
/// the tiles (tfm.image_tile_tokens, found in its tokenizer) and the image
/// processor's resizing and splitting.
llvm::Error addIdefics3ImageTokens(MLIRContext &context, Idefics3Spec &spec,
                                   llvm::StringRef directory,
                                   llvm::StringRef checkpoint,
                                   LoadedModel &model);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FAMILIES_IDEFICS3_H
