//===- CacheRows.cpp - a layer's keys and values into and out of its cache
//-===//
//
// How every entry point tfm-kv-cache derives stores one layer's new keys
// and values and reads back what its queries see: positions at their slots
// (tfm.kv_cache_append, tfm.kv_cache_read), or a windowed layer's ring
// (tfm.kv_ring_append, tfm.kv_ring_read). A narrow cache (int8 rows with
// their scales, bf16, f16) narrows rows on the way in (tfm.quantize_rows)
// and widens them on the way out (tfm.dequantize_rows), so that the new
// positions are seen as a later step will see them. A latent layer (MLA)
// stores its one row per position in a cache of one plane a layer, and
// reads its values as the rows' leading columns (latentValueWidth).
//
//===----------------------------------------------------------------------===//

#include "passes/CachePlan.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// The rows of f32 keys of `keyType` as they are computed with and as a
/// cache of `cacheType` stores them (the same type unless it is narrow).
struct CachedRows {
  RankedTensorType floats, stored;
  CachedRows(RankedTensorType cacheType, RankedTensorType keyType) {
    int64_t dyn = ShapedType::kDynamic;
    floats = RankedTensorType::get(
        {dyn, keyType.getDimSize(1), keyType.getDimSize(2)},
        keyType.getElementType());
    stored = RankedTensorType::get(
        {dyn, cacheType.getDimSize(3), cacheType.getDimSize(4)},
        cacheType.getElementType());
  }
  bool narrow() const { return floats != stored; }

  Value store(OpBuilder &b, Location loc, Value rows) const {
    if (!narrow())
      return rows;
    auto type = cast<RankedTensorType>(rows.getType());
    auto storedType = RankedTensorType::get(
        {type.getDimSize(0), stored.getDimSize(1), stored.getDimSize(2)},
        stored.getElementType());
    return QuantizeRowsOp::create(b, loc, storedType, rows);
  }
  Value widen(OpBuilder &b, Location loc, Value rows) const {
    return narrow() ? DequantizeRowsOp::create(b, loc, floats, rows) : rows;
  }
};

/// Positions [0, end) of plane `plane` of `cached.cache` into `cached`'s
/// keys and values, widened to f32; of a latent cache the keys alone.
void readPlane(OpBuilder &b, Location loc, const CachedRows &rows,
               CachedKeysAndValues &cached, Value end, int64_t plane,
               bool keysOnly) {
  SmallVector<Type, 2> types(keysOnly ? 1 : 2, rows.stored);
  auto read = KVCacheReadOp::create(b, loc, types, cached.cache, end,
                                    b.getI64IntegerAttr(plane));
  cached.keys = rows.widen(b, loc, read.getKey());
  if (!keysOnly)
    cached.values = rows.widen(b, loc, read.getValue());
}

} // namespace

CachedKeysAndValues mlir::tfm::appendAndRead(OpBuilder &b, Location loc,
                                             RankedTensorType cacheType,
                                             Value cache, Value keys,
                                             Value values, Value position,
                                             Value end, int64_t layer) {
  CachedRows rows(cacheType, cast<RankedTensorType>(keys.getType()));
  // Keys first: the order the IR reads in.
  Value storedKeys = rows.store(b, loc, keys);
  Value storedValues = values ? rows.store(b, loc, values) : Value();
  CachedKeysAndValues cached;
  cached.cache = KVCacheAppendOp::create(b, loc, cacheType, cache, storedKeys,
                                         storedValues, position,
                                         b.getI64IntegerAttr(layer));
  readPlane(b, loc, rows, cached, end, layer, /*keysOnly=*/!values);
  return cached;
}

/// A windowed layer's keys and values of positions [max(start - ring + 1,
/// 0), start) from its ring, then `newKeys` and `newValues` (of positions
/// from `start`), in the ring's row type `stored`.
static KVRingReadOp readRing(OpBuilder &b, Location loc,
                             RankedTensorType stored, Value cache,
                             Value newKeys, Value newValues, Value start,
                             const LayerRows &layer) {
  auto attr = [&](int64_t v) { return b.getI64IntegerAttr(v); };
  Value first = arith::MaxSIOp::create(
      b, loc,
      arith::SubIOp::create(
          b, loc, start,
          arith::ConstantIndexOp::create(b, loc, layer.ring - 1)),
      arith::ConstantIndexOp::create(b, loc, 0));
  return KVRingReadOp::create(b, loc, TypeRange{stored, stored}, cache, first,
                              start, newKeys, newValues, attr(layer.plane),
                              attr(layer.offset), attr(layer.ring));
}

CachedKeysAndValues mlir::tfm::appendAndReadRing(OpBuilder &b, Location loc,
                                                 RankedTensorType cacheType,
                                                 Value cache, Value keys,
                                                 Value values, Value start,
                                                 const LayerRows &layer) {
  CachedRows rows(cacheType, cast<RankedTensorType>(keys.getType()));
  auto attr = [&](int64_t v) { return b.getI64IntegerAttr(v); };
  // The earlier positions the new ones still see are read before the new
  // rows overwrite the ring's oldest.
  Value newKeys = rows.store(b, loc, keys);
  Value newValues = rows.store(b, loc, values);
  KVRingReadOp seen =
      readRing(b, loc, rows.stored, cache, newKeys, newValues, start, layer);
  CachedKeysAndValues cached;
  cached.cache = KVRingAppendOp::create(b, loc, cacheType, cache, newKeys,
                                        newValues, start, attr(layer.plane),
                                        attr(layer.offset), attr(layer.ring));
  cached.keys = rows.widen(b, loc, seen.getKey());
  cached.values = rows.widen(b, loc, seen.getValue());
  return cached;
}

CachedKeysAndValues mlir::tfm::readAppended(OpBuilder &b, Location loc,
                                            RankedTensorType cacheType,
                                            Value cache, Value keys,
                                            Value values, Value start,
                                            Value end, const LayerRows &layer) {
  CachedRows rows(cacheType, cast<RankedTensorType>(keys.getType()));
  CachedKeysAndValues cached;
  cached.cache = cache;
  if (!layer.ring) {
    readPlane(b, loc, rows, cached, end, layer.plane, /*keysOnly=*/!values);
    return cached;
  }
  KVRingReadOp seen =
      readRing(b, loc, rows.stored, cache, rows.store(b, loc, keys),
               rows.store(b, loc, values), start, layer);
  cached.keys = rows.widen(b, loc, seen.getKey());
  cached.values = rows.widen(b, loc, seen.getValue());
  return cached;
}

std::optional<int64_t> mlir::tfm::latentValueWidth(AttentionOp attention) {
  auto slice = attention.getValue().getDefiningOp<tensor::ExtractSliceOp>();
  RankedTensorType key = attention.getKey().getType();
  RankedTensorType value = attention.getValue().getType();
  if (!slice || slice.getSource() != attention.getKey() || key.getRank() != 3 ||
      value.getRank() != 3 || key.getDimSize(1) != 1 ||
      value.getDimSize(1) != 1 || ShapedType::isDynamic(key.getDimSize(2)))
    return std::nullopt;
  bool leading =
      llvm::all_of(slice.getMixedOffsets(),
                   [](OpFoldResult o) { return isConstantIntValue(o, 0); }) &&
      llvm::all_of(slice.getMixedStrides(),
                   [](OpFoldResult o) { return isConstantIntValue(o, 1); });
  int64_t width = value.getDimSize(2);
  if (!leading || ShapedType::isDynamic(width) || width >= key.getDimSize(2))
    return std::nullopt;
  return width;
}

Value mlir::tfm::latentColumns(OpBuilder &b, Location loc, Value rows,
                               int64_t offset, int64_t width, bool dropHead) {
  SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0), b.getIndexAttr(0),
                                       b.getIndexAttr(offset)};
  SmallVector<OpFoldResult> sizes = {tensor::getMixedSize(b, loc, rows, 0),
                                     b.getIndexAttr(1), b.getIndexAttr(width)};
  SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
  auto type = cast<RankedTensorType>(rows.getType());
  SmallVector<int64_t> shape = {type.getDimSize(0)};
  if (!dropHead)
    shape.push_back(1);
  shape.push_back(width);
  return tensor::ExtractSliceOp::create(
      b, loc, RankedTensorType::get(shape, type.getElementType()), rows,
      offsets, sizes, strides);
}

RowsToCache mlir::tfm::rowsToCache(AttentionOp attention) {
  if (latentValueWidth(attention))
    return {attention.getKey(), Value()};
  return {attention.getKey(), attention.getValue()};
}

void mlir::tfm::attendToCached(OpBuilder &b, Location loc,
                               AttentionOp attention, Value keys,
                               Value values) {
  std::optional<int64_t> width = latentValueWidth(attention);
  attention.getKeyMutable().assign(keys);
  if (!width) {
    attention.getValueMutable().assign(values);
    return;
  }
  // The value is a view of the cached rows: the attention kernel reads
  // keys and values from the same rows in place.
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPoint(attention);
  attention.getValueMutable().assign(latentColumns(b, loc, keys, 0, *width));
}
