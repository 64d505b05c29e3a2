//===- PipelineTransfers.cpp - pipeline stages' rows through MPI ---------===//

#include "codegen/cpu/PipelineTransfers.h"
#include "codegen/linalg/KernelCalls.h"
#include "ir/TfmOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::tfm;

Value mlir::tfm::callScalarFunction(OpBuilder &b, Location loc, StringRef name,
                                    ValueRange inputs, Type result) {
  ModuleOp module =
      b.getInsertionBlock()->getParentOp()->getParentOfType<ModuleOp>();
  auto function = module.lookupSymbol<func::FuncOp>(name);
  if (!function) {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(module.getBody());
    function = func::FuncOp::create(
        b, loc, name, b.getFunctionType(inputs.getTypes(), {result}));
    function.setPrivate();
  }
  return func::CallOp::create(b, loc, function, inputs).getResult(0);
}

namespace {

/// receive: a fresh buffer of the operand's shape that the runtime fills,
/// from the previous stage or with the operand.
struct ReceiveFromPreviousStage : OpConversionPattern<PipelineReceiveOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(PipelineReceiveOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    Value input = adaptor.getInput();
    rewriter.replaceOp(
        op,
        callKernelWithOutput(rewriter, loc, "tfm_rt_pipeline_receive", {input},
                             type, rowCountSizes(rewriter, loc, type, input)));
    return success();
  }
};

/// collect: rank 0 runs the last stage, so its logits are its own; the
/// other ranks' are dropped.
struct CollectOnRankZero : OpConversionPattern<PipelineCollectOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(PipelineCollectOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    rewriter.replaceOp(op, adaptor.getInput());
    return success();
  }
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

struct LastStageToCall : OpConversionPattern<PipelineLastStageOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(PipelineLastStageOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type i64 = rewriter.getI64Type();
    Value last = callScalarFunction(rewriter, loc, "tfm_rt_pipeline_last_stage",
                                    {}, i64);
    Value zero = arith::ConstantIntOp::create(rewriter, loc, i64, 0);
    rewriter.replaceOpWithNewOp<arith::CmpIOp>(op, arith::CmpIPredicate::ne,
                                               last, zero);
    return success();
  }
};

/// The count of this rank's stage, chosen by the stage the runtime names
/// from the op's list (a few stages: a chain of selects).
struct StageLayersFromList : OpConversionPattern<PipelineStageLayersOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(PipelineStageLayersOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type i64 = rewriter.getI64Type();
    Value stage =
        callScalarFunction(rewriter, loc, "tfm_rt_pipeline_stage", {}, i64);
    ArrayRef<int64_t> layers = op.getLayers();
    Value count = arith::ConstantIndexOp::create(rewriter, loc, layers[0]);
    for (size_t s = 1; s < layers.size(); ++s) {
      Value isStage = arith::CmpIOp::create(
          rewriter, loc, arith::CmpIPredicate::eq, stage,
          arith::ConstantIntOp::create(rewriter, loc, i64, s));
      count = arith::SelectOp::create(
          rewriter, loc, isStage,
          arith::ConstantIndexOp::create(rewriter, loc, layers[s]), count);
    }
    rewriter.replaceOp(op, count);
    return success();
  }
};

} // namespace

bool mlir::tfm::isPipelineTransfer(Operation *op) {
  return isa<PipelineReceiveOp, PipelineSendOp, PipelineCollectOp,
             PipelineLastStageOp, PipelineStageLayersOp>(op);
}

void mlir::tfm::populatePipelineTransferPatterns(RewritePatternSet &patterns) {
  patterns.add<ReceiveFromPreviousStage, CollectOnRankZero, SendToNextStage,
               LastStageToCall, StageLayersFromList>(patterns.getContext());
}
