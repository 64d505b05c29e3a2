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
      signalPassFailure();
  }
};

} // namespace
