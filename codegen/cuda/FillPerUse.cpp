//===- FillPerUse.cpp - a fill of its own for each user ------------------===//
//
// See FillPerUsePass in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "codegen/cuda/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_FILLPERUSEPASS
#include "codegen/cuda/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;

namespace {

struct FillPerUsePass
    : mlir::tfm::impl::FillPerUsePassBase<FillPerUsePass> {
  void runOnOperation() override {
    SmallVector<linalg::FillOp> shared;
    getOperation().walk([&](linalg::FillOp fill) {
      if (fill.hasPureTensorSemantics() && !fill->getResult(0).hasOneUse())
        shared.push_back(fill);
    });
    for (linalg::FillOp fill : shared) {
      Value result = fill->getResult(0);
      Value init = fill.getDpsInits()[0];
      auto empty = init.getDefiningOp<tensor::EmptyOp>();
      // The first user keeps the original; each other gets a copy made
      // right before it.
      SmallVector<OpOperand *> uses = llvm::map_to_vector(
          result.getUses(), [](OpOperand &use) { return &use; });
      // In program order (use lists are not) where users share a block.
      llvm::stable_sort(uses, [](OpOperand *a, OpOperand *b) {
        Operation *x = a->getOwner(), *y = b->getOwner();
        return x->getBlock() == y->getBlock() && x != y &&
               x->isBeforeInBlock(y);
      });
      for (OpOperand *use : llvm::drop_begin(uses)) {
        OpBuilder builder(use->getOwner());
        IRMapping mapping;
        if (empty)
          mapping.map(init, builder.clone(*empty)->getResult(0));
        use->set(builder.clone(*fill, mapping)->getResult(0));
      }
    }
  }
};

} // namespace
