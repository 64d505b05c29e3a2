//===- AttentionCall.cpp - tfm.attention as a call of a kernel -----------===//
//
// See AttentionCall.h, and CallAttentionKernelPass in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "codegen/linalg/AttentionCall.h"
#include "codegen/linalg/KernelCalls.h"
#include "codegen/linalg/Passes.h"
#include "codegen/linalg/RelativePositionBias.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_CALLATTENTIONKERNELPASS
#include "codegen/linalg/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// The widening of stored rows that `rows` is: tfm.dequantize_rows of them,
/// or (`columns` set) a slice of its leading columns where each element is
/// stored alone (bf16, f16; an int8 row's scale ends the row): a latent
/// cache's values, read from the rows of its keys. Null: neither.
DequantizeRowsOp widenedRows(Value rows,
                             tensor::ExtractSliceOp *columns = nullptr) {
  if (auto widen = rows.getDefiningOp<DequantizeRowsOp>())
    return widen;
  auto slice = rows.getDefiningOp<tensor::ExtractSliceOp>();
  auto widen = slice ? slice.getSource().getDefiningOp<DequantizeRowsOp>()
                     : DequantizeRowsOp();
  if (!widen || widen.getInput().getType().getElementType().isInteger(8) ||
      !slice.hasUnitStride() ||
      !llvm::all_of(slice.getMixedOffsets(),
                    [](OpFoldResult o) { return isConstantIntValue(o, 0); }))
    return {};
  if (columns)
    *columns = slice;
  return widen;
}

/// Whether `attention` reads its keys and values as a narrow cache stores
/// them (int8 rows, bf16, f16: tfm.dequantize_rows of both, or a latent
/// cache's values as leading columns of the keys' rows).
bool readsStoredRows(AttentionOp attention) {
  return widenedRows(attention.getKey()) && widenedRows(attention.getValue());
}

/// The stored rows the kernel reads for `rows`, which widenedRows matched:
/// the widened input, or the same leading columns of it.
Value storedRowsFor(OpBuilder &b, Location loc, Value rows) {
  tensor::ExtractSliceOp columns;
  Value stored = widenedRows(rows, &columns).getInput();
  if (!columns)
    return stored;
  auto type =
      cast<RankedTensorType>(columns.getType())
          .clone(cast<RankedTensorType>(stored.getType()).getElementType());
  return tensor::ExtractSliceOp::create(
      b, loc, type, stored, columns.getMixedOffsets(), columns.getMixedSizes(),
      columns.getMixedStrides());
}

/// The suffix of the attention kernel's variant that reads `rows` as
/// stored: _rows_i8, _rows_bf16 or _rows_f16.
std::string storedRowsSuffix(Value rows) {
  Type element = cast<RankedTensorType>(rows.getType()).getElementType();
  return element.isInteger(8) ? "_rows_i8"
         : element.isBF16()   ? "_rows_bf16"
                              : "_rows_f16";
}

/// tfm.attention without a [heads, s, t] bias: the runtime's flash-style
/// kernel (runtime/kernels/kernels_attention.c), tfm_rt_attention(q, k, v,
/// sinks, out, scale, causal, window, softcap), over packed sequences
/// tfm_rt_attention_packed(q, k, v, lengths, sinks, out, ...), or with a
/// relative_bias tfm_rt_attention_biased(q, k, v, distance bias, sinks,
/// out, ...), the terms by distance built here; softcap 0 where the op has
/// none, sinks an empty [0]. Keys and
/// values read from a narrow cache (tfm.dequantize_rows of both) go to the
/// kernels' _rows_i8, _rows_bf16 or _rows_f16 variants as stored: the
/// kernel widens them. With `bf16Dot`, plain and packed f32 attention
/// goes to the _bf16_dot twins.
struct AttentionToKernelCall : OpConversionPattern<AttentionOp> {
  AttentionToKernelCall(MLIRContext *context, bool bf16Dot)
      : OpConversionPattern(context), bf16Dot(bf16Dot) {}

  LogicalResult
  matchAndRewrite(AttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (op.getBias())
      return rewriter.notifyMatchFailure(op, "bias: reference lowering");
    Location loc = op.getLoc();
    SmallVector<Value> inputs = {adaptor.getQuery(), adaptor.getKey(),
                                 adaptor.getValue()};
    bool storedRows = readsStoredRows(op) && !op.getLengths();
    if (storedRows) {
      inputs[1] = storedRowsFor(rewriter, loc, op.getKey());
      inputs[2] = storedRowsFor(rewriter, loc, op.getValue());
    }
    if (Value lengths = adaptor.getLengths())
      inputs.push_back(lengths);
    if (Value table = adaptor.getRelativeBias())
      inputs.push_back(buildDistanceBias(rewriter, loc, op, table,
                                         adaptor.getQuery(), adaptor.getKey()));
    // Every variant takes the sinks, none being an empty [0].
    Value sinks = adaptor.getSinks();
    if (!sinks) {
      auto none = RankedTensorType::get({0}, rewriter.getF32Type());
      sinks = arith::ConstantOp::create(
          rewriter, loc, DenseElementsAttr::get(none, ArrayRef<float>{}));
    }
    inputs.push_back(sinks);
    RankedTensorType type = op.getType();
    SmallVector<Value> dynamicSizes =
        rowCountSizes(rewriter, loc, type, adaptor.getQuery());
    SmallVector<Value> flags = {
        arith::ConstantOp::create(rewriter, loc, op.getScaleAttr()),
        arith::ConstantIntOp::create(rewriter, loc, rewriter.getI64Type(),
                                     op.getCausal() ? 1 : 0),
        arith::ConstantIntOp::create(rewriter, loc, rewriter.getI64Type(),
                                     op.getWindow().value_or(0)),
        arith::ConstantOp::create(
            rewriter, loc,
            rewriter.getF32FloatAttr(
                op.getSoftcap() ? op.getSoftcap()->convertToDouble() : 0.0))};
    std::string kernel = op.getLengths()        ? "tfm_rt_attention_packed"
                         : op.getRelativeBias() ? "tfm_rt_attention_biased"
                                                : "tfm_rt_attention";
    if (storedRows)
      kernel += storedRowsSuffix(inputs[1]);
    else if (bf16Dot && !op.getRelativeBias())
      kernel += "_bf16_dot";
    rewriter.replaceOp(op, callKernelWithOutput(rewriter, loc, kernel, inputs,
                                                type, dynamicSizes, flags));
    return success();
  }

private:
  bool bf16Dot;
};

struct CallAttentionKernelPass
    : mlir::tfm::impl::CallAttentionKernelPassBase<CallAttentionKernelPass> {
  void runOnOperation() override {
    ConversionTarget target(getContext());
    target.markUnknownOpDynamicallyLegal([](Operation *op) {
      auto attention = dyn_cast<AttentionOp>(op);
      return !attention || !callsAttentionKernel(attention, /*plainOnly=*/true);
    });
    RewritePatternSet patterns(&getContext());
    populateAttentionCallPatterns(patterns);
    if (failed(applyPartialConversion(getOperation(), target,
                                      std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace

bool mlir::tfm::callsAttentionKernel(AttentionOp attention, bool plainOnly) {
  if (attention.getBias())
    return false;
  return !plainOnly ||
         (!attention.getLengths() && !attention.getRelativeBias() &&
          !readsStoredRows(attention));
}

void mlir::tfm::populateAttentionCallPatterns(RewritePatternSet &patterns,
                                              bool bf16Dot) {
  patterns.add<AttentionToKernelCall>(patterns.getContext(), bf16Dot);
}
