//===- HuggingFace.cpp - reader of Hugging Face model directories -------===//
//
// config.json + model.safetensors (or shards). model_type "gpt2" (learned
// positions, LayerNorm, GELU-tanh MLP, Conv1D weights stored [in, out], tied
// head) and "llama" (RoPE, RMSNorm, SwiGLU, GQA, tied or separate head).
// Config values the compiler does not implement are refused by name rather
// than ignored.
//
//===----------------------------------------------------------------------===//

#include "frontend/DecoderBuilder.h"
#include "frontend/ErrorMessages.h"
#include "frontend/JsonFile.h"
#include "frontend/ModelLoader.h"
#include "frontend/Safetensors.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// Typed access to config.json fields with messages that name the field.
class ConfigReader {
public:
  ConfigReader(const llvm::json::Object &object, std::string path)
      : object(object), path(std::move(path)) {}

  int64_t integer(llvm::StringRef key, std::optional<int64_t> fallback = {}) {
    const llvm::json::Value *value = object.get(key);
    if (!value || value->kind() == llvm::json::Value::Null) {
      if (!fallback)
        fail("missing integer field '" + key + "'");
      return fallback.value_or(0);
    }
    // Some configs list several ids (e.g. eos_token_id); the first counts.
    if (const llvm::json::Array *list = value->getAsArray())
      if (!list->empty())
        value = &list->front();
    if (std::optional<int64_t> v = value->getAsInteger())
      return *v;
    fail("field '" + key + "' must be an integer");
    return 0;
  }
  double number(llvm::StringRef key, double fallback) {
    const llvm::json::Value *value = object.get(key);
    if (!value)
      return fallback;
    if (std::optional<double> v = value->getAsNumber())
      return *v;
    fail("field '" + key + "' must be a number");
    return fallback;
  }
  bool boolean(llvm::StringRef key, bool fallback) {
    const llvm::json::Value *value = object.get(key);
    if (!value)
      return fallback;
    if (std::optional<bool> v = value->getAsBoolean())
      return *v;
    fail("field '" + key + "' must be true or false");
    return fallback;
  }
  std::string string(llvm::StringRef key, llvm::StringRef fallback) {
    const llvm::json::Value *value = object.get(key);
    if (!value)
      return fallback.str();
    if (std::optional<llvm::StringRef> v = value->getAsString())
      return v->str();
    fail("field '" + key + "' must be a string");
    return fallback.str();
  }
  /// Refuses a field that changes the model in a way not implemented.
  void refuseUnlessAbsent(llvm::StringRef key, llvm::StringRef why) {
    const llvm::json::Value *value = object.get(key);
    if (value && value->kind() != llvm::json::Value::Null &&
        value->getAsBoolean() != std::optional<bool>(false))
      fail("unsupported config value '" + key + "' (" + why + ")");
  }
  void fail(const llvm::Twine &message) {
    if (errors.empty())
      errors = path + ": " + message.str();
  }
  llvm::Error takeError() {
    return errors.empty() ? llvm::Error::success() : makeError(errors);
  }

private:
  const llvm::json::Object &object;
  std::string path;
  std::string errors;
};

std::optional<ActivationKind> parseActivation(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<ActivationKind>>(name)
      .Cases({"gelu_new", "gelu_pytorch_tanh", "gelu_fast"},
             ActivationKind::gelu_tanh)
      .Case("gelu", ActivationKind::gelu)
      .Case("relu", ActivationKind::relu)
      .Cases({"silu", "swish"}, ActivationKind::silu)
      .Default(std::nullopt);
}

void readActivation(ConfigReader &config, llvm::StringRef key,
                    llvm::StringRef fallback, DecoderSpec &spec) {
  std::string name = config.string(key, fallback);
  if (std::optional<ActivationKind> kind = parseActivation(name))
    spec.activation = *kind;
  else
    config.fail("unsupported config value " + key + " = '" + name +
                "' (supported: gelu, gelu_new, gelu_pytorch_tanh, relu, "
                "silu)");
}

DecoderSpec readLlamaSpec(ConfigReader &config) {
  DecoderSpec spec;
  spec.family = "llama";
  spec.vocabSize = config.integer("vocab_size");
  spec.hiddenSize = config.integer("hidden_size");
  spec.numLayers = config.integer("num_hidden_layers");
  spec.numHeads = config.integer("num_attention_heads");
  spec.numKVHeads = config.integer("num_key_value_heads", spec.numHeads);
  spec.intermediateSize = config.integer("intermediate_size");
  spec.maxContext = config.integer("max_position_embeddings");
  spec.rmsNorm = true;
  spec.normEpsilon = config.number("rms_norm_eps", 1e-6);
  spec.ropeTheta = config.number("rope_theta", 10000.0);
  spec.ropeStyle = mlir::tfm::RopeStyle::rotate_half;
  spec.gatedMlp = true;
  readActivation(config, "hidden_act", "silu", spec);
  spec.attentionBias = config.boolean("attention_bias", false);
  spec.mlpBias = config.boolean("mlp_bias", false);
  config.refuseUnlessAbsent("rope_scaling", "scaled rotary embeddings");
  if (spec.numHeads > 0) {
    int64_t headDim =
        config.integer("head_dim", spec.hiddenSize / spec.numHeads);
    if (headDim != spec.hiddenSize / spec.numHeads)
      config.fail("unsupported config value head_dim = " +
                  llvm::Twine(headDim) + " (must be hidden_size / "
                                         "num_attention_heads)");
  }
  spec.tokenEmbedding = "model.embed_tokens.weight";
  spec.finalNorm = "model.norm.weight";
  bool tied = config.boolean("tie_word_embeddings", false);
  spec.lmHead = tied ? "" : "lm_head.weight";
  spec.layer = {"model.layers.{}.input_layernorm.weight",
                "model.layers.{}.self_attn.q_proj.weight",
                "model.layers.{}.self_attn.k_proj.weight",
                "model.layers.{}.self_attn.v_proj.weight",
                "model.layers.{}.self_attn.o_proj.weight",
                "model.layers.{}.post_attention_layernorm.weight",
                "model.layers.{}.mlp.up_proj.weight",
                "model.layers.{}.mlp.gate_proj.weight",
                "model.layers.{}.mlp.down_proj.weight"};
  return spec;
}

DecoderSpec readGpt2Spec(ConfigReader &config) {
  DecoderSpec spec;
  spec.family = "gpt2";
  spec.vocabSize = config.integer("vocab_size");
  spec.hiddenSize = config.integer("n_embd");
  spec.numLayers = config.integer("n_layer");
  spec.numHeads = config.integer("n_head");
  spec.numKVHeads = spec.numHeads;
  spec.intermediateSize = config.integer("n_inner", 4 * spec.hiddenSize);
  spec.maxContext = config.integer("n_positions");
  spec.normEpsilon = config.number("layer_norm_epsilon", 1e-5);
  spec.learnedPositions = true;
  readActivation(config, "activation_function", "gelu_new", spec);
  spec.attentionBias = spec.mlpBias = true;
  config.refuseUnlessAbsent("scale_attn_by_inverse_layer_idx",
                            "per-layer attention scaling");
  config.refuseUnlessAbsent("reorder_and_upcast_attn",
                            "upcast attention reordering");
  if (!config.boolean("scale_attn_weights", true))
    config.fail("unsupported config value 'scale_attn_weights' = false");
  if (!config.boolean("tie_word_embeddings", true))
    spec.lmHead = "lm_head.weight";
  // Names are completed by prepareGpt2Weights (prefix, split c_attn).
  return spec;
}

/// GPT-2 stores Conv1D weights as [in, out] and Q, K, V as one c_attn. Turn
/// them into [out, in] linear weights, c_attn split into three, and complete
/// the spec's names (with the "transformer." prefix some checkpoints use).
llvm::Error prepareGpt2Weights(DecoderSpec &spec, WeightStore &store,
                               llvm::StringRef checkpoint) {
  std::string prefix = store.contains("transformer.wte.weight")
                           ? "transformer."
                           : "";
  int64_t d = spec.hiddenSize, inner = spec.intermediateSize;
  auto take = [&](const std::string &name, std::vector<int64_t> shape,
                  WeightTensor &out) -> llvm::Error {
    const WeightTensor *t = store.lookup(name);
    if (!t)
      return makeError(checkpoint + ": missing tensor '" + name + "' (shape " +
                       formatShape(shape) + ")");
    if (t->shape != shape)
      return makeError(checkpoint + ": tensor '" + name + "' has shape " +
                       formatShape(t->shape) + ", the gpt2 config implies " +
                       formatShape(shape) + " (Conv1D stores [in, out])");
    out = store.take(name);
    return llvm::Error::success();
  };
  // [in, out] -> [out, in], rows [rowBegin, rowEnd) of the result.
  auto transposed = [](const WeightTensor &t, int64_t rowBegin,
                       int64_t rowEnd) {
    int64_t in = t.shape[0], out = t.shape[1];
    WeightTensor r;
    r.shape = {rowEnd - rowBegin, in};
    r.source = t.source;
    r.values.resize(r.numElements());
    for (int64_t o = rowBegin; o < rowEnd; ++o)
      for (int64_t i = 0; i < in; ++i)
        r.values[(o - rowBegin) * in + i] = t.values[i * out + o];
    return r;
  };
  auto slice = [](const WeightTensor &t, int64_t begin, int64_t end) {
    WeightTensor r;
    r.shape = {end - begin};
    r.source = t.source;
    r.values.assign(t.values.begin() + begin, t.values.begin() + end);
    return r;
  };
  for (int64_t l = 0; l < spec.numLayers; ++l) {
    std::string h = prefix + "h." + std::to_string(l) + ".";
    WeightTensor qkv, qkvBias;
    if (llvm::Error err = take(h + "attn.c_attn.weight", {d, 3 * d}, qkv))
      return err;
    if (llvm::Error err = take(h + "attn.c_attn.bias", {3 * d}, qkvBias))
      return err;
    const char *parts[] = {"q", "k", "v"};
    for (int64_t p = 0; p < 3; ++p) {
      std::string name = h + "attn.c_attn." + parts[p] + ".";
      store.add(name + "weight", transposed(qkv, p * d, (p + 1) * d));
      store.add(name + "bias", slice(qkvBias, p * d, (p + 1) * d));
    }
    struct Conv1D {
      const char *name;
      int64_t in, out;
    };
    for (Conv1D c : {Conv1D{"attn.c_proj", d, d}, {"mlp.c_fc", d, inner},
                     {"mlp.c_proj", inner, d}}) {
      WeightTensor w;
      if (llvm::Error err = take(h + c.name + ".weight", {c.in, c.out}, w))
        return err;
      store.add(h + c.name + ".weight", transposed(w, 0, c.out));
    }
  }
  spec.tokenEmbedding = prefix + "wte.weight";
  spec.positionEmbedding = prefix + "wpe.weight";
  spec.finalNorm = prefix + "ln_f.weight";
  std::string h = prefix + "h.{}.";
  spec.layer = {h + "ln_1.weight",          h + "attn.c_attn.q.weight",
                h + "attn.c_attn.k.weight", h + "attn.c_attn.v.weight",
                h + "attn.c_proj.weight",   h + "ln_2.weight",
                h + "mlp.c_fc.weight",      "",
                h + "mlp.c_proj.weight"};
  return llvm::Error::success();
}

} // namespace

llvm::Expected<LoadedModel>
mlir::tfm::loadHuggingFaceModel(mlir::MLIRContext &context,
                          llvm::StringRef directory) {
  llvm::SmallString<256> configPath(directory);
  llvm::sys::path::append(configPath, "config.json");
  llvm::Expected<llvm::json::Value> json = readJsonFile(configPath);
  if (!json)
    return json.takeError();
  const llvm::json::Object *object = json->getAsObject();
  if (!object)
    return makeError(configPath + ": expected a JSON object");
  ConfigReader config(*object, configPath.str().str());
  std::string modelType = config.string("model_type", "");
  DecoderSpec spec;
  if (modelType == "llama") {
    spec = readLlamaSpec(config);
  } else if (modelType == "mistral") {
    // Mistral is LLaMA with sliding-window attention.
    spec = readLlamaSpec(config);
    spec.family = "mistral";
    spec.slidingWindow = config.integer("sliding_window", 0);
  }
  else if (modelType == "gpt2")
    spec = readGpt2Spec(config);
  else
    return makeError(configPath + ": unknown model_type '" + modelType +
                     "' (supported: gpt2, llama, mistral)");
  LoadedModel model;
  model.bosToken = config.integer("bos_token_id", -1);
  model.eosToken = config.integer("eos_token_id", -1);
  // GPT-2's tokenizer adds no BOS to prompts, LLaMA's does;
  // tokenizer_config.json says so explicitly where present.
  model.addBos = modelType != "gpt2";
  llvm::SmallString<256> tokenizerConfigPath(directory);
  llvm::sys::path::append(tokenizerConfigPath, "tokenizer_config.json");
  if (llvm::sys::fs::exists(tokenizerConfigPath)) {
    llvm::Expected<llvm::json::Value> tokenizerConfig =
        readJsonFile(tokenizerConfigPath);
    if (!tokenizerConfig)
      return tokenizerConfig.takeError();
    if (const llvm::json::Object *object = tokenizerConfig->getAsObject())
      if (std::optional<bool> addBos = object->getBoolean("add_bos_token"))
        model.addBos = *addBos;
  }
  if (llvm::Error err = config.takeError())
    return std::move(err);
  if (llvm::Error err = validateDecoderSpec(spec, configPath))
    return std::move(err);

  if (llvm::Error err = readSafetensorsCheckpoint(directory, model.weights))
    return std::move(err);
  std::string checkpoint = (directory + "/model.safetensors").str();
  if (modelType == "gpt2")
    if (llvm::Error err = prepareGpt2Weights(spec, model.weights, checkpoint))
      return std::move(err);
  bool tiedHeadSaved = spec.lmHead.empty();
  auto ignored = [&](llvm::StringRef name) {
    // Buffers some checkpoints save: GPT-2's causal masks, LLaMA's rotary
    // frequencies, and a copy of a tied head.
    return name.ends_with(".attn.bias") || name.ends_with(".attn.masked_bias") ||
           name.ends_with(".rotary_emb.inv_freq") ||
           (tiedHeadSaved && name == "lm_head.weight");
  };
  auto module = buildDecoder(context, spec, model.weights, checkpoint, ignored);
  if (!module)
    return module.takeError();
  model.module = std::move(*module);
  recordDecoderShape(model, spec);

  llvm::SmallString<256> tokenizer(directory);
  llvm::sys::path::append(tokenizer, "tokenizer.model");
  if (llvm::sys::fs::exists(tokenizer)) {
    auto vocab = readSentencePieceModel(tokenizer);
    if (!vocab)
      return vocab.takeError();
    if (int64_t(vocab->pieces.size()) != spec.vocabSize)
      return makeError(tokenizer + ": tokenizer has " +
                       llvm::Twine(vocab->pieces.size()) +
                       " tokens, the model's vocab_size is " +
                       llvm::Twine(spec.vocabSize));
    model.tokenizer = std::move(*vocab);
    return model;
  }
  llvm::Expected<TokenizerVocab> bpe = readByteLevelBpe(directory);
  if (!bpe)
    return bpe.takeError();
  if (!bpe->pieces.empty()) {
    if (int64_t(bpe->pieces.size()) != spec.vocabSize)
      return makeError(directory + ": the tokenizer has " +
                       llvm::Twine(bpe->pieces.size()) +
                       " tokens, the model's vocab_size is " +
                       llvm::Twine(spec.vocabSize));
    model.tokenizer = std::move(*bpe);
  }
  return model;
}
