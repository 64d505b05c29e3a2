//===- PlaceKernelReads.cpp - kernel calls' read buffers by their call ---===//
//
// See PlaceKernelReadsPass in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "codegen/linalg/Passes.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

#include "llvm/ADT/SetVector.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_PLACEKERNELREADSPASS
#include "codegen/linalg/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// The read-only conversion `operand` comes from, through casts; the casts
/// (outermost first) go to `casts`.
bufferization::ToBufferOp readOf(Value operand,
                                 SmallVectorImpl<memref::CastOp> &casts) {
  while (auto cast = operand.getDefiningOp<memref::CastOp>()) {
    casts.push_back(cast);
    operand = cast.getSource();
  }
  auto read = operand.getDefiningOp<bufferization::ToBufferOp>();
  return read && read.getReadOnly() ? read : bufferization::ToBufferOp();
}

struct PlaceKernelReadsPass
    : mlir::tfm::impl::PlaceKernelReadsPassBase<PlaceKernelReadsPass> {
  void runOnOperation() override {
    llvm::SetVector<Operation *> replaced;
    getOperation().walk([&](func::CallOp call) {
      OpBuilder b(call);
      for (OpOperand &operand : call->getOpOperands()) {
        SmallVector<memref::CastOp> casts;
        bufferization::ToBufferOp read = readOf(operand.get(), casts);
        if (!read)
          continue;
        Value buffer = b.clone(*read)->getResult(0);
        for (memref::CastOp cast : llvm::reverse(casts))
          buffer =
              memref::CastOp::create(b, cast.getLoc(), cast.getType(), buffer);
        replaced.insert(casts.begin(), casts.end());
        replaced.insert(read);
        operand.set(buffer);
      }
    });
    // The merged conversions, now unused: casts first, then what they cast.
    SmallVector<Operation *> unused = replaced.takeVector();
    for (bool erased = true; erased;) {
      erased = false;
      for (Operation *&op : unused)
        if (op && op->use_empty()) {
          op->erase();
          op = nullptr;
          erased = true;
        }
    }
  }
};

} // namespace
