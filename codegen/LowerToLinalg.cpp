//===- LowerToLinalg.cpp - tfm ops to linalg on tensors -----------------===//
//
// The tfm-lower-to-linalg pass: the weight blob layout, the weights argument,
// and one conversion pattern per tfm op (attention lives in
// LowerAttention.cpp). Codegen handles f32 only: the frontend converts F16
// and BF16 checkpoints at compile time.
//
//===----------------------------------------------------------------------===//

#include "codegen/LinalgBuilders.h"
#include "codegen/Passes.h"
#include "codegen/RuntimeKernels.h"
#include "codegen/WeightLayout.h"
#include "ir/TfmOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_LOWERTOLINALGPASS
#include "codegen/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

using utils::IteratorType;

Value indexToF32(OpBuilder &b, Location loc, Value index) {
  Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
  return arith::SIToFPOp::create(b, loc, b.getF32Type(), i64);
}

//===----------------------------------------------------------------------===//
// Token-level ops
//===----------------------------------------------------------------------===//

struct LowerPositionIds : OpConversionPattern<PositionIdsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(PositionIdsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value offset = adaptor.getOffset();
    if (!offset)
      offset = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Type elementType = op.getType().getElementType();
    Value result = createElementwise(
        rewriter, loc, adaptor.getTokens(), {},
        [&](OpBuilder &b, Location l, ValueRange) -> Value {
          Value i = linalg::IndexOp::create(b, l, 0);
          Value pos = arith::AddIOp::create(b, l, i, offset);
          return arith::IndexCastOp::create(b, l, elementType, pos);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct LowerEmbedding : OpConversionPattern<EmbeddingOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(EmbeddingOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value table = adaptor.getTable();
    SmallVector<OpFoldResult> sizes = {
        tensor::getMixedSize(rewriter, loc, adaptor.getIds(), 0),
        tensor::getMixedSize(rewriter, loc, table, 1)};
    Value init = createEmpty(rewriter, loc, op.getType(), sizes);
    MLIRContext *ctx = op.getContext();
    AffineMap rows = AffineMap::get(2, 0, getAffineDimExpr(0, ctx));
    Value result = createGeneric(
        rewriter, loc, adaptor.getIds(), init,
        {rows, rewriter.getMultiDimIdentityMap(2)},
        {IteratorType::parallel, IteratorType::parallel},
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          // Ids were range-checked by the runtime before the call.
          Value row = arith::IndexCastOp::create(b, l, b.getIndexType(),
                                                 args[0]);
          Value col = linalg::IndexOp::create(b, l, 1);
          Value value =
              tensor::ExtractOp::create(b, l, table, ValueRange{row, col});
          if (std::optional<APFloat> scale = op.getScale())
            value = arith::MulFOp::create(
                b, l, value,
                arith::ConstantOp::create(
                    b, l, b.getFloatAttr(b.getF32Type(), *scale)));
          return value;
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Linear
//===----------------------------------------------------------------------===//

/// Collapses `[seq, heads, head_dim]` to `[seq, heads*head_dim]`; rank-2
/// values pass through.
Value collapseToRows(OpBuilder &b, Location loc, Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getRank() == 2)
    return v;
  SmallVector<ReassociationIndices> groups = {{0}, {1, 2}};
  return tensor::CollapseShapeOp::create(b, loc, v, groups);
}

Value applyActivation(OpBuilder &b, Location loc, ActivationKind kind,
                      Value x);

/// The GEMM epilogue over [rows, out]: act(c + bias), or with `gated`
/// act(c[:, j]) * c[:, out + j], one pass over the product.
Value applyEpilogue(OpBuilder &b, Location loc, Value product, Value bias,
                    ActivationKind kind, bool gated, int64_t out) {
  MLIRContext *ctx = b.getContext();
  AffineMap identity = b.getMultiDimIdentityMap(2);
  OpFoldResult rows = tensor::getMixedSize(b, loc, product, 0);
  auto type = RankedTensorType::get(
      {cast<RankedTensorType>(product.getType()).getDimSize(0), out},
      b.getF32Type());
  SmallVector<Value> inputs;
  SmallVector<AffineMap> maps;
  if (gated) {
    for (int64_t half : {int64_t(0), out}) {
      SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0),
                                           b.getIndexAttr(half)};
      SmallVector<OpFoldResult> sizes = {rows, b.getIndexAttr(out)};
      SmallVector<OpFoldResult> strides(2, b.getIndexAttr(1));
      inputs.push_back(tensor::ExtractSliceOp::create(b, loc, type, product,
                                                      offsets, sizes, strides));
      maps.push_back(identity);
    }
  } else {
    inputs.push_back(product);
    maps.push_back(identity);
    if (bias) {
      inputs.push_back(bias);
      maps.push_back(AffineMap::get(2, 0, getAffineDimExpr(1, ctx)));
    }
  }
  maps.push_back(identity);
  Value init = createEmpty(b, loc, type, {rows, b.getIndexAttr(out)});
  return createGeneric(
      b, loc, inputs, init, maps,
      {IteratorType::parallel, IteratorType::parallel},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value x = args[0];
        if (!gated && bias)
          x = arith::AddFOp::create(nb, l, x, args[1]);
        Value activated = applyActivation(nb, l, kind, x);
        if (gated)
          return arith::MulFOp::create(nb, l, activated, args[1]);
        return activated;
      });
}

/// x·Wᵀ (+ bias) over a weight stored as panels: a call of the runtime's
/// GEMM kernel, which writes every output (bias included) into a fresh
/// buffer.
Value panelProduct(ConversionPatternRewriter &rewriter, Location loc,
                   Value input, Value panels, Value bias,
                   RankedTensorType rowsType) {
  ModuleOp module =
      rewriter.getInsertionBlock()->getParentOp()->getParentOfType<ModuleOp>();
  SmallVector<Value> operands = {kernelInput(rewriter, loc, input),
                                 kernelInput(rewriter, loc, panels)};
  if (bias)
    operands.push_back(kernelInput(rewriter, loc, bias));
  SmallVector<Value> dynamicSizes;
  if (rowsType.isDynamicDim(0))
    dynamicSizes.push_back(tensor::DimOp::create(rewriter, loc, input, 0));
  auto [out, outOperand] = kernelOutput(rewriter, loc, rowsType, dynamicSizes);
  operands.push_back(outOperand);
  func::FuncOp kernel = lookupOrDeclareRuntimeKernel(
      rewriter, module,
      bias ? "tfm_rt_linear_panels_bias" : "tfm_rt_linear_panels",
      ValueRange(operands).getTypes());
  func::CallOp::create(rewriter, loc, kernel, operands);
  return bufferization::ToTensorOp::create(rewriter, loc, rowsType, out,
                                           /*restrict=*/true,
                                           /*writable=*/true);
}

struct LowerLinear : OpConversionPattern<LinearOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Value input = collapseToRows(rewriter, loc, adaptor.getInput());
    int64_t out = op.getOutFeatures();
    // A gated projection computes gate and up side by side.
    int64_t columns = op.getGated() ? 2 * out : out;
    auto rowsType = RankedTensorType::get(
        {op.getType().getDimSize(0), columns}, op.getType().getElementType());
    SmallVector<OpFoldResult> sizes = {
        tensor::getMixedSize(rewriter, loc, input, 0),
        rewriter.getIndexAttr(columns)};
    std::optional<ActivationKind> activation = op.getActivation();
    Value bias = adaptor.getBias();

    Value result;
    if (Operation *unpack = adaptor.getWeight().getDefiningOp();
        isPanelUnpack(unpack)) {
      // The kernel adds the bias; the activation stays an epilogue.
      result = panelProduct(rewriter, loc, input, unpack->getOperand(0), bias,
                            rowsType);
      bias = nullptr;
    } else {
      // The accumulator starts as the broadcast bias, or zero; with an
      // activation the bias joins it in the epilogue instead.
      Value init;
      if (bias && !activation) {
        AffineMap columns = AffineMap::get(2, 0, getAffineDimExpr(1, ctx));
        init = createGeneric(
            rewriter, loc, bias, createEmpty(rewriter, loc, rowsType, sizes),
            {columns, rewriter.getMultiDimIdentityMap(2)},
            {IteratorType::parallel, IteratorType::parallel},
            [](OpBuilder &, Location, ValueRange args) { return args[0]; });
      } else {
        init = createFilled(rewriter, loc, rowsType, sizes, 0.0);
      }
      // C[m, n] += A[m, k] * W[n, k]: the checkpoint's [out, in] weight is
      // read transposed, never copied.
      AffineExpr m = getAffineDimExpr(0, ctx), n = getAffineDimExpr(1, ctx),
                 k = getAffineDimExpr(2, ctx);
      auto maps = rewriter.getAffineMapArrayAttr(
          {AffineMap::get(3, 0, {m, k}, ctx),
           AffineMap::get(3, 0, {n, k}, ctx),
           AffineMap::get(3, 0, {m, n}, ctx)});
      result = linalg::MatmulOp::create(
                   rewriter, loc, TypeRange{rowsType},
                   ValueRange{input, adaptor.getWeight()}, ValueRange{init},
                   {rewriter.getNamedAttr("indexing_maps", maps)})
                   .getResult(0);
    }
    if (activation)
      result = applyEpilogue(rewriter, loc, result, bias, *activation,
                             op.getGated(), out);

    if (op.getType().getRank() == 3) {
      SmallVector<ReassociationIndices> groups = {{0}, {1, 2}};
      ArrayRef<int64_t> shape = op.getType().getShape();
      SmallVector<OpFoldResult> expandedSizes = {
          sizes[0], rewriter.getIndexAttr(shape[1]),
          rewriter.getIndexAttr(shape[2])};
      result = tensor::ExpandShapeOp::create(rewriter, loc, op.getType(),
                                             result, groups, expandedSizes);
    }
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// Elementwise ops
//===----------------------------------------------------------------------===//

Value applyActivation(OpBuilder &b, Location loc, ActivationKind kind,
                      Value x) {
  auto half = f32Constant(b, loc, 0.5), one = f32Constant(b, loc, 1.0);
  switch (kind) {
  case ActivationKind::gelu: {
    // 0.5·x·(1 + erf(x/√2))
    Value scaled = arith::MulFOp::create(b, loc, x,
                                         f32Constant(b, loc, M_SQRT1_2));
    Value erf = math::ErfOp::create(b, loc, scaled);
    Value sum = arith::AddFOp::create(b, loc, one, erf);
    return arith::MulFOp::create(
        b, loc, arith::MulFOp::create(b, loc, half, x), sum);
  }
  case ActivationKind::gelu_tanh: {
    // 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³)))
    Value x3 = arith::MulFOp::create(b, loc, x,
                                     arith::MulFOp::create(b, loc, x, x));
    Value inner = arith::AddFOp::create(
        b, loc, x,
        arith::MulFOp::create(b, loc, f32Constant(b, loc, 0.044715), x3));
    Value tanh = math::TanhOp::create(
        b, loc,
        arith::MulFOp::create(b, loc,
                              f32Constant(b, loc, 0.7978845608028654), inner));
    Value sum = arith::AddFOp::create(b, loc, one, tanh);
    return arith::MulFOp::create(
        b, loc, arith::MulFOp::create(b, loc, half, x), sum);
  }
  case ActivationKind::relu:
    return arith::MaximumFOp::create(b, loc, x, f32Constant(b, loc, 0.0));
  case ActivationKind::silu: {
    // x·σ(x) = x / (1 + e^-x)
    Value negX = arith::NegFOp::create(b, loc, x);
    Value denom =
        arith::AddFOp::create(b, loc, one, math::ExpOp::create(b, loc, negX));
    return arith::DivFOp::create(b, loc, x, denom);
  }
  }
  llvm_unreachable("unknown activation kind");
}

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

//===----------------------------------------------------------------------===//
// Norms
//===----------------------------------------------------------------------===//

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
    rewriter.replaceOp(op, rmsNormRows(rewriter, loc, x,
                                       sumOfSquares(rewriter, loc, x),
                                       adaptor.getGamma(),
                                       op.getEpsilon().convertToDouble()));
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

//===----------------------------------------------------------------------===//
// Positions
//===----------------------------------------------------------------------===//

/// base^(-2·pair/dim): the frequency of dimension pair `pair`, computed as
/// 1 / base^(2·pair/dim) like llama2.c and Hugging Face do.
Value inverseFrequency(OpBuilder &b, Location loc, Value pair, int64_t dim,
                       double base) {
  // Each operand built on its own line: argument evaluation order is
  // unspecified in C++, and the IR must not depend on the host compiler.
  Value pairF = indexToF32(b, loc, pair);
  Value two = f32Constant(b, loc, 2.0);
  Value twice = arith::MulFOp::create(b, loc, two, pairF);
  Value dimF = f32Constant(b, loc, dim);
  Value exponent = arith::DivFOp::create(b, loc, twice, dimF);
  Value baseF = f32Constant(b, loc, base);
  Value power = math::PowFOp::create(b, loc, baseF, exponent);
  Value one = f32Constant(b, loc, 1.0);
  return arith::DivFOp::create(b, loc, one, power);
}

/// cos (or sin) of positions[i] · theta^(-2j/headDim) as a [s, headDim/2]
/// table: computed once per call instead of once per element of every
/// head, and shared by Q and K and, once CSE merges the identical tables,
/// by every layer.
/// `rotaryDims`: the rotated dimensions of a head (the table has half as
/// many columns); `given`: the op's explicit inverse frequencies, if any.
Value ropeTable(OpBuilder &b, Location loc, Value positions, int64_t rotaryDims,
                double theta, std::optional<ArrayRef<float>> given,
                bool sine) {
  MLIRContext *ctx = b.getContext();
  int64_t half = rotaryDims / 2;
  auto frequencyType = RankedTensorType::get({half}, b.getF32Type());
  Value frequencies =
      given ? Value(arith::ConstantOp::create(
                  b, loc, DenseElementsAttr::get(frequencyType, *given)))
            : createGeneric(
                  b, loc, ValueRange{},
                  createEmpty(b, loc, frequencyType, {b.getIndexAttr(half)}),
                  {b.getMultiDimIdentityMap(1)}, {IteratorType::parallel},
                  [&](OpBuilder &nb, Location l, ValueRange) -> Value {
                    Value j = linalg::IndexOp::create(nb, l, 0);
                    return inverseFrequency(nb, l, j, rotaryDims, theta);
                  });
  auto positionsType = cast<RankedTensorType>(positions.getType());
  auto tableType = RankedTensorType::get({positionsType.getDimSize(0), half},
                                         b.getF32Type());
  SmallVector<OpFoldResult> sizes = {tensor::getMixedSize(b, loc, positions, 0),
                                     b.getIndexAttr(half)};
  return createGeneric(
      b, loc, ValueRange{positions, frequencies},
      createEmpty(b, loc, tableType, sizes),
      {AffineMap::get(2, 0, getAffineDimExpr(0, ctx)),
       AffineMap::get(2, 0, getAffineDimExpr(1, ctx)),
       b.getMultiDimIdentityMap(2)},
      {IteratorType::parallel, IteratorType::parallel},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value position = arith::SIToFPOp::create(nb, l, nb.getF32Type(),
                                                 args[0]);
        Value angle = arith::MulFOp::create(nb, l, position, args[1]);
        if (sine)
          return math::SinOp::create(nb, l, angle);
        return math::CosOp::create(nb, l, angle);
      });
}

struct LowerRope : OpConversionPattern<RopeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RopeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Value x = adaptor.getInput();
    int64_t headDim = op.getType().getDimSize(2);
    int64_t rotary = op.getRotaryDims();
    double theta = op.getTheta().convertToDouble();
    bool interleaved = op.getStyle() == RopeStyle::interleaved;
    Value cosTable = ropeTable(rewriter, loc, adaptor.getPositions(), rotary,
                               theta, op.getFrequencies(), /*sine=*/false);
    Value sinTable = ropeTable(rewriter, loc, adaptor.getPositions(), rotary,
                               theta, op.getFrequencies(), /*sine=*/true);
    // Element d < rotary of a head belongs to pair d / 2 (interleaved) or
    // d mod rotary/2 (halves). Dimensions past `rotary` pass through; the
    // map keeps their (unused) table index in bounds.
    AffineExpr d = getAffineDimExpr(2, ctx);
    AffineExpr rotated = rotary < headDim ? d % rotary : d;
    AffineExpr pairOf = interleaved ? rotated.floorDiv(2) : d % (rotary / 2);
    AffineMap tableMap =
        AffineMap::get(3, 0, {getAffineDimExpr(0, ctx), pairOf}, ctx);
    AffineMap identity = rewriter.getMultiDimIdentityMap(3);
    Value init = createEmpty(rewriter, loc, op.getType(),
                             tensor::getMixedSizes(rewriter, loc, x));
    Value result = createGeneric(
        rewriter, loc, ValueRange{x, cosTable, sinTable}, init,
        {identity, tableMap, tableMap, identity},
        SmallVector<IteratorType>(3, IteratorType::parallel),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value i = linalg::IndexOp::create(b, l, 0);
          Value h = linalg::IndexOp::create(b, l, 1);
          Value d = linalg::IndexOp::create(b, l, 2);
          // Whether `d` is its pair's second element, and where its partner
          // sits.
          Value isSecond, partner;
          if (interleaved) {
            Value two = arith::ConstantIndexOp::create(b, l, 2);
            Value parity = arith::RemUIOp::create(b, l, d, two);
            isSecond = arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::ne, parity,
                arith::ConstantIndexOp::create(b, l, 0));
            Value one = arith::ConstantIndexOp::create(b, l, 1);
            partner = arith::XOrIOp::create(b, l, d, one);
          } else {
            Value half = arith::ConstantIndexOp::create(b, l, rotary / 2);
            isSecond = arith::CmpIOp::create(b, l, arith::CmpIPredicate::uge,
                                             d, half);
            Value below = arith::SubIOp::create(b, l, d, half);
            Value above = arith::AddIOp::create(b, l, d, half);
            partner = arith::SelectOp::create(b, l, isSecond, below, above);
          }
          Value passThrough;
          if (rotary < headDim) {
            // Past the rotated dimensions: no partner (read itself).
            passThrough = arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::uge, d,
                arith::ConstantIndexOp::create(b, l, rotary));
            partner = arith::SelectOp::create(b, l, passThrough, d, partner);
          }
          Value other =
              tensor::ExtractOp::create(b, l, x, ValueRange{i, h, partner});
          // First element: x·cos − partner·sin; second: x·cos + partner·sin.
          Value xc = arith::MulFOp::create(b, l, args[0], args[1]);
          Value ps = arith::MulFOp::create(b, l, other, args[2]);
          Value second = arith::AddFOp::create(b, l, xc, ps);
          Value first = arith::SubFOp::create(b, l, xc, ps);
          Value rotated =
              arith::SelectOp::create(b, l, isSecond, second, first);
          if (!passThrough)
            return rotated;
          return arith::SelectOp::create(b, l, passThrough, args[0], rotated);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct LowerSinusoidalPosition : OpConversionPattern<SinusoidalPositionOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SinusoidalPositionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    int64_t dim = op.getType().getDimSize(1);
    double base = op.getBase().convertToDouble();
    bool interleaved = op.getLayout() == SinusoidLayout::interleaved;
    SmallVector<OpFoldResult> sizes = {
        tensor::getMixedSize(rewriter, loc, adaptor.getPositions(), 0),
        rewriter.getIndexAttr(dim)};
    Value init = createEmpty(rewriter, loc, op.getType(), sizes);
    AffineMap rows = AffineMap::get(2, 0, getAffineDimExpr(0, ctx));
    Value result = createGeneric(
        rewriter, loc, adaptor.getPositions(), init,
        {rows, rewriter.getMultiDimIdentityMap(2)},
        {IteratorType::parallel, IteratorType::parallel},
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value j = linalg::IndexOp::create(b, l, 1);
          Value pair, isCos;
          if (interleaved) {
            Value two = arith::ConstantIndexOp::create(b, l, 2);
            pair = arith::DivUIOp::create(b, l, j, two);
            isCos = arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::ne,
                arith::RemUIOp::create(b, l, j, two),
                arith::ConstantIndexOp::create(b, l, 0));
          } else {
            Value half = arith::ConstantIndexOp::create(b, l, dim / 2);
            pair = arith::RemUIOp::create(b, l, j, half);
            isCos =
                arith::CmpIOp::create(b, l, arith::CmpIPredicate::uge, j, half);
          }
          Value position = arith::SIToFPOp::create(b, l, b.getF32Type(),
                                                   args[0]);
          Value angle = arith::MulFOp::create(
              b, l, position, inverseFrequency(b, l, pair, dim, base));
          Value cos = math::CosOp::create(b, l, angle);
          Value sin = math::SinOp::create(b, l, angle);
          return arith::SelectOp::create(b, l, isCos, cos, sin);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

//===----------------------------------------------------------------------===//
// KV cache
//===----------------------------------------------------------------------===//

/// Offsets, sizes and strides of one layer's K (kind 0) or V (kind 1) plane
/// of the cache [layers, 2, capacity, kv_heads, head_dim], positions
/// [position, position + length).
struct CachePlane {
  SmallVector<OpFoldResult> offsets, sizes, strides;
};

CachePlane cachePlane(OpBuilder &b, RankedTensorType cacheType, int64_t layer,
                      int64_t kind, OpFoldResult position,
                      OpFoldResult length) {
  ArrayRef<int64_t> shape = cacheType.getShape();
  CachePlane plane;
  plane.offsets = {b.getIndexAttr(layer), b.getIndexAttr(kind), position,
                   b.getIndexAttr(0), b.getIndexAttr(0)};
  plane.sizes = {b.getIndexAttr(1), b.getIndexAttr(1), length,
                 b.getIndexAttr(shape[3]), b.getIndexAttr(shape[4])};
  plane.strides.assign(5, b.getIndexAttr(1));
  return plane;
}

struct LowerKVCacheAppend : OpConversionPattern<KVCacheAppendOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(KVCacheAppendOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value cache = adaptor.getCache();
    OpFoldResult length =
        tensor::getMixedSize(rewriter, loc, adaptor.getKey(), 0);
    Value planes[] = {adaptor.getKey(), adaptor.getValue()};
    for (auto [kind, rows] : llvm::enumerate(planes)) {
      CachePlane plane = cachePlane(rewriter, op.getType(), op.getLayer(),
                                    kind, adaptor.getPosition(), length);
      // Rank-reducing: [s, kv_heads, head_dim] into [1, 1, s, ...].
      cache = tensor::InsertSliceOp::create(rewriter, loc, rows, cache,
                                            plane.offsets, plane.sizes,
                                            plane.strides);
    }
    rewriter.replaceOp(op, cache);
    return success();
  }
};

struct LowerKVCacheRead : OpConversionPattern<KVCacheReadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(KVCacheReadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto cacheType = cast<RankedTensorType>(op.getCache().getType());
    SmallVector<Value> planes;
    for (auto [kind, type] : llvm::enumerate(op.getResultTypes())) {
      CachePlane plane =
          cachePlane(rewriter, cacheType, op.getLayer(), kind,
                     rewriter.getIndexAttr(0), adaptor.getLength());
      planes.push_back(tensor::ExtractSliceOp::create(
          rewriter, loc, cast<RankedTensorType>(type), adaptor.getCache(),
          plane.offsets, plane.sizes, plane.strides));
    }
    rewriter.replaceOp(op, planes);
    return success();
  }
};

/// The entry points' descriptions (tfm.input, tfm.cache, tfm.output) have
/// been read by the packager before lowering; of them, lowered code keeps
/// only that a cache argument is state the runtime owns: writable, so that
/// bufferization updates it in place.
void lowerArgumentDescriptions(func::FuncOp func) {
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    if (func.getArgAttr(i, kCacheArgAttrName))
      func.setArgAttr(i, bufferization::BufferizationDialect::kWritableAttrName,
                      BoolAttr::get(func.getContext(), true));
    func.removeArgAttr(i, kCacheArgAttrName);
    func.removeArgAttr(i, kInputArgAttrName);
  }
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
    func.removeResultAttr(i, StringAttr::get(func.getContext(),
                                             kOutputResultAttrName));
}

struct LowerToLinalgPass
    : mlir::tfm::impl::LowerToLinalgPassBase<LowerToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    lowerWeights(module, layOutWeights(module, packWeights));
    for (auto func : module.getOps<func::FuncOp>())
      lowerArgumentDescriptions(func);

    ConversionTarget target(getContext());
    target.addIllegalDialect<TfmDialect>();
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect,
                           math::MathDialect, memref::MemRefDialect,
                           tensor::TensorDialect,
                           bufferization::BufferizationDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    // Codegen is f32-only for now; say so instead of miscompiling.
    WalkResult walk = module.walk([&](Operation *op) {
      if (!isa<TfmDialect>(op->getDialect()))
        return WalkResult::advance();
      for (Type t : op->getResultTypes()) {
        auto tensor = dyn_cast<RankedTensorType>(t);
        if (tensor && isa<FloatType>(tensor.getElementType()) &&
            !tensor.getElementType().isF32()) {
          op->emitOpError() << "codegen supports f32 tensors only, got "
                            << tensor.getElementType();
          return WalkResult::interrupt();
        }
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();

    RewritePatternSet patterns(&getContext());
    populateLowerToLinalgPatterns(patterns, fusedAttention);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    // The panels' unpacks were read through by the linear lowering; none
    // may reach bufferization.
    module.walk([](linalg::UnPackOp unpack) {
      if (!isPanelUnpack(unpack) || !unpack->use_empty())
        return;
      Operation *dest = unpack.getDest().getDefiningOp();
      unpack->erase();
      if (dest && dest->use_empty())
        dest->erase();
    });
  }
};

} // namespace

void mlir::tfm::populateLowerToLinalgPatterns(RewritePatternSet &patterns,
                                              bool fusedAttention) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<LowerPositionIds, LowerEmbedding, LowerLinear, LowerActivation,
               LowerBinary<AddOp, arith::AddFOp>,
               LowerBinary<MulOp, arith::MulFOp>, LowerRmsNorm, LowerLayerNorm,
               LowerAddRmsNorm, LowerAddLayerNorm, LowerConcat,
               LowerRope, LowerSinusoidalPosition, LowerKVCacheAppend,
               LowerKVCacheRead>(ctx);
  populateLowerAttentionPatterns(patterns, fusedAttention);
}
