//===- HuggingFace.cpp - reader of Hugging Face model directories -------===//
//
// config.json + model.safetensors (or shards) + the tokenizer beside them.
// What each model_type means is DecoderFamilies.cpp's; this file reads the
// directory, the special tokens and the tokenizer.
//
//===----------------------------------------------------------------------===//

#include "frontend/ModelLoader.h"
#include "frontend/builders/DecoderBuilder.h"
#include "frontend/builders/EncoderBuilder.h"
#include "frontend/builders/Seq2SeqBuilder.h"
#include "frontend/families/Clip.h"
#include "frontend/families/DecoderFamilies.h"
#include "frontend/families/EncoderFamilies.h"
#include "frontend/families/Gemma3Vision.h"
#include "frontend/families/Idefics3.h"
#include "frontend/families/Llava.h"
#include "frontend/families/Seq2SeqFamilies.h"
#include "frontend/families/StableDiffusion.h"
#include "frontend/families/VisionTransformer.h"
#include "frontend/families/Wav2Vec2.h"
#include "frontend/formats/ConfigReader.h"
#include "frontend/formats/ErrorMessages.h"
#include "frontend/formats/JsonFile.h"
#include "frontend/formats/LoraAdapter.h"
#include "frontend/formats/Safetensors.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {


/// A classifier's class names by id: id2label's entries, or num_labels
/// (2 by default, as transformers) named LABEL_i.
llvm::Expected<std::vector<std::string>>
readClassLabels(ConfigReader &config, llvm::StringRef configPath) {
  int64_t count = config.integer("num_labels", 2);
  std::vector<std::string> names;
  if (const llvm::json::Object *id2label = config.nested("id2label")) {
    count = int64_t(id2label->size());
    // Keys are the ids "0".."n-1", values the names.
    names.assign(count, "");
    for (const auto &[key, value] : *id2label) {
      int64_t id = -1;
      std::optional<llvm::StringRef> name = value.getAsString();
      if (llvm::StringRef(key).getAsInteger(10, id) || id < 0 || id >= count ||
          !name)
        return makeError(configPath + ": id2label must map the ids 0.." +
                         llvm::Twine(count - 1) + " to names");
      names[id] = name->str();
    }
  }
  if (llvm::Error err = config.takeError())
    return std::move(err);
  if (count <= 0)
    return makeError(configPath + ": a classifier needs at least one label");
  for (int64_t i = int64_t(names.size()); i < count; ++i)
    names.push_back("LABEL_" + std::to_string(i));
  return names;
}

/// A model folder's config.json and model.safetensors paths, the latter
/// read into `model.weights`.
struct FolderPaths {
  std::string configPath, checkpoint;
};
llvm::Expected<FolderPaths> readFolderWeights(llvm::StringRef directory,
                                              LoadedModel &model) {
  if (llvm::Error err = readSafetensorsCheckpoint(directory, model.weights))
    return std::move(err);
  return FolderPaths{(directory + "/config.json").str(),
                     (directory + "/model.safetensors").str()};
}

/// A vision transformer (VisionTransformer.h): pixels in.
llvm::Expected<LoadedModel> loadVision(MLIRContext &context,
                                       llvm::StringRef directory,
                                       llvm::StringRef modelType,
                                       ConfigReader &config) {
  LoadedModel model;
  llvm::Expected<FolderPaths> paths = readFolderWeights(directory, model);
  if (!paths)
    return paths.takeError();
  const std::string &configPath = paths->configPath;
  std::vector<std::string> architectures = config.strings("architectures");
  llvm::Expected<std::vector<std::string>> labels =
      readClassLabels(config, configPath);
  if (!labels)
    return labels.takeError();
  if (llvm::Error err = loadVisionTransformer(
          context, modelType, config, architectures, std::move(*labels),
          paths->checkpoint, configPath, model))
    return std::move(err);
  return model;
}

/// CLIP (Clip.h): its text and image towers.
llvm::Expected<LoadedModel> loadClipModel(MLIRContext &context,
                                          llvm::StringRef directory,
                                          llvm::StringRef modelType,
                                          ConfigReader &config) {
  LoadedModel model;
  llvm::Expected<FolderPaths> paths = readFolderWeights(directory, model);
  if (!paths)
    return paths.takeError();
  if (llvm::Error err =
          loadClip(context, modelType, config, config.strings("architectures"),
                   paths->checkpoint, paths->configPath, model))
    return std::move(err);
  return model;
}

/// An encoder (EncoderFamilies.h): `@encode` (or its head's entry point)
/// over token ids and types, with the tokenizer beside it.
llvm::Expected<LoadedModel> loadEncoder(MLIRContext &context,
                                        llvm::StringRef directory,
                                        ConfigReader &config,
                                        EncoderSpec spec) {
  if (llvm::Error err = config.takeError())
    return std::move(err);
  std::string configPath = (directory + "/config.json").str();
  if (llvm::Error err = validateEncoderSpec(spec, configPath))
    return std::move(err);
  if (llvm::Error err = readSentenceTransformerModules(directory, spec))
    return std::move(err);
  LoadedModel model;
  model.family = spec.family;
  model.addBos = false;
  if (llvm::Error err = readSafetensorsCheckpoint(directory, model.weights))
    return std::move(err);
  // The head the config's architecture names; the base model otherwise.
  // A sentence embedder uses the encoder alone.
  std::vector<std::string> architectures = config.strings("architectures");
  EncoderHead head =
      spec.pooling ? EncoderHead::None : encoderHeadOf(architectures);
  llvm::Expected<std::vector<std::string>> labelNames =
      readClassLabels(config, configPath);
  if (!labelNames)
    return labelNames.takeError();
  int64_t labels = int64_t(labelNames->size());
  if (!resolveEncoderNames(spec, model.weights, head, labels))
    return makeError(configPath + ": the " + architectures.front() +
                     " head of " + spec.family + " is not supported yet");
  std::string checkpoint = (directory + "/model.safetensors").str();
  auto ignored = [&](llvm::StringRef name) {
    // Buffers transformers saves (position and token type ids); a task
    // model's unused pooler (a sentence embedder's, a masked LM's).
    return name.ends_with("embeddings.position_ids") ||
           name.ends_with("embeddings.token_type_ids") ||
           name.contains("pooler.dense.") ||
           // Copies of tied parameters, and BertForPreTraining's
           // next-sentence head, which fill_mask does not use.
           (spec.maskedLm && (name.ends_with("predictions.decoder.bias") ||
                              name.ends_with("lm_head.decoder.bias") ||
                              name.starts_with("cls.seq_relationship.")));
  };
  auto module = buildEncoder(context, spec, model.weights, checkpoint, ignored);
  if (!module)
    return module.takeError();
  model.module = std::move(*module);
  if (spec.classifier)
    model.labels = std::move(*labelNames);
  model.vocabSize = spec.vocabSize;
  model.maxContext = spec.maxTokens();
  model.hiddenSize = spec.hiddenSize;
  model.numLayers = spec.numLayers;
  model.numHeads = model.numKVHeads = spec.numHeads;
  // The tokenizer beside the model: WordPiece (BERT, DistilBERT, ELECTRA),
  // byte-level BPE (RoBERTa) or SentencePiece Unigram (XLM-R), framed for an
  // encoder.
  if (hasWordPieceFiles(directory) || hasByteLevelBpeFiles(directory) ||
      hasFairseqSentencePieceFiles(directory)) {
    llvm::Expected<TokenizerVocab> vocab =
        readTokenizerAt(directory, spec.vocabSize);
    if (!vocab)
      return vocab.takeError();
    if (vocab->framing.begin < 0)
      return makeError(directory + ": the tokenizer has no [CLS]/<s> and "
                                   "[SEP]/</s> tokens to frame the text with");
    model.tokenizer = std::move(*vocab);
    model.tokenizerPath = directory.str();
  }
  return model;
}

/// An encoder-decoder (Seq2SeqFamilies.h): `@forward(source, decoder ids)`
/// returning the decoder's logits.
llvm::Expected<LoadedModel> loadSeq2Seq(MLIRContext &context,
                                        llvm::StringRef directory,
                                        ConfigReader &config,
                                        Seq2SeqSpec spec) {
  if (llvm::Error err = config.takeError())
    return std::move(err);
  std::string configPath = (directory + "/config.json").str();
  if (llvm::Error err = validateSeq2SeqSpec(spec, configPath))
    return std::move(err);
  LoadedModel model;
  model.family = spec.family;
  model.addBos = false;
  model.bosToken = spec.decoderStartToken;
  model.eosToken = spec.eosToken;
  if (llvm::Error err = readSafetensorsCheckpoint(directory, model.weights))
    return std::move(err);
  std::string checkpoint = (directory + "/model.safetensors").str();
  spec.prefix = model.weights.contains("model.shared.weight") ||
                        model.weights.contains("model.decoder.embed_tokens.weight")
                    ? "model."
                    : "";
  // A tied T5 head scales its input by d_model^-0.5: folded into the
  // decoder's final norm scale, which feeds only the head.
  if (spec.t5Blocks && spec.tiedHead)
    if (const WeightTensor *scale =
            model.weights.lookup("decoder.final_layer_norm.weight")) {
      std::vector<float> values = scale->toF32();
      for (float &v : values)
        v = float(v * spec.headNormScale());
      model.weights.add(spec.headNormName(),
                        WeightTensor::fromValues(scale->shape(),
                                                 std::move(values),
                                                 scale->source()));
    }
  // Learned positions used from a row on (BART's 2): the rows they use.
  for (const char *side : {"encoder", "decoder"}) {
    std::string stored = spec.storedPositionTable(side);
    const WeightTensor *table = model.weights.lookup(stored);
    if (!spec.positionOffset || !table)
      continue;
    if (table->shape().size() != 2 ||
        table->rows() != spec.maxPositions + spec.positionOffset)
      return makeError(checkpoint + ": '" + stored + "' should have " +
                       llvm::Twine(spec.maxPositions + spec.positionOffset) +
                       " rows (max_position_embeddings + " +
                       llvm::Twine(spec.positionOffset) + ")");
    std::vector<int64_t> rows;
    for (int64_t r = spec.positionOffset; r < table->rows(); ++r)
      rows.push_back(r);
    model.weights.add(spec.positionTable(side),
                      table->selectRows(rows, {spec.maxPositions,
                                               table->cols()}));
  }
  auto ignored = [&](llvm::StringRef name) {
    // Copies of the shared table (tied), and position tables the model
    // reads otherwise: sinusoids tfm.sinusoidal_position computes (that
    // transformers keeps as parameters), or rows from an offset on.
    // A tied T5 head reads the shared table and the scaled final norm.
    return name.ends_with("embed_tokens.weight") ||
           ((spec.sinusoidalPositions || spec.positionOffset) &&
            name.ends_with("embed_positions.weight")) ||
           (spec.speech() && name == "proj_out.weight") ||
           (spec.tiedHead && (name == "lm_head.weight" ||
                              name == "decoder.final_layer_norm.weight"));
  };
  auto module = buildSeq2Seq(context, spec, model.weights, checkpoint, ignored);
  if (!module)
    return module.takeError();
  model.module = std::move(*module);
  auto generation =
      readGenerationDefaults(context, directory, config.fields(), spec);
  if (!generation)
    return generation.takeError();
  model.generation = *generation;
  if (spec.speech()) {
    auto audio = readAudioPreprocessing(context, directory, spec);
    if (!audio)
      return audio.takeError();
    model.audioPreprocessing = *audio;
  }
  // The tokenizer beside the model: T5's spiece.model, Marian's
  // source.spm + vocab.json, or BART's byte-level BPE.
  if (hasT5SentencePieceFiles(directory) ||
      hasMarianSentencePieceFiles(directory) ||
      hasByteLevelBpeFiles(directory)) {
    llvm::Expected<TokenizerVocab> vocab =
        readTokenizerAt(directory, spec.vocabSize);
    if (!vocab)
      return vocab.takeError();
    model.tokenizer = std::move(*vocab);
    model.tokenizerPath = directory.str();
  }
  model.vocabSize = spec.vocabSize;
  model.maxContext = spec.maxPositions;
  model.hiddenSize = spec.hiddenSize;
  model.numLayers = spec.decoderLayers;
  model.numHeads = model.numKVHeads = spec.decoderHeads;
  return model;
}

} // namespace

/// Whether the tokenizer beside a decoder puts BOS before a prompt, as
/// transformers' tokenizer does: tokenizer_config.json's add_bos_token
/// where it says; else a tokenizer.json's post-processor (Llama 3's,
/// Mistral's TemplateProcessing starts with BOS; Qwen2's, GPT-NeoX's
/// ByteLevel adds nothing); else SentencePiece tokenizers do (LlamaTokenizer)
/// and byte-level BPE ones do not (GPT2Tokenizer, Qwen2Tokenizer). Without
/// tokenizer files, the family's usual tokenizer decides (a --tokenizer
/// given later): GPT-2's adds none, LLaMA's SentencePiece does.
static llvm::Expected<bool> tokenizerAddsBos(llvm::StringRef directory,
                                             llvm::StringRef modelType) {
  auto inDirectory = [&](llvm::StringRef name) {
    llvm::SmallString<256> path(directory);
    llvm::sys::path::append(path, name);
    return path.str().str();
  };
  std::string configPath = inDirectory("tokenizer_config.json");
  if (llvm::sys::fs::exists(configPath)) {
    llvm::Expected<llvm::json::Value> config = readJsonFile(configPath);
    if (!config)
      return config.takeError();
    if (const llvm::json::Object *object = config->getAsObject())
      if (std::optional<bool> addBos = object->getBoolean("add_bos_token"))
        return *addBos;
  }
  std::string fastPath = inDirectory("tokenizer.json");
  if (llvm::sys::fs::exists(fastPath)) {
    llvm::Expected<std::shared_ptr<const llvm::json::Value>> fast =
        readSharedJsonFile(fastPath);
    if (!fast)
      return fast.takeError();
    const llvm::json::Object *object = (*fast)->getAsObject();
    const llvm::json::Object *post =
        object ? object->getObject("post_processor") : nullptr;
    if (!post || post->getString("type") !=
                     std::optional<llvm::StringRef>("TemplateProcessing"))
      return false;
    const llvm::json::Array *single = post->getArray("single");
    const llvm::json::Object *first =
        single && !single->empty() ? single->front().getAsObject() : nullptr;
    return first && first->getObject("SpecialToken");
  }
  if (llvm::sys::fs::exists(inDirectory("tokenizer.model")))
    return true;
  if (hasByteLevelBpeFiles(directory))
    return false;
  return decoderTokenizerAddsBos(modelType);
}

/// The ids a config field names (an integer, a list of them, or null):
/// transformers' eos_token_id may list several.
static std::vector<int64_t> tokenIds(const llvm::json::Object &fields,
                                     llvm::StringRef key) {
  std::vector<int64_t> ids;
  const llvm::json::Value *value = fields.get(key);
  if (!value)
    return ids;
  if (const llvm::json::Array *list = value->getAsArray()) {
    for (const llvm::json::Value &item : *list)
      if (std::optional<int64_t> id = item.getAsInteger())
        ids.push_back(*id);
  } else if (std::optional<int64_t> id = value->getAsInteger()) {
    ids.push_back(*id);
  }
  return ids;
}

/// Every eos_token_id of config.json (and its text_config) and of
/// generation_config.json, where transformers' generate stops (Llama 3
/// Instruct's list ends turns with <|eot_id|>, not its first,
/// <|end_of_text|>); describeModel drops eosToken itself and ids past the
/// vocabulary.
static llvm::Error readStopTokens(llvm::StringRef directory,
                                  ConfigReader &config, LoadedModel &model) {
  auto add = [&](const llvm::json::Object &fields) {
    for (int64_t id : tokenIds(fields, "eos_token_id"))
      if (!llvm::is_contained(model.stopTokens, id))
        model.stopTokens.push_back(id);
  };
  add(config.raw());
  if (const llvm::json::Object *text = config.raw().getObject("text_config"))
    add(*text);
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, "generation_config.json");
  std::optional<llvm::json::Value> file;
  llvm::Expected<const llvm::json::Object *> generation =
      readOptionalJsonObject(path, nullptr, file);
  if (!generation)
    return generation.takeError();
  if (*generation)
    add(**generation);
  return llvm::Error::success();
}

namespace {

/// A decoder folder: its family's spec, the tokens that start and stop,
/// its checkpoint and its tokenizer.
/// What an image-text folder changes in how its text model is read: its
/// tensors' names, and the other towers' tensors the decoder leaves.
struct TextModelWithin {
  void (*renameWeights)(WeightStore &store);
  bool (*isOtherTower)(llvm::StringRef name);
};

/// The decoder `spec` (of family `modelType`, read from `config`) in the
/// folder `directory`, with its tokenizer; `within`: an image-text
/// folder's text model.
llvm::Expected<LoadedModel>
loadDecoder(MLIRContext &context, llvm::StringRef directory,
            llvm::StringRef modelType, DecoderSpec spec, ConfigReader &config,
            llvm::ArrayRef<LoraAdapterSpec> adapters,
            const TextModelWithin *within = nullptr) {
  const std::string &configPath = config.file();
  LoadedModel model;
  model.family = modelType;
  model.bosToken = config.integer("bos_token_id", -1);
  model.eosToken = config.integer("eos_token_id", -1);
  // Image-text folders (Qwen3.5's) may name them in the text model's
  // config only.
  if (const llvm::json::Object *text = config.nested("text_config")) {
    ConfigReader textConfig(*text, "text_config");
    if (model.bosToken < 0)
      model.bosToken = textConfig.integer("bos_token_id", -1);
    if (model.eosToken < 0)
      model.eosToken = textConfig.integer("eos_token_id", -1);
    if (llvm::Error err = textConfig.takeError())
      config.fail(llvm::toString(std::move(err)));
  }
  if (llvm::Error err = readStopTokens(directory, config, model))
    return std::move(err);
  llvm::Expected<bool> addBos = tokenizerAddsBos(directory, modelType);
  if (!addBos)
    return addBos.takeError();
  model.addBos = *addBos;
  if (llvm::Error err = config.takeError())
    return std::move(err);
  if (llvm::Error err = validateDecoderSpec(spec, configPath))
    return std::move(err);

  if (llvm::Error err = readSafetensorsCheckpoint(directory, model.weights))
    return std::move(err);
  if (within)
    within->renameWeights(model.weights);
  bool tiedHeadSaved = spec.lmHead.empty();
  // Merged before the family's own views (fused projections, transposes)
  // see the tensors, under the checkpoint's names the adapter uses.
  for (const LoraAdapterSpec &adapter : adapters) {
    llvm::Expected<std::vector<std::string>> changed =
        mergeLoraAdapter(adapter, model.weights, model.notes);
    if (!changed)
      return changed.takeError();
    // A tied model reads its head from the embeddings, not lm_head.weight.
    if (tiedHeadSaved && llvm::is_contained(*changed, "lm_head.weight"))
      return makeError(adapter.directory +
                       ": the adapter replaces lm_head.weight, which this "
                       "model ties to its embeddings (tie_word_embeddings)");
  }
  std::string checkpoint = (directory + "/model.safetensors").str();
  if (llvm::Error err =
          prepareDecoderWeights(modelType, spec, model.weights, checkpoint))
    return std::move(err);
  auto ignored = [&](llvm::StringRef name) {
    // Buffers some checkpoints save: GPT-2's causal masks, LLaMA's rotary
    // frequencies, and a copy of a tied head.
    return name.ends_with(".attn.bias") ||
           name.ends_with(".attn.masked_bias") ||
           name.ends_with(".attention.bias") ||
           name.ends_with(".attention.masked_bias") ||
           name.ends_with(".rotary_emb.inv_freq") ||
           (tiedHeadSaved && name == "lm_head.weight") ||
           spec.isPredictionLayerTensor(name, "model.layers.") ||
           (within && within->isOtherTower(name)) ||
           llvm::any_of(spec.unreadTensorPrefixes,
                        [&](const std::string &prefix) {
                          return name.starts_with(prefix);
                        });
  };
  auto module = buildDecoder(context, spec, model.weights, checkpoint, ignored);
  if (!module)
    return module.takeError();
  model.module = std::move(*module);
  recordDecoderShape(model, spec);

  // The tokenizer beside the model, if any: SentencePiece's
  // tokenizer.model, else byte-level BPE files (GPT-2's).
  llvm::SmallString<256> tokenizer(directory);
  llvm::sys::path::append(tokenizer, "tokenizer.model");
  if (!llvm::sys::fs::exists(tokenizer))
    tokenizer = hasByteLevelBpeFiles(directory) ? directory : "";
  if (!tokenizer.empty()) {
    llvm::Expected<TokenizerVocab> vocab =
        readTokenizerAt(tokenizer, spec.vocabSize);
    if (!vocab)
      return vocab.takeError();
    model.tokenizer = std::move(*vocab);
    model.tokenizerPath = tokenizer.str().str();
  }
  return std::move(model);
}

llvm::Expected<std::optional<LoadedModel>>
loadDecoderFolder(MLIRContext &context, llvm::StringRef directory,
                  llvm::StringRef modelType, ConfigReader &config,
                  llvm::ArrayRef<LoraAdapterSpec> adapters) {
  DecoderSpec spec;
  if (!readDecoderFamily(modelType, config, spec))
    return std::nullopt;
  return loadDecoder(context, directory, modelType, std::move(spec), config,
                     adapters);
}

/// A vision-language folder's text model, a decoder of family
/// `modelType` whose config is `textConfig` (text_config over its class's
/// defaults; messages name the folder's config.json and the field), its
/// tensors named as LLaVA's are (Llava.h).
llvm::Expected<LoadedModel>
loadTextModelWithin(MLIRContext &context, llvm::StringRef directory,
                    llvm::StringRef modelType, llvm::json::Object &textConfig,
                    const ConfigReader &config,
                    void (*renameWeights)(WeightStore &) = renameLlavaWeights) {
  ConfigReader text(textConfig, config.file() + ": text_config");
  DecoderSpec spec;
  readDecoderFamily(modelType, text, spec);
  const TextModelWithin imageText = {renameWeights, isLlavaImageWeight};
  return loadDecoder(context, directory, modelType, std::move(spec), text,
                     /*adapters=*/{}, &imageText);
}

/// A vision-language folder: its `Spec` read from config.json by `read`,
/// its text model (the spec's textModelType and textConfig; the tensors
/// renamed by `rename`), then the image side added by `addImage`: LLaVA and
/// LLaVA-NeXT (Llava.h), Gemma 3 (Gemma3Vision.h), Idefics3 and SmolVLM
/// (Idefics3.h).
template <typename Spec, void (*read)(ConfigReader &, Spec &),
          llvm::Error (*addImage)(MLIRContext &, Spec &, llvm::StringRef,
                                  llvm::StringRef, LoadedModel &),
          void (*rename)(WeightStore &) = renameLlavaWeights>
llvm::Expected<LoadedModel>
loadVisionLanguage(MLIRContext &context, llvm::StringRef directory,
                   llvm::StringRef modelType, ConfigReader &config) {
  Spec spec;
  read(config, spec);
  if (llvm::Error err = config.takeError())
    return std::move(err);
  llvm::Expected<LoadedModel> model = loadTextModelWithin(
      context, directory, spec.textModelType, spec.textConfig, config, rename);
  if (!model)
    return model.takeError();
  std::string checkpoint = (directory + "/model.safetensors").str();
  if (llvm::Error err = addImage(context, spec, directory, checkpoint, *model))
    return std::move(err);
  model->family = modelType.str();
  return model;
}

/// Each kind of model a folder may hold: whether its model_type is the
/// kind's (the kind loads the folder) or not (none), and the
/// model_types it knows, for the message about one none knows (decoders
/// first, as users most often bring one). Their model_types are disjoint.
struct ModelKind {
  llvm::Expected<std::optional<LoadedModel>> (*load)(
      MLIRContext &context, llvm::StringRef directory,
      llvm::StringRef modelType, ConfigReader &config,
      llvm::ArrayRef<LoraAdapterSpec> adapters);
  std::string (*supported)();
};

/// LoRA adapters are merged into decoders only (the kinds below refuse
/// them once they claim the folder).
llvm::Error refuseAdapters(llvm::ArrayRef<LoraAdapterSpec> adapters,
                           llvm::StringRef directory,
                           llvm::StringRef modelType) {
  if (adapters.empty())
    return llvm::Error::success();
  return makeError("--lora merges PEFT LoRA adapters into a decoder "
                   "language model's weights; '" +
                   directory + "' holds a " + modelType + " model");
}

/// A kind whose families a predicate names (vision, CLIP, speech).
template <bool (*claims)(llvm::StringRef),
          llvm::Expected<LoadedModel> (*loadKind)(
              MLIRContext &, llvm::StringRef, llvm::StringRef, ConfigReader &)>
llvm::Expected<std::optional<LoadedModel>>
claimedKind(MLIRContext &context, llvm::StringRef directory,
            llvm::StringRef modelType, ConfigReader &config,
            llvm::ArrayRef<LoraAdapterSpec> adapters) {
  if (!claims(modelType))
    return std::nullopt;
  if (llvm::Error err = refuseAdapters(adapters, directory, modelType))
    return std::move(err);
  llvm::Expected<LoadedModel> model =
      loadKind(context, directory, modelType, config);
  if (!model)
    return model.takeError();
  return std::optional<LoadedModel>(std::move(*model));
}

/// A kind whose table reads the config into its spec as it claims the
/// model_type (encoders, encoder-decoders).
template <typename Spec,
          bool (*readFamily)(llvm::StringRef, ConfigReader &, Spec &),
          llvm::Expected<LoadedModel> (*loadKind)(
              MLIRContext &, llvm::StringRef, ConfigReader &, Spec)>
llvm::Expected<std::optional<LoadedModel>>
specKind(MLIRContext &context, llvm::StringRef directory,
         llvm::StringRef modelType, ConfigReader &config,
         llvm::ArrayRef<LoraAdapterSpec> adapters) {
  Spec spec;
  if (!readFamily(modelType, config, spec))
    return std::nullopt;
  if (llvm::Error err = refuseAdapters(adapters, directory, modelType))
    return std::move(err);
  llvm::Expected<LoadedModel> model =
      loadKind(context, directory, config, std::move(spec));
  if (!model)
    return model.takeError();
  return std::optional<LoadedModel>(std::move(*model));
}

/// Wav2Vec2 and HuBERT (Wav2Vec2.h): raw samples in.
llvm::Expected<LoadedModel> loadSpeech(MLIRContext &context,
                                       llvm::StringRef directory,
                                       llvm::StringRef modelType,
                                       ConfigReader &config) {
  LoadedModel model;
  if (llvm::Error err =
          loadSpeechModel(context, directory, modelType, config, model))
    return std::move(err);
  return std::move(model);
}

const ModelKind kModelKinds[] = {
    {loadDecoderFolder, supportedDecoderFamilies},
    {specKind<EncoderSpec, readEncoderFamily, loadEncoder>,
     supportedEncoderFamilies},
    {specKind<Seq2SeqSpec, readSeq2SeqFamily, loadSeq2Seq>,
     supportedSeq2SeqFamilies},
    {claimedKind<isVisionFamily, loadVision>, supportedVisionFamilies},
    {claimedKind<isClipFamily, loadClipModel>, supportedClipFamilies},
    {claimedKind<isLlavaFamily, loadVisionLanguage<LlavaSpec, readLlavaConfig,
                                                   addLlavaImageTokens>>,
     supportedLlavaFamilies},
    {claimedKind<isGemma3VisionFamily,
                 loadVisionLanguage<Gemma3VisionSpec, readGemma3VisionConfig,
                                    addGemma3ImageTokens>>,
     supportedGemma3VisionFamilies},
    {claimedKind<
         isIdefics3Family,
         loadVisionLanguage<Idefics3Spec, readIdefics3Config,
                            addIdefics3ImageTokens, renameIdefics3Weights>>,
     supportedIdefics3Families},
    {claimedKind<isSpeechFamily, loadSpeech>, supportedSpeechFamilies},
};

} // namespace

llvm::Expected<LoadedModel> mlir::tfm::loadHuggingFaceModel(
    mlir::MLIRContext &context, llvm::StringRef directory,
    DiffusionOptions diffusion, llvm::ArrayRef<LoraAdapterSpec> adapters) {
  if (isDiffusionPipelineFolder(directory)) {
    if (llvm::Error err = refuseAdapters(adapters, directory, "diffusion"))
      return std::move(err);
    return loadDiffusionPipeline(context, directory, diffusion);
  }
  if (diffusion.height || diffusion.width || !diffusion.configFolder.empty())
    return makeError(
        "--image-size and --config-folder are for a diffusion pipeline "
        "(model_index.json); " +
        directory + " has none");
  llvm::SmallString<256> configPath(directory);
  llvm::sys::path::append(configPath, "config.json");
  llvm::Expected<llvm::json::Object> object = readJsonObjectFile(configPath);
  if (!object)
    return object.takeError();
  ConfigReader config(*object, configPath.str().str());
  std::string modelType = config.string("model_type", "");
  for (const ModelKind &kind : kModelKinds) {
    llvm::Expected<std::optional<LoadedModel>> model =
        kind.load(context, directory, modelType, config, adapters);
    if (!model)
      return model.takeError();
    if (*model)
      return std::move(**model);
  }
  std::string supported;
  for (const ModelKind &kind : kModelKinds)
    supported += (supported.empty() ? "" : ", ") + kind.supported();
  return makeError(configPath + ": unknown model_type '" + modelType +
                   "' (supported: " + supported + ")");
}
