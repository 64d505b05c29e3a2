//===- HoistWeights.cpp - make weights available earlier ----------------===//

#include "passes/HoistWeights.h"
#include "ir/TfmOps.h"

using namespace mlir;

/// The op defining `v` in `point`'s block after `point`, or null.
static Operation *definedAfter(Value v, Operation *point) {
  Operation *def = v ? v.getDefiningOp() : nullptr;
  if (!def || def->getBlock() != point->getBlock() ||
      def->isBeforeInBlock(point))
    return nullptr;
  return def;
}

bool mlir::tfm::hoistWeightsBefore(ValueRange values, Operation *point,
                                   RewriterBase &rewriter) {
  for (Value v : values)
    if (Operation *def = definedAfter(v, point); def && !isa<WeightOp>(def))
      return false;
  for (Value v : values)
    if (Operation *def = definedAfter(v, point))
      rewriter.moveOpBefore(def, point);
  return true;
}
