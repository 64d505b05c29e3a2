//===- FuseNorm.cpp - residual adds into the following norm -------------===//
//
// The tfm-fuse-norm pass (see Passes.td). The fused op takes the add's
// place, so the sum stays available to every later use (the residual
// stream); the norm's scale and shift, tfm.weight ops usually defined just
// before the norm, move up to it.
//
//===----------------------------------------------------------------------===//

#include "ir/TfmOps.h"
#include "passes/HoistWeights.h"
#include "passes/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_FUSENORMPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

template <typename NormOp, typename FusedOp>
struct AddIntoNorm : OpRewritePattern<NormOp> {
  using OpRewritePattern<NormOp>::OpRewritePattern;
  LogicalResult matchAndRewrite(NormOp op,
                                PatternRewriter &rewriter) const override {
    auto add = op.getInput().template getDefiningOp<AddOp>();
    if (!add || add.getType() != op.getType())
      return rewriter.notifyMatchFailure(op, "input is not a residual add");
    SmallVector<Value> parameters = {op.getGamma()};
    if constexpr (std::is_same_v<NormOp, LayerNormOp>)
      if (op.getBeta())
        parameters.push_back(op.getBeta());
    if (!hoistWeightsBefore(parameters, add, rewriter))
      return rewriter.notifyMatchFailure(op, "norm parameters defined late");
    rewriter.setInsertionPoint(add);
    Location loc = rewriter.getFusedLoc({add.getLoc(), op.getLoc()});
    FusedOp fused;
    if constexpr (std::is_same_v<NormOp, LayerNormOp>)
      fused = FusedOp::create(rewriter, loc, op.getType(), op.getType(),
                              add.getLhs(), add.getRhs(), op.getGamma(),
                              op.getBeta(), op.getEpsilonAttr());
    else
      fused = FusedOp::create(rewriter, loc, op.getType(), op.getType(),
                              add.getLhs(), add.getRhs(), op.getGamma(),
                              op.getEpsilonAttr());
    rewriter.replaceOp(op, fused.getResult());
    rewriter.replaceOp(add, fused.getSum());
    return success();
  }
};

struct FuseNormPass : mlir::tfm::impl::FuseNormPassBase<FuseNormPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<AddIntoNorm<RmsNormOp, AddRmsNormOp>,
                 AddIntoNorm<LayerNormOp, AddLayerNormOp>>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
