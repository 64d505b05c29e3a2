//===- ExportEntryPoints.cpp - C interface and prefix of entry points ---===//
//
// See ExportEntryPointsPass in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "codegen/packaging/Passes.h"
#include "ir/TfmDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_EXPORTENTRYPOINTSPASS
#include "codegen/packaging/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;

namespace {

struct ExportEntryPointsPass
    : mlir::tfm::impl::ExportEntryPointsPassBase<ExportEntryPointsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // From here on the module is code: what it says about the model has
    // been read by the packager (Compiler.cpp reads it before lowering), and
    // LLVM-level tools (mlir-translate) do not know the tfm dialect.
    module->removeAttr(tfm::kModelAttrName);
    SymbolTable symbols(module);
    for (auto func :
         llvm::make_early_inc_range(module.getOps<func::FuncOp>())) {
      if (!func.isPublic() || func.isExternal())
        continue;
      func->setAttr(LLVM::LLVMDialect::getEmitCWrapperAttrName(),
                    UnitAttr::get(&getContext()));
      if (prefix.empty())
        continue;
      std::string renamed = prefix + "_" + func.getName().str();
      if (failed(symbols.rename(func, renamed))) {
        func.emitError() << "cannot rename @" << func.getName() << " to @"
                         << renamed;
        return signalPassFailure();
      }
    }
  }
};

} // namespace
