//===- Gemma3Vision.h - Gemma 3: images inside Gemma's text -----*- C++ -*-===//
//
// transformers' Gemma3ForConditionalGeneration from a Hugging Face folder
// (model_type gemma3, transformers 4.50): a SigLIP vision tower's last
// hidden state, average-pooled to mm_tokens_per_image rows, an RMSNorm and
// a projection into the text model, a gemma3_text decoder. The text model
// is compiled as any decoder of its family (frontend/HuggingFace.cpp reads
// it, named as LLaVA's are: Llava.h); this file reads the config and adds
// @encode_image, the placeholder's expansion the processor makes, and the
// attention among an image's rows, which goes both ways.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FAMILIES_GEMMA3VISION_H
#define TFM_FRONTEND_FAMILIES_GEMMA3VISION_H

#include "frontend/builders/ClipBuilder.h"
#include "frontend/families/LoadedModel.h"
#include "frontend/formats/ConfigReader.h"

#include "llvm/Support/JSON.h"

namespace mlir::tfm {

struct Gemma3VisionSpec {
  /// The text model's family, and text_config's fields over
  /// Gemma3TextConfig's defaults.
  std::string textModelType = "gemma3_text";
  llvm::json::Object textConfig;
  /// The image side; its textHidden is the text model's, known once that
  /// is read.
  ImageTokensSpec image;
  /// The image's rows' placeholder (image_token_index, <image_soft_token>),
  /// and the tokens the processor puts around them (boi_token_index,
  /// <start_of_image>, which is also what a prompt writes for an image;
  /// eoi_token_index, <end_of_image>).
  int64_t imageToken = 0, beginToken = 0, endToken = 0;
};

/// Whether config.json's model_type is Gemma 3's vision-language model.
bool isGemma3VisionFamily(llvm::StringRef modelType);
/// For messages.
std::string supportedGemma3VisionFamilies();
/// Reads a gemma3 config.json into `spec`; problems are recorded in
/// `config`.
void readGemma3VisionConfig(ConfigReader &config, Gemma3VisionSpec &spec);
/// Adds to `model` the image side of `spec` (its tensors in
/// `model.weights` under the folder's names, the projector norm's already
/// 1 + w; `source` names them in messages): @encode_image, the placeholder
/// (tfm.image_token), rows that attend both ways
/// (tfm.image_rows_bidirectional), the processor's expansion of the
/// prompt's <start_of_image> into the tokenizer, and `preprocessing`. The
/// step a folder and llama.cpp's mmproj file (Mmproj.h) share.
llvm::Error addGemma3Image(MLIRContext &context, Gemma3VisionSpec &spec,
                           llvm::StringRef source,
                           ImagePreprocessingAttr preprocessing,
                           LoadedModel &model);

/// Adds to `model`, the text model read from `directory` (its tensors
/// renamed by renameLlavaWeights): @encode_image, the placeholder
/// (tfm.image_token), rows that attend both ways
/// (tfm.image_rows_bidirectional), the processor's expansion of the
/// prompt's <start_of_image> into the tokenizer and its preprocessing.
llvm::Error addGemma3ImageTokens(MLIRContext &context, Gemma3VisionSpec &spec,
                                 llvm::StringRef directory,
                                 llvm::StringRef checkpoint,
                                 LoadedModel &model);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FAMILIES_GEMMA3VISION_H
