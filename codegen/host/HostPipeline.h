//===- HostPipeline.h - host code to LLVM and native code -------*- C++ -*-===//
//
// What both targets do with the code that runs on the host (all of a CPU
// model; a CUDA model's buffer sizing and kernel launches): the last
// conversions to the LLVM dialect, LLVM IR optimized for the host CPU,
// and the object file.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_HOST_HOSTPIPELINE_H
#define TFM_CODEGEN_HOST_HOSTPIPELINE_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/IR/Module.h"

#include <memory>
#include <string>

namespace mlir::tfm {

/// The end of both targets' host code: math, arith, index, (with
/// `launchesKernels`, the GPU runtime calls,) functions and control flow
/// to the LLVM dialect. Memrefs must be converted already.
void addHostToLLVMPasses(OpPassManager &pm, bool launchesKernels);

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

#endif // TFM_CODEGEN_HOST_HOSTPIPELINE_H
