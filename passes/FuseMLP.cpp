//===- FuseMLP.cpp - activation epilogues and gated MLPs ----------------===//
//
// The tfm-fuse-mlp pass (see Passes.td). Two patterns, applied greedily:
// an activation of a projection becomes the projection's epilogue; then a
// product of an activated projection (the gate) and a plain one (up) of the
// same input becomes one gated projection over [W_gate; W_up].
//
//===----------------------------------------------------------------------===//

#include "ir/TfmOps.h"
#include "passes/Passes.h"

#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_FUSEMLPPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// activation(linear(x)) -> linear(x) activation.
struct ActivationIntoLinear : OpRewritePattern<ActivationOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ActivationOp op,
                                PatternRewriter &rewriter) const override {
    auto linear = op.getInput().getDefiningOp<LinearOp>();
    if (!linear || !linear->hasOneUse() || linear.getActivation() ||
        linear.getGated())
      return rewriter.notifyMatchFailure(op, "not the only use of a plain "
                                             "projection");
    rewriter.replaceOpWithNewOp<LinearOp>(
        op, op.getType(), linear.getInput(), linear.getWeight(),
        linear.getBias(), op.getKindAttr(), UnitAttr());
    rewriter.eraseOp(linear);
    return success();
  }
};

/// Whether `v` is the only use of a bias-free projection of `input`
/// (any input when null) with an activation or without.
LinearOp matchBranch(Value v, bool activated, Value input) {
  auto linear = v.getDefiningOp<LinearOp>();
  if (!linear || !linear->hasOneUse() || linear.getBias() ||
      linear.getGated() || bool(linear.getActivation()) != activated ||
      linear.getType().getRank() != 2)
    return nullptr;
  if (input && linear.getInput() != input)
    return nullptr;
  return linear;
}

/// linear(x) act * linear(x) -> linear(x) act gated over [W_gate; W_up].
struct GatedMLP : OpRewritePattern<MulOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(MulOp op,
                                PatternRewriter &rewriter) const override {
    for (auto [gateValue, upValue] :
         {std::pair{op.getLhs(), op.getRhs()}, {op.getRhs(), op.getLhs()}}) {
      LinearOp gate = matchBranch(gateValue, /*activated=*/true, nullptr);
      if (!gate)
        continue;
      LinearOp up = matchBranch(upValue, /*activated=*/false, gate.getInput());
      if (!up || up.getWeight().getType() != gate.getWeight().getType())
        continue;
      RankedTensorType weightType = gate.getWeight().getType();
      auto joinedType = RankedTensorType::get(
          {2 * weightType.getDimSize(0), weightType.getDimSize(1)},
          weightType.getElementType());
      Location loc = rewriter.getFusedLoc({gate.getLoc(), up.getLoc()});
      Value weight = ConcatOp::create(
          rewriter, loc, joinedType,
          ValueRange{gate.getWeight(), up.getWeight()});
      rewriter.replaceOpWithNewOp<LinearOp>(
          op, op.getType(), gate.getInput(), weight, Value(),
          gate.getActivationAttr(), rewriter.getUnitAttr());
      rewriter.eraseOp(gate);
      rewriter.eraseOp(up);
      return success();
    }
    return rewriter.notifyMatchFailure(op, "not gate * up of one input");
  }
};

struct FuseMLPPass : mlir::tfm::impl::FuseMLPPassBase<FuseMLPPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ActivationIntoLinear, GatedMLP>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
