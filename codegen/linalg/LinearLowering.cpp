//===- LinearLowering.cpp - what every lowering of tfm.linear shares ----===//

#include "codegen/linalg/LinearLowering.h"
#include "codegen/linalg/LinalgBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;

using utils::IteratorType;

Value mlir::tfm::collapseToRows(OpBuilder &b, Location loc, Value v) {
  auto type = cast<RankedTensorType>(v.getType());
  if (type.getRank() == 2)
    return v;
  SmallVector<ReassociationIndices> groups = {{0}, {1, 2}};
  return tensor::CollapseShapeOp::create(b, loc, v, groups);
}

Value mlir::tfm::applyActivation(OpBuilder &b, Location loc,
                                 ActivationKind kind, Value x) {
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
  case ActivationKind::tanh:
    return math::TanhOp::create(b, loc, x);
  case ActivationKind::silu:
  case ActivationKind::sigmoid: {
    // σ(x) = 1 / (1 + e^-x); x·σ(x) = x / (1 + e^-x)
    Value negX = arith::NegFOp::create(b, loc, x);
    Value denom =
        arith::AddFOp::create(b, loc, one, math::ExpOp::create(b, loc, negX));
    return arith::DivFOp::create(b, loc, kind == ActivationKind::silu ? x : one,
                                 denom);
  }
  case ActivationKind::quick_gelu: {
    // x·σ(1.702·x) = x / (1 + e^(-1.702·x)), OpenAI CLIP's approximation
    Value scaled =
        arith::MulFOp::create(b, loc, f32Constant(b, loc, -1.702), x);
    Value denom =
        arith::AddFOp::create(b, loc, one, math::ExpOp::create(b, loc, scaled));
    return arith::DivFOp::create(b, loc, x, denom);
  }
  }
  llvm_unreachable("unknown activation kind");
}

namespace {

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

} // namespace

RankedTensorType mlir::tfm::linearProductType(LinearOp op) {
  int64_t out = op.getOutFeatures();
  int64_t columns = op.getGated() ? 2 * out : out;
  return RankedTensorType::get({op.getType().getDimSize(0), columns},
                               op.getType().getElementType());
}

void mlir::tfm::replaceLinear(ConversionPatternRewriter &rewriter, LinearOp op,
                              Value product, Value bias) {
  Location loc = op.getLoc();
  Value result = product;
  if (std::optional<ActivationKind> activation = op.getActivation())
    result = applyEpilogue(rewriter, loc, result, bias, *activation,
                           op.getGated(), op.getOutFeatures());
  if (op.getType().getRank() == 3) {
    SmallVector<ReassociationIndices> groups = {{0}, {1, 2}};
    ArrayRef<int64_t> shape = op.getType().getShape();
    SmallVector<OpFoldResult> expandedSizes = {
        tensor::getMixedSize(rewriter, loc, product, 0),
        rewriter.getIndexAttr(shape[1]), rewriter.getIndexAttr(shape[2])};
    result = tensor::ExpandShapeOp::create(rewriter, loc, op.getType(), result,
                                           groups, expandedSizes);
  }
  rewriter.replaceOp(op, result);
}
