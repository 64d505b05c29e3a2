//===- FuseElementwiseForGpu.cpp - fewer kernels from elementwise chains ---===//
//
// See FuseElementwiseForGpuPass in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "codegen/cuda/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_FUSEELEMENTWISEFORGPUPASS
#include "codegen/cuda/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;

namespace {

/// Elements of a statically shaped tensor, -1 otherwise.
int64_t staticElements(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && tensor.hasStaticShape() ? tensor.getNumElements() : -1;
}

/// Whether every consumer may recompute `producer` per element: each of
/// its tensor inputs is smaller than its result, so a kernel of its own
/// would cost a launch for less work than the recomputation.
bool cheapToRecompute(linalg::GenericOp producer) {
  if (producer.getNumResults() != 1)
    return false;
  int64_t result = staticElements(producer.getResult(0).getType());
  if (result < 0)
    return false;
  for (Value input : producer.getDpsInputs()) {
    int64_t elements = staticElements(input.getType());
    if (isa<RankedTensorType>(input.getType()) &&
        (elements < 0 || elements >= result))
      return false;
  }
  return true;
}

bool fusable(OpOperand *fused) {
  auto producer = fused->get().getDefiningOp<linalg::GenericOp>();
  if (!producer || producer.getNumReductionLoops() != 0)
    return false;
  bool gathers = false;
  producer.getRegion().walk([&](tensor::ExtractOp) { gathers = true; });
  if (gathers)
    return false;
  return producer->hasOneUse() || cheapToRecompute(producer);
}

struct FuseElementwiseForGpuPass
    : mlir::tfm::impl::FuseElementwiseForGpuPassBase<
          FuseElementwiseForGpuPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    linalg::populateElementwiseOpsFusionPatterns(patterns, fusable);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      return signalPassFailure();
  }
};

} // namespace
