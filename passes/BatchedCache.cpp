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

Value mlir::tfm::sliceRows(OpBuilder &b, Location loc, Value value,
                           OpFoldResult offset, OpFoldResult count) {
  auto type = cast<RankedTensorType>(value.getType());
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, value);
  SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
  offsets[0] = offset;
  sizes[0] = count;
  return tensor::ExtractSliceOp::create(b, loc, value, offsets, sizes,
                                        strides);
}

Value mlir::tfm::insertRows(OpBuilder &b, Location loc, Value rows,
                            Value into, OpFoldResult offset) {
  auto type = cast<RankedTensorType>(rows.getType());
  SmallVector<OpFoldResult> offsets(type.getRank(), b.getIndexAttr(0));
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, rows);
  SmallVector<OpFoldResult> strides(type.getRank(), b.getIndexAttr(1));
  offsets[0] = offset;
  return tensor::InsertSliceOp::create(b, loc, rows, into, offsets, sizes,
                                       strides);
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
