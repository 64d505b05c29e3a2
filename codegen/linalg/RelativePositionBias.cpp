//===- RelativePositionBias.cpp - tfm.attention's relative_bias terms ----===//
//
// See RelativePositionBias.h.
//
//===----------------------------------------------------------------------===//

#include "codegen/linalg/RelativePositionBias.h"
#include "codegen/linalg/LinalgBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::tfm;

Value mlir::tfm::buildDistanceBias(OpBuilder &b, Location loc, AttentionOp op,
                                   Value table, Value query, Value key) {
  auto tableType = cast<RankedTensorType>(table.getType());
  int64_t buckets = tableType.getDimSize(0), heads = tableType.getDimSize(1);
  int64_t maxDistance = *op.getMaxDistance();
  bool bidirectional = !op.getCausal();

  // bucketOf[d + maxDistance] for d in [-maxDistance, maxDistance]: every
  // distance at or beyond max_distance is in the last bucket of its side.
  SmallVector<int32_t> bucketOf;
  for (int64_t d = -maxDistance; d <= maxDistance; ++d)
    bucketOf.push_back(int32_t(
        relativePositionBucket(d, buckets, maxDistance, bidirectional)));
  auto bucketsType = RankedTensorType::get({int64_t(bucketOf.size())},
                                           b.getI32Type());
  Value bucketTable = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(bucketsType, ArrayRef(bucketOf)));

  Value s = tensor::DimOp::create(b, loc, query, 0);
  Value t = tensor::DimOp::create(b, loc, key, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value columns = arith::SubIOp::create(
      b, loc, arith::AddIOp::create(b, loc, s, t), one);
  Value firstDistance = arith::SubIOp::create(b, loc, one, s); // 1 - s
  auto type = RankedTensorType::get({heads, ShapedType::kDynamic},
                                    tableType.getElementType());
  Value init = createEmpty(b, loc, type, {b.getIndexAttr(heads), columns});
  return createGeneric(
      b, loc, ValueRange{}, init, {b.getMultiDimIdentityMap(2)},
      {utils::IteratorType::parallel, utils::IteratorType::parallel},
      [&](OpBuilder &nb, Location l, ValueRange) -> Value {
        Value h = linalg::IndexOp::create(nb, l, 0);
        Value c = linalg::IndexOp::create(nb, l, 1);
        Value distance = arith::AddIOp::create(nb, l, c, firstDistance);
        Value limit = arith::ConstantIndexOp::create(nb, l, maxDistance);
        Value clamped = arith::MinSIOp::create(
            nb, l, arith::MaxSIOp::create(
                       nb, l, distance,
                       arith::ConstantIndexOp::create(nb, l, -maxDistance)),
            limit);
        Value slot = arith::AddIOp::create(nb, l, clamped, limit);
        Value bucket = tensor::ExtractOp::create(nb, l, bucketTable, slot);
        Value row = arith::IndexCastOp::create(nb, l, nb.getIndexType(), bucket);
        return tensor::ExtractOp::create(nb, l, table, ValueRange{row, h});
      });
}
