//===- Passes.h - tfm-level transforms --------------------------*- C++ -*-===//

#ifndef TFM_PASSES_PASSES_H
#define TFM_PASSES_PASSES_H

#include "ir/TfmDialect.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tfm {

#define GEN_PASS_DECL
#include "passes/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "passes/Passes.h.inc"

} // namespace mlir::tfm

#endif // TFM_PASSES_PASSES_H
