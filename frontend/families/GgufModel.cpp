//===- GgufModel.cpp - LLaMA-family models from GGUF files --------------===//
//
// llama.cpp's names: token_embd, blk.N.{attn_norm, attn_q, attn_k, attn_v,
// attn_output, ffn_norm, ffn_gate, ffn_up, ffn_down}, output_norm, output
// (absent when tied), and rope_freqs (Llama 3's per-frequency divisors).
// Its converter permutes LLaMA's Q and K rows so that RoPE rotates
// adjacent pairs (Meta's original layout), which is how they are read
// here: interleaved RoPE, as for llama2.c checkpoints. Architecture
// "qwen2" is LLaMA's with biases on Q, K and V (blk.N.attn_q.bias, ...),
// its rows left as Hugging Face's: RoPE on halves (llama.cpp's NEOX);
// "gemma" is LLaMA's with GeGLU (tanh GELU), embeddings scaled by
// sqrt(width), a head size of its own (attention.key_length), RoPE on
// halves, and RMSNorm weights that already hold Gemma's 1 + w (llama.cpp's
// converter adds the 1); "qwen3" is LLaMA's with RoPE on halves, a head
// size of its own and an RMSNorm of each head of Q and K
// (blk.N.attn_q_norm, blk.N.attn_k_norm). Mixtures of experts: llama with
// expert_count (Mixtral), qwen2moe, qwen3moe and olmoe (whose Q and K norms
// span all heads). "gemma2" and "gemma3" are Gemma's with each branch's
// output normed (blk.N.post_attention_norm, blk.N.post_ffw_norm; ffn_norm
// is the MLP's input norm), windows and soft-caps from the metadata, and
// Gemma 3's per-head Q and K norms. "phi3" fuses Q, K and V (attn_qkv)
// and the MLP's gate and up (ffn_up), split as the file is read, and
// carries LongRoPE's factors as tensors (rope_factors_short, _long).
// "gemma4" (Gemma4Family.cpp) has layers of two shapes and its norms as
// they are (w, not 1 + w).
//
//===----------------------------------------------------------------------===//

#include "frontend/families/GgufModel.h"
#include "frontend/builders/DecoderBuilder.h"
#include "frontend/families/DecoderFamilies.h"
#include "frontend/families/DeepseekFamilies.h"
#include "frontend/families/FamilyTable.h"
#include "frontend/families/Gemma4Family.h"
#include "frontend/families/QwenHybridFamilies.h"
#include "frontend/formats/ErrorMessages.h"
#include "frontend/formats/Gguf.h"
#include "frontend/formats/StoredDtypes.h"
#include "frontend/tokenizers/ChatTemplates.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/WithColor.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// Limits on sizes that keep every product of them far from overflowing.
constexpr int64_t kMaxWidth = 1 << 20, kMaxLayers = 1 << 12,
                  kMaxHeads = 1 << 12, kMaxContext = 1 << 24;
constexpr llvm::StringLiteral kRopeFactors = "rope_freqs.weight";
/// Phi-3's LongRoPE factors: each inverse frequency's divisor within the
/// original context (short) and past it (long).
constexpr llvm::StringLiteral kShortRopeFactors = "rope_factors_short.weight",
                              kLongRopeFactors = "rope_factors_long.weight";

/// A GGUF architecture tfmc reads: general.architecture's value, what it
/// differs from LLaMA's in, and the models that use it (for messages).
/// A field left out of a row is LLaMA's.
struct GgufArchitecture {
  llvm::StringLiteral name;
  llvm::StringLiteral models;
  RopeStyle ropeStyle = RopeStyle::interleaved;
  bool qkvBias = false;
  ActivationKind activation = ActivationKind::silu;
  /// Embeddings scaled by sqrt(hidden size) (Gemma).
  bool scaledEmbeddings = false;
  /// Per-head RMSNorms of Q and K after their projections (Qwen3).
  bool headNorms = false;
  /// Experts' weights renormalized over the chosen (Mixtral's llama), or
  /// as the softmax gives them (Qwen2-MoE).
  bool normalizeExperts = true;
  /// One RMSNorm over all of Q's heads and one over K's (OLMoE), not one
  /// per head.
  bool normsAcrossHeads = false;
  /// Gemma 2 and 3's layers: each branch's output normed
  /// (post_attention_norm, post_ffw_norm), sliding-window attention
  /// (attention.sliding_window) in all layers but every `slidingPattern`-th
  /// (llama.cpp's fixed patterns: 2, 6), whose RoPE has base
  /// `localRopeTheta` unscaled where set (Gemma 3), and queries scaled by
  /// 1/sqrt(head size) except in the model of `widthScaledLayers` layers
  /// (27B), whose are scaled by 1/sqrt(width / heads), as llama.cpp does.
  int64_t slidingPattern = 0;
  double localRopeTheta = 0;
  int64_t widthScaledLayers = 0;
  /// Phi-3's fused projections: Q, K and V in attn_qkv, the MLP's gate and
  /// up in ffn_up (gate rows first), split as the file is read; a window
  /// where attention.sliding_window says; LongRoPE's factors as tensors.
  bool fusedProjections = false;
  /// DeepSeek's multi-head latent attention and router
  /// (readGgufLatentAttention), YaRN's yarn_log_multiplier in its softmax
  /// scale.
  bool latentAttention = false;
  /// GLM-4.5's: DeepSeek's router behind grouped-query attention with
  /// biases, optional Q and K norms and an MLP norm named
  /// post_attention_norm (readGgufGlm4Moe).
  bool glmLayers = false;
  /// Qwen3.5's and Qwen3-Next's Gated DeltaNet layers between gated full
  /// attention (readGgufDeltaNet).
  bool deltaNet = false;
  /// gpt-oss's (llama.cpp's openai-moe graph): biases on every attention
  /// projection, attention sinks, sliding and full layers alternating
  /// (attention.sliding_window on the even ones), the MLP norm named
  /// post_attention_norm, and experts with biases and the SwiGLU clamped
  /// at 7, as llama.cpp's graph fixes it.
  bool gptOssLayers = false;
  /// Gemma 4's: sliding and full layers of their own head sizes, KV heads,
  /// MLP widths and RoPE, shared KV, per-layer inputs (readGgufGemma4).
  bool gemma4Layers = false;
};

/// Every GGUF architecture, in the order messages list them. A new one is
/// a row here (and whatever its tensors need in decoderSpecOf).
const GgufArchitecture kGgufArchitectures[] = {
    {.name = "llama", .models = "LLaMA, Mistral, TinyLlama and the like"},
    {.name = "qwen2",
     .models = "Qwen2",
     .ropeStyle = RopeStyle::rotate_half,
     .qkvBias = true},
    {.name = "gemma",
     .models = "Gemma",
     .ropeStyle = RopeStyle::rotate_half,
     .activation = ActivationKind::gelu_tanh,
     .scaledEmbeddings = true},
    {.name = "qwen3",
     .models = "Qwen3",
     .ropeStyle = RopeStyle::rotate_half,
     .headNorms = true},
    {.name = "qwen2moe",
     .models = "Qwen1.5-MoE, Qwen2-MoE",
     .ropeStyle = RopeStyle::rotate_half,
     .qkvBias = true,
     .normalizeExperts = false},
    {.name = "qwen3moe",
     .models = "Qwen3-MoE",
     .ropeStyle = RopeStyle::rotate_half,
     .headNorms = true},
    {.name = "olmoe",
     .models = "OLMoE",
     .ropeStyle = RopeStyle::rotate_half,
     .headNorms = true,
     .normalizeExperts = false,
     .normsAcrossHeads = true},
    {.name = "gemma2",
     .models = "Gemma 2",
     .ropeStyle = RopeStyle::rotate_half,
     .activation = ActivationKind::gelu_tanh,
     .scaledEmbeddings = true,
     .slidingPattern = 2,
     .widthScaledLayers = 46},
    {.name = "gemma3",
     .models = "Gemma 3 (text)",
     .ropeStyle = RopeStyle::rotate_half,
     .activation = ActivationKind::gelu_tanh,
     .scaledEmbeddings = true,
     .headNorms = true,
     .slidingPattern = 6,
     .localRopeTheta = 10000,
     .widthScaledLayers = 62},
    {.name = "phi3",
     .models = "Phi-3",
     .ropeStyle = RopeStyle::rotate_half,
     .fusedProjections = true},
    {.name = "deepseek2",
     .models = "DeepSeek-V2 and V3, Kimi-K2, Moonlight",
     .latentAttention = true},
    {.name = "glm4moe",
     .models = "GLM-4.5, 4.6 and 4.7",
     .ropeStyle = RopeStyle::rotate_half,
     .qkvBias = true,
     .glmLayers = true},
    {.name = "qwen35",
     .models = "Qwen3.5",
     .ropeStyle = RopeStyle::rotate_half,
     .headNorms = true,
     .deltaNet = true},
    {.name = "qwen35moe",
     .models = "Qwen3.5-MoE",
     .ropeStyle = RopeStyle::rotate_half,
     .headNorms = true,
     .deltaNet = true},
    {.name = "qwen3next",
     .models = "Qwen3-Next",
     .ropeStyle = RopeStyle::rotate_half,
     .headNorms = true,
     .deltaNet = true},
    {.name = "gpt-oss",
     .models = "gpt-oss",
     .ropeStyle = RopeStyle::rotate_half,
     .qkvBias = true,
     .activation = ActivationKind::quick_gelu,
     .gptOssLayers = true},
    {.name = "gemma4",
     .models = "Gemma 4 (text)",
     .ropeStyle = RopeStyle::rotate_half,
     .activation = ActivationKind::gelu_tanh,
     .scaledEmbeddings = true,
     .headNorms = true,
     .gemma4Layers = true},
};

const GgufArchitecture *findGgufArchitecture(llvm::StringRef name) {
  return findFamily(kGgufArchitectures, &GgufArchitecture::name, name);
}

} // namespace

std::string mlir::tfm::supportedGgufArchitectureNames() {
  return familyNames(kGgufArchitectures, &GgufArchitecture::name);
}

namespace {

/// "\"llama\": LLaMA, ..., \"qwen2\": Qwen2, ...".
std::string supportedGgufArchitectures() {
  std::string list;
  for (const GgufArchitecture &arch : kGgufArchitectures)
    list += (list.empty() ? "\"" : "; \"") + arch.name.str() + "\": " +
            arch.models.str();
  return list;
}

/// Which layers slide a `window` and their RoPE base: every layer but
/// each `slidingPattern`-th, local layers' base `localRopeTheta`. Gemma 3's
/// as llama.cpp reads them: a pattern from attention.sliding_window_pattern
/// (a period, or a flag a layer; its converter writes none) and the local
/// base from rope.freq_base_swa (rope_local_base_freq), where given.
llvm::Error readSlidingLayers(const GgufFile &file,
                              const GgufArchitecture &arch, int64_t window,
                              DecoderSpec &spec) {
  std::string key = (arch.name + ".").str();
  spec.localRopeTheta = arch.localRopeTheta;
  const GgufValue *pattern = nullptr;
  if (arch.localRopeTheta) {
    llvm::Expected<std::optional<double>> base =
        file.optionalReal(key + "rope.freq_base_swa");
    if (!base)
      return base.takeError();
    spec.localRopeTheta = base->value_or(arch.localRopeTheta);
    pattern = file.lookup(key + "attention.sliding_window_pattern");
  }
  if (!pattern) {
    spec.windowAllButEvery(arch.slidingPattern, window);
    return llvm::Error::success();
  }
  if (pattern->kind == GgufValue::Kind::Integer && pattern->integer > 0 &&
      pattern->integer <= spec.numLayers + 1) {
    spec.windowAllButEvery(pattern->integer, window);
    return llvm::Error::success();
  }
  bool flags =
      pattern->kind == GgufValue::Kind::Array && !pattern->stringArray &&
      int64_t(pattern->numbers.size()) == spec.numLayers &&
      llvm::all_of(pattern->numbers, [](double v) { return v == 0 || v == 1; });
  if (!flags)
    return makeError(file.path() + ": metadata '" + key +
                     "attention.sliding_window_pattern' must be a period "
                     "from 1 to the layer count + 1, or a sliding flag for "
                     "each of the " +
                     llvm::Twine(spec.numLayers) + " layers");
  for (double sliding : pattern->numbers)
    spec.layerWindows.push_back(sliding ? window : 0);
  return llvm::Error::success();
}

/// Gemma 2 and 3's soft-caps (absent: none), windows, local RoPE and query
/// scale (see GgufArchitecture), once `spec` has its sizes and RoPE.
llvm::Error readGemmaLayers(const GgufFile &file, const GgufArchitecture &arch,
                            DecoderSpec &spec) {
  std::string key = (arch.name + ".").str();
  llvm::Expected<std::optional<double>> attentionCap =
      file.optionalReal(key + "attn_logit_softcapping");
  llvm::Expected<std::optional<double>> logitCap =
      file.optionalReal(key + "final_logit_softcapping");
  llvm::Expected<std::optional<int64_t>> window =
      file.optionalInteger(key + "attention.sliding_window", kMaxContext);
  if (!attentionCap)
    return attentionCap.takeError();
  if (!logitCap)
    return logitCap.takeError();
  if (!window)
    return window.takeError();
  spec.attentionSoftcap = attentionCap->value_or(0);
  spec.logitSoftcap = logitCap->value_or(0);
  if (!*window)
    return makeError(file.path() + ": metadata '" + key +
                     "attention.sliding_window' is missing");
  if (llvm::Error err = readSlidingLayers(file, arch, **window, spec))
    return err;
  if (spec.numHeads <= 0 || spec.headDim() <= 0)
    return llvm::Error::success(); // validateDecoderSpec says what is wrong
  double width = spec.numLayers == arch.widthScaledLayers
                     ? double(spec.hiddenSize / spec.numHeads)
                     : double(spec.headDim());
  spec.attentionScale = 1.0 / std::sqrt(width);
  return llvm::Error::success();
}

/// YaRN as llama.cpp reads it (llama_context's yarn_attn_factor, ggml's
/// rope_yarn): rope.scaling.factor, .original_context_length (default the
/// context), .yarn_beta_fast and .yarn_beta_slow (32 and 1), correction
/// dimensions always rounded outwards, and cos and sin multiplied by
/// 0.1 ln(factor) + 1 times rope.scaling.attn_factor (1). DeepSeek's
/// yarn_log_multiplier and an extrapolation mix other than 1 are refused.
llvm::Error readGgufYarn(const GgufFile &file, llvm::StringRef key,
                         const GgufArchitecture &arch, DecoderSpec &spec) {
  auto real = [&](llvm::StringRef name,
                  double fallback) -> llvm::Expected<double> {
    llvm::Expected<std::optional<double>> value =
        file.optionalReal((key + "rope.scaling." + name).str());
    if (!value)
      return value.takeError();
    return value->value_or(fallback);
  };
  llvm::Expected<double> factor = real("factor", 0);
  llvm::Expected<double> original =
      real("original_context_length", double(spec.maxContext));
  llvm::Expected<double> betaFast = real("yarn_beta_fast", 32);
  llvm::Expected<double> betaSlow = real("yarn_beta_slow", 1);
  llvm::Expected<double> mix = real("yarn_ext_factor", 1);
  llvm::Expected<double> logMultiplier = real("yarn_log_multiplier", 0);
  llvm::Expected<double> attnFactor = real("attn_factor", 1);
  for (llvm::Expected<double> *value :
       {&factor, &original, &betaFast, &betaSlow, &mix, &logMultiplier,
        &attnFactor})
    if (!*value)
      return value->takeError();
  if (!(*factor >= 1) || !(*original > 0) || !(*betaFast > 0) ||
      !(*betaSlow > 0) || !(*attnFactor > 0) ||
      !std::isfinite(*factor + *original + *betaFast + *betaSlow + *attnFactor))
    return makeError(file.path() + ": YaRN needs a finite rope.scaling.factor "
                                   "of at least 1 and positive "
                                   "original_context_length, yarn_beta_fast, "
                                   "yarn_beta_slow and attn_factor");
  if (*mix != 1 || (*logMultiplier != 0 && !arch.latentAttention))
    return makeError(file.path() + ": YaRN with rope.scaling.yarn_ext_factor "
                                   "other than 1, or a yarn_log_multiplier "
                                   "outside deepseek2, is not supported");
  for (double inverse : spec.yarnFrequencies(*factor, *original, *betaFast,
                                             *betaSlow, /*truncate=*/true))
    spec.ropeFrequencies.push_back(float(inverse));
  // DeepSeek's RoPE cancels YaRN's magnitude (its softmax scale carries
  // yarn_log_multiplier's instead: readGgufLatentAttention).
  spec.ropeMagnitude =
      (arch.latentAttention ? 1.0 : DecoderSpec::yarnMagnitude(*factor)) *
      *attnFactor;
  return llvm::Error::success();
}

/// gpt-oss's layers (GgufArchitecture::gptOssLayers) on top of the
/// LLaMA-like fields: llama.cpp's graph scales the scores by 1/sqrt(head
/// size) and fixes the SwiGLU's limit at 7.
llvm::Error readGgufGptOss(const GgufFile &file, llvm::StringRef key,
                           DecoderSpec &spec) {
  llvm::Expected<int64_t> window =
      file.integer((key + "attention.sliding_window").str(), kMaxContext);
  if (!window)
    return window.takeError();
  if (*window <= 0)
    return makeError(file.path() + ": metadata '" + key +
                     "attention.sliding_window' must be positive");
  spec.windowAllButEvery(2, *window);
  spec.outputBias = true;
  spec.expertBiases = true;
  spec.swigluLimit = 7.0;
  LayerWeightNames &n = spec.layer;
  n.attentionSinks = "blk.{}.attn_sinks.weight";
  n.mlpNorm = "blk.{}.post_attention_norm.weight";
  return llvm::Error::success();
}

/// The decoder's sizes from the file's "<arch>.*" metadata: width, depth
/// (less multi-token prediction layers), MLP width, heads, context, head
/// and rotary widths, RMSNorm's epsilon. `ffnGiven`: whether the file gave
/// a dense MLP width (a mixture of experts' stands in where not).
llvm::Error readGgufGeometry(const GgufFile &file, const std::string &key,
                             const GgufArchitecture &arch, DecoderSpec &spec,
                             bool &ffnGiven) {
  auto integer = [&](llvm::StringRef name, int64_t max) {
    return file.integer(key + name.str(), max);
  };
  llvm::Expected<int64_t> hidden = integer("embedding_length", kMaxWidth);
  llvm::Expected<int64_t> layers = integer("block_count", kMaxLayers);
  // Qwen3.5-MoE's files have no dense MLP width (checked after the
  // experts').
  // Gemma 4's may list a width a layer (readGgufGemma4 reads them).
  llvm::Expected<std::optional<int64_t>> ffn =
      arch.gemma4Layers
          ? llvm::Expected<std::optional<int64_t>>(std::nullopt)
          : file.optionalInteger(key + "feed_forward_length", kMaxWidth);
  llvm::Expected<int64_t> heads = integer("attention.head_count", kMaxHeads);
  llvm::Expected<int64_t> context = integer("context_length", kMaxContext);
  for (llvm::Expected<int64_t> *value : {&hidden, &layers, &heads, &context})
    if (!*value)
      return value->takeError();
  if (!ffn)
    return ffn.takeError();
  spec.hiddenSize = *hidden;
  if (arch.scaledEmbeddings)
    spec.embeddingScale = std::sqrt(double(spec.hiddenSize));
  spec.numLayers = *layers;
  // Multi-token prediction layers (DeepSeek-V3's, GLM-4.5's) are counted in
  // block_count after the model's own; their tensors are read past.
  llvm::Expected<std::optional<int64_t>> nextn =
      file.optionalInteger(key + "nextn_predict_layers", kMaxLayers);
  if (!nextn)
    return nextn.takeError();
  if (nextn->value_or(0) >= spec.numLayers && nextn->value_or(0) > 0)
    return makeError(file.path() + ": metadata '" + key +
                     "nextn_predict_layers' (" + llvm::Twine(**nextn) +
                     ") leaves no layer of the " + llvm::Twine(*layers) +
                     " blocks");
  spec.predictionLayers = nextn->value_or(0);
  spec.numLayers -= spec.predictionLayers;
  spec.intermediateSize = ffn->value_or(0);
  spec.numHeads = *heads;
  spec.maxContext = *context;
  llvm::Expected<std::optional<int64_t>> kvHeads =
      arch.gemma4Layers
          ? llvm::Expected<std::optional<int64_t>>(std::nullopt)
          : file.optionalInteger(key + "attention.head_count_kv", kMaxHeads);
  llvm::Expected<std::optional<int64_t>> headDim =
      file.optionalInteger(key + "attention.key_length", kMaxWidth);
  llvm::Expected<std::optional<int64_t>> ropeDims =
      file.optionalInteger(key + "rope.dimension_count", kMaxWidth);
  llvm::Expected<std::optional<double>> epsilon =
      file.optionalReal(key + "attention.layer_norm_rms_epsilon");
  if (!kvHeads) return kvHeads.takeError();
  if (!headDim) return headDim.takeError();
  if (!ropeDims) return ropeDims.takeError();
  if (!epsilon)
    return epsilon.takeError();
  spec.numKVHeads = kvHeads->value_or(spec.numHeads);
  // 0 would read as "hidden / heads" (explicitHeadDim's unset value).
  if (*headDim && **headDim == 0)
    return makeError(file.path() + ": metadata '" + key +
                     "attention.key_length' is 0, not a head size");
  if (*headDim && spec.numHeads && **headDim != spec.hiddenSize / spec.numHeads)
    spec.explicitHeadDim = **headDim;
  if (*ropeDims && **ropeDims != spec.headDim())
    spec.rotaryDim = **ropeDims;
  if (!*epsilon)
    return makeError(file.path() + ": metadata '" + key +
                     "attention.layer_norm_rms_epsilon' is missing");
  spec.normEpsilon = **epsilon;
  if (!std::isfinite(spec.normEpsilon) || spec.normEpsilon < 0)
    return makeError(file.path() + ": RMSNorm epsilon " +
                     std::to_string(spec.normEpsilon) +
                     " is not a non-negative finite number");
  ffnGiven = ffn->has_value();
  return llvm::Error::success();
}

/// RoPE's base and scaling (linear: Gemma 3's global layers; YaRN).
llvm::Error readGgufRope(const GgufFile &file, const std::string &key,
                         const GgufArchitecture &arch, DecoderSpec &spec) {
  llvm::Expected<std::optional<double>> theta =
      file.optionalReal(key + "rope.freq_base");
  llvm::Expected<std::optional<llvm::StringRef>> scaling =
      file.optionalString(key + "rope.scaling.type");
  if (!theta)
    return theta.takeError();
  if (!scaling)
    return scaling.takeError();
  spec.ropeTheta = theta->value_or(10000.0);
  if (!std::isfinite(spec.ropeTheta))
    return makeError(file.path() + ": rope.freq_base is not finite");
  // Linear scaling (Gemma 3's global layers): positions divided by the
  // factor, as every inverse frequency is.
  if (*scaling && **scaling == "linear") {
    llvm::Expected<std::optional<double>> factor =
        file.optionalReal(key + "rope.scaling.factor");
    if (!factor)
      return factor.takeError();
    if (!*factor || !(**factor >= 1) || !std::isfinite(**factor))
      return makeError(file.path() + ": linear RoPE scaling needs a finite "
                                     "rope.scaling.factor of at least 1");
    if (spec.numHeads > 0)
      for (double inverse : spec.inverseFrequencies())
        spec.ropeFrequencies.push_back(float(inverse / **factor));
  } else if (*scaling && **scaling == "yarn") {
    if (spec.numHeads > 0)
      if (llvm::Error err = readGgufYarn(file, key, arch, spec))
        return err;
  } else if (*scaling && **scaling != "none") {
    return makeError(file.path() + ": RoPE scaling '" + **scaling +
                     "' is not supported (tfmc reads linear and yarn)");
  }
  return llvm::Error::success();
}

/// A mixture of experts in each layer (Mixtral's llama, qwen2moe): the
/// expert count and width, experts a token, the shared expert's width.
llvm::Error readGgufExperts(const GgufFile &file, const std::string &key,
                            const GgufArchitecture &arch, DecoderSpec &spec,
                            bool ffnGiven) {
  // A mixture of experts in each layer (Mixtral's llama, qwen2moe):
  // stacked ffn_*_exps tensors, a router (ffn_gate_inp), qwen2moe's own
  // expert width and shared expert; weights renormalized or not as the
  // architecture says.
  llvm::Expected<std::optional<int64_t>> experts =
      file.optionalInteger(key + "expert_count", kMaxHeads);
  llvm::Expected<std::optional<int64_t>> used =
      file.optionalInteger(key + "expert_used_count", kMaxHeads);
  if (!experts)
    return experts.takeError();
  if (!used)
    return used.takeError();
  llvm::Expected<std::optional<int64_t>> expertWidth =
      file.optionalInteger(key + "expert_feed_forward_length", kMaxWidth);
  llvm::Expected<std::optional<int64_t>> sharedWidth = file.optionalInteger(
      key + "expert_shared_feed_forward_length", kMaxWidth);
  if (!expertWidth)
    return expertWidth.takeError();
  if (!sharedWidth)
    return sharedWidth.takeError();
  if (experts->value_or(0) > 0) {
    spec.numExperts = **experts;
    spec.expertsPerToken = used->value_or(0);
    spec.expertSize = expertWidth->value_or(spec.intermediateSize);
    spec.normalizeExpertWeights = arch.normalizeExperts;
    spec.sharedExpertSize = sharedWidth->value_or(0);
    if (!ffnGiven)
      spec.intermediateSize = spec.expertSize;
  }
  return llvm::Error::success();
}

/// The tensors' names, llama.cpp's: per layer, with the head norms,
/// Gemma's extra norms and the experts' stacks where the architecture has
/// them.
void setGgufTensorNames(const GgufArchitecture &arch, DecoderSpec &spec) {
  spec.tokenEmbedding = "token_embd.weight";
  spec.finalNorm = "output_norm.weight";
  spec.layer = {"blk.{}.attn_norm.weight", "blk.{}.attn_q.weight",
                "blk.{}.attn_k.weight",    "blk.{}.attn_v.weight",
                "blk.{}.attn_output.weight", "blk.{}.ffn_norm.weight",
                "blk.{}.ffn_up.weight",    "blk.{}.ffn_gate.weight",
                "blk.{}.ffn_down.weight"};
  if (arch.headNorms) {
    spec.layer.queryNorm = "blk.{}.attn_q_norm.weight";
    spec.layer.keyNorm = "blk.{}.attn_k_norm.weight";
    spec.qkNormAcrossHeads = arch.normsAcrossHeads;
  }
  if (arch.slidingPattern > 0) {
    spec.layer.postAttentionNorm = "blk.{}.post_attention_norm.weight";
    spec.layer.postMlpNorm = "blk.{}.post_ffw_norm.weight";
  }
  if (spec.numExperts > 0) {
    spec.layer.router = "blk.{}.ffn_gate_inp.weight";
    spec.layer.expertGate = "blk.{}.ffn_gate_exps.{e}.weight";
    spec.layer.expertUp = "blk.{}.ffn_up_exps.{e}.weight";
    spec.layer.expertDown = "blk.{}.ffn_down_exps.{e}.weight";
  }
}

/// The decoder of architecture `arch` from the file's "<arch>.*" metadata.
llvm::Expected<DecoderSpec> decoderSpecOf(const GgufFile &file,
                                          const GgufArchitecture &arch) {
  std::string key = (arch.name + ".").str();
  DecoderSpec spec;
  spec.family = arch.name.str();
  spec.qkvBias = arch.qkvBias;
  spec.rmsNorm = true;
  spec.ropeStyle = arch.ropeStyle;
  spec.gatedMlp = true;
  spec.activation = arch.activation;
  bool ffnGiven = false;
  if (llvm::Error err = readGgufGeometry(file, key, arch, spec, ffnGiven))
    return std::move(err);
  if (llvm::Error err = readGgufRope(file, key, arch, spec))
    return std::move(err);
  if (arch.slidingPattern > 0)
    if (llvm::Error err = readGemmaLayers(file, arch, spec))
      return std::move(err);
  if (llvm::Error err = readGgufExperts(file, key, arch, spec, ffnGiven))
    return std::move(err);
  setGgufTensorNames(arch, spec);
  if (arch.fusedProjections) {
    spec.layer.query = "blk.{}.attn_qkv.q.weight";
    spec.layer.key = "blk.{}.attn_qkv.k.weight";
    spec.layer.value = "blk.{}.attn_qkv.v.weight";
    spec.layer.gate = "blk.{}.ffn_up.gate.weight";
    spec.layer.up = "blk.{}.ffn_up.up.weight";
    llvm::Expected<std::optional<int64_t>> window =
        file.optionalInteger(key + "attention.sliding_window", kMaxContext);
    if (!window)
      return window.takeError();
    spec.slidingWindow = window->value_or(0);
  }
  if (arch.latentAttention)
    if (llvm::Error err = readGgufLatentAttention(file, key, spec))
      return std::move(err);
  if (arch.glmLayers)
    if (llvm::Error err = readGgufGlm4Moe(file, key, spec))
      return std::move(err);
  if (arch.deltaNet)
    if (llvm::Error err = readGgufDeltaNet(file, key, spec))
      return std::move(err);
  if (arch.gptOssLayers)
    if (llvm::Error err = readGgufGptOss(file, key, spec))
      return std::move(err);
  if (arch.gemma4Layers)
    if (llvm::Error err = readGgufGemma4(file, key, spec))
      return std::move(err);
  if (!spec.intermediateSize)
    return makeError(file.path() + ": metadata '" + key +
                     "feed_forward_length' is missing");
  if (spec.sharedExpertSize > 0 && !arch.latentAttention && !arch.glmLayers) {
    spec.layer.sharedGate = "blk.{}.ffn_gate_shexp.weight";
    spec.layer.sharedUp = "blk.{}.ffn_up_shexp.weight";
    spec.layer.sharedDown = "blk.{}.ffn_down_shexp.weight";
    spec.layer.sharedExpertGate = "blk.{}.ffn_gate_inp_shexp.weight";
  }
  return spec;
}

/// RoPE's inverse frequencies, each divided by its factor from tensor
/// `name` ([rotary dims / 2], positive), into `out`: Llama 3's rope_freqs
/// (llama.cpp's "freq_factors"), Phi-3's rope_factors_short and _long.
llvm::Error divideRopeFrequencies(const GgufFile &file,
                                  const WeightTensor &factors,
                                  llvm::StringRef name, const DecoderSpec &spec,
                                  std::vector<float> &out) {
  std::vector<double> inverse = spec.inverseFrequencies();
  int64_t pairs = int64_t(inverse.size());
  if (factors.shape() != std::vector<int64_t>{pairs})
    return makeError(file.path() + ": tensor '" + name + "' has shape " +
                     formatShape(factors.shape()) +
                     ", the rotary dimensions imply [" + llvm::Twine(pairs) +
                     "]");
  std::vector<float> values = factors.toF32();
  for (int64_t i = 0; i < pairs; ++i) {
    if (!(values[i] > 0) || !std::isfinite(values[i]))
      return makeError(file.path() + ": " + name + "[" + llvm::Twine(i) +
                       "] is not a positive number");
    out.push_back(float(inverse[i] / values[i]));
  }
  return llvm::Error::success();
}

/// Llama 3's RoPE: each inverse frequency divided by its factor from
/// rope_freqs.weight.
llvm::Error applyRopeFactors(const GgufFile &file, const WeightStore &weights,
                             DecoderSpec &spec) {
  const WeightTensor *factors = weights.lookup(kRopeFactors);
  if (!factors)
    return llvm::Error::success();
  return divideRopeFrequencies(file, *factors, kRopeFactors, spec,
                               spec.ropeFrequencies);
}

/// Phi-3's fused attn_qkv and ffn_up split into the parts the spec names,
/// and its LongRoPE (rope_factors_short and rope_factors_long, the
/// rope.scaling.original_context_length they switch at and the
/// rope.scaling.attn_factor that multiplies cos and sin).
llvm::Error preparePhi3(const GgufFile &file, const GgufArchitecture &arch,
                        WeightStore &weights, DecoderSpec &spec) {
  int64_t hd = spec.headDim(), d = spec.hiddenSize;
  for (int64_t l = 0; l < spec.numLayers; ++l) {
    std::string layer = "blk." + std::to_string(l) + ".";
    if (llvm::Error err =
            splitFusedRows(weights, file.path(), layer + "attn_qkv.",
                           {{"q", spec.numHeads * hd},
                            {"k", spec.numKVHeads * hd},
                            {"v", spec.numKVHeads * hd}},
                           d, "the metadata implies"))
      return err;
    if (llvm::Error err = splitFusedRows(
            weights, file.path(), layer + "ffn_up.",
            {{"gate", spec.intermediateSize}, {"up", spec.intermediateSize}}, d,
            "the metadata implies"))
      return err;
  }
  const WeightTensor *shortFactors = weights.lookup(kShortRopeFactors);
  const WeightTensor *longFactors = weights.lookup(kLongRopeFactors);
  if (!shortFactors && !longFactors)
    return llvm::Error::success();
  std::string key = (arch.name + ".").str();
  llvm::Expected<std::optional<int64_t>> original = file.optionalInteger(
      key + "rope.scaling.original_context_length", kMaxContext);
  llvm::Expected<std::optional<double>> magnitude =
      file.optionalReal(key + "rope.scaling.attn_factor");
  if (!original)
    return original.takeError();
  if (!magnitude)
    return magnitude.takeError();
  if (!shortFactors || !longFactors || !*original || **original <= 0)
    return makeError(file.path() + ": LongRoPE needs both '" +
                     kShortRopeFactors + "' and '" + kLongRopeFactors +
                     "' and a positive rope.scaling.original_context_length");
  if (llvm::Error err = divideRopeFrequencies(
          file, *shortFactors, kShortRopeFactors, spec, spec.ropeFrequencies))
    return err;
  if (llvm::Error err = divideRopeFrequencies(
          file, *longFactors, kLongRopeFactors, spec, spec.ropeLongFrequencies))
    return err;
  spec.ropeLongContext = **original;
  spec.ropeMagnitude = magnitude->value_or(1.0);
  if (!(spec.ropeMagnitude > 0) || !std::isfinite(spec.ropeMagnitude))
    return makeError(file.path() + ": rope.scaling.attn_factor is not a "
                                   "positive number");
  return llvm::Error::success();
}

/// The name of expert `e`'s slice of a stacked tensor:
/// "blk.0.ffn_up_exps.weight" -> "blk.0.ffn_up_exps.3.weight" (and
/// ".bias" -> ".3.bias").
std::string expertSliceName(llvm::StringRef stacked, int64_t expert) {
  llvm::StringRef base = stacked;
  llvm::StringRef suffix = base.consume_back(".weight") ? ".weight"
                           : base.consume_back(".bias") ? ".bias"
                                                        : "";
  return (base + "." + llvm::Twine(expert) + suffix).str();
}

/// Refuses a tensor of blocks one of whose scales is infinite or NaN:
/// the kernels and the decoding would turn its weights into NaN or zeros
/// without a word. `base` is the file's first byte (its mapping, which a
/// store may hold by now). Reading the scales pages every block tensor in
/// once (as the packager does again later), so it comes after the checks
/// that read only the header; the pages then leave this process's
/// resident set.
llvm::Error checkBlockScales(const GgufFile &file, const uint8_t *base,
                             bool mapped) {
  std::string source = llvm::sys::path::filename(file.path()).str();
  for (const GgufTensor &tensor : file.tensors()) {
    int64_t blockElements = checkpointBlockElements(tensor.dtype);
    if (blockElements == 1)
      continue;
    const uint8_t *data = base + tensor.offset;
    int64_t blocks = int64_t(tensor.bytes) / checkpointBlockBytes(tensor.dtype);
    std::optional<NonFiniteScale> bad =
        findNonFiniteScale(tensor.dtype, data, blocks);
    WeightTensor::view(tensor.shape, tensor.dtype, data, mapped, source)
        .releasePages();
    if (!bad)
      continue;
    return makeError(file.path() + ": tensor '" + tensor.name + "' (" +
                     checkpointName(tensor.dtype) + ") block " +
                     llvm::Twine(bad->block) + " of " + llvm::Twine(blocks) +
                     " (elements " + llvm::Twine(bad->block * blockElements) +
                     " to " +
                     llvm::Twine((bad->block + 1) * blockElements - 1) +
                     ") has scale " + bad->field + " = " +
                     describeNonFiniteScale(*bad) + ": the file is corrupt");
  }
  return llvm::Error::success();
}

/// Every tensor of `file` as a view of its mapping (which the caller
/// hands to the store once done with the file); a tensor of stacked
/// experts ([experts, rows, columns]: Mixtral's ffn_*_exps) as each
/// expert's matrix instead (expertSliceName), rows of whole blocks.
void addGgufTensors(const GgufFile &file, WeightStore &weights) {
  std::string source = llvm::sys::path::filename(file.path()).str();
  for (const GgufTensor &tensor : file.tensors()) {
    const uint8_t *data = file.bytes() + tensor.offset;
    // Qwen2-MoE's shared expert gate vector: [hidden] in the file, the
    // [1, hidden] projection it is.
    if (tensor.shape.size() == 1 &&
        llvm::StringRef(tensor.name).ends_with("ffn_gate_inp_shexp.weight")) {
      weights.add(tensor.name,
                  WeightTensor::view({1, tensor.shape[0]}, tensor.dtype, data,
                                     file.isMapped(), source));
      continue;
    }
    // MLA's per-head up-projections, [heads, out, in]: the [heads · out,
    // in] weight tfm.head_linear reads.
    if (tensor.shape.size() == 3 &&
        (llvm::StringRef(tensor.name).ends_with(".attn_k_b.weight") ||
         llvm::StringRef(tensor.name).ends_with(".attn_v_b.weight"))) {
      weights.add(tensor.name,
                  WeightTensor::view({tensor.shape[0] * tensor.shape[1],
                                      tensor.shape[2]},
                                     tensor.dtype, data, file.isMapped(),
                                     source));
      continue;
    }
    // gpt-oss's experts' biases, [experts, rows]: each expert's row.
    if (tensor.shape.size() == 2 &&
        llvm::StringRef(tensor.name).ends_with("_exps.bias")) {
      int64_t bytes = checkpointStoredBytes(tensor.dtype, tensor.shape[1]);
      for (int64_t e = 0; e < tensor.shape[0]; ++e)
        weights.add(expertSliceName(tensor.name, e),
                    WeightTensor::view({tensor.shape[1]}, tensor.dtype,
                                       data + e * bytes, file.isMapped(),
                                       source));
      continue;
    }
    if (tensor.shape.size() != 3 ||
        !llvm::StringRef(tensor.name).contains("_exps.")) {
      weights.add(tensor.name,
                  WeightTensor::view(tensor.shape, tensor.dtype, data,
                                     file.isMapped(), source));
      continue;
    }
    std::vector<int64_t> matrix = {tensor.shape[1], tensor.shape[2]};
    int64_t bytes =
        tensor.shape[1] * checkpointStoredBytes(tensor.dtype, tensor.shape[2]);
    for (int64_t e = 0; e < tensor.shape[0]; ++e)
      weights.add(expertSliceName(tensor.name, e),
                  WeightTensor::view(matrix, tensor.dtype, data + e * bytes,
                                     file.isMapped(), source));
  }
}

} // namespace

llvm::Error mlir::tfm::readGgufWeights(llvm::StringRef path,
                                       WeightStore &weights) {
  llvm::Expected<GgufFile> file = GgufFile::open(path);
  if (!file)
    return file.takeError();
  addGgufTensors(*file, weights);
  if (llvm::Error err =
          checkBlockScales(*file, file->bytes(), file->isMapped()))
    return err;
  weights.keepMapped(file->releaseBuffer());
  return llvm::Error::success();
}

llvm::Expected<LoadedModel>
mlir::tfm::loadGgufModel(mlir::MLIRContext &context, llvm::StringRef path,
                         bool withTokenizer,
                         llvm::ArrayRef<LoraAdapterSpec> adapters) {
  llvm::Expected<GgufFile> file = GgufFile::open(path);
  if (!file)
    return file.takeError();
  llvm::Expected<std::optional<llvm::StringRef>> arch =
      file->optionalString("general.architecture");
  if (!arch)
    return arch.takeError();
  if (!*arch)
    return makeError(path + ": metadata 'general.architecture' is missing");
  // Else the first weight looked up would be reported missing, whatever
  // the file's records after the header hold.
  if (file->tensors().empty())
    return makeError(path + ": the tensor count (at byte 8) is 0: a model "
                            "file needs its weights");
  const GgufArchitecture *architecture = findGgufArchitecture(**arch);
  if (!architecture)
    return makeError(path + ": architecture '" + **arch +
                     "' is not supported (GGUF input reads " +
                     supportedGgufArchitectures() + ")");
  llvm::Expected<DecoderSpec> spec = decoderSpecOf(*file, *architecture);
  if (!spec)
    return spec.takeError();

  LoadedModel model;
  addGgufTensors(*file, model.weights);
  // Before the family's rewrites, which then see the merged weights.
  for (const LoraAdapterSpec &adapter : adapters) {
    llvm::Expected<std::vector<std::string>> merged =
        mergeGgufLoraAdapter(adapter, model.weights, model.notes);
    if (!merged)
      return merged.takeError();
  }
  const WeightTensor *embedding = model.weights.lookup(spec->tokenEmbedding);
  if (!embedding || embedding->shape().size() != 2)
    return makeError(path + ": tensor '" + spec->tokenEmbedding +
                     "' (the token embedding, [vocab, width]) is missing or "
                     "not a matrix");
  spec->vocabSize = embedding->shape()[0];
  spec->lmHead = model.weights.contains("output.weight") ? "output.weight" : "";
  if (architecture->gemma4Layers)
    if (llvm::Error err = prepareGgufGemma4(*file, *spec, model.weights))
      return std::move(err);
  if (llvm::Error err = validateDecoderSpec(*spec, path))
    return std::move(err);
  if (!architecture->gemma4Layers)
    if (llvm::Error err = applyRopeFactors(*file, model.weights, *spec))
      return std::move(err);
  if (architecture->fusedProjections)
    if (llvm::Error err =
            preparePhi3(*file, *architecture, model.weights, *spec))
      return std::move(err);
  if (architecture->deltaNet)
    if (llvm::Error err = prepareGgufDeltaNet(*file, *spec, model.weights))
      return std::move(err);
  if (spec->mla.enabled())
    prepareGgufLatentAttention(*spec, model.weights);

  if (withTokenizer) {
    llvm::Expected<std::optional<TokenizerVocab>> vocab =
        readGgufTokenizer(*file);
    if (!vocab)
      return vocab.takeError();
    if (*vocab) {
      // A table padded past the tokenizer is usual (see readTokenizerAt).
      if (int64_t((*vocab)->pieces.size()) > spec->vocabSize)
        return makeError(path + ": the tokenizer has " +
                         llvm::Twine((*vocab)->pieces.size()) +
                         " tokens, more than the token embedding's " +
                         llvm::Twine(spec->vocabSize) +
                         " rows (tfmc takes a tokenizer no larger than the "
                         "table)");
      model.tokenizer = std::move(**vocab);
      model.tokenizerPath = path.str();
    }
  }
  llvm::Expected<std::optional<llvm::StringRef>> tokenizerKind =
      file->optionalString("tokenizer.ggml.model");
  if (!tokenizerKind)
    return tokenizerKind.takeError();
  auto tokenId = [&](llvm::StringRef key,
                     int32_t fallback = -1) -> llvm::Expected<int32_t> {
    llvm::Expected<std::optional<int64_t>> id =
        file->optionalInteger(key, spec->vocabSize - 1);
    if (!id)
      return id.takeError();
    return int32_t(id->value_or(fallback));
  };
  // llama.cpp's defaults for a SentencePiece vocabulary whose file names
  // no BOS or EOS (convert_hf_to_gguf.py writes none where the folder's
  // tokenizer files do not say): <s> 1 and </s> 2.
  bool sentencePiece = *tokenizerKind && **tokenizerKind == "llama";
  llvm::Expected<int32_t> bos =
      tokenId("tokenizer.ggml.bos_token_id", sentencePiece ? 1 : -1);
  if (!bos)
    return bos.takeError();
  llvm::Expected<int32_t> eos =
      tokenId("tokenizer.ggml.eos_token_id", sentencePiece ? 2 : -1);
  if (!eos)
    return eos.takeError();
  llvm::Expected<std::optional<int64_t>> addBos =
      file->optionalInteger("tokenizer.ggml.add_bos_token", 1);
  if (!addBos)
    return addBos.takeError();
  llvm::Expected<std::optional<llvm::StringRef>> chatTemplate =
      file->optionalString("tokenizer.chat_template");
  if (!chatTemplate)
    return chatTemplate.takeError();
  if (*chatTemplate) {
    if (llvm::Error err = checkChatTemplate(
            path + ": tokenizer.chat_template", **chatTemplate))
      return std::move(err);
    model.chatTemplate = (*chatTemplate)->str();
  }
  llvm::Expected<std::optional<llvm::StringRef>> pre =
      file->optionalString("tokenizer.ggml.pre");
  if (!pre)
    return pre.takeError();
  model.bosToken = *bos;
  model.eosToken = *eos;
  // llama.cpp also ends generation at the end-of-turn and end-of-message
  // tokens its converter names.
  for (const char *key : {"tokenizer.ggml.eot_token_id",
                          "tokenizer.ggml.eom_token_id"}) {
    llvm::Expected<int32_t> stop = tokenId(key);
    if (!stop)
      return stop.takeError();
    if (*stop >= 0)
      model.stopTokens.push_back(*stop);
  }
  // llama.cpp's defaults: SentencePiece vocabularies and Gemma 4's start
  // with BOS; GLM-4's pre-tokenizer has none, whatever the file says.
  bool startsWithBos = *tokenizerKind && (**tokenizerKind == "llama" ||
                                          **tokenizerKind == "gemma4");
  model.addBos = addBos->value_or(startsWithBos);
  if (*pre && (**pre == "glm4" || **pre == "chatglm-bpe"))
    model.addBos = false;

  const uint8_t *base = file->bytes();
  bool mapped = file->isMapped();
  model.weights.keepMapped(file->releaseBuffer());
  auto module = buildDecoder(
      context, *spec, model.weights, path, [&](llvm::StringRef name) {
        return name == kRopeFactors || name == kShortRopeFactors ||
               name == kLongRopeFactors ||
               spec->isPredictionLayerTensor(name, "blk.");
      });
  if (!module)
    return module.takeError();
  if (llvm::Error err = checkBlockScales(*file, base, mapped))
    return std::move(err);
  model.module = std::move(*module);
  recordDecoderShape(model, *spec);
  model.family = spec->family;
  return model;
}
