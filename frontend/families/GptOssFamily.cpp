//===- GptOssFamily.cpp - OpenAI's gpt-oss ----------------------------===//
//
// gpt-oss (openai/gpt-oss-20b, -120b; transformers' gpt_oss): LLaMA's
// layout with biases on every attention projection, a learned sink per
// head in every softmax (self_attn.sinks), sliding-window (128) and full
// layers alternating, YaRN, and a mixture of experts whose router and
// experts have biases and whose SwiGLU is clamped (swiglu_limit) with the
// +1 on up. Its experts are stored stacked, gate and up interleaved
// ([E, hidden, 2·I], transposed against nn.Linear): each expert's
// projections are read as strided views of them. The MXFP4 release
// (quantization_config.quant_method "mxfp4") stores them as U8 blocks and
// exponents instead ([E, 2·I, hidden / 32, 16] and [E, 2·I, hidden / 32]:
// rows are output features, gate and up interleaved by row), read as
// MXFP4 tensors whose blocks the kernels keep.
//
//===----------------------------------------------------------------------===//

#include "frontend/families/GptOssFamily.h"
#include "frontend/families/DecoderConfigReaders.h"
#include "frontend/formats/ErrorMessages.h"
#include "frontend/formats/StoredDtypes.h"

#include <algorithm>

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
  if (const llvm::json::Object *quantization =
          config.nested("quantization_config")) {
    std::optional<llvm::StringRef> method =
        quantization->getString("quant_method");
    if (method != std::optional<llvm::StringRef>("mxfp4"))
      config.fail("unsupported quantization_config.quant_method '" +
                  method.value_or("(none)") + "' (supported: mxfp4)");
  }
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

namespace {

/// The experts' projections of one layer as the checkpoint stores them:
/// [E·2I, hidden] gate and up interleaved by row, [E·hidden, I] down, each
/// expert's rows its own (MXFP4); or the BF16 release's [E, hidden, 2I]
/// and [E, I, hidden].
struct StackedExperts {
  WeightTensor gateUp, down;
  bool byRows; // MXFP4's [out, in] rows, not the BF16 [in, out] stacks
};

/// Reads layer `base`'s MXFP4 experts (`*_blocks`, `*_scales`), checking
/// their shapes and exponents (E8M0's 0xff is NaN).
llvm::Expected<StackedExperts> readMxfp4Experts(const WeightStore &store,
                                                const std::string &base,
                                                const DecoderSpec &spec,
                                                llvm::StringRef checkpoint) {
  int64_t experts = spec.numExperts, d = spec.hiddenSize, f = spec.expertSize;
  struct Part {
    const char *name;
    int64_t rows, cols;
  } parts[] = {{"gate_up_proj", 2 * f, d}, {"down_proj", d, f}};
  WeightTensor read[2];
  for (int i = 0; i < 2; ++i) {
    const Part &part = parts[i];
    std::string blocksName = base + part.name + "_blocks",
                scalesName = base + part.name + "_scales";
    const ByteTensor *blocks = store.lookupBytes(blocksName);
    const ByteTensor *scales = store.lookupBytes(scalesName);
    int64_t groups = part.cols / 32;
    std::vector<int64_t> blocksShape = {experts, part.rows, groups, 16},
                         scalesShape = {experts, part.rows, groups};
    auto wrong = [&](const std::string &name, const ByteTensor *tensor,
                     const std::vector<int64_t> &shape) {
      return makeError(checkpoint + ": tensor '" + name + "' " +
                       (tensor ? "has shape " + formatShape(tensor->shape)
                               : std::string("is missing")) +
                       ", the " + spec.family + " config implies U8 " +
                       formatShape(shape));
    };
    if (part.cols % 32 != 0)
      return makeError(checkpoint + ": " + base + part.name + ": MXFP4 " +
                       "blocks need rows of whole blocks of 32, the config "
                       "implies " + llvm::Twine(part.cols));
    if (!blocks || blocks->shape != blocksShape)
      return wrong(blocksName, blocks, blocksShape);
    if (!scales || scales->shape != scalesShape)
      return wrong(scalesName, scales, scalesShape);
    int64_t count = experts * part.rows * groups;
    const uint8_t *nan = std::find(scales->data, scales->data + count, 0xff);
    if (nan != scales->data + count) {
      int64_t at = nan - scales->data;
      return makeError(checkpoint + ": tensor '" + scalesName + "' [" +
                       llvm::Twine(at / (part.rows * groups)) + ", " +
                       llvm::Twine(at / groups % part.rows) + ", " +
                       llvm::Twine(at % groups) +
                       "] is E8M0 0xff (NaN): the file is corrupt");
    }
    read[i] = WeightTensor::mxfp4Pair(experts * part.rows, part.cols, *blocks,
                                      *scales);
  }
  return StackedExperts{read[0], read[1], true};
}

/// Reads layer `base`'s BF16 experts, checking their shapes.
llvm::Expected<StackedExperts> readFloatExperts(WeightStore &store,
                                                const std::string &base,
                                                const DecoderSpec &spec,
                                                llvm::StringRef checkpoint) {
  int64_t experts = spec.numExperts, d = spec.hiddenSize, f = spec.expertSize;
  std::string what = spec.family + " config implies";
  struct Stacked {
    const char *name;
    std::vector<int64_t> shape;
  } stacked[] = {{"gate_up_proj", {experts, d, 2 * f}},
                 {"down_proj", {experts, f, d}}};
  for (const Stacked &s : stacked)
    if (std::optional<std::string> error =
            store.mismatch(checkpoint, base + s.name, s.shape, what))
      return makeError(*error);
  StackedExperts read{store.take(base + "gate_up_proj"),
                      store.take(base + "down_proj"), false};
  for (const WeightTensor *t : {&read.gateUp, &read.down})
    if (checkpointBlockElements(t->dtype()) != 1)
      return makeError(checkpoint + ": " + base + " experts stored as " +
                       checkpointName(t->dtype()) +
                       " blocks cannot be split per expert");
  return read;
}

/// Rows [first, first + count·step) by `step` (a view's row list).
std::vector<int64_t> rowsBy(int64_t first, int64_t count, int64_t step) {
  std::vector<int64_t> rows;
  for (int64_t i = 0; i < count; ++i)
    rows.push_back(first + i * step);
  return rows;
}

} // namespace

llvm::Error mlir::tfm::prepareGptOssCheckpoint(DecoderSpec &spec,
                                               WeightStore &store,
                                               llvm::StringRef checkpoint) {
  int64_t experts = spec.numExperts, d = spec.hiddenSize, f = spec.expertSize;
  std::string what = spec.family + " config implies";
  for (int64_t l = 0; l < spec.numLayers; ++l) {
    std::string base = layerWeightName(kExperts, l);
    llvm::Expected<StackedExperts> stacked =
        store.lookupBytes(base + "gate_up_proj_blocks")
            ? readMxfp4Experts(store, base, spec, checkpoint)
            : readFloatExperts(store, base, spec, checkpoint);
    if (!stacked)
      return stacked.takeError();
    for (auto [name, shape] :
         {std::pair<const char *, std::vector<int64_t>>{"gate_up_proj_bias",
                                                        {experts, 2 * f}},
          {"down_proj_bias", {experts, d}}})
      if (std::optional<std::string> error =
              store.mismatch(checkpoint, base + name, shape, what))
        return makeError(*error);
    WeightTensor gateUpBias = store.take(base + "gate_up_proj_bias"),
                 downBias = store.take(base + "down_proj_bias");
    const WeightTensor &gateUp = stacked->gateUp, &down = stacked->down;
    for (int64_t e = 0; e < experts; ++e) {
      auto name = [&](const std::string &pattern) {
        return expertWeightName(pattern, l, e);
      };
      if (stacked->byRows) {
        // MXFP4: expert e's gate is rows 2o of its 2I, its up rows 2o + 1;
        // its down its d rows.
        store.add(name(spec.layer.expertGate),
                  gateUp.selectRows(rowsBy(e * 2 * f, f, 2), {f, d}));
        store.add(name(spec.layer.expertUp),
                  gateUp.selectRows(rowsBy(e * 2 * f + 1, f, 2), {f, d}));
        store.add(name(spec.layer.expertDown),
                  down.selectRows(rowsBy(e * d, d, 1), {d, f}));
      } else {
        // Expert e's gate (o, i) is gate_up[e, i, 2o], its up
        // [e, i, 2o + 1]; its down (o, i) is down_proj[e, i, o].
        int64_t at = e * d * 2 * f;
        store.add(name(spec.layer.expertGate),
                  gateUp.strided({f, d}, at, 2, 2 * f));
        store.add(name(spec.layer.expertUp),
                  gateUp.strided({f, d}, at + 1, 2, 2 * f));
        store.add(name(spec.layer.expertDown),
                  down.strided({d, f}, e * f * d, 1, d));
      }
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
