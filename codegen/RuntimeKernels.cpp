//===- RuntimeKernels.cpp - calls of the runtime's C kernels ------------===//

#include "codegen/RuntimeKernels.h"


using namespace mlir;

MemRefType mlir::tfm::anyStridedF32(MLIRContext *ctx, unsigned rank) {
  SmallVector<int64_t> dynamic(rank, ShapedType::kDynamic);
  return MemRefType::get(
      dynamic, Float32Type::get(ctx),
      StridedLayoutAttr::get(ctx, ShapedType::kDynamic, dynamic));
}

func::FuncOp mlir::tfm::lookupOrDeclareRuntimeKernel(OpBuilder &b,
                                                     ModuleOp module,
                                                     StringRef name,
                                                     TypeRange inputs) {
  if (auto kernel = module.lookupSymbol<func::FuncOp>(name))
    return kernel;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  auto kernel = func::FuncOp::create(b, module.getLoc(), name,
                                     b.getFunctionType(inputs, {}));
  kernel.setPrivate();
  kernel->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  return kernel;
}
