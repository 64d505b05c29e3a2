//===- Gemma4Family.cpp - Google's Gemma 4 text decoder ---------------===//
//
// See Gemma4Family.h. Transcribed from transformers' gemma4 configuration
// and modeling files (test/e2e/reference/gemma4.py names the versions and
// checks the pieces): the config's defaults are Gemma4TextConfig's.
//
//===----------------------------------------------------------------------===//

#include "frontend/families/Gemma4Family.h"
#include "frontend/families/DecoderConfigReaders.h"
#include "frontend/formats/ErrorMessages.h"
#include "frontend/formats/Gguf.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// The router's input norm as prepareGemma4Checkpoint stores it: the
/// checkpoint's router.scale times hidden^-1/2, the gamma of an RMSNorm
/// (Gemma4TextRouter norms without a weight, then multiplies by both).
constexpr const char *kRouterNorm = "router.norm.weight";
constexpr const char *kGgufRouterNorm = "blk.{}.ffn_gate_inp.norm.weight";

/// Rows [first, first + count) (a view's row list).
std::vector<int64_t> rowRange(int64_t first, int64_t count) {
  std::vector<int64_t> list(size_t(std::max<int64_t>(count, 0)));
  for (int64_t i = 0; i < count; ++i)
    list[size_t(i)] = first + i;
  return list;
}

/// Where a family's text-model tensors are: the image-text folders'
/// (gemma4) under model.language_model., gemma4_text's under model..
std::string textPrefix(llvm::StringRef family) {
  return family == "gemma4" ? "model.language_model." : "model.";
}

/// One layer type's RoPE (rope_parameters.sliding_attention or
/// .full_attention) over heads of `headDim`: "default" rotates every pair
/// by theta^(-2i/head_dim); "proportional" rotates the first
/// int(partial_rotary_factor · head_dim // 2) pairs so, the exponent's
/// denominator still the whole head, and leaves the others (frequency 0),
/// all divided by `factor`.
void readLayerRope(ConfigReader &config, const llvm::json::Object *parameters,
                   llvm::StringRef type, int64_t headDim,
                   int64_t defaultHeadDim, LayerAttention &shape) {
  llvm::json::Object defaults;
  if (type == "sliding_attention")
    defaults = llvm::json::Object{{"rope_type", "default"},
                                  {"rope_theta", 10000.0}};
  else
    defaults = llvm::json::Object{{"rope_type", "proportional"},
                                  {"partial_rotary_factor", 0.25},
                                  {"rope_theta", 1000000.0}};
  const llvm::json::Object *given =
      parameters ? parameters->getObject(type) : nullptr;
  ConfigReader fields(given ? *given : defaults,
                      ("rope_parameters." + type).str());
  std::string kind = fields.string("rope_type", "default");
  double theta = fields.positiveNumber("rope_theta", 10000.0);
  double factor = fields.positiveNumber("factor", 1.0);
  double partial = fields.number("partial_rotary_factor", 1.0);
  if (!(partial > 0 && partial <= 1))
    fields.fail("partial_rotary_factor must be in (0, 1], got " +
                std::to_string(partial));
  int64_t pairs = headDim / 2, rotated = pairs;
  if (kind == "proportional") {
    rotated = int64_t(std::floor(partial * double(headDim) / 2));
  } else if (kind == "default") {
    // transformers computes the default frequencies over head_dim, the
    // sliding layers' size: a full layer of another size would not run.
    if (headDim != defaultHeadDim || partial != 1 || factor != 1)
      fields.fail("rope_type \"default\" needs heads of head_dim (" +
                  llvm::Twine(defaultHeadDim) +
                  ") and no partial_rotary_factor or factor, got heads of " +
                  llvm::Twine(headDim));
  } else {
    fields.fail("unsupported rope_type '" + kind +
                "' (supported: default, proportional)");
  }
  shape.ropeTheta = theta;
  for (int64_t i = 0; i < pairs && pairs <= kMaxConfigSize; ++i)
    shape.ropeFrequencies.push_back(
        i < rotated ? float(std::pow(theta, -2.0 * double(i) / double(headDim)) /
                            factor)
                    : 0.0f);
  if (llvm::Error err = fields.takeError())
    config.fail(llvm::toString(std::move(err)));
}

/// layer_types, or five sliding layers to each full one; the last layer is
/// always full (transformers forces it).
std::vector<bool> readSlidingLayers(ConfigReader &config, int64_t layers) {
  std::vector<bool> sliding;
  std::vector<std::string> types = config.strings("layer_types");
  for (const std::string &type : types) {
    if (type != "sliding_attention" && type != "full_attention")
      config.fail("layer_types must list \"sliding_attention\" or "
                  "\"full_attention\", got \"" + type + "\"");
    sliding.push_back(type == "sliding_attention");
  }
  if (types.empty())
    for (int64_t l = 0; l < layers && layers <= kMaxConfigSize; ++l)
      sliding.push_back((l + 1) % 6 != 0);
  if (int64_t(sliding.size()) != layers)
    config.fail("layer_types lists " + llvm::Twine(sliding.size()) +
                " layers, num_hidden_layers says " + llvm::Twine(layers));
  else if (!sliding.empty())
    sliding.back() = false;
  return sliding;
}

/// The layer whose keys and values layer `layer` (of the last ones, from
/// `firstShared` on) attends over: the last before `firstShared` of its
/// kind, as transformers picks it (llama.cpp's firstShared - 2 or - 1 is
/// the same for every published layout); -1 where there is none.
int64_t sharedKeysSource(const std::vector<bool> &sliding, int64_t firstShared,
                         int64_t layer) {
  for (int64_t s = firstShared - 1; s >= 0; --s)
    if (sliding[size_t(s)] == sliding[size_t(layer)])
      return s;
  return -1;
}

/// 26B-A4B's experts, which run beside each layer's dense MLP: the
/// config's counts (Gemma4TextConfig leaves them unset where
/// enable_moe_block is false, so they have no defaults) and the names the
/// experts' tensors have once prepareGemma4Checkpoint split them.
void readExperts(ConfigReader &config, DecoderSpec &spec,
                 const std::string &p) {
  spec.numExperts = config.positiveInteger("num_experts");
  spec.expertsPerToken = config.positiveInteger("top_k_experts");
  spec.expertSize = config.positiveInteger("moe_intermediate_size");
  if (spec.expertsPerToken > spec.numExperts)
    config.fail("config value top_k_experts (" +
                llvm::Twine(spec.expertsPerToken) + ") must be at most " +
                "num_experts (" + llvm::Twine(spec.numExperts) + ")");
  spec.expertsBesideMlp = true;
  LayerWeightNames &n = spec.layer;
  n.router = p + "router.proj.weight";
  n.routerNorm = p + kRouterNorm;
  n.expertScales = p + "router.per_expert_scale";
  n.expertGate = p + "experts.{e}.gate_proj.weight";
  n.expertUp = p + "experts.{e}.up_proj.weight";
  n.expertDown = p + "experts.{e}.down_proj.weight";
  n.expertsNorm = p + "pre_feedforward_layernorm_2.weight";
  n.postDenseMlpNorm = p + "post_feedforward_layernorm_1.weight";
  n.postExpertsNorm = p + "post_feedforward_layernorm_2.weight";
}

DecoderSpec readGemma4(ConfigReader &config, llvm::StringRef family,
                       const std::string &prefix) {
  DecoderSpec spec;
  spec.family = family.str();
  spec.vocabSize = config.integer("vocab_size", 262144);
  spec.hiddenSize = config.integer("hidden_size", 2304);
  spec.numLayers = config.integer("num_hidden_layers", 30);
  spec.numHeads = config.integer("num_attention_heads", 8);
  spec.numKVHeads = config.integer("num_key_value_heads", 4);
  spec.intermediateSize = config.integer("intermediate_size", 9216);
  spec.maxContext = config.integer("max_position_embeddings", 131072);
  spec.explicitHeadDim = config.positiveInteger("head_dim", 256);
  spec.rmsNorm = true;
  spec.normEpsilon = config.number("rms_norm_eps", 1e-6);
  spec.gatedMlp = true;
  spec.activation =
      config.activation("hidden_activation", "gelu_pytorch_tanh");
  spec.qkvBias = spec.outputBias = config.boolean("attention_bias", false);
  spec.embeddingScale = std::sqrt(double(spec.hiddenSize));
  // q_norm and k_norm set the scores' magnitude: they are not scaled.
  spec.attentionScale = 1.0;
  spec.logitSoftcap = config.positiveNumber("final_logit_softcapping", 0);
  spec.valueNorm = true;
  config.refuseUnlessAbsent("attn_logit_softcapping",
                            "Gemma 4 caps no attention scores");
  config.refuseUnlessAbsent("per_layer_config",
                            "tfmc derives each layer's shape from "
                            "layer_types");
  if (config.string("use_bidirectional_attention", "") == "all")
    config.fail("unsupported config value use_bidirectional_attention "
                "\"all\" (tfmc builds causal decoders)");

  useLlamaNames(config, spec, /*tiedByDefault=*/true, prefix);
  std::string p = prefix + "layers.{}.";
  LayerWeightNames &n = spec.layer;
  n.mlpNorm = p + "pre_feedforward_layernorm.weight";
  n.postAttentionNorm = p + "post_attention_layernorm.weight";
  n.postMlpNorm = p + "post_feedforward_layernorm.weight";
  n.queryNorm = p + "self_attn.q_norm.weight";
  n.keyNorm = p + "self_attn.k_norm.weight";
  n.layerScale = p + "layer_scalar";

  if (config.boolean("enable_moe_block", false))
    readExperts(config, spec, p);

  int64_t window = config.positiveInteger("sliding_window", 512);
  int64_t globalHeadDim = config.positiveInteger("global_head_dim", 512);
  bool keyIsValue = config.boolean("attention_k_eq_v", false);
  int64_t globalKVHeads =
      keyIsValue ? config.positiveInteger("num_global_key_value_heads",
                                          spec.numKVHeads)
                 : spec.numKVHeads;
  int64_t shared = config.integer("num_kv_shared_layers", 0);
  if (shared < 0 || shared > spec.numLayers)
    config.fail("config value num_kv_shared_layers must be 0 to " +
                llvm::Twine(spec.numLayers) + ", got " + llvm::Twine(shared));
  bool doubleWide = config.boolean("use_double_wide_mlp", false);
  const llvm::json::Object *rope = config.nested("rope_parameters");
  std::vector<bool> sliding = readSlidingLayers(config, spec.numLayers);
  int64_t firstShared = spec.numLayers - shared;
  for (int64_t l = 0; l < int64_t(sliding.size()); ++l) {
    LayerAttention shape;
    bool local = sliding[size_t(l)];
    shape.headDim = local ? spec.explicitHeadDim : globalHeadDim;
    shape.kvHeads = local ? spec.numKVHeads : globalKVHeads;
    shape.valueIsKey = keyIsValue && !local;
    readLayerRope(config, rope, local ? "sliding_attention" : "full_attention",
                  shape.headDim, spec.explicitHeadDim, shape);
    if (l >= firstShared && firstShared > 0) {
      shape.kvSource = sharedKeysSource(sliding, firstShared, l);
      if (shape.kvSource < 0)
        config.fail("layer " + llvm::Twine(l) +
                    " shares the keys and values of an earlier " +
                    (local ? "sliding" : "full") +
                    " layer (num_kv_shared_layers), but none is before it");
      if (doubleWide)
        shape.intermediate = 2 * spec.intermediateSize;
    }
    spec.layerAttention.push_back(std::move(shape));
    spec.layerWindows.push_back(local ? window : 0);
  }

  // Per-layer inputs (E2B, E4B); 0 or null: none (26B-A4B, 31B).
  const llvm::json::Value *perLayerField =
      config.raw().get("hidden_size_per_layer_input");
  int64_t perLayer =
      perLayerField && perLayerField->kind() == llvm::json::Value::Null
          ? 0
          : config.integer("hidden_size_per_layer_input", 256);
  if (perLayer < 0)
    config.fail("config value hidden_size_per_layer_input must be 0 or "
                "positive, got " + llvm::Twine(perLayer));
  if (perLayer > 0) {
    PerLayerInputSpec &per = spec.perLayerInput;
    per.size = perLayer;
    per.vocab = config.positiveInteger("vocab_size_per_layer_input", 262144);
    per.embedding = prefix + "embed_tokens_per_layer.weight";
    per.projection = prefix + "per_layer_model_projection.weight";
    per.projectionNorm = prefix + "per_layer_projection_norm.weight";
    n.perLayerGate = p + "per_layer_input_gate.weight";
    n.perLayerProjection = p + "per_layer_projection.weight";
    n.perLayerNorm = p + "post_per_layer_input_norm.weight";
  }
  return spec;
}

} // namespace

DecoderSpec mlir::tfm::readGemma4TextSpec(ConfigReader &config) {
  return readGemma4(config, "gemma4_text", textPrefix("gemma4_text"));
}

DecoderSpec mlir::tfm::readGemma4Spec(ConfigReader &config) {
  const llvm::json::Object *text = config.nested("text_config");
  if (!text) {
    config.fail("a gemma4 config needs its text model's text_config");
    return readGemma4(config, "gemma4", textPrefix("gemma4"));
  }
  // Its errors read "<config.json>: text_config: ...".
  ConfigReader reader(*text, "text_config");
  DecoderSpec spec = readGemma4(reader, "gemma4", textPrefix("gemma4"));
  // The outer config says whether the head is tied.
  if (!config.boolean("tie_word_embeddings", true) ||
      !reader.boolean("tie_word_embeddings", true))
    spec.lmHead = "lm_head.weight";
  if (llvm::Error err = reader.takeError())
    config.fail(llvm::toString(std::move(err)));
  spec.unreadTensorPrefixes = {"model.vision_tower.", "model.audio_tower.",
                               "model.embed_vision.", "model.embed_audio."};
  return spec;
}

namespace {

/// Each layer's layer_scalar into spec.layerScales, taken from `store`
/// (1 where absent and not `required`: llama.cpp's files may leave it
/// out), and the keys' and values' weights of the layers that share an
/// earlier layer's dropped.
llvm::Error readLayerScales(DecoderSpec &spec, WeightStore &store,
                            llvm::StringRef checkpoint, bool required) {
  const LayerWeightNames &n = spec.layer;
  spec.layerScales.clear();
  for (int64_t l = 0; l < spec.numLayers; ++l) {
    std::string name = layerWeightName(n.layerScale, l);
    if (!store.contains(name) && !required) {
      spec.layerScales.push_back(1.0);
      continue;
    }
    if (!store.contains(name))
      return makeError(checkpoint + ": missing tensor '" + name +
                       "' (Gemma 4's factor of the residual stream after "
                       "layer " + llvm::Twine(l) + ")");
    WeightTensor scale = store.take(name);
    std::vector<float> values = scale.toF32();
    if (values.size() != 1 || !std::isfinite(values[0]))
      return makeError(checkpoint + ": tensor '" + name +
                       "' must hold one finite number, got " +
                       llvm::Twine(values.size()) + " value(s)" +
                       (values.size() == 1 ? " that is not finite" : ""));
    spec.layerScales.push_back(values[0]);
    // A layer that reads an earlier layer's keys and values has none of
    // its own to read; transformers drops those its checkpoint keeps.
    if (spec.layerAttention[size_t(l)].kvSource >= 0)
      for (const std::string *pattern : {&n.key, &n.value, &n.keyNorm})
        if (std::string weight = layerWeightName(*pattern, l);
            store.contains(weight))
          (void)store.take(weight);
  }
  return llvm::Error::success();
}

/// The router's input norm of each layer: router.scale times hidden^-1/2
/// (`scale`, the checkpoint's name of the first), stored under
/// LayerWeightNames::routerNorm.
llvm::Error foldRouterScales(DecoderSpec &spec, WeightStore &store,
                             llvm::StringRef checkpoint,
                             const std::string &scale) {
  int64_t d = spec.hiddenSize;
  for (int64_t l = 0; l < spec.numLayers; ++l) {
    std::string name = layerWeightName(scale, l);
    if (std::optional<std::string> error = store.mismatch(
            checkpoint, name, {d}, spec.family + " config implies"))
      return makeError(*error);
    std::vector<float> gamma = store.take(name).toF32();
    for (float &g : gamma)
      g = float(double(g) / std::sqrt(double(d)));
    store.add(layerWeightName(spec.layer.routerNorm, l),
              WeightTensor::fromValues({d}, std::move(gamma), name));
  }
  return llvm::Error::success();
}

/// A GGUF file's experts' gate and up where they are one tensor an expert
/// (ffn_gate_up_exps, [2·I, hidden], gate the first I rows; stored in
/// blocks, a row is whole blocks): each half under the expert's gate and
/// up names. Files with ffn_gate_exps and ffn_up_exps have them already.
llvm::Error splitGateUpExperts(DecoderSpec &spec, WeightStore &store,
                               llvm::StringRef path) {
  int64_t d = spec.hiddenSize, f = spec.expertSize;
  const LayerWeightNames &n = spec.layer;
  for (int64_t l = 0; l < spec.numLayers; ++l)
    for (int64_t e = 0; e < spec.numExperts; ++e) {
      std::string fused = expertWeightName("blk.{}.ffn_gate_up_exps.{e}.weight",
                                           l, e);
      if (!store.contains(fused))
        continue;
      if (std::optional<std::string> error = store.mismatch(
              path, fused, {2 * f, d}, "the experts' metadata implies"))
        return makeError(*error);
      WeightTensor gateUp = store.take(fused);
      store.add(expertWeightName(n.expertGate, l, e),
                gateUp.selectRows(rowRange(0, f), {f, d}));
      store.add(expertWeightName(n.expertUp, l, e),
                gateUp.selectRows(rowRange(f, f), {f, d}));
    }
  return llvm::Error::success();
}

} // namespace

llvm::Error mlir::tfm::prepareGemma4Checkpoint(DecoderSpec &spec,
                                               WeightStore &store,
                                               llvm::StringRef checkpoint) {
  if (spec.expertsBesideMlp) {
    std::string prefix = textPrefix(spec.family);
    if (llvm::Error err = foldRouterScales(spec, store, checkpoint,
                                           prefix + "layers.{}.router.scale"))
      return err;
    // The layers' stacked experts (experts.gate_up_proj, gate the first
    // I rows of each expert's, as Gemma4TextExperts chunks them).
    for (int64_t l = 0; l < spec.numLayers; ++l) {
      std::string base = layerWeightName(prefix + "layers.{}.experts.", l);
      if (llvm::Error err =
              splitStackedExperts(spec, store, checkpoint, l,
                                  base + "gate_up_proj", base + "down_proj"))
        return err;
    }
  }
  return readLayerScales(spec, store, checkpoint, /*required=*/true);
}

namespace {

/// Metadata `name`, one integer for every layer or one a layer (llama.cpp
/// writes Gemma 4's head_count_kv and feed_forward_length either way): a
/// value a layer, each in [1, max].
llvm::Expected<std::vector<int64_t>> perLayerIntegers(const GgufFile &file,
                                                      const std::string &name,
                                                      int64_t layers,
                                                      int64_t max) {
  const GgufValue *value = file.lookup(name);
  if (value && value->kind == GgufValue::Kind::Array) {
    llvm::Expected<const GgufValue *> list = file.array(name, false);
    if (!list)
      return list.takeError();
    std::vector<int64_t> out;
    for (double number : (*list)->numbers) {
      if (!(number >= 1 && number <= double(max)) ||
          number != std::floor(number))
        return makeError(file.path() + ": metadata '" + name +
                         "' must list integers from 1 to " + llvm::Twine(max));
      out.push_back(int64_t(number));
    }
    if (int64_t(out.size()) != layers)
      return makeError(file.path() + ": metadata '" + name + "' lists " +
                       llvm::Twine(out.size()) + " layers, block_count is " +
                       llvm::Twine(layers));
    return out;
  }
  llvm::Expected<int64_t> one = file.integer(name, max);
  if (!one)
    return one.takeError();
  if (*one < 1)
    return makeError(file.path() + ": metadata '" + name + "' is 0");
  return std::vector<int64_t>(size_t(layers), *one);
}

} // namespace

llvm::Error mlir::tfm::readGgufGemma4(const GgufFile &file,
                                      llvm::StringRef key, DecoderSpec &spec) {
  constexpr int64_t kMaxWidth = 1 << 20, kMaxContext = 1 << 24;
  auto name = [&](llvm::StringRef field) { return (key + field).str(); };
  auto fail = [&](const llvm::Twine &what) {
    return makeError(file.path() + ": " + what);
  };
  int64_t layers = spec.numLayers;
  llvm::Expected<const GgufValue *> pattern =
      file.array(name("attention.sliding_window_pattern"), false);
  if (!pattern)
    return pattern.takeError();
  std::vector<bool> sliding;
  for (double flag : (*pattern)->numbers)
    sliding.push_back(flag != 0);
  if (int64_t(sliding.size()) != layers)
    return fail("metadata '" + name("attention.sliding_window_pattern") +
                "' lists " + llvm::Twine(sliding.size()) +
                " layers, block_count is " + llvm::Twine(layers));
  llvm::Expected<int64_t> window =
      file.integer(name("attention.sliding_window"), kMaxContext);
  llvm::Expected<int64_t> fullDim =
      file.integer(name("attention.key_length"), kMaxWidth);
  llvm::Expected<int64_t> slidingDim =
      file.integer(name("attention.key_length_swa"), kMaxWidth);
  llvm::Expected<std::optional<int64_t>> shared =
      file.optionalInteger(name("attention.shared_kv_layers"), layers);
  llvm::Expected<std::optional<int64_t>> perLayer = file.optionalInteger(
      name("embedding_length_per_layer_input"), kMaxWidth);
  llvm::Expected<std::optional<double>> slidingTheta =
      file.optionalReal(name("rope.freq_base_swa"));
  llvm::Expected<std::optional<double>> softcap =
      file.optionalReal(name("final_logit_softcapping"));
  llvm::Expected<std::vector<int64_t>> kvHeads = perLayerIntegers(
      file, name("attention.head_count_kv"), layers, spec.numHeads);
  llvm::Expected<std::vector<int64_t>> widths =
      perLayerIntegers(file, name("feed_forward_length"), layers, kMaxWidth);
  for (llvm::Expected<int64_t> *value : {&window, &fullDim, &slidingDim})
    if (!*value)
      return value->takeError();
  if (!shared) return shared.takeError();
  if (!perLayer) return perLayer.takeError();
  if (!slidingTheta) return slidingTheta.takeError();
  if (!softcap) return softcap.takeError();
  if (!kvHeads) return kvHeads.takeError();
  if (!widths) return widths.takeError();
  for (const char *field : {"rope.dimension_count", "rope.dimension_count_swa",
                            "attention.value_length",
                            "attention.value_length_swa"}) {
    bool swa = llvm::StringRef(field).ends_with("_swa");
    llvm::Expected<std::optional<int64_t>> size =
        file.optionalInteger(name(field), kMaxWidth);
    if (!size)
      return size.takeError();
    if (*size && **size != (swa ? *slidingDim : *fullDim))
      return fail("metadata '" + name(field) + "' is " + llvm::Twine(**size) +
                  ", not the head size " +
                  llvm::Twine(swa ? *slidingDim : *fullDim) +
                  " (tfmc reads Gemma 4 with every dimension of a head "
                  "rotated and values as wide as keys)");
  }
  if (*window <= 0 || *fullDim <= 0 || *slidingDim <= 0)
    return fail("metadata '" + name("attention.sliding_window") + "', '" +
                name("attention.key_length") + "' and '" +
                name("attention.key_length_swa") + "' must be positive");
  double localTheta = slidingTheta->value_or(10000.0);
  if (!(localTheta > 0) || !std::isfinite(localTheta))
    return fail("metadata '" + name("rope.freq_base_swa") +
                "' is not a positive number");
  spec.explicitHeadDim = *slidingDim;
  spec.rotaryDim = 0;
  spec.intermediateSize = (*widths)[0];
  spec.numKVHeads = (*kvHeads)[0];
  spec.attentionScale = 1.0;
  spec.valueNorm = true;
  spec.logitSoftcap = softcap->value_or(0);
  int64_t firstShared = layers - shared->value_or(0);
  for (int64_t l = 0; l < layers; ++l) {
    LayerAttention shape;
    bool local = sliding[size_t(l)];
    shape.headDim = local ? *slidingDim : *fullDim;
    shape.kvHeads = (*kvHeads)[size_t(l)];
    shape.intermediate = (*widths)[size_t(l)];
    shape.ropeTheta = local ? localTheta : spec.ropeTheta;
    // The full layers' factors (rope_freqs) divide these once the tensors
    // are read (prepareGgufGemma4).
    for (int64_t i = 0; i < shape.headDim / 2; ++i)
      shape.ropeFrequencies.push_back(float(
          std::pow(shape.ropeTheta, -2.0 * double(i) / double(shape.headDim))));
    if (l >= firstShared && firstShared > 0) {
      shape.kvSource = sharedKeysSource(sliding, firstShared, l);
      if (shape.kvSource < 0)
        return fail("layer " + llvm::Twine(l) +
                    " shares the keys and values of an earlier layer of its "
                    "kind (attention.shared_kv_layers), but none is before "
                    "it");
    }
    spec.layerAttention.push_back(std::move(shape));
    spec.layerWindows.push_back(local ? *window : 0);
  }
  LayerWeightNames &n = spec.layer;
  n.postAttentionNorm = "blk.{}.post_attention_norm.weight";
  n.postMlpNorm = "blk.{}.post_ffw_norm.weight";
  n.layerScale = "blk.{}.layer_output_scale.weight";
  // 26B-A4B's experts (expert_count, read with every architecture's) run
  // beside the dense MLP (llama.cpp's "shared expert"); the experts' gate
  // and up are one tensor (ffn_gate_up_exps), split by prepareGgufGemma4
  // into the names every architecture's experts have.
  if (spec.numExperts > 0) {
    spec.expertsBesideMlp = true;
    n.routerNorm = kGgufRouterNorm;
    n.expertScales = "blk.{}.ffn_down_exps.scale";
    n.expertsNorm = "blk.{}.pre_ffw_norm_2.weight";
    n.postDenseMlpNorm = "blk.{}.post_ffw_norm_1.weight";
    n.postExpertsNorm = "blk.{}.post_ffw_norm_2.weight";
  }
  if (perLayer->value_or(0) > 0) {
    PerLayerInputSpec &per = spec.perLayerInput;
    per.size = **perLayer;
    per.embedding = "per_layer_token_embd.weight";
    per.projection = "per_layer_model_proj.weight";
    per.projectionNorm = "per_layer_proj_norm.weight";
    n.perLayerGate = "blk.{}.inp_gate.weight";
    n.perLayerProjection = "blk.{}.proj.weight";
    n.perLayerNorm = "blk.{}.post_norm.weight";
  }
  return llvm::Error::success();
}

llvm::Error mlir::tfm::prepareGgufGemma4(const GgufFile &file,
                                         DecoderSpec &spec,
                                         WeightStore &weights) {
  // The full layers' proportional RoPE: the pairs that do not turn have
  // factor 1e30, so frequencies of about 1e-31 (transformers' exact 0
  // differs by less than 1e-24 a position).
  constexpr const char *kFactors = "rope_freqs.weight";
  if (const WeightTensor *factors = weights.lookup(kFactors)) {
    std::vector<float> values = factors->toF32();
    for (auto [l, shape] : llvm::enumerate(spec.layerAttention)) {
      if (spec.layerWindows[l] > 0)
        continue;
      if (values.size() != shape.ropeFrequencies.size())
        return makeError(file.path() + ": tensor '" + kFactors + "' has " +
                         llvm::Twine(values.size()) +
                         " factors, the full layers' heads have " +
                         llvm::Twine(shape.ropeFrequencies.size()) +
                         " pairs");
      for (auto [i, factor] : llvm::enumerate(values)) {
        if (!(factor > 0) || std::isinf(factor))
          return makeError(file.path() + ": " + kFactors + "[" +
                           llvm::Twine(i) + "] is not a positive number");
        shape.ropeFrequencies[i] /= factor;
      }
    }
  }
  // A layer with keys of its own and no value weight uses its key's
  // projection as its value (attention_k_eq_v).
  for (auto [l, shape] : llvm::enumerate(spec.layerAttention))
    shape.valueIsKey =
        shape.kvSource < 0 &&
        !weights.contains(layerWeightName(spec.layer.value, int64_t(l)));
  if (spec.expertsBesideMlp) {
    if (llvm::Error err = foldRouterScales(spec, weights, file.path(),
                                           "blk.{}.ffn_gate_inp.scale"))
      return err;
    if (llvm::Error err = splitGateUpExperts(spec, weights, file.path()))
      return err;
  }
  if (spec.perLayerInput.enabled()) {
    const WeightTensor *table = weights.lookup(spec.perLayerInput.embedding);
    if (!table || table->shape().size() != 2)
      return makeError(file.path() + ": tensor '" +
                       spec.perLayerInput.embedding +
                       "' (the per-layer inputs' table, [vocab, layers · "
                       "size]) is missing or not a matrix");
    spec.perLayerInput.vocab = table->shape()[0];
  }
  return readLayerScales(spec, weights, file.path(), /*required=*/false);
}
