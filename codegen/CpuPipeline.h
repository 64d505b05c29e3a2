//===- CpuPipeline.h - tfm to LLVM for the host CPU -------------*- C++ -*-===//
//
// The pass pipelines of the CPU target, in stages so that the driver can stop
// after each (--emit=linalg, --emit=llvm-mlir), and the translation of the
// final module into native code.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_CPUPIPELINE_H
#define TFM_CODEGEN_CPUPIPELINE_H

#include "codegen/Passes.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"

#include "llvm/IR/Module.h"

#include <memory>
#include <string>

namespace mlir::tfm {

/// tfm -> linalg/tensor/arith/math on tensors.
void buildLowerToLinalgPipeline(OpPassManager &pm,
                                const LowerToLinalgPassOptions &options);

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
};

/// linalg on tensors -> bufferized loops -> the LLVM dialect. Functions to be
/// called from C get `llvm.emit_c_interface` before this runs.
void buildLinalgToLLVMPipeline(OpPassManager &pm,
                               const LinalgToLLVMOptions &options = {});

/// Registers the dialect translations the LLVM IR export needs.
void registerLLVMTranslations(DialectRegistry &registry);

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

/// Writes `module` as an object file (or assembly when `assembly`) to
/// `path` ("-" for stdout). Returns an error message, empty on success.
std::string emitNativeCode(llvm::Module &module, const NativeTarget &target,
                           bool assembly, llvm::StringRef path);

} // namespace mlir::tfm

#endif // TFM_CODEGEN_CPUPIPELINE_H
