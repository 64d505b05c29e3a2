//===- DropReturnedArguments.cpp - drop results aliasing arguments ------===//
//
// See DropReturnedArgumentsPass in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "codegen/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/SymbolTable.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_DROPRETURNEDARGUMENTSPASS
#include "codegen/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

struct DropReturnedArgumentsPass
    : mlir::tfm::impl::DropReturnedArgumentsPassBase<
          DropReturnedArgumentsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTableCollection symbols;
    SymbolUserMap users(symbols, module);
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal() || !users.getUsers(func).empty() ||
          !func.getBody().hasOneBlock())
        continue;
      auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
      llvm::BitVector drop(func.getNumResults());
      for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
        auto argument = dyn_cast<BlockArgument>(value);
        drop[i] = argument && isa<BaseMemRefType>(value.getType()) &&
                  argument.getOwner() == &func.getBody().front();
      }
      if (drop.none())
        continue;
      ret->eraseOperands(drop);
      (void)func.eraseResults(drop);
    }
  }
};

} // namespace
