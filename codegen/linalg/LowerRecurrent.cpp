//===- LowerRecurrent.cpp - tfm's recurrent layers to linalg ------------===//
//
// tfm.causal_conv1d and tfm.gated_delta_rule (Gated DeltaNet's layers):
// ops whose output at a position depends on a state carried from the
// positions before it. The convolution is one generic over the carried
// inputs followed by the new ones. The delta rule runs position by
// position (an scf.for carrying the state, three generics a position over
// [heads, dk, dv]): the state of a head, dk·dv floats, is read three times
// a position, so its cost is small beside the layer's projections for a
// decode step and linear in the prompt for a prefill. The chunked form
// (matrix products over chunks of positions) is a lowering choice left to
// a later target kernel.
//
//===----------------------------------------------------------------------===//

#include "codegen/linalg/LinalgBuilders.h"
#include "codegen/linalg/Passes.h"
#include "ir/TfmOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

using utils::IteratorType;

Value index(OpBuilder &b, Location loc, int64_t value) {
  return arith::ConstantIndexOp::create(b, loc, value);
}

/// result[t, c] = Σ_j w[c, j] · x[t + j, c] over x = [state; input]; the
/// final state is x's last K − 1 rows.
struct LowerCausalConv1d : OpConversionPattern<CausalConv1dOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(CausalConv1dOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Value input = adaptor.getInput();
    RankedTensorType stateType = op.getFinalState().getType();
    Value past = recurrentStartingState(rewriter, loc, adaptor.getState(),
                               adaptor.getReset(), stateType);
    Value extended =
        tensor::ConcatOp::create(rewriter, loc, 0, ValueRange{past, input});
    SmallVector<OpFoldResult> sizes =
        tensor::getMixedSizes(rewriter, loc, input);
    Value init = createFilled(rewriter, loc, op.getResult().getType(), sizes,
                              0.0);
    AffineExpr t = getAffineDimExpr(0, ctx), c = getAffineDimExpr(1, ctx),
               j = getAffineDimExpr(2, ctx);
    Value result = createGeneric(
        rewriter, loc, ValueRange{extended, adaptor.getWeight()}, init,
        {AffineMap::get(3, 0, {t + j, c}, ctx),
         AffineMap::get(3, 0, {c, j}, ctx), AffineMap::get(3, 0, {t, c}, ctx)},
        {IteratorType::parallel, IteratorType::parallel,
         IteratorType::reduction},
        [](OpBuilder &b, Location l, ValueRange args) -> Value {
          return accumulate(b, l, args[2],
                            arith::MulFOp::create(b, l, args[0], args[1]));
        });
    // The new positions' count is where x's last K − 1 rows start.
    SmallVector<OpFoldResult> offsets = {sizes[0], rewriter.getIndexAttr(0)};
    SmallVector<OpFoldResult> stateSizes = {
        rewriter.getIndexAttr(stateType.getDimSize(0)),
        rewriter.getIndexAttr(stateType.getDimSize(1))};
    SmallVector<OpFoldResult> strides(2, rewriter.getIndexAttr(1));
    Value finalState = tensor::ExtractSliceOp::create(
        rewriter, loc, stateType, extended, offsets, stateSizes, strides);
    rewriter.replaceOp(op, {result, finalState});
    return success();
  }
};

/// softplus(x) = log(1 + exp(x)), as max(x, 0) + log1p(exp(−|x|)) so that
/// no exp overflows.
Value softplus(OpBuilder &b, Location loc, Value x) {
  Value zero = f32Constant(b, loc, 0.0);
  Value positive = arith::MaximumFOp::create(b, loc, x, zero);
  Value magnitude = math::AbsFOp::create(b, loc, x);
  Value tail = math::Log1pOp::create(
      b, loc,
      math::ExpOp::create(b, loc, arith::NegFOp::create(b, loc, magnitude)));
  return arith::AddFOp::create(b, loc, positive, tail);
}

struct LowerGatedDeltaRule : OpConversionPattern<GatedDeltaRuleOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GatedDeltaRuleOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    RankedTensorType stateType = op.getFinalState().getType();
    RankedTensorType resultType = op.getResult().getType();
    int64_t keyHeads = op.getQuery().getType().getDimSize(1);
    int64_t valueHeads = stateType.getDimSize(0);
    int64_t keyDim = stateType.getDimSize(1), valueDim = stateType.getDimSize(2);
    Type f32 = resultType.getElementType();
    Value value = adaptor.getValue();
    SmallVector<OpFoldResult> resultSizes =
        tensor::getMixedSizes(rewriter, loc, value);
    Value positions = tensor::DimOp::create(rewriter, loc, value, 0);

    // Each position's decay factor exp(decay[h] · softplus(alpha[t, h])).
    AffineExpr d0 = getAffineDimExpr(0, ctx), d1 = getAffineDimExpr(1, ctx),
               d2 = getAffineDimExpr(2, ctx);
    Value factors = createGeneric(
        rewriter, loc, ValueRange{adaptor.getAlpha(), adaptor.getDecay()},
        createEmpty(rewriter, loc, op.getAlpha().getType(),
                    tensor::getMixedSizes(rewriter, loc, adaptor.getAlpha())),
        {AffineMap::get(2, 0, {d0, d1}, ctx), AffineMap::get(2, 0, {d1}, ctx),
         AffineMap::get(2, 0, {d0, d1}, ctx)},
        {IteratorType::parallel, IteratorType::parallel},
        [](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value g =
              arith::MulFOp::create(b, l, args[1], softplus(b, l, args[0]));
          return math::ExpOp::create(b, l, g);
        });

    Value initialState = recurrentStartingState(rewriter, loc, adaptor.getState(),
                                       adaptor.getReset(), stateType);
    Value initialResult = createEmpty(rewriter, loc, resultType, resultSizes);
    float scale = op.getScale().convertToFloat();
    // Value head h reads key head h / (Hv / Hk), or h mod Hk when tiled.
    auto keyHead = [&](AffineExpr h) {
      return op.getTiled() ? h % keyHeads : h.floorDiv(valueHeads / keyHeads);
    };
    auto loop = scf::ForOp::create(
        rewriter, loc, index(rewriter, loc, 0), positions,
        index(rewriter, loc, 1), ValueRange{initialState, initialResult},
        [&](OpBuilder &b, Location l, Value t, ValueRange carried) {
          Value state = carried[0], result = carried[1];
          // Position t's rows, its leading dimension dropped.
          auto row = [&](Value x, RankedTensorType rowType) {
            auto type = cast<RankedTensorType>(x.getType());
            SmallVector<OpFoldResult> offsets(type.getRank(),
                                              b.getIndexAttr(0));
            offsets[0] = t;
            SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1)};
            for (int64_t d : type.getShape().drop_front())
              sizes.push_back(b.getIndexAttr(d));
            SmallVector<OpFoldResult> strides(type.getRank(),
                                              b.getIndexAttr(1));
            return Value(tensor::ExtractSliceOp::create(
                b, l, rowType, x, offsets, sizes, strides));
          };
          auto headsType = RankedTensorType::get({valueHeads}, f32);
          auto keysType = RankedTensorType::get({keyHeads, keyDim}, f32);
          auto valuesType = RankedTensorType::get({valueHeads, valueDim}, f32);
          Value q = row(adaptor.getQuery(), keysType);
          Value k = row(adaptor.getKey(), keysType);
          Value v = row(value, valuesType);
          Value factor = row(factors, headsType);
          Value beta = row(adaptor.getBeta(), headsType);
          AffineExpr h = d0, i = d1, j = d2;
          // Maps of the [h, i (dk), j (dv)] space.
          AffineMap stateMap = AffineMap::get(3, 0, {h, i, j}, ctx);
          AffineMap headMap = AffineMap::get(3, 0, {h}, ctx);
          AffineMap keyMap = AffineMap::get(3, 0, {keyHead(h), i}, ctx);
          AffineMap valueMap = AffineMap::get(3, 0, {h, j}, ctx);
          SmallVector<IteratorType> readIterators = {
              IteratorType::parallel, IteratorType::reduction,
              IteratorType::parallel};
          // What the decayed state recalls for k: Σ_i exp(g)·S[h,i,j]·k[i].
          Value recalled = createGeneric(
              b, l, ValueRange{state, factor, k},
              staticZeros(b, l, valuesType),
              {stateMap, headMap, keyMap, valueMap}, readIterators,
              [](OpBuilder &nb, Location nl, ValueRange args) -> Value {
                Value decayed = arith::MulFOp::create(nb, nl, args[0], args[1]);
                return accumulate(
                    nb, nl, args[3],
                    arith::MulFOp::create(nb, nl, decayed, args[2]));
              });
          // S ← exp(g)·S + k ⊗ beta·(v − recalled), written over S.
          Value updated = createGeneric(
              b, l, ValueRange{factor, k, beta, v, recalled}, state,
              {headMap, keyMap, headMap, valueMap, valueMap, stateMap},
              {IteratorType::parallel, IteratorType::parallel,
               IteratorType::parallel},
              [](OpBuilder &nb, Location nl, ValueRange args) -> Value {
                Value error = arith::SubFOp::create(nb, nl, args[3], args[4]);
                Value delta = arith::MulFOp::create(nb, nl, args[2], error);
                Value decayed = arith::MulFOp::create(nb, nl, args[5], args[0]);
                return math::FmaOp::create(nb, nl, args[1], delta, decayed);
              });
          // o[h, j] = scale · Σ_i S[h, i, j]·q[i].
          Value read = createGeneric(
              b, l, ValueRange{updated, q},
              staticZeros(b, l, valuesType),
              {stateMap, keyMap, valueMap}, readIterators,
              [](OpBuilder &nb, Location nl, ValueRange args) -> Value {
                return accumulate(
                    nb, nl, args[2],
                    arith::MulFOp::create(nb, nl, args[0], args[1]));
              });
          Value scaled = createElementwise(
              b, l, read, ValueRange{read},
              [&](OpBuilder &nb, Location nl, ValueRange args) -> Value {
                return arith::MulFOp::create(nb, nl, args[0],
                                             f32Constant(nb, nl, scale));
              });
          SmallVector<OpFoldResult> offsets = {t, b.getIndexAttr(0),
                                               b.getIndexAttr(0)};
          SmallVector<OpFoldResult> sizes = {b.getIndexAttr(1),
                                             b.getIndexAttr(valueHeads),
                                             b.getIndexAttr(valueDim)};
          SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
          Value written = tensor::InsertSliceOp::create(b, l, scaled, result,
                                                        offsets, sizes,
                                                        strides);
          scf::YieldOp::create(b, l, ValueRange{updated, written});
        });
    rewriter.replaceOp(op, {loop.getResult(1), loop.getResult(0)});
    return success();
  }
};

} // namespace

void mlir::tfm::populateLowerRecurrentPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerCausalConv1d, LowerGatedDeltaRule>(patterns.getContext());
}
