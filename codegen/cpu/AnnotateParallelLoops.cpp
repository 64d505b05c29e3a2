//===- AnnotateParallelLoops.cpp - independent iterations for LLVM ------===//
//
// See AnnotateParallelLoopsPass in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_ANNOTATEPARALLELLOOPSPASS
#include "codegen/cpu/Passes.h.inc"
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

/// A reduction loop of a linalg op (an scf.for inside a parallel loop)
/// loads and stores its accumulator at a loop-invariant address in every
/// iteration; LLVM cannot keep it in a register, since for all it knows
/// the input loads read that address too. In a linalg op they do not (the
/// output is a buffer of its own, disjoint from the inputs live with it),
/// so the accumulator becomes an iter_arg, loaded before the loop and
/// stored after it, and the float arithmetic may reassociate, which lets
/// LLVM vectorize the reduction. Only innermost loops whose sole stores
/// are such accumulators change.
void promoteAccumulators(scf::ForOp loop) {
  moveLoopInvariantCode(cast<LoopLikeOpInterface>(loop.getOperation()));
  Block *body = loop.getBody();
  SmallVector<std::pair<LLVM::LoadOp, LLVM::StoreOp>> accumulators;
  for (Operation &op : body->without_terminator()) {
    if (op.getNumRegions() || isa<LLVM::CallOp, func::CallOp>(op))
      return;
    auto store = dyn_cast<LLVM::StoreOp>(op);
    if (!store)
      continue;
    Value address = store.getAddr();
    SmallVector<LLVM::LoadOp> loads;
    for (auto load : body->getOps<LLVM::LoadOp>())
      if (load.getAddr() == address)
        loads.push_back(load);
    if (!loop.isDefinedOutsideOfLoop(address) || loads.size() != 1 ||
        !loads.front()->isBeforeInBlock(store) || store.getVolatile_() ||
        loads.front().getVolatile_())
      return;
    accumulators.push_back({loads.front(), store});
  }
  if (accumulators.empty() || !loop.getInitArgs().empty())
    return;

  OpBuilder b(loop);
  SmallVector<Value> initial;
  for (auto [load, store] : accumulators)
    initial.push_back(LLVM::LoadOp::create(b, load.getLoc(), load.getType(),
                                           load.getAddr()));
  auto promoted = scf::ForOp::create(b, loop.getLoc(), loop.getLowerBound(),
                                     loop.getUpperBound(), loop.getStep(),
                                     initial);
  promoted->setDiscardableAttrs(loop->getDiscardableAttrDictionary());
  IRMapping mapping;
  mapping.map(loop.getInductionVar(), promoted.getInductionVar());
  for (auto [index, pair] : llvm::enumerate(accumulators))
    mapping.map(pair.first.getResult(), promoted.getRegionIterArgs()[index]);
  b.setInsertionPointToStart(promoted.getBody());
  SmallVector<Value> yielded;
  for (Operation &op : body->without_terminator()) {
    if (llvm::any_of(accumulators, [&](auto pair) {
          return pair.first == &op || pair.second == &op;
        }))
      continue;
    Operation *copy = b.clone(op, mapping);
    if (auto fastMath = dyn_cast<arith::ArithFastMathInterface>(copy)) {
      auto flags = fastMath.getFastMathFlagsAttr().getValue() |
                   arith::FastMathFlags::reassoc;
      copy->setAttr(fastMath.getFastMathAttrName(),
                    arith::FastMathFlagsAttr::get(copy->getContext(), flags));
    }
  }
  for (auto [load, store] : accumulators)
    yielded.push_back(mapping.lookupOrDefault(store.getValue()));
  scf::YieldOp::create(b, loop.getLoc(), yielded);
  b.setInsertionPointAfter(promoted);
  for (auto [index, pair] : llvm::enumerate(accumulators))
    LLVM::StoreOp::create(b, pair.second.getLoc(), promoted.getResult(index),
                          pair.second.getAddr());
  loop.erase();
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
    for (scf::ParallelOp loop : loops) {
      SmallVector<scf::ForOp> reductions;
      loop.walk([&](scf::ForOp inner) { reductions.push_back(inner); });
      for (scf::ForOp inner : reductions)
        promoteAccumulators(inner);
      rewriteAsAnnotatedFors(loop);
    }
  }
};

} // namespace
