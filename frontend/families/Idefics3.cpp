//===- Idefics3.cpp - Idefics3's config, tensors and image tokens --------===//
//
// See Idefics3.h. From transformers 4.46's configuration_idefics3.py,
// modeling_idefics3.py, image_processing_idefics3.py and
// processing_idefics3.py (4.50's SmolVLM, `smolvlm`, is the same model,
// config and prompt under new names; its image processor is Idefics3's as
// 4.50 left it: no 1820 px cap on the longest edge, an unsplit image
// squashed to one tile, both of which tfmc does for either):
//   - the vision tower is Idefics2's (4.40), SigLIP's blocks: on a whole
//     tile its bucketed position ids are the patches' indices;
//   - Idefics3Connector: pixel_shuffle(x, scale_factor), each square of
//     scale_factor x scale_factor patches one row (their states side by
//     side, the square's rows in order), then an unbiased linear;
//   - the tiles' rows replace the <image> placeholders in order, the tiles
//     row by row, the whole image last;
//   - the processor writes each <image> of the prompt as the tiles'
//     <fake_token_around_image><row_r_col_c> and placeholders, "\n" after
//     each row of tiles, "\n<fake_token_around_image><global-img>", the
//     whole image's placeholders and <fake_token_around_image>: the
//     runtime does (tfm_image_prompt_ids), knowing the grid of tiles.
//
//===----------------------------------------------------------------------===//

#include "frontend/families/Idefics3.h"
#include "frontend/families/Llava.h"
#include "frontend/formats/ErrorMessages.h"
#include "frontend/formats/ImagePreprocessor.h"
#include "frontend/formats/JsonFile.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// Idefics3VisionConfig's defaults (published configs may leave fields
/// out).
llvm::json::Object idefics3VisionDefaults() {
  return llvm::json::Object{
      {"hidden_size", 1152},     {"intermediate_size", 3072},
      {"num_hidden_layers", 12}, {"num_attention_heads", 16},
      {"num_channels", 3},       {"image_size", 224},
      {"patch_size", 32},        {"hidden_act", "gelu_pytorch_tanh"},
      {"layer_norm_eps", 1e-6}};
}

/// The spellings Idefics3Processor writes around the tiles' rows.
constexpr llvm::StringLiteral kTileMarker = "<fake_token_around_image>";
constexpr llvm::StringLiteral kWholeImageMarker = "<global-img>";

/// Token `spelling`'s id in the text model's tokenizer; `source` names
/// the model in messages.
llvm::Expected<int64_t> findTileToken(const LoadedModel &model,
                                      llvm::StringRef source,
                                      llvm::StringRef spelling) {
  if (!model.tokenizer)
    return makeError(source +
                     ": Idefics3's images need its tokenizer, whose tokens "
                     "the processor writes around an image's tiles");
  if (std::optional<int64_t> id = model.tokenizer->idOf(spelling))
    return *id;
  return makeError(model.tokenizerPath + ": the tokenizer has no '" + spelling +
                   "' token, which Idefics3's processor writes around an "
                   "image's tiles");
}

/// processor_config.json's image_seq_len (the placeholders the processor
/// writes a tile) must be the connector's rows.
llvm::Error checkSequenceLength(llvm::StringRef directory,
                                const ImageTokensSpec &image) {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, "processor_config.json");
  if (!llvm::sys::fs::exists(path))
    return llvm::Error::success();
  llvm::Expected<llvm::json::Object> file = readJsonObjectFile(path);
  if (!file)
    return file.takeError();
  std::optional<int64_t> length = file->getInteger("image_seq_len");
  if (length && *length != image.rows())
    return makeError(path + ": image_seq_len " + llvm::Twine(*length) +
                     " differs from the " + llvm::Twine(image.rows()) +
                     " rows config.json's tile makes ((image_size / "
                     "patch_size)^2 / scale_factor^2)");
  return llvm::Error::success();
}

} // namespace

bool mlir::tfm::isIdefics3Family(llvm::StringRef modelType) {
  return modelType == "idefics3" || modelType == "smolvlm";
}

std::string mlir::tfm::supportedIdefics3Families() {
  return "idefics3, smolvlm";
}

void mlir::tfm::readIdefics3Config(ConfigReader &config, Idefics3Spec &spec) {
  if (!readTextConfigOverDefaults(config, "Idefics3", spec.textModelType,
                                  spec.textConfig))
    return;
  // Idefics3Config's text model: LlamaConfig's, but rms_norm_eps 1e-5; the
  // model ties its head as the outer config says.
  const llvm::json::Object *given = config.nested("text_config");
  for (llvm::StringRef key : {"rms_norm_eps", "tie_word_embeddings"})
    if (!given || !given->get(key))
      spec.textConfig[key] =
          key == "rms_norm_eps" ? llvm::json::Value(1e-5)
                                : llvm::json::Value(config.boolean(key, false));

  // vision_config: Idefics3VisionConfig, SigLIP's tower, whatever its
  // model_type says (Idefics3Config reads the fields only): idefics3_vision,
  // idefics3 in the first releases, siglip_vision_model in SmolVLM's,
  // smolvlm_vision in SmolVLM2's.
  ImageTokensSpec &image = spec.image;
  const llvm::json::Object *vision = config.nested("vision_config");
  llvm::StringRef visionType = "idefics3_vision";
  if (std::optional<llvm::StringRef> given =
          vision ? vision->getString("model_type") : std::nullopt)
    if (llvm::is_contained(
            {"idefics3", "siglip_vision_model", "smolvlm_vision"}, *given))
      visionType = *given;
  llvm::json::Object defaults = idefics3VisionDefaults();
  if (!readVisionTowerConfig(config, "Idefics3", visionType, image, &defaults))
    return;
  image.layers = image.tower.numLayers;
  int64_t factor = config.integer("scale_factor", 2);
  if (factor <= 0 || image.side() % factor) {
    config.fail("scale_factor " + llvm::Twine(factor) +
                " does not divide the vision tower's " +
                llvm::Twine(image.side()) + " x " + llvm::Twine(image.side()) +
                " patches (image_size / patch_size)");
    return;
  }
  image.pixelShuffle = factor;
  spec.imageToken = config.integer("image_token_id", 128257);
}

void mlir::tfm::renameIdefics3Weights(WeightStore &store) {
  static const std::pair<llvm::StringLiteral, llvm::StringLiteral> kRenames[] =
      {{"model.text_model.", "model."},
       {"model.vision_model.", "vision_tower.vision_model."},
       {"model.connector.", "multi_modal_projector."}};
  renamePrefixes(store, kRenames);
}

llvm::Error mlir::tfm::addIdefics3Image(MLIRContext &context,
                                        Idefics3Spec &spec,
                                        llvm::StringRef source,
                                        ImagePreprocessingAttr preprocessing,
                                        LoadedModel &model) {
  spec.image.textHidden = model.hiddenSize;
  llvm::Expected<int64_t> around = findTileToken(model, source, kTileMarker);
  if (!around)
    return around.takeError();
  llvm::Expected<int64_t> whole =
      findTileToken(model, source, kWholeImageMarker);
  if (!whole)
    return whole.takeError();
  if (llvm::Error err = addImageTokens(context, spec.image, spec.imageToken,
                                       source, preprocessing, model))
    return err;
  (*model.module)
      ->setAttr(kImageTileTokensAttrName,
                DenseI64ArrayAttr::get(&context, {*around, *whole}));
  return llvm::Error::success();
}

llvm::Error mlir::tfm::addIdefics3ImageTokens(MLIRContext &context,
                                              Idefics3Spec &spec,
                                              llvm::StringRef directory,
                                              llvm::StringRef checkpoint,
                                              LoadedModel &model) {
  if (llvm::Error err = checkTokenInVocabulary(directory, "image_token_id",
                                               spec.imageToken, model))
    return err;
  if (llvm::Error err = checkSequenceLength(directory, spec.image))
    return err;
  llvm::Expected<ImagePreprocessingAttr> preprocessing =
      readIdefics3Preprocessing(context, directory, spec.image.tower.imageSize);
  if (!preprocessing)
    return preprocessing.takeError();
  return addIdefics3Image(context, spec, checkpoint, *preprocessing, model);
}
