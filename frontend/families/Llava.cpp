//===- Llava.cpp - LLaVA's config, tensors and image tokens ---------------===//
//
// See Llava.h. From transformers 4.40's configuration_llava.py and
// modeling_llava.py: the image's tokens are
//     projector(vision_tower(pixels).hidden_states[vision_feature_layer])
// with the class token's row dropped under the "default" select strategy;
// the projector is linear_1, projector_hidden_act, linear_2 (biased). A
// prompt's image placeholder stands for as many positions as the image has
// rows (4.40 widens one placeholder; later processors write them all), the
// positions counting on through them.
//
// LLaVA-NeXT (llava_next, modeling_llava_next.py) runs the same tower and
// projector on each of an image's tiles (image_grid_pinpoints), and lays
// their rows out with its image_newline row; the runtime does both
// (tfm_image_tiles, tfm_image_tokens): @encode_image stays one tile's,
// and returns image_newline beside the rows.
//
//===----------------------------------------------------------------------===//

#include "frontend/families/Llava.h"
#include "frontend/families/Clip.h"
#include "frontend/families/FamilyTable.h"
#include "frontend/formats/ErrorMessages.h"
#include "frontend/formats/ImagePreprocessor.h"
#include "frontend/formats/JsonFile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// A text model LLaVA folders pair with, and its config class's defaults
/// for the fields tfmc reads (transformers 4.40's LlamaConfig,
/// MistralConfig, Qwen2Config): a config saved with a default leaves the
/// field out.
struct LlavaTextModel {
  llvm::StringLiteral modelType;
  llvm::json::Object (*defaults)();
};

llvm::json::Object llamaDefaults() {
  return llvm::json::Object{{"vocab_size", 32000},
                            {"hidden_size", 4096},
                            {"intermediate_size", 11008},
                            {"num_hidden_layers", 32},
                            {"num_attention_heads", 32},
                            {"hidden_act", "silu"},
                            {"max_position_embeddings", 2048},
                            {"rms_norm_eps", 1e-6},
                            {"bos_token_id", 1},
                            {"eos_token_id", 2},
                            {"tie_word_embeddings", false},
                            {"rope_theta", 10000.0}};
}

llvm::json::Object mistralDefaults() {
  llvm::json::Object fields = llamaDefaults();
  fields["intermediate_size"] = 14336;
  fields["num_key_value_heads"] = 8;
  fields["max_position_embeddings"] = 4096 * 32;
  fields["sliding_window"] = 4096;
  return fields;
}

llvm::json::Object qwen2Defaults() {
  llvm::json::Object fields = llamaDefaults();
  fields["vocab_size"] = 151936;
  fields["intermediate_size"] = 22016;
  fields["max_position_embeddings"] = 32768;
  fields.erase("bos_token_id");
  fields.erase("eos_token_id");
  return fields;
}

const LlavaTextModel kLlavaTextModels[] = {
    {"llama", llamaDefaults},
    {"mistral", mistralDefaults},
    {"qwen2", qwen2Defaults},
};

/// Every LLaVA family, in the order messages list them.
const llvm::StringLiteral kLlavaFamilies[] = {"llava", "llava_next"};

/// LLaVA-NeXT's image_grid_pinpoints: [[height, width], ...], each a
/// multiple of the vision tower's image size (the tiles' grid is the
/// pinpoint over it, as get_anyres_image_grid_shape divides).
void readGridPinpoints(ConfigReader &config, int64_t tileSize,
                       std::vector<int64_t> &pinpoints) {
  const llvm::json::Array *list = config.raw().getArray("image_grid_pinpoints");
  if (!list || list->empty()) {
    config.fail("image_grid_pinpoints must be a list of [height, width] "
                "pairs (LLaVA-NeXT's tile sizes)");
    return;
  }
  for (const llvm::json::Value &pair : *list) {
    const llvm::json::Array *sizes = pair.getAsArray();
    std::optional<int64_t> height, width;
    if (sizes && sizes->size() == 2) {
      height = (*sizes)[0].getAsInteger();
      width = (*sizes)[1].getAsInteger();
    }
    if (!height || !width || *height <= 0 || *width <= 0 ||
        *height % tileSize || *width % tileSize) {
      std::string text;
      llvm::raw_string_ostream(text) << pair;
      config.fail("image_grid_pinpoints: " + text +
                  " is not a [height, width] pair of multiples of the "
                  "vision tower's image_size " +
                  llvm::Twine(tileSize));
      return;
    }
    pinpoints.push_back(*height);
    pinpoints.push_back(*width);
  }
}

/// LLaVA-NeXT's preprocessing: the processor's steps for each tile, the
/// config's pinpoints (which its processor's, read as the config's are,
/// must equal: the model lays out the tiles the processor cuts).
llvm::Expected<ImagePreprocessingAttr>
tileImages(MLIRContext &context, llvm::StringRef directory,
           ImagePreprocessingAttr preprocessing, int64_t tileSize,
           llvm::ArrayRef<int64_t> pinpoints) {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, "preprocessor_config.json");
  if (!preprocessing)
    return makeError(path + ": not found; LLaVA-NeXT's images are tiled "
                            "as its processor says");
  llvm::Expected<llvm::json::Object> file = readJsonObjectFile(path);
  if (!file)
    return file.takeError();
  if (file->get("image_grid_pinpoints")) {
    ConfigReader processor(*file, path.str().str());
    std::vector<int64_t> given;
    readGridPinpoints(processor, tileSize, given);
    if (llvm::Error err = processor.takeError())
      return std::move(err);
    if (llvm::ArrayRef<int64_t>(given) != pinpoints)
      return makeError(path + ": image_grid_pinpoints differ from "
                              "config.json's, by which the model lays out "
                              "the tiles");
  }
  return withGridPinpoints(preprocessing, path, pinpoints);
}

} // namespace

bool mlir::tfm::readVisionTowerConfig(ConfigReader &config,
                                      llvm::StringRef family,
                                      llvm::StringRef towerType,
                                      ImageTokensSpec &image,
                                      const llvm::json::Object *defaults) {
  const llvm::json::Object *vision = config.nested("vision_config");
  llvm::json::Object visionFields = defaults ? *defaults : llvm::json::Object();
  if (vision)
    for (const auto &[key, value] : *vision)
      visionFields[key] = value;
  ConfigReader visionReader(visionFields, "vision_config");
  std::string visionType = visionReader.string("model_type", towerType);
  if (visionType != towerType) {
    config.fail(llvm::Twine("vision_config: the ") + visionType +
                " vision tower is not supported with " + family +
                " (supported: " + towerType + ")");
    return false;
  }
  // SigLIP's tower, and Idefics3's, which is SigLIP's.
  image.tower.siglip = towerType != "clip_vision_model";
  readClipImageConfig(visionReader, image.tower);
  if (llvm::Error err = visionReader.takeError()) {
    config.fail(llvm::toString(std::move(err)));
    return false;
  }
  image.tower.prefix = (kLlavaVisionTower + image.tower.prefix).str();
  image.projector = kLlavaProjector.str();
  return true;
}

bool mlir::tfm::readTextConfigOverDefaults(ConfigReader &config,
                                           llvm::StringRef family,
                                           std::string &modelType,
                                           llvm::json::Object &textConfig) {
  const llvm::json::Object *text = config.nested("text_config");
  llvm::json::Object given = text ? *text : llvm::json::Object();
  ConfigReader textReader(given, "text_config");
  modelType = textReader.string("model_type", "llama");
  const LlavaTextModel *textModel =
      findFamily(kLlavaTextModels, &LlavaTextModel::modelType, modelType);
  if (!textModel) {
    config.fail(
        "text_config: the " + modelType + " text model is not supported with " +
        family + " (supported: " +
        familyNames(kLlavaTextModels, &LlavaTextModel::modelType) + ")");
    return false;
  }
  // A null field is the class's None (llava-v1.6-mistral's sliding_window:
  // none), not its default.
  textConfig = textModel->defaults();
  for (const auto &[key, value] : given)
    textConfig[key] = value;
  return true;
}

bool mlir::tfm::isLlavaFamily(llvm::StringRef modelType) {
  return llvm::is_contained(kLlavaFamilies, modelType);
}

std::string mlir::tfm::supportedLlavaFamilies() {
  return llvm::join(llvm::ArrayRef<llvm::StringLiteral>(kLlavaFamilies), ", ");
}

void mlir::tfm::readLlavaConfig(ConfigReader &config, LlavaSpec &spec) {
  // text_config: LlamaConfig's defaults where it has no model_type (as
  // LlavaConfig reads it), its given fields over its class's defaults.
  if (!readTextConfigOverDefaults(config, "LLaVA", spec.textModelType,
                                  spec.textConfig))
    return;

  // vision_config: a CLIP vision tower under vision_tower.vision_model..
  ImageTokensSpec &image = spec.image;
  if (!readVisionTowerConfig(config, "LLaVA", "clip_vision_model", image))
    return;
  image.activation = config.activation("projector_hidden_act", "gelu");
  if (!config.boolean("multimodal_projector_bias", true))
    config.fail("unsupported config value 'multimodal_projector_bias' = "
                "false (the projector's linear layers without biases)");

  // hidden_states[k] is the state after k blocks; a negative k counts back
  // from the last state, numLayers + 1 of them in all.
  const llvm::json::Value *layer = config.raw().get("vision_feature_layer");
  if (layer && layer->getAsArray()) {
    config.fail("unsupported config value 'vision_feature_layer' as a list "
                "(several layers' states side by side)");
    return;
  }
  int64_t chosen = config.integer("vision_feature_layer", -2);
  int64_t states = image.tower.numLayers + 1;
  image.layers = chosen < 0 ? states + chosen : chosen;
  if (image.layers < 0 || image.layers >= states)
    config.fail("vision_feature_layer " + llvm::Twine(chosen) +
                " is not a hidden state of the " +
                llvm::Twine(image.tower.numLayers) +
                "-layer vision tower (from " + llvm::Twine(-states) + " to " +
                llvm::Twine(states - 1) + ")");
  std::string strategy =
      config.string("vision_feature_select_strategy", "default");
  if (strategy != "default" && strategy != "full")
    config.fail("vision_feature_select_strategy '" + strategy +
                "' is neither 'default' (the class token dropped) nor "
                "'full'");
  image.keepClassToken = strategy == "full";
  if (config.string("model_type", "llava") == "llava_next") {
    // 4.40 views each tile's rows as its patch grid, which the class
    // token's row does not fit.
    if (image.keepClassToken)
      config.fail("vision_feature_select_strategy 'full' with LLaVA-NeXT's "
                  "tiles (their rows are a grid of patches: 'default')");
    readGridPinpoints(config, image.tower.imageSize, spec.gridPinpoints);
    image.newline = kLlavaImageNewline.str();
  }
  // transformers 4.40 names it image_token_index; later releases
  // image_token_id.
  spec.imageToken = config.integer("image_token_index",
                                   config.integer("image_token_id", 32000));
}

void mlir::tfm::renameLlavaWeights(WeightStore &store) {
  // Most specific first: 4.40's language_model.model. and later releases'
  // model.language_model. both become the text model's own model..
  static const std::pair<llvm::StringLiteral, llvm::StringLiteral> kRenames[] =
      {{"language_model.model.", "model."},
       {"language_model.lm_head.", "lm_head."},
       {"model.language_model.", "model."},
       {"model.vision_tower.", "vision_tower."},
       {"model.multi_modal_projector.", "multi_modal_projector."},
       {"model.image_newline", "image_newline"}};
  renamePrefixes(store, kRenames);
}

void mlir::tfm::renamePrefixes(
    WeightStore &store,
    llvm::ArrayRef<std::pair<llvm::StringLiteral, llvm::StringLiteral>>
        renames) {
  std::vector<std::string> names = store.names();
  for (const std::string &name : names)
    for (const auto &[from, to] : renames)
      if (llvm::StringRef(name).starts_with(from)) {
        store.add((to + llvm::StringRef(name).drop_front(from.size())).str(),
                  store.take(name));
        break;
      }
}

bool mlir::tfm::isLlavaImageWeight(llvm::StringRef name) {
  return name.starts_with(kLlavaVisionTower) ||
         name.starts_with(kLlavaProjector) || name == kLlavaImageNewline;
}

llvm::Error mlir::tfm::addImageTokens(MLIRContext &context,
                                      const ImageTokensSpec &image,
                                      int64_t imageToken,
                                      llvm::StringRef checkpoint,
                                      ImagePreprocessingAttr preprocessing,
                                      LoadedModel &model) {
  // The text model's tensors are the decoder's; the tower's blocks past
  // the chosen state and its post_layernorm are not read (Gemma 3 and
  // Idefics3 read SigLIP's last hidden state, after post_layernorm, not its
  // pooling head).
  const std::string &tower = image.tower.prefix;
  auto ignored = [&](llvm::StringRef name) {
    if (!isLlavaImageWeight(name))
      return true;
    if (name.starts_with(tower +
                         (image.tower.siglip ? "head." : "post_layernorm.")))
      return true;
    llvm::StringRef rest = name;
    int64_t index = 0;
    return rest.consume_front(tower + "encoder.layers.") &&
           !rest.consumeInteger(10, index) && index >= image.layers;
  };
  llvm::Expected<OwningOpRef<ModuleOp>> imageModule =
      buildImageTokens(context, image, model.weights, checkpoint, ignored);
  if (!imageModule)
    return imageModule.takeError();
  // One module: the image side's weights and @encode_image join the text
  // model's.
  Block *body = model.module->getBody();
  for (Operation &op : llvm::make_early_inc_range(
           imageModule->get().getBody()->getOperations()))
    op.moveBefore(body, body->end());
  (*model.module)
      ->setAttr(kImageTokenAttrName,
                IntegerAttr::get(IntegerType::get(&context, 64), imageToken));
  model.imagePreprocessing = preprocessing;
  return llvm::Error::success();
}

llvm::Error mlir::tfm::checkTokenInVocabulary(llvm::StringRef directory,
                                              llvm::StringRef field, int64_t id,
                                              const LoadedModel &model) {
  if (id >= 0 && id < model.vocabSize)
    return llvm::Error::success();
  return makeError(directory + "/config.json: " + field + " " +
                   llvm::Twine(id) +
                   " is outside the text model's vocabulary [0, " +
                   llvm::Twine(model.vocabSize) + ")");
}

llvm::Error mlir::tfm::addLlavaImageTokens(MLIRContext &context,
                                           LlavaSpec &spec,
                                           llvm::StringRef directory,
                                           llvm::StringRef checkpoint,
                                           LoadedModel &model) {
  ImageTokensSpec &image = spec.image;
  image.textHidden = model.hiddenSize;
  if (llvm::Error err = checkTokenInVocabulary(directory, "image_token_index",
                                               spec.imageToken, model))
    return err;
  llvm::Expected<ImagePreprocessingAttr> preprocessing =
      readImagePreprocessing(context, directory, image.tower.imageSize,
                             /*sizeIsShortestEdge=*/true);
  if (!preprocessing)
    return preprocessing.takeError();
  if (!spec.gridPinpoints.empty()) {
    llvm::Expected<ImagePreprocessingAttr> tiled =
        tileImages(context, directory, *preprocessing, image.tower.imageSize,
                   spec.gridPinpoints);
    if (!tiled)
      return tiled.takeError();
    preprocessing = *tiled;
  }
  return addImageTokens(context, image, spec.imageToken, checkpoint,
                        *preprocessing, model);
}
