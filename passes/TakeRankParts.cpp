//===- TakeRankParts.cpp - a whole value's part, taken by each rank ------===//
//
// The tfm-take-rank-parts pass (see Passes.td). Where a value is computed
// whole on every rank but read split (OLMoE's queries and keys, normed
// across all heads before they are split into heads), shard-partition
// leaves a `shard.all_slice`: each rank keeps its part, no communication.
// It becomes a tensor.extract_slice at the rank's offset, the rank read by
// `shard.process_linear_index` (MPI_Comm_rank once lowered), so that the
// cache derivations after the partition see a slice that keeps every row.
//
//===----------------------------------------------------------------------===//

#include "ir/TfmSharding.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_TAKERANKPARTSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

LogicalResult takePart(shard::AllSliceOp slice) {
  auto part = cast<RankedTensorType>(slice.getType());
  int64_t axis = slice.getSliceAxis().getSExtValue();
  if (slice.getGridAxes().size() != 1 || part.isDynamicDim(axis))
    return slice.emitOpError("tfmc takes a rank's part along one static "
                             "axis over all ranks only");
  OpBuilder builder(slice);
  Location loc = slice.getLoc();
  Value rank = shard::ProcessLinearIndexOp::create(builder, loc,
                                                   slice.getGridAttr());
  RankPartBounds bounds =
      rankPartBounds(builder, loc, part, slice.getInput(), axis, rank);
  Value taken = tensor::ExtractSliceOp::create(
      builder, loc, part, slice.getInput(), bounds.offsets, bounds.sizes,
      bounds.strides);
  slice.replaceAllUsesWith(taken);
  slice.erase();
  return success();
}

struct TakeRankPartsPass
    : tfm::impl::TakeRankPartsPassBase<TakeRankPartsPass> {
  void runOnOperation() override {
    SmallVector<shard::AllSliceOp> slices;
    getOperation().walk([&](shard::AllSliceOp op) { slices.push_back(op); });
    for (shard::AllSliceOp slice : slices)
      if (failed(takePart(slice)))
        return signalPassFailure();
  }
};

} // namespace
