//===- tfmc.cpp - the tfmc compiler driver ------------------------------===//
//
// Reads a model (for now: a tfm module in .mlir form), verifies it and writes
// the IR of the requested stage. Honours MLIR's own command-line options
// (--mlir-print-ir-after-all, --mlir-timing, ...).
//
//===----------------------------------------------------------------------===//

#include "ir/TfmDialect.h"
#include "tools/common/DebugOption.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Support/Timing.h"

#include "llvm/Support/CommandLine.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;
namespace cl = llvm::cl;

static cl::opt<std::string> inputPath(cl::Positional,
                                      cl::desc("<model: a .mlir tfm module>"),
                                      cl::Required);
static cl::opt<std::string> outputPath("o", cl::desc("Output file"),
                                       cl::value_desc("path"),
                                       cl::init("-"));

int main(int argc, char **argv) {
  llvm::InitLLVM initLLVM(argc, argv);
  registerAsmPrinterCLOptions();
  registerMLIRContextCLOptions();
  registerPassManagerCLOptions();
  registerDefaultTimingManagerCLOptions();
  tfm::registerDebugOnlyOption();
  cl::ParseCommandLineOptions(argc, argv, "tfmc: transformer model compiler\n");

  DialectRegistry registry;
  registry.insert<tfm::TfmDialect, func::FuncDialect, arith::ArithDialect,
                  tensor::TensorDialect>();
  MLIRContext context(registry);
  // Users read these diagnostics; the generic op dump adds only noise.
  context.printOpOnDiagnostic(false);

  std::string error;
  auto input = openInputFile(inputPath, &error);
  if (!input) {
    llvm::errs() << "tfmc: " << error << "\n";
    return 1;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(input), llvm::SMLoc());
  SourceMgrDiagnosticHandler diagHandler(sourceMgr, &context);
  OwningOpRef<ModuleOp> module = parseSourceFile<ModuleOp>(sourceMgr, &context);
  if (!module)
    return 1;

  PassManager pm(&context);
  if (failed(applyPassManagerCLOptions(pm)))
    return 1;
  DefaultTimingManager tm;
  applyDefaultTimingManagerCLOptions(tm);
  TimingScope timing = tm.getRootScope();
  pm.enableTiming(timing);
  if (failed(pm.run(*module)))
    return 1;

  auto output = openOutputFile(outputPath, &error);
  if (!output) {
    llvm::errs() << "tfmc: " << error << "\n";
    return 1;
  }
  module->print(output->os());
  output->keep();
  return 0;
}
