//===- Passes.h - the CPU target's passes -*- C++ -*-===//

#ifndef TFM_CODEGEN_CPU_PASSES_H
#define TFM_CODEGEN_CPU_PASSES_H

#include "codegen/linalg/Passes.h"

#include "mlir/Dialect/DLTI/DLTI.h"
#include "mlir/Dialect/MPI/IR/MPI.h"

namespace mlir::tfm {

#define GEN_PASS_DECL
#include "codegen/cpu/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "codegen/cpu/Passes.h.inc"

/// CPU kernel selection (tfm-select-cpu-kernels): tfm.linear over panel
/// weights to the runtime's GEMM (over bf16 panels, the one that may round
/// activations to bf16 where `bf16Products`), and with `fusedAttention`
/// tfm.attention without bias to its fused kernel (whose prefill products
/// are bf16's where `bf16Attention`).
void populateCpuKernelPatterns(RewritePatternSet &patterns, bool fusedAttention,
                               bool bf16Products, bool bf16Attention);

/// Declares the memory effects of mpi.allreduce (LowerCollectivesToMPI.cpp),
/// which bufferization's deallocation needs.
void registerMPIMemoryEffects(DialectRegistry &registry);

} // namespace mlir::tfm

#endif // TFM_CODEGEN_CPU_PASSES_H
