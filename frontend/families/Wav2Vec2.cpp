//===- Wav2Vec2.cpp - Wav2Vec2 and HuBERT as tfm IR ---------------------===//
//
// transformers' Wav2Vec2Model / HubertModel and their CTC heads:
//   x = samples, normalized to zero mean and unit variance where the
//       feature extractor does (do_normalize)
//   per convolution i (kernel k_i, stride s_i; Wav2Vec2FeatureEncoder):
//     x = gelu(norm_i(conv_i(x)))   norm: GroupNorm with a group per
//         channel on the first only ("group"), LayerNorm on each ("layer")
//   x = W·LN(x) + b                 (feature projection)
//   x = x + gelu(grouped_conv(x))   (weight-normed, "same"-padded)
//   post-norm: x = LN(x), then BERT-style blocks
//   pre-norm (do_stable_layer_norm): pre-norm blocks, then x = LN(x)
//   @recognize returns lm_head(x), a label's logits per 20 ms frame;
//   base models' @encode returns x.
// A convolution is tfm.windows (its inputs, one row per output position)
// then tfm.linear; the grouped one runs a windows + linear per group.
//
//===----------------------------------------------------------------------===//

#include "frontend/families/Wav2Vec2.h"
#include "frontend/ErrorMessages.h"
#include "frontend/builders/CheckedAttributes.h"
#include "frontend/builders/DecoderSpec.h"
#include "frontend/builders/ModelIRBuilder.h"
#include "frontend/formats/JsonFile.h"
#include "frontend/formats/Safetensors.h"
#include "ir/TfmOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Path.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;

namespace {

struct SpeechSpec {
  std::string family;
  /// "wav2vec2." / "hubert." in the heads' checkpoints; "" in base models'.
  std::string prefix;
  int64_t hiddenSize = 0, numLayers = 0, numHeads = 0, intermediateSize = 0;
  std::vector<int64_t> convDim, convKernel, convStride;
  bool convBias = false;
  enum class FeatureNorm { Group, Layer } featureNorm = FeatureNorm::Group;
  ActivationKind featureActivation = ActivationKind::gelu;
  ActivationKind activation = ActivationKind::gelu;
  /// HuBERT may leave the feature projection's LayerNorm out.
  bool projectionNorm = true;
  bool stableLayerNorm = false;
  int64_t positionKernel = 128, positionGroups = 16;
  double normEpsilon = 1e-5;
  /// The feature extractor's zero-mean, unit-variance normalization.
  bool normalizeInput = true;
  /// The CTC head's labels (0: a base model, @encode).
  int64_t vocabSize = 0;

  /// Samples one output frame hears, and samples between frames.
  int64_t receptiveField() const {
    int64_t field = 1, jump = 1;
    for (size_t i = 0; i < convKernel.size(); ++i) {
      field += (convKernel[i] - 1) * jump;
      jump *= convStride[i];
    }
    return field;
  }
  int64_t frameSamples() const {
    int64_t jump = 1;
    for (int64_t stride : convStride)
      jump *= stride;
    return jump;
  }
  std::string name(llvm::StringRef suffix) const {
    return prefix + suffix.str();
  }
  std::string positionConv() const {
    return name("encoder.pos_conv_embed.conv.");
  }
  /// The weight of group g of the positional convolution (split by
  /// prepareSpeechWeights).
  std::string positionGroup(int64_t g) const {
    return positionConv() + "group" + std::to_string(g) + ".weight";
  }
};

class SpeechIRBuilder : public ModelIRBuilder {
public:
  SpeechIRBuilder(MLIRContext &context, const SpeechSpec &spec,
                  const WeightStore &weights, llvm::StringRef checkpoint)
      : ModelIRBuilder(context, weights, checkpoint, spec.family),
        spec(spec) {}

  OwningOpRef<ModuleOp> build();

private:
  Value norm(Value x, const std::string &name, int64_t d) {
    return declarations.biasedLayerNorm(b, x, name, d, spec.normEpsilon);
  }
  /// x's rows [0, rows) and columns [column, column + width), rows being a
  /// value (dynamic).
  Value slice(Value x, Value count, int64_t column, int64_t width) {
    Location loc = x.getLoc();
    SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0),
                                         b.getIndexAttr(column)};
    SmallVector<OpFoldResult> sizes = {count, b.getIndexAttr(width)};
    SmallVector<OpFoldResult> strides = {b.getIndexAttr(1), b.getIndexAttr(1)};
    return tensor::ExtractSliceOp::create(b, loc, rows({width}), x, offsets,
                                          sizes, strides);
  }
  Value rowCount(Value x) {
    return tensor::DimOp::create(b, x.getLoc(), x, 0);
  }
  Value featureEncoder(Value samples);
  Value positionEmbedding(Value x);
  Value layer(Value x, int64_t index);

  const SpeechSpec &spec;
};

Value SpeechIRBuilder::featureEncoder(Value samples) {
  Location loc = named("feature encoder");
  // The samples as one channel: [n, 1].
  Value x = tensor::ExpandShapeOp::create(
      b, loc, rows({1}), samples, SmallVector<ReassociationIndices>{{0, 1}});
  if (spec.normalizeInput)
    x = ChannelNormOp::create(b, named("input normalization"), x.getType(), x,
                              /*gamma=*/Value(), /*beta=*/Value(),
                              b.getF32FloatAttr(1e-7));
  int64_t channels = 1;
  MLIRContext *ctx = b.getContext();
  for (size_t i = 0; i < spec.convDim.size(); ++i) {
    std::string layer = spec.name("feature_extractor.conv_layers." +
                                  std::to_string(i) + ".");
    int64_t out = spec.convDim[i], k = spec.convKernel[i];
    Location at = named("convolution " + llvm::Twine(i));
    Value windows = WindowsOp::create(
        b, at, rows({channels * k}), x, b.getI64IntegerAttr(k),
        b.getI64IntegerAttr(spec.convStride[i]), b.getI64IntegerAttr(0),
        UnitAttr());
    bool normed = spec.featureNorm == SpeechSpec::FeatureNorm::Layer || i == 0;
    Value kernel = declarations.readAs(b, layer + "conv.weight",
                                       {out, channels, k}, {out, channels * k});
    Value bias = spec.convBias ? weight(layer + "conv.bias", {out}) : Value();
    // Without a norm the activation is the GEMM's epilogue.
    ActivationKindAttr epilogue =
        normed ? ActivationKindAttr()
               : ActivationKindAttr::get(ctx, spec.featureActivation);
    x = LinearOp::create(b, at, rows({out}), windows, kernel, bias, epilogue,
                         UnitAttr());
    if (!normed) {
      channels = out;
      continue;
    }
    if (spec.featureNorm == SpeechSpec::FeatureNorm::Group)
      x = ChannelNormOp::create(b, at, x.getType(), x,
                                weight(layer + "layer_norm.weight", {out}),
                                weight(layer + "layer_norm.bias", {out}),
                                b.getF32FloatAttr(1e-5));
    else
      x = declarations.biasedLayerNorm(b, x, layer + "layer_norm.weight", out,
                                       1e-5);
    x = ActivationOp::create(b, at, spec.featureActivation, x);
    channels = out;
  }
  // The projection to the model's width.
  std::string projection = spec.name("feature_projection.");
  if (spec.projectionNorm)
    x = norm(x, projection + "layer_norm.weight", channels);
  return linear(x, projection + "projection.weight", {spec.hiddenSize});
}

Value SpeechIRBuilder::positionEmbedding(Value x) {
  Location loc = named("positional convolution");
  int64_t d = spec.hiddenSize, groups = spec.positionGroups,
          width = d / groups, k = spec.positionKernel;
  Value frames = rowCount(x);
  // Each group's channels convolved alone ("same" padding: k / 2 on both
  // ends, k / 2 * 2 - k + 1 more rows than frames), with the activation as
  // the GEMM's epilogue, into its columns of the result.
  Value outRows = arith::AddIOp::create(
      b, loc, frames, arith::ConstantIndexOp::create(b, loc, k / 2 * 2 - k + 1));
  Value convolved = tensor::EmptyOp::create(b, loc, rows({d}).getShape(),
                                            b.getF32Type(), ValueRange{outRows});
  for (int64_t g = 0; g < groups; ++g) {
    Value channels = slice(x, frames, g * width, width);
    Value windows = WindowsOp::create(
        b, loc, rows({width * k}), channels, b.getI64IntegerAttr(k),
        b.getI64IntegerAttr(1), b.getI64IntegerAttr(k / 2), UnitAttr());
    Value part = linear(windows, spec.positionGroup(g), {width},
                        spec.featureActivation);
    SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0),
                                         b.getIndexAttr(g * width)};
    SmallVector<OpFoldResult> sizes = {
        tensor::DimOp::create(b, loc, part, 0).getResult(),
        b.getIndexAttr(width)};
    SmallVector<OpFoldResult> strides = {b.getIndexAttr(1), b.getIndexAttr(1)};
    convolved = tensor::InsertSliceOp::create(b, loc, part, convolved, offsets,
                                              sizes, strides);
  }
  // An even kernel gives one row more than frames (Wav2Vec2SamePadLayer
  // drops it).
  return AddOp::create(b, loc, x, slice(convolved, frames, 0, d));
}

Value SpeechIRBuilder::layer(Value x, int64_t index) {
  auto name = [&](llvm::StringRef what) {
    return spec.name(("encoder.layers." + llvm::Twine(index) + "." + what).str());
  };
  int64_t heads = spec.numHeads, headDim = spec.hiddenSize / heads,
          d = spec.hiddenSize;
  bool preNorm = spec.stableLayerNorm;
  Value h = preNorm ? norm(x, name("layer_norm.weight"), d) : x;
  Value q = linear(h, name("attention.q_proj.weight"), {heads, headDim});
  Value k = linear(h, name("attention.k_proj.weight"), {heads, headDim});
  Value v = linear(h, name("attention.v_proj.weight"), {heads, headDim});
  Value attended = AttentionOp::create(
      b, named("layer " + llvm::Twine(index) + " attention"), q.getType(), q, k,
      v, /*bias=*/Value(), /*lengths=*/Value(), /*relative_bias=*/Value(),
      /*sinks=*/Value(), b.getF32FloatAttr(1.0 / std::sqrt(double(headDim))),
      /*causal=*/UnitAttr(), /*window=*/IntegerAttr(),
      /*max_distance=*/IntegerAttr(), /*softcap=*/FloatAttr());
  x = AddOp::create(b, x.getLoc(), x,
                    linear(attended, name("attention.out_proj.weight"), {d}));
  if (!preNorm)
    x = norm(x, name("layer_norm.weight"), d);
  h = preNorm ? norm(x, name("final_layer_norm.weight"), d) : x;
  h = linear(h, name("feed_forward.intermediate_dense.weight"),
             {spec.intermediateSize}, spec.activation);
  x = AddOp::create(b, x.getLoc(), x,
                    linear(h, name("feed_forward.output_dense.weight"), {d}));
  return preNorm ? x : norm(x, name("final_layer_norm.weight"), d);
}

OwningOpRef<ModuleOp> SpeechIRBuilder::build() {
  OwningOpRef<ModuleOp> module = ModuleOp::create(named(spec.family));
  b.setInsertionPointToEnd(module->getBody());
  MLIRContext *ctx = b.getContext();
  auto samplesType =
      RankedTensorType::get({ShapedType::kDynamic}, b.getF32Type());
  bool ctcHead = spec.vocabSize > 0;
  Type result = rows({ctcHead ? spec.vocabSize : spec.hiddenSize});
  llvm::StringRef entryName = ctcHead ? "recognize" : "encode";
  auto function = func::FuncOp::create(b, named(entryName), entryName,
                                       b.getFunctionType({samplesType}, {result}));
  function.setArgAttr(0, kInputArgAttrName,
                      InputRoleAttr::get(ctx, InputRole::features));
  function.setResultAttr(
      0, kOutputResultAttrName,
      OutputRoleAttr::get(ctx, ctcHead ? OutputRole::logits
                                       : OutputRole::hidden_states));
  Block *entry = function.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value x = featureEncoder(entry->getArgument(0));
  x = positionEmbedding(x);
  std::string encoderNorm = spec.name("encoder.layer_norm.weight");
  if (!spec.stableLayerNorm)
    x = norm(x, encoderNorm, spec.hiddenSize);
  for (int64_t i = 0; i < spec.numLayers; ++i)
    x = layer(x, i);
  if (spec.stableLayerNorm)
    x = norm(x, encoderNorm, spec.hiddenSize);
  if (ctcHead)
    x = linear(x, "lm_head.weight", {spec.vocabSize});
  func::ReturnOp::create(b, named("return"), x);
  return module;
}

/// The positional convolution's weight from its weight norm (dim 2, as
/// nn.utils.weight_norm stores it: `weight_g` [1, 1, k], `weight_v`
/// [d, d / groups, k]; or the parametrization's original0 and original1):
/// w[:, :, j] = g[j] · v[:, :, j] / |v[:, :, j]|, split by group into
/// [d / groups, (d / groups) · k] matrices, the windows' layout.
llvm::Error prepareSpeechWeights(const SpeechSpec &spec, WeightStore &store,
                                 llvm::StringRef checkpoint) {
  std::string conv = spec.positionConv();
  std::string gName = conv + "weight_g", vName = conv + "weight_v";
  if (!store.contains(gName) && !store.contains(vName)) {
    gName = conv + "parametrizations.weight.original0";
    vName = conv + "parametrizations.weight.original1";
  }
  int64_t d = spec.hiddenSize, width = d / spec.positionGroups,
          k = spec.positionKernel;
  for (auto [name, shape] :
       {std::pair<std::string, std::vector<int64_t>>{gName, {1, 1, k}},
        {vName, {d, width, k}}})
    if (std::optional<std::string> error = store.mismatch(
            checkpoint, name, shape, "the " + spec.family + " config implies"))
      return makeError(*error);
  WeightTensor gTensor = store.take(gName), vTensor = store.take(vName);
  std::vector<float> g = gTensor.toF32(), v = vTensor.toF32();
  std::vector<double> scale(size_t(k), 0.0);
  for (int64_t i = 0; i < d * width; ++i)
    for (int64_t j = 0; j < k; ++j)
      scale[j] += double(v[i * k + j]) * v[i * k + j];
  for (int64_t j = 0; j < k; ++j)
    scale[j] = scale[j] > 0 ? g[j] / std::sqrt(scale[j]) : 0.0;
  for (int64_t group = 0; group < spec.positionGroups; ++group) {
    std::vector<float> w(size_t(width * width * k));
    for (int64_t o = 0; o < width; ++o)
      for (int64_t i = 0; i < width * k; ++i) {
        int64_t stored = (group * width + o) * width * k + i;
        w[o * width * k + i] = float(v[stored] * scale[i % k]);
      }
    std::string name = conv + "group" + std::to_string(group) + ".";
    store.add(name + "weight",
              WeightTensor::fromValues({width, width * k}, std::move(w),
                                       vTensor.source()));
    if (const WeightTensor *bias = store.lookup(conv + "bias")) {
      std::vector<int64_t> rows;
      for (int64_t o = 0; o < width; ++o)
        rows.push_back(group * width + o);
      if (bias->shape() == std::vector<int64_t>{d})
        store.add(name + "bias", bias->selectRows(rows, {width}));
    }
  }
  return llvm::Error::success();
}

/// A CTC head's labels (its vocab.json, by id) and decoding, from the
/// tokenizer files beside the model.
llvm::Error readCtcVocabulary(MLIRContext &context, llvm::StringRef directory,
                              int64_t vocabSize, int64_t padTokenId,
                              const SpeechSpec &spec, int64_t samplingRate,
                              LoadedModel &model) {
  llvm::SmallString<256> vocabPath(directory);
  llvm::sys::path::append(vocabPath, "vocab.json");
  if (!llvm::sys::fs::exists(vocabPath))
    return makeError(vocabPath + ": missing: a CTC head's labels are spelled "
                                 "by its tokenizer's vocabulary");
  llvm::Expected<llvm::json::Value> vocab = readJsonFile(vocabPath);
  if (!vocab)
    return vocab.takeError();
  const llvm::json::Object *entries = vocab->getAsObject();
  if (!entries)
    return makeError(vocabPath + ": expected an object of token: id");
  llvm::SmallString<256> configPath(directory);
  llvm::sys::path::append(configPath, "tokenizer_config.json");
  llvm::json::Object none;
  std::optional<llvm::json::Value> holder;
  llvm::Expected<const llvm::json::Object *> tokenizerConfig =
      readOptionalJsonObject(configPath, &none, holder);
  if (!tokenizerConfig)
    return tokenizerConfig.takeError();
  auto text = [&](llvm::StringRef key, llvm::StringRef fallback) {
    // Special tokens are strings, or AddedToken objects with "content".
    const llvm::json::Value *value = (*tokenizerConfig)->get(key);
    if (value && value->getAsObject())
      value = value->getAsObject()->get("content");
    if (value && value->getAsString())
      return value->getAsString()->str();
    return fallback.str();
  };
  std::string pad = text("pad_token", "<pad>"),
              delimiter = text("word_delimiter_token", "|"),
              unknown = text("unk_token", "<unk>");
  std::vector<std::string> labels(size_t(vocabSize), unknown);
  int64_t blank = -1, wordDelimiter = -1;
  for (const auto &[token, idValue] : *entries) {
    std::optional<int64_t> id = idValue.getAsInteger();
    if (idValue.getAsObject())
      return makeError(vocabPath + ": holds a vocabulary per language "
                                   "(target_lang); tfmc reads one "
                                   "vocabulary");
    if (!id || *id < 0 || *id >= vocabSize)
      return makeError(vocabPath + ": token '" + token.str() + "' has id " +
                       (id ? llvm::Twine(*id) : llvm::Twine("?")) +
                       ", outside the head's " + llvm::Twine(vocabSize) +
                       " labels (vocab_size)");
    labels[*id] = token.str();
    if (token.str() == pad)
      blank = *id;
    if (token.str() == delimiter)
      wordDelimiter = *id;
  }
  if (blank < 0)
    return makeError(vocabPath + ": the pad token '" + pad +
                     "', CTC's blank, is not in the vocabulary");
  if (blank != padTokenId)
    return makeError(directory + "/config.json: pad_token_id " +
                     llvm::Twine(padTokenId) + " is not the tokenizer's pad "
                     "token '" + pad + "' (id " + llvm::Twine(blank) + ")");
  bool cleanUp = (*tokenizerConfig)
                     ->getBoolean("clean_up_tokenization_spaces")
                     .value_or(true);
  bool lowercase =
      (*tokenizerConfig)->getBoolean("do_lower_case").value_or(false);
  llvm::Expected<WaveformAttr> waveform = getCheckedAttr<WaveformAttr>(
      vocabPath, &context, samplingRate, spec.receptiveField(),
      spec.frameSamples(), int32_t(blank), int32_t(wordDelimiter), cleanUp,
      lowercase);
  if (!waveform)
    return waveform.takeError();
  model.waveform = *waveform;
  model.labels = std::move(labels);
  return llvm::Error::success();
}

} // namespace

static const llvm::StringLiteral kSpeechFamilies[] = {"wav2vec2", "hubert"};

bool mlir::tfm::isSpeechFamily(llvm::StringRef modelType) {
  return llvm::is_contained(kSpeechFamilies, modelType);
}

std::string mlir::tfm::supportedSpeechFamilies() {
  return llvm::join(std::begin(kSpeechFamilies), std::end(kSpeechFamilies),
                    ", ");
}

llvm::Error mlir::tfm::loadSpeechModel(MLIRContext &context,
                                       llvm::StringRef directory,
                                       llvm::StringRef modelType,
                                       ConfigReader &config,
                                       LoadedModel &model) {
  context.loadDialect<TfmDialect, func::FuncDialect, arith::ArithDialect,
                      tensor::TensorDialect>();
  std::string configPath = config.file();
  SpeechSpec spec;
  spec.family = modelType.str();
  spec.hiddenSize = config.integer("hidden_size", 768);
  spec.numLayers = config.integer("num_hidden_layers", 12);
  spec.numHeads = config.integer("num_attention_heads", 12);
  spec.intermediateSize = config.integer("intermediate_size", 3072);
  spec.normEpsilon = config.number("layer_norm_eps", 1e-5);
  spec.activation = config.activation("hidden_act", "gelu");
  spec.featureActivation = config.activation("feat_extract_activation", "gelu");
  size_t convolutions = size_t(config.integer("num_feat_extract_layers", 7));
  spec.convDim = config.positiveIntegers("conv_dim", convolutions,
                                          "num_feat_extract_layers");
  spec.convKernel = config.positiveIntegers("conv_kernel", convolutions,
                                          "num_feat_extract_layers");
  spec.convStride = config.positiveIntegers("conv_stride", convolutions,
                                          "num_feat_extract_layers");
  spec.convBias = config.boolean("conv_bias", false);
  std::string featureNorm = config.string("feat_extract_norm", "group");
  if (featureNorm == "layer")
    spec.featureNorm = SpeechSpec::FeatureNorm::Layer;
  else if (featureNorm != "group")
    config.fail("unsupported config value feat_extract_norm = '" +
                featureNorm + "' (supported: group, layer)");
  spec.stableLayerNorm = config.boolean("do_stable_layer_norm", false);
  spec.projectionNorm = modelType != "hubert" ||
                        config.boolean("feat_proj_layer_norm", true);
  spec.positionKernel = config.integer("num_conv_pos_embeddings", 128);
  spec.positionGroups = config.integer("num_conv_pos_embedding_groups", 16);
  config.refuseUnlessAbsent("add_adapter", "adapter layers after the encoder");
  config.refuseUnlessAbsent("adapter_attn_dim",
                            "per-language attention adapters (MMS)");
  config.refuseUnlessAbsent("conv_pos_batch_norm",
                            "a batch-normed positional convolution");
  if (llvm::Error err = config.takeError())
    return err;
  if (spec.hiddenSize <= 0 || spec.numLayers <= 0 || spec.numHeads <= 0 ||
      spec.intermediateSize <= 0 || spec.positionKernel <= 0 ||
      spec.positionGroups <= 0 || convolutions == 0)
    return makeError(configPath + ": sizes must be positive");
  if (spec.hiddenSize % spec.numHeads || spec.hiddenSize % spec.positionGroups)
    return makeError(configPath + ": hidden_size " +
                     llvm::Twine(spec.hiddenSize) +
                     " is not a multiple of num_attention_heads and "
                     "num_conv_pos_embedding_groups");

  // The head: the architecture names it; the checkpoint's prefix follows.
  std::vector<std::string> architectures = config.strings("architectures");
  std::string architecture = architectures.empty() ? "" : architectures.front();
  llvm::StringRef family = modelType == "hubert" ? "Hubert" : "Wav2Vec2";
  bool ctcHead = architecture == (family + "ForCTC").str();
  if (!ctcHead && !architecture.empty() &&
      architecture != (family + "Model").str() &&
      architecture != (family + "ForPreTraining").str())
    return makeError(configPath + ": the " + architecture + " head of " +
                     modelType + " is not supported yet (supported: " +
                     family + "ForCTC, " + family + "Model)");
  if (llvm::Error err = readSafetensorsCheckpoint(directory, model.weights))
    return err;
  std::string checkpoint = (directory + "/model.safetensors").str();
  std::string prefix = (modelType + ".").str();
  if (model.weights.contains(prefix + "feature_projection.projection.weight"))
    spec.prefix = prefix;
  if (ctcHead) {
    spec.vocabSize = config.integer("vocab_size", 32);
    if (spec.vocabSize <= 0)
      return makeError(configPath + ": vocab_size must be positive");
  }

  // The feature extractor: its rate and whether it normalizes.
  llvm::SmallString<256> preprocessorPath(directory);
  llvm::sys::path::append(preprocessorPath, "preprocessor_config.json");
  llvm::json::Object none;
  std::optional<llvm::json::Value> holder;
  llvm::Expected<const llvm::json::Object *> preprocessor =
      readOptionalJsonObject(preprocessorPath, &none, holder);
  if (!preprocessor)
    return preprocessor.takeError();
  int64_t samplingRate =
      (*preprocessor)->getInteger("sampling_rate").value_or(16000);
  spec.normalizeInput =
      (*preprocessor)->getBoolean("do_normalize").value_or(true);
  if (samplingRate <= 0 ||
      (*preprocessor)->getInteger("feature_size").value_or(1) != 1)
    return makeError(preprocessorPath +
                     ": expected a positive sampling_rate and feature_size 1 "
                     "(mono samples)");

  if (llvm::Error err = prepareSpeechWeights(spec, model.weights, checkpoint))
    return err;
  if (ctcHead) {
    if (llvm::Error err = readCtcVocabulary(
            context, directory, spec.vocabSize,
            config.integer("pad_token_id", 0), spec, samplingRate, model))
      return err;
  } else {
    llvm::Expected<WaveformAttr> waveform = getCheckedAttr<WaveformAttr>(
        configPath, &context, samplingRate, spec.receptiveField(),
        spec.frameSamples(), /*blank=*/-1, /*wordDelimiter=*/-1,
        /*cleanUp=*/false, /*lowercase=*/false);
    if (!waveform)
      return waveform.takeError();
    model.waveform = *waveform;
  }
  if (llvm::Error err = config.takeError())
    return err;

  SpeechIRBuilder builder(context, spec, model.weights, checkpoint);
  // What the CTC head does not use: pre-training's quantizer and
  // projections, and the mask embedding of SpecAugment (training only).
  auto ignored = [&](llvm::StringRef n) {
    return n.starts_with("quantizer.") || n.starts_with("project_") ||
           n == spec.name("masked_spec_embed") ||
           n.ends_with("encoder.pos_conv_embed.conv.bias");
  };
  auto module = builder.declarations.finish(builder.build(), ignored);
  if (!module)
    return module.takeError();
  model.module = std::move(*module);
  model.family = spec.family;
  model.addBos = false;
  model.vocabSize = spec.vocabSize;
  // The longest clip: two minutes (memory grows with it; split longer
  // audio).
  model.maxContext = samplingRate * 120;
  model.hiddenSize = spec.hiddenSize;
  model.numLayers = spec.numLayers;
  model.numHeads = model.numKVHeads = spec.numHeads;
  return llvm::Error::success();
}
