//===- QwenHybridFamilies.cpp - Qwen3-Next and Qwen3.5 ------------------===//
//
// See QwenHybridFamilies.h. The text is transcribed from transformers'
// qwen3_next and qwen3_5 modeling files (test/e2e/reference/qwen3_next.py
// names the versions), which this reads as they name their fields.
//
//===----------------------------------------------------------------------===//

#include "frontend/families/QwenHybridFamilies.h"
#include "frontend/families/DecoderConfigReaders.h"
#include "frontend/families/DecoderFamilies.h"
#include "frontend/formats/ErrorMessages.h"

#include "llvm/ADT/STLExtras.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;

namespace {

enum class HybridKind { next, dense, moe };

/// RoPE of the full-attention layers: rope_theta and partial_rotary_factor
/// (0.25) at the top (transformers 4.x) or in rope_parameters (5.x, with
/// rope_type "default"). Qwen3.5's multimodal RoPE (mrope_section) rotates
/// text alike in its three sections, whose positions are equal for text:
/// it is plain RoPE here, and images are not read.
void readHybridRope(ConfigReader &config, DecoderSpec &spec) {
  const llvm::json::Object *parameters = config.nested("rope_parameters");
  if (!parameters) {
    spec.ropeTheta = config.number("rope_theta", 10000.0);
    readPartialRotary(config, "partial_rotary_factor", 0.25, spec);
    const llvm::json::Object *scaling = config.nested("rope_scaling");
    // transformers 4.x writes Qwen's multimodal RoPE as a rope_scaling of
    // type "mrope" (or "default") with its sections.
    if (scaling && scaling->get("mrope_section")) {
      ConfigReader fields(*scaling, "rope_scaling");
      std::string type = fields.string("rope_type", fields.string("type", "default"));
      if (type != "default" && type != "mrope")
        config.fail("unsupported config value rope_scaling type '" + type +
                    "' beside mrope_section");
      return;
    }
    readRopeScaling(config, spec);
    return;
  }
  ConfigReader fields(*parameters, "rope_parameters");
  spec.ropeTheta = fields.number("rope_theta", 10000.0);
  std::string type = fields.string("rope_type", "default");
  if (type != "default")
    config.fail("unsupported config value rope_parameters rope_type '" + type +
                "' (supported: default)");
  double factor = fields.number("partial_rotary_factor",
                                config.number("partial_rotary_factor", 0.25));
  if (!(factor > 0 && factor <= 1))
    config.fail("config value partial_rotary_factor must be in (0, 1], got " +
                std::to_string(factor));
  else
    spec.rotaryDim = int64_t(spec.headDim() * factor);
  if (llvm::Error err = fields.takeError())
    config.fail(llvm::toString(std::move(err)));
}

/// Which layers are Gated DeltaNet: as layer_types lists them
/// ("linear_attention", "full_attention"), else all but every
/// full_attention_interval-th (4).
void readLayerKinds(ConfigReader &config, DecoderSpec &spec) {
  std::vector<std::string> types = config.strings("layer_types");
  if (types.empty()) {
    int64_t interval = config.positiveInteger("full_attention_interval", 4);
    for (int64_t l = 0; l < spec.numLayers && spec.numLayers <= 1 << 16; ++l)
      spec.recurrentLayers.push_back((l + 1) % interval != 0);
    return;
  }
  for (const std::string &type : types) {
    if (type != "linear_attention" && type != "full_attention")
      config.fail("layer_types must list \"linear_attention\" or "
                  "\"full_attention\", got \"" + type + "\"");
    spec.recurrentLayers.push_back(type == "linear_attention");
  }
}

/// The checkpoint names, every one under `prefix` ("model." or Qwen3.5's
/// image-text "model.language_model.").
void useHybridNames(ConfigReader &config, DecoderSpec &spec,
                    const std::string &prefix, bool tiedByDefault) {
  useLlamaNames(config, spec, tiedByDefault, prefix);
  std::string p = prefix + "layers.{}.";
  spec.layer.queryNorm = p + "self_attn.q_norm.weight";
  spec.layer.keyNorm = p + "self_attn.k_norm.weight";
  std::string r = p + "linear_attn.";
  LayerWeightNames &n = spec.layer;
  n.recurrentQkv = r + "in_proj_qkv.weight";
  n.recurrentGate = r + "in_proj_z.weight";
  n.recurrentBeta = r + "in_proj_b.weight";
  n.recurrentAlpha = r + "in_proj_a.weight";
  n.recurrentAlphaBias = r + "dt_bias";
  n.recurrentConv = r + "conv1d.weight";
  n.recurrentDecay = r + "A_log";
  n.recurrentNorm = r + "norm.weight";
  n.recurrentOutput = r + "out_proj.weight";
}

/// Experts in every layer with a shared expert gated by
/// sigmoid(shared_expert_gate · x) (Qwen2-MoE's): layers without experts
/// (decoder_sparse_step, mlp_only_layers) are refused by name.
void readHybridExperts(ConfigReader &config, DecoderSpec &spec,
                       const std::string &prefix, bool alwaysNormalized) {
  if (config.integer("decoder_sparse_step", 1) != 1)
    config.fail("unsupported config value decoder_sparse_step (tfmc reads "
                "experts in every layer: 1)");
  const llvm::json::Array *dense = config.raw().getArray("mlp_only_layers");
  if (dense && !dense->empty())
    config.fail("unsupported config value mlp_only_layers (tfmc reads "
                "experts in every layer: [])");
  readExpertCounts(config, spec, "num_experts", {512, 10});
  spec.expertSize = config.positiveInteger("moe_intermediate_size", 512);
  spec.normalizeExpertWeights =
      alwaysNormalized || config.boolean("norm_topk_prob", true);
  spec.sharedExpertSize =
      config.positiveInteger("shared_expert_intermediate_size", 512);
  std::string mlp = prefix + "layers.{}.mlp.";
  useExpertNames(spec, mlp, "gate_proj", "up_proj", "down_proj");
  spec.layer.sharedGate = mlp + "shared_expert.gate_proj.weight";
  spec.layer.sharedUp = mlp + "shared_expert.up_proj.weight";
  spec.layer.sharedDown = mlp + "shared_expert.down_proj.weight";
  spec.layer.sharedExpertGate = mlp + "shared_expert_gate.weight";
}

DecoderSpec readHybrid(ConfigReader &config, HybridKind kind,
                       const std::string &prefix) {
  DecoderSpec spec;
  spec.family = kind == HybridKind::next    ? "qwen3_next"
                : kind == HybridKind::dense ? "qwen3_5"
                                            : "qwen3_5_moe";
  spec.vocabSize = config.integer("vocab_size");
  spec.hiddenSize = config.integer("hidden_size");
  spec.numLayers = config.integer("num_hidden_layers");
  spec.numHeads = config.integer("num_attention_heads");
  spec.numKVHeads = config.integer("num_key_value_heads", spec.numHeads);
  spec.maxContext = config.integer("max_position_embeddings");
  readHeadDim(config, spec);
  spec.rmsNorm = true;
  spec.normEpsilon = config.number("rms_norm_eps", 1e-6);
  spec.gatedMlp = true;
  spec.activation = config.activation("hidden_act", "silu");
  spec.qkvBias = spec.outputBias = config.boolean("attention_bias", false);
  spec.attentionOutputGate = true;
  readHybridRope(config, spec);
  useHybridNames(config, spec, prefix, kind == HybridKind::dense);
  DeltaNetSpec &net = spec.deltaNet;
  net.keyHeads = config.integer("linear_num_key_heads");
  net.valueHeads = config.integer("linear_num_value_heads");
  net.keyDim = config.integer("linear_key_head_dim");
  net.valueDim = config.integer("linear_value_head_dim");
  net.convKernel = config.integer("linear_conv_kernel_dim", 4);
  readLayerKinds(config, spec);
  if (kind == HybridKind::dense) {
    spec.intermediateSize = config.integer("intermediate_size");
  } else {
    readHybridExperts(config, spec, prefix, kind == HybridKind::moe);
    // No dense MLP: the expert width stands in for validation.
    spec.intermediateSize =
        config.integer("intermediate_size", spec.expertSize);
  }
  // Read past: Qwen3.5's vision tower (images are not supported) and the
  // multi-token prediction block (mtp_num_hidden_layers), kept for
  // speculative decoding by other tools.
  spec.unreadTensorPrefixes = {"model.visual.", "mtp."};
  return spec;
}

/// The text model's config: Qwen3.5's image-text folders nest it in
/// text_config (its fields win over the outer ones, such as
/// tie_word_embeddings, which they may leave out), and name its tensors
/// model.language_model.*; the text models' own folders do neither.
DecoderSpec readTextModel(ConfigReader &config, HybridKind kind) {
  const llvm::json::Object *text = config.nested("text_config");
  if (!text)
    return readHybrid(config, kind, "model.");
  llvm::json::Object merged = config.raw();
  for (const auto &entry : *text)
    merged[entry.first] = entry.second;
  // Its errors read "<config.json>: text_config: ...".
  ConfigReader reader(merged, "text_config");
  DecoderSpec spec = readHybrid(reader, kind, "model.language_model.");
  if (llvm::Error err = reader.takeError())
    config.fail(llvm::toString(std::move(err)));
  return spec;
}

/// Rows `[first, first + count)` of each of `groups` consecutive blocks of
/// `blockRows` rows.
std::vector<int64_t> rowsOfEachBlock(int64_t groups, int64_t blockRows,
                                     int64_t first, int64_t count) {
  std::vector<int64_t> rows;
  for (int64_t g = 0; g < groups; ++g)
    for (int64_t i = 0; i < count; ++i)
      rows.push_back(g * blockRows + first + i);
  return rows;
}

/// Qwen3-Next's in_proj_qkvz ([q, k, v, z] of each key head) and
/// in_proj_ba ([b, a] of each) as Qwen3.5's separate projections.
llvm::Error splitPerKeyHead(const DecoderSpec &spec, WeightStore &store,
                            llvm::StringRef checkpoint, int64_t layer) {
  const DeltaNetSpec &net = spec.deltaNet;
  int64_t g = net.keyHeads, r = net.valueHeads / net.keyHeads;
  int64_t dk = net.keyDim, dv = net.valueDim, d = spec.hiddenSize;
  int64_t block = 2 * dk + 2 * r * dv;
  const LayerWeightNames &n = spec.layer;
  std::string qkvz = layerWeightName(n.recurrentQkv, layer);
  llvm::StringRef base(qkvz);
  base.consume_back("in_proj_qkv.weight");
  std::string fused = (base + "in_proj_qkvz.weight").str();
  std::string fusedBa = (base + "in_proj_ba.weight").str();
  for (auto [name, rows] : {std::pair<std::string, int64_t>{fused, g * block},
                            {fusedBa, g * 2 * r}})
    if (std::optional<std::string> error = store.mismatch(
            checkpoint, name, {rows, d}, "the qwen3_next config implies"))
      return makeError(*error);
  WeightTensor t = store.take(fused);
  std::vector<int64_t> qkv = rowsOfEachBlock(g, block, 0, dk);
  for (auto [first, count] : {std::pair<int64_t, int64_t>{dk, dk},
                              {2 * dk, r * dv}}) {
    std::vector<int64_t> more = rowsOfEachBlock(g, block, first, count);
    qkv.insert(qkv.end(), more.begin(), more.end());
  }
  int64_t channels = int64_t(qkv.size());
  store.add(qkvz, t.selectRows(std::move(qkv), {channels, d}));
  store.add(layerWeightName(n.recurrentGate, layer),
            t.selectRows(rowsOfEachBlock(g, block, 2 * dk + r * dv, r * dv),
                         {g * r * dv, d}));
  WeightTensor ba = store.take(fusedBa);
  store.add(layerWeightName(n.recurrentBeta, layer),
            ba.selectRows(rowsOfEachBlock(g, 2 * r, 0, r), {g * r, d}));
  store.add(layerWeightName(n.recurrentAlpha, layer),
            ba.selectRows(rowsOfEachBlock(g, 2 * r, r, r), {g * r, d}));
  return llvm::Error::success();
}

/// A stacked experts tensor of transformers 5 (with or without ".weight"),
/// if the checkpoint has it.
std::optional<std::string> stackedName(const WeightStore &store,
                                       const std::string &base) {
  for (std::string name : {base, base + ".weight"})
    if (store.contains(name))
      return name;
  return std::nullopt;
}

/// transformers 5's stacked experts under the layer's mlp. (its router's
/// prefix), stored with or without ".weight"; none: the checkpoint names
/// each expert's own weights.
llvm::Error splitQwenStackedExperts(const DecoderSpec &spec,
                                    WeightStore &store,
                                    llvm::StringRef checkpoint,
                                    int64_t layer) {
  std::string block = layerWeightName(spec.layer.router, layer);
  llvm::StringRef base(block);
  base.consume_back("gate.weight");
  std::string gateUpName = (base + "experts.gate_up_proj").str();
  std::string downName = (base + "experts.down_proj").str();
  std::optional<std::string> gateUp = stackedName(store, gateUpName);
  std::optional<std::string> down = stackedName(store, downName);
  if (!gateUp && !down)
    return llvm::Error::success();
  // Either missing is reported under its name without ".weight".
  return splitStackedExperts(spec, store, checkpoint, layer,
                             gateUp.value_or(gateUpName),
                             down.value_or(downName));
}

} // namespace

DecoderSpec mlir::tfm::readQwen3NextSpec(ConfigReader &config) {
  return readHybrid(config, HybridKind::next, "model.");
}

DecoderSpec mlir::tfm::readQwen35Spec(ConfigReader &config) {
  return readTextModel(config, HybridKind::dense);
}

DecoderSpec mlir::tfm::readQwen35MoeSpec(ConfigReader &config) {
  return readTextModel(config, HybridKind::moe);
}

llvm::Error mlir::tfm::prepareQwenHybridCheckpoint(DecoderSpec &spec,
                                                   WeightStore &store,
                                                   llvm::StringRef checkpoint) {
  prepareGemmaWeights(spec, store);
  const DeltaNetSpec &net = spec.deltaNet;
  const LayerWeightNames &n = spec.layer;
  int64_t channels = net.channels();
  for (int64_t layer = 0; layer < spec.numLayers; ++layer) {
    if (spec.numExperts > 0)
      if (llvm::Error err =
              splitQwenStackedExperts(spec, store, checkpoint, layer))
        return err;
    if (!spec.isRecurrentLayer(layer))
      continue;
    if (spec.family == "qwen3_next")
      if (llvm::Error err = splitPerKeyHead(spec, store, checkpoint, layer))
        return err;
    std::string conv = layerWeightName(n.recurrentConv, layer);
    if (std::optional<std::string> error =
            store.mismatch(checkpoint, conv, {channels, 1, net.convKernel},
                           "the " + spec.family + " config implies"))
      return makeError(*error);
    store.add(conv, store.take(conv).selectRows(
                        rowsOfEachBlock(1, channels, 0, channels),
                        {channels, net.convKernel}));
    std::string decay = layerWeightName(n.recurrentDecay, layer);
    if (std::optional<std::string> error = store.mismatch(
            checkpoint, decay, {net.valueHeads},
            "the " + spec.family + " config implies"))
      return makeError(*error);
    WeightTensor logDecay = store.take(decay);
    std::vector<float> values = logDecay.toF32();
    for (float &v : values)
      v = -std::exp(v);
    store.add(decay, WeightTensor::fromValues({net.valueHeads},
                                              std::move(values),
                                              logDecay.source()));
  }
  return llvm::Error::success();
}

llvm::Error mlir::tfm::readGgufDeltaNet(const GgufFile &file,
                                        llvm::StringRef key,
                                        DecoderSpec &spec) {
  constexpr int64_t kMaxWidth = 1 << 20;
  auto fail = [&](const llvm::Twine &what) {
    return makeError(file.path() + ": " + what);
  };
  int64_t sizes[5];
  const char *names[5] = {"ssm.conv_kernel", "ssm.state_size",
                          "ssm.group_count", "ssm.time_step_rank",
                          "ssm.inner_size"};
  for (int i = 0; i < 5; ++i) {
    llvm::Expected<int64_t> value =
        file.integer((key + names[i]).str(), kMaxWidth);
    if (!value)
      return value.takeError();
    sizes[i] = *value;
  }
  DeltaNetSpec &net = spec.deltaNet;
  net.convKernel = sizes[0];
  net.keyDim = sizes[1];
  net.keyHeads = sizes[2];
  net.valueHeads = sizes[3];
  if (net.valueHeads <= 0 || sizes[4] % net.valueHeads != 0)
    return fail("ssm.inner_size (" + llvm::Twine(sizes[4]) +
                ") must be a multiple of ssm.time_step_rank (" +
                llvm::Twine(net.valueHeads) + ")");
  net.valueDim = sizes[4] / net.valueHeads;
  bool next = key == "qwen3next.";
  net.tiled = !next && net.keyHeads != net.valueHeads;
  // llama.cpp's L2 norms take the model's RMSNorm epsilon (transformers
  // fixes 1e-6, which the published models' epsilon is).
  net.l2Epsilon = spec.normEpsilon > 0 ? spec.normEpsilon : 1e-6;
  std::string recurrentKey = (key + "attention.recurrent_layers").str();
  if (file.lookup(recurrentKey)) {
    llvm::Expected<const GgufValue *> flags =
        file.array(recurrentKey, /*strings=*/false);
    if (!flags)
      return flags.takeError();
    // The multi-token prediction blocks are listed too, after the model's.
    const std::vector<double> &values = (*flags)->numbers;
    if (int64_t(values.size()) != spec.numLayers + spec.predictionLayers)
      return fail("metadata '" + recurrentKey + "' lists " +
                  llvm::Twine(values.size()) + " layers, block_count is " +
                  llvm::Twine(spec.numLayers + spec.predictionLayers));
    for (int64_t l = 0; l < spec.numLayers; ++l)
      spec.recurrentLayers.push_back(values[size_t(l)] != 0);
  } else {
    llvm::Expected<std::optional<int64_t>> interval = file.optionalInteger(
        (key + "full_attention_interval").str(), spec.numLayers);
    if (!interval)
      return interval.takeError();
    int64_t every = interval->value_or(4);
    if (every <= 0)
      return fail("metadata '" + key + "full_attention_interval' is 0");
    for (int64_t l = 0; l < spec.numLayers; ++l)
      spec.recurrentLayers.push_back((l + 1) % every != 0);
  }
  spec.attentionOutputGate = true;
  LayerWeightNames &n = spec.layer;
  n.mlpNorm = "blk.{}.post_attention_norm.weight";
  n.recurrentQkv = "blk.{}.attn_qkv.weight";
  n.recurrentGate = "blk.{}.attn_gate.weight";
  n.recurrentBeta = "blk.{}.ssm_beta.weight";
  n.recurrentAlpha = "blk.{}.ssm_alpha.weight";
  n.recurrentAlphaBias = "blk.{}.ssm_dt.bias";
  n.recurrentConv = "blk.{}.ssm_conv1d.weight";
  n.recurrentDecay = "blk.{}.ssm_a";
  n.recurrentNorm = "blk.{}.ssm_norm.weight";
  n.recurrentOutput = "blk.{}.ssm_out.weight";
  return llvm::Error::success();
}

llvm::Error mlir::tfm::prepareGgufDeltaNet(const GgufFile &file,
                                           const DecoderSpec &spec,
                                           WeightStore &weights) {
  const DeltaNetSpec &net = spec.deltaNet;
  int64_t r = net.valueHeads / net.keyHeads, d = spec.hiddenSize;
  for (int64_t layer = 0; layer < spec.numLayers; ++layer) {
    std::string block = "blk." + std::to_string(layer) + ".";
    if (weights.contains(block + "ssm_in.weight"))
      return makeError(file.path() + ": tensor '" + block +
                       "ssm_in.weight' (a qwen3next file from before "
                       "llama.cpp split it into attn_qkv and attn_gate) is "
                       "not supported: convert the model again with a "
                       "current llama.cpp");
    std::string fused = block + "ssm_ba.weight";
    if (!spec.isRecurrentLayer(layer) || !weights.contains(fused))
      continue;
    if (std::optional<std::string> error =
            weights.mismatch(file.path(), fused, {2 * net.valueHeads, d},
                             "the metadata implies"))
      return makeError(*error);
    WeightTensor ba = weights.take(fused);
    weights.add(layerWeightName(spec.layer.recurrentBeta, layer),
                ba.selectRows(rowsOfEachBlock(net.keyHeads, 2 * r, 0, r),
                              {net.valueHeads, d}));
    weights.add(layerWeightName(spec.layer.recurrentAlpha, layer),
                ba.selectRows(rowsOfEachBlock(net.keyHeads, 2 * r, r, r),
                              {net.valueHeads, d}));
  }
  return llvm::Error::success();
}
