//===- LowerExperts.cpp - a mixture of experts' routing to loops ----------===//
//
// What tfm-expand-experts makes of tfm.moe, short of the experts'
// projections (tfm.linear, lowered as any other): tfm.route (each token's
// expert scores, a softmax or sigmoids, and its top k by score plus the
// selection bias within the best groups, picked one after another in
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

/// One token's scratch, [2·experts + groups] f32, which the loop over
/// tokens carries so that it is written in place: the experts' scores (the
/// softmax of the logits, or each one's σ) at [0, experts), the values
/// they are picked by (the scores plus the selection bias, -inf for the
/// experts of groups not among the top_groups best) at [experts,
/// 2·experts), the groups' scores after them. One tensor rather than three:
/// scratch rows of one type are one tensor.empty after CSE, which
/// bufferization may then give one buffer.
struct RowScratch {
  Value values;
  int64_t experts;

  Value at(OpBuilder &b, Location loc, int64_t base, Value i) const {
    return base == 0 ? i
                     : Value(arith::AddIOp::create(b, loc, index(b, loc, base),
                                                   i));
  }
  Value scoreIndex(OpBuilder &b, Location loc, Value e) const {
    return at(b, loc, 0, e);
  }
  Value choiceIndex(OpBuilder &b, Location loc, Value e) const {
    return at(b, loc, experts, e);
  }
  Value groupIndex(OpBuilder &b, Location loc, Value g) const {
    return at(b, loc, 2 * experts, g);
  }
};

Value extract(OpBuilder &b, Location loc, Value tensor, Value i) {
  return tensor::ExtractOp::create(b, loc, tensor, ValueRange{i});
}

/// tfm.route's row `r`: its scores and choice values written into
/// `scratch` (RowScratch's layout); returns the updated scratch.
Value scoreRow(OpBuilder &b, Location loc, RouteOp op, Value logits,
               Value bias, Value r, RowScratch scratch) {
  int64_t experts = scratch.experts;
  Value numExperts = index(b, loc, experts);
  auto logit = [&](OpBuilder &b, Location loc, Value e) {
    return Value(tensor::ExtractOp::create(b, loc, logits, ValueRange{r, e}));
  };
  Value one = f32Constant(b, loc, 1.0);
  std::function<Value(OpBuilder &, Location, Value)> score;
  if (op.getScoring() == RouterScoring::sigmoid) {
    score = [&](OpBuilder &b, Location loc, Value e) {
      Value negated = arith::NegFOp::create(b, loc, logit(b, loc, e));
      return Value(arith::DivFOp::create(
          b, loc, one,
          arith::AddFOp::create(b, loc, one,
                                math::ExpOp::create(b, loc, negated))));
    };
  } else {
    // The softmax's maximum and denominator.
    Value max = loop(b, loc, numExperts, {f32Constant(b, loc, -INFINITY)},
                     [&](OpBuilder &b, Location loc, Value e,
                         ValueRange acc) -> SmallVector<Value> {
                       return {arith::MaximumFOp::create(b, loc, acc[0],
                                                         logit(b, loc, e))};
                     })[0];
    auto exponential = [&, max](OpBuilder &b, Location loc, Value e) {
      return Value(math::ExpOp::create(
          b, loc, arith::SubFOp::create(b, loc, logit(b, loc, e), max)));
    };
    Value sum = loop(b, loc, numExperts, {f32Constant(b, loc, 0.0)},
                     [&](OpBuilder &b, Location loc, Value e,
                         ValueRange acc) -> SmallVector<Value> {
                       return {arith::AddFOp::create(b, loc, acc[0],
                                                     exponential(b, loc, e))};
                     })[0];
    score = [&, exponential, sum](OpBuilder &b, Location loc, Value e) {
      return Value(arith::DivFOp::create(b, loc, exponential(b, loc, e), sum));
    };
  }
  Value values = loop(
      b, loc, numExperts, {scratch.values},
      [&](OpBuilder &b, Location loc, Value e,
          ValueRange acc) -> SmallVector<Value> {
        Value p = score(b, loc, e);
        Value choice = p;
        if (bias)
          choice = arith::AddFOp::create(b, loc, p, extract(b, loc, bias, e));
        Value scored = tensor::InsertOp::create(
            b, loc, p, acc[0], scratch.scoreIndex(b, loc, e));
        return {tensor::InsertOp::create(b, loc, choice, scored,
                                         scratch.choiceIndex(b, loc, e))};
      })[0];
  if (!op.getGroups())
    return values;
  // A group's score: the sum of its two best choice values. A group is kept
  // when fewer than top_groups groups rank before it (a higher score, or
  // the same score and a lower index); the others' experts are masked.
  int64_t groups = *op.getGroups(), size = experts / groups;
  Value numGroups = index(b, loc, groups), groupSize = index(b, loc, size);
  auto expertOf = [&](OpBuilder &b, Location loc, Value g, Value i) {
    return Value(arith::AddIOp::create(
        b, loc, arith::MulIOp::create(b, loc, g, groupSize), i));
  };
  values = loop(
      b, loc, numGroups, {values},
      [&](OpBuilder &b, Location loc, Value g,
          ValueRange acc) -> SmallVector<Value> {
        SmallVector<Value> best = loop(
            b, loc, groupSize,
            {f32Constant(b, loc, -INFINITY), f32Constant(b, loc, -INFINITY)},
            [&](OpBuilder &b, Location loc, Value i,
                ValueRange top) -> SmallVector<Value> {
              Value c = extract(
                  b, loc, acc[0],
                  scratch.choiceIndex(b, loc, expertOf(b, loc, g, i)));
              return {arith::MaximumFOp::create(b, loc, top[0], c),
                      arith::MaximumFOp::create(
                          b, loc, top[1],
                          arith::MinimumFOp::create(b, loc, top[0], c))};
            });
        Value groupScore = size == 1 ? best[0]
                                     : Value(arith::AddFOp::create(
                                           b, loc, best[0], best[1]));
        return {tensor::InsertOp::create(b, loc, groupScore, acc[0],
                                         scratch.groupIndex(b, loc, g))};
      })[0];
  Value topGroups = index(b, loc, *op.getTopGroups());
  return loop(
      b, loc, numGroups, {values},
      [&](OpBuilder &b, Location loc, Value g,
          ValueRange acc) -> SmallVector<Value> {
        auto groupScore = [&](OpBuilder &b, Location loc, Value h) {
          return extract(b, loc, acc[0], scratch.groupIndex(b, loc, h));
        };
        Value own = groupScore(b, loc, g);
        Value ahead = loop(
            b, loc, numGroups, {index(b, loc, 0)},
            [&](OpBuilder &b, Location loc, Value h,
                ValueRange count) -> SmallVector<Value> {
              Value other = groupScore(b, loc, h);
              Value before = arith::OrIOp::create(
                  b, loc,
                  arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT,
                                        other, own),
                  arith::AndIOp::create(
                      b, loc,
                      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ,
                                            other, own),
                      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                            h, g)));
              return {arith::SelectOp::create(
                  b, loc, before,
                  arith::AddIOp::create(b, loc, count[0], index(b, loc, 1)),
                  count[0])};
            })[0];
        Value dropped = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::uge, ahead, topGroups);
        return loop(b, loc, groupSize, {acc[0]},
                    [&](OpBuilder &b, Location loc, Value i,
                        ValueRange masked) -> SmallVector<Value> {
                      Value at = scratch.choiceIndex(
                          b, loc, expertOf(b, loc, g, i));
                      Value value = arith::SelectOp::create(
                          b, loc, dropped, f32Constant(b, loc, -INFINITY),
                          extract(b, loc, masked[0], at));
                      return {tensor::InsertOp::create(b, loc, value,
                                                       masked[0], at)};
                    });
      })[0];
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
    std::optional<APFloat> routedScale = op.getRoutedScale();
    Value expertScales = adaptor.getExpertScales();
    RowScratch scratch{
        tensor::EmptyOp::create(
            b, loc,
            ArrayRef<int64_t>{2 * experts + int64_t(op.getGroups().value_or(0))},
            b.getF32Type()),
        experts};
    SmallVector<Value> out = loop(
        b, loc, rows, {weights, ids, scratch.values},
        [&](OpBuilder &b, Location loc, Value r,
            ValueRange carried) -> SmallVector<Value> {
          RowScratch row = scratch;
          row.values = scoreRow(b, loc, op, logits, adaptor.getSelectionBias(),
                                r, {carried[2], experts});
          // Pick j: the expert of the largest choice value after pick
          // j - 1's in the order (value descending, index ascending); its
          // weight is its score.
          SmallVector<Value> picked = loop(
              b, loc, picks,
              {carried[0], carried[1], f32Constant(b, loc, INFINITY),
               index(b, loc, -1), f32Constant(b, loc, 0.0)},
              [&](OpBuilder &b, Location loc, Value j,
                  ValueRange state) -> SmallVector<Value> {
                Value previous = state[2], previousExpert = state[3];
                SmallVector<Value> best = loop(
                    b, loc, numExperts,
                    {f32Constant(b, loc, -INFINITY), index(b, loc, 0)},
                    [&](OpBuilder &b, Location loc, Value e,
                        ValueRange acc) -> SmallVector<Value> {
                      Value c = extract(b, loc, row.values,
                                        row.choiceIndex(b, loc, e));
                      Value below = arith::CmpFOp::create(
                          b, loc, arith::CmpFPredicate::OLT, c, previous);
                      Value tiedAfter = arith::AndIOp::create(
                          b, loc,
                          arith::CmpFOp::create(
                              b, loc, arith::CmpFPredicate::OEQ, c, previous),
                          arith::CmpIOp::create(b, loc,
                                                arith::CmpIPredicate::sgt, e,
                                                previousExpert));
                      Value better = arith::AndIOp::create(
                          b, loc,
                          arith::OrIOp::create(b, loc, below, tiedAfter),
                          arith::CmpFOp::create(
                              b, loc, arith::CmpFPredicate::OGT, c, acc[0]));
                      return {
                          arith::SelectOp::create(b, loc, better, c, acc[0]),
                          arith::SelectOp::create(b, loc, better, e, acc[1])};
                    });
                Value weight = extract(b, loc, row.values,
                                       row.scoreIndex(b, loc, best[1]));
                Value id =
                    arith::IndexCastOp::create(b, loc, b.getI32Type(), best[1]);
                return {tensor::InsertOp::create(b, loc, weight, state[0],
                                                 ValueRange{r, j}),
                        tensor::InsertOp::create(b, loc, id, state[1],
                                                 ValueRange{r, j}),
                        best[0], best[1],
                        arith::AddFOp::create(b, loc, state[4], weight)};
              });
          Value rowWeights = picked[0];
          if (normalize || routedScale || expertScales) {
            // weight / sum (normalize), then times routed_scale and the
            // expert's own scale.
            rowWeights =
                loop(b, loc, picks, {rowWeights},
                     [&](OpBuilder &b, Location loc, Value j,
                         ValueRange acc) -> SmallVector<Value> {
                       Value w = tensor::ExtractOp::create(b, loc, acc[0],
                                                           ValueRange{r, j});
                       if (normalize)
                         w = arith::DivFOp::create(b, loc, w, picked[4]);
                       if (routedScale)
                         w = arith::MulFOp::create(
                             b, loc, w,
                             f32Constant(b, loc,
                                         routedScale->convertToDouble()));
                       if (expertScales) {
                         Value id = tensor::ExtractOp::create(
                             b, loc, picked[1], ValueRange{r, j});
                         w = arith::MulFOp::create(
                             b, loc, w,
                             extract(b, loc, expertScales,
                                     arith::IndexCastOp::create(
                                         b, loc, b.getIndexType(), id)));
                       }
                       return {tensor::InsertOp::create(b, loc, w, acc[0],
                                                        ValueRange{r, j})};
                     })[0];
          }
          return SmallVector<Value>{rowWeights, picked[1], row.values};
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
