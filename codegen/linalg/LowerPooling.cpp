//===- LowerPooling.cpp - tfm.pool to linalg ------------------------------===//
//
// A sequence's hidden states [tokens, d] to one [d] vector: the first row
// (cls), or a reduction over the rows (mean: sum, then a division by the
// row count; max), then optionally the L2 normalization sentence embedders
// end with: x / max(|x|, 1e-12). tfm.token_row: the row at a token (CLIP's
// end-of-text pooling), found by a reduction over the token ids.
//
//===----------------------------------------------------------------------===//

#include "codegen/linalg/LinalgBuilders.h"
#include "codegen/linalg/Passes.h"
#include "ir/TfmOps.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Transforms/DialectConversion.h"

#include <limits>

using namespace mlir;
using namespace mlir::tfm;

namespace {

using utils::IteratorType;

/// x / max(|x|_2, 1e-12) over the [d] vector `x`.
Value normalize(OpBuilder &b, Location loc, Value x) {
  MLIRContext *ctx = b.getContext();
  auto scalar = RankedTensorType::get({}, b.getF32Type());
  AffineExpr j = getAffineDimExpr(0, ctx);
  Value squares = createGeneric(
      b, loc, x, createFilled(b, loc, scalar, {}, 0.0),
      {AffineMap::get(1, 0, {j}, ctx), AffineMap::get(1, 0, {}, ctx)},
      {IteratorType::reduction},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        return accumulate(nb, l, args[1],
                          arith::MulFOp::create(nb, l, args[0], args[0]));
      });
  auto type = cast<RankedTensorType>(x.getType());
  return createGeneric(
      b, loc, ValueRange{x, squares},
      createEmpty(b, loc, type, {b.getIndexAttr(type.getDimSize(0))}),
      {AffineMap::get(1, 0, {j}, ctx), AffineMap::get(1, 0, {}, ctx),
       AffineMap::get(1, 0, {j}, ctx)},
      {IteratorType::parallel},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value norm = math::SqrtOp::create(nb, l, args[1]);
        Value floor = arith::MaximumFOp::create(nb, l, norm,
                                                f32Constant(nb, l, 1e-12));
        return arith::DivFOp::create(nb, l, args[0], floor);
      });
}

/// Packed sequences ([tokens, d] rows, `lengths` of them): row b of the
/// [sequences, d] result pools sequence b's rows alone.
Value poolEachSequence(OpBuilder &b, PoolOp op, Value x, Value lengths) {
  Location loc = op.getLoc();
  RankedTensorType type = op.getType();
  int64_t d = type.getDimSize(1);
  auto vector = RankedTensorType::get({d}, type.getElementType());
  Value init = createEmpty(
      b, loc, type,
      {tensor::getMixedSize(b, loc, lengths, 0), b.getIndexAttr(d)});
  return forEachSequence(
      b, loc, lengths, init,
      [&](OpBuilder &nb, Location l, Value sequence, Value start, Value length,
          ValueRange carried) -> SmallVector<Value> {
        Value pooled = PoolOp::create(nb, l, vector, op.getKindAttr(),
                                      sliceRows(nb, l, x, start, length),
                                      /*lengths=*/Value(),
                                      op.getNormalizeAttr());
        // The [d] vector as row `sequence`.
        SmallVector<OpFoldResult> offsets = {sequence, nb.getIndexAttr(0)};
        SmallVector<OpFoldResult> sizes = {nb.getIndexAttr(1),
                                           nb.getIndexAttr(d)};
        SmallVector<OpFoldResult> strides(2, nb.getIndexAttr(1));
        return {tensor::InsertSliceOp::create(nb, l, pooled, carried[0],
                                              offsets, sizes, strides)};
      })[0];
}

struct LowerPool : PackedSequencesPattern<PoolOp> {
  using PackedSequencesPattern::PackedSequencesPattern;
  LogicalResult
  matchAndRewrite(PoolOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value x = adaptor.getInput();
    RankedTensorType type = op.getType();
    if (Value lengths = adaptor.getLengths()) {
      rewriter.replaceOp(op, poolEachSequence(rewriter, op, x, lengths));
      return success();
    }
    int64_t d = type.getDimSize(0);
    Value pooled;
    switch (op.getKind()) {
    case PoolingKind::cls: {
      // The first row, rank-reduced to [d].
      SmallVector<OpFoldResult> offsets(2, rewriter.getIndexAttr(0));
      SmallVector<OpFoldResult> sizes = {rewriter.getIndexAttr(1),
                                         rewriter.getIndexAttr(d)};
      SmallVector<OpFoldResult> strides(2, rewriter.getIndexAttr(1));
      pooled = tensor::ExtractSliceOp::create(rewriter, loc, type, x, offsets,
                                              sizes, strides);
      break;
    }
    case PoolingKind::max:
      pooled = createColumnReduction(rewriter, loc, x, /*max=*/true);
      break;
    case PoolingKind::mean: {
      Value sum = createColumnReduction(rewriter, loc, x, /*max=*/false);
      Value rows = tensor::DimOp::create(rewriter, loc, x, 0);
      Value count = arith::SIToFPOp::create(
          rewriter, loc, rewriter.getF32Type(),
          arith::IndexCastOp::create(rewriter, loc, rewriter.getI64Type(),
                                     rows));
      pooled = createElementwise(
          rewriter, loc, sum, sum,
          [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
            return arith::DivFOp::create(nb, l, args[0], count);
          });
      break;
    }
    }
    if (op.getNormalize())
      pooled = normalize(rewriter, loc, pooled);
    rewriter.replaceOp(op, pooled);
    return success();
  }
};

/// tfm.token_row: one pass over the ids keeps the best key and its first
/// position (a strictly greater key replaces it): the key is the id itself
/// (the largest id), or whether it is `token_id` (its first position; none:
/// position 0, every key 0 beating the initial -1). Then that row.
struct LowerTokenRow : OpConversionPattern<TokenRowOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TokenRowOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    Value ids = adaptor.getTokens();
    Type i64 = rewriter.getI64Type();
    auto scalar = RankedTensorType::get({}, i64);
    std::optional<int64_t> tokenId = op.getTokenId();
    auto filled = [&](int64_t value) {
      Value empty =
          tensor::EmptyOp::create(rewriter, loc, scalar.getShape(), i64);
      Value constant = arith::ConstantIntOp::create(rewriter, loc, i64, value);
      return linalg::FillOp::create(rewriter, loc, constant, empty)
          .getResult(0);
    };
    Value bestInit = filled(tokenId ? -1 : std::numeric_limits<int64_t>::min());
    Value positionInit = filled(0);
    AffineExpr i = getAffineDimExpr(0, ctx);
    SmallVector<AffineMap> maps = {AffineMap::get(1, 0, {i}, ctx),
                                   AffineMap::get(1, 0, {}, ctx),
                                   AffineMap::get(1, 0, {}, ctx)};
    auto generic = linalg::GenericOp::create(
        rewriter, loc, TypeRange{scalar, scalar}, ValueRange{ids},
        ValueRange{bestInit, positionInit}, maps, {IteratorType::reduction},
        [&](OpBuilder &nb, Location l, ValueRange args) {
          Value id = args[0];
          if (id.getType() != i64)
            id = arith::ExtSIOp::create(nb, l, i64, id);
          Value key = id;
          if (tokenId) {
            Value wanted = arith::ConstantIntOp::create(nb, l, i64, *tokenId);
            Value match = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq,
                                                id, wanted);
            key = arith::ExtUIOp::create(nb, l, i64, match);
          }
          Value position = arith::IndexCastOp::create(
              nb, l, i64, linalg::IndexOp::create(nb, l, 0));
          Value better = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::sgt,
                                               key, args[1]);
          linalg::YieldOp::create(
              nb, l,
              ValueRange{
                  arith::SelectOp::create(nb, l, better, key, args[1]),
                  arith::SelectOp::create(nb, l, better, position, args[2])});
        });
    Value found = tensor::ExtractOp::create(rewriter, loc, generic.getResult(1),
                                            ValueRange{});
    Value row = arith::IndexCastOp::create(rewriter, loc,
                                           rewriter.getIndexType(), found);
    int64_t d = op.getType().getDimSize(0);
    SmallVector<OpFoldResult> offsets = {row, rewriter.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes = {rewriter.getIndexAttr(1),
                                       rewriter.getIndexAttr(d)};
    SmallVector<OpFoldResult> strides(2, rewriter.getIndexAttr(1));
    rewriter.replaceOpWithNewOp<tensor::ExtractSliceOp>(
        op, op.getType(), adaptor.getInput(), offsets, sizes, strides);
    return success();
  }
};

} // namespace

void mlir::tfm::populateLowerPoolingPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerPool, LowerTokenRow>(patterns.getContext());
}
