//===- GptOssFamily.cpp - OpenAI's gpt-oss ----------------------------===//
//
// gpt-oss (openai/gpt-oss-20b, -120b; transformers' gpt_oss): LLaMA's
// layout with biases on every attention projection, a learned sink per
// head in every softmax (self_attn.sinks), sliding-window (128) and full
// layers alternating, YaRN, and a mixture of experts whose router and
// experts have biases and whose SwiGLU is clamped (swiglu_limit) with the
// +1 on up. Its experts are stored stacked, gate and up interleaved
// ([E, hidden, 2·I], transposed against nn.Linear): each expert's
// projections are read as strided views of them.
//
//===----------------------------------------------------------------------===//

#include "frontend/families/GptOssFamily.h"
#include "frontend/ErrorMessages.h"
#include "frontend/families/DecoderConfigReaders.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// Where prepareGptOssCheckpoint puts each expert's projections.
constexpr const char *kExperts = "model.layers.{}.mlp.experts.";

} // namespace

DecoderSpec mlir::tfm::readGptOssSpec(ConfigReader &config) {
  DecoderSpec spec;
  spec.family = "gpt_oss";
  readLlamaSizes(config, spec);
  readHeadDim(config, spec);
  spec.rmsNorm = true;
  spec.normEpsilon = config.number("rms_norm_eps", 1e-5);
  bool bias = config.boolean("attention_bias", true);
  spec.qkvBias = spec.outputBias = bias;
  readRopeScaling(config, spec);
  useLlamaNames(config, spec, /*tiedByDefault=*/false);
  spec.layer.attentionSinks = "model.layers.{}.self_attn.sinks";
  // Sliding layers first, then full ones, alternating, unless layer_types
  // says otherwise.
  int64_t window = config.positiveInteger("sliding_window", 128);
  if (!readLayerTypes(config, spec, window))
    spec.windowAllButEvery(2, window);
  // The experts: top-k of the router's logits, softmaxed over the k (the
  // softmax over all, renormalized over the k, is the same), each
  // quick_gelu(min(g, L)) · (clamp(u, -L, L) + 1) with biases. config's
  // hidden_act ("silu") does not describe it.
  readExpertCounts(config, spec, "num_local_experts", {32, 4});
  spec.expertSize = spec.intermediateSize;
  spec.gatedMlp = true;
  spec.activation = ActivationKind::quick_gelu;
  spec.normalizeExpertWeights = true;
  spec.expertBiases = true;
  spec.swigluLimit = config.positiveNumber("swiglu_limit", 7.0);
  std::string mlp = "model.layers.{}.mlp.";
  useExpertNames(spec, mlp, "gate_proj", "up_proj", "down_proj");
  spec.layer.router = mlp + "router.weight";
  return spec;
}

llvm::Error mlir::tfm::prepareGptOssCheckpoint(DecoderSpec &spec,
                                               WeightStore &store,
                                               llvm::StringRef checkpoint) {
  int64_t experts = spec.numExperts, d = spec.hiddenSize, f = spec.expertSize;
  std::string what = spec.family + " config implies";
  for (int64_t l = 0; l < spec.numLayers; ++l) {
    std::string base = layerWeightName(kExperts, l);
    if (store.hasIntegerBuffer(base + "gate_up_proj_blocks"))
      return makeError(checkpoint + ": " + base +
                       "gate_up_proj_blocks: gpt-oss's MXFP4 experts are not "
                       "read yet; use its BF16 release");
    struct Stacked {
      const char *name;
      std::vector<int64_t> shape;
    } stacked[] = {{"gate_up_proj", {experts, d, 2 * f}},
                   {"gate_up_proj_bias", {experts, 2 * f}},
                   {"down_proj", {experts, f, d}},
                   {"down_proj_bias", {experts, d}}};
    for (const Stacked &s : stacked)
      if (std::optional<std::string> error =
              store.mismatch(checkpoint, base + s.name, s.shape, what))
        return makeError(*error);
    WeightTensor gateUp = store.take(base + "gate_up_proj"),
                 gateUpBias = store.take(base + "gate_up_proj_bias"),
                 down = store.take(base + "down_proj"),
                 downBias = store.take(base + "down_proj_bias");
    for (const WeightTensor *t : {&gateUp, &gateUpBias, &down, &downBias})
      if (dtypeBlockElements(t->dtype()) != 1)
        return makeError(checkpoint + ": " + base + " experts stored as " +
                         dtypeName(t->dtype()) +
                         " blocks cannot be split per expert");
    for (int64_t e = 0; e < experts; ++e) {
      auto name = [&](const std::string &pattern) {
        return expertWeightName(pattern, l, e);
      };
      // Expert e's gate (o, i) is gate_up[e, i, 2o], its up [e, i, 2o + 1];
      // its down (o, i) is down_proj[e, i, o].
      int64_t at = e * d * 2 * f;
      store.add(name(spec.layer.expertGate),
                gateUp.strided({f, d}, at, 2, 2 * f));
      store.add(name(spec.layer.expertUp),
                gateUp.strided({f, d}, at + 1, 2, 2 * f));
      store.add(name(spec.layer.expertDown),
                down.strided({d, f}, e * f * d, 1, d));
      store.add(biasName(name(spec.layer.expertGate)),
                gateUpBias.strided({f}, e * 2 * f, 2, 1));
      store.add(biasName(name(spec.layer.expertUp)),
                gateUpBias.strided({f}, e * 2 * f + 1, 2, 1));
      store.add(biasName(name(spec.layer.expertDown)),
                downBias.strided({d}, e * d, 1, 1));
    }
  }
  return llvm::Error::success();
}
