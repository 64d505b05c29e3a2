//===- Rematerialize.h - defining ops cloned elsewhere ------*- C++ -*-===//
//
// For a pass that moves work into a region or function of its own and needs
// the constants (weights, index constants, casts of them) it reads there
// too, rather than passed in.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_IR_REMATERIALIZE_H
#define TFM_IR_REMATERIALIZE_H

#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::tfm {

/// Clones the ops that define `value`, operands first, where `b` is, and
/// returns the clone of `value`; `mapping` records the clones, so that ops
/// several values share are cloned once. Every value behind `value` must be
/// an op's result (no block argument).
inline Value rematerialize(OpBuilder &b, Value value, IRMapping &mapping) {
  if (Value known = mapping.lookupOrNull(value))
    return known;
  Operation *def = value.getDefiningOp();
  for (Value operand : def->getOperands())
    rematerialize(b, operand, mapping);
  b.clone(*def, mapping);
  return mapping.lookup(value);
}

} // namespace mlir::tfm

#endif // TFM_IR_REMATERIALIZE_H
