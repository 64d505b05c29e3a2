//===- ConvolutionsAsGemm.cpp - 2-D convolutions as windows and a GEMM ---===//
//
// The tfm-convolutions-as-gemm pass (see Passes.td). A convolution of a
// [H, W, C] map by k x k windows is a GEMM of its [Ho·Wo, C·k·k] windows by
// the [out, C·k·k] weight: tfm.linear, so the weight's storage format and
// the GEMM kernels are the projections'. The windows cost k² copies of the
// input, small beside the product's 2·out multiply-adds per copied value.
//
//===----------------------------------------------------------------------===//

#include "ir/TfmOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_CONVOLUTIONSASGEMMPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

struct ConvolutionAsGemm : OpRewritePattern<Conv2dOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(Conv2dOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    Type f = type.getElementType();
    int64_t height = type.getDimSize(0), width = type.getDimSize(1),
            out = type.getDimSize(2), k = op.getKernel();
    int64_t channels = op.getInput().getType().getDimSize(2);
    bool pointwise = k == 1 && op.getStride() == 1 &&
                     llvm::all_of(op.getPadding(),
                                  [](int64_t p) { return p == 0; });
    Value rows;
    if (pointwise) {
      rows = tensor::CollapseShapeOp::create(
          rewriter, loc, RankedTensorType::get({height * width, channels}, f),
          op.getInput(), ArrayRef<ReassociationIndices>{{0, 1}, {2}});
    } else {
      rows = ImageWindowsOp::create(
          rewriter, loc,
          RankedTensorType::get({height * width, channels * k * k}, f),
          op.getInput(), op.getKernelAttr(), op.getStrideAttr(),
          op.getPaddingAttr());
    }
    Value product = LinearOp::create(
        rewriter, loc, RankedTensorType::get({height * width, out}, f), rows,
        op.getWeight(), op.getBias());
    rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(
        op, type, product, ArrayRef<ReassociationIndices>{{0, 1}, {2}});
    return success();
  }
};

struct ConvolutionsAsGemmPass
    : mlir::tfm::impl::ConvolutionsAsGemmPassBase<ConvolutionsAsGemmPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ConvolutionAsGemm>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
