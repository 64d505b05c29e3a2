//===- Seq2SeqFamilies.cpp - Hugging Face encoder-decoder model_types ----===//
//
// The readers of encoder-decoder configs (see Seq2SeqFamilies.h);
// Seq2SeqBuilder.cpp makes the module.
//
//===----------------------------------------------------------------------===//

#include "frontend/families/Seq2SeqFamilies.h"
#include "frontend/families/FamilyTable.h"
#include "frontend/formats/CheckedAttributes.h"
#include "frontend/formats/ErrorMessages.h"
#include "frontend/formats/JsonFile.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// BART's config names, which Marian shares: d_model, encoder_layers, ...
void readBartSizes(ConfigReader &config, Seq2SeqSpec &spec) {
  spec.vocabSize = config.integer("vocab_size");
  spec.hiddenSize = config.integer("d_model");
  spec.maxPositions = config.integer("max_position_embeddings", 0);
  spec.encoderLayers = config.integer("encoder_layers");
  spec.decoderLayers = config.integer("decoder_layers");
  spec.encoderHeads = config.integer("encoder_attention_heads");
  spec.decoderHeads = config.integer("decoder_attention_heads");
  spec.encoderFfn = config.integer("encoder_ffn_dim");
  spec.decoderFfn = config.integer("decoder_ffn_dim");
  spec.activation = config.activation("activation_function", "gelu");
  spec.scaleEmbedding = config.boolean("scale_embedding", false);
  spec.padToken = config.integer("pad_token_id", -1);
  spec.eosToken = config.integer("eos_token_id", -1);
  // Without decoder_start_token_id (mBART-cc25's config), generation
  // starts from BOS, as transformers' generate() falls back to it.
  spec.decoderStartToken = config.integer(
      "decoder_start_token_id", config.integer("bos_token_id", spec.padToken));
  // Older (fairseq-converted) configs say whether blocks are pre-norm with
  // a final LayerNorm per stack; transformers' class decides, so a value
  // is accepted where it says what the class does (mBART-cc25's true,
  // BART's and Marian's false) and refused where it says otherwise.
  for (llvm::StringRef key : {"normalize_before", "add_final_layer_norm"}) {
    const llvm::json::Value *value = config.raw().get(key);
    std::optional<bool> given = value ? value->getAsBoolean() : std::nullopt;
    if (given && *given != spec.preNorm)
      config.fail("unsupported config value '" + key + "' = " +
                  (*given ? "true" : "false") + " (" + spec.family +
                  (spec.preNorm ? " has pre-norm blocks and final LayerNorms"
                                : " has post-norm blocks")
                  + ")");
  }
}

/// T5 (v1.0 and v1.1): T5Config's names and defaults.
void readT5(ConfigReader &config, Seq2SeqSpec &spec) {
  spec.t5Blocks = true;
  spec.vocabSize = config.integer("vocab_size", 32128);
  spec.hiddenSize = config.integer("d_model", 512);
  spec.headDim = config.integer("d_kv", 64);
  spec.encoderFfn = spec.decoderFfn = config.integer("d_ff", 2048);
  spec.encoderLayers = config.integer("num_layers", 6);
  spec.decoderLayers =
      config.integer("num_decoder_layers", spec.encoderLayers);
  spec.encoderHeads = spec.decoderHeads = config.integer("num_heads", 8);
  spec.relativeBuckets =
      config.integer("relative_attention_num_buckets", 32);
  spec.relativeMaxDistance =
      config.integer("relative_attention_max_distance", 128);
  spec.maxPositions = config.integer("n_positions", 512);
  spec.normEpsilon = config.number("layer_norm_epsilon", 1e-6);
  // feed_forward_proj is "ACT" or "gated-ACT"; "gated-gelu" means gelu_new.
  std::string ffn = config.string("feed_forward_proj", "relu");
  llvm::StringRef act(ffn);
  spec.gatedFfn = act.consume_front("gated-");
  spec.activation =
      ffn == "gated-gelu"
          ? ActivationKind::gelu_tanh
          : config.activationNamed(act.str(), "feed_forward_proj");
  spec.tiedHead = config.boolean("tie_word_embeddings", true);
  spec.padToken = config.integer("pad_token_id", 0);
  spec.eosToken = config.integer("eos_token_id", 1);
  // Without decoder_start_token_id (mBART-cc25's config), generation
  // starts from BOS, as transformers' generate() falls back to it.
  spec.decoderStartToken = config.integer(
      "decoder_start_token_id", config.integer("bos_token_id", spec.padToken));
}

/// Whisper: BART's names for the sizes, plus the audio's.
void readWhisper(ConfigReader &config, Seq2SeqSpec &spec) {
  readBartSizes(config, spec);
  spec.maxPositions = config.integer("max_target_positions", 448);
  // Positive where given: a spec without mel bins is a text model's.
  spec.melBins = config.positiveInteger("num_mel_bins", 80);
  spec.sourcePositions = config.positiveInteger("max_source_positions", 1500);
  spec.preNorm = true;
  spec.keyBias = false;
  spec.decoderStartToken = config.integer("decoder_start_token_id", 50257);
}

/// BART: learned positions from row 2 on, a LayerNorm on the embeddings,
/// GELU.
void readBart(ConfigReader &config, Seq2SeqSpec &spec) {
  spec.family = "bart";
  readBartSizes(config, spec);
  spec.positionOffset = 2;
  spec.embeddingNorm = true;
}

/// mBART: BART's embeddings (learned positions from row 2,
/// layernorm_embedding) with pre-norm blocks and a final LayerNorm per
/// stack.
void readMbart(ConfigReader &config, Seq2SeqSpec &spec) {
  spec.family = "mbart";
  spec.preNorm = true;
  readBartSizes(config, spec);
  spec.positionOffset = 2;
  spec.embeddingNorm = true;
}

/// Marian: the original Transformer's post-norm blocks, sinusoidal
/// positions, one vocabulary for both sides.
void readMarian(ConfigReader &config, Seq2SeqSpec &spec) {
  spec.family = "marian";
  readBartSizes(config, spec);
  spec.activation = config.activation("activation_function", "swish");
  spec.sinusoidalPositions = true;
  if (!config.boolean("share_encoder_decoder_embeddings", true))
    config.fail("unsupported config value 'share_encoder_decoder_embeddings' "
                "= false (separate source and target vocabularies)");
}

void readWhisperFamily(ConfigReader &config, Seq2SeqSpec &spec) {
  spec.family = "whisper";
  readWhisper(config, spec);
}

void readT5Family(ConfigReader &config, Seq2SeqSpec &spec) {
  spec.family = "t5";
  readT5(config, spec);
}

/// An encoder-decoder family: config.json's model_type and the reader that
/// fills its spec.
struct Seq2SeqFamily {
  llvm::StringLiteral modelType;
  void (*read)(ConfigReader &config, Seq2SeqSpec &spec);
};

/// Every encoder-decoder family, in the order messages list them. A new
/// family is a reader above and a row here.
const Seq2SeqFamily kSeq2SeqFamilies[] = {
    {"bart", readBart},
    {"marian", readMarian},
    {"mbart", readMbart},
    {"t5", readT5Family},
    {"whisper", readWhisperFamily},
};

} // namespace

std::string mlir::tfm::supportedSeq2SeqFamilies() {
  return familyNames(kSeq2SeqFamilies, &Seq2SeqFamily::modelType);
}

bool mlir::tfm::readSeq2SeqFamily(llvm::StringRef modelType,
                                  ConfigReader &config, Seq2SeqSpec &spec) {
  const Seq2SeqFamily *family =
      findFamily(kSeq2SeqFamilies, &Seq2SeqFamily::modelType, modelType);
  if (!family)
    return false;
  family->read(config, spec);
  return true;
}

llvm::Error mlir::tfm::validateSeq2SeqSpec(const Seq2SeqSpec &spec,
                                           llvm::StringRef configPath) {
  if (llvm::Error err = expectPositiveSizes(
          configPath, {{"vocab size", spec.vocabSize},
                       {"d_model", spec.hiddenSize},
                       {"maximum positions", spec.maxPositions},
                       {"encoder layer count", spec.encoderLayers},
                       {"decoder layer count", spec.decoderLayers},
                       {"encoder attention head count", spec.encoderHeads},
                       {"decoder attention head count", spec.decoderHeads},
                       {"encoder FFN size", spec.encoderFfn},
                       {"decoder FFN size", spec.decoderFfn}}))
    return err;
  if (spec.t5Blocks) {
    if (llvm::Error err = expectPositiveSizes(
            configPath, {{"d_kv", spec.headDim},
                         {"relative_attention_num_buckets",
                          spec.relativeBuckets},
                         {"relative_attention_max_distance",
                          spec.relativeMaxDistance}}))
      return err;
    // The encoder's bidirectional buckets: two halves, each with an exact
    // and a logarithmic range.
    if (spec.relativeBuckets < 4 || spec.relativeBuckets % 2 != 0 ||
        spec.relativeMaxDistance <= spec.relativeBuckets / 2)
      return makeError(configPath + ": relative_attention_num_buckets (" +
                       llvm::Twine(spec.relativeBuckets) +
                       ") should be even, at least 4, and below twice "
                       "relative_attention_max_distance (" +
                       llvm::Twine(spec.relativeMaxDistance) + ")");
  }
  if (spec.speech())
    if (llvm::Error err = expectPositiveSizes(
            configPath, {{"max_source_positions", spec.sourcePositions}}))
      return err;
  for (int64_t heads : {spec.encoderHeads, spec.decoderHeads})
    if (!spec.headDim && spec.hiddenSize % heads != 0)
      return makeError(configPath + ": d_model (" +
                       llvm::Twine(spec.hiddenSize) +
                       ") is not divisible by the head count (" +
                       llvm::Twine(heads) + ")");
  if (spec.sinusoidalPositions && spec.hiddenSize % 2 != 0)
    return makeError(configPath + ": sinusoidal positions need an even "
                                  "d_model, got " +
                     llvm::Twine(spec.hiddenSize));
  if (spec.decoderStartToken < 0 || spec.decoderStartToken >= spec.vocabSize)
    return makeError(configPath + ": decoder_start_token_id " +
                     llvm::Twine(spec.decoderStartToken) +
                     " is not a token of the " + llvm::Twine(spec.vocabSize) +
                     "-token vocabulary");
  return llvm::Error::success();
}

llvm::Expected<AudioPreprocessingAttr>
mlir::tfm::readAudioPreprocessing(MLIRContext &context,
                                  llvm::StringRef directory,
                                  const Seq2SeqSpec &spec) {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, "preprocessor_config.json");
  llvm::json::Object none;
  std::optional<llvm::json::Value> file;
  llvm::Expected<const llvm::json::Object *> fields =
      readOptionalJsonObject(path, &none, file);
  if (!fields)
    return fields.takeError();
  // WhisperFeatureExtractor's fields and defaults; each positive and
  // below kMaxConfigSize, so that the chunk's samples do not overflow.
  ConfigReader reader(**fields, path.str().str());
  int64_t melBins = reader.positiveInteger("feature_size", 80);
  int64_t rate = reader.positiveInteger("sampling_rate", 16000);
  int64_t nFft = reader.positiveInteger("n_fft", 400);
  int64_t hop = reader.positiveInteger("hop_length", 160);
  int64_t chunk = reader.positiveInteger("chunk_length", 30);
  if (llvm::Error err = reader.takeError())
    return std::move(err);
  if (llvm::Error err = expectPositiveSizes(
          path, {{"feature_size", melBins},
                 {"sampling_rate", rate},
                 {"n_fft", nFft},
                 {"hop_length", hop},
                 {"chunk_length", chunk}}))
    return std::move(err);
  int64_t samples = reader.positiveInteger("n_samples", chunk * rate);
  if (llvm::Error err = reader.takeError())
    return std::move(err);
  if (llvm::Error err = expectPositiveSizes(path, {{"n_samples", samples}}))
    return std::move(err);
  // The STFT reflects n_fft / 2 samples at each end of the chunk (as
  // torch.stft's center=True does, which needs fewer than the chunk), and
  // its real FFT has n_fft / 2 + 1 bins.
  if (nFft % 2 != 0 || nFft > samples)
    return makeError(path + ": n_fft " + llvm::Twine(nFft) +
                     " must be even and at most the chunk's " +
                     llvm::Twine(samples) + " samples (Whisper's is 400)");
  if (samples < hop)
    return makeError(path + ": the chunk's " + llvm::Twine(samples) +
                     " samples are fewer than one hop (hop_length " +
                     llvm::Twine(hop) + ")");
  int64_t frames = 2 * spec.sourcePositions;
  if (melBins != spec.melBins || samples / hop != frames)
    return makeError(path + ": the features are " + llvm::Twine(melBins) +
                     " mel bins x " + llvm::Twine(samples / hop) +
                     " frames; the encoder takes " + llvm::Twine(spec.melBins) +
                     " x " + llvm::Twine(frames) +
                     " (num_mel_bins, 2 x max_source_positions)");
  return getCheckedAttr<AudioPreprocessingAttr>(
      path, &context, melBins, rate, nFft, hop, samples, /*kaldi=*/false,
      /*windowLength=*/int64_t(0), /*frames=*/int64_t(0), /*normalize=*/false,
      FloatAttr(), FloatAttr());
}

llvm::Expected<GenerationAttr> mlir::tfm::readGenerationDefaults(
    MLIRContext &context, llvm::StringRef directory,
    const llvm::json::Object &config, const Seq2SeqSpec &spec) {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, "generation_config.json");
  std::optional<llvm::json::Value> file;
  llvm::Expected<const llvm::json::Object *> found =
      readOptionalJsonObject(path, &config, file);
  if (!found)
    return found.takeError();
  const llvm::json::Object *fields = *found;
  std::string where = file ? path.str().str()
                           : (directory + "/config.json").str();
  auto integer = [&](llvm::StringRef key, int64_t fallback) {
    const llvm::json::Value *value = fields->get(key);
    return value && value->getAsInteger() ? *value->getAsInteger() : fallback;
  };
  // max_length and min_length count the decoder start token.
  int64_t maxNew = integer("max_new_tokens", 0);
  if (!maxNew && integer("max_length", 0) > 1)
    maxNew = integer("max_length", 0) - 1;
  int64_t minNew = integer("min_new_tokens", 0);
  if (!minNew && integer("min_length", 0) > 1)
    minNew = integer("min_length", 0) - 1;
  int64_t forced = integer("forced_eos_token_id", -1);
  if (forced >= 0 && forced != spec.eosToken)
    return makeError(where + ": forced_eos_token_id " + llvm::Twine(forced) +
                     " is not the end-of-sequence token " +
                     llvm::Twine(spec.eosToken) + " (not supported)");
  int64_t forcedBos = integer("forced_bos_token_id", -1);
  if (forcedBos >= spec.vocabSize)
    return makeError(where + ": forced_bos_token_id " +
                     llvm::Twine(forcedBos) + " is not a token of the " +
                     llvm::Twine(spec.vocabSize) + "-token vocabulary");
  // forced_decoder_ids [[1, a], [2, b], ...]: a prompt a b ... right after
  // the start token.
  // A null at position 1 is Whisper's language, detected from the audio
  // (openai/whisper-*'s [[1, null], [2, transcribe]]); it needs lang_to_id.
  SmallVector<int32_t> prompt;
  const llvm::json::Object *languageIds = fields->getObject("lang_to_id");
  if (const llvm::json::Array *forcedIds = fields->getArray("forced_decoder_ids"))
    for (const llvm::json::Value &pair : *forcedIds) {
      const llvm::json::Array *entry = pair.getAsArray();
      bool detected = entry && entry->size() == 2 && prompt.empty() &&
                      languageIds && (*entry)[1].getAsNull();
      if (!entry || entry->size() != 2 || !(*entry)[0].getAsInteger() ||
          *(*entry)[0].getAsInteger() != int64_t(prompt.size()) + 1 ||
          (!(*entry)[1].getAsInteger() && !detected))
        return makeError(where + ": forced_decoder_ids should force positions "
                                 "1, 2, ... in turn, as [[1, id], [2, id], "
                                 "...] (a null only for the language at 1, "
                                 "with lang_to_id)");
      if (detected) {
        prompt.push_back(-1);
        continue;
      }
      int64_t token = *(*entry)[1].getAsInteger();
      if (token < 0 || token >= spec.vocabSize)
        return makeError(where + ": forced_decoder_ids forces token " +
                         llvm::Twine(token) + ", outside the " +
                         llvm::Twine(spec.vocabSize) +
                         "-token vocabulary (ids 0 to " +
                         llvm::Twine(spec.vocabSize - 1) + ")");
      prompt.push_back(int32_t(token));
    }
  // Ids outside the vocabulary are refused by name: cut to 32 bits or
  // left to the runtime, they would suppress another token or none.
  auto tokenList = [&](llvm::StringRef key,
                       SmallVector<int32_t> &list) -> llvm::Error {
    if (const llvm::json::Array *ids = fields->getArray(key))
      for (const llvm::json::Value &id : *ids) {
        if (!id.getAsInteger())
          return makeError(where + ": " + key + " should list token ids");
        int64_t token = *id.getAsInteger();
        if (token < 0 || token >= spec.vocabSize)
          return makeError(where + ": " + key + " lists token " +
                           llvm::Twine(token) + ", outside the " +
                           llvm::Twine(spec.vocabSize) +
                           "-token vocabulary (ids 0 to " +
                           llvm::Twine(spec.vocabSize - 1) + ")");
        list.push_back(int32_t(token));
      }
    return llvm::Error::success();
  };
  SmallVector<int32_t> suppressed, beginSuppressed;
  if (llvm::Error err = tokenList("suppress_tokens", suppressed))
    return std::move(err);
  if (llvm::Error err = tokenList("begin_suppress_tokens", beginSuppressed))
    return std::move(err);
  // bad_words_ids: single tokens are suppressed (but the end-of-sequence
  // token, which transformers drops from them); longer words ban their
  // last token after the rest.
  SmallVector<int32_t> badWords, badWordLengths;
  if (const llvm::json::Array *bad = fields->getArray("bad_words_ids"))
    for (const llvm::json::Value &word : *bad) {
      const llvm::json::Array *ids = word.getAsArray();
      SmallVector<int32_t> tokens;
      for (size_t i = 0; ids && i < ids->size(); ++i)
        if (std::optional<int64_t> id = (*ids)[i].getAsInteger();
            id && *id >= 0 && *id < spec.vocabSize)
          tokens.push_back(int32_t(*id));
      if (!ids || tokens.empty() || tokens.size() != ids->size())
        return makeError(where + ": bad_words_ids should list words of token "
                                 "ids of the vocabulary");
      if (tokens.size() == 1 && tokens[0] != spec.eosToken)
        suppressed.push_back(tokens[0]);
      if (tokens.size() > 1) {
        badWords.append(tokens);
        badWordLengths.push_back(int32_t(tokens.size()));
      }
    }
  // Whisper's special tokens for timestamps, tasks and languages.
  auto specialToken = [&](llvm::StringRef key, const llvm::json::Object &in,
                          int32_t &token) -> llvm::Error {
    token = -1;
    const llvm::json::Value *value = in.get(key);
    if (!value || value->getAsNull())
      return llvm::Error::success();
    std::optional<int64_t> id = value->getAsInteger();
    if (!id || *id < 0 || *id >= spec.vocabSize)
      return makeError(where + ": " + key + " should be a token id of the " +
                       llvm::Twine(spec.vocabSize) + "-token vocabulary");
    token = int32_t(*id);
    return llvm::Error::success();
  };
  int32_t noTimestamps, startOfPrevious, transcribe = -1, translate = -1;
  if (llvm::Error err =
          specialToken("no_timestamps_token_id", *fields, noTimestamps))
    return std::move(err);
  if (llvm::Error err =
          specialToken("prev_sot_token_id", *fields, startOfPrevious))
    return std::move(err);
  if (const llvm::json::Object *tasks = fields->getObject("task_to_id")) {
    if (llvm::Error err = specialToken("transcribe", *tasks, transcribe))
      return std::move(err);
    if (llvm::Error err = specialToken("translate", *tasks, translate))
      return std::move(err);
  }
  SmallVector<int32_t> languages;
  for (const auto &language :
       languageIds ? *languageIds : llvm::json::Object()) {
    int32_t id;
    if (llvm::Error err = specialToken(language.first, *languageIds, id))
      return std::move(err);
    if (id >= 0)
      languages.push_back(id);
  }
  llvm::sort(languages);
  // The prompt decodes one window without timestamps: 4.40's
  // _retrieve_init_tokens ends it with <|notimestamps|> where the config
  // forces none (openai/whisper-*'s [[1, null], [2, transcribe]]); the
  // long-form windows drop it again.
  if (prompt.empty() && !languages.empty())
    prompt.push_back(-1); // no forced ids: the language detected
  if (noTimestamps >= 0 && !prompt.empty() && prompt.back() != noTimestamps)
    prompt.push_back(noTimestamps);
  int64_t maxInitial = integer("max_initial_timestamp_index", -1);
  if (noTimestamps >= 0 && noTimestamps < 1)
    return makeError(where + ": no_timestamps_token_id 0 leaves no "
                             "<|nospeech|> token before it");
  // Word timestamps: the cross-attention heads that follow the audio, and
  // how widely their weights are smoothed (WhisperConfig's
  // median_filter_width, an odd width, 7 by default).
  SmallVector<int32_t> alignmentHeads;
  if (const llvm::json::Array *pairs = fields->getArray("alignment_heads"))
    for (const llvm::json::Value &pair : *pairs) {
      const llvm::json::Array *entry = pair.getAsArray();
      std::optional<int64_t> layer, head;
      if (entry && entry->size() == 2) {
        layer = (*entry)[0].getAsInteger();
        head = (*entry)[1].getAsInteger();
      }
      if (!layer || !head || *layer < 0 || *layer >= spec.decoderLayers ||
          *head < 0 || *head >= spec.decoderHeads)
        return makeError(where +
                         ": alignment_heads should list [layer, "
                         "head] pairs of the decoder's " +
                         llvm::Twine(spec.decoderLayers) + " layers and " +
                         llvm::Twine(spec.decoderHeads) + " heads");
      alignmentHeads.append({int32_t(*layer), int32_t(*head)});
    }
  int64_t medianWidth = 7;
  if (const llvm::json::Value *width = config.get("median_filter_width")) {
    std::optional<int64_t> value = width->getAsInteger();
    if (!value || *value <= 0 || *value % 2 == 0 || *value > 1001)
      return makeError(directory + "/config.json: median_filter_width "
                                   "should be an odd width of frames");
    medianWidth = *value;
  }
  std::optional<double> penalty = fields->getNumber("length_penalty");
  Builder b(&context);
  return GenerationAttr::get(
      &context, int32_t(std::max<int64_t>(1, integer("num_beams", 1))), maxNew,
      minNew, int32_t(integer("no_repeat_ngram_size", 0)), forced >= 0,
      int32_t(std::max<int64_t>(forcedBos, -1)),
      penalty ? b.getF32FloatAttr(*penalty) : FloatAttr(),
      fields->getBoolean("early_stopping").value_or(false),
      suppressed.empty() ? DenseI32ArrayAttr()
                         : b.getDenseI32ArrayAttr(suppressed),
      badWords.empty() ? DenseI32ArrayAttr() : b.getDenseI32ArrayAttr(badWords),
      badWordLengths.empty() ? DenseI32ArrayAttr()
                             : b.getDenseI32ArrayAttr(badWordLengths),
      prompt.empty() ? DenseI32ArrayAttr() : b.getDenseI32ArrayAttr(prompt),
      beginSuppressed.empty() ? DenseI32ArrayAttr()
                              : b.getDenseI32ArrayAttr(beginSuppressed),
      noTimestamps, int32_t(std::clamp<int64_t>(maxInitial, -1, INT32_MAX)),
      startOfPrevious, transcribe, translate,
      languages.empty() ? DenseI32ArrayAttr()
                        : b.getDenseI32ArrayAttr(languages),
      alignmentHeads.empty() ? DenseI32ArrayAttr()
                             : b.getDenseI32ArrayAttr(alignmentHeads),
      int32_t(medianWidth));
}
