//===- KernelCalls.cpp - calls of a target's external kernels ------------===//

#include "codegen/linalg/KernelCalls.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

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

Value mlir::tfm::kernelInput(OpBuilder &b, Location loc, Value tensor) {
  auto type = cast<RankedTensorType>(tensor.getType());
  MemRefType f32Buffer = anyStridedF32(b.getContext(), type.getRank());
  auto buffer = MemRefType::get(f32Buffer.getShape(), type.getElementType(),
                                f32Buffer.getLayout());
  auto shaped = MemRefType::get(type.getShape(), type.getElementType(),
                                buffer.getLayout());
  Value read = bufferization::ToBufferOp::create(b, loc, shaped, tensor,
                                                 /*readOnly=*/true);
  return memref::CastOp::create(b, loc, buffer, read);
}

Value mlir::tfm::callKernelWithOutput(OpBuilder &b, Location loc,
                                      StringRef name, ValueRange inputs,
                                      RankedTensorType type,
                                      ValueRange dynamicSizes,
                                      ValueRange trailing) {
  SmallVector<Value> operands;
  for (Value input : inputs)
    operands.push_back(kernelInput(b, loc, input));
  auto [out, outOperand] = kernelOutput(b, loc, type, dynamicSizes);
  operands.push_back(outOperand);
  operands.append(trailing.begin(), trailing.end());
  ModuleOp module =
      b.getInsertionBlock()->getParentOp()->getParentOfType<ModuleOp>();
  func::FuncOp kernel = lookupOrDeclareRuntimeKernel(
      b, module, name, ValueRange(operands).getTypes());
  func::CallOp::create(b, loc, kernel, operands);
  return bufferization::ToTensorOp::create(b, loc, type, out,
                                           /*restrict=*/true,
                                           /*writable=*/true);
}

std::pair<Value, Value> mlir::tfm::kernelOutput(OpBuilder &b, Location loc,
                                                RankedTensorType type,
                                                ValueRange dynamicSizes) {
  auto outType = MemRefType::get(type.getShape(), type.getElementType());
  Value out = memref::AllocOp::create(b, loc, outType, dynamicSizes);
  Value operand = memref::CastOp::create(
      b, loc, anyStridedF32(b.getContext(), type.getRank()), out);
  return {out, operand};
}

SmallVector<Value> mlir::tfm::rowCountSizes(OpBuilder &b, Location loc,
                                            RankedTensorType type, Value rows) {
  if (!type.isDynamicDim(0))
    return {};
  return {tensor::DimOp::create(b, loc, rows, 0)};
}
