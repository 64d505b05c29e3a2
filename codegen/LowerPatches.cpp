//===- LowerPatches.cpp - tfm.patches to tensor reshapes + a transpose ---===//
//
// [C, H, W] -> [C, H/p, p, W/p, p] (expand) -> [H/p, W/p, C, p, p]
// (linalg.transpose) -> [(H/p)(W/p), C·p·p] (collapse): the patches in
// row-major order, each flattened channel-major, as a convolution weight
// [out, C, p, p] flattens.
//
//===----------------------------------------------------------------------===//

#include "codegen/Passes.h"
#include "ir/TfmOps.h"

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
};

} // namespace

void mlir::tfm::populateLowerPatchesPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerPatches>(patterns.getContext());
}
