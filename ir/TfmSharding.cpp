//===- TfmSharding.cpp - tfm ops as upstream shard-partition sees them ---===//
//
// Tensor parallelism (tfmc --ranks N) is planned by tfm-shard-tensor-parallel,
// which annotates every value with a upstream `shard.shard`, and carried out
// by upstream `shard-partition`, which asks each op for its per-rank form
// through ShardingInterface. The ops on a transformer's split path (heads,
// MLP columns) implement it here:
//
// - an op whose every tensor is split consistently (rope, attention, KV
//   cache reads and writes, elementwise ops, weights) is the same op on the
//   rank's parts: its per-rank form is a clone with its results' types
//   shrunk to the rank's part (shardShapedType);
// - a projection whose contraction is split (the attention output and MLP
//   down projections) yields a partial sum on each rank: its per-rank form
//   is the projection of the rank's part followed by `shard.all_reduce`.
//
// MLA's per-head projections, the joins and column slices of its query
// parts, and the sizes read from split tensors partition part-wise too.
// Ops without the interface are replicated by shard-partition (embeddings,
// norms, the LM head).
//
//===----------------------------------------------------------------------===//

#include "ir/TfmSharding.h"
#include "ir/TfmDialect.h"
#include "ir/TfmOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Shard/Interfaces/ShardingInterface.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// The rank's part of `type` under `sharding` (the type itself when
/// replicated or not a tensor).
Type partType(Operation *op, Type type, const shard::Sharding &sharding,
              SymbolTableCollection &symbols) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !sharding || shard::isFullReplication(sharding))
    return type;
  shard::GridOp grid = shard::getGrid(op, sharding.getGridAttr(), symbols);
  return shard::shardShapedType(tensor, grid, sharding);
}

/// Clones `op` on the partitioned operands, its results typed as the rank's
/// parts.
Operation *cloneOnParts(Operation *op,
                        ArrayRef<shard::Sharding> resultShardings,
                        IRMapping &map, SymbolTableCollection &symbols,
                        OpBuilder &builder) {
  Operation *clone = builder.clone(*op, map);
  for (auto [result, sharding] :
       llvm::zip_equal(clone->getResults(), resultShardings))
    result.setType(partType(op, result.getType(), sharding, symbols));
  return clone;
}

/// Rope, attention, KV cache ops, elementwise ops, weights: the same op on
/// every rank's parts.
template <typename OpT>
struct PartwiseSharding
    : shard::ShardingInterface::ExternalModel<PartwiseSharding<OpT>, OpT> {
  LogicalResult partition(Operation *op, ArrayRef<Value>,
                          ArrayRef<shard::Sharding>,
                          ArrayRef<shard::Sharding> resultShardings,
                          IRMapping &map, SymbolTableCollection &symbols,
                          OpBuilder &builder) const {
    cloneOnParts(op, resultShardings, map, symbols, builder);
    return success();
  }
};

/// Whether `sharding` of a projection's input splits its features (the last
/// axis of [seq, in], the heads of [seq, heads, head_dim]).
bool splitsFeatures(LinearOp linear, const shard::Sharding &sharding) {
  if (!sharding || shard::isFullReplication(sharding))
    return false;
  ArrayRef<shard::GridAxesAttr> axes = sharding.getSplitAxes();
  return axes.size() == 2 && !axes[1].empty();
}

/// A projection: column-parallel (its weight's rows split, its input whole)
/// partitions part-wise; row-parallel (its input's features and its
/// weight's columns split) sums the ranks' partial products with
/// `shard.all_reduce`. A row-parallel projection's bias is held by rank 0
/// alone (tfm-shard-tensor-parallel marks it `tfm.partial_over_ranks`), so
/// the sum adds it once.
struct LinearSharding
    : shard::ShardingInterface::ExternalModel<LinearSharding, LinearOp> {
  LogicalResult partition(Operation *op, ArrayRef<Value>,
                          ArrayRef<shard::Sharding> operandShardings,
                          ArrayRef<shard::Sharding> resultShardings,
                          IRMapping &map, SymbolTableCollection &symbols,
                          OpBuilder &builder) const {
    auto linear = cast<LinearOp>(op);
    if (!splitsFeatures(linear, operandShardings[0])) {
      cloneOnParts(op, resultShardings, map, symbols, builder);
      return success();
    }
    if (resultShardings[0] && !shard::isFullReplication(resultShardings[0]))
      return op->emitOpError("tensor parallelism: a projection whose input "
                             "features are split yields a sum over the "
                             "ranks, which is whole on every rank");
    // The partial product keeps the whole result type; the sum replaces it
    // as the op's partitioned result.
    Operation *clone = builder.clone(*op, map);
    auto gridName = operandShardings[0].getGridAttr();
    auto sum = shard::AllReduceOp::create(
        builder, op->getLoc(), clone->getResult(0).getType(),
        gridName.getValue(), ArrayRef<int16_t>{0}, clone->getResult(0));
    map.map(op->getResult(0), sum.getResult());
    return success();
  }
};

/// Columns of every head (MLA's query parts): the same slice of the rank's
/// part, its sizes along split axes the part's.
struct ExtractSliceSharding
    : shard::ShardingInterface::ExternalModel<ExtractSliceSharding,
                                              tensor::ExtractSliceOp> {
  LogicalResult partition(Operation *op, ArrayRef<Value>,
                          ArrayRef<shard::Sharding>,
                          ArrayRef<shard::Sharding> resultShardings,
                          IRMapping &map, SymbolTableCollection &symbols,
                          OpBuilder &builder) const {
    auto slice = cast<tensor::ExtractSliceOp>(op);
    if (!resultShardings[0] || shard::isFullReplication(resultShardings[0])) {
      builder.clone(*op, map);
      return success();
    }
    auto part = cast<RankedTensorType>(
        partType(op, slice.getType(), resultShardings[0], symbols));
    auto mapped = [&](SmallVector<OpFoldResult> values) {
      for (OpFoldResult &value : values)
        if (auto v = dyn_cast<Value>(value))
          value = map.lookupOrDefault(v);
      return values;
    };
    // Static sizes become the part's (only split axes change).
    SmallVector<OpFoldResult> sizes = mapped(slice.getMixedSizes());
    for (int64_t axis = 0; axis < part.getRank(); ++axis)
      if (isa<Attribute>(sizes[axis]) && !part.isDynamicDim(axis))
        sizes[axis] = builder.getIndexAttr(part.getDimSize(axis));
    auto clone = tensor::ExtractSliceOp::create(
        builder, op->getLoc(), part, map.lookupOrDefault(slice.getSource()),
        mapped(slice.getMixedOffsets()), sizes,
        mapped(slice.getMixedStrides()));
    map.map(slice.getResult(), clone.getResult());
    return success();
  }
};

template <typename... Ops> void attachPartwise(MLIRContext &context) {
  (Ops::template attachInterface<PartwiseSharding<Ops>>(context), ...);
}

} // namespace

void mlir::tfm::attachShardingModels(MLIRContext &context) {
  // The tensor ops below must be registered to take an interface.
  context.getOrLoadDialect<tensor::TensorDialect>();
  attachPartwise<WeightOp, DequantizeOp, RopeOp, AttentionOp, KVCacheAppendOp,
                 KVCacheReadOp, KVRingAppendOp, KVRingReadOp, ActivationOp,
                 ClampOp, AddOp, MulOp, QuantizeRowsOp, DequantizeRowsOp, HeadLinearOp,
                 RmsNormOp, tensor::ConcatOp, tensor::DimOp>(context);
  LinearOp::attachInterface<LinearSharding>(context);
  tensor::ExtractSliceOp::attachInterface<ExtractSliceSharding>(context);
}

RankPartBounds mlir::tfm::rankPartBounds(OpBuilder &builder, Location loc,
                                         RankedTensorType part, Value like,
                                         int64_t axis, Value rank) {
  RankPartBounds bounds;
  Value offset = arith::MulIOp::create(
      builder, loc, rank,
      arith::ConstantIndexOp::create(builder, loc, part.getDimSize(axis)));
  for (int64_t d = 0; d < part.getRank(); ++d) {
    bounds.offsets.push_back(d == axis ? OpFoldResult(offset)
                                       : OpFoldResult(builder.getIndexAttr(0)));
    bounds.sizes.push_back(
        part.isDynamicDim(d)
            ? OpFoldResult(
                  tensor::DimOp::create(builder, loc, like, d).getResult())
            : OpFoldResult(builder.getIndexAttr(part.getDimSize(d))));
    bounds.strides.push_back(builder.getIndexAttr(1));
  }
  return bounds;
}
