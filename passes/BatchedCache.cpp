//===- BatchedCache.cpp - what @decode_batch and @prefill_batch share ---===//
//
// Both batched entry points of tfm-kv-cache read and write a batched cache
// [sequences, layers, 2, capacity, kv_heads, head_dim] one sequence at a
// time, slicing rows of the step's tokens as they go. The helpers here
// build those slices.
//
//===----------------------------------------------------------------------===//

#include "passes/CachePlan.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::tfm;

RankedTensorType mlir::tfm::batchedCacheTypeOf(RankedTensorType cacheType) {
  SmallVector<int64_t> shape = {ShapedType::kDynamic};
  llvm::append_range(shape, cacheType.getShape());
  return RankedTensorType::get(shape, cacheType.getElementType());
}

namespace {
/// Offsets, sizes and strides of all of `value` but its first dimension,
/// which starts at `offset`.
struct RowsOf {
  SmallVector<OpFoldResult> offsets, sizes, strides;
  RowsOf(OpBuilder &b, Location loc, Value value, OpFoldResult offset) {
    auto type = cast<RankedTensorType>(value.getType());
    offsets.assign(type.getRank(), b.getIndexAttr(0));
    sizes = tensor::getMixedSizes(b, loc, value);
    strides.assign(type.getRank(), b.getIndexAttr(1));
    offsets[0] = offset;
  }
};
} // namespace

Value mlir::tfm::sliceRows(OpBuilder &b, Location loc, Value value,
                           OpFoldResult offset, OpFoldResult count) {
  RowsOf rows(b, loc, value, offset);
  rows.sizes[0] = count;
  return tensor::ExtractSliceOp::create(b, loc, value, rows.offsets,
                                        rows.sizes, rows.strides);
}

Value mlir::tfm::insertRows(OpBuilder &b, Location loc, Value rows,
                            Value into, OpFoldResult offset) {
  RowsOf at(b, loc, rows, offset);
  return tensor::InsertSliceOp::create(b, loc, rows, into, at.offsets,
                                       at.sizes, at.strides);
}

SequenceOfCache mlir::tfm::sequenceOfCache(OpBuilder &b,
                                           RankedTensorType cacheType,
                                           Value sequence) {
  SequenceOfCache slice;
  slice.offsets.assign(6, b.getIndexAttr(0));
  slice.offsets[0] = sequence;
  slice.sizes.push_back(b.getIndexAttr(1));
  for (int64_t d : cacheType.getShape())
    slice.sizes.push_back(b.getIndexAttr(d));
  slice.strides.assign(6, b.getIndexAttr(1));
  return slice;
}

Value mlir::tfm::indexAt(OpBuilder &b, Location loc, Value values,
                         Value row) {
  Value element = tensor::ExtractOp::create(b, loc, values, row);
  return arith::IndexCastOp::create(b, loc, b.getIndexType(), element);
}

Value mlir::tfm::chunksOfRows(OpBuilder &b, Location loc, Value lengths,
                              Value tokens) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value none =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, tokens, zero);
  Value count = tensor::DimOp::create(b, loc, lengths, 0);
  return arith::SelectOp::create(b, loc, none, zero, count);
}

void mlir::tfm::replaceCountedPositions(func::FuncOp func, Value tokens,
                                        Value positions) {
  SmallVector<PositionIdsOp> counted;
  func.walk([&](PositionIdsOp op) {
    if (op.getTokens() == tokens)
      counted.push_back(op);
  });
  for (PositionIdsOp op : counted) {
    op.getResult().replaceAllUsesWith(positions);
    op.erase();
  }
}

func::FuncOp mlir::tfm::cloneForBatch(func::FuncOp forward, StringRef name,
                                      IRMapping &mapping) {
  auto batch = cast<func::FuncOp>(forward->clone(mapping));
  batch.setName(name);
  forward->getBlock()->push_back(batch);
  return batch;
}

AttendedInSequence
mlir::tfm::attendInSequence(OpBuilder &b, Location loc, AttentionOp attention,
                            const LayerRows &rows, RankedTensorType cacheType,
                            Value out, Value cache, Value sequence, Value first,
                            Value count, Value start) {
  SequenceOfCache slice = sequenceOfCache(b, cacheType, sequence);
  Value own = tensor::ExtractSliceOp::create(b, loc, cacheType, cache,
                                             slice.offsets, slice.sizes,
                                             slice.strides);
  RowsToCache rowsOfLayer = rowsToCache(attention);
  Value keys = sliceRows(b, loc, rowsOfLayer.keys, first, count);
  Value values = rowsOfLayer.values
                     ? sliceRows(b, loc, rowsOfLayer.values, first, count)
                     : Value();
  Value end = arith::AddIOp::create(b, loc, start, count);
  CachedKeysAndValues cached =
      !rows.appends
          ? readAppended(b, loc, cacheType, own, keys, values, start, end, rows)
      : rows.ring
          ? appendAndReadRing(b, loc, cacheType, own, keys, values, start, rows)
          : appendAndRead(b, loc, cacheType, own, keys, values, start, end,
                          rows.plane);
  // The rows' queries are the last of their sequence's positions, as in
  // @prefill and @decode: causal masking, a window and relative-position
  // terms see the same distances.
  Value query = sliceRows(b, loc, attention.getQuery(), first, count);
  auto attended = cast<AttentionOp>(b.clone(*attention));
  attended.getQueryMutable().assign(query);
  attendToCached(b, loc, attended, cached.keys, cached.values);
  AttendedInSequence result;
  result.out = insertRows(b, loc, attended.getResult(), out, first);
  // A reader that does not append leaves the cache as it was.
  result.cache = rows.appends ? Value(tensor::InsertSliceOp::create(
                                    b, loc, cached.cache, cache, slice.offsets,
                                    slice.sizes, slice.strides))
                              : cache;
  return result;
}

BatchedLayout mlir::tfm::layOutBatchedCache(const CachePlan &plan,
                                            int64_t capacity) {
  // @prefill's rings stand apart (beside layers that keep every position,
  // which the engine pages): so do the batched ones.
  CacheLayout prefill = layOutCache(plan, capacity);
  bool apart = prefill.ringPlanes > 0;
  BatchedLayout layout;
  int64_t planes = 0, rings = 0, ringRows = 0;
  for (const LayerRows &own : prefill.layers) {
    LayerRows rows;
    if (own.source >= 0) {
      rows.source = own.source; // placed with its source below
    } else if (apart && own.ring) {
      rows.ring = own.ring;
      rows.plane = rings++;
      ringRows = std::max(ringRows, own.ring);
    } else {
      rows.plane = planes++;
    }
    layout.layers.push_back(rows);
  }
  shareSourcesRows(layout.layers);
  layout.pagedType = selfCacheTypeOf(plan, capacity, planes);
  if (apart)
    layout.ringType = ringCacheTypeOf(plan, ringRows, rings);
  return layout;
}

unsigned BatchedCaches::addArguments(Block &entry, Location loc,
                                     const CachePlan &plan) {
  unsigned index = entry.getNumArguments();
  paged = entry.addArgument(batchedCacheTypeOf(layout.pagedType), loc);
  if (layout.ringType)
    rings = entry.addArgument(batchedCacheTypeOf(layout.ringType), loc);
  if (!plan.recurrent.empty())
    recurrent =
        entry.addArgument(batchedCacheTypeOf(recurrentStateTypeOf(plan)), loc);
  return index;
}

void BatchedCaches::describe(func::FuncOp func, const CachePlan &plan,
                             unsigned index) {
  MLIRContext *ctx = func.getContext();
  func.setArgAttr(
      index, kCacheArgAttrName,
      CacheAttr::get(ctx, CacheKind::self_attention, sharedWindow(plan)));
  if (layout.ringType)
    func.setArgAttr(index + 1, kCacheArgAttrName,
                    CacheAttr::get(ctx, CacheKind::self_attention_rings,
                                   uniformRing(layout.layers)));
  if (!plan.recurrent.empty())
    func.setArgAttr(index + (layout.ringType ? 2 : 1), kCacheArgAttrName,
                    CacheAttr::get(ctx, CacheKind::recurrent_state, 0));
}

void BatchedCaches::attend(
    int64_t layer,
    llvm::function_ref<Value(const LayerRows &, RankedTensorType, Value)>
        attendEach) {
  const LayerRows &rows = layout.layers[layer];
  if (rows.ring)
    rings = attendEach(rows, layout.ringType, rings);
  else
    paged = attendEach(rows, layout.pagedType, paged);
}

void BatchedCaches::returnWith(func::FuncOp func, SmallVector<Value> results) {
  Block &entry = func.front();
  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  results.push_back(paged);
  if (rings)
    results.push_back(rings);
  if (recurrent)
    results.push_back(recurrent);
  ret->setOperands(results);
  func.setType(FunctionType::get(func.getContext(), entry.getArgumentTypes(),
                                 ValueRange(results).getTypes()));
}
