//===- PipelineTransfers.cpp - pipeline stages' rows through MPI ---------===//

#include "codegen/cpu/PipelineTransfers.h"
#include "codegen/linalg/KernelCalls.h"
#include "ir/TfmOps.h"

#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// receive and collect: a fresh buffer of the operand's shape that the
/// runtime fills, from another rank or with the operand.
template <typename Op> struct RowsFromRank : OpConversionPattern<Op> {
  RowsFromRank(MLIRContext *context, StringRef kernel)
      : OpConversionPattern<Op>(context), kernel(kernel) {}

  LogicalResult
  matchAndRewrite(Op op, typename Op::Adaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    Value input = adaptor.getInput();
    rewriter.replaceOp(
        op, callKernelWithOutput(rewriter, loc, kernel, {input}, type,
                                 rowCountSizes(rewriter, loc, type, input)));
    return success();
  }

  StringRef kernel;
};

struct SendToNextStage : OpConversionPattern<PipelineSendOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(PipelineSendOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value rows = kernelInput(rewriter, loc, adaptor.getInput());
    func::FuncOp kernel =
        lookupOrDeclareRuntimeKernel(rewriter, op->getParentOfType<ModuleOp>(),
                                     "tfm_rt_pipeline_send", rows.getType());
    func::CallOp::create(rewriter, loc, kernel, rows);
    rewriter.eraseOp(op);
    return success();
  }
};

} // namespace

bool mlir::tfm::isPipelineTransfer(Operation *op) {
  return isa<PipelineReceiveOp, PipelineSendOp, PipelineCollectOp>(op);
}

void mlir::tfm::populatePipelineTransferPatterns(RewritePatternSet &patterns) {
  MLIRContext *context = patterns.getContext();
  patterns.add<RowsFromRank<PipelineReceiveOp>>(context,
                                                "tfm_rt_pipeline_receive");
  patterns.add<RowsFromRank<PipelineCollectOp>>(context,
                                                "tfm_rt_pipeline_collect");
  patterns.add<SendToNextStage>(context);
}
