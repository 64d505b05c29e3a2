//===- PositionAnalysis.h - which ops mix positions -------------*- C++ -*-===//
//
// What the passes that re-run a function on other rows (tfm-kv-cache on
// the new positions, tfm-pack-sequences on several sequences at once) ask
// of every op: does it read values that vary with the positions, and if so,
// does it treat each position alone?
//
//===----------------------------------------------------------------------===//

#ifndef TFM_PASSES_POSITIONANALYSIS_H
#define TFM_PASSES_POSITIONANALYSIS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/DenseSet.h"

namespace mlir::tfm {

/// `seeds` and every value of `func` computed from them. The rest (weights,
/// constants, joins of weights) is the same for every position.
llvm::DenseSet<Value> valuesComputedFrom(func::FuncOp func, ValueRange seeds);

/// Whether `op` computes each row of its results from the same row of its
/// operands alone: tfm ops say so with Tfm_PositionWise; of upstream ops,
/// the shape glue fusions leave (tfm-fuse-qkv splits its product by
/// columns) does: the row count (tensor.dim), casts, and slices that
/// keep every row, and slices (and writes of a slice) of every row or none
/// by a condition; so do a split model's all-reduces and gathers of
/// columns.
bool actsOnEachPosition(Operation *op);

} // namespace mlir::tfm

#endif // TFM_PASSES_POSITIONANALYSIS_H
