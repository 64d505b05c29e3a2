//===- LowerLinearAndElementwise.cpp - tfm.linear, activations, arithmetic ---===//
//
// Target-independent lowerings of the dense ops: tfm.linear as
// linalg.matmul (tfm-select-cpu-kernels may have taken it first),
// tfm.head_linear as one contraction per head, and
// activations, adds, multiplies and joins as elementwise linalg ops.
//
//===----------------------------------------------------------------------===//

#include "codegen/linalg/LinalgBuilders.h"
#include "codegen/linalg/LinearLowering.h"
#include "codegen/linalg/Passes.h"
#include "codegen/linalg/WeightFormats.h"
#include "codegen/linalg/WeightLayout.h"
#include "ir/TfmOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

using utils::IteratorType;

/// x·Wᵀ (+ bias) as linalg.matmul with the checkpoint's [out, in] weight
/// read transposed, never copied; the accumulator starts as the broadcast
/// bias (or zero), and with an activation the bias joins the epilogue.
struct LowerLinear : OpConversionPattern<LinearOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Value input = collapseToRows(rewriter, loc, adaptor.getInput());
    RankedTensorType rowsType = linearProductType(op);
    SmallVector<OpFoldResult> sizes = {
        tensor::getMixedSize(rewriter, loc, input, 0),
        rewriter.getIndexAttr(rowsType.getDimSize(1))};
    Value bias = adaptor.getBias();
    bool biasInEpilogue = bias && op.getActivation();
    Value init;
    if (bias && !biasInEpilogue) {
      AffineMap columns = AffineMap::get(2, 0, getAffineDimExpr(1, ctx));
      init = createGeneric(
          rewriter, loc, bias, createEmpty(rewriter, loc, rowsType, sizes),
          {columns, rewriter.getMultiDimIdentityMap(2)},
          {IteratorType::parallel, IteratorType::parallel},
          [](OpBuilder &, Location, ValueRange args) { return args[0]; });
    } else {
      init = createFilled(rewriter, loc, rowsType, sizes, 0.0);
    }
    // C[m, n] += A[m, k] * W[n, k].
    AffineExpr m = getAffineDimExpr(0, ctx), n = getAffineDimExpr(1, ctx),
               k = getAffineDimExpr(2, ctx);
    auto maps = rewriter.getAffineMapArrayAttr(
        {AffineMap::get(3, 0, {m, k}, ctx), AffineMap::get(3, 0, {n, k}, ctx),
         AffineMap::get(3, 0, {m, n}, ctx)});
    Value product =
        linalg::MatmulOp::create(rewriter, loc, TypeRange{rowsType},
                                 ValueRange{input, adaptor.getWeight()},
                                 ValueRange{init},
                                 {rewriter.getNamedAttr("indexing_maps", maps)})
            .getResult(0);
    replaceLinear(rewriter, op, product, biasInEpilogue ? bias : Value());
    return success();
  }
};

/// Each head's own projection: the weight viewed as [heads, out, in] and
/// C[s, h, o] += A[s, h, i] * W[h, o, i], one contraction over `in`.
struct LowerHeadLinear : OpConversionPattern<HeadLinearOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(HeadLinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    RankedTensorType type = op.getType();
    int64_t heads = type.getDimSize(1), out = type.getDimSize(2);
    int64_t in = op.getInput().getType().getDimSize(2);
    Value weight = tensor::ExpandShapeOp::create(
        rewriter, loc,
        RankedTensorType::get({heads, out, in}, type.getElementType()),
        adaptor.getWeight(), SmallVector<ReassociationIndices>{{0, 1}, {2}});
    SmallVector<OpFoldResult> sizes = {
        tensor::getMixedSize(rewriter, loc, adaptor.getInput(), 0),
        rewriter.getIndexAttr(heads), rewriter.getIndexAttr(out)};
    Value init = createFilled(rewriter, loc, type, sizes, 0.0);
    AffineExpr s = getAffineDimExpr(0, ctx), h = getAffineDimExpr(1, ctx),
               o = getAffineDimExpr(2, ctx), i = getAffineDimExpr(3, ctx);
    rewriter.replaceOp(
        op, createGeneric(
                rewriter, loc, ValueRange{adaptor.getInput(), weight}, init,
                {AffineMap::get(4, 0, {s, h, i}, ctx),
                 AffineMap::get(4, 0, {h, o, i}, ctx),
                 AffineMap::get(4, 0, {s, h, o}, ctx)},
                {IteratorType::parallel, IteratorType::parallel,
                 IteratorType::parallel, IteratorType::reduction},
                [](OpBuilder &b, Location l, ValueRange args) -> Value {
                  Value product = arith::MulFOp::create(b, l, args[0], args[1]);
                  return arith::AddFOp::create(b, l, args[2], product);
                }));
    return success();
  }
};

struct LowerActivation : OpConversionPattern<ActivationOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ActivationOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    ActivationKind kind = op.getKind();
    rewriter.replaceOp(
        op, createElementwise(rewriter, op.getLoc(), adaptor.getInput(),
                              adaptor.getInput(),
                              [&](OpBuilder &b, Location l, ValueRange args) {
                                return applyActivation(b, l, kind, args[0]);
                              }));
    return success();
  }
};

/// min(max(x, lo), hi); NaN stays NaN, as torch.clamp keeps it.
struct LowerClamp : OpConversionPattern<ClampOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ClampOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    APFloat min = op.getMin(), max = op.getMax();
    rewriter.replaceOp(
        op, createElementwise(
                rewriter, op.getLoc(), adaptor.getInput(), adaptor.getInput(),
                [&](OpBuilder &b, Location l, ValueRange args) -> Value {
                  Type type = args[0].getType();
                  Value lo = arith::ConstantOp::create(
                      b, l, type, b.getFloatAttr(type, min.convertToDouble()));
                  Value hi = arith::ConstantOp::create(
                      b, l, type, b.getFloatAttr(type, max.convertToDouble()));
                  Value above = arith::MaximumFOp::create(b, l, args[0], lo);
                  return arith::MinimumFOp::create(b, l, above, hi);
                }));
    return success();
  }
};

struct LowerSoftcap : OpConversionPattern<SoftcapOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SoftcapOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    double cap = op.getCap().convertToDouble();
    rewriter.replaceOp(
        op, createElementwise(
                rewriter, op.getLoc(), adaptor.getInput(), adaptor.getInput(),
                [&](OpBuilder &b, Location l, ValueRange args) -> Value {
                  return softcapped(b, l, args[0], cap);
                }));
    return success();
  }
};

struct LowerScale : OpConversionPattern<ScaleOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ScaleOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    FloatAttr factor = op.getFactorAttr();
    rewriter.replaceOp(
        op, createElementwise(
                rewriter, op.getLoc(), adaptor.getInput(), adaptor.getInput(),
                [&](OpBuilder &b, Location l, ValueRange args) -> Value {
                  Value c = arith::ConstantOp::create(
                      b, l, args[0].getType(),
                      b.getFloatAttr(args[0].getType(),
                                     factor.getValueAsDouble()));
                  return arith::MulFOp::create(b, l, args[0], c);
                }));
    return success();
  }
};

template <typename TfmOp, typename ArithOp>
struct LowerBinary : OpConversionPattern<TfmOp> {
  using OpConversionPattern<TfmOp>::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TfmOp op, typename TfmOp::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(
        op, createElementwise(
                rewriter, op.getLoc(), adaptor.getLhs(),
                ValueRange{adaptor.getLhs(), adaptor.getRhs()},
                [](OpBuilder &b, Location l, ValueRange args) -> Value {
                  return ArithOp::create(b, l, args[0], args[1]);
                }));
    return success();
  }
};

/// Joins of anything but weights (those are views of the blob, see
/// lowerWeights): copies into one tensor.
struct LowerConcat : OpConversionPattern<ConcatOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ConcatOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOpWithNewOp<tensor::ConcatOp>(op, op.getType(), 0,
                                                  adaptor.getInputs());
    return success();
  }
};

/// A weight read as f32 where no kernel reads its stored form: bf16 and
/// f16 widened elementwise. Block panels are the target's to read
/// (tfm-select-cpu-kernels calls the runtime's tfm_rt_dequantize_blocks).
struct LowerDequantize : OpConversionPattern<DequantizeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DequantizeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    if (op.getBlockFormat())
      return rewriter.notifyMatchFailure(
          op, "block panels are read by the target's kernels");
    Value init = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                         rewriter.getF32Type());
    SmallVector<AffineMap> maps(2,
                                rewriter.getMultiDimIdentityMap(type.getRank()));
    SmallVector<IteratorType> parallel(type.getRank(), IteratorType::parallel);
    rewriter.replaceOp(
        op, createGeneric(rewriter, loc, adaptor.getInput(), init, maps,
                          parallel,
                          [](OpBuilder &b, Location l, ValueRange args) {
                            return arith::ExtFOp::create(b, l, b.getF32Type(),
                                                         args[0])
                                .getResult();
                          }));
    return success();
  }
};

} // namespace

void mlir::tfm::populateLowerLinearAndElementwisePatterns(
    RewritePatternSet &patterns) {
  patterns.add<LowerLinear, LowerHeadLinear, LowerDequantize, LowerActivation, LowerClamp,
               LowerSoftcap, LowerScale, LowerBinary<AddOp, arith::AddFOp>,
               LowerBinary<MulOp, arith::MulFOp>, LowerConcat>(
      patterns.getContext());
}
