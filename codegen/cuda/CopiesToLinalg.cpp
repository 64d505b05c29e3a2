//===- CopiesToLinalg.cpp - memref.copy as linalg.copy --------------------===//
//
// See CopiesToLinalgPass in Passes.td: the GPU target makes kernels of
// linalg ops only, so the copies bufferization leaves become linalg.copy
// before linalg is turned into parallel loops.
//
//===----------------------------------------------------------------------===//

#include "codegen/cuda/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_COPIESTOLINALGPASS
#include "codegen/cuda/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;

namespace {

struct CopiesToLinalgPass
    : mlir::tfm::impl::CopiesToLinalgPassBase<CopiesToLinalgPass> {
  void runOnOperation() override {
    SmallVector<memref::CopyOp> copies;
    getOperation().walk([&](memref::CopyOp copy) { copies.push_back(copy); });
    for (memref::CopyOp copy : copies) {
      OpBuilder builder(copy);
      linalg::CopyOp::create(builder, copy.getLoc(), copy.getSource(),
                             copy.getTarget());
      copy.erase();
    }
  }
};

} // namespace
