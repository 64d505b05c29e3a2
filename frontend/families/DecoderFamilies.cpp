//===- DecoderFamilies.cpp - Hugging Face decoder model_types -----------===//
//
// One reader per family (see DecoderFamilies.h). Most are LLaMA's layout
// with a few switches; each refuses, by name, the config values it does not
// implement rather than ignoring them.
//
//===----------------------------------------------------------------------===//

#include "frontend/families/DecoderFamilies.h"
#include "frontend/families/DecoderConfigReaders.h"
#include "frontend/families/DeepseekFamilies.h"
#include "frontend/families/FamilyTable.h"
#include "frontend/families/Gemma4Family.h"
#include "frontend/families/GptOssFamily.h"
#include "frontend/families/QwenHybridFamilies.h"
#include "frontend/formats/ErrorMessages.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;

namespace {

DecoderSpec readLlamaSpec(ConfigReader &config) {
  DecoderSpec spec;
  spec.family = "llama";
  readLlamaSizes(config, spec);
  spec.rmsNorm = true;
  spec.normEpsilon = config.number("rms_norm_eps", 1e-6);
  spec.gatedMlp = true;
  spec.activation = config.activation("hidden_act", "silu");
  spec.qkvBias = spec.outputBias = config.boolean("attention_bias", false);
  spec.mlpBias = config.boolean("mlp_bias", false);
  if (spec.numHeads > 0) {
    int64_t headDim =
        config.positiveInteger("head_dim", spec.hiddenSize / spec.numHeads);
    if (headDim != spec.hiddenSize / spec.numHeads)
      config.fail("unsupported config value head_dim = " +
                  llvm::Twine(headDim) + " (must be hidden_size / "
                                         "num_attention_heads)");
  }
  readRopeScaling(config, spec);
  useLlamaNames(config, spec, /*tiedByDefault=*/false);
  return spec;
}

/// Qwen2: LLaMA with biases on Q, K and V (not on the output).
DecoderSpec readQwen2Spec(ConfigReader &config) {
  DecoderSpec spec = readLlamaSpec(config);
  spec.family = "qwen2";
  spec.qkvBias = true;
  spec.outputBias = false;
  if (config.boolean("use_sliding_window", false))
    config.fail("unsupported config value 'use_sliding_window' = true "
                "(Qwen2's per-layer windows)");
  return spec;
}

/// Qwen3: LLaMA with a head size of its own, an RMSNorm over each head of Q
/// and K after their projections (q_norm, k_norm, before RoPE) and no
/// biases unless attention_bias.
DecoderSpec readQwen3Spec(ConfigReader &config) {
  DecoderSpec spec;
  spec.family = "qwen3";
  readLlamaSizes(config, spec);
  readHeadDim(config, spec);
  spec.rmsNorm = true;
  spec.normEpsilon = config.number("rms_norm_eps", 1e-6);
  spec.gatedMlp = true;
  spec.activation = config.activation("hidden_act", "silu");
  spec.qkvBias = spec.outputBias = config.boolean("attention_bias", false);
  if (config.boolean("use_sliding_window", false))
    config.fail("unsupported config value 'use_sliding_window' = true "
                "(Qwen3's per-layer windows)");
  readRopeScaling(config, spec);
  useLlamaNames(config, spec, /*tiedByDefault=*/false);
  spec.layer.queryNorm = "model.layers.{}.self_attn.q_norm.weight";
  spec.layer.keyNorm = "model.layers.{}.self_attn.k_norm.weight";
  return spec;
}


/// Phi-3: LLaMA with Q, K and V in one projection (qkv_proj) and the MLP's
/// gate and up in one (gate_up_proj), split by preparePhi3Checkpoint, and a
/// sliding window where the config sets one (Phi-3-mini-4k's 2047).
DecoderSpec readPhi3Spec(ConfigReader &config) {
  DecoderSpec spec = readLlamaSpec(config);
  spec.family = "phi3";
  spec.slidingWindow = config.positiveInteger("sliding_window", 0);
  std::string p = "model.layers.{}.";
  spec.layer.query = p + "self_attn.qkv_proj.q.weight";
  spec.layer.key = p + "self_attn.qkv_proj.k.weight";
  spec.layer.value = p + "self_attn.qkv_proj.v.weight";
  spec.layer.gate = p + "mlp.gate_up_proj.gate.weight";
  spec.layer.up = p + "mlp.gate_up_proj.up.weight";
  return spec;
}

/// Mixtral: Mistral with a mixture of experts in place of each MLP
/// (block_sparse_moe): a router (gate) over num_local_experts SwiGLU
/// experts (w1 gate, w3 up, w2 down), each token through its top
/// num_experts_per_tok, their softmax weights renormalized.
DecoderSpec readMixtralSpec(ConfigReader &config) {
  DecoderSpec spec = readLlamaSpec(config);
  spec.family = "mixtral";
  spec.slidingWindow = config.positiveInteger("sliding_window", 0);
  readExpertCounts(config, spec, "num_local_experts", {8, 2});
  spec.expertSize = spec.intermediateSize;
  useExpertNames(spec, "model.layers.{}.block_sparse_moe.", "w1", "w3", "w2");
  return spec;
}

/// Qwen2-MoE and Qwen3-MoE's layers without experts (decoder_sparse_step,
/// mlp_only_layers), which tfmc does not read: refused by name.
void refuseDenseLayers(ConfigReader &config) {
  if (config.integer("decoder_sparse_step", 1) != 1)
    config.fail("unsupported config value decoder_sparse_step (tfmc reads "
                "experts in every layer: 1)");
  const llvm::json::Array *dense = config.fields().getArray("mlp_only_layers");
  if (dense && !dense->empty())
    config.fail("unsupported config value mlp_only_layers (tfmc reads "
                "experts in every layer: [])");
}

/// The defaults of a Qwen MoE config's expert fields.
struct QwenExpertDefaults {
  int64_t experts, perToken, size;
  bool normalize;
};

/// Qwen2-MoE's and Qwen3-MoE's experts: mlp.gate the router over
/// num_experts SwiGLU experts of moe_intermediate_size (mlp.experts.{e}.
/// gate_proj, up_proj, down_proj), each token through its top
/// num_experts_per_tok, renormalized where norm_topk_prob; in every layer.
void readQwenExperts(ConfigReader &config, DecoderSpec &spec,
                     QwenExpertDefaults defaults) {
  refuseDenseLayers(config);
  readExpertCounts(config, spec, "num_experts",
                   {defaults.experts, defaults.perToken});
  spec.expertSize =
      config.positiveInteger("moe_intermediate_size", defaults.size);
  spec.normalizeExpertWeights =
      config.boolean("norm_topk_prob", defaults.normalize);
  useExpertNames(spec, "model.layers.{}.mlp.", "gate_proj", "up_proj",
                 "down_proj");
}

/// Qwen3-MoE: Qwen3 (an RMSNorm of each head of Q and K) with a mixture of
/// experts in place of each MLP: mlp.gate the router over num_experts
/// SwiGLU experts of moe_intermediate_size, each token through its top
/// num_experts_per_tok, renormalized where norm_topk_prob (true in
/// Qwen3-30B-A3B); no shared expert.
DecoderSpec readQwen3MoeSpec(ConfigReader &config) {
  DecoderSpec spec = readQwen3Spec(config);
  spec.family = "qwen3_moe";
  readQwenExperts(config, spec, {128, 8, 768, true});
  return spec;
}

/// Qwen2-MoE: Qwen2 with a mixture of experts in place of each MLP
/// (mlp.gate the router over num_experts SwiGLU experts of
/// moe_intermediate_size, each token through its top num_experts_per_tok,
/// renormalized where norm_topk_prob) plus a shared expert on every token
/// (shared_expert, scaled by sigmoid(shared_expert_gate · x)).
DecoderSpec readQwen2MoeSpec(ConfigReader &config) {
  DecoderSpec spec = readQwen2Spec(config);
  spec.family = "qwen2_moe";
  readQwenExperts(config, spec, {60, 4, 1408, false});
  spec.sharedExpertSize = config.integer("shared_expert_intermediate_size", 0);
  std::string mlp = "model.layers.{}.mlp.";
  spec.layer.sharedGate = mlp + "shared_expert.gate_proj.weight";
  spec.layer.sharedUp = mlp + "shared_expert.up_proj.weight";
  spec.layer.sharedDown = mlp + "shared_expert.down_proj.weight";
  spec.layer.sharedExpertGate = mlp + "shared_expert_gate.weight";
  return spec;
}

/// Gemma: LLaMA with GeGLU, embeddings scaled by sqrt(hidden), RMSNorms
/// that multiply by (1 + w) (prepareDecoderWeights adds the 1), a head size
/// of its own, and a tied head.
DecoderSpec readGemmaSpec(ConfigReader &config) {
  DecoderSpec spec;
  spec.family = "gemma";
  readLlamaSizes(config, spec);
  spec.explicitHeadDim = config.positiveInteger("head_dim");
  spec.rmsNorm = true;
  spec.normEpsilon = config.number("rms_norm_eps", 1e-6);
  spec.gatedMlp = true;
  // transformers 4.40 uses hidden_activation, and gelu_pytorch_tanh when it
  // is absent (the legacy hidden_act is ignored).
  spec.activation =
      config.activation("hidden_activation", "gelu_pytorch_tanh");
  spec.qkvBias = spec.outputBias = config.boolean("attention_bias", false);
  spec.embeddingScale = std::sqrt(double(spec.hiddenSize));
  useLlamaNames(config, spec, /*tiedByDefault=*/true);
  return spec;
}

/// A soft-cap of Gemma 2's config (attn_logit_softcapping,
/// final_logit_softcapping): `absent` when the config leaves it out, none
/// (0) when it is null. A cap of 0 is refused, not read as none: the
/// reference divides the scores by it.
double readSoftcap(ConfigReader &config, llvm::StringRef key, double absent) {
  if (!config.fields().get(key))
    return absent;
  return config.positiveNumber(key, 0);
}

/// Gemma 2 and 3's layer: Gemma's, with the attention's and the MLP's
/// outputs normed too before their residual adds, the MLP's input norm
/// named pre_feedforward_layernorm, and the scores scaled by
/// query_pre_attn_scalar^-1/2 (`fallback` where absent).
void useGemma2Layers(ConfigReader &config, DecoderSpec &spec, double fallback) {
  std::string p = "model.layers.{}.";
  spec.layer.postAttentionNorm = p + "post_attention_layernorm.weight";
  spec.layer.mlpNorm = p + "pre_feedforward_layernorm.weight";
  spec.layer.postMlpNorm = p + "post_feedforward_layernorm.weight";
  double scalar = config.number("query_pre_attn_scalar", fallback);
  if (!(scalar > 0) || std::isinf(scalar))
    config.fail("config value query_pre_attn_scalar must be positive, got " +
                std::to_string(scalar));
  else
    spec.attentionScale = 1.0 / std::sqrt(scalar);
}

/// Gemma 2: Gemma's layers with their outputs normed too (useGemma2Layers),
/// attention scores and final logits soft-capped (attn_logit_softcapping,
/// final_logit_softcapping; 50 and 30 where absent, none where null), and
/// sliding-window attention (sliding_window) in every other layer, the
/// even ones from 0.
DecoderSpec readGemma2Spec(ConfigReader &config) {
  DecoderSpec spec = readGemmaSpec(config);
  spec.family = "gemma2";
  useGemma2Layers(config, spec, 224);
  spec.attentionSoftcap = readSoftcap(config, "attn_logit_softcapping", 50);
  spec.logitSoftcap = readSoftcap(config, "final_logit_softcapping", 30);
  int64_t window = config.positiveInteger("sliding_window", 4096);
  if (!readLayerTypes(config, spec, window))
    spec.windowAllButEvery(2, window);
  return spec;
}

/// Gemma 3 (its text model, gemma3_text): Gemma 2's layers without
/// soft-capping unless the config sets it, RMSNorms (Gemma's 1 + w) of each
/// head of Q and K before RoPE (q_norm, k_norm), and local layers of
/// sliding-window attention, whose RoPE has a base of its own
/// (rope_local_base_freq) and no scaling, between global ones whose RoPE
/// takes rope_theta and rope_scaling: as layer_types lists them, or one
/// global layer in every sliding_window_pattern (the last of each group).
DecoderSpec readGemma3Spec(ConfigReader &config) {
  DecoderSpec spec = readGemmaSpec(config);
  spec.family = "gemma3_text";
  spec.ropeTheta = config.number("rope_theta", 1000000.0);
  useGemma2Layers(config, spec, 256);
  spec.attentionSoftcap = readSoftcap(config, "attn_logit_softcapping", 0);
  spec.logitSoftcap = readSoftcap(config, "final_logit_softcapping", 0);
  readRopeScaling(config, spec);
  // Positive where given: 0 would mean "as the global layers" here.
  spec.localRopeTheta = config.positiveNumber("rope_local_base_freq", 10000.0);
  int64_t window = config.positiveInteger("sliding_window", 4096);
  if (!readLayerTypes(config, spec, window)) {
    int64_t pattern = config.positiveInteger("sliding_window_pattern", 6);
    if (pattern > 0)
      spec.windowAllButEvery(pattern, window);
  }
  std::string p = "model.layers.{}.self_attn.";
  spec.layer.queryNorm = p + "q_norm.weight";
  spec.layer.keyNorm = p + "k_norm.weight";
  return spec;
}

/// OLMo's clip_qkv: Q, K and V clamped to [-clip_qkv, clip_qkv] after their
/// projections; null or absent: not clamped. 0 is refused: the reference
/// clamps every value to 0 rather than not clamping.
void readClipQkv(ConfigReader &config, DecoderSpec &spec) {
  spec.clipQkv = config.positiveNumber("clip_qkv", 0);
}

/// OLMo: LLaMA with LayerNorms that have neither scale nor shift (epsilon
/// 1e-5, fixed by the reference), optional biases on every attention
/// projection, and Q, K and V optionally clamped (clip_qkv: OLMo 7B 0424
/// and 0724 set 8.0).
DecoderSpec readOlmoSpec(ConfigReader &config) {
  DecoderSpec spec = readLlamaSpec(config);
  spec.family = "olmo";
  spec.rmsNorm = false;
  spec.normScale = spec.normBias = false;
  spec.normEpsilon = 1e-5;
  readClipQkv(config, spec);
  return spec;
}

/// OLMoE: LLaMA with an RMSNorm over the whole of Q and of K after their
/// projections (q_norm [hidden], k_norm [kv_heads · head_dim], before the
/// heads are split and rotated), Q, K and V optionally clamped (clip_qkv),
/// and a mixture of experts in place of each MLP: mlp.gate the router over
/// num_experts SwiGLU experts of intermediate_size, each token through its
/// top num_experts_per_tok, renormalized only where norm_topk_prob (false
/// in OLMoE-1B-7B).
DecoderSpec readOlmoeSpec(ConfigReader &config) {
  DecoderSpec spec = readLlamaSpec(config);
  spec.family = "olmoe";
  spec.normEpsilon = config.number("rms_norm_eps", 1e-5);
  readClipQkv(config, spec);
  readExpertCounts(config, spec, "num_experts", {64, 8});
  spec.expertSize = spec.intermediateSize;
  spec.normalizeExpertWeights = config.boolean("norm_topk_prob", false);
  useExpertNames(spec, "model.layers.{}.mlp.", "gate_proj", "up_proj",
                 "down_proj");
  spec.layer.queryNorm = "model.layers.{}.self_attn.q_norm.weight";
  spec.layer.keyNorm = "model.layers.{}.self_attn.k_norm.weight";
  spec.qkNormAcrossHeads = true;
  return spec;
}

/// StarCoder2: LayerNorm with bias, biases everywhere (use_bias), a plain
/// GELU MLP (c_fc, c_proj), sliding-window attention.
DecoderSpec readStarcoder2Spec(ConfigReader &config) {
  DecoderSpec spec;
  spec.family = "starcoder2";
  readLlamaSizes(config, spec);
  spec.normEpsilon = config.number("norm_epsilon", 1e-5);
  spec.activation = config.activation("hidden_act", "gelu_pytorch_tanh");
  spec.qkvBias = spec.outputBias = spec.mlpBias =
      config.boolean("use_bias", true);
  spec.slidingWindow = config.positiveInteger("sliding_window", 0);
  useLlamaNames(config, spec, /*tiedByDefault=*/true);
  spec.layer.up = "model.layers.{}.mlp.c_fc.weight";
  spec.layer.gate = "";
  spec.layer.down = "model.layers.{}.mlp.c_proj.weight";
  return spec;
}

/// StableLM: LayerNorm with bias, partial rotary, SwiGLU, optional Q/K/V
/// biases and parallel residual (one norm for both branches).
DecoderSpec readStableLmSpec(ConfigReader &config) {
  DecoderSpec spec;
  spec.family = "stablelm";
  readLlamaSizes(config, spec);
  spec.normEpsilon = config.number("layer_norm_eps", 1e-5);
  spec.gatedMlp = true;
  spec.activation = config.activation("hidden_act", "silu");
  spec.qkvBias = config.boolean("use_qkv_bias", false);
  readPartialRotary(config, "partial_rotary_factor", 0.25, spec);
  config.refuseUnlessAbsent("qk_layernorm", "per-head Q/K LayerNorms");
  useLlamaNames(config, spec, /*tiedByDefault=*/false);
  if ((spec.parallelResidual =
           config.boolean("use_parallel_residual", false)))
    spec.layer.mlpNorm = "";
  return spec;
}

/// Phi (phi-1, phi-1.5, phi-2): attention and MLP in parallel on one
/// LayerNorm, partial rotary, biases on every projection and the head.
DecoderSpec readPhiSpec(ConfigReader &config) {
  DecoderSpec spec;
  spec.family = "phi";
  readLlamaSizes(config, spec);
  spec.normEpsilon = config.number("layer_norm_eps", 1e-5);
  spec.activation = config.activation("hidden_act", "gelu_new");
  spec.qkvBias = spec.outputBias = spec.mlpBias = spec.lmHeadBias = true;
  spec.parallelResidual = true;
  readPartialRotary(config, "partial_rotary_factor", 0.5, spec);
  config.refuseUnlessAbsent("qk_layernorm", "per-head Q/K LayerNorms");
  if (config.boolean("tie_word_embeddings", false))
    config.fail("unsupported config value 'tie_word_embeddings' = true "
                "(Phi's head has a bias of its own)");
  spec.tokenEmbedding = "model.embed_tokens.weight";
  spec.finalNorm = "model.final_layernorm.weight";
  spec.lmHead = "lm_head.weight";
  std::string p = "model.layers.{}.";
  spec.layer = {p + "input_layernorm.weight",  p + "self_attn.q_proj.weight",
                p + "self_attn.k_proj.weight", p + "self_attn.v_proj.weight",
                p + "self_attn.dense.weight",  "",
                p + "mlp.fc1.weight",          "",
                p + "mlp.fc2.weight"};
  return spec;
}

/// GPT-Neo: GPT-2's blocks with Q, K and V apart (no biases), attention
/// scores not scaled, and layers of global or local attention as the
/// config's attention_types lists them ([[["global", "local"], 12]]: the
/// pair 12 times); a local layer's positions see the last window_size.
DecoderSpec readGptNeoSpec(ConfigReader &config) {
  DecoderSpec spec;
  spec.family = "gpt_neo";
  spec.vocabSize = config.integer("vocab_size");
  spec.hiddenSize = config.integer("hidden_size");
  spec.numLayers = config.integer("num_layers");
  spec.numHeads = spec.numKVHeads = config.integer("num_heads");
  // intermediate_size null (its default): four times the hidden size.
  spec.intermediateSize =
      config.integer("intermediate_size", 4 * spec.hiddenSize);
  spec.maxContext = config.integer("max_position_embeddings");
  spec.normEpsilon = config.number("layer_norm_epsilon", 1e-5);
  spec.activation = config.activation("activation_function", "gelu_new");
  spec.learnedPositions = true;
  spec.outputBias = spec.mlpBias = true;
  spec.attentionScale = 1.0;
  int64_t window = config.positiveInteger("window_size", 256);
  const llvm::json::Array *types = config.fields().getArray("attention_types");
  auto bad = [&] {
    config.fail("attention_types must list [[\"global\" or \"local\", "
                "...], repeats] pairs");
  };
  if (!types)
    bad();
  for (const llvm::json::Value &entry : types ? *types : llvm::json::Array()) {
    const llvm::json::Array *pair = entry.getAsArray();
    const llvm::json::Array *kinds =
        pair && pair->size() == 2 ? (*pair)[0].getAsArray() : nullptr;
    std::optional<int64_t> repeats =
        pair && pair->size() == 2 ? (*pair)[1].getAsInteger() : std::nullopt;
    if (!kinds || !repeats || *repeats < 0 || *repeats > 1 << 16)
      return bad(), spec;
    for (int64_t r = 0; r < *repeats; ++r)
      for (const llvm::json::Value &kind : *kinds) {
        std::optional<llvm::StringRef> name = kind.getAsString();
        if (name == std::optional<llvm::StringRef>("global"))
          spec.layerWindows.push_back(0);
        else if (name == std::optional<llvm::StringRef>("local"))
          spec.layerWindows.push_back(window);
        else
          return bad(), spec;
      }
  }
  std::string p = "transformer.h.{}.";
  spec.tokenEmbedding = "transformer.wte.weight";
  spec.positionEmbedding = "transformer.wpe.weight";
  spec.finalNorm = "transformer.ln_f.weight";
  if (!config.boolean("tie_word_embeddings", true))
    spec.lmHead = "lm_head.weight";
  spec.layer = {p + "ln_1.weight",
                p + "attn.attention.q_proj.weight",
                p + "attn.attention.k_proj.weight",
                p + "attn.attention.v_proj.weight",
                p + "attn.attention.out_proj.weight",
                p + "ln_2.weight",
                p + "mlp.c_fc.weight",
                "",
                p + "mlp.c_proj.weight"};
  return spec;
}

/// GPT-NeoX / Pythia: parallel residual (two norms), partial rotary, a
/// fused QKV weight (split by prepareGptNeoXWeights), biases everywhere.
DecoderSpec readGptNeoXSpec(ConfigReader &config) {
  DecoderSpec spec;
  spec.family = "gpt_neox";
  spec.vocabSize = config.integer("vocab_size");
  spec.hiddenSize = config.integer("hidden_size");
  spec.numLayers = config.integer("num_hidden_layers");
  spec.numHeads = spec.numKVHeads = config.integer("num_attention_heads");
  spec.intermediateSize = config.integer("intermediate_size");
  spec.maxContext = config.integer("max_position_embeddings");
  spec.ropeTheta = config.number("rotary_emb_base", 10000.0);
  spec.normEpsilon = config.number("layer_norm_eps", 1e-5);
  spec.activation = config.activation("hidden_act", "gelu");
  spec.qkvBias = spec.outputBias = config.boolean("attention_bias", true);
  spec.mlpBias = true;
  spec.parallelResidual = config.boolean("use_parallel_residual", true);
  readPartialRotary(config, "rotary_pct", 0.25, spec);
  config.refuseUnlessAbsent("rope_scaling", "scaled rotary embeddings");
  spec.tokenEmbedding = "gpt_neox.embed_in.weight";
  spec.finalNorm = "gpt_neox.final_layer_norm.weight";
  spec.lmHead = config.boolean("tie_word_embeddings", false)
                    ? ""
                    : "embed_out.weight";
  std::string p = "gpt_neox.layers.{}.";
  spec.layer = {p + "input_layernorm.weight",
                p + "attention.query_key_value.q.weight",
                p + "attention.query_key_value.k.weight",
                p + "attention.query_key_value.v.weight",
                p + "attention.dense.weight",
                p + "post_attention_layernorm.weight",
                p + "mlp.dense_h_to_4h.weight",
                "",
                p + "mlp.dense_4h_to_h.weight"};
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
  spec.activation = config.activation("activation_function", "gelu_new");
  spec.qkvBias = spec.outputBias = spec.mlpBias = true;
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
    if (std::optional<std::string> error = store.mismatch(
            checkpoint, name, shape,
            "the gpt2 config (Conv1D stores [in, out]) implies"))
      return makeError(*error);
    out = store.take(name);
    return llvm::Error::success();
  };
  auto slice = [](const WeightTensor &t, int64_t begin, int64_t end) {
    std::vector<int64_t> rows;
    for (int64_t i = begin; i < end; ++i)
      rows.push_back(i);
    return t.selectRows(std::move(rows), {end - begin});
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
      store.add(name + "weight", qkv.transposeRows(p * d, (p + 1) * d));
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
      store.add(h + c.name + ".weight", w.transposeRows(0, c.out));
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


/// GPT-NeoX stores Q, K and V as one [3·hidden, hidden] weight whose rows
/// are grouped by head ([heads, 3, head_dim]): split it into three.
llvm::Error prepareGptNeoXWeights(const DecoderSpec &spec, WeightStore &store,
                                  llvm::StringRef checkpoint) {
  int64_t d = spec.hiddenSize, heads = spec.numHeads, hd = spec.headDim();
  for (int64_t l = 0; l < spec.numLayers; ++l) {
    std::string base = "gpt_neox.layers." + std::to_string(l) +
                       ".attention.query_key_value.";
    for (const char *kind : {"weight", "bias"}) {
      bool isWeight = kind[0] == 'w';
      std::vector<int64_t> shape =
          isWeight ? std::vector<int64_t>{3 * d, d} : std::vector<int64_t>{3 * d};
      if (std::optional<std::string> error = store.mismatch(
              checkpoint, base + kind, shape, "the gpt_neox config implies"))
        return makeError(*error);
      WeightTensor t = store.take(base + kind);
      const char *parts[] = {"q", "k", "v"};
      for (int64_t part = 0; part < 3; ++part) {
        std::vector<int64_t> rows;
        for (int64_t h = 0; h < heads; ++h)
          for (int64_t i = 0; i < hd; ++i)
            rows.push_back((h * 3 + part) * hd + i);
        std::vector<int64_t> splitShape = shape;
        splitShape[0] = d;
        store.add(base + parts[part] + "." + kind,
                  t.selectRows(std::move(rows), splitShape));
      }
    }
  }
  return llvm::Error::success();
}

/// Phi-3 stores Q, K and V as one weight, [Q rows, K rows, V rows], and the
/// MLP's gate and up as one, [gate rows, up rows]: split them.
llvm::Error preparePhi3Checkpoint(DecoderSpec &spec, WeightStore &store,
                                  llvm::StringRef checkpoint) {
  int64_t hd = spec.headDim(), inner = spec.intermediateSize;
  int64_t q = spec.numHeads * hd, kv = spec.numKVHeads * hd;
  for (int64_t l = 0; l < spec.numLayers; ++l) {
    std::string layer = "model.layers." + std::to_string(l) + ".";
    if (llvm::Error err =
            splitFusedRows(store, checkpoint, layer + "self_attn.qkv_proj.",
                           {{"q", q}, {"k", kv}, {"v", kv}}, spec.hiddenSize,
                           "the phi3 config implies"))
      return err;
    if (llvm::Error err =
            splitFusedRows(store, checkpoint, layer + "mlp.gate_up_proj.",
                           {{"gate", inner}, {"up", inner}}, spec.hiddenSize,
                           "the phi3 config implies"))
      return err;
  }
  return llvm::Error::success();
}

} // namespace

void mlir::tfm::prepareGemmaWeights(const DecoderSpec &spec,
                                    WeightStore &store) {
  std::vector<std::string> norms = {spec.finalNorm};
  const LayerWeightNames &n = spec.layer;
  for (int64_t l = 0; l < spec.numLayers; ++l)
    for (const std::string *name :
         {&n.attnNorm, &n.mlpNorm, &n.postAttentionNorm, &n.postMlpNorm,
          &n.queryNorm, &n.keyNorm})
      if (!name->empty())
        norms.push_back(layerWeightName(*name, l));
  for (const std::string &name : norms) {
    if (!store.contains(name))
      continue; // the builder reports it missing
    WeightTensor t = store.take(name);
    store.add(name, t.plus(1.0f));
  }
}

namespace {

llvm::Error prepareGemmaCheckpoint(DecoderSpec &spec, WeightStore &store,
                                   llvm::StringRef) {
  prepareGemmaWeights(spec, store);
  return llvm::Error::success();
}

llvm::Error prepareGptNeoXCheckpoint(DecoderSpec &spec, WeightStore &store,
                                     llvm::StringRef checkpoint) {
  return prepareGptNeoXWeights(spec, store, checkpoint);
}

/// Mistral is LLaMA with sliding-window attention.
DecoderSpec readMistralSpec(ConfigReader &config) {
  DecoderSpec spec = readLlamaSpec(config);
  spec.family = "mistral";
  spec.slidingWindow = config.positiveInteger("sliding_window", 0);
  return spec;
}

/// A decoder `model_type`: how its config reads, what its checkpoint needs
/// before the builder reads it, and whether its usual tokenizer puts BOS
/// before a prompt (for a directory without tokenizer files).
struct DecoderFamily {
  llvm::StringLiteral modelType;
  DecoderSpec (*read)(ConfigReader &config);
  llvm::Error (*prepare)(DecoderSpec &spec, WeightStore &store,
                         llvm::StringRef checkpoint);
  bool tokenizerAddsBos;
};

/// Every decoder family, in the order messages list them. A new family is
/// a reader above and a row here.
const DecoderFamily kDecoderFamilies[] = {
    {"deepseek_v2", readDeepseekSpec, prepareDeepseekCheckpoint, true},
    {"deepseek_v3", readDeepseekSpec, prepareDeepseekCheckpoint, true},
    {"gemma", readGemmaSpec, prepareGemmaCheckpoint, true},
    {"gemma2", readGemma2Spec, prepareGemmaCheckpoint, true},
    {"gemma3_text", readGemma3Spec, prepareGemmaCheckpoint, true},
    {"gemma4", readGemma4Spec, prepareGemma4Checkpoint, true},
    {"gemma4_text", readGemma4TextSpec, prepareGemma4Checkpoint, true},
    {"glm4_moe", readGlm4MoeSpec, nullptr, false},
    {"gpt2", readGpt2Spec, prepareGpt2Weights, false},
    {"gpt_neo", readGptNeoSpec, nullptr, false},
    {"gpt_neox", readGptNeoXSpec, prepareGptNeoXCheckpoint, false},
    {"gpt_oss", readGptOssSpec, prepareGptOssCheckpoint, false},
    {"kimi_k2", readDeepseekSpec, prepareDeepseekCheckpoint, false},
    {"llama", readLlamaSpec, nullptr, true},
    {"mistral", readMistralSpec, nullptr, true},
    {"mixtral", readMixtralSpec, nullptr, true},
    {"olmo", readOlmoSpec, nullptr, false},
    {"olmoe", readOlmoeSpec, nullptr, false},
    {"phi", readPhiSpec, nullptr, false},
    {"phi3", readPhi3Spec, preparePhi3Checkpoint, false},
    {"qwen2", readQwen2Spec, nullptr, false},
    {"qwen2_moe", readQwen2MoeSpec, nullptr, false},
    {"qwen3", readQwen3Spec, nullptr, false},
    {"qwen3_5", readQwen35Spec, prepareQwenHybridCheckpoint, false},
    {"qwen3_5_moe", readQwen35MoeSpec, prepareQwenHybridCheckpoint, false},
    {"qwen3_5_moe_text", readQwen35MoeSpec, prepareQwenHybridCheckpoint, false},
    {"qwen3_5_text", readQwen35Spec, prepareQwenHybridCheckpoint, false},
    {"qwen3_moe", readQwen3MoeSpec, nullptr, false},
    {"qwen3_next", readQwen3NextSpec, prepareQwenHybridCheckpoint, false},
    {"stablelm", readStableLmSpec, nullptr, false},
    {"starcoder2", readStarcoder2Spec, nullptr, false},
};

const DecoderFamily *findDecoderFamily(llvm::StringRef modelType) {
  return findFamily(kDecoderFamilies, &DecoderFamily::modelType, modelType);
}

} // namespace

std::string mlir::tfm::supportedDecoderFamilies() {
  return familyNames(kDecoderFamilies, &DecoderFamily::modelType);
}

bool mlir::tfm::readDecoderFamily(llvm::StringRef modelType,
                                  ConfigReader &config, DecoderSpec &spec) {
  const DecoderFamily *family = findDecoderFamily(modelType);
  if (!family)
    return false;
  spec = family->read(config);
  return true;
}

llvm::Error mlir::tfm::prepareDecoderWeights(llvm::StringRef modelType,
                                             DecoderSpec &spec,
                                             WeightStore &store,
                                             llvm::StringRef checkpoint) {
  const DecoderFamily *family = findDecoderFamily(modelType);
  if (!family || !family->prepare)
    return llvm::Error::success();
  return family->prepare(spec, store, checkpoint);
}

llvm::Error mlir::tfm::splitFusedRows(
    WeightStore &store, llvm::StringRef checkpoint, const std::string &base,
    llvm::ArrayRef<std::pair<const char *, int64_t>> parts, int64_t cols,
    llvm::StringRef what) {
  int64_t rows = 0;
  for (const auto &part : parts)
    rows += part.second;
  if (std::optional<std::string> error =
          store.mismatch(checkpoint, base + "weight", {rows, cols}, what))
    return makeError(*error);
  WeightTensor t = store.take(base + "weight");
  int64_t first = 0;
  for (const auto &[part, count] : parts) {
    std::vector<int64_t> picked(static_cast<size_t>(count));
    for (int64_t i = 0; i < count; ++i)
      picked[size_t(i)] = first + i;
    store.add(base + part + ".weight",
              t.selectRows(std::move(picked), {count, cols}));
    first += count;
  }
  return llvm::Error::success();
}

bool mlir::tfm::decoderTokenizerAddsBos(llvm::StringRef modelType) {
  const DecoderFamily *family = findDecoderFamily(modelType);
  return !family || family->tokenizerAddsBos;
}
