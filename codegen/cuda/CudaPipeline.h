//===- CudaPipeline.h - linalg to GPU kernels and host code ------*- C++ -*-===//
//
// The CUDA target: device buffers and GPU kernels (PTX in gpu.binary ops)
// launched from host code, which ends as the CPU target's does.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_CUDA_CUDAPIPELINE_H
#define TFM_CODEGEN_CUDA_CUDAPIPELINE_H

#include "codegen/cuda/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <string>

namespace mlir::tfm {

struct LinalgToCudaOptions {
  /// The PTX's target architecture (nvvm-attach-target's chip).
  std::string cudaArch = "sm_80";
  /// Temporary buffers in one device allocation (tfm-plan-arena).
  bool planArena = true;
  /// Prefill's bf16 and f16 products on tensor cores (sm_80 and newer).
  bool tensorCores = true;
  /// Decode attention's keys split across blocks (flash-decoding).
  bool splitAttention = true;
  /// A norm's scaling in its reduction's kernel (tfm-lower-reductions-to-gpu).
  bool fuseNorms = true;
  /// Elementwise producers fused into their consumers
  /// (tfm-fuse-elementwise-for-gpu).
  bool fuseElementwise = true;
  /// Stop once the kernels are in the NVVM dialect (gpu.module ops of LLVM
  /// functions): no PTX, no host lowering (--emit=cuda-emulator).
  bool kernelsOnly = false;
};

/// The number of an architecture named sm_XY (sm_90a: 90), 0 when it is
/// not so named.
int cudaArchNumber(llvm::StringRef cudaArch);

/// linalg on tensors -> device buffers and GPU kernels (PTX in
/// gpu.binary ops) launched from host code in the LLVM dialect: the
/// --target=cuda counterpart of buildLinalgToLLVMPipeline
/// (codegen/cuda/CudaPipeline.cpp).
void buildLinalgToCudaPipeline(OpPassManager &pm,
                               const LinalgToCudaOptions &options = {});

/// The PTX of every kernel module of `module` (after the CUDA pipeline),
/// each under a comment naming it.
void printKernelAssembly(ModuleOp module, llvm::raw_ostream &os);

/// Registers the GPU and NVVM dialect translations (the PTX of kernel
/// modules, and the host code that embeds and launches it).
void registerCudaTranslations(DialectRegistry &registry);

} // namespace mlir::tfm

#endif // TFM_CODEGEN_CUDA_CUDAPIPELINE_H
