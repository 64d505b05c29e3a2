//===- NameKernelsByModule.cpp - unique kernel names -----------------------===//
//
// See NameKernelsByModulePass in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "codegen/cuda/Passes.h"

#include "mlir/Dialect/GPU/IR/GPUDialect.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_NAMEKERNELSBYMODULEPASS
#include "codegen/cuda/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;

namespace {

struct NameKernelsByModulePass
    : mlir::tfm::impl::NameKernelsByModulePassBase<NameKernelsByModulePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = &getContext();
    // (module, old kernel name) -> new name.
    llvm::DenseMap<std::pair<StringAttr, StringAttr>, StringAttr> renamed;
    for (auto gpuModule : module.getOps<gpu::GPUModuleOp>()) {
      auto kernels = llvm::filter_to_vector(
          gpuModule.getOps<gpu::GPUFuncOp>(),
          [](gpu::GPUFuncOp f) { return f.isKernel(); });
      for (gpu::GPUFuncOp kernel : kernels) {
        StringAttr old = kernel.getNameAttr();
        StringAttr name =
            kernels.size() == 1
                ? gpuModule.getSymNameAttr()
                : StringAttr::get(context, gpuModule.getSymName() + "_" +
                                               old.getValue());
        if (name == old)
          continue;
        SymbolTable::setSymbolName(kernel, name);
        renamed[{gpuModule.getSymNameAttr(), old}] = name;
      }
    }
    module.walk([&](gpu::LaunchFuncOp launch) {
      auto found = renamed.find(
          {launch.getKernelModuleName(), launch.getKernelName()});
      if (found != renamed.end())
        launch.setKernelAttr(SymbolRefAttr::get(
            launch.getKernelModuleName(),
            {FlatSymbolRefAttr::get(found->second)}));
    });
  }
};

} // namespace
