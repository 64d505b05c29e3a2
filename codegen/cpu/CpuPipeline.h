//===- CpuPipeline.h - linalg to LLVM and native code for the CPU -*- C++ -*-===//
//
// The CPU target: bufferized linalg to loops on the runtime's threads and
// kernels, to the LLVM dialect, and LLVM IR to native code. The CUDA target
// uses the host half (addHostToLLVMPasses, native code) for its host code.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_CPU_CPUPIPELINE_H
#define TFM_CODEGEN_CPU_CPUPIPELINE_H

#include "codegen/cpu/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/IR/Module.h"

#include <memory>
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

/// The end of both targets' host code: math, arith, index, (with
/// `launchesKernels`, the GPU runtime calls,) functions and control flow
/// to the LLVM dialect. Memrefs must be converted already.
void addHostToLLVMPasses(OpPassManager &pm, bool launchesKernels);

/// linalg on tensors -> bufferized loops -> the LLVM dialect. Functions to be
/// called from C get `llvm.emit_c_interface` before this runs.
void buildLinalgToLLVMPipeline(OpPassManager &pm,
                               const LinalgToLLVMOptions &options = {});

/// Options of native code emission.
struct NativeTarget {
  /// CPU to tune and select instructions for; "native" is the compiling
  /// machine.
  std::string cpu = "native";
  /// LLVM optimization level, 0-3.
  unsigned optLevel = 3;
};

/// Translates an LLVM-dialect module to LLVM IR and optimizes it for
/// `target`. Returns null after reporting a diagnostic on failure.
std::unique_ptr<llvm::Module>
translateAndOptimize(ModuleOp module, llvm::LLVMContext &llvmContext,
                     const NativeTarget &target);

/// Sets `module`'s target (triple, data layout, each function's CPU and
/// features) and runs LLVM's optimization pipeline at `target.optLevel`.
/// Returns an error message, empty on success.
std::string optimizeForTarget(llvm::Module &module, const NativeTarget &target);

/// Writes `module` as an object file (or assembly when `assembly`) to
/// `path` ("-" for stdout). Returns an error message, empty on success.
std::string emitNativeCode(llvm::Module &module, const NativeTarget &target,
                           bool assembly, llvm::StringRef path);

} // namespace mlir::tfm

#endif // TFM_CODEGEN_CPU_CPUPIPELINE_H
