//===- PositionAnalysis.cpp - which ops mix positions ---------------------===//

#include "passes/PositionAnalysis.h"
#include "ir/TfmOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"

using namespace mlir;

namespace {

/// Whether `slice` keeps every row of its source: offset 0, stride 1 and
/// the source's full extent along dimension 0.
bool keepsAllRows(tensor::ExtractSliceOp slice) {
  if (!isConstantIntValue(slice.getMixedOffsets()[0], 0) ||
      !isConstantIntValue(slice.getMixedStrides()[0], 1))
    return false;
  OpFoldResult size = slice.getMixedSizes()[0];
  RankedTensorType source = slice.getSourceType();
  if (!source.isDynamicDim(0))
    return isConstantIntValue(size, source.getDimSize(0));
  auto dim = dyn_cast_if_present<Value>(size)
                 ? cast<Value>(size).getDefiningOp<tensor::DimOp>()
                 : tensor::DimOp();
  return dim && dim.getSource() == slice.getSource() &&
         dim.getConstantIndex() == std::optional<int64_t>(0);
}

/// Whether a slice (offset 0, stride 1 and `size` rows along dimension 0)
/// is every row of its tensor or none: `size` is `select(c, dim(rows, 0),
/// 0)`. A layer a pipeline stage does not run (tfm-pipeline-stages) runs
/// on none of its rows and writes none over them.
bool allRowsOrNone(OpFoldResult offset, OpFoldResult size,
                   OpFoldResult stride) {
  if (!isConstantIntValue(offset, 0) || !isConstantIntValue(stride, 1))
    return false;
  auto rows = dyn_cast_if_present<Value>(size);
  auto select = rows ? rows.getDefiningOp<arith::SelectOp>() : nullptr;
  auto dim = select ? select.getTrueValue().getDefiningOp<tensor::DimOp>()
                    : tensor::DimOp();
  // Which tensor the count's tensor.dim reads is not checked: once
  // canonicalization folds it, it reads another of the same rows (a split
  // model's batched entry points are derived after the partition).
  return dim && dim.getConstantIndex() == std::optional<int64_t>(0) &&
         isConstantIntValue(select.getFalseValue(), 0);
}

/// Whether a reshape's first group is dimension 0 alone: each row is
/// reshaped by itself.
bool keepsRowsApart(ArrayRef<ReassociationIndices> groups) {
  return !groups.empty() && groups[0].size() == 1 && groups[0][0] == 0;
}

} // namespace

llvm::DenseSet<Value> mlir::tfm::valuesComputedFrom(func::FuncOp func,
                                                    ValueRange seeds) {
  llvm::DenseSet<Value> varying(seeds.begin(), seeds.end());
  func.walk([&](Operation *op) {
    if (llvm::any_of(op->getOperands(),
                     [&](Value v) { return varying.contains(v); }))
      varying.insert(op->result_begin(), op->result_end());
  });
  return varying;
}

bool mlir::tfm::actsOnEachPosition(Operation *op) {
  if (op->hasTrait<OpTrait::tfm::PositionWise>() || isa<tensor::DimOp>(op))
    return true;
  // A LoRA update's row depends on its own row and the adapter the call
  // gives that row: row-wise for a cache, but tied to the call's rows
  // (pickRows does not move it onto a subset).
  if (isa<LoraOp>(op))
    return true;
  // A cast that says no more about the rows than its source did (one
  // pinning them to a count would not hold for other rows).
  if (auto cast = dyn_cast<tensor::CastOp>(op)) {
    auto from = dyn_cast<RankedTensorType>(cast.getSource().getType());
    auto to = dyn_cast<RankedTensorType>(cast.getType());
    return from && to && from.getRank() > 0 && to.getRank() > 0 &&
           from.getDimSize(0) == to.getDimSize(0);
  }
  // A split model's collectives: an all-reduce sums each element over the
  // ranks, and a gather of columns (a vocabulary-parallel head's logits)
  // joins each row's parts.
  if (isa<shard::AllReduceOp>(op))
    return true;
  if (auto gather = dyn_cast<shard::AllGatherOp>(op))
    return gather.getGatherAxis().getZExtValue() != 0;
  // A reshape of each row alone (its rows one group of their own, as
  // OLMoE's Q, normed whole, is split into heads).
  if (auto expand = dyn_cast<tensor::ExpandShapeOp>(op))
    return keepsRowsApart(expand.getReassociationIndices());
  if (auto collapse = dyn_cast<tensor::CollapseShapeOp>(op))
    return keepsRowsApart(collapse.getReassociationIndices());
  // Rows joined with the same rows of other tensors (MLA's query, its
  // absorbed part beside its rotated part).
  if (auto concat = dyn_cast<tensor::ConcatOp>(op))
    return concat.getDim() != 0;
  // A count chosen by a condition (rows kept, all or none, of a layer a
  // pipeline stage may not run): a scalar, as tensor.dim's.
  if (auto select = dyn_cast<arith::SelectOp>(op))
    return !isa<ShapedType>(select.getType());
  // Rows written over the same rows of another tensor, all of them or
  // none (a stage's rows passed through a layer it does not run).
  if (auto insert = dyn_cast<tensor::InsertSliceOp>(op))
    return allRowsOrNone(insert.getMixedOffsets()[0], insert.getMixedSizes()[0],
                         insert.getMixedStrides()[0]);
  auto slice = dyn_cast<tensor::ExtractSliceOp>(op);
  return slice &&
         (keepsAllRows(slice) ||
          allRowsOrNone(slice.getMixedOffsets()[0], slice.getMixedSizes()[0],
                        slice.getMixedStrides()[0]));
}
