//===- DecoderBuilder.cpp - decoder-only models as tfm IR ---------------===//
//
// One builder serves GPT-2 and LLaMA families: the spec says which norm,
// which positions and which MLP. Every weight is checked against the store
// as it is referenced; all problems are reported together.
//
//===----------------------------------------------------------------------===//

#include "frontend/builders/DecoderBuilder.h"
#include "frontend/builders/ModelIRBuilder.h"
#include "frontend/formats/ErrorMessages.h"
#include "ir/ExpandedKeyAttr.h"
#include "ir/TfmOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringExtras.h"

#include <cmath>
#include <set>
#include <tuple>

using namespace mlir;
using namespace mlir::tfm;

std::string mlir::tfm::biasName(const std::string &weightName) {
  llvm::StringRef name(weightName);
  if (name.consume_back("weight"))
    return (name + "bias").str();
  return weightName + ".bias";
}

std::string mlir::tfm::layerWeightName(const std::string &pattern, int64_t layer) {
  std::string name = pattern;
  size_t at = name.find("{}");
  if (at != std::string::npos)
    name.replace(at, 2, std::to_string(layer));
  return name;
}

std::string mlir::tfm::expertWeightName(const std::string &pattern,
                                        int64_t layer, int64_t expert) {
  std::string name = tfm::layerWeightName(pattern, layer);
  size_t at = name.find("{e}");
  if (at != std::string::npos)
    name.replace(at, 3, std::to_string(expert));
  return name;
}

/// Per-layer attention shapes (DecoderSpec::layerAttention): heads the
/// KV heads divide, even for RoPE, a frequency per pair, and shared keys
/// and values from an earlier layer of the same shape and window.
static llvm::Error validateLayerAttention(const DecoderSpec &spec,
                                          llvm::StringRef configPath) {
  if (spec.layerAttention.empty())
    return llvm::Error::success();
  auto fail = [&](int64_t layer, const llvm::Twine &what) {
    return makeError(configPath + ": layer " + llvm::Twine(layer) + ": " +
                     what);
  };
  if (int64_t(spec.layerAttention.size()) != spec.numLayers)
    return makeError(configPath + ": the layer shapes list " +
                     llvm::Twine(spec.layerAttention.size()) +
                     " layers, the model has " + llvm::Twine(spec.numLayers));
  auto windowOf = [&](int64_t layer) {
    return spec.layerWindows.empty() ? spec.slidingWindow
                                     : spec.layerWindows[size_t(layer)];
  };
  for (int64_t l = 0; l < spec.numLayers; ++l) {
    const LayerAttention &a = spec.layerAttention[size_t(l)];
    if (a.headDim <= 0 || a.headDim % 2 != 0 || a.headDim > kMaxConfigSize)
      return fail(l, "the head size must be even and positive, got " +
                         llvm::Twine(a.headDim));
    if (a.kvHeads <= 0 || spec.numHeads % a.kvHeads != 0)
      return fail(l, "the key/value head count (" + llvm::Twine(a.kvHeads) +
                         ") does not divide the head count (" +
                         llvm::Twine(spec.numHeads) + ")");
    if (a.intermediate < 0 || a.intermediate > kMaxConfigSize)
      return fail(l, "the MLP's width must be positive, got " +
                         llvm::Twine(a.intermediate));
    if (int64_t(a.ropeFrequencies.size()) != a.headDim / 2)
      return fail(l, "RoPE needs " + llvm::Twine(a.headDim / 2) +
                         " frequencies, got " +
                         llvm::Twine(a.ropeFrequencies.size()));
    if (a.kvSource < 0)
      continue;
    if (a.kvSource >= l)
      return fail(l, "its keys and values come from layer " +
                         llvm::Twine(a.kvSource) + ", which is not before it");
    const LayerAttention &source = spec.layerAttention[size_t(a.kvSource)];
    if (source.kvSource >= 0 || source.headDim != a.headDim ||
        source.kvHeads != a.kvHeads || windowOf(a.kvSource) != windowOf(l))
      return fail(l, "its keys and values come from layer " +
                         llvm::Twine(a.kvSource) +
                         ", which computes no keys of this layer's shape "
                         "and window");
  }
  return llvm::Error::success();
}

/// A mixture of experts' sizes, groups, scale and dense leading layers.
static llvm::Error validateExperts(const DecoderSpec &spec,
                                   llvm::StringRef configPath) {
  auto fail = [&](const llvm::Twine &what) {
    return makeError(configPath + ": " + what);
  };
  if (spec.numExperts < 0 ||
      (spec.numExperts > 0 &&
       (spec.expertsPerToken < 1 || spec.expertsPerToken > spec.numExperts ||
        spec.expertSize <= 0)))
    return fail("a mixture of experts needs experts, an expert size and 1 "
                "to " +
                llvm::Twine(spec.numExperts) + " experts per token, got " +
                llvm::Twine(spec.numExperts) + " experts of " +
                llvm::Twine(spec.expertSize) + ", " +
                llvm::Twine(spec.expertsPerToken) + " per token");
  if (spec.expertGroups < 0 || spec.expertGroups > kMaxConfigSize ||
      spec.topExpertGroups < 0)
    return fail("expert groups must be 0 to " + llvm::Twine(kMaxConfigSize) +
                ", got " + llvm::Twine(spec.expertGroups) + " (" +
                llvm::Twine(spec.topExpertGroups) + " chosen)");
  if (spec.numExperts > 0 && spec.expertGroups > 1 &&
      (spec.numExperts % spec.expertGroups != 0 ||
       spec.topExpertGroups < 1 ||
       spec.topExpertGroups > spec.expertGroups ||
       spec.topExpertGroups * (spec.numExperts / spec.expertGroups) <
           spec.expertsPerToken))
    return fail("expert groups must divide the " +
                llvm::Twine(spec.numExperts) +
                " experts and the groups chosen hold at least " +
                llvm::Twine(spec.expertsPerToken) + " experts, got " +
                llvm::Twine(spec.topExpertGroups) + " of " +
                llvm::Twine(spec.expertGroups) + " groups");
  if (!(spec.routedScale > 0) || std::isinf(spec.routedScale))
    return fail("the routed experts' scale must be finite and positive, got " +
                llvm::Twine(std::to_string(spec.routedScale)));
  if (spec.expertsBesideMlp &&
      (spec.numExperts == 0 || spec.parallelResidual || spec.denseLayers))
    return fail("experts beside the MLP need experts in every layer of "
                "sequential blocks");
  if (spec.denseLayers < 0 || spec.denseLayers > spec.numLayers)
    return fail("dense leading layers must be 0 to " +
                llvm::Twine(spec.numLayers) + ", got " +
                llvm::Twine(spec.denseLayers));
  return llvm::Error::success();
}

/// Multi-head latent attention's ranks and head sizes (DeepSeek-V3's).
static llvm::Error validateLatentAttention(const DecoderSpec &spec,
                                           llvm::StringRef configPath) {
  auto fail = [&](const llvm::Twine &what) {
    return makeError(configPath + ": " + what);
  };
  const LatentAttentionSpec &mla = spec.mla;
  if (!mla.enabled())
    return llvm::Error::success();
  if (llvm::Error err = expectPositiveSizes(
          configPath, {{"latent rank", mla.latentRank},
                       {"unrotated query/key head size", mla.nopeDim},
                       {"rotated query/key head size", mla.ropeDim},
                       {"value head size", mla.valueDim}}))
    return err;
  if (mla.queryRank < 0 || mla.queryRank > kMaxConfigSize)
    return fail("latent attention's query rank must be 0 (none) to " +
                llvm::Twine(kMaxConfigSize) + ", got " +
                llvm::Twine(mla.queryRank));
  // The cache keeps a latent row as its two halves.
  if ((mla.latentRank + mla.ropeDim) % 2 != 0)
    return fail("latent attention's cached row (kv_lora_rank " +
                llvm::Twine(mla.latentRank) + " + rotated " +
                llvm::Twine(mla.ropeDim) + ") must have an even width");
  return llvm::Error::success();
}

/// Gated DeltaNet's heads, convolution and layer types (Qwen3.5's).
static llvm::Error validateDeltaNet(const DecoderSpec &spec,
                                    llvm::StringRef configPath) {
  auto fail = [&](const llvm::Twine &what) {
    return makeError(configPath + ": " + what);
  };
  if (const DeltaNetSpec &net = spec.deltaNet; net.enabled()) {
    if (llvm::Error err = expectPositiveSizes(
            configPath, {{"linear attention key heads", net.keyHeads},
                         {"linear attention value heads", net.valueHeads},
                         {"linear attention key head size", net.keyDim},
                         {"linear attention value head size", net.valueDim},
                         {"convolution kernel", net.convKernel}}))
      return err;
    if (net.valueHeads % net.keyHeads != 0)
      return fail("linear attention's key heads (" +
                  llvm::Twine(net.keyHeads) + ") must divide its value heads (" +
                  llvm::Twine(net.valueHeads) + ")");
    double channels = 2.0 * double(net.keyHeads) * double(net.keyDim) +
                      double(net.valueHeads) * double(net.valueDim);
    if (channels > double(kMaxConfigSize))
      return fail("linear attention's convolution channels (" +
                  llvm::Twine(std::to_string(channels)) + ") exceed " +
                  llvm::Twine(kMaxConfigSize));
    if (net.convKernel < 2)
      return fail("linear attention's convolution kernel must be at least 2 "
                  "wide, got " + llvm::Twine(net.convKernel));
    if (int64_t(spec.recurrentLayers.size()) != spec.numLayers)
      return fail("the layer types list " +
                  llvm::Twine(spec.recurrentLayers.size()) +
                  " layers, the model has " + llvm::Twine(spec.numLayers));
    if (!(net.l2Epsilon > 0) || std::isinf(net.l2Epsilon))
      return fail("linear attention's L2 norm epsilon must be finite and "
                  "positive, got " + llvm::Twine(std::to_string(net.l2Epsilon)));
  } else if (llvm::is_contained(spec.recurrentLayers, true)) {
    return fail("linear attention layers need linear attention's sizes");
  }
  return llvm::Error::success();
}

llvm::Error mlir::tfm::validateDecoderSpec(const DecoderSpec &spec,
                                           llvm::StringRef configPath) {
  auto fail = [&](const llvm::Twine &what) {
    return makeError(configPath + ": " + what);
  };
  if (llvm::Error err = expectPositiveSizes(
          configPath, {{"vocab size", spec.vocabSize},
                       {"hidden size", spec.hiddenSize},
                       {"layer count", spec.numLayers},
                       {"attention head count", spec.numHeads},
                       {"key/value head count", spec.numKVHeads},
                       {"intermediate size", spec.intermediateSize},
                       {"maximum context", spec.maxContext}}))
    return err;
  if (spec.explicitHeadDim < 0)
    return fail("head size must be positive, got " +
                llvm::Twine(spec.explicitHeadDim));
  if (!spec.explicitHeadDim && spec.hiddenSize % spec.numHeads != 0)
    return fail("hidden size (" + llvm::Twine(spec.hiddenSize) +
                ") is not divisible by the head count (" +
                llvm::Twine(spec.numHeads) + ")");
  if (spec.numHeads % spec.numKVHeads != 0)
    return fail("key/value head count (" + llvm::Twine(spec.numKVHeads) +
                ") does not divide the head count (" +
                llvm::Twine(spec.numHeads) + ")");
  if (!spec.learnedPositions && spec.headDim() % 2 != 0)
    return fail("rotary embeddings need an even head size, got " +
                llvm::Twine(spec.headDim()));
  if (!spec.learnedPositions &&
      (spec.rotaryDims() <= 0 || spec.rotaryDims() % 2 != 0 ||
       spec.rotaryDims() > spec.headDim()))
    return fail("rotary dimensions must be even and at most the head size (" +
                llvm::Twine(spec.headDim()) + "), got " +
                llvm::Twine(spec.rotaryDims()));
  // The builder scales the scores by the magnitude squared, which scales
  // every dimension of a head, rotated or not.
  if (spec.ropeMagnitude != 1.0 && spec.rotaryDims() != spec.headDim())
    return fail("a RoPE magnitude (YaRN's attention factor, LongRoPE's) of " +
                llvm::Twine(std::to_string(spec.ropeMagnitude)) +
                " with partial rotary dimensions (" +
                llvm::Twine(spec.rotaryDims()) + " of " +
                llvm::Twine(spec.headDim()) +
                ") is not supported (it scales the rotated dimensions only)");
  if (spec.slidingWindow < 0)
    return fail("sliding window must be positive, got " +
                llvm::Twine(spec.slidingWindow));
  if (!spec.layerWindows.empty() &&
      int64_t(spec.layerWindows.size()) != spec.numLayers)
    return fail("the attention pattern lists " +
                llvm::Twine(spec.layerWindows.size()) +
                " layers, the model has " + llvm::Twine(spec.numLayers));
  for (auto validate :
       {validateExperts, validateLatentAttention, validateDeltaNet})
    if (llvm::Error err = validate(spec, configPath))
      return err;
  if (spec.attentionOutputGate && spec.qkNormAcrossHeads)
    return fail("an attention output gate beside Q and K norms across heads "
                "is not supported");
  if (llvm::Error err = validateLayerAttention(spec, configPath))
    return err;
  if (spec.perLayerInput.enabled() &&
      (spec.perLayerInput.vocab <= 0 ||
       double(spec.perLayerInput.size) * double(spec.numLayers) >
           double(kMaxConfigSize)))
    return fail("per-layer inputs must have a vocabulary and at most " +
                llvm::Twine(kMaxConfigSize) + " values a token, got " +
                llvm::Twine(spec.perLayerInput.size) + " a layer for " +
                llvm::Twine(spec.numLayers) + " layers");
  if (!spec.layerScales.empty() &&
      int64_t(spec.layerScales.size()) != spec.numLayers)
    return fail("the layer scales list " +
                llvm::Twine(spec.layerScales.size()) +
                " layers, the model has " + llvm::Twine(spec.numLayers));
  for (int64_t window : spec.layerWindows)
    if (window < 0)
      return fail("a local layer's window must be positive, got " +
                  llvm::Twine(window));
  if (!(spec.normEpsilon >= 0) || std::isinf(spec.normEpsilon))
    return fail("norm epsilon must be finite and non-negative, got " +
                llvm::Twine(std::to_string(spec.normEpsilon)));
  for (auto [what, value] : {std::pair<const char *, double>{
                                 "attention soft-cap", spec.attentionSoftcap},
                             {"logit soft-cap", spec.logitSoftcap},
                             {"local rope theta", spec.localRopeTheta}})
    if (!(value >= 0) || std::isinf(value))
      return fail(llvm::Twine(what) + " must be finite and non-negative, got " +
                  std::to_string(value));
  if (!spec.learnedPositions &&
      (!(spec.ropeTheta > 0) || std::isinf(spec.ropeTheta)))
    return fail("rope theta must be finite and positive, got " +
                llvm::Twine(std::to_string(spec.ropeTheta)));
  return llvm::Error::success();
}

namespace {

class DecoderIRBuilder : public ModelIRBuilder {
public:
  DecoderIRBuilder(MLIRContext &context, const DecoderSpec &spec,
                   const WeightStore &weights, llvm::StringRef checkpoint)
      : ModelIRBuilder(context, weights, checkpoint, spec.family),
        spec(spec) {}

  OwningOpRef<ModuleOp> build();

private:
  RankedTensorType tensorType(ArrayRef<int64_t> shape) {
    return RankedTensorType::get(shape, b.getF32Type());
  }
  Value norm(Value x, const std::string &name, Location loc);
  /// A scale of ones for norms without a learned one, made once at the
  /// start of the function so that every fusion can use it.
  Value unitScale();
  Value ones;
  /// x·Wᵀ (+ b) with the result shaped `resultShape` (leading dim dynamic).
  Value linear(Value x, const std::string &name, bool bias,
               ArrayRef<int64_t> resultShape, Location loc);
  /// One layer's attention and MLP of the normed input (`h`, `h2`),
  /// without the residual add.
  Value attention(Value h, Value positions, int64_t layer);
  /// Multi-head latent attention (spec.mla), absorbed.
  Value latentAttention(Value h, Value positions, int64_t layer);
  /// A Gated DeltaNet layer (spec.deltaNet) in place of attention.
  Value recurrentAttention(Value h, int64_t layer);
  /// A constant vector of `width` values `value`.
  Value constantVector(int64_t width, float value, const llvm::Twine &name);
  /// `x` ([?, heads, d]) rotated by RoPE as the spec says (Gemma 3's
  /// local layers: by their own base).
  Value rotate(Value x, Value positions, bool localRope, Location loc);
  /// `x` rotated by one layer's own RoPE frequencies (LayerAttention).
  Value rotate(Value x, Value positions, const LayerAttention &shape,
               Location loc);
  /// Columns [offset, offset + width) of the last dimension of every row.
  Value columns(Value x, int64_t offset, int64_t width, Location loc);
  Value mlp(Value h, int64_t layer);
  /// A mixture of experts (tfm.moe) over `h`, routed by `routerInput`
  /// (the same value, or the residual where LayerWeightNames::routerNorm
  /// says the router norms its own input).
  Value experts(Value h, Value routerInput, int64_t layer);
  Value block(Value x, Value positions, int64_t layer);
  /// Every layer's per-layer input ([?, layers · size]) of the tokens and
  /// their scaled embeddings `x` (spec.perLayerInput).
  Value perLayerInputs(Value tokens, Value x);
  /// The per-layer input's branch of `layer` added to `x`.
  Value addPerLayerInput(Value x, int64_t layer);

  const DecoderSpec &spec;
  /// Each layer's keys and values, for the layers that share them
  /// (LayerAttention::kvSource).
  llvm::DenseMap<int64_t, std::pair<Value, Value>> layerKeys;
  Value layerInputs;
};

Value DecoderIRBuilder::norm(Value x, const std::string &name, Location loc) {
  int64_t d = spec.hiddenSize;
  Value gamma = spec.normScale ? weight(name, {d}) : unitScale();
  auto epsilon = b.getF32FloatAttr(spec.normEpsilon);
  if (spec.rmsNorm)
    return RmsNormOp::create(b, loc, x.getType(), x, gamma, epsilon);
  Value beta = spec.normBias ? weight(tfm::biasName(name), {d}) : Value();
  return LayerNormOp::create(b, loc, x.getType(), x, gamma, beta, epsilon);
}

Value DecoderIRBuilder::unitScale() {
  if (!ones) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(b.getBlock());
    RankedTensorType type = tensorType({spec.hiddenSize});
    ones = arith::ConstantOp::create(
        b, named("unit_norm_scale"), type,
        DenseElementsAttr::get(type, b.getF32FloatAttr(1.0f)));
  }
  return ones;
}

Value DecoderIRBuilder::constantVector(int64_t width, float value,
                                       const llvm::Twine &name) {
  RankedTensorType type = tensorType({width});
  return arith::ConstantOp::create(
      b, named(name), type, DenseElementsAttr::get(type, b.getF32FloatAttr(value)));
}

Value DecoderIRBuilder::linear(Value x, const std::string &name, bool bias,
                               ArrayRef<int64_t> resultShape, Location loc) {
  auto xType = cast<RankedTensorType>(x.getType());
  int64_t in = 1, out = 1;
  for (int64_t d : xType.getShape().drop_front())
    in *= d;
  for (int64_t d : resultShape.drop_front())
    out *= d;
  Value w = weight(name, {out, in});
  Value biasValue = bias ? weight(tfm::biasName(name), {out}) : Value();
  return LinearOp::create(b, loc, tensorType(resultShape), x, w, biasValue);
}

Value DecoderIRBuilder::rotate(Value x, Value positions, bool localRope,
                               Location loc) {
  int64_t width = cast<RankedTensorType>(x.getType()).getDimSize(2);
  auto theta =
      b.getF32FloatAttr(localRope ? spec.localRopeTheta : spec.ropeTheta);
  auto style = RopeStyleAttr::get(b.getContext(), spec.ropeStyle);
  IntegerAttr rotaryDim = spec.rotaryDims() < width
                              ? b.getI64IntegerAttr(spec.rotaryDims())
                              : IntegerAttr();
  DenseF32ArrayAttr frequencies =
      spec.ropeFrequencies.empty() || localRope
          ? DenseF32ArrayAttr()
          : b.getDenseF32ArrayAttr(spec.ropeFrequencies);
  FloatAttr ntkFactor = spec.ropeNtkFactor > 0 && !localRope
                            ? b.getF32FloatAttr(spec.ropeNtkFactor)
                            : FloatAttr();
  IntegerAttr ntkContext =
      ntkFactor ? b.getI64IntegerAttr(spec.ropeNtkContext) : IntegerAttr();
  bool longRope = !spec.ropeLongFrequencies.empty() && !localRope;
  DenseF32ArrayAttr longFrequencies =
      longRope ? b.getDenseF32ArrayAttr(spec.ropeLongFrequencies)
               : DenseF32ArrayAttr();
  IntegerAttr longContext =
      longRope ? b.getI64IntegerAttr(spec.ropeLongContext) : IntegerAttr();
  return RopeOp::create(b, loc, x.getType(), style, x, positions, theta,
                        rotaryDim, frequencies, ntkFactor, ntkContext,
                        longFrequencies, longContext,
                        /*sections=*/DenseI64ArrayAttr());
}

Value DecoderIRBuilder::rotate(Value x, Value positions,
                               const LayerAttention &shape, Location loc) {
  auto style = RopeStyleAttr::get(b.getContext(), spec.ropeStyle);
  return RopeOp::create(b, loc, x.getType(), style, x, positions,
                        b.getF32FloatAttr(shape.ropeTheta),
                        /*rotary_dim=*/IntegerAttr(),
                        b.getDenseF32ArrayAttr(shape.ropeFrequencies),
                        /*ntk_factor=*/FloatAttr(),
                        /*ntk_context=*/IntegerAttr(),
                        /*long_frequencies=*/DenseF32ArrayAttr(),
                        /*long_context=*/IntegerAttr(),
                        /*sections=*/DenseI64ArrayAttr());
}

Value DecoderIRBuilder::columns(Value x, int64_t offset, int64_t width,
                                Location loc) {
  auto type = cast<RankedTensorType>(x.getType());
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0)), sizes,
      strides(rank, b.getIndexAttr(1));
  offsets.back() = b.getIndexAttr(offset);
  // Every row, by the source's own extent: a slice that position analysis
  // sees keep them all.
  sizes.push_back(tensor::getMixedSize(b, loc, x, 0));
  for (int64_t d = 1; d < rank - 1; ++d)
    sizes.push_back(b.getIndexAttr(type.getDimSize(d)));
  sizes.push_back(b.getIndexAttr(width));
  return tensor::ExtractSliceOp::create(b, loc, x, offsets, sizes, strides);
}

Value DecoderIRBuilder::latentAttention(Value h, Value positions,
                                        int64_t layer) {
  const tfm::LayerWeightNames &n = spec.layer;
  const LatentAttentionSpec &mla = spec.mla;
  Location loc = named("layer " + llvm::Twine(layer) + " latent attention");
  int64_t dyn = ShapedType::kDynamic, heads = spec.numHeads;
  int64_t rank = mla.latentRank, nope = mla.nopeDim, rope = mla.ropeDim;
  auto epsilon = b.getF32FloatAttr(mla.normEpsilon);
  auto name = [&](const std::string &pattern) {
    return tfm::layerWeightName(pattern, layer);
  };
  auto rmsNorm = [&](Value x, const std::string &pattern, int64_t width) {
    return Value(RmsNormOp::create(b, loc, x.getType(), x,
                                   weight(name(pattern), {width}), epsilon));
  };
  auto rows = [&](Value x, int64_t heads, int64_t width) {
    return Value(tensor::ExpandShapeOp::create(
        b, loc, tensorType({dyn, heads, width}), x,
        SmallVector<ReassociationIndices>{{0}, {1, 2}}));
  };
  // The query: each head's unrotated part absorbed into the latent space
  // (q·W_ukᵀ), its rotated part beside it.
  Value query = h;
  if (mla.queryRank > 0)
    query = rmsNorm(linear(h, name(n.queryDown), false, {dyn, mla.queryRank},
                           loc),
                    n.queryDownNorm, mla.queryRank);
  Value q = linear(query, name(n.query), false, {dyn, heads, nope + rope}, loc);
  Value absorbed = HeadLinearOp::create(
      b, loc, tensorType({dyn, heads, rank}), columns(q, 0, nope, loc),
      weight(name(n.keyAbsorb), {heads * rank, nope}));
  Value qRotated = rotate(columns(q, nope, rope, loc), positions, false, loc);
  Value fullQuery = tensor::ConcatOp::create(b, loc, 2,
                                             ValueRange{absorbed, qRotated});
  // The latent row [norm(c) | rope(k_pe)]: the one KV head's key, whose
  // leading `rank` columns are its value.
  Value kv = linear(h, name(n.latent), false, {dyn, rank + rope}, loc);
  Value latent = rows(rmsNorm(columns(kv, 0, rank, loc), n.latentNorm, rank),
                      1, rank);
  Value kRotated =
      rotate(rows(columns(kv, rank, rope, loc), 1, rope), positions, false,
             loc);
  Value key = tensor::ConcatOp::create(b, loc, 2, ValueRange{latent, kRotated});
  Value value = columns(key, 0, rank, loc);
  auto scale = b.getF32FloatAttr(spec.attentionScale > 0
                                     ? spec.attentionScale
                                     : 1.0 / std::sqrt(double(nope + rope)));
  AttentionOptions options;
  options.scale = scale;
  options.resultType = tensorType({dyn, heads, rank});
  Value attended = attend(loc, fullQuery, key, value, /*causal=*/true, options);
  // The key up-projection as stored, for the expanded form that
  // tfm-expand-latent-attention gives long prefills.
  if (!n.keyUp.empty()) {
    WeightDeclOp up =
        declarations.declare(b, name(n.keyUp), {heads * nope, rank});
    attended.getDefiningOp()->setAttr(
        kExpandedKeyAttrName, FlatSymbolRefAttr::get(up.getSymNameAttr()));
  }
  Value values = HeadLinearOp::create(
      b, loc, tensorType({dyn, heads, mla.valueDim}), attended,
      weight(name(n.valueUp), {heads * mla.valueDim, rank}));
  return linear(values, name(n.output), spec.outputBias, {dyn, spec.hiddenSize},
                loc);
}

Value DecoderIRBuilder::recurrentAttention(Value h, int64_t layer) {
  const tfm::LayerWeightNames &n = spec.layer;
  const DeltaNetSpec &net = spec.deltaNet;
  Location loc = named("layer " + llvm::Twine(layer) + " gated deltanet");
  int64_t dyn = ShapedType::kDynamic, channels = net.channels();
  int64_t keyHeads = net.keyHeads, valueHeads = net.valueHeads;
  int64_t keyDim = net.keyDim, valueDim = net.valueDim;
  auto name = [&](const std::string &pattern) {
    return tfm::layerWeightName(pattern, layer);
  };
  Value mixed = linear(h, name(n.recurrentQkv), false, {dyn, channels}, loc);
  Value gate = linear(h, name(n.recurrentGate), false,
                      {dyn, valueHeads, valueDim}, loc);
  Value beta = ActivationOp::create(
      b, loc, ActivationKind::sigmoid,
      linear(h, name(n.recurrentBeta), false, {dyn, valueHeads}, loc));
  Value alpha = LinearOp::create(
      b, loc, tensorType({dyn, valueHeads}), h,
      weight(name(n.recurrentAlpha), {valueHeads, spec.hiddenSize}),
      weight(name(n.recurrentAlphaBias), {valueHeads}));
  auto conv = CausalConv1dOp::create(
      b, loc, TypeRange{mixed.getType(), tensorType({net.convKernel - 1, channels})},
      mixed, weight(name(n.recurrentConv), {channels, net.convKernel}),
      /*state=*/Value(), /*reset=*/Value());
  Value convolved =
      ActivationOp::create(b, loc, ActivationKind::silu, conv.getResult());
  // q and k L2-normalized per head: x / sqrt(Σx² + ε) is an RMSNorm with
  // ε / d and a scale of 1 / sqrt(d).
  Value l2Scale = constantVector(keyDim, 1.0f / std::sqrt(float(keyDim)),
                                 "l2 norm scale");
  auto heads = [&](int64_t offset, int64_t count, int64_t width) {
    return Value(tensor::ExpandShapeOp::create(
        b, loc, tensorType({dyn, count, width}),
        columns(convolved, offset, count * width, loc),
        SmallVector<ReassociationIndices>{{0}, {1, 2}}));
  };
  auto l2Normed = [&](Value x) {
    return Value(RmsNormOp::create(
        b, loc, x.getType(), x, l2Scale,
        b.getF32FloatAttr(net.l2Epsilon / double(keyDim))));
  };
  Value q = l2Normed(heads(0, keyHeads, keyDim));
  Value k = l2Normed(heads(keyHeads * keyDim, keyHeads, keyDim));
  Value v = heads(2 * keyHeads * keyDim, valueHeads, valueDim);
  auto rule = GatedDeltaRuleOp::create(
      b, loc, TypeRange{v.getType(), tensorType({valueHeads, keyDim, valueDim})},
      q, k, v, alpha, weight(name(n.recurrentDecay), {valueHeads}), beta,
      /*state=*/Value(), /*reset=*/Value(),
      b.getF32FloatAttr(1.0 / std::sqrt(double(keyDim))),
      net.tiled ? b.getUnitAttr() : UnitAttr());
  // The gated norm: RMSNorm of each head's output (a plain scale) times
  // silu(z).
  Value normed = RmsNormOp::create(
      b, loc, rule.getResult().getType(), rule.getResult(),
      weight(name(n.recurrentNorm), {valueDim}),
      b.getF32FloatAttr(spec.normEpsilon));
  Value gated = MulOp::create(
      b, loc, normed, ActivationOp::create(b, loc, ActivationKind::silu, gate));
  return linear(gated, name(n.recurrentOutput), false, {dyn, spec.hiddenSize},
                loc);
}

Value DecoderIRBuilder::attention(Value h, Value positions, int64_t layer) {
  if (spec.isRecurrentLayer(layer))
    return recurrentAttention(h, layer);
  if (spec.mla.enabled())
    return latentAttention(h, positions, layer);
  const tfm::LayerWeightNames &n = spec.layer;
  Location loc = named("layer " + llvm::Twine(layer) + " attention");
  const LayerAttention *shape = spec.attentionOf(layer);
  int64_t dyn = ShapedType::kDynamic, heads = spec.numHeads,
          kvHeads = shape ? shape->kvHeads : spec.numKVHeads,
          headDim = shape ? shape->headDim : spec.headDim();
  // A projection to `count` heads, then its RMSNorm (before RoPE) where
  // the model has one: of each head (Qwen3) or of all heads together
  // (OLMoE), whose rows are normed whole before they are split into heads.
  // Qwen3-Next's query projection yields each head's [query | gate].
  Value outputGate;
  auto project = [&](const std::string &name, int64_t count,
                     const std::string &normName) {
    auto epsilon = b.getF32FloatAttr(spec.normEpsilon);
    std::string weightName = tfm::layerWeightName(name, layer);
    if (normName.empty() || !spec.qkNormAcrossHeads) {
      Value x;
      if (spec.attentionOutputGate && name == n.query) {
        Value both = linear(h, weightName, spec.qkvBias,
                            {dyn, count, 2 * headDim}, loc);
        x = columns(both, 0, headDim, loc);
        outputGate = columns(both, headDim, headDim, loc);
      } else {
        x = linear(h, weightName, spec.qkvBias, {dyn, count, headDim}, loc);
      }
      if (normName.empty())
        return x;
      Value gamma = weight(tfm::layerWeightName(normName, layer), {headDim});
      return Value(RmsNormOp::create(b, loc, x.getType(), x, gamma, epsilon));
    }
    Value rows =
        linear(h, weightName, spec.qkvBias, {dyn, count * headDim}, loc);
    Value gamma =
        weight(tfm::layerWeightName(normName, layer), {count * headDim});
    Value normed =
        RmsNormOp::create(b, loc, rows.getType(), rows, gamma, epsilon);
    return Value(tensor::ExpandShapeOp::create(
        b, loc, tensorType({dyn, count, headDim}), normed,
        SmallVector<ReassociationIndices>{{0}, {1, 2}}));
  };
  Value q = project(n.query, heads, n.queryNorm);
  Value k, v;
  bool ownKeys = !shape || shape->kvSource < 0;
  if (ownKeys && shape && shape->valueIsKey) {
    // Gemma 4's attention_k_eq_v: V is K's projection before K's norm.
    v = project(n.key, kvHeads, "");
    k = RmsNormOp::create(
        b, loc, v.getType(), v,
        weight(tfm::layerWeightName(n.keyNorm, layer), {headDim}),
        b.getF32FloatAttr(spec.normEpsilon));
  } else if (ownKeys) {
    k = project(n.key, kvHeads, n.keyNorm);
    v = project(n.value, kvHeads, "");
  }
  if (ownKeys && spec.valueNorm)
    v = RmsNormOp::create(b, loc, v.getType(), v,
                          constantVector(headDim, 1.0f, "unit value norm"),
                          b.getF32FloatAttr(spec.normEpsilon));
  if (spec.clipQkv > 0) {
    auto min = b.getF32FloatAttr(-spec.clipQkv);
    auto max = b.getF32FloatAttr(spec.clipQkv);
    q = ClampOp::create(b, loc, q, min, max);
    k = ClampOp::create(b, loc, k, min, max);
    v = ClampOp::create(b, loc, v, min, max);
  }
  // A window as long as the context excludes nothing: leave it out.
  int64_t layerWindow =
      spec.layerWindows.empty() ? spec.slidingWindow : spec.layerWindows[layer];
  IntegerAttr window = layerWindow > 0 && layerWindow < spec.maxContext
                           ? b.getI64IntegerAttr(layerWindow)
                           : IntegerAttr();
  // Gemma 3's local layers rotate with a base of their own, unscaled.
  bool localRope = spec.localRopeTheta > 0 && layerWindow > 0;
  if (shape) {
    q = rotate(q, positions, *shape, loc);
    if (ownKeys) {
      k = rotate(k, positions, *shape, loc);
      layerKeys[layer] = {k, v};
    } else {
      // The source layer's keys and values, as it attends over them.
      std::tie(k, v) = layerKeys.lookup(shape->kvSource);
    }
  } else if (!spec.learnedPositions) {
    q = rotate(q, positions, localRope, loc);
    k = rotate(k, positions, localRope, loc);
  }
  // LongRoPE's magnitude multiplies both Q's and K's rotations: the scores
  // by its square.
  auto scale = b.getF32FloatAttr((spec.attentionScale > 0
                                      ? spec.attentionScale
                                      : 1.0 / std::sqrt(double(headDim))) *
                                 spec.ropeMagnitude * spec.ropeMagnitude);
  FloatAttr softcap = spec.attentionSoftcap > 0
                          ? b.getF32FloatAttr(spec.attentionSoftcap)
                          : FloatAttr();
  Value sinks =
      n.attentionSinks.empty()
          ? Value()
          : weight(tfm::layerWeightName(n.attentionSinks, layer), {heads});
  AttentionOptions options;
  options.scale = scale;
  options.sinks = sinks;
  options.window = window;
  options.softcap = softcap;
  Value attended = attend(loc, q, k, v, /*causal=*/true, options);
  if (outputGate)
    attended = MulOp::create(
        b, loc, attended,
        ActivationOp::create(b, loc, ActivationKind::sigmoid, outputGate));
  return linear(attended, tfm::layerWeightName(n.output, layer),
                spec.outputBias, {dyn, spec.hiddenSize}, loc);
}

Value DecoderIRBuilder::experts(Value h, Value routerInput, int64_t layer) {
  const tfm::LayerWeightNames &n = spec.layer;
  Location loc = named("layer " + llvm::Twine(layer) + " experts");
  int64_t d = spec.hiddenSize, f = spec.expertSize;
  if (!n.routerNorm.empty())
    routerInput =
        norm(routerInput, tfm::layerWeightName(n.routerNorm, layer), loc);
  Value logits =
      linear(routerInput, tfm::layerWeightName(n.router, layer),
             spec.expertBiases, {ShapedType::kDynamic, spec.numExperts}, loc);
  SmallVector<Value> weights, biases;
  for (int64_t e = 0; e < spec.numExperts; ++e) {
    std::string gate = expertWeightName(n.expertGate, layer, e),
                up = expertWeightName(n.expertUp, layer, e),
                down = expertWeightName(n.expertDown, layer, e);
    weights.push_back(weight(gate, {f, d}));
    weights.push_back(weight(up, {f, d}));
    weights.push_back(weight(down, {d, f}));
    if (spec.expertBiases)
      biases.append({weight(biasName(gate), {f}), weight(biasName(up), {f}),
                     weight(biasName(down), {d})});
  }
  // A shared expert, and Qwen2-MoE's gate vector for it.
  SmallVector<Value> shared;
  if (spec.sharedExpertSize > 0) {
    int64_t s = spec.sharedExpertSize;
    shared = {weight(tfm::layerWeightName(n.sharedGate, layer), {s, d}),
              weight(tfm::layerWeightName(n.sharedUp, layer), {s, d}),
              weight(tfm::layerWeightName(n.sharedDown, layer), {d, s})};
    if (!n.sharedExpertGate.empty())
      shared.push_back(
          weight(tfm::layerWeightName(n.sharedExpertGate, layer), {1, d}));
  }
  Value selectionBias =
      n.routerBias.empty()
          ? Value()
          : weight(tfm::layerWeightName(n.routerBias, layer),
                   {spec.numExperts});
  Value expertScales =
      n.expertScales.empty()
          ? Value()
          : weight(tfm::layerWeightName(n.expertScales, layer),
                   {spec.numExperts});
  bool grouped = spec.expertGroups > 1;
  return MoeOp::create(
      b, loc, h.getType(), h, logits, weights, shared, selectionBias,
      expertScales, biases,
      b.getI64IntegerAttr(spec.expertsPerToken),
      spec.normalizeExpertWeights ? b.getUnitAttr() : UnitAttr(),
      ActivationKindAttr::get(b.getContext(), spec.activation),
      RouterScoringAttr::get(b.getContext(), spec.routerScoring),
      grouped ? b.getI64IntegerAttr(spec.expertGroups) : IntegerAttr(),
      grouped ? b.getI64IntegerAttr(spec.topExpertGroups) : IntegerAttr(),
      spec.routedScale != 1.0 ? b.getF32FloatAttr(spec.routedScale)
                              : FloatAttr(),
      spec.swigluLimit > 0 ? b.getF32FloatAttr(spec.swigluLimit) : FloatAttr());
}

Value DecoderIRBuilder::mlp(Value h, int64_t layer) {
  if (spec.numExperts > 0 && layer >= spec.denseLayers &&
      !spec.expertsBesideMlp)
    return experts(h, h, layer);
  const tfm::LayerWeightNames &n = spec.layer;
  Location loc = named("layer " + llvm::Twine(layer) + " mlp");
  int64_t dyn = ShapedType::kDynamic;
  bool bias = spec.mlpBias;
  const LayerAttention *shape = spec.attentionOf(layer);
  int64_t width = shape && shape->intermediate ? shape->intermediate
                                               : spec.intermediateSize;
  Value up = linear(h, tfm::layerWeightName(n.up, layer), bias, {dyn, width},
                    loc);
  Value hidden;
  if (spec.gatedMlp) {
    Value gate = linear(h, tfm::layerWeightName(n.gate, layer), bias,
                        {dyn, width}, loc);
    Value act = ActivationOp::create(b, loc, spec.activation, gate);
    hidden = MulOp::create(b, loc, act, up);
  } else {
    hidden = ActivationOp::create(b, loc, spec.activation, up);
  }
  return linear(hidden, tfm::layerWeightName(n.down, layer), bias,
                {dyn, spec.hiddenSize}, loc);
}

Value DecoderIRBuilder::block(Value x, Value positions, int64_t layer) {
  const tfm::LayerWeightNames &n = spec.layer;
  Location loc = named("layer " + llvm::Twine(layer));
  // Gemma 2 and 3 norm each branch's output too, before its residual add.
  auto postNorm = [&](Value branch, const std::string &name) {
    return name.empty() ? branch
                        : norm(branch, tfm::layerWeightName(name, layer), loc);
  };
  Value h = norm(x, tfm::layerWeightName(n.attnNorm, layer), loc);
  Value attended =
      postNorm(attention(h, positions, layer), n.postAttentionNorm);
  if (!spec.parallelResidual) {
    x = AddOp::create(b, loc, x, attended);
    Value h2 = norm(x, tfm::layerWeightName(n.mlpNorm, layer), loc);
    Value fed = mlp(h2, layer);
    if (spec.expertsBesideMlp) {
      Value routed = experts(
          norm(x, tfm::layerWeightName(n.expertsNorm, layer), loc), x, layer);
      fed = AddOp::create(b, loc, postNorm(fed, n.postDenseMlpNorm),
                          postNorm(routed, n.postExpertsNorm));
    }
    x = AddOp::create(b, loc, x, postNorm(fed, n.postMlpNorm));
    if (spec.perLayerInput.enabled())
      x = addPerLayerInput(x, layer);
    if (!spec.layerScales.empty())
      x = ScaleOp::create(b, loc, x,
                          b.getF32FloatAttr(spec.layerScales[size_t(layer)]));
    return x;
  }
  // Both branches read the layer's input: Phi normalizes it once for both,
  // GPT-NeoX once for each.
  Value h2 = n.mlpNorm.empty()
                 ? h
                 : norm(x, tfm::layerWeightName(n.mlpNorm, layer), loc);
  Value branches =
      AddOp::create(b, loc, attended, postNorm(mlp(h2, layer), n.postMlpNorm));
  return AddOp::create(b, loc, x, branches);
}

Value DecoderIRBuilder::perLayerInputs(Value tokens, Value x) {
  const PerLayerInputSpec &per = spec.perLayerInput;
  Location loc = named("per-layer inputs");
  int64_t dyn = ShapedType::kDynamic, layers = spec.numLayers,
          size = per.size, width = layers * per.size;
  Value looked = EmbeddingOp::create(
      b, loc, tensorType({dyn, width}),
      weight(per.embedding, {per.vocab, width}), tokens,
      b.getF32FloatAttr(std::sqrt(double(size))));
  // The projection of the embeddings, normed over each layer's values.
  Value projected = ScaleOp::create(
      b, loc, linear(x, per.projection, false, {dyn, layers, size}, loc),
      b.getF32FloatAttr(1.0 / std::sqrt(double(spec.hiddenSize))));
  Value normed = RmsNormOp::create(b, loc, projected.getType(), projected,
                                   weight(per.projectionNorm, {size}),
                                   b.getF32FloatAttr(spec.normEpsilon));
  Value rows = tensor::CollapseShapeOp::create(
      b, loc, tensorType({dyn, width}), normed,
      SmallVector<ReassociationIndices>{{0}, {1, 2}});
  return ScaleOp::create(b, loc, AddOp::create(b, loc, rows, looked),
                         b.getF32FloatAttr(1.0 / std::sqrt(2.0)));
}

Value DecoderIRBuilder::addPerLayerInput(Value x, int64_t layer) {
  const tfm::LayerWeightNames &n = spec.layer;
  Location loc = named("layer " + llvm::Twine(layer) + " per-layer input");
  int64_t dyn = ShapedType::kDynamic, size = spec.perLayerInput.size;
  Value gate = ActivationOp::create(
      b, loc, spec.activation,
      linear(x, tfm::layerWeightName(n.perLayerGate, layer), false,
             {dyn, size}, loc));
  Value gated =
      MulOp::create(b, loc, gate, columns(layerInputs, layer * size, size, loc));
  Value projected =
      linear(gated, tfm::layerWeightName(n.perLayerProjection, layer), false,
             {dyn, spec.hiddenSize}, loc);
  return AddOp::create(
      b, loc, x,
      norm(projected, tfm::layerWeightName(n.perLayerNorm, layer), loc));
}

OwningOpRef<ModuleOp> DecoderIRBuilder::build() {
  Location loc = named(spec.family);
  OwningOpRef<ModuleOp> module = ModuleOp::create(loc);
  b.setInsertionPointToEnd(module->getBody());
  int64_t dyn = ShapedType::kDynamic;
  auto tokensType = RankedTensorType::get({dyn}, b.getI32Type());
  auto logitsType = tensorType({dyn, spec.vocabSize});
  auto func = func::FuncOp::create(
      b, loc, "forward", b.getFunctionType({tokensType}, {logitsType}));
  func.setArgAttr(0, kInputArgAttrName,
                  InputRoleAttr::get(b.getContext(), InputRole::token_ids));
  func.setResultAttr(0, kOutputResultAttrName,
                     OutputRoleAttr::get(b.getContext(), OutputRole::logits));
  b.setInsertionPointToEnd(func.addEntryBlock());
  Value tokens = func.getArgument(0);

  Value table = weight(spec.tokenEmbedding, {spec.vocabSize, spec.hiddenSize});
  FloatAttr embeddingScale =
      spec.embeddingScale ? b.getF32FloatAttr(spec.embeddingScale)
                          : FloatAttr();
  Value x = EmbeddingOp::create(b, named("embedding"),
                                tensorType({dyn, spec.hiddenSize}), table,
                                tokens, embeddingScale);
  Value positions =
      PositionIdsOp::create(b, loc, tokensType, tokens, /*offset=*/Value(),
                            /*lengths=*/Value(), /*padding_id=*/IntegerAttr());
  if (spec.learnedPositions) {
    Value positionTable =
        weight(spec.positionEmbedding, {spec.maxContext, spec.hiddenSize});
    Value pe = EmbeddingOp::create(b, named("position embedding"),
                                   x.getType(), positionTable, positions,
                                   /*scale=*/FloatAttr());
    x = AddOp::create(b, loc, x, pe);
  }
  if (spec.perLayerInput.enabled())
    layerInputs = perLayerInputs(tokens, x);
  for (int64_t layer = 0; layer < spec.numLayers; ++layer)
    x = block(x, positions, layer);
  Location head = named("lm head");
  x = norm(x, spec.finalNorm, head);
  // A tied head reuses the embedding table as the [vocab, hidden] weight.
  Value headWeight =
      spec.lmHead.empty()
          ? table
          : weight(spec.lmHead, {spec.vocabSize, spec.hiddenSize});
  Value headBias = spec.lmHeadBias
                       ? weight(tfm::biasName(spec.lmHead), {spec.vocabSize})
                       : Value();
  Value logits =
      LinearOp::create(b, head, logitsType, x, headWeight, headBias);
  if (spec.logitSoftcap > 0)
    logits = SoftcapOp::create(b, head, logits,
                               b.getF32FloatAttr(spec.logitSoftcap));
  func::ReturnOp::create(b, loc, logits);
  return module;
}

} // namespace

/// Whether some tensor of `weights` belongs to layer `layer`: has it as a
/// component of its name ("model.layers.7.mlp...", "blk.7.ffn_up...").
static bool hasLayerTensor(const WeightStore &weights, int64_t layer) {
  std::string index = std::to_string(layer);
  for (const std::string &name : weights.names()) {
    llvm::SmallVector<llvm::StringRef> parts;
    llvm::StringRef(name).split(parts, '.');
    if (llvm::is_contained(parts, index))
      return true;
  }
  return false;
}

llvm::Expected<OwningOpRef<ModuleOp>> mlir::tfm::buildDecoder(
    MLIRContext &context, const DecoderSpec &spec, const WeightStore &weights,
    llvm::StringRef checkpoint,
    llvm::function_ref<bool(llvm::StringRef)> isIgnoredWeight) {
  // A config claiming more layers than the checkpoint holds is refused
  // before they are built: every missing weight would be reported anyway,
  // after building thousands of layers for a crafted file (seconds, and
  // memory in proportion).
  if (spec.numLayers > 0 && !weights.names().empty() &&
      !hasLayerTensor(weights, spec.numLayers - 1))
    return makeError(checkpoint + ": the config has " +
                     llvm::Twine(spec.numLayers) +
                     " layers, but no tensor of layer " +
                     llvm::Twine(spec.numLayers - 1) + " is in the checkpoint");
  context.loadDialect<TfmDialect, func::FuncDialect, arith::ArithDialect,
                      tensor::TensorDialect>();
  DecoderIRBuilder builder(context, spec, weights, checkpoint);
  return builder.declarations.finish(builder.build(), isIgnoredWeight);
}
