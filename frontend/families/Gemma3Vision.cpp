//===- Gemma3Vision.cpp - Gemma 3's config, tensors and image tokens -----===//
//
// See Gemma3Vision.h. From transformers 4.50's configuration_gemma3.py,
// modeling_gemma3.py and processing_gemma3.py:
//   - the image's tokens are Gemma3MultiModalProjector(SigLIP's
//     last_hidden_state): its 64 x 64 patches average-pooled to 16 x 16
//     (mm_tokens_per_image), Gemma's RMSNorm, then `x @ W`;
//   - they replace the <image_soft_token> rows unscaled (the text's
//     embeddings are scaled by sqrt(hidden) in their lookup, which
//     @prefill_embeddings replaces);
//   - the processor writes each <start_of_image> of the prompt as
//     "\n\n<start_of_image>", the image's tokens, "<end_of_image>\n\n"
//     before tokenizing, which the tokenizer's prompt replacement does here;
//   - an image's tokens attend to each other both ways (4.50 lets them see
//     every image's tokens; transformers #38295 and later, and this, only
//     their own image's), the text causally.
//
//===----------------------------------------------------------------------===//

#include "frontend/families/Gemma3Vision.h"
#include "frontend/families/Clip.h"
#include "frontend/families/Llava.h"
#include "frontend/formats/ErrorMessages.h"
#include "frontend/formats/ImagePreprocessor.h"
#include "frontend/formats/JsonFile.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// Gemma3TextConfig's defaults for the fields tfmc reads: published
/// configs give only the fields that differ (gemma-3-4b-it's text_config
/// holds five).
llvm::json::Object gemma3TextDefaults() {
  return llvm::json::Object{{"model_type", "gemma3_text"},
                            {"vocab_size", 262208},
                            {"hidden_size", 2304},
                            {"intermediate_size", 9216},
                            {"num_hidden_layers", 26},
                            {"num_attention_heads", 8},
                            {"num_key_value_heads", 4},
                            {"head_dim", 256},
                            {"hidden_activation", "gelu_pytorch_tanh"},
                            {"max_position_embeddings", 131072},
                            {"rms_norm_eps", 1e-6},
                            {"pad_token_id", 0},
                            {"eos_token_id", 1},
                            {"bos_token_id", 2},
                            {"tie_word_embeddings", true},
                            {"rope_theta", 1000000.0},
                            {"attention_bias", false},
                            {"query_pre_attn_scalar", 256},
                            {"sliding_window", 4096},
                            {"rope_local_base_freq", 10000.0},
                            {"sliding_window_pattern", 6}};
}

/// Where the pooled rows' projection lives, as transformers names it.
constexpr llvm::StringLiteral kProjectionWeight =
    "multi_modal_projector.mm_input_projection_weight";
constexpr llvm::StringLiteral kProjectorNorm =
    "multi_modal_projector.mm_soft_emb_norm.weight";

/// The spelling of token `id` in the text model's tokenizer.
llvm::Expected<std::string> tokenText(const LoadedModel &model, int64_t id,
                                      llvm::StringRef what) {
  const TokenizerVocab &vocab = *model.tokenizer;
  if (id < 0 || id >= int64_t(vocab.pieces.size()) || vocab.pieces[id].empty())
    return makeError(model.tokenizerPath + ": the tokenizer has no token " +
                     llvm::Twine(id) + " (config.json's " + what + ")");
  return vocab.pieces[id];
}

/// The processor's expansion of the prompt's <start_of_image>
/// (Gemma3Processor's full_image_sequence), made by the tokenizer before it
/// tokenizes.
llvm::Error expandImageMarker(const Gemma3VisionSpec &spec,
                              LoadedModel &model) {
  if (!model.tokenizer)
    return llvm::Error::success(); // prompts come as ids
  llvm::Expected<std::string> begin =
      tokenText(model, spec.beginToken, "boi_token_index");
  if (!begin)
    return begin.takeError();
  llvm::Expected<std::string> end =
      tokenText(model, spec.endToken, "eoi_token_index");
  if (!end)
    return end.takeError();
  llvm::Expected<std::string> image =
      tokenText(model, spec.imageToken, "image_token_index");
  if (!image)
    return image.takeError();
  std::string expanded = "\n\n" + *begin;
  for (int64_t i = 0; i < spec.image.rows(); ++i)
    expanded += *image;
  expanded += *end + "\n\n";
  model.tokenizer->promptReplacements.emplace_back(*begin, expanded);
  return llvm::Error::success();
}

/// Gemma3ImageProcessor's steps (a square resize, no crop); pan-and-scan
/// crops, which change the prompt by the image's shape, are refused, and
/// the processor's image_seq_length (how many placeholders it writes; in
/// both its files) must be the model's token count.
llvm::Expected<ImagePreprocessingAttr>
readGemma3Preprocessing(MLIRContext &context, llvm::StringRef directory,
                        const Gemma3VisionSpec &spec) {
  for (llvm::StringRef name :
       {"preprocessor_config.json", "processor_config.json"}) {
    llvm::SmallString<256> path(directory);
    llvm::sys::path::append(path, name);
    if (!llvm::sys::fs::exists(path))
      continue;
    llvm::Expected<llvm::json::Object> file = readJsonObjectFile(path);
    if (!file)
      return file.takeError();
    if (file->getBoolean("do_pan_and_scan").value_or(false))
      return makeError(path + ": do_pan_and_scan (crops of the image, each "
                              "its own tokens) is not supported");
    std::optional<int64_t> length = file->getInteger("image_seq_length");
    if (length && *length != spec.image.rows())
      return makeError(path + ": image_seq_length " + llvm::Twine(*length) +
                       " differs from config.json's mm_tokens_per_image " +
                       llvm::Twine(spec.image.rows()));
  }
  return readImagePreprocessing(context, directory, spec.image.tower.imageSize,
                                /*sizeIsShortestEdge=*/false);
}

} // namespace

bool mlir::tfm::isGemma3VisionFamily(llvm::StringRef modelType) {
  return modelType == "gemma3";
}

std::string mlir::tfm::supportedGemma3VisionFamilies() { return "gemma3"; }

void mlir::tfm::readGemma3VisionConfig(ConfigReader &config,
                                       Gemma3VisionSpec &spec) {
  const llvm::json::Object *text = config.nested("text_config");
  spec.textConfig = gemma3TextDefaults();
  if (text)
    for (const auto &[key, value] : *text)
      spec.textConfig[key] = value;
  std::string textType =
      ConfigReader(spec.textConfig, "text_config").string("model_type", "");
  if (textType != "gemma3_text")
    config.fail("text_config: the " + textType +
                " text model is not supported with Gemma 3 (supported: "
                "gemma3_text)");

  // vision_config: SiglipVisionConfig over its defaults, under
  // vision_tower.vision_model.; the pooling head is not used.
  ImageTokensSpec &image = spec.image;
  if (!readVisionTowerConfig(config, "Gemma 3", "siglip_vision_model", image))
    return;
  image.layers = image.tower.numLayers;
  image.projectorNormEpsilon = image.tower.normEpsilon;

  // The patch grid pooled to mm_tokens_per_image rows, a square whose side
  // divides the grid's (nn.AvgPool2d's kernel is their ratio).
  int64_t tokens = config.integer("mm_tokens_per_image", 256);
  auto side = int64_t(std::lround(std::sqrt(double(tokens))));
  int64_t grid = image.side();
  if (tokens <= 0 || side * side != tokens || grid % side) {
    config.fail("mm_tokens_per_image " + llvm::Twine(tokens) +
                " is not a square whose side divides the vision tower's " +
                llvm::Twine(grid) + " x " + llvm::Twine(grid) +
                " patches (image_size / patch_size)");
    return;
  }
  image.poolKernel = grid / side;
  // transformers names them *_index; attribute_map reads *_id too.
  auto token = [&](llvm::StringRef name, int64_t fallback) {
    return config.integer((name + "_index").str(),
                          config.integer((name + "_id").str(), fallback));
  };
  spec.beginToken = token("boi_token", 255999);
  spec.endToken = token("eoi_token", 256000);
  spec.imageToken = token("image_token", 262144);
}

llvm::Error mlir::tfm::addGemma3Image(MLIRContext &context,
                                      Gemma3VisionSpec &spec,
                                      llvm::StringRef source,
                                      ImagePreprocessingAttr preprocessing,
                                      LoadedModel &model) {
  ImageTokensSpec &image = spec.image;
  image.textHidden = model.hiddenSize;
  // Stored as nn.Parameter [vision, text], used as x @ W: read as a
  // linear layer's [text, vision].
  WeightStore &store = model.weights;
  int64_t vision = image.tower.hiddenSize;
  if (std::optional<std::string> problem =
          store.mismatch(source, kProjectionWeight, {vision, image.textHidden},
                         "the text model's width and the vision tower's imply"))
    return makeError(*problem);
  store.add(kProjectionWeight,
            store.take(kProjectionWeight).transposeRows(0, image.textHidden));
  if (llvm::Error err = expandImageMarker(spec, model))
    return err;
  if (llvm::Error err = addImageTokens(context, image, spec.imageToken, source,
                                       preprocessing, model))
    return err;
  (*model.module)
      ->setAttr(kImageRowsBidirectionalAttrName, UnitAttr::get(&context));
  return llvm::Error::success();
}

llvm::Error mlir::tfm::addGemma3ImageTokens(MLIRContext &context,
                                            Gemma3VisionSpec &spec,
                                            llvm::StringRef directory,
                                            llvm::StringRef checkpoint,
                                            LoadedModel &model) {
  for (auto [id, what] : {std::pair(spec.imageToken, "image_token_index"),
                          std::pair(spec.beginToken, "boi_token_index"),
                          std::pair(spec.endToken, "eoi_token_index")})
    if (llvm::Error err = checkTokenInVocabulary(directory, what, id, model))
      return err;
  // The norm multiplies by 1 + w (llama.cpp's mmproj files store 1 + w).
  WeightStore &store = model.weights;
  if (store.contains(kProjectorNorm))
    store.add(kProjectorNorm, store.take(kProjectorNorm).plus(1.0f));
  llvm::Expected<ImagePreprocessingAttr> preprocessing =
      readGemma3Preprocessing(context, directory, spec);
  if (!preprocessing)
    return preprocessing.takeError();
  return addGemma3Image(context, spec, checkpoint, *preprocessing, model);
}
