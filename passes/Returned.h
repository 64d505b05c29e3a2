//===- Returned.h - whether a function returns a value ------*- C++ -*-===//
//
// The passes that treat an LM head apart (its split by vocabulary, its
// storage as an edge weight) know it by its product: what an entry point
// returns.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_PASSES_RETURNED_H
#define TFM_PASSES_RETURNED_H

#include "ir/TfmOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::tfm {

/// Whether `value` is returned by its function, as it is or through ops
/// that only pass it on: casts, slices (the logits of @prefill's last
/// row) and, after a split, the gather of the ranks' parts of the
/// vocabulary or a pipeline's mark of the logits rank 0 returns.
inline bool isReturned(Value value) {
  for (Operation *user : value.getUsers()) {
    if (isa<func::ReturnOp>(user))
      return true;
    if (isa<tensor::CastOp, tensor::ExtractSliceOp, shard::AllGatherOp,
            PipelineCollectOp>(user) &&
        isReturned(user->getResult(0)))
      return true;
  }
  return false;
}

} // namespace mlir::tfm

#endif // TFM_PASSES_RETURNED_H
