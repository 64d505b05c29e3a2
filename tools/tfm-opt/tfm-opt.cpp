//===- tfm-opt.cpp - the tfm optimizer driver for lit tests -------------===//
//
// mlir-opt with the tfm dialect, the tfm passes and the upstream dialects and
// passes that tfm's lowerings produce.
//
//===----------------------------------------------------------------------===//

#include "codegen/Passes.h"
#include "codegen/Pipeline.h"
#include "ir/TfmDialect.h"
#include "passes/Passes.h"
#include "tools/common/DebugOption.h"

#include "mlir/InitAllDialects.h"
#include "mlir/InitAllExtensions.h"
#include "mlir/InitAllPasses.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPasses();
  mlir::tfm::registerTfmCodegenPasses();
  mlir::tfm::registerCodegenPipeline();
  mlir::tfm::registerTfmPasses();
  mlir::tfm::registerDebugOnlyOption();

  mlir::DialectRegistry registry;
  mlir::registerAllDialects(registry);
  mlir::registerAllExtensions(registry);
  mlir::tfm::registerLLVMTranslations(registry);
  mlir::tfm::registerCodegenExtensions(registry);
  registry.insert<mlir::tfm::TfmDialect>();
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "tfm optimizer driver\n", registry));
}
