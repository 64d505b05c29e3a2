//===- TfmOps.h - tfm dialect operations ------------------------*- C++ -*-===//
//
// The ops of the tfm dialect, generated from TfmOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_IR_TFMOPS_H
#define TFM_IR_TFMOPS_H

#include "ir/TfmDialect.h"
#include "ir/TfmTraits.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "ir/TfmOps.h.inc"

namespace mlir::tfm {

/// The bucket of tfm.attention's relative_bias table (T5's
/// relative_attention_bias) for `distance` = query position - key
/// position, computed in float32 as transformers does so that the buckets
/// at the logarithmic range's edges agree. Bidirectional attention gives
/// keys after the query the upper half of the buckets.
int64_t relativePositionBucket(int64_t distance, int64_t buckets,
                               int64_t maxDistance, bool bidirectional);

/// Checks a weight's storage type (`what` names it in messages): floats
/// without an encoding, or i8/i4 codes of a matrix with the
/// #tfm.block_quant encoding of that code width.
LogicalResult verifyWeightStorage(Operation *op, StringRef what,
                                  RankedTensorType type);

} // namespace mlir::tfm

#endif // TFM_IR_TFMOPS_H
