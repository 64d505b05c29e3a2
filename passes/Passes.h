//===- Passes.h - tfm-level transforms --------------------------*- C++ -*-===//

#ifndef TFM_PASSES_PASSES_H
#define TFM_PASSES_PASSES_H

#include "ir/TfmDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Shard/IR/ShardDialect.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tfm {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

/// The suffix of the batch twins tfm-pack-sequences and tfm-batch-images
/// derive (@encode_batch), by which the runtime finds them.
constexpr llvm::StringLiteral kBatchSuffix = "_batch";

/// The batch twin's name for `func`.
inline std::string batchTwinName(func::FuncOp func) {
  return (func.getSymName() + kBatchSuffix).str();
}

/// Whether `func` may get a batch twin: a public definition that is not a
/// twin itself and has none yet.
inline bool mayGetBatchTwin(ModuleOp module, func::FuncOp func) {
  return func.isPublic() && !func.isExternal() &&
         !func.getSymName().ends_with(kBatchSuffix) &&
         !module.lookupSymbol(batchTwinName(func));
}

} // namespace mlir::tfm

#endif // TFM_PASSES_PASSES_H
