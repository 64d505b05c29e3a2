//===- ConvertMPIToLLVM.cpp - mpi ops as MPI library calls ---------------===//
//
// The tfm-convert-mpi-to-llvm pass (see Passes.td): upstream's MPI-to-LLVM
// patterns, run as their own conversion as the CPU pipeline runs each
// dialect's.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/Passes.h"

#include "mlir/Conversion/LLVMCommon/ConversionTarget.h"
#include "mlir/Conversion/LLVMCommon/TypeConverter.h"
#include "mlir/Conversion/MPIToLLVM/MPIToLLVM.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_CONVERTMPITOLLVMPASS
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

struct ConvertMPIToLLVMPass
    : tfm::impl::ConvertMPIToLLVMPassBase<ConvertMPIToLLVMPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool hasMPI = false;
    module.walk([&](Operation *op) {
      if (isa<mpi::MPIDialect>(op->getDialect()))
        hasMPI = true;
    });
    if (!hasMPI)
      return;
    LLVMTypeConverter converter(&getContext());
    RewritePatternSet patterns(&getContext());
    mpi::populateMPIToLLVMConversionPatterns(converter, patterns);
    LLVMConversionTarget target(getContext());
    target.addIllegalDialect<mpi::MPIDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    renameOpenMPIOps(module);
  }

  /// Upstream (LLVM 22) names Open MPI's predefined reduction ops
  /// `ompi_mpi_<op>`; Open MPI's mpi.h defines MPI_SUM as
  /// `&ompi_mpi_op_sum` (and so on), the symbols libmpi exports. Without
  /// this, a model's link fails on `ompi_mpi_sum`.
  static void renameOpenMPIOps(ModuleOp module) {
    static const char *const kOps[] = {
        "max", "min",  "sum",  "prod",   "land",   "band",   "lor",
        "bor", "lxor", "bxor", "minloc", "maxloc", "replace"};
    for (const char *op : kOps) {
      std::string upstream = std::string("ompi_mpi_") + op;
      auto global = module.lookupSymbol<LLVM::GlobalOp>(upstream);
      if (!global)
        continue;
      auto renamed = StringAttr::get(module.getContext(),
                                     std::string("ompi_mpi_op_") + op);
      if (failed(SymbolTable::replaceAllSymbolUses(global, renamed, module)))
        continue;
      global.setSymName(renamed.getValue());
    }
  }
};

} // namespace
