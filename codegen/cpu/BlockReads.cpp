//===- BlockReads.cpp - weights in block panels read by the runtime -------===//
//
// Part of tfm-select-cpu-kernels (Passes.td): what reads a weight stored
// in block panels (int8/int4, GGUF's blocks) other than a product. A table
// lookup calls tfm_rt_embedding_blocks, which widens and scales only the
// rows it reads; a tfm.dequantize any other op needs calls
// tfm_rt_dequantize_blocks into a fresh f32 matrix (runtime/kernels/
// kernels_blocks.c). The target-independent lowering reads no blocks.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/BlockReads.h"
#include "codegen/linalg/KernelCalls.h"
#include "codegen/linalg/WeightFormats.h"
#include "codegen/linalg/WeightLayout.h"
#include "ir/TfmOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// The table a lookup reads as stored: through the tfm.dequantize that
/// widens it for every other reader.
Value storedTable(EmbeddingOp op) {
  Value table = op.getTable();
  if (auto widen = table.getDefiningOp<DequantizeOp>())
    table = widen.getInput();
  return table;
}

/// The block bytes a lookup's table reads, or null.
Value tableBlocks(EmbeddingOp op) { return blockWeightBytes(storedTable(op)); }

bool looksUpBlocks(EmbeddingOp op) {
  return tableBlocks(op) && cast<RankedTensorType>(op.getIds().getType())
                                .getElementType()
                                .isInteger(32);
}

/// Rows of a table in block panels, looked up by the runtime.
struct EmbeddingBlocksToKernelCall : OpConversionPattern<EmbeddingOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(EmbeddingOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!looksUpBlocks(op))
      return rewriter.notifyMatchFailure(op, "no block table, or ids not i32");
    Location loc = op.getLoc();
    auto table = cast<RankedTensorType>(storedTable(op).getType());
    RankedTensorType type = op.getType();
    SmallVector<Value> dynamicSizes;
    if (type.isDynamicDim(0))
      dynamicSizes.push_back(
          tensor::DimOp::create(rewriter, loc, adaptor.getIds(), 0));
    SmallVector<Value> trailing = {
        arith::ConstantIntOp::create(rewriter, loc, rewriter.getI64Type(),
                                     blockFormatCode(storedFormatOf(table))),
        arith::ConstantOp::create(
            rewriter, loc,
            rewriter.getF32FloatAttr(
                op.getScale() ? op.getScale()->convertToFloat() : 1.0f))};
    rewriter.replaceOp(
        op, callKernelWithOutput(rewriter, loc, "tfm_rt_embedding_blocks",
                                 {adaptor.getIds(), tableBlocks(op)}, type,
                                 dynamicSizes, trailing));
    return success();
  }
};

/// Whether `op` widens block panels for some reader other than a block
/// table's lookup (which reads the blocks as stored).
bool widensBlocksForOthers(DequantizeOp op) {
  return blockWeightBytes(op.getInput()) &&
         llvm::any_of(op->getUses(), [](OpOperand &use) {
           auto lookup = dyn_cast<EmbeddingOp>(use.getOwner());
           return !lookup || use.get() != lookup.getTable() ||
                  !looksUpBlocks(lookup);
         });
}

/// Block panels widened into a fresh f32 matrix by the runtime.
struct DequantizeBlocksToKernelCall : OpConversionPattern<DequantizeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DequantizeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Value bytes = blockWeightBytes(adaptor.getInput());
    if (!bytes)
      return rewriter.notifyMatchFailure(op, "not block panels");
    Location loc = op.getLoc();
    Value format = arith::ConstantIntOp::create(
        rewriter, loc, rewriter.getI64Type(),
        blockFormatCode(storedFormatOf(op.getInput().getType())));
    rewriter.replaceOp(
        op, callKernelWithOutput(rewriter, loc, "tfm_rt_dequantize_blocks",
                                 {bytes}, op.getType(), {}, {format}));
    return success();
  }
};

} // namespace

bool mlir::tfm::readsBlocks(Operation *op) {
  if (auto lookup = dyn_cast<EmbeddingOp>(op))
    return looksUpBlocks(lookup);
  if (auto widen = dyn_cast<DequantizeOp>(op))
    return widensBlocksForOthers(widen);
  return false;
}

void mlir::tfm::populateBlockReadPatterns(RewritePatternSet &patterns) {
  patterns.add<EmbeddingBlocksToKernelCall, DequantizeBlocksToKernelCall>(
      patterns.getContext());
}
