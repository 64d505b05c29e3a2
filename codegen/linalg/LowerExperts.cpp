//===- LowerExperts.cpp - a mixture of experts' routing to loops ----------===//
//
// What tfm-expand-experts makes of tfm.moe, short of the experts'
// projections (tfm.linear, lowered as any other): tfm.route (each token's
// softmax over the experts and its top k, picked one after another in
// decreasing order, the lower index first among equals), tfm.expert_rows
// (the tokens routed to one expert, compacted in token order),
// tfm.take_rows and tfm.scatter_add_rows. A step has at most a few
// thousand tokens and top_k picks among tens of experts: scalar loops over
// tensors, which bufferization turns into loads and stores.
//
//===----------------------------------------------------------------------===//

#include "codegen/linalg/LinalgBuilders.h"
#include "codegen/linalg/Passes.h"
#include "ir/TfmOps.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

Value index(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// A loop over [0, n) carrying `init`; `body` returns the next values.
SmallVector<Value>
loop(OpBuilder &b, Location loc, Value n, ValueRange init,
     llvm::function_ref<SmallVector<Value>(OpBuilder &, Location, Value,
                                           ValueRange)>
         body) {
  auto op = scf::ForOp::create(
      b, loc, index(b, loc, 0), n, index(b, loc, 1), init,
      [&](OpBuilder &nb, Location l, Value i, ValueRange carried) {
        scf::YieldOp::create(nb, l, body(nb, l, i, carried));
      });
  return SmallVector<Value>(op.getResults());
}

struct LowerRoute : OpConversionPattern<RouteOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RouteOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Value logits = adaptor.getRouterLogits();
    int64_t experts = op.getRouterLogits().getType().getDimSize(1);
    int64_t k = op.getTopK();
    Value rows = tensor::DimOp::create(b, loc, logits, 0);
    auto empty = [&](Type element) {
      return tensor::EmptyOp::create(b, loc,
                                     ArrayRef<int64_t>{ShapedType::kDynamic, k},
                                     element, ValueRange{rows});
    };
    Value weights = empty(b.getF32Type()), ids = empty(b.getI32Type());
    Value numExperts = index(b, loc, experts), picks = index(b, loc, k);
    bool normalize = op.getNormalize();
    SmallVector<Value> out = loop(
        b, loc, rows, {weights, ids},
        [&](OpBuilder &b, Location loc, Value r,
            ValueRange carried) -> SmallVector<Value> {
          auto logit = [&](OpBuilder &b, Location loc, Value e) {
            return Value(
                tensor::ExtractOp::create(b, loc, logits, ValueRange{r, e}));
          };
          // The softmax's maximum and denominator.
          Value max = loop(b, loc, numExperts, {f32Constant(b, loc, -INFINITY)},
                           [&](OpBuilder &b, Location loc, Value e,
                               ValueRange acc) -> SmallVector<Value> {
                             return {arith::MaximumFOp::create(
                                 b, loc, acc[0], logit(b, loc, e))};
                           })[0];
          auto exponential = [&](OpBuilder &b, Location loc, Value e) {
            return Value(math::ExpOp::create(
                b, loc, arith::SubFOp::create(b, loc, logit(b, loc, e), max)));
          };
          Value sum = loop(b, loc, numExperts, {f32Constant(b, loc, 0.0)},
                           [&](OpBuilder &b, Location loc, Value e,
                               ValueRange acc) -> SmallVector<Value> {
                             return {arith::AddFOp::create(
                                 b, loc, acc[0], exponential(b, loc, e))};
                           })[0];
          // Pick j: the largest probability after pick j - 1's in the
          // order (probability descending, index ascending).
          SmallVector<Value> picked = loop(
              b, loc, picks,
              {carried[0], carried[1], f32Constant(b, loc, INFINITY),
               index(b, loc, -1), f32Constant(b, loc, 0.0)},
              [&](OpBuilder &b, Location loc, Value j,
                  ValueRange state) -> SmallVector<Value> {
                Value previous = state[2], previousExpert = state[3];
                SmallVector<Value> best = loop(
                    b, loc, numExperts,
                    {f32Constant(b, loc, -1.0), index(b, loc, 0)},
                    [&](OpBuilder &b, Location loc, Value e,
                        ValueRange acc) -> SmallVector<Value> {
                      Value p = arith::DivFOp::create(
                          b, loc, exponential(b, loc, e), sum);
                      Value below = arith::CmpFOp::create(
                          b, loc, arith::CmpFPredicate::OLT, p, previous);
                      Value tiedAfter = arith::AndIOp::create(
                          b, loc,
                          arith::CmpFOp::create(
                              b, loc, arith::CmpFPredicate::OEQ, p, previous),
                          arith::CmpIOp::create(b, loc,
                                                arith::CmpIPredicate::sgt, e,
                                                previousExpert));
                      Value better = arith::AndIOp::create(
                          b, loc,
                          arith::OrIOp::create(b, loc, below, tiedAfter),
                          arith::CmpFOp::create(
                              b, loc, arith::CmpFPredicate::OGT, p, acc[0]));
                      return {
                          arith::SelectOp::create(b, loc, better, p, acc[0]),
                          arith::SelectOp::create(b, loc, better, e, acc[1])};
                    });
                Value id =
                    arith::IndexCastOp::create(b, loc, b.getI32Type(), best[1]);
                return {tensor::InsertOp::create(b, loc, best[0], state[0],
                                                 ValueRange{r, j}),
                        tensor::InsertOp::create(b, loc, id, state[1],
                                                 ValueRange{r, j}),
                        best[0], best[1],
                        arith::AddFOp::create(b, loc, state[4], best[0])};
              });
          Value rowWeights = picked[0];
          if (normalize)
            rowWeights =
                loop(b, loc, picks, {rowWeights},
                     [&](OpBuilder &b, Location loc, Value j,
                         ValueRange acc) -> SmallVector<Value> {
                       Value w = tensor::ExtractOp::create(b, loc, acc[0],
                                                           ValueRange{r, j});
                       return {tensor::InsertOp::create(
                           b, loc, arith::DivFOp::create(b, loc, w, picked[4]),
                           acc[0], ValueRange{r, j})};
                     })[0];
          return SmallVector<Value>{rowWeights, picked[1]};
        });
    rewriter.replaceOp(
        op,
        {tensor::CastOp::create(b, loc, op.getWeights().getType(), out[0]),
         tensor::CastOp::create(b, loc, op.getExperts().getType(), out[1])});
    return success();
  }
};

struct LowerExpertRows : OpConversionPattern<ExpertRowsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ExpertRowsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Value experts = adaptor.getExperts(), weights = adaptor.getWeights();
    Value tokens = tensor::DimOp::create(b, loc, experts, 0);
    Value picks = tensor::DimOp::create(b, loc, experts, 1);
    Type expertType = op.getExperts().getType().getElementType();
    Value expert = arith::ConstantOp::create(
        b, loc, b.getIntegerAttr(expertType, op.getExpert()));
    // A token picks an expert at most once: at most `tokens` rows.
    auto empty = [&](Type element) {
      return tensor::EmptyOp::create(b, loc,
                                     ArrayRef<int64_t>{ShapedType::kDynamic},
                                     element, ValueRange{tokens});
    };
    Type rowType = op.getRows().getType().getElementType();
    SmallVector<Value> found = loop(
        b, loc, tokens,
        {empty(rowType), empty(b.getF32Type()), index(b, loc, 0)},
        [&](OpBuilder &b, Location loc, Value t,
            ValueRange acc) -> SmallVector<Value> {
          return loop(
              b, loc, picks, acc,
              [&](OpBuilder &b, Location loc, Value j,
                  ValueRange acc) -> SmallVector<Value> {
                Value id = tensor::ExtractOp::create(b, loc, experts,
                                                     ValueRange{t, j});
                Value match = arith::CmpIOp::create(
                    b, loc, arith::CmpIPredicate::eq, id, expert);
                auto branch = scf::IfOp::create(
                    b, loc, match,
                    [&](OpBuilder &b, Location loc) {
                      Value row =
                          arith::IndexCastOp::create(b, loc, rowType, t);
                      Value scale = tensor::ExtractOp::create(b, loc, weights,
                                                              ValueRange{t, j});
                      scf::YieldOp::create(
                          b, loc,
                          ValueRange{
                              tensor::InsertOp::create(b, loc, row, acc[0],
                                                       ValueRange{acc[2]}),
                              tensor::InsertOp::create(b, loc, scale, acc[1],
                                                       ValueRange{acc[2]}),
                              arith::AddIOp::create(b, loc, acc[2],
                                                    index(b, loc, 1))});
                    },
                    [&](OpBuilder &b, Location loc) {
                      scf::YieldOp::create(b, loc, acc);
                    });
                return SmallVector<Value>(branch.getResults());
              });
        });
    auto first = [&](Value all) {
      SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0)};
      SmallVector<OpFoldResult> sizes = {found[2]};
      SmallVector<OpFoldResult> strides = {b.getIndexAttr(1)};
      return Value(
          tensor::ExtractSliceOp::create(b, loc, all, offsets, sizes, strides));
    };
    rewriter.replaceOp(op,
                       {tensor::CastOp::create(b, loc, op.getRows().getType(),
                                               first(found[0])),
                        tensor::CastOp::create(b, loc, op.getScales().getType(),
                                               first(found[1]))});
    return success();
  }
};

struct LowerTakeRows : OpConversionPattern<TakeRowsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TakeRowsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, gatherRows(rewriter, op.getLoc(), adaptor.getInput(),
                                      adaptor.getRows(), op.getType()));
    return success();
  }
};

struct LowerScatterAddRows : OpConversionPattern<ScatterAddRowsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ScatterAddRowsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Value values = adaptor.getValues(), scales = adaptor.getScales();
    Value rows = adaptor.getRows();
    Value count = tensor::DimOp::create(b, loc, values, 0);
    Value columns = tensor::DimOp::create(b, loc, values, 1);
    Value result =
        loop(b, loc, count, {adaptor.getInto()},
             [&](OpBuilder &b, Location loc, Value i,
                 ValueRange acc) -> SmallVector<Value> {
               Value row = arith::IndexCastOp::create(
                   b, loc, b.getIndexType(),
                   tensor::ExtractOp::create(b, loc, rows, ValueRange{i}));
               Value scale =
                   tensor::ExtractOp::create(b, loc, scales, ValueRange{i});
               return loop(
                   b, loc, columns, acc,
                   [&](OpBuilder &b, Location loc, Value c,
                       ValueRange acc) -> SmallVector<Value> {
                     Value v = tensor::ExtractOp::create(b, loc, values,
                                                         ValueRange{i, c});
                     Value old = tensor::ExtractOp::create(b, loc, acc[0],
                                                           ValueRange{row, c});
                     Value sum = arith::AddFOp::create(
                         b, loc, old, arith::MulFOp::create(b, loc, v, scale));
                     return {tensor::InsertOp::create(b, loc, sum, acc[0],
                                                      ValueRange{row, c})};
                   });
             })[0];
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void mlir::tfm::populateLowerExpertPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerRoute, LowerExpertRows, LowerTakeRows, LowerScatterAddRows>(
      patterns.getContext());
}
