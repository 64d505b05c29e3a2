//===- DecoderSpec.h - what a decoder-only model is made of -----*- C++ -*-===//
//
// The architecture of a decoder-only transformer as the frontends read it
// from a config (HF config.json, llama2.c header), with the checkpoint names
// of its weights. DecoderBuilder turns it into tfm IR.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_BUILDERS_DECODERSPEC_H
#define TFM_FRONTEND_BUILDERS_DECODERSPEC_H

#include "ir/TfmDialect.h"

#include "llvm/ADT/StringRef.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace mlir::tfm {

/// Checkpoint names of one layer's weights; "{}" stands for the layer index.
/// Biases, where the spec has them, are the weight names with the final
/// "weight" replaced by "bias".
struct LayerWeightNames {
  std::string attnNorm, query, key, value, output;
  std::string mlpNorm, up, gate, down; // gate: gated (SwiGLU) MLPs only
  /// RMSNorms of Q and K after their projections, before RoPE: of each
  /// head (Qwen3's q_norm and k_norm, [head_dim]) or, where the spec says
  /// qkNormAcrossHeads, of all heads together (OLMoE's, [heads ·
  /// head_dim]); empty: none.
  std::string queryNorm = "", keyNorm = "";
  /// A mixture of experts' router ([experts, hidden]) and each expert's
  /// gate, up and down, "{e}" standing for the expert (Mixtral's
  /// block_sparse_moe: gate, experts.{e}.w1, w3, w2).
  std::string router = "", expertGate = "", expertUp = "", expertDown = "";
  /// A shared expert run on every token (Qwen2-MoE's shared_expert) and the
  /// vector ([1, hidden]) whose sigmoid scales its output.
  std::string sharedGate = "", sharedUp = "", sharedDown = "",
              sharedExpertGate = "";
  /// Norms of the attention's and of the MLP's outputs, before their
  /// residual adds (Gemma 2 and 3's post_attention_layernorm and
  /// post_feedforward_layernorm); empty: none.
  std::string postAttentionNorm = "", postMlpNorm = "";
  /// The router's selection bias ([experts], DeepSeek-V3's
  /// e_score_correction_bias); empty: none.
  std::string routerBias = "";
  /// Each expert's factor on its routed weight ([experts], Gemma 4's
  /// per_expert_scale); empty: none.
  std::string expertScales = "";
  /// Where the experts run beside the dense MLP (DecoderSpec::
  /// expertsBesideMlp): the RMSNorm of the residual the router reads
  /// (Gemma 4's weightless norm times router.scale and hidden^-1/2, which
  /// its frontend stores under this name), the experts' input norm, and
  /// the norms of the MLP's and of the experts' outputs before their sum.
  std::string routerNorm = "", expertsNorm = "", postDenseMlpNorm = "",
              postExpertsNorm = "";
  /// Attention sinks ([heads], gpt-oss's self_attn.sinks): a logit per head
  /// in every softmax's denominator; empty: none.
  std::string attentionSinks = "";
  /// Multi-head latent attention (DecoderSpec::mla): the query's
  /// down-projection and its norm (empty: `query` projects the hidden
  /// state itself), the latent projection ([latent + rope, hidden]) and its
  /// norm, each head's key up-projection transposed ([heads · latent,
  /// nope], absorbed into the query), the same as stored ([heads · nope,
  /// latent]: the key up-projection of the expanded form, which
  /// tfm-expand-latent-attention gives long prefills) and the value
  /// up-projection ([heads · value, latent]). `query` is then the query's
  /// up-projection.
  std::string queryDown = "", queryDownNorm = "", latent = "", latentNorm = "",
              keyAbsorb = "", keyUp = "", valueUp = "";
  /// Gated DeltaNet's layers (DecoderSpec::deltaNet): the projections to
  /// the convolution's channels ([q | k | v] of every head, [C, hidden]),
  /// to the output gate z, to beta and to alpha ([value heads, hidden]),
  /// alpha's bias (dt_bias), the convolution's weight ([C, kernel]), the
  /// decay (−exp(A_log), [value heads]), the gated norm's weight ([value
  /// dim]) and the output projection.
  std::string recurrentQkv = "", recurrentGate = "", recurrentBeta = "",
              recurrentAlpha = "", recurrentAlphaBias = "", recurrentConv = "",
              recurrentDecay = "", recurrentNorm = "", recurrentOutput = "";
  /// Per-layer inputs (DecoderSpec::perLayerInput): the gate ([size,
  /// hidden]) and projection ([hidden, size]) of this layer's input, and
  /// the norm of what it adds to the residual.
  std::string perLayerGate = "", perLayerProjection = "", perLayerNorm = "";
  /// A one-element tensor multiplying the residual stream after the layer
  /// (Gemma 4's layer_scalar), read into DecoderSpec::layerScales.
  std::string layerScale = "";
};

/// One layer's attention where layers differ in shape (Gemma 4's full
/// layers have wider heads, KV heads of their own and another RoPE than
/// its sliding ones; its last layers attend over earlier layers' keys and
/// values).
struct LayerAttention {
  int64_t headDim = 0, kvHeads = 0;
  /// The value is the key's projection before its norm and RoPE (no value
  /// weight): Gemma 4's attention_k_eq_v.
  bool valueIsKey = false;
  /// The earlier layer whose keys and values this one attends over,
  /// computing none of its own (Gemma 4's num_kv_shared_layers); -1: its
  /// own.
  int64_t kvSource = -1;
  /// RoPE's inverse frequencies over the whole head (headDim / 2 of them;
  /// a pair of frequency 0 stays as it is) and the base they come from.
  std::vector<float> ropeFrequencies;
  double ropeTheta = 0;
  /// The MLP's width; 0: the spec's intermediateSize.
  int64_t intermediate = 0;
};

/// Per-layer inputs (Gemma 3n's and Gemma 4's E2B/E4B): besides the token
/// embedding, each token looks up `size` values for every layer in a
/// table of its own ([vocab, layers · size], scaled by sqrt(size)), added
/// to a projection of the scaled token embedding ([layers · size, hidden],
/// by hidden^-1/2, RMS-normed over `size` by `projectionNorm`), both by
/// 2^-1/2. Each layer gates its slice by its residual after the MLP
/// (LayerWeightNames::perLayerGate) and adds the projection back.
struct PerLayerInputSpec {
  int64_t size = 0, vocab = 0;
  std::string embedding, projection, projectionNorm;
  bool enabled() const { return size > 0; }
};

/// Gated DeltaNet (Qwen3-Next, Qwen3.5): linear attention whose layers
/// carry a fixed-size state instead of attending over the past.
struct DeltaNetSpec {
  int64_t keyHeads = 0, valueHeads = 0, keyDim = 0, valueDim = 0,
          convKernel = 0;
  /// Value head h reads key head h mod keyHeads (llama.cpp's qwen35 GGUF
  /// files reorder the value heads so), not h / (valueHeads / keyHeads).
  bool tiled = false;
  /// The epsilon of the L2 norms of q and k (transformers fixes 1e-6).
  double l2Epsilon = 1e-6;
  bool enabled() const { return keyHeads > 0; }
  /// The convolution's channels: q and k of every key head, v of every
  /// value head.
  int64_t channels() const {
    return 2 * keyHeads * keyDim + valueHeads * valueDim;
  }
};

/// Multi-head latent attention (DeepSeek-V2/V3, Kimi-K2, Moonlight): keys
/// and values are up-projections of one latent row per position, which
/// with the key's rotated part is what the cache holds. Built absorbed:
/// each head's query is taken into the latent space, attends over the
/// latent rows as one KV head, and its output is expanded to the head's
/// value.
struct LatentAttentionSpec {
  /// q_lora_rank (0: no query down-projection, DeepSeek-V2-Lite's),
  /// kv_lora_rank, and each head's unrotated and rotated query/key
  /// dimensions and value dimensions.
  int64_t queryRank = 0, latentRank = 0, nopeDim = 0, ropeDim = 0,
          valueDim = 0;
  /// The epsilon of the query's and the latent's norms (transformers fixes
  /// 1e-6; llama.cpp uses the model's).
  double normEpsilon = 1e-6;
  bool enabled() const { return latentRank > 0; }
};

struct DecoderSpec {
  /// Family, for messages: "gpt2", "llama".
  std::string family;
  int64_t vocabSize = 0, hiddenSize = 0, numLayers = 0, numHeads = 0,
          numKVHeads = 0, intermediateSize = 0, maxContext = 0;

  /// Per-head size; 0: hidden / heads (Gemma's differs).
  int64_t explicitHeadDim = 0;

  // Normalization: LayerNorm (with shift unless normBias is false) or
  // RMSNorm; without a learned scale when normScale is false (OLMo's
  // LayerNorms have no parameters, so their checkpoints name no weight).
  bool rmsNorm = false;
  bool normBias = true;
  bool normScale = true;
  double normEpsilon = 1e-5;

  // Positions: a learned table, or rotary embeddings.
  bool learnedPositions = false;
  double ropeTheta = 10000.0;
  mlir::tfm::RopeStyle ropeStyle = mlir::tfm::RopeStyle::rotate_half;
  /// Rotated dimensions of each head (partial rotary); 0: all of them.
  int64_t rotaryDim = 0;
  /// Inverse frequencies of scaled RoPE variants; empty: theta's.
  std::vector<float> ropeFrequencies;
  /// Dynamic NTK scaling (rope_scaling "dynamic"): its factor and the
  /// context the base starts growing past (tfm.rope's ntk_factor and
  /// ntk_context); 0: none.
  double ropeNtkFactor = 0;
  int64_t ropeNtkContext = 0;
  /// LongRoPE (Phi-3): the inverse frequencies of rows past
  /// `ropeLongContext` positions (ropeFrequencies are the short ones), and
  /// the factor both cos and sin are multiplied by (so the scores by its
  /// square; also YaRN's attention factor); empty, 0 and 1: none. The
  /// scores scale as a whole, so a magnitude needs every dimension of a
  /// head rotated (validateDecoderSpec refuses it otherwise).
  std::vector<float> ropeLongFrequencies;
  int64_t ropeLongContext = 0;
  double ropeMagnitude = 1.0;
  /// Multiplies the token embeddings looked up (Gemma: sqrt(hidden)); 0:
  /// none.
  double embeddingScale = 0;

  // Block structure: sequential (x += attn(norm1(x)); x += mlp(norm2(x)))
  // or parallel (x += attn(norm1(x)) + mlp(norm2(x)); GPT-NeoX, Phi, whose
  // layers have one norm for both: layer.mlpNorm empty).
  bool parallelResidual = false;

  // MLP: plain (up, activation, down) or gated (act(gate) * up, down).
  bool gatedMlp = false;
  mlir::tfm::ActivationKind activation = mlir::tfm::ActivationKind::silu;
  /// Biases of Q/K/V, of the attention output, of the MLP and of the LM
  /// head (Qwen2 has the first only, Phi all four).
  /// OLMo's clip_qkv: Q, K and V clamped to [-clipQkv, clipQkv] after
  /// their projections; 0: none.
  double clipQkv = 0;
  /// Q's and K's norms (layer.queryNorm, keyNorm) span every head of the
  /// projection, not one head (OLMoE).
  bool qkNormAcrossHeads = false;
  bool qkvBias = false, outputBias = false, mlpBias = false,
       lmHeadBias = false;
  /// Sliding-window attention: each position sees the last `slidingWindow`
  /// positions (itself included); 0: all before it.
  int64_t slidingWindow = 0;
  /// Per layer, its own window (0: global attention) where layers differ
  /// (GPT-Neo's alternating global and local layers); empty: every layer
  /// has `slidingWindow`.
  std::vector<int64_t> layerWindows;
  /// A mixture of experts in place of each MLP (tfm.moe): `numExperts`
  /// gated MLPs of `expertSize`, each token through its top
  /// `expertsPerToken`, their weights renormalized (Mixtral) unless not
  /// `normalizeExpertWeights`; 0 experts: a dense MLP.
  int64_t numExperts = 0, expertsPerToken = 0, expertSize = 0;
  bool normalizeExpertWeights = true;
  /// A shared expert's width (layer.sharedGate, ...); 0: none. Without
  /// layer.sharedExpertGate its output is added ungated (DeepSeek's).
  int64_t sharedExpertSize = 0;
  /// How the router scores experts and chooses them (tfm.route): softmax
  /// or sigmoid scores, layer.routerBias added for the choice only, the
  /// experts in `expertGroups` groups of which the best `topExpertGroups`
  /// are chosen from (0: no groups), and the chosen weights times
  /// `routedScale` (DeepSeek-V3's routed_scaling_factor).
  mlir::tfm::RouterScoring routerScoring = mlir::tfm::RouterScoring::softmax;
  int64_t expertGroups = 0, topExpertGroups = 0;
  double routedScale = 1.0;
  /// gpt-oss's experts: the router's projection and every expert's gate,
  /// up and down have biases (biasName of their weights), and the gated
  /// MLP is act(min(g, L)) * (clamp(u, -L, L) + 1) with L = swigluLimit
  /// (0: act(g) * u).
  bool expertBiases = false;
  double swigluLimit = 0;
  /// The dense MLP and the experts both run, side by side on the residual
  /// after the attention (Gemma 4's 26B-A4B): the MLP on mlpNorm's output,
  /// the experts on expertsNorm's and routed by routerNorm's, each output
  /// normed (postDenseMlpNorm, postExpertsNorm) and the sum normed by
  /// postMlpNorm before the residual add.
  bool expertsBesideMlp = false;
  /// Layers [0, denseLayers) have a dense MLP (layer.gate, up, down, of
  /// intermediateSize) where the others have experts (DeepSeek's
  /// first_k_dense_replace).
  int64_t denseLayers = 0;
  LatentAttentionSpec mla;
  DeltaNetSpec deltaNet;
  /// Per layer, whether it is a Gated DeltaNet layer rather than attention
  /// (Qwen3.5's three in four); empty: none is.
  std::vector<bool> recurrentLayers;
  bool isRecurrentLayer(int64_t layer) const {
    return layer < int64_t(recurrentLayers.size()) && recurrentLayers[layer];
  }
  /// The query projection yields each head's [query | gate], and the
  /// attention's output is multiplied by sigmoid(gate) before the output
  /// projection (Qwen3-Next's and Qwen3.5's full-attention layers).
  bool attentionOutputGate = false;
  /// Per layer, its attention's shape where layers differ; empty: every
  /// layer as the spec's sizes say.
  std::vector<LayerAttention> layerAttention;
  const LayerAttention *attentionOf(int64_t layer) const {
    return layerAttention.empty() ? nullptr : &layerAttention[size_t(layer)];
  }
  /// Each head's values RMS-normed without a learned scale (Gemma 4's
  /// v_norm).
  bool valueNorm = false;
  PerLayerInputSpec perLayerInput;
  /// Per layer, a factor multiplying the residual stream after it (Gemma
  /// 4's layer_scalar, read from the checkpoint); empty: none.
  std::vector<double> layerScales;
  /// Prefixes of checkpoint tensors the model tfmc builds does not read
  /// (Qwen3.5's vision tower and multi-token prediction block).
  std::vector<std::string> unreadTensorPrefixes;
  /// Multi-token prediction layers after the last (DeepSeek-V3's
  /// num_nextn_predict_layers, numbered from numLayers on): their tensors
  /// are in the checkpoint but not in the model tfmc builds.
  int64_t predictionLayers = 0;
  /// Whether `name` is a tensor of a prediction layer: `prefix` (HF's
  /// "model.layers.", GGUF's "blk.") then the layer's number.
  bool isPredictionLayerTensor(llvm::StringRef name,
                               llvm::StringRef prefix) const {
    int64_t layer = 0;
    return name.consume_front(prefix) && !name.consumeInteger(10, layer) &&
           name.starts_with(".") && layer >= numLayers &&
           layer < numLayers + predictionLayers;
  }
  /// The attention scores' scale; 0: 1/sqrt(head_dim). GPT-Neo's are not
  /// scaled (1).
  double attentionScale = 0;
  /// Soft-capping of the attention scores and of the final logits, x ->
  /// cap · tanh(x / cap) (Gemma 2's attn_logit_softcapping and
  /// final_logit_softcapping); 0: none.
  double attentionSoftcap = 0, logitSoftcap = 0;
  /// Windowed layers' RoPE base, without the spec's scaling (Gemma 3's
  /// rope_local_base_freq); 0: every layer rotates as the spec says.
  double localRopeTheta = 0;

  std::string tokenEmbedding, positionEmbedding, finalNorm;
  /// Empty when the LM head is tied to the token embedding.
  std::string lmHead;
  LayerWeightNames layer;

  int64_t headDim() const {
    return explicitHeadDim ? explicitHeadDim : hiddenSize / numHeads;
  }
  int64_t rotaryDims() const { return rotaryDim ? rotaryDim : headDim(); }
  /// RoPE's unscaled inverse frequencies, theta^(-2i / rotary dims): what
  /// the scaled variants divide.
  std::vector<double> inverseFrequencies() const {
    std::vector<double> inverse;
    int64_t rotary = rotaryDims();
    for (int64_t i = 0; i < rotary / 2; ++i)
      inverse.push_back(1.0 / std::pow(ropeTheta, 2.0 * double(i) / rotary));
    return inverse;
  }
  /// YaRN's magnitude for `factor`: 0.1 mscale ln(factor) + 1, 1 where
  /// the factor is at most 1 (transformers' get_mscale).
  static double yarnMagnitude(double factor, double mscale = 1.0) {
    return factor <= 1 ? 1.0 : 0.1 * mscale * std::log(factor) + 1.0;
  }
  /// YaRN's inverse frequencies (transformers' _compute_yarn_parameters):
  /// each pair's blend of its own frequency (extrapolation: the pairs that
  /// turn more than beta_fast times in `original` positions) and that
  /// divided by `factor` (interpolation: those that turn fewer than
  /// beta_slow times), by a linear ramp between the two pairs' correction
  /// dimensions, rounded outwards where `truncate` (llama.cpp always
  /// rounds; gpt-oss's config says not to). The magnitude is the caller's.
  std::vector<double> yarnFrequencies(double factor, double original,
                                      double betaFast, double betaSlow,
                                      bool truncate) const {
    std::vector<double> inverse = inverseFrequencies();
    double rotary = double(rotaryDims());
    auto correctionDim = [&](double rotations) {
      return rotary * std::log(original / (rotations * 2 * M_PI)) /
             (2 * std::log(ropeTheta));
    };
    double low = correctionDim(betaFast), high = correctionDim(betaSlow);
    if (truncate) {
      low = std::floor(low);
      high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, rotary - 1);
    if (low == high)
      high += 0.001; // transformers' guard against a zero-width ramp
    for (size_t i = 0; i < inverse.size(); ++i) {
      double ramp = std::clamp((double(i) - low) / (high - low), 0.0, 1.0);
      double extrapolated = 1 - ramp;
      inverse[i] = inverse[i] / factor * (1 - extrapolated) +
                   inverse[i] * extrapolated;
    }
    return inverse;
  }
  /// Sliding windows of `window` in every layer but each `pattern`-th
  /// (global attention): Gemma 2's even layers (2), Gemma 3's five in six.
  /// A config of more than 2^16 layers (refused by validateDecoderSpec)
  /// gets none listed rather than a list of that length.
  void windowAllButEvery(int64_t pattern, int64_t window) {
    for (int64_t l = 0; l < numLayers && numLayers <= 1 << 16; ++l)
      layerWindows.push_back((l + 1) % pattern != 0 ? window : 0);
  }
};

/// The bias name of a weight name ("x.weight" -> "x.bias").
std::string biasName(const std::string &weightName);

/// A layer's weight name with "{}" replaced by the layer index.
std::string layerWeightName(const std::string &pattern, int64_t layer);

/// An expert's weight name: `pattern` with "{}" the layer and "{e}" the
/// expert.
std::string expertWeightName(const std::string &pattern, int64_t layer,
                             int64_t expert);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_BUILDERS_DECODERSPEC_H
