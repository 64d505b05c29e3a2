//===- ApproximateMath.cpp - polynomial tanh, erf, exp (and more) -------===//
//
// See ApproximateMathPass in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "codegen/linalg/Passes.h"

#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_APPROXIMATEMATHPASS
#include "codegen/linalg/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;

namespace {

struct ApproximateMathPass
    : mlir::tfm::impl::ApproximateMathPassBase<ApproximateMathPass> {
  using Base::Base;

  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    populatePolynomialApproximateTanhPattern(patterns);
    populatePolynomialApproximateErfPattern(patterns);
    bool every = everyFunction;
    populateMathPolynomialApproximationPatterns(
        patterns, [every](StringRef name) { return every || name == "math.exp"; });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
