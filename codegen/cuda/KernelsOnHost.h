//===- KernelsOnHost.h - a model's GPU kernels compiled for the CPU -*- C++ -*-===//
//
// --emit=cuda-emulator: the kernels of the CUDA pipeline (stopped once they
// are in the NVVM dialect) as host LLVM IR, each NVVM intrinsic a call to
// the emulator's stand-in (runtime/cuda/cuda_emulator.h), each kernel entered
// through the launch's parameter array, all listed in tfm_emu_kernels.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_CUDA_KERNELSONHOST_H
#define TFM_CODEGEN_CUDA_KERNELSONHOST_H

#include "codegen/host/HostPipeline.h"

#include "mlir/IR/BuiltinOps.h"

#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/Error.h"

#include <memory>

namespace mlir::tfm {

/// The kernels of every gpu.module of `module` (LLVM functions with NVVM
/// ops) as one optimized host module for `target`. Fails naming an NVVM
/// intrinsic the emulator has no stand-in for.
llvm::Expected<std::unique_ptr<llvm::Module>>
translateKernelsForHost(ModuleOp module, llvm::LLVMContext &llvmContext,
                        const NativeTarget &target);

} // namespace mlir::tfm

#endif // TFM_CODEGEN_CUDA_KERNELSONHOST_H
