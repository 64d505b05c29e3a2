//===- DecoderConfigReaders.cpp - config fields decoder families share ----===//
//
// The parts of config.json that several decoder families name alike:
// LLaMA's sizes and checkpoint names, partial rotary, RoPE scaling
// (linear, dynamic NTK, Llama 3's bands, LongRoPE, YaRN) and a mixture of
// experts' counts and names. The families' readers (DecoderFamilies.cpp,
// DeepseekFamilies.cpp) compose them.
//
//===----------------------------------------------------------------------===//

#include "frontend/families/DecoderConfigReaders.h"
#include "frontend/formats/ErrorMessages.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;

/// The sizes every LLaMA-like config names the same way.
void mlir::tfm::readLlamaSizes(ConfigReader &config, DecoderSpec &spec) {
  spec.vocabSize = config.integer("vocab_size");
  spec.hiddenSize = config.integer("hidden_size");
  spec.numLayers = config.integer("num_hidden_layers");
  spec.numHeads = config.integer("num_attention_heads");
  spec.numKVHeads = config.integer("num_key_value_heads", spec.numHeads);
  spec.intermediateSize = config.integer("intermediate_size");
  spec.maxContext = config.integer("max_position_embeddings");
  spec.ropeTheta = config.number("rope_theta", 10000.0);
  spec.ropeStyle = RopeStyle::rotate_half;
}

void mlir::tfm::readHeadDim(ConfigReader &config, DecoderSpec &spec) {
  if (spec.numHeads > 0)
    spec.explicitHeadDim =
        config.positiveInteger("head_dim", spec.hiddenSize / spec.numHeads);
}

/// LLaMA's checkpoint names: model.layers.N.{input_layernorm, self_attn.
/// {q,k,v,o}_proj, post_attention_layernorm, mlp.{up,gate,down}_proj}.
void mlir::tfm::useLlamaNames(ConfigReader &config, DecoderSpec &spec,
                              bool tiedByDefault, const std::string &prefix) {
  spec.tokenEmbedding = prefix + "embed_tokens.weight";
  spec.finalNorm = prefix + "norm.weight";
  bool tied = config.boolean("tie_word_embeddings", tiedByDefault);
  spec.lmHead = tied ? "" : "lm_head.weight";
  std::string p = prefix + "layers.{}.";
  spec.layer = {p + "input_layernorm.weight",  p + "self_attn.q_proj.weight",
                p + "self_attn.k_proj.weight", p + "self_attn.v_proj.weight",
                p + "self_attn.o_proj.weight",
                p + "post_attention_layernorm.weight",
                p + "mlp.up_proj.weight",      p + "mlp.gate_proj.weight",
                p + "mlp.down_proj.weight"};
}

/// Partial rotary: `factor` of each head's dimensions rotate, rounded down
/// as the reference does (int(head_dim * factor)).
void mlir::tfm::readPartialRotary(ConfigReader &config, llvm::StringRef key,
                       double fallback, DecoderSpec &spec) {
  double factor = config.number(key, fallback);
  if (!(factor > 0 && factor <= 1)) {
    config.fail("config value " + key + " must be in (0, 1], got " +
                std::to_string(factor));
    return;
  }
  if (spec.numHeads > 0)
    spec.rotaryDim = int64_t(spec.headDim() * factor);
}

namespace {

/// Phi-3's LongRoPE ("longrope", earlier "su"): each inverse frequency
/// divided by its short_factor (rows within original_max_position_embeddings)
/// or its long_factor (rows past it), cos and sin multiplied by
/// sqrt(1 + ln(s) / ln(original)) where s = max_position_embeddings /
/// original > 1 (transformers 4.41's Phi3LongRoPEScaledRotaryEmbedding).
/// `inverse` becomes the short frequencies.
void readLongRope(ConfigReader &config, ConfigReader &fields,
                  std::vector<double> &inverse, DecoderSpec &spec) {
  int64_t original =
      config.integer("original_max_position_embeddings",
                     fields.integer("original_max_position_embeddings", 0));
  if (original <= 0)
    config.fail("rope_scaling longrope needs a positive "
                "original_max_position_embeddings");
  for (const char *key : {"short_mscale", "long_mscale"})
    fields.refuseUnlessAbsent(key, "LongRoPE magnitudes of its own");
  std::vector<double> longer = inverse;
  for (auto [key, frequencies] :
       {std::pair<const char *, std::vector<double> *>{"short_factor",
                                                       &inverse},
        {"long_factor", &longer}}) {
    const llvm::json::Array *factors = fields.fields().getArray(key);
    if (!factors || factors->size() != frequencies->size()) {
      config.fail("rope_scaling " + llvm::Twine(key) + " must list " +
                  llvm::Twine(frequencies->size()) +
                  " numbers (one per rotated pair)");
      return;
    }
    for (size_t i = 0; i < factors->size(); ++i) {
      std::optional<double> factor = (*factors)[i].getAsNumber();
      if (!factor || !(*factor > 0) || std::isinf(*factor)) {
        config.fail("rope_scaling " + llvm::Twine(key) +
                    " must hold positive numbers");
        return;
      }
      (*frequencies)[i] /= *factor;
    }
  }
  spec.ropeLongFrequencies.assign(longer.begin(), longer.end());
  spec.ropeLongContext = original;
  double scale = original > 0 ? double(spec.maxContext) / double(original) : 1;
  if (scale > 1)
    spec.ropeMagnitude =
        std::sqrt(1 + std::log(scale) / std::log(double(original)));
}

/// YaRN (transformers' _compute_yarn_parameters as of its v5, which
/// gpt-oss, DeepSeek-V3 and Qwen3's long-context configs use): the
/// frequencies blended by band (DecoderSpec::yarnFrequencies) and cos and
/// sin multiplied by attention_factor, else mscale / mscale_all_dim's
/// ratio of 0.1 ln(factor) mscale + 1, else 0.1 ln(factor) + 1. factor is
/// the config's (transformers 4.4x's took max_position_embeddings /
/// original_max_position_embeddings over it where both were given; v5
/// does only where factor is missing, as here).
void readYarn(ConfigReader &config, ConfigReader &fields,
              std::vector<double> &inverse, DecoderSpec &spec) {
  double original = fields.number("original_max_position_embeddings",
                                  double(spec.maxContext));
  double factor = fields.number(
      "factor", original > 0 ? double(spec.maxContext) / original : 0);
  double betaFast = fields.number("beta_fast", 32.0);
  double betaSlow = fields.number("beta_slow", 1.0);
  if (!(original > 0) || !(factor >= 1) || !(betaFast > 0) ||
      !(betaSlow > 0) || !std::isfinite(factor + original + betaFast + betaSlow)) {
    config.fail("rope_scaling yarn needs factor >= 1 and positive "
                "original_max_position_embeddings, beta_fast and beta_slow");
    return;
  }
  double mscale = fields.number("mscale", 0),
         mscaleAllDim = fields.number("mscale_all_dim", 0);
  double attention = fields.number(
      "attention_factor",
      mscale != 0 && mscaleAllDim != 0
          ? DecoderSpec::yarnMagnitude(factor, mscale) /
                DecoderSpec::yarnMagnitude(factor, mscaleAllDim)
          : DecoderSpec::yarnMagnitude(factor));
  if (!(attention > 0) || !std::isfinite(attention)) {
    config.fail("rope_scaling yarn needs a positive attention factor");
    return;
  }
  inverse = spec.yarnFrequencies(factor, original, betaFast, betaSlow,
                                 fields.boolean("truncate", true));
  spec.ropeMagnitude = attention;
}

} // namespace

/// rope_scaling: "linear" (positions divided by the factor: every
/// frequency is), "dynamic" (NTK: the base grows with the sequence past
/// max_position_embeddings, which --max-context may then exceed),
/// "llama3" (frequencies scaled by band) and "yarn".
void mlir::tfm::readRopeScaling(ConfigReader &config, DecoderSpec &spec) {
  const llvm::json::Object *scaling = config.nested("rope_scaling");
  if (!scaling || spec.numHeads <= 0)
    return;
  // Its messages read "rope_scaling: ..." after the config's path.
  ConfigReader fields(*scaling, "rope_scaling");
  std::string type = fields.string("rope_type", fields.string("type", ""));
  double factor = fields.number("factor", 1.0);
  if (!(factor >= 1))
    config.fail("rope_scaling factor must be at least 1, got " +
                std::to_string(factor));
  int64_t rotary = spec.rotaryDims();
  std::vector<double> inverse = spec.inverseFrequencies();
  bool keepsTheta = false;
  if (type == "linear") {
    for (double &f : inverse)
      f /= factor;
  } else if (type == "dynamic") {
    keepsTheta = true;
    spec.ropeNtkFactor = factor;
    spec.ropeNtkContext = spec.maxContext;
    if (rotary <= 2)
      config.fail("rope_scaling dynamic needs more than 2 rotary dimensions, "
                  "got " + std::to_string(rotary));
  } else if (type == "llama3") {
    double low = fields.number("low_freq_factor", 1.0);
    double high = fields.number("high_freq_factor", 4.0);
    double original =
        fields.number("original_max_position_embeddings", 8192.0);
    if (!(high > low && low > 0 && original > 0))
      config.fail("rope_scaling llama3 needs high_freq_factor > "
                  "low_freq_factor > 0 and original_max_position_embeddings "
                  "> 0");
    double lowWavelength = original / low, highWavelength = original / high;
    for (double &f : inverse) {
      double wavelength = 2 * M_PI / f;
      if (wavelength > lowWavelength) {
        f /= factor;
      } else if (wavelength >= highWavelength) {
        double smooth = (original / wavelength - low) / (high - low);
        f = (1 - smooth) * f / factor + smooth * f;
      }
    }
  } else if (type == "longrope" || type == "su") {
    readLongRope(config, fields, inverse, spec);
  } else if (type == "yarn") {
    readYarn(config, fields, inverse, spec);
  } else {
    config.fail("unsupported config value rope_scaling type '" + type +
                "' (supported: linear, dynamic, llama3, longrope, yarn)");
  }
  // Malformed fields count for every type, "dynamic" included.
  if (llvm::Error err = fields.takeError())
    config.fail(llvm::toString(std::move(err)));
  if (!keepsTheta)
    spec.ropeFrequencies.assign(inverse.begin(), inverse.end());
}

/// Experts in place of the dense MLP: the router `block` + "gate.weight"
/// and each expert's projections `block` + "experts.{e}." + gate, up and
/// down + ".weight" (Mixtral's w1, w3, w2).
void mlir::tfm::useExpertNames(DecoderSpec &spec, const std::string &block,
                    const char *gate, const char *up, const char *down) {
  std::string expert = block + "experts.{e}.";
  spec.layer.router = block + "gate.weight";
  spec.layer.expertGate = expert + gate + ".weight";
  spec.layer.expertUp = expert + up + ".weight";
  spec.layer.expertDown = expert + down + ".weight";
  spec.layer.gate = spec.layer.up = spec.layer.down = "";
}


/// How many experts a layer has (`expertsKey`: Mixtral's
/// num_local_experts, the others' num_experts) and how many each token goes
/// through (num_experts_per_tok), both positive, the second at most the
/// first: a count of 0 would otherwise leave a layer with no MLP at all.
void mlir::tfm::readExpertCounts(ConfigReader &config, DecoderSpec &spec,
                      llvm::StringRef expertsKey,
                      ExpertCountDefaults defaults) {
  spec.numExperts = config.positiveInteger(expertsKey, defaults.experts);
  spec.expertsPerToken =
      config.positiveInteger("num_experts_per_tok", defaults.perToken);
  if (spec.expertsPerToken > spec.numExperts)
    config.fail("config value num_experts_per_tok (" +
                llvm::Twine(spec.expertsPerToken) + ") must be at most " +
                expertsKey + " (" + llvm::Twine(spec.numExperts) + ")");
}

bool mlir::tfm::readLayerTypes(ConfigReader &config, DecoderSpec &spec,
                               int64_t window) {
  std::vector<std::string> types = config.strings("layer_types");
  for (const std::string &type : types) {
    if (type != "sliding_attention" && type != "full_attention")
      config.fail("layer_types must list \"sliding_attention\" or "
                  "\"full_attention\", got \"" +
                  type + "\"");
    spec.layerWindows.push_back(type == "sliding_attention" ? window : 0);
  }
  return !types.empty();
}

llvm::Error mlir::tfm::splitStackedExperts(const DecoderSpec &spec,
                                           WeightStore &store,
                                           llvm::StringRef checkpoint,
                                           int64_t layer,
                                           const std::string &gateUpName,
                                           const std::string &downName) {
  int64_t e = spec.numExperts, f = spec.expertSize, d = spec.hiddenSize;
  for (auto [name, shape] :
       {std::pair<const std::string &, std::vector<int64_t>>{gateUpName,
                                                             {e, 2 * f, d}},
        {downName, {e, d, f}}})
    if (std::optional<std::string> error =
            store.mismatch(checkpoint, name, shape,
                           "the " + spec.family + " config implies"))
      return makeError(*error);
  WeightTensor both = store.take(gateUpName).mergeLeadingDims();
  WeightTensor downs = store.take(downName).mergeLeadingDims();
  // Rows [first, first + count) of the merged [E * rows, cols] view.
  auto rows = [](int64_t first, int64_t count) {
    std::vector<int64_t> list;
    for (int64_t i = 0; i < count; ++i)
      list.push_back(first + i);
    return list;
  };
  const LayerWeightNames &n = spec.layer;
  for (int64_t expert = 0; expert < e; ++expert) {
    store.add(expertWeightName(n.expertGate, layer, expert),
              both.selectRows(rows(expert * 2 * f, f), {f, d}));
    store.add(expertWeightName(n.expertUp, layer, expert),
              both.selectRows(rows(expert * 2 * f + f, f), {f, d}));
    store.add(expertWeightName(n.expertDown, layer, expert),
              downs.selectRows(rows(expert * d, d), {d, f}));
  }
  return llvm::Error::success();
}
