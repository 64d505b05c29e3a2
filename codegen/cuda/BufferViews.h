//===- BufferViews.h - a buffer seen through its views --------*- C++ -*-===//
//
// After bufferization one buffer is read and written through views
// (subviews, casts, reshapes). The GPU passes ask which buffer a view
// shows: whether a kernel reads a host global, whether an op touches the
// buffer a fill set.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_CUDA_BUFFERVIEWS_H
#define TFM_CODEGEN_CUDA_BUFFERVIEWS_H

#include "mlir/Dialect/MemRef/IR/MemRef.h"

namespace mlir::tfm {

/// Whether `op` is a view of its first operand's buffer (no copy).
inline bool isBufferView(Operation *op) {
  return isa<memref::SubViewOp, memref::CastOp, memref::ExpandShapeOp,
             memref::CollapseShapeOp, memref::ReinterpretCastOp>(op);
}

/// The buffer `value` is a view of (through views), or `value` itself.
inline Value viewedBuffer(Value value) {
  while (Operation *op = value.getDefiningOp()) {
    if (!isBufferView(op))
      break;
    value = op->getOperand(0);
  }
  return value;
}

} // namespace mlir::tfm

#endif // TFM_CODEGEN_CUDA_BUFFERVIEWS_H
