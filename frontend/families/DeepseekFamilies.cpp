//===- DeepseekFamilies.cpp - DeepSeek's architecture and its router ------===//
//
// DeepSeek-V2 and V3's configs (transformers' DeepseekV3Config fields,
// which Kimi-K2 and Moonlight keep) as a DecoderSpec: multi-head latent
// attention (DecoderSpec::mla), YaRN with DeepSeek's softmax scale, dense
// leading layers, and experts chosen by DeepSeek's router (sigmoid or
// softmax scores, a selection bias, groups, a routed scale) beside shared
// experts; GLM-4.5's, whose grouped-query attention sits before the same
// router; and GGUF's deepseek2.
//
//===----------------------------------------------------------------------===//

#include "frontend/families/DeepseekFamilies.h"
#include "frontend/families/DecoderConfigReaders.h"
#include "frontend/formats/ErrorMessages.h"

#include <cmath>
#include <tuple>

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// DeepSeek scales the scores by 1/sqrt(q head dim), times the square of
/// YaRN's magnitude for mscale_all_dim where the config scales RoPE (the
/// queries and keys it rotates are not otherwise scaled: mscale /
/// mscale_all_dim is 1 in the published configs, and another ratio is
/// refused by validateDecoderSpec as a magnitude beside partial rotary).
double deepseekSoftmaxScale(ConfigReader &config, const DecoderSpec &spec) {
  double scale = 1.0 / std::sqrt(double(spec.mla.nopeDim + spec.mla.ropeDim));
  const llvm::json::Object *scaling = config.nested("rope_scaling");
  if (!scaling)
    return scale;
  ConfigReader fields(*scaling, "rope_scaling");
  double factor = fields.number("factor", 1.0);
  double mscaleAllDim = fields.number("mscale_all_dim", 0);
  if (mscaleAllDim > 0) {
    double magnitude = DecoderSpec::yarnMagnitude(factor, mscaleAllDim);
    scale *= magnitude * magnitude;
  }
  return scale;
}

/// The router: scoring_func (sigmoid for V3, softmax for V2), topk_method
/// (V3's noaux_tc adds e_score_correction_bias for the choice and picks
/// within the topk_group best of n_group groups; V2's greedy is a plain
/// top-k), routed_scaling_factor, norm_topk_prob; shared experts of
/// n_shared_experts · moe_intermediate_size.
/// The config defaults that differ between DeepSeek-V2, V3 and GLM-4.5's
/// routers: V3's sigmoid and selection bias (else V2's softmax and greedy
/// top-k), the groups where a config leaves them out (none: required), and
/// the shared experts.
struct RouterDefaults {
  bool v3;
  std::optional<int64_t> groups;
  int64_t sharedExperts;
};

void readDeepseekExperts(ConfigReader &config, DecoderSpec &spec,
                         RouterDefaults defaults) {
  bool v3 = defaults.v3;
  readExpertCounts(config, spec, "n_routed_experts", {0, 0});
  spec.expertSize = config.positiveInteger("moe_intermediate_size");
  spec.normalizeExpertWeights = config.boolean("norm_topk_prob", v3);
  spec.routedScale = config.number("routed_scaling_factor", 1.0);
  // DeepSeek-V2's own code scales only weights it does not renormalize.
  if (!v3 && spec.normalizeExpertWeights && spec.expertsPerToken > 1)
    spec.routedScale = 1.0;
  std::string scoring = config.string("scoring_func", v3 ? "sigmoid" : "softmax");
  if (scoring == "sigmoid")
    spec.routerScoring = RouterScoring::sigmoid;
  else if (scoring != "softmax")
    config.fail("unsupported config value scoring_func '" + scoring +
                "' (supported: softmax, sigmoid)");
  std::string mlp = "model.layers.{}.mlp.";
  std::string method = config.string("topk_method", v3 ? "noaux_tc" : "greedy");
  if (method == "noaux_tc") {
    spec.layer.routerBias = mlp + "gate.e_score_correction_bias";
    spec.expertGroups = config.positiveInteger("n_group", defaults.groups);
    spec.topExpertGroups = config.positiveInteger("topk_group", defaults.groups);
  } else if (method == "group_limited_greedy") {
    // Groups scored by their best expert, not DeepSeek-V3's best two: the
    // same as greedy only with one group.
    if (config.integer("n_group", 1) != 1)
      config.fail("unsupported config value topk_method "
                  "'group_limited_greedy' with n_group > 1 (DeepSeek-V2's "
                  "groups scored by their best expert)");
  } else if (method != "greedy") {
    config.fail("unsupported config value topk_method '" + method +
                "' (supported: greedy, noaux_tc, group_limited_greedy with "
                "one group)");
  }
  useExpertNames(spec, mlp, "gate_proj", "up_proj", "down_proj");
  int64_t shared = config.integer("n_shared_experts", defaults.sharedExperts);
  if (shared < 0)
    config.fail("config value n_shared_experts must be 0 or more");
  spec.sharedExpertSize = shared > 0 ? shared * spec.expertSize : 0;
  spec.layer.sharedGate = mlp + "shared_experts.gate_proj.weight";
  spec.layer.sharedUp = mlp + "shared_experts.up_proj.weight";
  spec.layer.sharedDown = mlp + "shared_experts.down_proj.weight";
  // The leading dense layers keep the dense MLP's names.
  spec.denseLayers = config.integer("first_k_dense_replace", 0);
  if (config.integer("moe_layer_freq", 1) != 1)
    config.fail("unsupported config value moe_layer_freq (tfmc reads experts "
                "in every layer after first_k_dense_replace: 1)");
  spec.layer.gate = mlp + "gate_proj.weight";
  spec.layer.up = mlp + "up_proj.weight";
  spec.layer.down = mlp + "down_proj.weight";
}

} // namespace

DecoderSpec mlir::tfm::readDeepseekSpec(ConfigReader &config) {
  DecoderSpec spec;
  spec.family = config.string("model_type", "deepseek_v3");
  bool v3 = spec.family != "deepseek_v2";
  readLlamaSizes(config, spec);
  // Every head reads the one latent row of a position.
  spec.numKVHeads = 1;
  spec.rmsNorm = true;
  spec.normEpsilon = config.number("rms_norm_eps", 1e-6);
  spec.gatedMlp = true;
  spec.activation = config.activation("hidden_act", "silu");
  config.refuseUnlessAbsent("quantization_config",
                            "FP8 block-scaled weights: convert them to bf16, "
                            "or use a GGUF file");
  config.refuseUnlessAbsent("attention_bias",
                            "biases on the query and latent projections");
  LatentAttentionSpec &mla = spec.mla;
  mla.queryRank = config.integer("q_lora_rank", 0);
  mla.latentRank = config.positiveInteger("kv_lora_rank");
  mla.nopeDim = config.positiveInteger("qk_nope_head_dim");
  mla.ropeDim = config.positiveInteger("qk_rope_head_dim");
  mla.valueDim = config.positiveInteger("v_head_dim");
  spec.explicitHeadDim = mla.nopeDim + mla.ropeDim;
  spec.rotaryDim = mla.ropeDim;
  // DeepSeek rotates pairs of adjacent dimensions; transformers' V3 port
  // reorders them first, which leaves every score the same.
  spec.ropeStyle = config.boolean("rope_interleave", true)
                       ? RopeStyle::interleaved
                       : RopeStyle::rotate_half;
  readRopeScaling(config, spec);
  spec.attentionScale = deepseekSoftmaxScale(config, spec);
  useLlamaNames(config, spec, /*tiedByDefault=*/false);
  std::string p = "model.layers.{}.self_attn.";
  LayerWeightNames &n = spec.layer;
  n.query = p + (mla.queryRank > 0 ? "q_b_proj.weight" : "q_proj.weight");
  if (mla.queryRank > 0) {
    n.queryDown = p + "q_a_proj.weight";
    n.queryDownNorm = p + "q_a_layernorm.weight";
  }
  n.latent = p + "kv_a_proj_with_mqa.weight";
  n.latentNorm = p + "kv_a_layernorm.weight";
  // Made of kv_b_proj by prepareDeepseekCheckpoint.
  n.keyAbsorb = p + "k_absorb.weight";
  n.valueUp = p + "v_up.weight";
  n.key = n.value = "";
  // Kept for speculative decoding; not part of the model's forward pass.
  spec.predictionLayers = config.integer("num_nextn_predict_layers", 0);
  const llvm::json::Value *routed = config.raw().get("n_routed_experts");
  if (routed && routed->kind() != llvm::json::Value::Null)
    readDeepseekExperts(config, spec, {v3, std::nullopt, 0});
  return spec;
}

DecoderSpec mlir::tfm::readGlm4MoeSpec(ConfigReader &config) {
  DecoderSpec spec;
  spec.family = "glm4_moe";
  readLlamaSizes(config, spec);
  readHeadDim(config, spec);
  spec.rmsNorm = true;
  spec.normEpsilon = config.number("rms_norm_eps", 1e-5);
  spec.gatedMlp = true;
  spec.activation = config.activation("hidden_act", "silu");
  spec.qkvBias = config.boolean("attention_bias", false);
  readPartialRotary(config, "partial_rotary_factor", 0.5, spec);
  readRopeScaling(config, spec);
  useLlamaNames(config, spec, /*tiedByDefault=*/false);
  if (config.boolean("use_qk_norm", false)) {
    spec.layer.queryNorm = "model.layers.{}.self_attn.q_norm.weight";
    spec.layer.keyNorm = "model.layers.{}.self_attn.k_norm.weight";
  }
  spec.predictionLayers = config.integer("num_nextn_predict_layers", 0);
  readDeepseekExperts(config, spec, {/*v3=*/true, /*groups=*/1, 1});
  return spec;
}

llvm::Error mlir::tfm::prepareDeepseekCheckpoint(DecoderSpec &spec,
                                                 WeightStore &store,
                                                 llvm::StringRef checkpoint) {
  const LatentAttentionSpec &mla = spec.mla;
  int64_t heads = spec.numHeads, perHead = mla.nopeDim + mla.valueDim;
  std::string what = spec.family + " config implies";
  for (int64_t l = 0; l < spec.numLayers; ++l) {
    std::string base = layerWeightName("model.layers.{}.self_attn.", l);
    std::string name = base + "kv_b_proj.weight";
    if (std::optional<std::string> error = store.mismatch(
            checkpoint, name, {heads * perHead, mla.latentRank}, what))
      return makeError(*error);
    WeightTensor t = store.take(name);
    if (checkpointBlockElements(t.dtype()) != 1)
      return makeError(checkpoint + ": " + name + " is stored as " +
                       checkpointName(t.dtype()) +
                       " blocks, which cannot be split per head");
    store.add(base + "k_absorb.weight",
              t.transposeRowBlocks(perHead, 0, mla.nopeDim));
    std::vector<int64_t> keyRows, valueRows;
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < perHead; ++i)
        (i < mla.nopeDim ? keyRows : valueRows).push_back(h * perHead + i);
    store.add(base + "k_up.weight",
              t.selectRows(std::move(keyRows),
                           {heads * mla.nopeDim, mla.latentRank}));
    store.add(base + "v_up.weight",
              t.selectRows(std::move(valueRows),
                           {heads * mla.valueDim, mla.latentRank}));
  }
  spec.layer.keyUp = "model.layers.{}.self_attn.k_up.weight";
  return llvm::Error::success();
}

void mlir::tfm::prepareGgufLatentAttention(DecoderSpec &spec,
                                           WeightStore &store) {
  const LatentAttentionSpec &mla = spec.mla;
  int64_t heads = spec.numHeads, rank = mla.latentRank, nope = mla.nopeDim;
  const std::string keyUp = "blk.{}.attn_k_up.weight";
  for (int64_t l = 0; l < spec.numLayers; ++l) {
    const WeightTensor *absorbed =
        store.lookup(layerWeightName(spec.layer.keyAbsorb, l));
    // A file without attn_k_b (or of another shape) keeps the absorbed
    // form alone; the builder names what is wrong with it.
    if (!absorbed ||
        absorbed->shape() != std::vector<int64_t>{heads * rank, nope})
      return;
  }
  for (int64_t l = 0; l < spec.numLayers; ++l) {
    const WeightTensor &absorbed =
        *store.lookup(layerWeightName(spec.layer.keyAbsorb, l));
    std::string source = "transposed heads of " + absorbed.source();
    if (checkpointBlockElements(absorbed.dtype()) == 1) {
      store.add(layerWeightName(keyUp, l),
                absorbed.transposeRowBlocks(rank, 0, rank));
      continue;
    }
    // Blocks run along a head's nope columns, which the transpose turns
    // into rows: the values are widened to f32 instead.
    std::vector<float> stored = absorbed.toF32(), up(stored.size());
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t r = 0; r < rank; ++r)
        for (int64_t j = 0; j < nope; ++j)
          up[(h * nope + j) * rank + r] = stored[(h * rank + r) * nope + j];
    store.add(
        layerWeightName(keyUp, l),
        WeightTensor::fromValues({heads * nope, rank}, std::move(up), source));
  }
  spec.layer.keyUp = keyUp;
}

namespace {

/// Metadata `key` + `name`, an integer at most `max`, into `out` (nullopt
/// where the file leaves it out).
llvm::Error readOptionalInteger(const GgufFile &file, llvm::StringRef key,
                                const char *name, int64_t max,
                                std::optional<int64_t> &out) {
  llvm::Expected<std::optional<int64_t>> value =
      file.optionalInteger((key + name).str(), max);
  if (!value)
    return value.takeError();
  out = *value;
  return llvm::Error::success();
}

/// DeepSeek's router as llama.cpp reads it (deepseek2, glm4moe):
/// leading_dense_block_count dense layers, expert_shared_count shared
/// experts (ffn_*_shexp, ungated), expert_gating_func (1 softmax, 2
/// sigmoid; `gating` where the file does not say), exp_probs_b where the
/// file has it, groups, and the chosen weights renormalized
/// (expert_weights_norm) and scaled (expert_weights_scale, 0: none).
llvm::Error readGgufDeepseekRouter(const GgufFile &file, llvm::StringRef key,
                                   DecoderSpec &spec, RouterScoring gating) {
  constexpr int64_t kMaxCount = 1 << 16;
  std::optional<int64_t> denseLayers, shared, function, groups, topGroups,
      norm;
  for (auto [name, max, out] :
       {std::tuple<const char *, int64_t, std::optional<int64_t> *>{
            "leading_dense_block_count", kMaxCount, &denseLayers},
        {"expert_shared_count", kMaxCount, &shared},
        {"expert_gating_func", 2, &function},
        {"expert_group_count", kMaxCount, &groups},
        {"expert_group_used_count", kMaxCount, &topGroups},
        {"expert_weights_norm", 1, &norm}})
    if (llvm::Error err = readOptionalInteger(file, key, name, max, *out))
      return err;
  spec.denseLayers = denseLayers.value_or(0);
  if (spec.numExperts == 0)
    return llvm::Error::success();
  if (function)
    gating = *function == 2 ? RouterScoring::sigmoid : RouterScoring::softmax;
  spec.routerScoring = gating;
  spec.normalizeExpertWeights = norm.value_or(0) != 0;
  llvm::Expected<std::optional<double>> weightsScale =
      file.optionalReal((key + "expert_weights_scale").str());
  if (!weightsScale)
    return weightsScale.takeError();
  if (weightsScale->value_or(0) != 0)
    spec.routedScale = **weightsScale;
  if (groups.value_or(0) > 1) {
    spec.expertGroups = *groups;
    spec.topExpertGroups = topGroups.value_or(0);
  }
  std::string blk = "blk.{}.";
  LayerWeightNames &n = spec.layer;
  for (const GgufTensor &tensor : file.tensors())
    if (llvm::StringRef(tensor.name).ends_with(".exp_probs_b.bias"))
      n.routerBias = blk + "exp_probs_b.bias";
  spec.sharedExpertSize = shared.value_or(0) * spec.expertSize;
  n.sharedGate = blk + "ffn_gate_shexp.weight";
  n.sharedUp = blk + "ffn_up_shexp.weight";
  n.sharedDown = blk + "ffn_down_shexp.weight";
  n.sharedExpertGate = "";
  // The dense leading layers' MLP.
  n.gate = blk + "ffn_gate.weight";
  n.up = blk + "ffn_up.weight";
  n.down = blk + "ffn_down.weight";
  return llvm::Error::success();
}

/// Whether the file has tensor `name`.
bool hasTensor(const GgufFile &file, llvm::StringRef name) {
  return llvm::any_of(file.tensors(), [&](const GgufTensor &tensor) {
    return tensor.name == name;
  });
}

} // namespace

llvm::Error mlir::tfm::readGgufGlm4Moe(const GgufFile &file,
                                       llvm::StringRef key, DecoderSpec &spec) {
  // The MLP's input norm is post_attention_norm (llama.cpp's attn_post_norm);
  // Q and K norms where the file has them (not GLM-4.5's 355B model).
  spec.layer.mlpNorm = "blk.{}.post_attention_norm.weight";
  if (hasTensor(file, "blk.0.attn_q_norm.weight")) {
    spec.layer.queryNorm = "blk.{}.attn_q_norm.weight";
    spec.layer.keyNorm = "blk.{}.attn_k_norm.weight";
  }
  return readGgufDeepseekRouter(file, key, spec, RouterScoring::sigmoid);
}

llvm::Error mlir::tfm::readGgufLatentAttention(const GgufFile &file,
                                               llvm::StringRef key,
                                               DecoderSpec &spec) {
  constexpr int64_t kMaxWidth = 1 << 20;
  std::optional<int64_t> queryRank, latentRank, keyWidth, valueWidth;
  for (auto [name, out] :
       {std::pair<const char *, std::optional<int64_t> *>{
            "attention.q_lora_rank", &queryRank},
        {"attention.kv_lora_rank", &latentRank},
        {"attention.key_length_mla", &keyWidth},
        {"attention.value_length_mla", &valueWidth}})
    if (llvm::Error err = readOptionalInteger(file, key, name, kMaxWidth, *out))
      return err;
  auto fail = [&](const llvm::Twine &what) {
    return makeError(file.path() + ": " + what);
  };
  if (!latentRank || *latentRank == 0)
    return fail("metadata '" + key + "attention.kv_lora_rank' is missing");
  if (!keyWidth || !valueWidth)
    return fail("a deepseek2 file without attention.key_length_mla and "
                "value_length_mla (its attn_kv_b unsplit) is not supported: "
                "convert the model again with a current llama.cpp");
  int64_t rope = spec.rotaryDim;
  if (rope <= 0 || rope >= *keyWidth)
    return fail("rope.dimension_count (" + llvm::Twine(rope) +
                ") must be positive and below key_length_mla (" +
                llvm::Twine(*keyWidth) + ")");
  llvm::Expected<std::optional<double>> temperature =
      file.optionalReal((key + "attention.temperature_scale").str());
  if (!temperature)
    return temperature.takeError();
  if (*temperature && **temperature != 0)
    return fail("attention temperature scaling (attention.temperature_scale, "
                "Mistral Large's) is not supported");
  LatentAttentionSpec &mla = spec.mla;
  mla.queryRank = queryRank.value_or(0);
  mla.latentRank = *latentRank;
  mla.nopeDim = *keyWidth - rope;
  mla.ropeDim = rope;
  mla.valueDim = *valueWidth;
  mla.normEpsilon = spec.normEpsilon;
  spec.explicitHeadDim = *keyWidth;
  spec.numKVHeads = 1;
  // llama.cpp's kq_scale: (1 + 0.1 mscale_all_dim ln(factor))^2 /
  // sqrt(q head dim), where the file's yarn_log_multiplier is 0.1
  // mscale_all_dim; its RoPE cancels YaRN's own magnitude.
  double scale = 1.0 / std::sqrt(double(*keyWidth));
  llvm::Expected<std::optional<double>> logMultiplier =
      file.optionalReal((key + "rope.scaling.yarn_log_multiplier").str());
  llvm::Expected<std::optional<double>> factor =
      file.optionalReal((key + "rope.scaling.factor").str());
  if (!logMultiplier)
    return logMultiplier.takeError();
  if (!factor)
    return factor.takeError();
  if (logMultiplier->value_or(0) != 0) {
    double magnitude = DecoderSpec::yarnMagnitude(factor->value_or(1),
                                                  **logMultiplier / 0.1);
    scale *= magnitude * magnitude;
  }
  spec.attentionScale = scale;
  std::string blk = "blk.{}.";
  LayerWeightNames &n = spec.layer;
  n.query = blk + (mla.queryRank > 0 ? "attn_q_b.weight" : "attn_q.weight");
  if (mla.queryRank > 0) {
    n.queryDown = blk + "attn_q_a.weight";
    n.queryDownNorm = blk + "attn_q_a_norm.weight";
  }
  n.latent = blk + "attn_kv_a_mqa.weight";
  n.latentNorm = blk + "attn_kv_a_norm.weight";
  n.keyAbsorb = blk + "attn_k_b.weight";
  n.valueUp = blk + "attn_v_b.weight";
  n.key = n.value = "";
  return readGgufDeepseekRouter(file, key, spec, RouterScoring::softmax);
}
