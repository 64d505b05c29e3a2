//===- PositionAnalysis.cpp - which ops mix positions ---------------------===//

#include "passes/PositionAnalysis.h"
#include "ir/TfmOps.h"

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
  auto slice = dyn_cast<tensor::ExtractSliceOp>(op);
  return slice && keepsAllRows(slice);
}
