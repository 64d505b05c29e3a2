//===- SwinBuilder.cpp - the Swin Transformer as tfm IR -------------------===//
//
// transformers' SwinModel and SwinForImageClassification:
//   x = LN(patches(pixels)·Wpᵀ + bp)                 (4x4 patches)
//   per stage (resolution R, width C), per block b:
//     windows: the R x R tokens cyclically shifted by s = window / 2 in
//       odd blocks, cut into window x window squares (tfm.gather_rows)
//     x = x + unwindow(Wo·window_attention(LN1(x)))  (bias: the relative
//       position table, plus the shifted windows' mask)
//     x = x + W2·gelu(W1·LN2(x))
//   between stages, patch merging: each 2x2 neighbourhood's four tokens
//     concatenated, LN, W (4C -> 2C)
//   x = LN(x); @classify: the classifier on the tokens' mean.
// The token permutations and the per-window biases are computed here,
// at compile time; attention runs a window at a time.
//
//===----------------------------------------------------------------------===//

#include "frontend/builders/SwinBuilder.h"
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

/// Row r of the windowed order reads token windowedSource[r]: the tokens
/// of an R x R grid rolled by -shift on both axes (torch.roll), cut into
/// w x w windows, row-major windows of row-major tokens.
std::vector<int64_t> windowedSource(int64_t R, int64_t w, int64_t shift) {
  std::vector<int64_t> rows;
  for (int64_t wy = 0; wy < R / w; ++wy)
    for (int64_t wx = 0; wx < R / w; ++wx)
      for (int64_t i = 0; i < w; ++i)
        for (int64_t j = 0; j < w; ++j)
          rows.push_back(((wy * w + i + shift) % R) * R +
                         (wx * w + j + shift) % R);
  return rows;
}

/// The per-window attention bias [b, heads, w·w, w·w]: the relative
/// position table's terms (table[index(i, j), h]), plus, with a shift, -100
/// between tokens from different regions of the rolled grid (SwinLayer's
/// attention mask); b = 1 without a shift.
std::vector<float> windowBias(const std::vector<float> &table, int64_t heads,
                              int64_t R, int64_t w, int64_t shift,
                              int64_t &biases) {
  int64_t L = w * w, span = 2 * w - 1;
  biases = shift ? (R / w) * (R / w) : 1;
  // Region of each rolled position: 3 x 3 slices of the image.
  auto region = [&](int64_t y) {
    return y < R - w ? 0 : y < R - shift ? 1 : 2;
  };
  std::vector<float> bias(size_t(biases * heads * L * L));
  for (int64_t b = 0; b < biases; ++b) {
    int64_t wy = b / (R / w), wx = b % (R / w);
    for (int64_t h = 0; h < heads; ++h)
      for (int64_t i = 0; i < L; ++i)
        for (int64_t j = 0; j < L; ++j) {
          int64_t iy = i / w, ix = i % w, jy = j / w, jx = j % w;
          int64_t index = (iy - jy + w - 1) * span + (ix - jx + w - 1);
          float value = table[size_t(index * heads + h)];
          if (shift) {
            int64_t ri = region(wy * w + iy) * 3 + region(wx * w + ix);
            int64_t rj = region(wy * w + jy) * 3 + region(wx * w + jx);
            if (ri != rj)
              value += -100.0f;
          }
          bias[size_t(((b * heads + h) * L + i) * L + j)] = value;
        }
  }
  return bias;
}

class SwinIRBuilder : public ModelIRBuilder {
public:
  SwinIRBuilder(MLIRContext &context, const SwinSpec &spec,
                WeightStore &weights, llvm::StringRef checkpoint)
      : ModelIRBuilder(context, weights, checkpoint, "swin"), spec(spec),
        store(weights), checkpoint(checkpoint.str()) {}

  OwningOpRef<ModuleOp> build();

private:
  Value norm(Value x, const std::string &n, int64_t d) {
    return declarations.biasedLayerNorm(b, x, n, d, spec.normEpsilon);
  }
  Value gather(Value x, ArrayRef<int64_t> rows, Location loc) {
    auto type = cast<RankedTensorType>(x.getType());
    return GatherRowsOp::create(
        b, loc, matrix(int64_t(rows.size()), type.getDimSize(1)), x,
        b.getDenseI64ArrayAttr(rows));
  }
  Value block(Value x, size_t stage, int64_t index);
  Value merge(Value x, size_t stage);

  const SwinSpec &spec;
  WeightStore &store;
  std::string checkpoint;
};

Value SwinIRBuilder::block(Value x, size_t stage, int64_t index) {
  auto n = [&](llvm::StringRef what) { return spec.name(stage, index, what); };
  int64_t R = spec.resolution(stage), C = spec.width(stage),
          heads = spec.heads[stage], w = spec.windowAt(stage),
          shift = spec.shiftAt(stage, index), headDim = C / heads;
  Location loc = named("stage " + llvm::Twine(stage) + " block " +
                       llvm::Twine(index) + " attention");
  std::vector<int64_t> source = windowedSource(R, w, shift);
  std::vector<int64_t> inverse(source.size());
  for (size_t r = 0; r < source.size(); ++r)
    inverse[size_t(source[r])] = int64_t(r);
  Value h = gather(norm(x, n("layernorm_before.weight"), C), source, loc);
  Value q = linear(h, n("attention.self.query.weight"), {heads, headDim});
  Value k = linear(h, n("attention.self.key.weight"), {heads, headDim});
  Value v = linear(h, n("attention.self.value.weight"), {heads, headDim});
  // The bias: computed from the checkpoint's table into a weight of its own.
  std::string tableName = n("attention.self.relative_position_bias_table");
  int64_t span = 2 * w - 1, biases = 1;
  Value bias;
  if (std::optional<std::string> error =
          store.mismatch(checkpoint, tableName, {span * span, heads},
                         "the swin config implies")) {
    declarations.fail(*error);
    bias = arith::ConstantOp::create(
        b, loc,
        DenseElementsAttr::get(
            RankedTensorType::get({1, heads, w * w, w * w}, b.getF32Type()),
            0.0f));
  } else {
    const WeightTensor *table = store.lookup(tableName);
    std::vector<float> values =
        windowBias(table->toF32(), heads, R, w, shift, biases);
    std::string biasName = n("attention.self.window_bias");
    store.add(biasName,
              WeightTensor::fromValues({biases, heads, w * w, w * w},
                                       std::move(values), table->source()));
    bias = weight(biasName, {biases, heads, w * w, w * w});
  }
  Value attended = WindowAttentionOp::create(
      b, loc, q.getType(), q, k, v, bias, b.getI64IntegerAttr(w * w),
      b.getF32FloatAttr(float(1.0 / std::sqrt(double(headDim)))));
  Value projected = linear(attended, n("attention.output.dense.weight"), {C});
  x = AddOp::create(b, loc, x, gather(projected, inverse, loc));
  h = norm(x, n("layernorm_after.weight"), C);
  h = linear(h, n("intermediate.dense.weight"),
             {int64_t(spec.mlpRatio * double(C))}, // int(), as SwinIntermediate
             spec.activation);
  return AddOp::create(b, loc, x, linear(h, n("output.dense.weight"), {C}));
}

Value SwinIRBuilder::merge(Value x, size_t stage) {
  Location loc = named("stage " + llvm::Twine(stage) + " patch merging");
  int64_t R = spec.resolution(stage), C = spec.width(stage), half = R / 2;
  // Each 2x2 neighbourhood's tokens in SwinPatchMerging's order: (0, 0),
  // (1, 0), (0, 1), (1, 1), then [tokens, 4, C] read as [tokens, 4C].
  std::vector<int64_t> rows;
  for (int64_t y = 0; y < half; ++y)
    for (int64_t xx = 0; xx < half; ++xx)
      for (auto [dy, dx] :
           {std::pair<int64_t, int64_t>{0, 0}, {1, 0}, {0, 1}, {1, 1}})
        rows.push_back((2 * y + dy) * R + 2 * xx + dx);
  Value parts = gather(x, rows, loc);
  Value merged = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get({half * half, 4, C}, b.getF32Type()), parts,
      SmallVector<ReassociationIndices>{{0, 1}, {2}});
  merged = tensor::CollapseShapeOp::create(
      b, loc, matrix(half * half, 4 * C), merged,
      SmallVector<ReassociationIndices>{{0}, {1, 2}});
  std::string prefix =
      spec.prefix + "encoder.layers." + std::to_string(stage) + ".downsample.";
  merged = norm(merged, prefix + "norm.weight", 4 * C);
  return declarations.unbiasedLinear(b, merged, prefix + "reduction.weight",
                                     {2 * C});
}

OwningOpRef<ModuleOp> SwinIRBuilder::build() {
  OwningOpRef<ModuleOp> module = ModuleOp::create(named("swin"));
  b.setInsertionPointToEnd(module->getBody());
  MLIRContext *ctx = b.getContext();
  int64_t p = spec.patchSize, c = spec.channels, d = spec.embedDim,
          n = spec.resolution(0) * spec.resolution(0);
  size_t stages = spec.depths.size();
  int64_t last = spec.width(stages - 1),
          lastTokens =
              spec.resolution(stages - 1) * spec.resolution(stages - 1);
  auto pixelsType = RankedTensorType::get({c, spec.imageSize, spec.imageSize},
                                          b.getF32Type());
  bool classifies = spec.labels > 0;
  Type result = classifies
                    ? Type(RankedTensorType::get({spec.labels}, b.getF32Type()))
                    : Type(matrix(lastTokens, last));
  llvm::StringRef entryName = classifies ? "classify" : "encode";
  Value pixels = beginEntryPoint(
      entryName, pixelsType, InputRole::features, result,
      classifies ? OutputRole::logits : OutputRole::hidden_states);
  Location loc = named("embeddings");
  Value patches =
      PatchesOp::create(b, loc, matrix(n, c * p * p), pixels,
                        b.getI64IntegerAttr(p), DenseI64ArrayAttr());
  std::string projection =
      spec.prefix + "embeddings.patch_embeddings.projection.weight";
  Value x = LinearOp::create(
      b, loc, matrix(n, d), patches,
      declarations.readAs(b, projection, {d, c, p, p}, {d, c * p * p}),
      weight(biasName(projection), {d}), ActivationKindAttr(), UnitAttr());
  x = norm(x, spec.prefix + "embeddings.norm.weight", d);
  for (size_t stage = 0; stage < stages; ++stage) {
    for (int64_t i = 0; i < spec.depths[stage]; ++i)
      x = block(x, stage, i);
    if (stage + 1 < stages)
      x = merge(x, stage);
  }
  x = norm(x, spec.prefix + "layernorm.weight", last);
  Location at = named("classifier");
  if (classifies) {
    // The pooler (the tokens' mean), then the classifier.
    Value pooled =
        PoolOp::create(b, at, RankedTensorType::get({last}, b.getF32Type()),
                       PoolingKindAttr::get(ctx, PoolingKind::mean), x,
                       /*lengths=*/Value(), UnitAttr());
    Value row = tensor::ExpandShapeOp::create(
        b, at, matrix(1, last), pooled,
        SmallVector<ReassociationIndices>{{0, 1}});
    x = tensor::CollapseShapeOp::create(
        b, at, result, linear(row, "classifier.weight", {spec.labels}),
        SmallVector<ReassociationIndices>{{0, 1}});
  }
  func::ReturnOp::create(b, at, x);
  return module;
}

} // namespace

llvm::Expected<OwningOpRef<ModuleOp>> mlir::tfm::buildSwin(
    MLIRContext &context, const SwinSpec &spec, WeightStore &weights,
    llvm::StringRef checkpoint,
    llvm::function_ref<bool(llvm::StringRef)> isIgnoredWeight) {
  context.loadDialect<TfmDialect, func::FuncDialect, arith::ArithDialect,
                      tensor::TensorDialect>();
  SwinIRBuilder builder(context, spec, weights, checkpoint);
  return builder.declarations.finish(builder.build(), isIgnoredWeight);
}
