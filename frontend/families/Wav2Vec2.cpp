//===- Wav2Vec2.cpp - Wav2Vec2 and HuBERT configs -----------------------===//
//
// transformers' Wav2Vec2Model / HubertModel and their CTC heads from Hugging
// Face folders: the config as a SpeechSpec (SpeechBuilder.cpp makes the
// IR), the feature extractor's rate and normalization, and a CTC head's
// labels and decoding from the tokenizer files.
//
//===----------------------------------------------------------------------===//

#include "frontend/families/Wav2Vec2.h"
#include "frontend/builders/SpeechBuilder.h"
#include "frontend/families/FamilyTable.h"
#include "frontend/formats/CheckedAttributes.h"
#include "frontend/formats/ErrorMessages.h"
#include "frontend/formats/JsonFile.h"
#include "frontend/formats/Safetensors.h"

#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// A CTC head's labels (its vocab.json, by id) and decoding, from the
/// tokenizer files beside the model.
llvm::Error readCtcVocabulary(MLIRContext &context, llvm::StringRef directory,
                              int64_t vocabSize, int64_t padTokenId,
                              const SpeechSpec &spec, int64_t samplingRate,
                              LoadedModel &model) {
  llvm::SmallString<256> vocabPath(directory);
  llvm::sys::path::append(vocabPath, "vocab.json");
  if (!llvm::sys::fs::exists(vocabPath))
    return makeError(vocabPath + ": missing: a CTC head's labels are spelled "
                                 "by its tokenizer's vocabulary");
  llvm::Expected<llvm::json::Value> vocab = readJsonFile(vocabPath);
  if (!vocab)
    return vocab.takeError();
  const llvm::json::Object *entries = vocab->getAsObject();
  if (!entries)
    return makeError(vocabPath + ": expected an object of token: id");
  llvm::SmallString<256> configPath(directory);
  llvm::sys::path::append(configPath, "tokenizer_config.json");
  llvm::json::Object none;
  std::optional<llvm::json::Value> holder;
  llvm::Expected<const llvm::json::Object *> tokenizerConfig =
      readOptionalJsonObject(configPath, &none, holder);
  if (!tokenizerConfig)
    return tokenizerConfig.takeError();
  auto text = [&](llvm::StringRef key, llvm::StringRef fallback) {
    // Special tokens are strings, or AddedToken objects with "content".
    const llvm::json::Value *value = (*tokenizerConfig)->get(key);
    if (value && value->getAsObject())
      value = value->getAsObject()->get("content");
    if (value && value->getAsString())
      return value->getAsString()->str();
    return fallback.str();
  };
  std::string pad = text("pad_token", "<pad>"),
              delimiter = text("word_delimiter_token", "|"),
              unknown = text("unk_token", "<unk>");
  std::vector<std::string> labels(size_t(vocabSize), unknown);
  int64_t blank = -1, wordDelimiter = -1;
  for (const auto &[token, idValue] : *entries) {
    std::optional<int64_t> id = idValue.getAsInteger();
    if (idValue.getAsObject())
      return makeError(vocabPath + ": holds a vocabulary per language "
                                   "(target_lang); tfmc reads one "
                                   "vocabulary");
    if (!id || *id < 0 || *id >= vocabSize)
      return makeError(vocabPath + ": token '" + token.str() + "' has id " +
                       (id ? llvm::Twine(*id) : llvm::Twine("?")) +
                       ", outside the head's " + llvm::Twine(vocabSize) +
                       " labels (vocab_size)");
    labels[*id] = token.str();
    if (token.str() == pad)
      blank = *id;
    if (token.str() == delimiter)
      wordDelimiter = *id;
  }
  if (blank < 0)
    return makeError(vocabPath + ": the pad token '" + pad +
                     "', CTC's blank, is not in the vocabulary");
  if (blank != padTokenId)
    return makeError(directory + "/config.json: pad_token_id " +
                     llvm::Twine(padTokenId) + " is not the tokenizer's pad "
                     "token '" + pad + "' (id " + llvm::Twine(blank) + ")");
  bool cleanUp = (*tokenizerConfig)
                     ->getBoolean("clean_up_tokenization_spaces")
                     .value_or(true);
  bool lowercase =
      (*tokenizerConfig)->getBoolean("do_lower_case").value_or(false);
  llvm::Expected<WaveformAttr> waveform = getCheckedAttr<WaveformAttr>(
      vocabPath, &context, samplingRate, spec.receptiveField(),
      spec.frameSamples(), int32_t(blank), int32_t(wordDelimiter), cleanUp,
      lowercase);
  if (!waveform)
    return waveform.takeError();
  model.waveform = *waveform;
  model.labels = std::move(labels);
  return llvm::Error::success();
}

} // namespace

namespace {

/// A speech family: config.json's model_type, the name transformers'
/// classes start with (its heads are <name>ForCTC, <name>Model), and
/// whether the config may leave the feature projection's LayerNorm out
/// (HuBERT's feat_proj_layer_norm).
struct SpeechFamily {
  llvm::StringLiteral modelType;
  llvm::StringLiteral className;
  bool optionalProjectionNorm;
};

/// Every speech family, in the order messages list them.
const SpeechFamily kSpeechFamilies[] = {
    {"wav2vec2", "Wav2Vec2", false},
    {"hubert", "Hubert", true},
};

} // namespace

bool mlir::tfm::isSpeechFamily(llvm::StringRef modelType) {
  return findFamily(kSpeechFamilies, &SpeechFamily::modelType, modelType) !=
         nullptr;
}

std::string mlir::tfm::supportedSpeechFamilies() {
  return familyNames(kSpeechFamilies, &SpeechFamily::modelType);
}

llvm::Error mlir::tfm::loadSpeechModel(MLIRContext &context,
                                       llvm::StringRef directory,
                                       llvm::StringRef modelType,
                                       ConfigReader &config,
                                       LoadedModel &model) {
  // The waveform and CTC attributes are the tfm dialect's.
  context.loadDialect<TfmDialect>();
  std::string configPath = config.file();
  const SpeechFamily &row =
      *findFamily(kSpeechFamilies, &SpeechFamily::modelType, modelType);
  SpeechSpec spec;
  spec.family = modelType.str();
  spec.hiddenSize = config.integer("hidden_size", 768);
  spec.numLayers = config.integer("num_hidden_layers", 12);
  spec.numHeads = config.integer("num_attention_heads", 12);
  spec.intermediateSize = config.integer("intermediate_size", 3072);
  spec.normEpsilon = config.number("layer_norm_eps", 1e-5);
  spec.activation = config.activation("hidden_act", "gelu");
  spec.featureActivation = config.activation("feat_extract_activation", "gelu");
  size_t convolutions = size_t(config.integer("num_feat_extract_layers", 7));
  spec.convDim = config.positiveIntegers("conv_dim", convolutions,
                                          "num_feat_extract_layers");
  spec.convKernel = config.positiveIntegers("conv_kernel", convolutions,
                                          "num_feat_extract_layers");
  spec.convStride = config.positiveIntegers("conv_stride", convolutions,
                                          "num_feat_extract_layers");
  spec.convBias = config.boolean("conv_bias", false);
  std::string featureNorm = config.string("feat_extract_norm", "group");
  if (featureNorm == "layer")
    spec.featureNorm = SpeechSpec::FeatureNorm::Layer;
  else if (featureNorm != "group")
    config.fail("unsupported config value feat_extract_norm = '" +
                featureNorm + "' (supported: group, layer)");
  spec.stableLayerNorm = config.boolean("do_stable_layer_norm", false);
  spec.projectionNorm = !row.optionalProjectionNorm ||
                        config.boolean("feat_proj_layer_norm", true);
  spec.positionKernel = config.integer("num_conv_pos_embeddings", 128);
  spec.positionGroups = config.integer("num_conv_pos_embedding_groups", 16);
  config.refuseUnlessAbsent("add_adapter", "adapter layers after the encoder");
  config.refuseUnlessAbsent("adapter_attn_dim",
                            "per-language attention adapters (MMS)");
  config.refuseUnlessAbsent("conv_pos_batch_norm",
                            "a batch-normed positional convolution");
  if (llvm::Error err = config.takeError())
    return err;
  if (spec.hiddenSize <= 0 || spec.numLayers <= 0 || spec.numHeads <= 0 ||
      spec.intermediateSize <= 0 || spec.positionKernel <= 0 ||
      spec.positionGroups <= 0 || convolutions == 0)
    return makeError(configPath + ": sizes must be positive");
  if (spec.hiddenSize % spec.numHeads || spec.hiddenSize % spec.positionGroups)
    return makeError(configPath + ": hidden_size " +
                     llvm::Twine(spec.hiddenSize) +
                     " is not a multiple of num_attention_heads and "
                     "num_conv_pos_embedding_groups");

  // The head: the architecture names it; the checkpoint's prefix follows.
  std::vector<std::string> architectures = config.strings("architectures");
  std::string architecture = architectures.empty() ? "" : architectures.front();
  llvm::StringRef family = row.className;
  bool ctcHead = architecture == (family + "ForCTC").str();
  if (!ctcHead && !architecture.empty() &&
      architecture != (family + "Model").str() &&
      architecture != (family + "ForPreTraining").str())
    return makeError(configPath + ": the " + architecture + " head of " +
                     modelType + " is not supported yet (supported: " +
                     family + "ForCTC, " + family + "Model)");
  if (llvm::Error err = readSafetensorsCheckpoint(directory, model.weights))
    return err;
  std::string checkpoint = (directory + "/model.safetensors").str();
  std::string prefix = (modelType + ".").str();
  if (model.weights.contains(prefix + "feature_projection.projection.weight"))
    spec.prefix = prefix;
  if (ctcHead) {
    spec.vocabSize = config.integer("vocab_size", 32);
    if (spec.vocabSize <= 0)
      return makeError(configPath + ": vocab_size must be positive");
  }

  // The feature extractor: its rate and whether it normalizes.
  llvm::SmallString<256> preprocessorPath(directory);
  llvm::sys::path::append(preprocessorPath, "preprocessor_config.json");
  llvm::json::Object none;
  std::optional<llvm::json::Value> holder;
  llvm::Expected<const llvm::json::Object *> preprocessor =
      readOptionalJsonObject(preprocessorPath, &none, holder);
  if (!preprocessor)
    return preprocessor.takeError();
  int64_t samplingRate =
      (*preprocessor)->getInteger("sampling_rate").value_or(16000);
  spec.normalizeInput =
      (*preprocessor)->getBoolean("do_normalize").value_or(true);
  if (samplingRate <= 0 ||
      (*preprocessor)->getInteger("feature_size").value_or(1) != 1)
    return makeError(preprocessorPath +
                     ": expected a positive sampling_rate and feature_size 1 "
                     "(mono samples)");

  if (llvm::Error err = prepareSpeechWeights(spec, model.weights, checkpoint))
    return err;
  if (ctcHead) {
    if (llvm::Error err = readCtcVocabulary(
            context, directory, spec.vocabSize,
            config.integer("pad_token_id", 0), spec, samplingRate, model))
      return err;
  } else {
    llvm::Expected<WaveformAttr> waveform = getCheckedAttr<WaveformAttr>(
        configPath, &context, samplingRate, spec.receptiveField(),
        spec.frameSamples(), /*blank=*/-1, /*wordDelimiter=*/-1,
        /*cleanUp=*/false, /*lowercase=*/false);
    if (!waveform)
      return waveform.takeError();
    model.waveform = *waveform;
  }
  if (llvm::Error err = config.takeError())
    return err;

  // What the CTC head does not use: pre-training's quantizer and
  // projections, and the mask embedding of SpecAugment (training only).
  auto ignored = [&](llvm::StringRef n) {
    return n.starts_with("quantizer.") || n.starts_with("project_") ||
           n == spec.name("masked_spec_embed") ||
           n.ends_with("encoder.pos_conv_embed.conv.bias");
  };
  auto module =
      buildSpeechModel(context, spec, model.weights, checkpoint, ignored);
  if (!module)
    return module.takeError();
  model.module = std::move(*module);
  model.family = spec.family;
  model.addBos = false;
  model.vocabSize = spec.vocabSize;
  // The longest clip: two minutes (memory grows with it; split longer
  // audio).
  model.maxContext = samplingRate * 120;
  model.hiddenSize = spec.hiddenSize;
  model.numLayers = spec.numLayers;
  model.numHeads = model.numKVHeads = spec.numHeads;
  return llvm::Error::success();
}
