//===- VisionBuilder.cpp - ViT, DeiT and AST as tfm IR --------------------===//
//
// transformers' ViTModel / DeiTModel and their image classifiers, and the
// Audio Spectrogram Transformer (ASTModel, ASTForAudioClassification): a
// DeiT over a [mel bins, frames] filterbank in overlapping patches
// (16x16 every 10 by default), its head on the mean of the class and
// distillation tokens:
//   x = [cls; (distillation;) patches(pixels)·Wpᵀ + bp] + positions
//   per layer (pre-norm):
//     x = x + Wo·attention(LN1(x))      (bidirectional)
//     x = x + W2·gelu(W1·LN2(x))
//   x = LN(x)
// @encode(pixels [C, H, W]) returns x; @classify returns the class logits
// of the first token (DeiT with a teacher: the mean of the class token's
// and the distillation token's heads; AST: LN and a dense layer on the mean
// of the two tokens).
//
//===----------------------------------------------------------------------===//

#include "frontend/builders/VisionBuilder.h"
#include "frontend/builders/ModelIRBuilder.h"
#include "ir/TfmOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;

namespace {

class VisionIRBuilder : public ModelIRBuilder {
public:
  VisionIRBuilder(MLIRContext &context, const VisionSpec &spec,
                  const WeightStore &weights, llvm::StringRef checkpoint)
      : ModelIRBuilder(context, weights, checkpoint, spec.family), spec(spec) {}

  OwningOpRef<ModuleOp> build();

private:
  std::string name(llvm::StringRef suffix) {
    return spec.prefix + suffix.str();
  }
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
  if (spec.spectrogram) // [mel bins, frames] as a one-channel image
    pixels = tensor::ExpandShapeOp::create(
        b, loc,
        RankedTensorType::get({1, spec.height, spec.width}, b.getF32Type()),
        pixels, SmallVector<ReassociationIndices>{{0, 1}, {2}});
  DenseI64ArrayAttr strides =
      spec.strideY || spec.strideX
          ? b.getDenseI64ArrayAttr({spec.stepY(), spec.stepX()})
          : DenseI64ArrayAttr();
  Value patches = PatchesOp::create(b, loc, matrix(n, c * p * p), pixels,
                                    b.getI64IntegerAttr(p), strides);
  std::string projection =
      name("embeddings.patch_embeddings.projection.weight");
  Value kernel =
      declarations.readAs(b, projection, {d, c, p, p}, {d, c * p * p});
  Value x = LinearOp::create(b, loc, matrix(n, d), patches, kernel,
                             weight(biasName(projection), {d}),
                             ActivationKindAttr(), UnitAttr());
  SmallVector<Value> rows = {
      declarations.readAs(b, name("embeddings.cls_token"), {1, 1, d}, {1, d})};
  if (spec.distillationToken)
    rows.push_back(declarations.readAs(b, name("embeddings.distillation_token"),
                                       {1, 1, d}, {1, d}));
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
  Value attended = attend(named("layer " + llvm::Twine(index) + " attention"),
                          q, k, v, /*causal=*/false);
  x = AddOp::create(b, x.getLoc(), x,
                    linear(attended, n("attention.output.dense.weight"), {d}));
  h = norm(x, n("layernorm_after.weight"));
  h = linear(h, n("intermediate.dense.weight"), {spec.intermediateSize},
             spec.activation);
  return AddOp::create(b, x.getLoc(), x,
                       linear(h, n("output.dense.weight"), {d}));
}

OwningOpRef<ModuleOp> VisionIRBuilder::build() {
  OwningOpRef<ModuleOp> module = ModuleOp::create(named(spec.family));
  b.setInsertionPointToEnd(module->getBody());
  MLIRContext *ctx = b.getContext();
  auto pixelsType =
      spec.spectrogram
          ? RankedTensorType::get({spec.height, spec.width}, b.getF32Type())
          : RankedTensorType::get({spec.channels, spec.height, spec.width},
                                  b.getF32Type());
  bool classifies = spec.head != VisionSpec::Head::None;
  Type result = classifies
                    ? Type(RankedTensorType::get({spec.labels}, b.getF32Type()))
                    : Type(matrix(spec.tokens(), spec.hiddenSize));
  llvm::StringRef entryName = classifies ? "classify" : "encode";
  Value pixels = beginEntryPoint(
      entryName, pixelsType, InputRole::features, result,
      classifies ? OutputRole::logits : OutputRole::hidden_states);
  Value x = embeddings(pixels);
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
  } else if (spec.head == VisionSpec::Head::TokensMean) {
    // (h[0] + h[1]) / 2, then ASTMLPHead: LayerNorm and a dense layer.
    int64_t d = spec.hiddenSize;
    Value tokens = tensor::ExtractSliceOp::create(
        b, at, matrix(2, d), x, ValueRange(), ValueRange(), ValueRange(),
        b.getDenseI64ArrayAttr({0, 0}), b.getDenseI64ArrayAttr({2, d}),
        b.getDenseI64ArrayAttr({1, 1}));
    Value mean =
        PoolOp::create(b, at, RankedTensorType::get({d}, b.getF32Type()),
                       PoolingKindAttr::get(ctx, PoolingKind::mean), tokens,
                       /*lengths=*/Value(), UnitAttr());
    Value pooled = tensor::ExpandShapeOp::create(
        b, at, matrix(1, d), mean, SmallVector<ReassociationIndices>{{0, 1}});
    pooled = declarations.biasedLayerNorm(
        b, pooled, "classifier.layernorm.weight", d, spec.normEpsilon);
    x = tensor::CollapseShapeOp::create(
        b, at, result, linear(pooled, "classifier.dense.weight", {spec.labels}),
        SmallVector<ReassociationIndices>{{0, 1}});
  }
  func::ReturnOp::create(b, at, x);
  return module;
}

} // namespace

llvm::Expected<OwningOpRef<ModuleOp>> mlir::tfm::buildVisionTransformer(
    MLIRContext &context, const VisionSpec &spec, const WeightStore &weights,
    llvm::StringRef checkpoint,
    llvm::function_ref<bool(llvm::StringRef)> isIgnoredWeight) {
  context.loadDialect<TfmDialect, func::FuncDialect, arith::ArithDialect,
                      tensor::TensorDialect>();
  VisionIRBuilder builder(context, spec, weights, checkpoint);
  return builder.declarations.finish(builder.build(), isIgnoredWeight);
}
