//===- LowerAttention.cpp - tfm.attention to linalg ---------------------===//
//
// The target-independent lowering (the CPU's fused kernel is chosen before
// it, by tfm-select-cpu-kernels): scores [heads, s, t] are materialized,
// masked, soft-maxed row by row and multiplied with the values. Query head h
// reads KV head h floordiv (heads / kv_heads), which an affine map expresses
// directly, so grouped-query attention needs no repeated K/V. It serves
// attention with a [heads, s, t] bias and checks the kernel in tests.
// tfm.window_attention (Swin) is lowered the same way a window at a time:
// scores [windows, heads, window, window], linear in the rows.
// tfm.sparse_attention (Longformer) becomes two of these attentions, one
// with a mask of its pattern, and a choice of rows. tfm.attention_weights
// is the first half: the chosen heads' probabilities.
//
//===----------------------------------------------------------------------===//

#include "codegen/linalg/LinalgBuilders.h"
#include "codegen/linalg/Passes.h"
#include "codegen/linalg/RelativePositionBias.h"
#include "ir/TfmOps.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/DialectConversion.h"

#include <limits>

using namespace mlir;
using namespace mlir::tfm;

namespace {

using utils::IteratorType;

struct LowerAttention : PackedSequencesPattern<AttentionOp> {
  using PackedSequencesPattern::PackedSequencesPattern;

  /// Packed sequences: each sequence's queries, keys and values (and the
  /// bias block on the diagonal) sliced out and attended alone, so that
  /// the scores are [heads, length, length] per sequence.
  static Value attendEachSequence(OpBuilder &b, AttentionOp op,
                                  OpAdaptor adaptor) {
    Location loc = op.getLoc();
    Value q = adaptor.getQuery(), k = adaptor.getKey(), v = adaptor.getValue();
    Value bias = adaptor.getBias();
    Value init = createEmpty(b, loc, op.getType(),
                             {tensor::getMixedSize(b, loc, q, 0),
                              b.getIndexAttr(op.getType().getDimSize(1)),
                              b.getIndexAttr(op.getType().getDimSize(2))});
    return forEachSequence(
        b, loc, adaptor.getLengths(), init,
        [&](OpBuilder &nb, Location l, Value, Value start, Value length,
            ValueRange carried) -> SmallVector<Value> {
          Value ownBias;
          if (bias) {
            int64_t heads = op.getType().getDimSize(1);
            SmallVector<OpFoldResult> offsets = {nb.getIndexAttr(0), start,
                                                 start};
            SmallVector<OpFoldResult> sizes = {nb.getIndexAttr(heads), length,
                                               length};
            SmallVector<OpFoldResult> strides(3, nb.getIndexAttr(1));
            ownBias = tensor::ExtractSliceOp::create(nb, l, bias, offsets,
                                                     sizes, strides);
          }
          RankedTensorType type = op.getType();
          auto ownType = RankedTensorType::get(
              {ShapedType::kDynamic, type.getDimSize(1), type.getDimSize(2)},
              type.getElementType());
          auto attended = AttentionOp::create(
              nb, l, ownType, sliceRows(nb, l, q, start, length),
              sliceRows(nb, l, k, start, length),
              sliceRows(nb, l, v, start, length), ownBias,
              /*lengths=*/Value(), /*relative_bias=*/Value(),
              adaptor.getSinks(), op.getScaleAttr(), op.getCausalAttr(),
              op.getWindowAttr(),
              /*max_distance=*/IntegerAttr(), op.getSoftcapAttr());
          return {insertRows(nb, l, attended, carried[0], start)};
        })[0];
  }

  LogicalResult
  matchAndRewrite(AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (adaptor.getLengths()) {
      rewriter.replaceOp(op, attendEachSequence(rewriter, op, adaptor));
      return success();
    }
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Value q = adaptor.getQuery(), k = adaptor.getKey(), v = adaptor.getValue();
    auto qType = op.getQuery().getType();
    int64_t heads = qType.getDimSize(1);
    int64_t group = heads / op.getKey().getType().getDimSize(1);
    Type f32 = rewriter.getF32Type();
    OpFoldResult s = tensor::getMixedSize(rewriter, loc, q, 0);
    OpFoldResult t = tensor::getMixedSize(rewriter, loc, k, 0);
    auto scoresType = RankedTensorType::get(
        {heads, qType.getDimSize(0), op.getKey().getType().getDimSize(0)},
        f32);
    SmallVector<OpFoldResult> scoreSizes = {rewriter.getIndexAttr(heads), s,
                                            t};

    // scores[h, i, j] = Σ_d q[i, h, d] · k[j, h / group, d]
    AffineExpr h = getAffineDimExpr(0, ctx), i = getAffineDimExpr(1, ctx),
               j = getAffineDimExpr(2, ctx), d = getAffineDimExpr(3, ctx);
    Value dots = createGeneric(
        rewriter, loc, ValueRange{q, k},
        createFilled(rewriter, loc, scoresType, scoreSizes, 0.0),
        {AffineMap::get(4, 0, {i, h, d}, ctx),
         AffineMap::get(4, 0, {j, h.floorDiv(group), d}, ctx),
         AffineMap::get(4, 0, {h, i, j}, ctx)},
        {IteratorType::parallel, IteratorType::parallel, IteratorType::parallel,
         IteratorType::reduction},
        [](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value prod = arith::MulFOp::create(b, l, args[0], args[1]);
          return accumulate(b, l, args[2], prod);
        });

    // Scale, add the bias, and mask keys the query may not see with -inf.
    double scale = op.getScale().convertToDouble();
    std::optional<double> softcap;
    if (std::optional<APFloat> cap = op.getSoftcap())
      softcap = cap->convertToDouble();
    bool causal = op.getCausal();
    std::optional<int64_t> window = op.getWindow();
    Value sValue = getValueOrCreateConstantIndexOp(rewriter, loc, s);
    Value tValue = getValueOrCreateConstantIndexOp(rewriter, loc, t);
    // Queries are the last s of the t positions.
    Value queryOffset = arith::SubIOp::create(rewriter, loc, tValue, sValue);
    SmallVector<Value> maskInputs = {dots};
    if (adaptor.getBias())
      maskInputs.push_back(adaptor.getBias());
    // Relative-position terms by distance: query i and key j read column
    // t - 1 + i - j.
    Value distanceBias;
    if (Value table = adaptor.getRelativeBias())
      distanceBias = buildDistanceBias(rewriter, loc, op, table, q, k);
    Value lastKey = arith::SubIOp::create(
        rewriter, loc, tValue, arith::ConstantIndexOp::create(rewriter, loc, 1));
    Value logits = createElementwise(
        rewriter, loc, dots, maskInputs,
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value x = arith::MulFOp::create(b, l, args[0],
                                          f32Constant(b, l, scale));
          if (softcap)
            x = softcapped(b, l, x, *softcap);
          if (maskInputs.size() == 2)
            x = arith::AddFOp::create(b, l, x, args[1]);
          if (!distanceBias && !causal && !window)
            return x;
          Value row = linalg::IndexOp::create(b, l, 1);
          Value col = linalg::IndexOp::create(b, l, 2);
          if (distanceBias) {
            Value head = linalg::IndexOp::create(b, l, 0);
            Value column = arith::SubIOp::create(
                b, l, arith::AddIOp::create(b, l, lastKey, row), col);
            x = arith::AddFOp::create(
                b, l, x,
                tensor::ExtractOp::create(b, l, distanceBias,
                                          ValueRange{head, column}));
          }
          if (!causal && !window)
            return x;
          // The query's own position among the keys.
          Value last = arith::AddIOp::create(b, l, row, queryOffset);
          Value visible;
          if (causal)
            visible = arith::CmpIOp::create(b, l, arith::CmpIPredicate::ule,
                                            col, last);
          if (window) {
            // Keys fewer than `window` positions behind stay visible (and,
            // without `causal`, every later one).
            Value span = arith::ConstantIndexOp::create(b, l, *window);
            Value recent = arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::ult, last,
                arith::AddIOp::create(b, l, col, span));
            visible =
                visible ? arith::AndIOp::create(b, l, visible, recent) : recent;
          }
          Value minusInf = f32Constant(
              b, l, -std::numeric_limits<double>::infinity());
          return arith::SelectOp::create(b, l, visible, x, minusInf);
        });

    // Softmax over j: subtract the row maximum, exponentiate, normalize
    // (a head's sink joining its rows' maxima and sums).
    Value probs = softmaxOverLastDim(rewriter, loc, logits, scoreSizes,
                                     adaptor.getSinks());

    // out[i, h, e] = Σ_j probs[h, i, j] · v[j, h / group, e], iterated
    // (i, h, j, e): the innermost loop runs along contiguous rows of v and
    // out, with no reduction in it.
    AffineExpr oi = getAffineDimExpr(0, ctx), oh = getAffineDimExpr(1, ctx),
               oj = getAffineDimExpr(2, ctx), oe = getAffineDimExpr(3, ctx);
    SmallVector<OpFoldResult> outSizes = {
        s, rewriter.getIndexAttr(heads),
        rewriter.getIndexAttr(op.getType().getDimSize(2))};
    Value out = createGeneric(
        rewriter, loc, ValueRange{probs, v},
        createFilled(rewriter, loc, op.getType(), outSizes, 0.0),
        {AffineMap::get(4, 0, {oh, oi, oj}, ctx),
         AffineMap::get(4, 0, {oj, oh.floorDiv(group), oe}, ctx),
         AffineMap::get(4, 0, {oi, oh, oe}, ctx)},
        {IteratorType::parallel, IteratorType::parallel, IteratorType::reduction,
         IteratorType::parallel},
        [](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value prod = arith::MulFOp::create(b, l, args[0], args[1]);
          return accumulate(b, l, args[2], prod);
        });
    rewriter.replaceOp(op, out);
    return success();
  }
};

/// tfm.attention_weights: the listed heads' queries and their KV heads'
/// keys copied side by side ([s, n, d] and [t, n, d]), then scores
/// [s, n, t] scaled and soft-maxed along the keys.
struct LowerAttentionWeights : OpConversionPattern<AttentionWeightsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(AttentionWeightsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Value q = adaptor.getQuery(), k = adaptor.getKey();
    RankedTensorType qType = op.getQuery().getType();
    RankedTensorType kType = op.getKey().getType();
    int64_t group = qType.getDimSize(1) / kType.getDimSize(1);
    int64_t n = int64_t(op.getHeads().size()), d = qType.getDimSize(2);
    OpFoldResult s = tensor::getMixedSize(rewriter, loc, q, 0);
    OpFoldResult t = tensor::getMixedSize(rewriter, loc, k, 0);
    OpFoldResult dSize = tensor::getMixedSize(rewriter, loc, q, 2);
    // Head `head` of `from` ([rows, heads, d]) at column `c` of `into`.
    auto copyHeads = [&](Value from, OpFoldResult rows, auto headOf) {
      auto type = RankedTensorType::get(
          {cast<RankedTensorType>(from.getType()).getDimSize(0), n, d},
          rewriter.getF32Type());
      Value into = createEmpty(rewriter, loc, type,
                               {rows, rewriter.getIndexAttr(n), dSize});
      SmallVector<OpFoldResult> strides(3, rewriter.getIndexAttr(1));
      SmallVector<OpFoldResult> sizes = {rows, rewriter.getIndexAttr(1), dSize};
      for (auto [c, head] : llvm::enumerate(op.getHeads())) {
        Value slice = tensor::ExtractSliceOp::create(
            rewriter, loc, from,
            {rewriter.getIndexAttr(0), rewriter.getIndexAttr(headOf(head)),
             rewriter.getIndexAttr(0)},
            sizes, strides);
        into = tensor::InsertSliceOp::create(rewriter, loc, slice, into,
                                             {rewriter.getIndexAttr(0),
                                              rewriter.getIndexAttr(int64_t(c)),
                                              rewriter.getIndexAttr(0)},
                                             sizes, strides);
      }
      return into;
    };
    Value queries = copyHeads(q, s, [](int64_t head) { return head; });
    Value keys =
        copyHeads(k, t, [group](int64_t head) { return head / group; });
    // scores[i, c, j] = Σ_e queries[i, c, e] · keys[j, c, e]
    AffineExpr i = getAffineDimExpr(0, ctx), c = getAffineDimExpr(1, ctx),
               j = getAffineDimExpr(2, ctx), e = getAffineDimExpr(3, ctx);
    SmallVector<OpFoldResult> sizes = {s, rewriter.getIndexAttr(n), t};
    Value dots =
        createGeneric(rewriter, loc, ValueRange{queries, keys},
                      createFilled(rewriter, loc, op.getType(), sizes, 0.0),
                      {AffineMap::get(4, 0, {i, c, e}, ctx),
                       AffineMap::get(4, 0, {j, c, e}, ctx),
                       AffineMap::get(4, 0, {i, c, j}, ctx)},
                      {IteratorType::parallel, IteratorType::parallel,
                       IteratorType::parallel, IteratorType::reduction},
                      [](OpBuilder &b, Location l, ValueRange args) -> Value {
                        Value prod =
                            arith::MulFOp::create(b, l, args[0], args[1]);
                        return accumulate(b, l, args[2], prod);
                      });
    double scale = op.getScale().convertToDouble();
    Value scaled = createElementwise(
        rewriter, loc, dots, ValueRange{dots},
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          return arith::MulFOp::create(b, l, args[0], f32Constant(b, l, scale));
        });
    rewriter.replaceOp(op, softmaxOverLastDim(rewriter, loc, scaled, sizes));
    return success();
  }
};

/// Windows of L rows: q, k and v as [windows, L, heads, d]; scores
/// [windows, heads, L, L] plus window w's bias bias[w mod b] (an affine
/// map), soft-maxed along the keys, times the values.
struct LowerWindowAttention : OpConversionPattern<WindowAttentionOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(WindowAttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType type = op.getType();
    int64_t L = op.getWindow(), rows = type.getDimSize(0),
            heads = type.getDimSize(1), d = type.getDimSize(2),
            windows = rows / L,
            biases = op.getBias().getType().getDimSize(0);
    Type f32 = rewriter.getF32Type();
    auto split = [&](Value x) {
      return tensor::ExpandShapeOp::create(
          rewriter, loc, RankedTensorType::get({windows, L, heads, d}, f32), x,
          ArrayRef<ReassociationIndices>{{0, 1}, {2}, {3}});
    };
    Value q = split(adaptor.getQuery()), k = split(adaptor.getKey()),
          v = split(adaptor.getValue());
    auto scoresType = RankedTensorType::get({windows, heads, L, L}, f32);
    auto sizesOf = [&](RankedTensorType t) {
      SmallVector<OpFoldResult> sizes;
      for (int64_t n : t.getShape())
        sizes.push_back(rewriter.getIndexAttr(n));
      return sizes;
    };
    AffineExpr w = getAffineDimExpr(0, ctx), h = getAffineDimExpr(1, ctx),
               i = getAffineDimExpr(2, ctx), j = getAffineDimExpr(3, ctx),
               e = getAffineDimExpr(4, ctx);
    SmallVector<IteratorType> parallel4(4, IteratorType::parallel);
    // scores[w, h, i, j] = Σ_e q[w, i, h, e] · k[w, j, h, e], iterated
    // (w, h, i, j, e).
    Value dots = createGeneric(
        rewriter, loc, ValueRange{q, k},
        createFilled(rewriter, loc, scoresType, sizesOf(scoresType), 0.0),
        {AffineMap::get(5, 0, {w, i, h, e}, ctx),
         AffineMap::get(5, 0, {w, j, h, e}, ctx),
         AffineMap::get(5, 0, {w, h, i, j}, ctx)},
        {IteratorType::parallel, IteratorType::parallel, IteratorType::parallel,
         IteratorType::parallel, IteratorType::reduction},
        [](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value prod = arith::MulFOp::create(b, l, args[0], args[1]);
          return accumulate(b, l, args[2], prod);
        });
    AffineMap identity4 = rewriter.getMultiDimIdentityMap(4);
    AffineExpr w4 = getAffineDimExpr(0, ctx), h4 = getAffineDimExpr(1, ctx),
               i4 = getAffineDimExpr(2, ctx), j4 = getAffineDimExpr(3, ctx);
    AffineMap biasMap = AffineMap::get(4, 0, {w4 % biases, h4, i4, j4}, ctx);
    float scale = op.getScale().convertToFloat();
    auto empty = [&] {
      return createEmpty(rewriter, loc, scoresType, sizesOf(scoresType));
    };
    Value logits = createGeneric(
        rewriter, loc, ValueRange{dots, adaptor.getBias()}, empty(),
        {identity4, biasMap, identity4}, parallel4,
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value scaled =
              arith::MulFOp::create(b, l, args[0], f32Constant(b, l, scale));
          return arith::AddFOp::create(b, l, scaled, args[1]);
        });
    Value probs = softmaxOverLastDim(rewriter, loc, logits,
                                     sizesOf(scoresType));
    // out[w, i, h, e] = Σ_j probs[w, h, i, j] · v[w, j, h, e], iterated
    // (w, i, h, j, e).
    AffineExpr oi = getAffineDimExpr(1, ctx), oh = getAffineDimExpr(2, ctx),
               oj = getAffineDimExpr(3, ctx), oe = getAffineDimExpr(4, ctx);
    auto outType = RankedTensorType::get({windows, L, heads, d}, f32);
    Value out = createGeneric(
        rewriter, loc, ValueRange{probs, v},
        createFilled(rewriter, loc, outType, sizesOf(outType), 0.0),
        {AffineMap::get(5, 0, {w, oh, oi, oj}, ctx),
         AffineMap::get(5, 0, {w, oj, oh, oe}, ctx),
         AffineMap::get(5, 0, {w, oi, oh, oe}, ctx)},
        {IteratorType::parallel, IteratorType::parallel, IteratorType::parallel,
         IteratorType::reduction, IteratorType::parallel},
        [](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value prod = arith::MulFOp::create(b, l, args[0], args[1]);
          return accumulate(b, l, args[2], prod);
        });
    rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(
        op, type, out, ArrayRef<ReassociationIndices>{{0, 1}, {2}, {3}});
    return success();
  }
};

/// Longformer's pattern, densely: the local attention as tfm.attention
/// with a [heads, s, s] bias (0 where a key is visible, -inf elsewhere),
/// the global queries' as full tfm.attention over the global projections
/// (both lowered by LowerAttention), then each row taken from one or the
/// other. Quadratic in s: the reference the fused kernel is checked
/// against, and the lowering of targets without that kernel.
struct LowerSparseAttention : OpConversionPattern<SparseAttentionOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SparseAttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = rewriter.getContext();
    RankedTensorType type = op.getType();
    int64_t heads = type.getDimSize(1);
    Value q = adaptor.getQuery();
    OpFoldResult s = tensor::getMixedSize(rewriter, loc, q, 0);
    Value global = adaptor.getGlobal();
    int64_t prefix = op.getGlobalPrefix();
    // Whether token `index` is global (a linalg body's i32 mask element,
    // or none).
    auto isGlobal = [&](OpBuilder &b, Location l, Value index,
                        Value maskElement) -> Value {
      Value result =
          arith::CmpIOp::create(b, l, arith::CmpIPredicate::ult, index,
                                arith::ConstantIndexOp::create(b, l, prefix));
      if (maskElement)
        result = arith::OrIOp::create(
            b, l, result,
            arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::ne, maskElement,
                arith::ConstantIntOp::create(b, l, b.getI32Type(), 0)));
      return result;
    };
    auto biasType = RankedTensorType::get(
        {heads, type.getDimSize(0), type.getDimSize(0)}, rewriter.getF32Type());
    SmallVector<OpFoldResult> biasSizes = {rewriter.getIndexAttr(heads), s, s};
    AffineExpr h = getAffineDimExpr(0, ctx), i = getAffineDimExpr(1, ctx),
               j = getAffineDimExpr(2, ctx);
    SmallVector<Value> maskInputs;
    SmallVector<AffineMap> maps;
    if (global) {
      maskInputs.push_back(global);
      maps.push_back(AffineMap::get(3, 0, {j}, ctx));
    }
    maps.push_back(AffineMap::get(3, 0, {h, i, j}, ctx));
    int64_t window = op.getWindow();
    Value bias = createGeneric(
        rewriter, loc, maskInputs,
        createEmpty(rewriter, loc, biasType, biasSizes), maps,
        SmallVector<IteratorType>(3, IteratorType::parallel),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value row = linalg::IndexOp::create(b, l, 1);
          Value col = linalg::IndexOp::create(b, l, 2);
          // |i - j| <= window, in index arithmetic: j <= i + window and
          // i <= j + window.
          Value span = arith::ConstantIndexOp::create(b, l, window);
          Value near = arith::AndIOp::create(
              b, l,
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::ule, col,
                                    arith::AddIOp::create(b, l, row, span)),
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::ule, row,
                                    arith::AddIOp::create(b, l, col, span)));
          Value visible = arith::OrIOp::create(
              b, l, near, isGlobal(b, l, col, global ? args[0] : Value()));
          return arith::SelectOp::create(
              b, l, visible, f32Constant(b, l, 0.0),
              f32Constant(b, l, -std::numeric_limits<double>::infinity()));
        });
    auto attend = [&](Value query, Value key, Value value, Value withBias) {
      return AttentionOp::create(
          rewriter, loc, type, query, key, value, withBias,
          /*lengths=*/Value(), /*relative_bias=*/Value(), /*sinks=*/Value(),
          op.getScaleAttr(),
          /*causal=*/UnitAttr(), /*window=*/IntegerAttr(),
          /*max_distance=*/IntegerAttr(), /*softcap=*/FloatAttr());
    };
    Value local = attend(q, adaptor.getKey(), adaptor.getValue(), bias);
    Value full = attend(adaptor.getGlobalQuery(), adaptor.getGlobalKey(),
                        adaptor.getGlobalValue(), Value());
    // out[i] = global(i) ? full[i] : local[i]
    AffineExpr r = getAffineDimExpr(0, ctx), rh = getAffineDimExpr(1, ctx),
               re = getAffineDimExpr(2, ctx);
    AffineMap rows3 = AffineMap::get(3, 0, {r, rh, re}, ctx);
    SmallVector<Value> selectInputs = {local, full};
    SmallVector<AffineMap> selectMaps = {rows3, rows3};
    if (global) {
      selectInputs.push_back(global);
      selectMaps.push_back(AffineMap::get(3, 0, {r}, ctx));
    }
    selectMaps.push_back(rows3);
    SmallVector<OpFoldResult> outSizes = {
        s, rewriter.getIndexAttr(heads),
        rewriter.getIndexAttr(type.getDimSize(2))};
    Value out = createGeneric(
        rewriter, loc, selectInputs, createEmpty(rewriter, loc, type, outSizes),
        selectMaps, SmallVector<IteratorType>(3, IteratorType::parallel),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value row = linalg::IndexOp::create(b, l, 0);
          return arith::SelectOp::create(
              b, l, isGlobal(b, l, row, global ? args[2] : Value()), args[1],
              args[0]);
        });
    rewriter.replaceOp(op, out);
    return success();
  }
};

} // namespace

void mlir::tfm::populateLowerAttentionPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerAttention, LowerAttentionWeights, LowerWindowAttention,
               LowerSparseAttention>(patterns.getContext());
}
