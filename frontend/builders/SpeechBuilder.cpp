//===- SpeechBuilder.cpp - Wav2Vec2 and HuBERT as tfm IR ------------------===//
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

#include "frontend/builders/SpeechBuilder.h"
#include "frontend/builders/ModelIRBuilder.h"
#include "frontend/formats/ErrorMessages.h"
#include "ir/TfmOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;

namespace {

class SpeechIRBuilder : public ModelIRBuilder {
public:
  SpeechIRBuilder(MLIRContext &context, const SpeechSpec &spec,
                  const WeightStore &weights, llvm::StringRef checkpoint)
      : ModelIRBuilder(context, weights, checkpoint, spec.family), spec(spec) {}

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
  Value rowCount(Value x) { return tensor::DimOp::create(b, x.getLoc(), x, 0); }
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
    std::string layer =
        spec.name("feature_extractor.conv_layers." + std::to_string(i) + ".");
    int64_t out = spec.convDim[i], k = spec.convKernel[i];
    Location at = named("convolution " + llvm::Twine(i));
    Value windows = WindowsOp::create(b, at, rows({channels * k}), x,
                                      b.getI64IntegerAttr(k),
                                      b.getI64IntegerAttr(spec.convStride[i]),
                                      b.getI64IntegerAttr(0), UnitAttr());
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
      x = ChannelNormOp::create(
          b, at, x.getType(), x, weight(layer + "layer_norm.weight", {out}),
          weight(layer + "layer_norm.bias", {out}), b.getF32FloatAttr(1e-5));
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
  int64_t d = spec.hiddenSize, groups = spec.positionGroups, width = d / groups,
          k = spec.positionKernel;
  Value frames = rowCount(x);
  // Each group's channels convolved alone ("same" padding: k / 2 on both
  // ends, k / 2 * 2 - k + 1 more rows than frames), with the activation as
  // the GEMM's epilogue, into its columns of the result.
  Value outRows = arith::AddIOp::create(
      b, loc, frames,
      arith::ConstantIndexOp::create(b, loc, k / 2 * 2 - k + 1));
  Value convolved = tensor::EmptyOp::create(
      b, loc, rows({d}).getShape(), b.getF32Type(), ValueRange{outRows});
  for (int64_t g = 0; g < groups; ++g) {
    Value channels = slice(x, frames, g * width, width);
    Value windows = WindowsOp::create(
        b, loc, rows({width * k}), channels, b.getI64IntegerAttr(k),
        b.getI64IntegerAttr(1), b.getI64IntegerAttr(k / 2), UnitAttr());
    Value part =
        linear(windows, spec.positionGroup(g), {width}, spec.featureActivation);
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
    return spec.name(
        ("encoder.layers." + llvm::Twine(index) + "." + what).str());
  };
  int64_t heads = spec.numHeads, headDim = spec.hiddenSize / heads,
          d = spec.hiddenSize;
  bool preNorm = spec.stableLayerNorm;
  Value h = preNorm ? norm(x, name("layer_norm.weight"), d) : x;
  Value q = linear(h, name("attention.q_proj.weight"), {heads, headDim});
  Value k = linear(h, name("attention.k_proj.weight"), {heads, headDim});
  Value v = linear(h, name("attention.v_proj.weight"), {heads, headDim});
  Value attended = attend(named("layer " + llvm::Twine(index) + " attention"),
                          q, k, v, /*causal=*/false);
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
  auto samplesType =
      RankedTensorType::get({ShapedType::kDynamic}, b.getF32Type());
  bool ctcHead = spec.vocabSize > 0;
  Type result = rows({ctcHead ? spec.vocabSize : spec.hiddenSize});
  llvm::StringRef entryName = ctcHead ? "recognize" : "encode";
  Value samples =
      beginEntryPoint(entryName, samplesType, InputRole::features, result,
                      ctcHead ? OutputRole::logits : OutputRole::hidden_states);
  Value x = featureEncoder(samples);
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

} // namespace

llvm::Error mlir::tfm::prepareSpeechWeights(const SpeechSpec &spec,
                                            WeightStore &store,
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

llvm::Expected<OwningOpRef<ModuleOp>> mlir::tfm::buildSpeechModel(
    MLIRContext &context, const SpeechSpec &spec, const WeightStore &weights,
    llvm::StringRef checkpoint,
    llvm::function_ref<bool(llvm::StringRef)> isIgnoredWeight) {
  context.loadDialect<TfmDialect, func::FuncDialect, arith::ArithDialect,
                      tensor::TensorDialect>();
  SpeechIRBuilder builder(context, spec, weights, checkpoint);
  return builder.declarations.finish(builder.build(), isIgnoredWeight);
}
