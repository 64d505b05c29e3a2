//===- AnnotateParallelLoops.cpp - independent iterations for LLVM ------===//
//
// See AnnotateParallelLoopsPass in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "codegen/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_ANNOTATEPARALLELLOOPSPASS
#include "codegen/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// Adds `group` to the access groups of every load and store under `root`.
void joinGroup(Operation *root, LLVM::AccessGroupAttr group) {
  root->walk([&](Operation *op) {
    auto access = dyn_cast<LLVM::AccessGroupOpInterface>(op);
    if (!access || !isa<LLVM::LoadOp, LLVM::StoreOp>(op))
      return;
    SmallVector<Attribute> groups;
    if (ArrayAttr existing = access.getAccessGroupsOrNull())
      groups.append(existing.begin(), existing.end());
    groups.push_back(group);
    access.setAccessGroups(ArrayAttr::get(op->getContext(), groups));
  });
}

/// `loop` as scf.for loops, outermost dimension first, each annotated with
/// `group` as its parallel accesses.
void rewriteAsAnnotatedFors(scf::ParallelOp loop) {
  MLIRContext *context = loop.getContext();
  auto group = LLVM::AccessGroupAttr::get(context);
  auto annotation = LLVM::LoopAnnotationAttr::get(
      context, /*disableNonforced=*/{}, /*vectorize=*/{}, /*interleave=*/{},
      /*unroll=*/{}, /*unrollAndJam=*/{}, /*licm=*/{}, /*distribute=*/{},
      /*pipeline=*/{}, /*peeled=*/{}, /*unswitch=*/{}, /*mustProgress=*/{},
      /*isVectorized=*/{}, /*startLoc=*/{}, /*endLoc=*/{},
      /*parallelAccesses=*/{group});
  joinGroup(loop, group);

  OpBuilder b(loop);
  IRMapping mapping;
  for (auto [lower, upper, step, iv] :
       llvm::zip(loop.getLowerBound(), loop.getUpperBound(), loop.getStep(),
                 loop.getInductionVars())) {
    auto forOp = scf::ForOp::create(b, loop.getLoc(), lower, upper, step);
    forOp->setAttr(LLVM::LoopAnnotationAttr::getMnemonic(), annotation);
    mapping.map(iv, forOp.getInductionVar());
    b.setInsertionPoint(forOp.getBody()->getTerminator());
  }
  for (Operation &op : loop.getBody()->without_terminator())
    b.clone(op, mapping);
  loop.erase();
}

struct AnnotateParallelLoopsPass
    : mlir::tfm::impl::AnnotateParallelLoopsPassBase<
          AnnotateParallelLoopsPass> {
  void runOnOperation() override {
    SmallVector<scf::ParallelOp> loops;
    // Post-order: inner loops are rewritten (and their accesses grouped)
    // before the loops around them add their own group.
    getOperation().walk([&](scf::ParallelOp loop) {
      if (loop.getInitVals().empty())
        loops.push_back(loop);
    });
    for (scf::ParallelOp loop : loops)
      rewriteAsAnnotatedFors(loop);
  }
};

} // namespace
