//===- Clip.cpp - CLIP's configs ----------------------------------------===//
//
// transformers' CLIPModel, CLIPTextModel(WithProjection) and
// CLIPVisionModel(WithProjection) from Hugging Face folders: the towers'
// configs (nested in CLIPConfig, with CLIPTextConfig's and
// CLIPVisionConfig's defaults) as a ClipSpec (ClipBuilder.cpp makes the
// IR), the tokenizer and image preprocessing, and SDXL's two text towers.
//
//===----------------------------------------------------------------------===//

#include "frontend/families/Clip.h"
#include "frontend/builders/ClipBuilder.h"
#include "frontend/families/FamilyTable.h"
#include "frontend/formats/ErrorMessages.h"
#include "frontend/formats/ImagePreprocessor.h"
#include "frontend/tokenizers/Tokenizer.h"

#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// A tower's defaults, as CLIPTextConfig and CLIPVisionConfig have them:
/// transformers writes only the fields that differ (a CLIPModel saved with
/// the defaults says no more than "model_type" in its tower configs).
/// SigLIP's (SiglipTextConfig, SiglipVisionConfig) differ.
struct TowerDefaults {
  int64_t hiddenSize, numLayers, numHeads, intermediateSize;
  double normEpsilon;
  const char *activation;
};
constexpr TowerDefaults kTextDefaults = {512, 12, 8, 2048, 1e-5, "quick_gelu"};
constexpr TowerDefaults kImageDefaults = {768,  12,   12,
                                          3072, 1e-5, "quick_gelu"};
constexpr TowerDefaults kSiglipDefaults = {768,  12,   12,
                                           3072, 1e-6, "gelu_pytorch_tanh"};

/// The transformer sizes of a tower's config (CLIPTextConfig,
/// CLIPVisionConfig), checked.
void readTower(ConfigReader &config, const TowerDefaults &defaults,
               ClipTowerSpec &tower) {
  tower.hiddenSize = config.integer("hidden_size", defaults.hiddenSize);
  tower.numLayers = config.integer("num_hidden_layers", defaults.numLayers);
  tower.numHeads = config.integer("num_attention_heads", defaults.numHeads);
  tower.intermediateSize =
      config.integer("intermediate_size", defaults.intermediateSize);
  tower.normEpsilon = config.number("layer_norm_eps", defaults.normEpsilon);
  tower.activation = config.activation("hidden_act", defaults.activation);
  if (tower.hiddenSize <= 0 || tower.numLayers <= 0 || tower.numHeads <= 0 ||
      tower.intermediateSize <= 0)
    config.fail("hidden_size, num_hidden_layers, num_attention_heads and "
                "intermediate_size must be positive");
  else if (tower.hiddenSize % tower.numHeads)
    config.fail("hidden_size " + llvm::Twine(tower.hiddenSize) +
                " is not a multiple of num_attention_heads " +
                llvm::Twine(tower.numHeads));
}

void readText(ConfigReader &config, ClipTextSpec &text) {
  text.prefix = "text_model.";
  readTower(config, text.siglip ? kSiglipDefaults : kTextDefaults, text);
  text.vocabSize = config.integer("vocab_size", text.siglip ? 32000 : 49408);
  text.maxPositions =
      config.integer("max_position_embeddings", text.siglip ? 64 : 77);
  if (text.vocabSize <= 0 || text.maxPositions <= 0)
    config.fail("vocab_size and max_position_embeddings must be positive");
  // SigLIP pools the last row.
  if (text.siglip)
    return;
  // transformers 4.40 pools at the largest id where eos_token_id is 2 (the
  // first checkpoints' configs), else at eos_token_id's first position.
  int64_t eos = config.integer("eos_token_id", 49407);
  if (eos != 2)
    text.eosTokenId = eos;
  if (eos < 0 || eos >= text.vocabSize)
    config.fail("eos_token_id " + llvm::Twine(eos) +
                " is outside the vocabulary [0, " +
                llvm::Twine(text.vocabSize) + ")");
}

void readImage(ConfigReader &config, ClipImageSpec &image) {
  image.prefix = "vision_model.";
  readTower(config, image.siglip ? kSiglipDefaults : kImageDefaults, image);
  image.imageSize = config.integer("image_size", 224);
  image.patchSize = config.integer("patch_size", image.siglip ? 16 : 32);
  image.channels = config.integer("num_channels", 3);
  if (image.imageSize <= 0 || image.patchSize <= 0 || image.channels <= 0)
    config.fail("image_size, patch_size and num_channels must be positive");
  else if (image.imageSize % image.patchSize)
    config.fail("patch_size " + llvm::Twine(image.patchSize) +
                " does not divide image_size " + llvm::Twine(image.imageSize));
}

/// A nested tower config (CLIPConfig's text_config, vision_config): read
/// with its own reader, whose errors name the field. The first published
/// configs also carry text_config_dict and vision_config_dict, whose
/// fields win, as CLIPConfig reads them; without either, the defaults.
template <typename Spec>
void readNested(ConfigReader &config, llvm::StringRef key, Spec &spec,
                void (*read)(ConfigReader &, Spec &)) {
  llvm::json::Object merged;
  for (std::string field : {key.str(), key.str() + "_dict"})
    if (const llvm::json::Object *nested = config.nested(field))
      for (const auto &entry : *nested)
        merged[entry.first] = entry.second;
  // Its errors read "<config.json>: text_config: ...".
  ConfigReader reader(merged, key.str());
  read(reader, spec);
  if (llvm::Error err = reader.takeError())
    config.fail(llvm::toString(std::move(err)));
}

} // namespace

void mlir::tfm::readClipImageConfig(ConfigReader &config,
                                    ClipImageSpec &image) {
  readImage(config, image);
}

namespace {

/// A CLIP family: config.json's model_type, its towers, its base model's
/// architecture and, for a single tower, the architecture that adds the
/// tower's projection (CLIPModel always has both).
struct ClipFamily {
  llvm::StringLiteral modelType;
  bool text, image;
  llvm::StringLiteral model, withProjection;
  bool siglip = false;
};

/// Every CLIP family, in the order messages list them; SigLIP's towers
/// are CLIP's with the differences ClipTowerSpec::siglip names.
const ClipFamily kClipFamilies[] = {
    {"clip", true, true, "CLIPModel", ""},
    {"clip_text_model", true, false, "CLIPTextModel",
     "CLIPTextModelWithProjection"},
    {"clip_vision_model", false, true, "CLIPVisionModel",
     "CLIPVisionModelWithProjection"},
    {"siglip", true, true, "SiglipModel", "", true},
    {"siglip_vision_model", false, true, "SiglipVisionModel", "", true},
};

/// nn.MultiheadAttention's packed in_proj of SigLIP's pooling head as the
/// q_proj, k_proj and v_proj weights and biases the builder reads.
llvm::Error splitPoolingProjections(const ClipImageSpec &image,
                                    WeightStore &store,
                                    llvm::StringRef checkpoint) {
  std::string at = image.prefix + "head.attention.";
  int64_t d = image.hiddenSize;
  const char *parts[] = {"q_proj", "k_proj", "v_proj"};
  for (llvm::StringRef kind : {"weight", "bias"}) {
    std::string name = at + "in_proj_" + kind.str();
    std::vector<int64_t> shape = kind == "weight"
                                     ? std::vector<int64_t>{3 * d, d}
                                     : std::vector<int64_t>{3 * d};
    if (std::optional<std::string> error = store.mismatch(
            checkpoint, name, shape, "the siglip vision config implies"))
      return makeError(*error);
    WeightTensor packed = store.take(name);
    for (int64_t p = 0; p < 3; ++p) {
      std::vector<int64_t> rows(static_cast<size_t>(d));
      for (int64_t i = 0; i < d; ++i)
        rows[size_t(i)] = p * d + i;
      std::vector<int64_t> part = shape;
      part[0] = d;
      store.add(at + parts[p] + "." + kind.str(),
                packed.selectRows(std::move(rows), part));
    }
  }
  return llvm::Error::success();
}

/// What the module's towers tell `model`: the text tower's sizes (the
/// image tower's without one), and the image tower's preprocessing
/// (`sizeIsShortestEdge`: a number as preprocessor_config.json's size is the
/// shortest edge, CLIP's processor, not a square).
llvm::Error recordTowers(MLIRContext &context, const ClipSpec &spec,
                         llvm::StringRef configPath, bool sizeIsShortestEdge,
                         LoadedModel &model) {
  const ClipTowerSpec &tower =
      spec.text ? static_cast<const ClipTowerSpec &>(*spec.text) : *spec.image;
  model.vocabSize = spec.text ? spec.text->vocabSize : 0;
  model.maxContext = spec.text ? spec.text->maxPositions : spec.image->tokens();
  model.hiddenSize = tower.hiddenSize;
  model.numLayers = tower.numLayers;
  model.numHeads = model.numKVHeads = tower.numHeads;
  if (!spec.image)
    return llvm::Error::success();
  llvm::Expected<ImagePreprocessingAttr> preprocessing =
      readImagePreprocessing(context, llvm::sys::path::parent_path(configPath),
                             spec.image->imageSize, sizeIsShortestEdge);
  if (!preprocessing)
    return preprocessing.takeError();
  model.imagePreprocessing = *preprocessing;
  return llvm::Error::success();
}

/// The checkpoint's scalar `name` (CLIPModel's and SiglipModel's
/// logit_scale, SiglipModel's logit_bias), checked finite.
llvm::Expected<double> readScalar(const WeightStore &weights,
                                  llvm::StringRef checkpoint,
                                  llvm::StringRef name, llvm::StringRef model) {
  const WeightTensor *scalar = weights.lookup(name);
  if (!scalar || scalar->numElements() != 1)
    return makeError(checkpoint + ": " + model + " needs its scalar '" + name +
                     "'");
  double value = scalar->toF32()[0];
  if (!std::isfinite(value))
    return makeError(checkpoint + ": '" + name + "' is not finite");
  return value;
}

/// The module's similarity scale, exp(logit_scale), checked positive and
/// finite.
llvm::Error recordLogitScale(MLIRContext &context, LoadedModel &model,
                             llvm::StringRef checkpoint,
                             llvm::StringRef modelClass) {
  llvm::Expected<double> logit =
      readScalar(model.weights, checkpoint, "logit_scale", modelClass);
  if (!logit)
    return logit.takeError();
  double value = std::exp(*logit);
  if (!std::isfinite(value) || value <= 0)
    return makeError(checkpoint + ": 'logit_scale' " +
                     llvm::formatv("{0}", *logit).str() +
                     " gives no positive, finite scale");
  (*model.module)
      ->setAttr(kLogitScaleAttrName,
                FloatAttr::get(Float64Type::get(&context), value));
  return llvm::Error::success();
}

/// SiglipModel's scores, sigmoid(exp(logit_scale) · cosine + logit_bias),
/// and its tokenizer beside the text tower: spiece.model read as
/// SiglipTokenizer does, texts padded to the context with its pad token
/// (the pipelines' padding="max_length", which the text tower's last-row
/// pooling was trained with).
llvm::Error recordSiglipText(MLIRContext &context, const ClipTextSpec &text,
                             llvm::StringRef checkpoint,
                             llvm::StringRef configPath, LoadedModel &model) {
  if (llvm::Error err =
          recordLogitScale(context, model, checkpoint, "SiglipModel"))
    return err;
  llvm::Expected<double> bias =
      readScalar(model.weights, checkpoint, "logit_bias", "SiglipModel");
  if (!bias)
    return bias.takeError();
  (*model.module)
      ->setAttr(kLogitBiasAttrName,
                FloatAttr::get(Float64Type::get(&context), *bias));
  llvm::StringRef directory = llvm::sys::path::parent_path(configPath);
  if (!hasT5SentencePieceFiles(directory))
    return llvm::Error::success();
  llvm::Expected<TokenizerVocab> vocab =
      readSiglipSentencePiece(directory, text.vocabSize);
  if (!vocab)
    return vocab.takeError();
  llvm::Expected<int32_t> pad = readPadToken(directory, *vocab, "</s>");
  if (!pad)
    return pad.takeError();
  (*model.module)
      ->setAttr(kTextPadTokenAttrName,
                IntegerAttr::get(IntegerType::get(&context, 64), *pad));
  model.tokenizer = std::move(*vocab);
  model.tokenizerPath = directory.str();
  return llvm::Error::success();
}

/// SiglipModel (both towers, the text's pooled row through its head; the
/// image's pooled by attention; recordSiglipText) or SiglipVisionModel.
llvm::Error loadSiglip(MLIRContext &context, const ClipFamily &family,
                       ConfigReader &config, llvm::StringRef checkpoint,
                       llvm::StringRef configPath, LoadedModel &model) {
  ClipSpec spec;
  spec.family = family.modelType.str();
  spec.image.emplace();
  spec.image->siglip = true;
  if (family.text) {
    spec.text.emplace();
    spec.text->siglip = true;
    readNested<ClipTextSpec>(config, "text_config", *spec.text, readText);
    readNested<ClipImageSpec>(config, "vision_config", *spec.image, readImage);
    spec.text->projection = "text_model.head.weight";
    spec.projectionDim = spec.text->hiddenSize;
  } else {
    readImage(config, *spec.image);
  }
  if (llvm::Error err = config.takeError())
    return err;
  if (llvm::Error err =
          splitPoolingProjections(*spec.image, model.weights, checkpoint))
    return err;
  auto ignored = [](llvm::StringRef n) {
    return n == "logit_scale" || n == "logit_bias" ||
           n.ends_with("embeddings.position_ids");
  };
  auto module = buildClip(context, spec, model.weights, checkpoint, ignored);
  if (!module)
    return module.takeError();
  model.module = std::move(*module);
  model.family = spec.family;
  model.addBos = false;
  if (spec.text)
    if (llvm::Error err = recordSiglipText(context, *spec.text, checkpoint,
                                           configPath, model))
      return err;
  return recordTowers(context, spec, configPath,
                      /*sizeIsShortestEdge=*/false, model);
}

} // namespace

bool mlir::tfm::isClipFamily(llvm::StringRef modelType) {
  return findFamily(kClipFamilies, &ClipFamily::modelType, modelType) !=
         nullptr;
}

std::string mlir::tfm::supportedClipFamilies() {
  return familyNames(kClipFamilies, &ClipFamily::modelType);
}

llvm::Error mlir::tfm::loadClip(MLIRContext &context, llvm::StringRef modelType,
                                ConfigReader &config,
                                ArrayRef<std::string> architectures,
                                llvm::StringRef checkpoint,
                                llvm::StringRef configPath,
                                LoadedModel &model) {
  ClipSpec spec;
  spec.family = modelType.str();
  std::string architecture = architectures.empty() ? "" : architectures.front();
  // The towers are the family's; the projections, the architecture's.
  const ClipFamily &family =
      *findFamily(kClipFamilies, &ClipFamily::modelType, modelType);
  bool text = family.text, image = family.image;
  if (family.siglip)
    return loadSiglip(context, family, config, checkpoint, configPath, model);
  bool addsProjection =
      !family.withProjection.empty() && architecture == family.withProjection;
  bool projections = (text && image) || addsProjection;
  if (!architecture.empty() && architecture != family.model &&
      !addsProjection) {
    std::string supported =
        family.withProjection.empty()
            ? family.model.str() + " is"
            : (family.model + ", " + family.withProjection + " are").str();
    return makeError(configPath + ": the " + architecture + " head of " +
                     modelType + " is not supported (" + supported + ")");
  }
  if (text && image) {
    spec.text.emplace();
    spec.image.emplace();
    readNested<ClipTextSpec>(config, "text_config", *spec.text, readText);
    readNested<ClipImageSpec>(config, "vision_config", *spec.image, readImage);
  } else if (text) {
    // A tower's own config, as CLIPTextModel saves it.
    spec.text.emplace();
    readText(config, *spec.text);
  } else {
    spec.image.emplace();
    readImage(config, *spec.image);
  }
  if (projections) {
    spec.projectionDim = config.integer("projection_dim", 512);
    if (spec.projectionDim <= 0)
      config.fail("projection_dim must be positive");
    if (spec.text)
      spec.text->projection = "text_projection.weight";
    if (spec.image)
      spec.image->projection = "visual_projection.weight";
  }
  if (llvm::Error err = config.takeError())
    return std::move(err);

  // CLIPModel's logit_scale (the temperature of its training loss) and the
  // position ids buffers some checkpoints carry are not outputs here.
  auto ignored = [](llvm::StringRef n) {
    return n == "logit_scale" || n.ends_with("embeddings.position_ids");
  };
  auto module = buildClip(context, spec, model.weights, checkpoint, ignored);
  if (!module)
    return module.takeError();
  model.module = std::move(*module);
  model.family = spec.family;
  // CLIPModel's similarity scale: exp of its logit_scale.
  if (text && image)
    if (llvm::Error err =
            recordLogitScale(context, model, checkpoint, "CLIPModel"))
      return err;
  model.addBos = false;
  // The tokenizer beside a text tower: CLIP's BPE, framed with its start
  // and end of text.
  llvm::StringRef directory = llvm::sys::path::parent_path(configPath);
  if (spec.text && hasByteLevelBpeFiles(directory)) {
    llvm::Expected<TokenizerVocab> vocab =
        readTokenizerAt(directory, spec.text->vocabSize);
    if (!vocab)
      return vocab.takeError();
    if (vocab->bpeSplit != TokenizerVocab::BpeSplit::Clip)
      return makeError(directory + ": CLIP's text tower needs CLIP's "
                                   "tokenizer (tokenizer_class "
                                   "CLIPTokenizer, or a tokenizer.json whose "
                                   "words end in \"</w>\")");
    model.tokenizer = std::move(*vocab);
    model.tokenizerPath = directory.str();
  }
  return recordTowers(context, spec, configPath,
                      /*sizeIsShortestEdge=*/true, model);
}

llvm::Error mlir::tfm::loadClipTextPair(MLIRContext &context,
                                        ConfigReader &first,
                                        ConfigReader &second,
                                        llvm::StringRef secondPrefix,
                                        llvm::StringRef checkpoint,
                                        LoadedModel &model) {
  ClipSpec spec;
  spec.family = "clip_text_model";
  spec.text.emplace();
  spec.text2.emplace();
  readText(first, *spec.text);
  readText(second, *spec.text2);
  spec.text2->prefix = (secondPrefix + spec.text2->prefix).str();
  spec.text2->projection = (secondPrefix + "text_projection.weight").str();
  spec.projectionDim = second.integer("projection_dim", 512);
  if (spec.projectionDim <= 0)
    second.fail("projection_dim must be positive");
  if (llvm::Error err = first.takeError())
    return std::move(err);
  if (llvm::Error err = second.takeError())
    return std::move(err);
  const ClipTextSpec &one = *spec.text, &two = *spec.text2;
  if (one.maxPositions != two.maxPositions || one.vocabSize != two.vocabSize)
    return makeError(second.file() + ": the second text encoder reads " +
                     llvm::Twine(two.maxPositions) + " positions of a " +
                     llvm::Twine(two.vocabSize) + "-token vocabulary, the "
                     "first " + llvm::Twine(one.maxPositions) + " of " +
                     llvm::Twine(one.vocabSize) + ": the pipeline tokenizes "
                     "a prompt once for both");
  if (one.numLayers < 2 || two.numLayers < 2)
    return makeError(first.file() + ": SDXL conditions on each text "
                     "encoder's penultimate layer; both need two or more");

  // The first tower's last block and final_layer_norm are past the states
  // the pipeline reads; the position ids buffers are not weights.
  std::string lastBlock =
      one.prefix + "encoder.layers." + std::to_string(one.numLayers - 1) + ".";
  std::string firstNorm = one.prefix + "final_layer_norm.";
  auto ignored = [&](llvm::StringRef n) {
    return n.starts_with(lastBlock) || n.starts_with(firstNorm) ||
           n.ends_with("embeddings.position_ids");
  };
  auto module = buildClip(context, spec, model.weights, checkpoint, ignored);
  if (!module)
    return module.takeError();
  model.module = std::move(*module);
  model.family = spec.family;
  model.addBos = false;
  model.vocabSize = one.vocabSize;
  model.maxContext = one.maxPositions;
  model.hiddenSize = one.hiddenSize + two.hiddenSize;
  model.numLayers = one.numLayers;
  model.numHeads = model.numKVHeads = one.numHeads;
  return llvm::Error::success();
}
