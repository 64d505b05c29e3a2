//===- KernelCalls.h - calls of a target's external kernels -----*- C++ -*-===//
//
// Lowerings that hand work to a kernel outside the generated code (the CPU
// runtime's GEMM and attention; the attention call a GPU target makes a
// kernel of) call a private function declared once per module with MLIR's
// C interface, and pass their buffers as fully dynamic strided memrefs, so
// one C entry point serves every shape and layout.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_LINALG_KERNELCALLS_H
#define TFM_CODEGEN_LINALG_KERNELCALLS_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"

namespace mlir::tfm {

/// memref<?x...x?xf32, strided<[?, ..., ?], offset: ?>> of `rank`: the
/// buffer type the kernels take.
MemRefType anyStridedF32(MLIRContext *ctx, unsigned rank);

/// The module's declaration of kernel `name` taking `inputs` (private, with
/// `llvm.emit_c_interface`: the C side is `_mlir_ciface_<name>`); created
/// with `b` (a pattern's rewriter) at the module's start the first time.
func::FuncOp lookupOrDeclareRuntimeKernel(OpBuilder &b, ModuleOp module,
                                          StringRef name, TypeRange inputs);

/// A tensor the kernel reads, as its operand: a read-only buffer cast to
/// a fully dynamic strided layout (anyStridedF32 for f32 tensors).
Value kernelInput(OpBuilder &b, Location loc, Value tensor);

/// A fresh buffer of `type` that the kernel fills, and its operand (cast to
/// anyStridedF32); the caller turns the buffer back into a tensor
/// (bufferization.to_tensor restrict writable) after the call.
std::pair<Value, Value> kernelOutput(OpBuilder &b, Location loc,
                                     RankedTensorType type,
                                     ValueRange dynamicSizes);

/// The dynamic sizes of a kernel's result of `type`: its row count, that
/// of `rows` (the input whose rows it has), when it is not static.
SmallVector<Value> rowCountSizes(OpBuilder &b, Location loc,
                                 RankedTensorType type, Value rows);

/// Calls kernel `name` with the tensors `inputs` (as kernelInput passes
/// them), then a fresh buffer of `type` it fills, then the scalars
/// `trailing` (formats, flags); returns that buffer as a tensor. The
/// kernel's declaration is made with `b` at the module's start the first
/// time.
Value callKernelWithOutput(OpBuilder &b, Location loc, StringRef name,
                           ValueRange inputs, RankedTensorType type,
                           ValueRange dynamicSizes, ValueRange trailing = {});

} // namespace mlir::tfm

#endif // TFM_CODEGEN_LINALG_KERNELCALLS_H
