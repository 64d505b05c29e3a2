//===- LatentAttentionFamilies.cpp - DeepSeek's MLA decoders --------------===//
//
// DeepSeek-V2 and V3's configs (transformers' DeepseekV3Config fields,
// which Kimi-K2 and Moonlight keep) as a DecoderSpec: multi-head latent
// attention (DecoderSpec::mla), YaRN with DeepSeek's softmax scale, dense
// leading layers, and experts chosen by DeepSeek's router (sigmoid or
// softmax scores, a selection bias, groups, a routed scale) beside shared
// experts.
//
//===----------------------------------------------------------------------===//

#include "frontend/families/LatentAttentionFamilies.h"
#include "frontend/ErrorMessages.h"
#include "frontend/families/DecoderConfigReaders.h"

#include <cmath>

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
void readDeepseekExperts(ConfigReader &config, DecoderSpec &spec, bool v3) {
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
    spec.expertGroups = config.positiveInteger("n_group");
    spec.topExpertGroups = config.positiveInteger("topk_group");
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
  int64_t shared = config.integer("n_shared_experts", 0);
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
  if (config.raw().get("n_routed_experts") &&
      config.raw().get("n_routed_experts")->kind() != llvm::json::Value::Null)
    readDeepseekExperts(config, spec, v3);
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
    if (dtypeBlockElements(t.dtype()) != 1)
      return makeError(checkpoint + ": " + name + " is stored as " +
                       dtypeName(t.dtype()) +
                       " blocks, which cannot be split per head");
    store.add(base + "k_absorb.weight",
              t.transposeRowBlocks(perHead, 0, mla.nopeDim));
    std::vector<int64_t> valueRows;
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = mla.nopeDim; i < perHead; ++i)
        valueRows.push_back(h * perHead + i);
    store.add(base + "v_up.weight",
              t.selectRows(std::move(valueRows),
                           {heads * mla.valueDim, mla.latentRank}));
  }
  return llvm::Error::success();
}
