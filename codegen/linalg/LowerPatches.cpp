//===- LowerPatches.cpp - convolutions' inputs: patches and windows -----===//
//
// tfm.patches: [C, H, W] -> [C, H/p, p, W/p, p] (expand) -> [H/p, W/p, C,
// p, p] (linalg.transpose) -> [(H/p)(W/p), C·p·p] (collapse): the patches
// in row-major order, each flattened channel-major, as a convolution weight
// [out, C, p, p] flattens. Strided (overlapping) patches: one
// linalg.generic gathering each patch's pixels.
//
// tfm.windows: one linalg.generic gathering each window's taps (zero
// where they fall in the padding), channel-major as a [out, C, k] weight
// flattens. tfm.gather_rows: a generic reading each row's source from a
// constant table of row numbers.
//
//===----------------------------------------------------------------------===//

#include "codegen/linalg/LinalgBuilders.h"
#include "codegen/linalg/Passes.h"
#include "ir/TfmOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

struct LowerPatches : OpConversionPattern<PatchesOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(PatchesOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (op.getStrides())
      return lowerStrided(op, adaptor.getInput(), rewriter);
    Location loc = op.getLoc();
    auto imageType = cast<RankedTensorType>(adaptor.getInput().getType());
    int64_t c = imageType.getDimSize(0), p = op.getPatch(),
            rows = imageType.getDimSize(1) / p,
            columns = imageType.getDimSize(2) / p;
    Type f = imageType.getElementType();
    auto split = RankedTensorType::get({c, rows, p, columns, p}, f);
    Value expanded = tensor::ExpandShapeOp::create(
        rewriter, loc, split, adaptor.getInput(),
        ArrayRef<ReassociationIndices>{{0}, {1, 2}, {3, 4}});
    Value init =
        tensor::EmptyOp::create(rewriter, loc, {rows, columns, c, p, p}, f);
    Value transposed = linalg::TransposeOp::create(rewriter, loc, expanded,
                                                   init,
                                                   ArrayRef<int64_t>{1, 3, 0, 2, 4})
                           ->getResult(0);
    rewriter.replaceOpWithNewOp<tensor::CollapseShapeOp>(
        op, op.getType(), transposed,
        ArrayRef<ReassociationIndices>{{0, 1}, {2, 3, 4}});
    return success();
  }

  /// result[py * columns + px, (c * p + ky) * p + kx] =
  /// input[c, py * sy + ky, px * sx + kx].
  static LogicalResult lowerStrided(PatchesOp op, Value input,
                                    ConversionPatternRewriter &rewriter) {
    Location loc = op.getLoc();
    auto imageType = cast<RankedTensorType>(input.getType());
    int64_t p = op.getPatch(), sy = (*op.getStrides())[0],
            sx = (*op.getStrides())[1];
    int64_t columns = (imageType.getDimSize(2) - p) / sx + 1;
    RankedTensorType type = op.getType();
    Value init = tensor::EmptyOp::create(rewriter, loc, type.getShape(),
                                         type.getElementType());
    auto gathered = linalg::GenericOp::create(
        rewriter, loc, type, ValueRange{}, ValueRange{init},
        ArrayRef<AffineMap>{rewriter.getMultiDimIdentityMap(2)},
        ArrayRef<utils::IteratorType>{utils::IteratorType::parallel,
                                      utils::IteratorType::parallel},
        [&](OpBuilder &b, Location l, ValueRange) {
          auto index = [&](int64_t v) {
            return arith::ConstantIndexOp::create(b, l, v);
          };
          Value row = linalg::IndexOp::create(b, l, 0);
          Value column = linalg::IndexOp::create(b, l, 1);
          Value py = arith::DivUIOp::create(b, l, row, index(columns));
          Value px = arith::RemUIOp::create(b, l, row, index(columns));
          Value c = arith::DivUIOp::create(b, l, column, index(p * p));
          Value ky = arith::RemUIOp::create(
              b, l, arith::DivUIOp::create(b, l, column, index(p)), index(p));
          Value kx = arith::RemUIOp::create(b, l, column, index(p));
          Value y = arith::AddIOp::create(
              b, l, arith::MulIOp::create(b, l, py, index(sy)), ky);
          Value x = arith::AddIOp::create(
              b, l, arith::MulIOp::create(b, l, px, index(sx)), kx);
          linalg::YieldOp::create(
              b, l, ValueRange{tensor::ExtractOp::create(
                        b, l, input, ValueRange{c, y, x})});
        });
    rewriter.replaceOp(op, gathered->getResults());
    return success();
  }
};

struct LowerWindows : OpConversionPattern<WindowsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(WindowsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = adaptor.getInput();
    bool channelsFirst = op.getChannelsFirst();
    int64_t kernel = op.getKernel(), stride = op.getStride(),
            padding = op.getPadding();
    Value length = tensor::DimOp::create(rewriter, loc, input,
                                         channelsFirst ? 1 : 0);
    RankedTensorType type = op.getType();
    SmallVector<Value> dynamicSizes;
    if (type.isDynamicDim(0)) {
      // max(0, (length + 2 * padding - kernel) / stride + 1): an input
      // shorter than the kernel has no window (a speech model's clip below
      // its receptive field, which the runtime refuses first).
      Value span = arith::AddIOp::create(
          rewriter, loc, length,
          arith::ConstantIndexOp::create(rewriter, loc, 2 * padding - kernel));
      Value count = arith::AddIOp::create(
          rewriter, loc,
          arith::DivSIOp::create(
              rewriter, loc, span,
              arith::ConstantIndexOp::create(rewriter, loc, stride)),
          arith::ConstantIndexOp::create(rewriter, loc, 1));
      dynamicSizes.push_back(arith::MaxSIOp::create(
          rewriter, loc, count, arith::ConstantIndexOp::create(rewriter, loc, 0)));
    }
    Value init = tensor::EmptyOp::create(rewriter, loc, type, dynamicSizes);
    auto windows = linalg::GenericOp::create(
        rewriter, loc, type, ValueRange{}, ValueRange{init},
        ArrayRef<AffineMap>{rewriter.getMultiDimIdentityMap(2)},
        ArrayRef<utils::IteratorType>{utils::IteratorType::parallel,
                                      utils::IteratorType::parallel},
        [&](OpBuilder &b, Location l, ValueRange) {
          auto index = [&](int64_t v) {
            return arith::ConstantIndexOp::create(b, l, v);
          };
          Value row = linalg::IndexOp::create(b, l, 0);
          Value column = linalg::IndexOp::create(b, l, 1);
          Value channel = arith::DivUIOp::create(b, l, column, index(kernel));
          Value tap = arith::RemUIOp::create(b, l, column, index(kernel));
          // position = row * stride + tap - padding, read only inside.
          Value position = arith::SubIOp::create(
              b, l,
              arith::AddIOp::create(
                  b, l, arith::MulIOp::create(b, l, row, index(stride)), tap),
              index(padding));
          Value inside = arith::AndIOp::create(
              b, l,
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::sge, position,
                                    index(0)),
              arith::CmpIOp::create(b, l, arith::CmpIPredicate::slt, position,
                                    length));
          Value clamped = arith::SelectOp::create(b, l, inside, position,
                                                  index(0));
          Value value = tensor::ExtractOp::create(
              b, l, input,
              channelsFirst ? ValueRange{channel, clamped}
                            : ValueRange{clamped, channel});
          Value zero = arith::ConstantOp::create(
              b, l, b.getZeroAttr(type.getElementType()));
          linalg::YieldOp::create(
              b, l, ValueRange{arith::SelectOp::create(b, l, inside, value,
                                                       zero)});
        });
    rewriter.replaceOp(op, windows->getResults());
    return success();
  }
};

struct LowerGatherRows : OpConversionPattern<GatherRowsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(GatherRowsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    SmallVector<int32_t> rows(op.getRows().begin(), op.getRows().end());
    auto tableType = RankedTensorType::get({int64_t(rows.size())},
                                           rewriter.getI32Type());
    Value table = arith::ConstantOp::create(
        rewriter, loc, DenseElementsAttr::get(tableType, ArrayRef(rows)));
    rewriter.replaceOp(
        op, gatherRows(rewriter, loc, adaptor.getInput(), table, type));
    return success();
  }
};

} // namespace

void mlir::tfm::populateLowerPatchesPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerPatches, LowerWindows, LowerGatherRows>(
      patterns.getContext());
}
