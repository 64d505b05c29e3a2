//===- LowerImages.cpp - a diffusion model's feature-map ops to linalg ---===//
//
// Feature maps are [H, W, C], one row of channels per pixel, or a batch of
// them, [N, H, W, C], each image computed alone (a UNet's two halves of
// classifier-free guidance).
//
// tfm.image_windows (im2col) and tfm.upsample_nearest: one linalg.generic
// over the result reading each element's source pixel with tensor.extract
// (zero in a window's padding). tfm.conv2d, when tfm-convolutions-as-gemm
// did not make it a GEMM: the padded input (tensor.pad) and one generic over
// [N, Ho, Wo, out, C, k, k] summing into the bias (or zero).
// tfm.group_norm: the input viewed as [images, positions, groups,
// C/groups], each image's group's sum and sum of squared deviations
// accumulated in f64 (a 64x64x320 map sums 40960 values a group), then one
// normalizing generic with the SiLU epilogue.
// tfm.timestep_embedding: its frequencies as a constant table computed in
// f32 as torch does, t·f in f32, sin and cos in f64 rounded once.
//
//===----------------------------------------------------------------------===//

#include "codegen/linalg/LinalgBuilders.h"
#include "codegen/linalg/Passes.h"
#include "ir/TfmOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

#include <array>
#include <cmath>

using namespace mlir;
using namespace mlir::tfm;
using utils::IteratorType;

namespace {

Value indexConstant(OpBuilder &b, Location loc, int64_t v) {
  return arith::ConstantIndexOp::create(b, loc, v);
}

/// A tensor of static `type` filled with `value`.
Value staticFilled(OpBuilder &b, Location loc, RankedTensorType type,
                   double value) {
  SmallVector<OpFoldResult> sizes;
  for (int64_t d : type.getShape())
    sizes.push_back(b.getIndexAttr(d));
  return createFilled(b, loc, type, sizes, value);
}

/// An all-parallel generic over a result of static `type` whose body
/// computes each element from its indices alone.
Value generateElements(OpBuilder &b, Location loc, RankedTensorType type,
                       llvm::function_ref<Value(OpBuilder &, Location,
                                                ArrayRef<Value>)>
                           body) {
  Value init = tensor::EmptyOp::create(b, loc, type.getShape(),
                                       type.getElementType());
  int64_t rank = type.getRank();
  auto generic = linalg::GenericOp::create(
      b, loc, type, ValueRange{}, ValueRange{init},
      ArrayRef<AffineMap>{b.getMultiDimIdentityMap(rank)},
      SmallVector<IteratorType>(rank, IteratorType::parallel),
      [&](OpBuilder &nb, Location l, ValueRange) {
        SmallVector<Value> indices;
        for (int64_t d = 0; d < rank; ++d)
          indices.push_back(linalg::IndexOp::create(nb, l, d));
        linalg::YieldOp::create(nb, l, ValueRange{body(nb, l, indices)});
      });
  return generic->getResult(0);
}

/// The [N, H, W, C] extents of a feature map (N = 1 for [H, W, C]).
std::array<int64_t, 4> mapExtents(ShapedType type) {
  ArrayRef<int64_t> s = type.getShape();
  if (s.size() == 3)
    return {1, s[0], s[1], s[2]};
  return {s[0], s[1], s[2], s[3]};
}

struct LowerImageWindows : OpConversionPattern<ImageWindowsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(ImageWindowsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value input = adaptor.getInput();
    bool batched = op.getInput().getType().getRank() == 4;
    std::array<int64_t, 4> extents = mapExtents(op.getInput().getType());
    int64_t image[2] = {extents[1], extents[2]};
    int64_t k = op.getKernel(), stride = op.getStride(),
            top = op.getPadding()[0], left = op.getPadding()[1],
            rows = (image[0] + top + op.getPadding()[2] - k) / stride + 1,
            columns = (image[1] + left + op.getPadding()[3] - k) / stride + 1;
    Type f = op.getType().getElementType();
    Value windows = generateElements(
        rewriter, op.getLoc(), op.getType(),
        [&](OpBuilder &b, Location l, ArrayRef<Value> at) -> Value {
          auto c = [&](int64_t v) { return indexConstant(b, l, v); };
          // Row r is image r / (rows·columns)'s pixel r % (rows·columns).
          Value pixel = batched
                            ? arith::RemUIOp::create(b, l, at[0],
                                                     c(rows * columns))
                            : at[0];
          Value oy = arith::DivUIOp::create(b, l, pixel, c(columns));
          Value ox = arith::RemUIOp::create(b, l, pixel, c(columns));
          Value channel = arith::DivUIOp::create(b, l, at[1], c(k * k));
          Value ky = arith::RemUIOp::create(
              b, l, arith::DivUIOp::create(b, l, at[1], c(k)), c(k));
          Value kx = arith::RemUIOp::create(b, l, at[1], c(k));
          // y = oy * stride + ky - top (signed: negative in the padding).
          Value y = arith::SubIOp::create(
              b, l,
              arith::AddIOp::create(
                  b, l, arith::MulIOp::create(b, l, oy, c(stride)), ky),
              c(top));
          Value x = arith::SubIOp::create(
              b, l,
              arith::AddIOp::create(
                  b, l, arith::MulIOp::create(b, l, ox, c(stride)), kx),
              c(left));
          auto within = [&](Value v, int64_t size) {
            return arith::AndIOp::create(
                b, l,
                arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, v,
                                      c(0)),
                arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, v,
                                      c(size)));
          };
          Value inside = arith::AndIOp::create(b, l, within(y, image[0]),
                                               within(x, image[1]));
          SmallVector<Value> source;
          if (batched)
            source.push_back(
                arith::DivUIOp::create(b, l, at[0], c(rows * columns)));
          source.push_back(arith::SelectOp::create(b, l, inside, y, c(0)));
          source.push_back(arith::SelectOp::create(b, l, inside, x, c(0)));
          source.push_back(channel);
          Value value = tensor::ExtractOp::create(b, l, input, source);
          Value zero = arith::ConstantOp::create(b, l, b.getZeroAttr(f));
          return arith::SelectOp::create(b, l, inside, value, zero);
        });
    rewriter.replaceOp(op, windows);
    return success();
  }
};

/// The convolution as linalg: a generic over (n, y, x, o, c, ky, kx)
/// reading the padded input at (n, y·stride + ky, x·stride + kx, c) and the
/// weight at (o, c·k·k + ky·k + kx) through affine maps, accumulating into
/// the bias; an unbatched map is image n = 0 of one.
struct LowerConv2d : OpConversionPattern<Conv2dOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(Conv2dOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    ArrayRef<int64_t> padding = op.getPadding();
    int64_t k = op.getKernel(), stride = op.getStride();
    RankedTensorType type = op.getType();
    Type f = type.getElementType();
    Value zero = arith::ConstantOp::create(rewriter, loc,
                                           rewriter.getZeroAttr(f));
    // An unbatched map as a batch of one: [1, H, W, C].
    bool batched = type.getRank() == 4;
    std::array<int64_t, 4> image = mapExtents(op.getInput().getType()),
                           out = mapExtents(type);
    auto batchType = RankedTensorType::get(out, f);
    SmallVector<ReassociationIndices> one = {{0, 1}, {2}, {3}};
    Value input = adaptor.getInput();
    if (!batched)
      input = tensor::ExpandShapeOp::create(
          rewriter, loc, RankedTensorType::get(image, f), input, one);
    if (llvm::any_of(padding, [](int64_t p) { return p != 0; })) {
      auto padded = RankedTensorType::get(
          {image[0], image[1] + padding[0] + padding[2],
           image[2] + padding[1] + padding[3], image[3]},
          f);
      SmallVector<OpFoldResult> low = {
          rewriter.getIndexAttr(0), rewriter.getIndexAttr(padding[0]),
          rewriter.getIndexAttr(padding[1]), rewriter.getIndexAttr(0)};
      SmallVector<OpFoldResult> high = {
          rewriter.getIndexAttr(0), rewriter.getIndexAttr(padding[2]),
          rewriter.getIndexAttr(padding[3]), rewriter.getIndexAttr(0)};
      input = tensor::PadOp::create(rewriter, loc, padded, input, low, high,
                                    zero);
    }
    // The accumulator: the bias broadcast over pixels, or zeros.
    Value init;
    if (Value bias = adaptor.getBias()) {
      Value empty = tensor::EmptyOp::create(rewriter, loc, out, f);
      init = linalg::BroadcastOp::create(rewriter, loc, bias, empty,
                                         ArrayRef<int64_t>{0, 1, 2})
                 ->getResult(0);
    } else {
      init = staticFilled(rewriter, loc, batchType, 0.0);
    }
    AffineExpr n = getAffineDimExpr(0, ctx), y = getAffineDimExpr(1, ctx),
               x = getAffineDimExpr(2, ctx), o = getAffineDimExpr(3, ctx),
               c = getAffineDimExpr(4, ctx), ky = getAffineDimExpr(5, ctx),
               kx = getAffineDimExpr(6, ctx);
    AffineMap inputMap =
        AffineMap::get(7, 0, {n, y * stride + ky, x * stride + kx, c}, ctx);
    AffineMap weightMap =
        AffineMap::get(7, 0, {o, c * (k * k) + ky * k + kx}, ctx);
    AffineMap outputMap = AffineMap::get(7, 0, {n, y, x, o}, ctx);
    // The weight's flattened column is not a loop dimension: give the
    // generic the kernel's extent through a [k, k] shape-only operand.
    Value taps = tensor::EmptyOp::create(rewriter, loc, {k, k}, f);
    AffineMap tapsMap = AffineMap::get(7, 0, {ky, kx}, ctx);
    Value result = createGeneric(
        rewriter, loc, ValueRange{input, adaptor.getWeight(), taps}, init,
        {inputMap, weightMap, tapsMap, outputMap},
        {IteratorType::parallel, IteratorType::parallel,
         IteratorType::parallel, IteratorType::parallel,
         IteratorType::reduction, IteratorType::reduction,
         IteratorType::reduction},
        [](OpBuilder &b, Location l, ValueRange args) -> Value {
          return arith::AddFOp::create(
              b, l, args[3], arith::MulFOp::create(b, l, args[0], args[1]));
        });
    if (!batched)
      result = tensor::CollapseShapeOp::create(rewriter, loc, type, result,
                                               one);
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct LowerGroupNorm : OpConversionPattern<GroupNormOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GroupNormOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    RankedTensorType type = op.getType();
    Type f32 = rewriter.getF32Type(), f64 = rewriter.getF64Type();
    int64_t rank = type.getRank(), channels = type.getDimSize(rank - 1),
            groups = op.getGroups(), width = channels / groups;
    if (ShapedType::isDynamicShape(type.getShape()))
      return rewriter.notifyMatchFailure(op, "needs a static feature map");
    // A batch [N, H, W, C] normalizes each image alone; other ranks are one.
    int64_t images = rank == 4 ? type.getDimSize(0) : 1;
    int64_t positions = type.getNumElements() / channels / images;
    // [.., C] -> [images, positions, C] -> [images, positions, groups,
    // width] (free: views).
    SmallVector<ReassociationIndices> toGrouped;
    if (rank == 4) {
      toGrouped = {{0}, {1, 2}, {3}};
    } else {
      ReassociationIndices leading;
      for (int64_t d = 0; d + 1 < rank; ++d)
        leading.push_back(d);
      toGrouped = {leading, {rank - 1}};
    }
    auto flatType = RankedTensorType::get({images, positions, channels}, f32);
    Value flat = tensor::CollapseShapeOp::create(
        rewriter, loc,
        rank == 4 ? flatType
                  : RankedTensorType::get({positions, channels}, f32),
        adaptor.getInput(), toGrouped);
    if (rank != 4)
      flat = tensor::ExpandShapeOp::create(
          rewriter, loc, flatType, flat,
          ArrayRef<ReassociationIndices>{{0, 1}, {2}});
    auto groupedType =
        RankedTensorType::get({images, positions, groups, width}, f32);
    Value x = tensor::ExpandShapeOp::create(
        rewriter, loc, groupedType, flat,
        ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});
    auto perGroupType = RankedTensorType::get({groups, width}, f32);
    Value gamma = tensor::ExpandShapeOp::create(
        rewriter, loc, perGroupType, adaptor.getGamma(),
        ArrayRef<ReassociationIndices>{{0, 1}});
    Value beta = tensor::ExpandShapeOp::create(
        rewriter, loc, perGroupType, adaptor.getBeta(),
        ArrayRef<ReassociationIndices>{{0, 1}});

    AffineExpr n = getAffineDimExpr(0, ctx), p = getAffineDimExpr(1, ctx),
               g = getAffineDimExpr(2, ctx), w = getAffineDimExpr(3, ctx);
    AffineMap all = AffineMap::get(4, 0, {n, p, g, w}, ctx);
    AffineMap group = AffineMap::get(4, 0, {n, g}, ctx);
    AffineMap channel = AffineMap::get(4, 0, {g, w}, ctx);
    SmallVector<IteratorType> reduce = {
        IteratorType::parallel, IteratorType::reduction,
        IteratorType::parallel, IteratorType::reduction};
    auto statsType = RankedTensorType::get({images, groups}, f64);
    double count = double(positions * width);
    // Each group's mean, then its variance about it (two passes, in f64).
    Value sums = createGeneric(
        rewriter, loc, x, staticFilled(rewriter, loc, statsType, 0.0),
        {all, group}, reduce,
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          return arith::AddFOp::create(
              b, l, args[1], arith::ExtFOp::create(b, l, f64, args[0]));
        });
    Value means = createElementwise(
        rewriter, loc, sums, sums,
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          return arith::DivFOp::create(
              b, l, args[0],
              arith::ConstantOp::create(b, l, b.getF64FloatAttr(count)));
        });
    Value squares = createGeneric(
        rewriter, loc, ValueRange{x, means},
        staticFilled(rewriter, loc, statsType, 0.0), {all, group, group},
        reduce, [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value d = arith::SubFOp::create(
              b, l, arith::ExtFOp::create(b, l, f64, args[0]), args[1]);
          return arith::AddFOp::create(b, l, args[2],
                                       arith::MulFOp::create(b, l, d, d));
        });
    double epsilon = op.getEpsilon().convertToDouble();
    // mean and 1 / sqrt(var + eps) per group, as f32.
    auto f32Stats = RankedTensorType::get({images, groups}, f32);
    Value scales = createElementwise(
        rewriter, loc, f32Stats, squares, squares,
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value variance = arith::DivFOp::create(
              b, l, args[0],
              arith::ConstantOp::create(b, l, b.getF64FloatAttr(count)));
          Value root = math::SqrtOp::create(
              b, l,
              arith::AddFOp::create(
                  b, l, variance,
                  arith::ConstantOp::create(b, l, b.getF64FloatAttr(epsilon))));
          return arith::TruncFOp::create(
              b, l, f32,
              arith::DivFOp::create(
                  b, l, arith::ConstantOp::create(b, l, b.getF64FloatAttr(1)),
                  root));
        });
    Value meansF32 = createElementwise(
        rewriter, loc, f32Stats, means, means,
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          return arith::TruncFOp::create(b, l, f32, args[0]);
        });
    bool silu = op.getSilu();
    Value normed = createGeneric(
        rewriter, loc, ValueRange{x, meansF32, scales, gamma, beta},
        tensor::EmptyOp::create(rewriter, loc, groupedType.getShape(), f32),
        {all, group, group, channel, channel, all},
        {IteratorType::parallel, IteratorType::parallel,
         IteratorType::parallel, IteratorType::parallel},
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value v = arith::MulFOp::create(
              b, l, arith::SubFOp::create(b, l, args[0], args[1]), args[2]);
          v = arith::AddFOp::create(b, l, arith::MulFOp::create(b, l, v, args[3]),
                                    args[4]);
          if (!silu)
            return v;
          // x·σ(x) = x / (1 + e^-x).
          Value one = f32Constant(b, l, 1.0);
          Value e = math::ExpOp::create(b, l, arith::NegFOp::create(b, l, v));
          return arith::DivFOp::create(b, l, v,
                                       arith::AddFOp::create(b, l, one, e));
        });
    Value back = tensor::CollapseShapeOp::create(
        rewriter, loc, flatType, normed,
        ArrayRef<ReassociationIndices>{{0}, {1}, {2, 3}});
    if (rank != 4)
      back = tensor::CollapseShapeOp::create(
          rewriter, loc, RankedTensorType::get({positions, channels}, f32),
          back, ArrayRef<ReassociationIndices>{{0, 1}, {2}});
    rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(op, type, back,
                                                       toGrouped);
    return success();
  }
};

struct LowerUpsampleNearest : OpConversionPattern<UpsampleNearestOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(UpsampleNearestOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    int64_t factor = mapExtents(op.getType())[1] /
                     mapExtents(op.getInput().getType())[1];
    bool batched = op.getType().getRank() == 4;
    Value input = adaptor.getInput();
    rewriter.replaceOp(
        op, generateElements(
                rewriter, op.getLoc(), op.getType(),
                [&](OpBuilder &b, Location l, ArrayRef<Value> at) -> Value {
                  Value f = indexConstant(b, l, factor);
                  // (n,) y, x, c: the image and channel as they are.
                  SmallVector<Value> source(at.begin(), at.end());
                  size_t y = batched ? 1 : 0;
                  source[y] = arith::DivUIOp::create(b, l, at[y], f);
                  source[y + 1] = arith::DivUIOp::create(b, l, at[y + 1], f);
                  return tensor::ExtractOp::create(b, l, input, source);
                }));
    return success();
  }
};

struct LowerTimestepEmbedding : OpConversionPattern<TimestepEmbeddingOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(TimestepEmbeddingOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    int64_t half = type.getDimSize(1) / 2;
    // diffusers' get_timestep_embedding in torch's f32 steps:
    // exp((-ln(max_period) · i) / (half - shift)).
    float logPeriod = float(-std::log(double(op.getMaxPeriod().convertToFloat())));
    float divisor = float(double(half) - op.getDownscaleFreqShift().convertToDouble());
    SmallVector<float> frequencies;
    for (int64_t i = 0; i < half; ++i)
      frequencies.push_back(
          float(std::exp(double((logPeriod * float(i)) / divisor))));
    auto tableType = RankedTensorType::get({half}, rewriter.getF32Type());
    Value table = arith::ConstantOp::create(
        rewriter, loc,
        DenseElementsAttr::get(tableType, ArrayRef<float>(frequencies)));
    float scale = op.getScale().convertToFloat();
    bool cosFirst = op.getFlipSinToCos();
    Value timesteps = adaptor.getTimesteps();
    Type f32 = rewriter.getF32Type(), f64 = rewriter.getF64Type();
    rewriter.replaceOp(
        op, generateElements(
                rewriter, loc, type,
                [&](OpBuilder &b, Location l, ArrayRef<Value> at) -> Value {
                  Value h = indexConstant(b, l, half);
                  Value i = arith::RemUIOp::create(b, l, at[1], h);
                  Value second = arith::CmpIOp::create(
                      b, l, arith::CmpIPredicate::uge, at[1], h);
                  Value t = tensor::ExtractOp::create(b, l, timesteps,
                                                      ValueRange{at[0]});
                  Value frequency =
                      tensor::ExtractOp::create(b, l, table, ValueRange{i});
                  Value angle = arith::MulFOp::create(b, l, t, frequency);
                  if (scale != 1.0f)
                    angle = arith::MulFOp::create(b, l, f32Constant(b, l, scale),
                                                  angle);
                  Value wide = arith::ExtFOp::create(b, l, f64, angle);
                  Value sin = math::SinOp::create(b, l, wide);
                  Value cos = math::CosOp::create(b, l, wide);
                  // sin first, cos second; flip_sin_to_cos swaps them.
                  Value value = cosFirst
                                    ? arith::SelectOp::create(b, l, second, sin, cos)
                                    : arith::SelectOp::create(b, l, second, cos, sin);
                  return arith::TruncFOp::create(b, l, f32, value);
                }));
    return success();
  }
};

} // namespace

void mlir::tfm::populateLowerImagePatterns(RewritePatternSet &patterns) {
  patterns.add<LowerImageWindows, LowerConv2d, LowerGroupNorm,
               LowerUpsampleNearest, LowerTimestepEmbedding>(
      patterns.getContext());
}
