//===- HoistWeights.h - make weights available earlier ----------*- C++ -*-===//
//
// Fusion passes put a fused op where the first of the ops it replaces was;
// the weights of the later ones (tfm.weight, defined just before their use
// by the frontends) move up to it.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_PASSES_HOISTWEIGHTS_H
#define TFM_PASSES_HOISTWEIGHTS_H

#include "mlir/IR/PatternMatch.h"

namespace mlir::tfm {

/// Whether every value (null ones skipped) is defined before `point`, or by
/// a tfm.weight that can move there; if so the late weights are moved.
/// Nothing moves when some value cannot be made available.
bool hoistWeightsBefore(ValueRange values, Operation *point,
                        RewriterBase &rewriter);

} // namespace mlir::tfm

#endif // TFM_PASSES_HOISTWEIGHTS_H
