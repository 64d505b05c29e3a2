//===- VisionTransformer.cpp - ViT and DeiT as tfm IR -------------------===//
//
// transformers' ViTModel / DeiTModel and their image classifiers:
//   x = [cls; (distillation;) patches(pixels)·Wpᵀ + bp] + positions
//   per layer (pre-norm):
//     x = x + Wo·attention(LN1(x))      (bidirectional)
//     x = x + W2·gelu(W1·LN2(x))
//   x = LN(x)
// @encode(pixels [C, H, W]) returns x; @classify returns the class logits
// of the first token (DeiT with a teacher: the mean of the class token's
// and the distillation token's heads).
//
//===----------------------------------------------------------------------===//

#include "frontend/families/VisionTransformer.h"
#include "frontend/ErrorMessages.h"
#include "frontend/builders/DecoderSpec.h"
#include "frontend/builders/ModelIRBuilder.h"
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

struct VisionSpec {
  std::string family, prefix; // "vit." / "deit." in classifiers' checkpoints
  int64_t hiddenSize = 0, numLayers = 0, numHeads = 0, intermediateSize = 0,
          imageSize = 0, patchSize = 0, channels = 3;
  double normEpsilon = 1e-12;
  ActivationKind activation = ActivationKind::gelu;
  bool distillationToken = false;
  /// Heads: none (@encode), `classifier` on the class token, or DeiT's
  /// teacher pair averaged.
  enum class Head { None, Class, ClassAndDistillation } head = Head::None;
  int64_t labels = 0;

  int64_t patches() const {
    return (imageSize / patchSize) * (imageSize / patchSize);
  }
  int64_t tokens() const { return patches() + 1 + (distillationToken ? 1 : 0); }
};

class VisionIRBuilder : public ModelIRBuilder {
public:
  VisionIRBuilder(MLIRContext &context, const VisionSpec &spec,
                  const WeightStore &weights, llvm::StringRef checkpoint)
      : ModelIRBuilder(context, weights, checkpoint, spec.family),
        spec(spec) {}

  OwningOpRef<ModuleOp> build();

private:
  RankedTensorType matrix(int64_t rows, int64_t columns) {
    return RankedTensorType::get({rows, columns}, b.getF32Type());
  }
  std::string name(llvm::StringRef suffix) { return spec.prefix + suffix.str(); }
  Value norm(Value x, const std::string &n) {
    return declarations.biasedLayerNorm(b, x, n, spec.hiddenSize,
                                        spec.normEpsilon);
  }
  /// Row `row` of x ([tokens, n]) as a [n] vector.
  Value row(Value x, int64_t row) {
    int64_t n = cast<RankedTensorType>(x.getType()).getDimSize(1);
    return tensor::ExtractSliceOp::create(
        b, x.getLoc(), RankedTensorType::get({n}, b.getF32Type()), x,
        ValueRange(), ValueRange(), ValueRange(),
        b.getDenseI64ArrayAttr({row, 0}), b.getDenseI64ArrayAttr({1, n}),
        b.getDenseI64ArrayAttr({1, 1}));
  }
  Value embeddings(Value pixels);
  Value layer(Value x, int64_t index);

  const VisionSpec &spec;
};

Value VisionIRBuilder::embeddings(Value pixels) {
  Location loc = named("embeddings");
  int64_t d = spec.hiddenSize, p = spec.patchSize, c = spec.channels,
          n = spec.patches(), tokens = spec.tokens();
  // The stride-p convolution: a GEMM over the flattened patches with the
  // [d, C, p, p] kernel read as [d, C·p·p].
  Value patches = PatchesOp::create(b, loc, matrix(n, c * p * p), pixels,
                                    b.getI64IntegerAttr(p));
  std::string projection = name("embeddings.patch_embeddings.projection.weight");
  Value kernel =
      declarations.readAs(b, projection, {d, c, p, p}, {d, c * p * p});
  Value x = LinearOp::create(b, loc, matrix(n, d), patches, kernel,
                             weight(biasName(projection), {d}),
                             ActivationKindAttr(), UnitAttr());
  SmallVector<Value> rows = {declarations.readAs(
      b, name("embeddings.cls_token"), {1, 1, d}, {1, d})};
  if (spec.distillationToken)
    rows.push_back(declarations.readAs(
        b, name("embeddings.distillation_token"), {1, 1, d}, {1, d}));
  rows.push_back(x);
  x = ConcatOp::create(b, loc, matrix(tokens, d), rows);
  Value positions = declarations.readAs(
      b, name("embeddings.position_embeddings"), {1, tokens, d}, {tokens, d});
  return AddOp::create(b, loc, x, positions);
}

Value VisionIRBuilder::layer(Value x, int64_t index) {
  auto n = [&](llvm::StringRef what) {
    return name(("encoder.layer." + llvm::Twine(index) + "." + what).str());
  };
  int64_t heads = spec.numHeads, headDim = spec.hiddenSize / heads,
          d = spec.hiddenSize;
  Value h = norm(x, n("layernorm_before.weight"));
  Value q = linear(h, n("attention.attention.query.weight"), {heads, headDim});
  Value k = linear(h, n("attention.attention.key.weight"), {heads, headDim});
  Value v = linear(h, n("attention.attention.value.weight"), {heads, headDim});
  Value attended = AttentionOp::create(
      b, named("layer " + llvm::Twine(index) + " attention"), q.getType(), q,
      k, v, /*bias=*/Value(), /*lengths=*/Value(), /*relative_bias=*/Value(),
      b.getF32FloatAttr(1.0 / std::sqrt(double(headDim))),
      /*causal=*/UnitAttr(), /*window=*/IntegerAttr(),
      /*max_distance=*/IntegerAttr());
  x = AddOp::create(b, x.getLoc(), x,
                    linear(attended, n("attention.output.dense.weight"), {d}));
  h = norm(x, n("layernorm_after.weight"));
  h = linear(h, n("intermediate.dense.weight"), {spec.intermediateSize},
             spec.activation);
  return AddOp::create(b, x.getLoc(), x, linear(h, n("output.dense.weight"), {d}));
}

OwningOpRef<ModuleOp> VisionIRBuilder::build() {
  OwningOpRef<ModuleOp> module = ModuleOp::create(named(spec.family));
  b.setInsertionPointToEnd(module->getBody());
  MLIRContext *ctx = b.getContext();
  auto pixelsType = RankedTensorType::get(
      {spec.channels, spec.imageSize, spec.imageSize}, b.getF32Type());
  bool classifies = spec.head != VisionSpec::Head::None;
  Type result = classifies
                    ? Type(RankedTensorType::get({spec.labels}, b.getF32Type()))
                    : Type(matrix(spec.tokens(), spec.hiddenSize));
  llvm::StringRef entryName = classifies ? "classify" : "encode";
  auto function = func::FuncOp::create(b, named(entryName), entryName,
                                       b.getFunctionType({pixelsType}, {result}));
  function.setArgAttr(0, kInputArgAttrName,
                      InputRoleAttr::get(ctx, InputRole::features));
  function.setResultAttr(0, kOutputResultAttrName,
                         OutputRoleAttr::get(ctx, classifies
                                                      ? OutputRole::logits
                                                      : OutputRole::hidden_states));
  Block *entry = function.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value x = embeddings(entry->getArgument(0));
  for (int64_t i = 0; i < spec.numLayers; ++i)
    x = layer(x, i);
  x = norm(x, name("layernorm.weight"));
  Location at = named("classifier");
  if (spec.head == VisionSpec::Head::Class) {
    // Position-wise, so the head runs on every token and keeps the first.
    x = row(linear(x, "classifier.weight", {spec.labels}), 0);
  } else if (spec.head == VisionSpec::Head::ClassAndDistillation) {
    Value cls = row(linear(x, "cls_classifier.weight", {spec.labels}), 0);
    Value distilled =
        row(linear(x, "distillation_classifier.weight", {spec.labels}), 1);
    auto half = arith::ConstantOp::create(
        b, at, DenseElementsAttr::get(cast<ShapedType>(result), 0.5f));
    x = MulOp::create(b, at, AddOp::create(b, at, cls, distilled), half);
  }
  func::ReturnOp::create(b, at, x);
  return module;
}

} // namespace

/// Every vision family (one reader serves both: DeiT is ViT with a
/// distillation token), in the order messages list them.
static const llvm::StringLiteral kVisionFamilies[] = {"vit", "deit"};

bool mlir::tfm::isVisionFamily(llvm::StringRef modelType) {
  return llvm::is_contained(kVisionFamilies, modelType);
}

std::string mlir::tfm::supportedVisionFamilies() {
  return llvm::join(std::begin(kVisionFamilies), std::end(kVisionFamilies),
                    ", ");
}

llvm::Error mlir::tfm::loadVisionTransformer(
    MLIRContext &context, llvm::StringRef modelType, ConfigReader &config,
    ArrayRef<std::string> architectures, std::vector<std::string> labels,
    llvm::StringRef checkpoint, llvm::StringRef configPath,
    LoadedModel &model) {
  const WeightStore &weights = model.weights;
  VisionSpec spec;
  spec.family = modelType.str();
  spec.hiddenSize = config.integer("hidden_size");
  spec.numLayers = config.integer("num_hidden_layers");
  spec.numHeads = config.integer("num_attention_heads");
  spec.intermediateSize = config.integer("intermediate_size");
  spec.imageSize = config.integer("image_size", 224);
  spec.patchSize = config.integer("patch_size", 16);
  spec.channels = config.integer("num_channels", 3);
  spec.normEpsilon = config.number("layer_norm_eps", 1e-12);
  spec.activation = config.activation("hidden_act", "gelu");
  if (!config.boolean("qkv_bias", true))
    config.fail("qkv_bias false is not supported (every projection has a "
                "bias here)");
  if (llvm::Error err = config.takeError())
    return std::move(err);
  if (spec.hiddenSize <= 0 || spec.numLayers <= 0 || spec.numHeads <= 0 ||
      spec.intermediateSize <= 0 || spec.channels <= 0 ||
      spec.patchSize <= 0 || spec.imageSize <= 0)
    return makeError(configPath + ": sizes must be positive");
  if (spec.hiddenSize % spec.numHeads)
    return makeError(configPath + ": hidden_size " +
                     llvm::Twine(spec.hiddenSize) +
                     " is not a multiple of num_attention_heads " +
                     llvm::Twine(spec.numHeads));
  if (spec.imageSize % spec.patchSize)
    return makeError(configPath + ": patch_size " +
                     llvm::Twine(spec.patchSize) + " does not divide image_size " +
                     llvm::Twine(spec.imageSize));

  // The architecture picks the head; the checkpoint's prefix follows it.
  std::string architecture = architectures.empty() ? "" : architectures.front();
  bool deit = modelType == "deit";
  spec.distillationToken = deit;
  if (architecture == "ViTForImageClassification" ||
      architecture == "DeiTForImageClassification") {
    spec.head = VisionSpec::Head::Class;
  } else if (architecture == "DeiTForImageClassificationWithTeacher") {
    spec.head = VisionSpec::Head::ClassAndDistillation;
  } else if (!architecture.empty() && architecture != "ViTModel" &&
             architecture != "DeiTModel") {
    return makeError(configPath + ": the " + architecture + " head of " +
                     modelType + " is not supported yet");
  }
  spec.labels = int64_t(labels.size());
  if (spec.head != VisionSpec::Head::None && spec.labels <= 0)
    return makeError(configPath + ": a classifier needs id2label");
  std::string prefix = (modelType + ".").str();
  if (weights.lookup(prefix + "embeddings.cls_token"))
    spec.prefix = prefix;

  context.loadDialect<TfmDialect, func::FuncDialect, arith::ArithDialect,
                      tensor::TensorDialect>();
  VisionIRBuilder builder(context, spec, weights, checkpoint);
  // ViTModel's pooler (dense + tanh on the class token) is not an output
  // here; its weights may stay unused.
  auto ignored = [&](llvm::StringRef n) {
    return n.starts_with(spec.prefix + "pooler.");
  };
  auto module = builder.declarations.finish(builder.build(), ignored);
  if (!module)
    return module.takeError();
  model.module = std::move(*module);
  model.family = spec.family;
  model.addBos = false;
  if (spec.head != VisionSpec::Head::None)
    model.labels = std::move(labels);
  model.maxContext = spec.tokens();
  llvm::Expected<ImagePreprocessingAttr> preprocessing =
      readImagePreprocessing(context, llvm::sys::path::parent_path(configPath),
                             spec.imageSize);
  if (!preprocessing)
    return preprocessing.takeError();
  model.imagePreprocessing = *preprocessing;
  model.hiddenSize = spec.hiddenSize;
  model.numLayers = spec.numLayers;
  model.numHeads = model.numKVHeads = spec.numHeads;
  return llvm::Error::success();
}

