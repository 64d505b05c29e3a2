//===- LowerNorms.cpp - LayerNorm and RMSNorm to linalg -------------------===//
//
// tfm.layer_norm, tfm.rms_norm and their fused forms with the residual
// add (tfm.add_layer_norm, tfm.add_rms_norm): row statistics as linalg
// reductions, then one elementwise pass. tfm.channel_norm the same with
// column statistics over every row.
//
//===----------------------------------------------------------------------===//

#include "codegen/linalg/LinalgBuilders.h"
#include "codegen/linalg/Passes.h"
#include "ir/TfmOps.h"

#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

using utils::IteratorType;

/// result[i, j] = body(x[i, j], rowStat[i], gamma[j], beta[j]...) over
/// `[seq, d]`, for the final step of both norms.
Value applyRowwise(OpBuilder &b, Location loc, Value x, ValueRange rowStats,
                   ValueRange columnVectors, GenericBody body) {
  MLIRContext *ctx = b.getContext();
  AffineMap identity = b.getMultiDimIdentityMap(2);
  AffineMap rows = AffineMap::get(2, 0, getAffineDimExpr(0, ctx));
  AffineMap columns = AffineMap::get(2, 0, getAffineDimExpr(1, ctx));
  SmallVector<Value> inputs = {x};
  SmallVector<AffineMap> maps = {identity};
  for (Value v : rowStats) {
    inputs.push_back(v);
    maps.push_back(rows);
  }
  for (Value v : columnVectors) {
    inputs.push_back(v);
    maps.push_back(columns);
  }
  maps.push_back(identity);
  Value init = createEmpty(b, loc, cast<RankedTensorType>(x.getType()),
                           tensor::getMixedSizes(b, loc, x));
  return createGeneric(b, loc, inputs, init, maps,
                       {IteratorType::parallel, IteratorType::parallel}, body);
}

/// 1 / sqrt(sum / d + epsilon), as the references compute it.
Value inverseRms(OpBuilder &b, Location loc, Value sum, int64_t d,
                 double epsilon) {
  Value mean = arith::DivFOp::create(b, loc, sum, f32Constant(b, loc, d));
  Value shifted =
      arith::AddFOp::create(b, loc, mean, f32Constant(b, loc, epsilon));
  Value root = math::SqrtOp::create(b, loc, shifted);
  Value one = f32Constant(b, loc, 1.0);
  return arith::DivFOp::create(b, loc, one, root);
}

/// Σ x² over each row of `x`: RMSNorm's statistic.
Value sumOfSquares(OpBuilder &b, Location loc, Value x) {
  return createRowReduction(
      b, loc, x, 0.0, [](OpBuilder &nb, Location l, ValueRange args) {
        Value sq = arith::MulFOp::create(nb, l, args[0], args[0]);
        return accumulate(nb, l, args[1], sq);
      });
}

/// Σ x over each row of `x`: LayerNorm's first statistic.
Value rowSum(OpBuilder &b, Location loc, Value x) {
  return createRowReduction(
      b, loc, x, 0.0, [](OpBuilder &nb, Location l, ValueRange args) {
        return accumulate(nb, l, args[1], args[0]);
      });
}

/// RMSNorm of `x` given its rows' Σ x².
Value rmsNormRows(OpBuilder &b, Location loc, Value x, Value sumSquares,
                  Value gamma, double epsilon) {
  int64_t d = cast<RankedTensorType>(x.getType()).getDimSize(1);
  return applyRowwise(
      b, loc, x, sumSquares, gamma,
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value scale = inverseRms(nb, l, args[1], d, epsilon);
        Value normed = arith::MulFOp::create(nb, l, scale, args[0]);
        return arith::MulFOp::create(nb, l, args[2], normed);
      });
}

/// LayerNorm of `x` given its rows' Σ x: two passes (mean, then centred
/// squares) for accuracy.
Value layerNormRows(OpBuilder &b, Location loc, Value x, Value sum,
                    Value gamma, Value beta, double epsilon) {
  int64_t d = cast<RankedTensorType>(x.getType()).getDimSize(1);
  Value centred = applyRowwise(
      b, loc, x, sum, {},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value mean =
            arith::DivFOp::create(nb, l, args[1], f32Constant(nb, l, d));
        return arith::SubFOp::create(nb, l, args[0], mean);
      });
  Value sumSquares = sumOfSquares(b, loc, centred);
  SmallVector<Value> columns = {gamma};
  if (beta)
    columns.push_back(beta);
  return applyRowwise(
      b, loc, centred, sumSquares, columns,
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value scale = inverseRms(nb, l, args[1], d, epsilon);
        Value normed = arith::MulFOp::create(nb, l, args[0], scale);
        Value scaled = arith::MulFOp::create(nb, l, normed, args[2]);
        if (!beta)
          return scaled;
        return arith::AddFOp::create(nb, l, scaled, args[3]);
      });
}

/// lhs + rhs and a statistic of each row of the sum, in one pass over the
/// rows: `square` picks Σ sum² (RMSNorm) over Σ sum (LayerNorm).
std::pair<Value, Value> addWithRowStatistic(OpBuilder &b, Location loc,
                                            Value lhs, Value rhs,
                                            bool square) {
  MLIRContext *ctx = b.getContext();
  auto type = cast<RankedTensorType>(lhs.getType());
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, lhs);
  auto rowsType = RankedTensorType::get({type.getDimSize(0)},
                                        type.getElementType());
  Value sumInit = createEmpty(b, loc, type, sizes);
  Value statInit = createFilled(b, loc, rowsType, {sizes[0]}, 0.0);
  AffineMap identity = b.getMultiDimIdentityMap(2);
  AffineMap rows = AffineMap::get(2, 0, getAffineDimExpr(0, ctx));
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{type, rowsType}, ValueRange{lhs, rhs},
      ValueRange{sumInit, statInit},
      ArrayRef<AffineMap>{identity, identity, identity, rows},
      ArrayRef<utils::IteratorType>{utils::IteratorType::parallel,
                                    utils::IteratorType::reduction},
      [&](OpBuilder &nb, Location l, ValueRange args) {
        Value sum = arith::AddFOp::create(nb, l, args[0], args[1]);
        Value term = square ? arith::MulFOp::create(nb, l, sum, sum) : sum;
        Value stat = accumulate(nb, l, args[3], term);
        linalg::YieldOp::create(nb, l, ValueRange{sum, stat});
      });
  return {generic.getResult(0), generic.getResult(1)};
}

struct LowerRmsNorm : OpConversionPattern<RmsNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RmsNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    // [seq, heads, d]: the rows of [seq * heads, d].
    auto type = cast<RankedTensorType>(x.getType());
    SmallVector<ReassociationIndices> heads = {{0, 1}, {2}};
    if (type.getRank() == 3)
      x = tensor::CollapseShapeOp::create(rewriter, loc, x, heads);
    Value normed =
        rmsNormRows(rewriter, loc, x, sumOfSquares(rewriter, loc, x),
                    adaptor.getGamma(), op.getEpsilon().convertToDouble());
    if (type.getRank() == 3)
      normed = tensor::ExpandShapeOp::create(
          rewriter, loc, type, normed, heads,
          tensor::getMixedSizes(rewriter, loc, adaptor.getInput()));
    rewriter.replaceOp(op, normed);
    return success();
  }
};

struct LowerLayerNorm : OpConversionPattern<LayerNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    rewriter.replaceOp(op, layerNormRows(rewriter, loc, x,
                                         rowSum(rewriter, loc, x),
                                         adaptor.getGamma(), adaptor.getBeta(),
                                         op.getEpsilon().convertToDouble()));
    return success();
  }
};

struct LowerAddRmsNorm : OpConversionPattern<AddRmsNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AddRmsNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto [sum, sumSquares] = addWithRowStatistic(
        rewriter, loc, adaptor.getLhs(), adaptor.getRhs(), /*square=*/true);
    Value result = rmsNormRows(rewriter, loc, sum, sumSquares,
                               adaptor.getGamma(),
                               op.getEpsilon().convertToDouble());
    rewriter.replaceOp(op, {sum, result});
    return success();
  }
};

struct LowerAddLayerNorm : OpConversionPattern<AddLayerNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AddLayerNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto [sum, rowTotal] = addWithRowStatistic(
        rewriter, loc, adaptor.getLhs(), adaptor.getRhs(), /*square=*/false);
    Value result = layerNormRows(rewriter, loc, sum, rowTotal,
                                 adaptor.getGamma(), adaptor.getBeta(),
                                 op.getEpsilon().convertToDouble());
    rewriter.replaceOp(op, {sum, result});
    return success();
  }
};

/// Each column over the rows: its mean, then the centred squares' mean
/// (two passes, as GroupNorm and NumPy's var compute it), then one
/// elementwise pass with the optional scale and shift.
struct LowerChannelNorm : OpConversionPattern<ChannelNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ChannelNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value x = adaptor.getInput(), gamma = adaptor.getGamma(),
          beta = adaptor.getBeta();
    double epsilon = op.getEpsilon().convertToDouble();
    Value rows = arith::SIToFPOp::create(
        rewriter, loc, rewriter.getF32Type(),
        arith::IndexCastOp::create(rewriter, loc, rewriter.getI64Type(),
                                   tensor::DimOp::create(rewriter, loc, x, 0)));
    AffineMap identity = rewriter.getMultiDimIdentityMap(2);
    AffineMap columns = AffineMap::get(2, 0, getAffineDimExpr(1, ctx));
    auto byColumn = [&](Value input, ValueRange vectors, GenericBody body) {
      SmallVector<Value> inputs = {input};
      inputs.append(vectors.begin(), vectors.end());
      SmallVector<AffineMap> maps(1, identity);
      maps.append(vectors.size(), columns);
      maps.push_back(identity);
      Value init = createEmpty(rewriter, loc,
                               cast<RankedTensorType>(input.getType()),
                               tensor::getMixedSizes(rewriter, loc, input));
      return createGeneric(rewriter, loc, inputs, init, maps,
                           {utils::IteratorType::parallel,
                            utils::IteratorType::parallel},
                           body);
    };
    Value sum = createColumnReduction(rewriter, loc, x, /*max=*/false);
    Value centred = byColumn(
        x, sum, [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          Value mean = arith::DivFOp::create(nb, l, args[1], rows);
          return arith::SubFOp::create(nb, l, args[0], mean);
        });
    Value squares = createElementwise(
        rewriter, loc, centred, centred,
        [](OpBuilder &nb, Location l, ValueRange args) -> Value {
          return arith::MulFOp::create(nb, l, args[0], args[0]);
        });
    Value sumSquares =
        createColumnReduction(rewriter, loc, squares, /*max=*/false);
    SmallVector<Value> vectors = {sumSquares};
    if (gamma)
      vectors.push_back(gamma);
    if (beta)
      vectors.push_back(beta);
    rewriter.replaceOp(
        op, byColumn(centred, vectors,
                     [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
                       Value variance =
                           arith::DivFOp::create(nb, l, args[1], rows);
                       Value root = math::SqrtOp::create(
                           nb, l,
                           arith::AddFOp::create(nb, l, variance,
                                                 f32Constant(nb, l, epsilon)));
                       Value normed =
                           arith::DivFOp::create(nb, l, args[0], root);
                       if (gamma)
                         normed = arith::MulFOp::create(nb, l, normed, args[2]);
                       if (beta)
                         normed = arith::AddFOp::create(nb, l, normed, args[3]);
                       return normed;
                     }));
    return success();
  }
};

} // namespace

void mlir::tfm::populateLowerNormPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerRmsNorm, LowerLayerNorm, LowerAddRmsNorm,
               LowerAddLayerNorm, LowerChannelNorm>(patterns.getContext());
}
