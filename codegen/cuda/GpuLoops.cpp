//===- GpuLoops.cpp - linalg's loops shaped for GPU kernels --------------===//
//
// See MapLoopsToGpuPass in Passes.td: the parallel loops of bufferized
// linalg split into blocks of threads for `convert-parallel-loops-to-gpu`.
//
//===----------------------------------------------------------------------===//

#include "codegen/cuda/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/Transforms/ParallelLoopMapper.h"
#include "mlir/Dialect/SCF/Transforms/Transforms.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_MAPLOOPSTOGPUPASS
#include "codegen/cuda/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;

namespace {

/// The static trip count of dimension `dim` of `loop`, if it has one.
std::optional<int64_t> staticTripCount(scf::ParallelOp loop, unsigned dim) {
  std::optional<int64_t> lower =
      getConstantIntValue(loop.getLowerBound()[dim]);
  std::optional<int64_t> upper =
      getConstantIntValue(loop.getUpperBound()[dim]);
  std::optional<int64_t> step = getConstantIntValue(loop.getStep()[dim]);
  if (!lower || !upper || !step || *step <= 0)
    return std::nullopt;
  return (*upper - *lower + *step - 1) / *step;
}

/// Maps `loop`'s dimensions, innermost first, to the x, y and z of
/// `first` (BlockX or ThreadX); the dimensions beyond run sequentially.
LogicalResult mapInnermostFirst(scf::ParallelOp loop, gpu::Processor first) {
  MLIRContext *context = loop.getContext();
  AffineMap identity = AffineMap::getMultiDimIdentityMap(1, context);
  unsigned rank = loop.getNumLoops();
  SmallVector<gpu::ParallelLoopDimMappingAttr> mapping;
  for (unsigned dim = 0; dim < rank; ++dim) {
    unsigned fromInnermost = rank - 1 - dim;
    auto processor =
        fromInnermost < 3
            ? static_cast<gpu::Processor>(static_cast<uint64_t>(first) +
                                          fromInnermost)
            : gpu::Processor::Sequential;
    mapping.push_back(gpu::ParallelLoopDimMappingAttr::get(
        context, processor, identity, identity));
  }
  return gpu::setMappingAttr(loop, mapping);
}

struct MapLoopsToGpuPass
    : mlir::tfm::impl::MapLoopsToGpuPassBase<MapLoopsToGpuPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<scf::ParallelOp> outermost;
    getOperation().walk([&](scf::ParallelOp loop) {
      if (!loop->getParentOfType<scf::ParallelOp>())
        outermost.push_back(loop);
    });
    for (scf::ParallelOp loop : outermost) {
      auto [blocks, threads] = scf::tileParallelLoop(loop, tileSizes(loop),
                                                     /*noMinMaxBounds=*/false);
      if (failed(mapInnermostFirst(blocks, gpu::Processor::BlockX)) ||
          failed(mapInnermostFirst(threads, gpu::Processor::ThreadX)))
        return signalPassFailure();
      // Parallel loops inside a thread's work (linalg puts one inside a
      // reduction's loop when the reduction is not innermost) run in it,
      // as plain loops, innermost first.
      SmallVector<scf::ParallelOp> inner;
      threads.getBody()->walk([&](scf::ParallelOp op) { inner.push_back(op); });
      IRRewriter rewriter(&getContext());
      for (scf::ParallelOp op : inner) {
        rewriter.setInsertionPoint(op);
        if (failed(scf::parallelForToNestedFors(rewriter, op)))
          return signalPassFailure();
      }
    }
    // The tiles' sizes as constants (a block's threads must be), by
    // folding only: the canonicalizer would rebuild the loops without
    // their mapping.
    (void)applyPatternsGreedily(getOperation(), FrozenRewritePatternSet());
  }

  /// Tiles of up to `threads` iterations, filled from the innermost
  /// dimension outwards; a dimension of unknown size takes what is left.
  SmallVector<int64_t> tileSizes(scf::ParallelOp loop) {
    unsigned rank = loop.getNumLoops();
    SmallVector<int64_t> sizes(rank, 1);
    int64_t left = threads;
    for (int dim = rank - 1; dim >= 0 && left > 1; --dim) {
      std::optional<int64_t> trips = staticTripCount(loop, dim);
      int64_t tile = trips ? std::min(*trips, left) : left;
      sizes[dim] = std::max<int64_t>(tile, 1);
      left /= sizes[dim];
      if (!trips)
        break;
    }
    return sizes;
  }
};

} // namespace
