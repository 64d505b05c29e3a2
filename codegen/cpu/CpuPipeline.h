//===- CpuPipeline.h - linalg to the LLVM dialect for the CPU ---*- C++ -*-===//
//
// The CPU target: bufferized linalg to loops on the runtime's threads and
// kernels, then the LLVM dialect through the host's passes (codegen/host,
// which also makes the native code).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_CPU_CPUPIPELINE_H
#define TFM_CODEGEN_CPU_CPUPIPELINE_H

#include "codegen/cpu/Passes.h"
#include "codegen/host/HostPipeline.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include <string>

namespace mlir::tfm {

struct LinalgToLLVMOptions {
  /// Temporary buffers in one arena planned at compile time
  /// (tfm-plan-arena); otherwise each is allocated on its own.
  bool planArena = true;
  /// Loops from linalg's parallel dimensions tell LLVM that their
  /// iterations are independent (tfm-annotate-parallel-loops), so that they
  /// vectorize without alias checks.
  bool annotateParallelLoops = true;
  /// Those loops run on the runtime's threads (tfm-parallelize-loops).
  bool parallelizeLoops = true;
  /// The MPI a model split over ranks links against (its handles are the
  /// implementation's): the one tfmc's runtime was built with.
  std::string mpiImplementation = TFM_MPI_IMPLEMENTATION;
};

/// linalg on tensors -> bufferized loops -> the LLVM dialect. Functions to be
/// called from C get `llvm.emit_c_interface` before this runs.
void buildLinalgToLLVMPipeline(OpPassManager &pm,
                               const LinalgToLLVMOptions &options = {});

} // namespace mlir::tfm

#endif // TFM_CODEGEN_CPU_CPUPIPELINE_H
