//===- TfmFolds.cpp - tfm folders and canonicalization patterns ---------===//
//
// Folds live apart from the verifiers (as in CIRCT) so that each file says
// what it holds. Each fold has a case in test/ir/canonicalize.mlir.
//
//===----------------------------------------------------------------------===//

#include "ir/TfmOps.h"

#include "mlir/IR/PatternMatch.h"

using namespace mlir;
using namespace mlir::tfm;

/// relu is idempotent: relu(relu(x)) = relu(x).
OpFoldResult ActivationOp::fold(FoldAdaptor) {
  if (getKind() != ActivationKind::relu)
    return {};
  auto producer = getInput().getDefiningOp<ActivationOp>();
  if (producer && producer.getKind() == ActivationKind::relu)
    return producer.getResult();
  return {};
}

namespace {

/// A sliding window at least as long as the (static) key sequence excludes no
/// key, so the attention is plain causal attention. Dropping the window lets
/// codegen pick the simpler kernel.
struct DropWindowCoveringAllKeys : OpRewritePattern<AttentionOp> {
  using OpRewritePattern::OpRewritePattern;

  LogicalResult matchAndRewrite(AttentionOp op,
                                PatternRewriter &rewriter) const override {
    if (!op.getWindow())
      return failure();
    int64_t window = *op.getWindow();
    int64_t keyLength = op.getKey().getType().getDimSize(0);
    if (ShapedType::isDynamic(keyLength) || window < keyLength)
      return failure();
    rewriter.modifyOpInPlace(op, [&] { op.removeWindowAttr(); });
    return success();
  }
};

} // namespace

void AttentionOp::getCanonicalizationPatterns(RewritePatternSet &results,
                                              MLIRContext *context) {
  results.add<DropWindowCoveringAllKeys>(context);
}
