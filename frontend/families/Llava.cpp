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
//===----------------------------------------------------------------------===//

#include "frontend/families/Llava.h"
#include "frontend/families/Clip.h"
#include "frontend/families/FamilyTable.h"
#include "frontend/formats/ErrorMessages.h"
#include "frontend/formats/ImagePreprocessor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/StringExtras.h"

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
const llvm::StringLiteral kLlavaFamilies[] = {"llava"};

} // namespace

bool mlir::tfm::isLlavaFamily(llvm::StringRef modelType) {
  return llvm::is_contained(kLlavaFamilies, modelType);
}

std::string mlir::tfm::supportedLlavaFamilies() {
  return llvm::join(llvm::ArrayRef<llvm::StringLiteral>(kLlavaFamilies), ", ");
}

void mlir::tfm::readLlavaConfig(ConfigReader &config, LlavaSpec &spec) {
  // text_config: LlamaConfig's defaults where it has no model_type (as
  // LlavaConfig reads it), its given fields over its class's defaults.
  const llvm::json::Object *text = config.nested("text_config");
  llvm::json::Object given = text ? *text : llvm::json::Object();
  ConfigReader textReader(given, "text_config");
  spec.textModelType = textReader.string("model_type", "llama");
  const LlavaTextModel *textModel = findFamily(
      kLlavaTextModels, &LlavaTextModel::modelType, spec.textModelType);
  if (!textModel) {
    config.fail("text_config: the " + spec.textModelType +
                " text model is not supported with LLaVA (supported: " +
                familyNames(kLlavaTextModels, &LlavaTextModel::modelType) +
                ")");
    return;
  }
  spec.textConfig = textModel->defaults();
  for (const auto &[key, value] : given)
    if (value.kind() != llvm::json::Value::Null)
      spec.textConfig[key] = value;

  // vision_config: a CLIP vision tower under vision_tower.vision_model..
  const llvm::json::Object *vision = config.nested("vision_config");
  llvm::json::Object visionFields = vision ? *vision : llvm::json::Object();
  ConfigReader visionReader(visionFields, "vision_config");
  std::string visionType =
      visionReader.string("model_type", "clip_vision_model");
  if (visionType != "clip_vision_model") {
    config.fail("vision_config: the " + visionType +
                " vision tower is not supported with LLaVA (supported: "
                "clip_vision_model)");
    return;
  }
  ImageTokensSpec &image = spec.image;
  readClipImageConfig(visionReader, image.tower);
  if (llvm::Error err = visionReader.takeError())
    config.fail(llvm::toString(std::move(err)));
  image.tower.prefix = (kLlavaVisionTower + image.tower.prefix).str();
  image.projector = kLlavaProjector.str();
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
       {"model.multi_modal_projector.", "multi_modal_projector."}};
  std::vector<std::string> names = store.names();
  for (const std::string &name : names)
    for (const auto &[from, to] : kRenames)
      if (llvm::StringRef(name).starts_with(from)) {
        store.add((to + llvm::StringRef(name).drop_front(from.size())).str(),
                  store.take(name));
        break;
      }
}

bool mlir::tfm::isLlavaImageWeight(llvm::StringRef name) {
  return name.starts_with(kLlavaVisionTower) ||
         name.starts_with(kLlavaProjector);
}

llvm::Error mlir::tfm::addImageTokens(MLIRContext &context,
                                      const ImageTokensSpec &image,
                                      int64_t imageToken,
                                      llvm::StringRef checkpoint,
                                      ImagePreprocessingAttr preprocessing,
                                      LoadedModel &model) {
  // The text model's tensors are the decoder's; the tower's blocks past
  // the chosen state and its post_layernorm are not read.
  const std::string &tower = image.tower.prefix;
  auto ignored = [&](llvm::StringRef name) {
    if (!isLlavaImageWeight(name))
      return true;
    if (name.starts_with(tower + "post_layernorm."))
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

llvm::Error mlir::tfm::addLlavaImageTokens(MLIRContext &context,
                                           LlavaSpec &spec,
                                           llvm::StringRef directory,
                                           llvm::StringRef checkpoint,
                                           LoadedModel &model) {
  ImageTokensSpec &image = spec.image;
  image.textHidden = model.hiddenSize;
  if (spec.imageToken < 0 || spec.imageToken >= model.vocabSize)
    return makeError(directory + "/config.json: image_token_index " +
                     llvm::Twine(spec.imageToken) +
                     " is outside the text model's vocabulary [0, " +
                     llvm::Twine(model.vocabSize) + ")");
  llvm::Expected<ImagePreprocessingAttr> preprocessing =
      readImagePreprocessing(context, directory, image.tower.imageSize,
                             /*sizeIsShortestEdge=*/true);
  if (!preprocessing)
    return preprocessing.takeError();
  return addImageTokens(context, image, spec.imageToken, checkpoint,
                        *preprocessing, model);
}
