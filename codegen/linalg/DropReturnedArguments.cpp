//===- DropReturnedArguments.cpp - drop results aliasing arguments ------===//
//
// See DropReturnedArgumentsPass in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "codegen/linalg/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_DROPRETURNEDARGUMENTSPASS
#include "codegen/linalg/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

struct DropReturnedArgumentsPass
    : mlir::tfm::impl::DropReturnedArgumentsPassBase<
          DropReturnedArgumentsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    // A loop result that yields its own iter_arg is the loop's init.
    RewritePatternSet loops(&getContext());
    scf::ForOp::getCanonicalizationPatterns(loops, &getContext());
    if (failed(applyPatternsGreedily(module, std::move(loops))))
      return signalPassFailure();
    SymbolTableCollection symbols;
    SymbolUserMap users(symbols, module);
    for (auto func : module.getOps<func::FuncOp>()) {
      if (func.isExternal() || !func.getBody().hasOneBlock())
        continue;
      // Callers see the dropped results as the operands they passed (an
      // entry point may call another: @decode calls @prefill when nothing
      // inlined it); a use other than a call keeps the function as it is.
      SmallVector<func::CallOp> calls;
      bool onlyCalled = true;
      for (Operation *user : users.getUsers(func)) {
        auto call = dyn_cast<func::CallOp>(user);
        onlyCalled &= bool(call);
        if (call)
          calls.push_back(call);
      }
      if (!onlyCalled)
        continue;
      auto ret = cast<func::ReturnOp>(func.getBody().front().getTerminator());
      llvm::BitVector drop(func.getNumResults());
      SmallVector<unsigned> argumentOf(func.getNumResults(), 0);
      for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
        auto argument = dyn_cast<BlockArgument>(value);
        drop[i] = argument && isa<BaseMemRefType>(value.getType()) &&
                  argument.getOwner() == &func.getBody().front();
        if (drop[i])
          argumentOf[i] = argument.getArgNumber();
      }
      if (drop.none())
        continue;
      ret->eraseOperands(drop);
      (void)func.eraseResults(drop);
      for (func::CallOp call : calls) {
        OpBuilder b(call);
        auto replacement =
            func::CallOp::create(b, call.getLoc(), func, call.getOperands());
        unsigned kept = 0;
        for (auto [i, result] : llvm::enumerate(call.getResults()))
          result.replaceAllUsesWith(drop[i] ? call.getOperand(argumentOf[i])
                                            : replacement.getResult(kept++));
        call.erase();
      }
    }
  }
};

} // namespace
