//===- WeightLayout.h - where weights live in the blob ----------*- C++ -*-===//
//
// The tfm-lay-out-weights pass: every distinct tfm.weight gets a place
// in one byte blob, joins of weights (tfm.concat) are placed back to back so
// that they become views, and weights that only linear ops read may be
// stored as panels (see kPanelWidth) that the GEMM kernel reads as they are.
// The choices are recorded on the module (tfm.weight_layout,
// tfm.weight_panels, tfm.weight_bytes) for the packager that writes the
// blob, and the weights become views of a `weights` function argument.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_LINALG_WEIGHTLAYOUT_H
#define TFM_CODEGEN_LINALG_WEIGHTLAYOUT_H

#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::tfm {

struct WeightLayout {
  /// Byte offset of each weight.
  llvm::StringMap<int64_t> offsets;
  /// Joins placed back to back (tfm.concat ops) and the offset of their
  /// first part.
  llvm::DenseMap<Operation *, int64_t> joins;
  /// Weights stored as panels.
  llvm::StringSet<> panels;
};

/// Places every weight of `module` (panels where `packPanels` allows) and
/// records the layout on it.
FailureOr<WeightLayout> layOutWeights(ModuleOp module, bool packPanels);

/// Gives every function that reads weights, directly or through calls, a
/// leading `memref<?xi8>` weights argument; replaces tfm.weight ops and
/// placed joins by views of it (panels behind a linalg.unpack that the
/// linear lowering reads through) and passes the argument along at calls.
void lowerWeights(ModuleOp module, const WeightLayout &layout);

/// The byte tensor of block panels that `weight` (a weight in a block
/// format, as lowerWeights builds it) is a view of; null otherwise.
Value blockWeightBytes(Value weight);

/// Erases what lowerWeights built to read weights (tfm.dequantize, block
/// views, panels' unpacks) once the kernels that took the stored form
/// left it unused.
void eraseDeadWeightReads(ModuleOp module);

/// Whether `unpack` restores a [rows, cols] matrix from panels of
/// kPanelWidth rows, as lowerWeights builds it; the panels are its source.
bool isPanelUnpack(Operation *unpack);

} // namespace mlir::tfm

#endif // TFM_CODEGEN_LINALG_WEIGHTLAYOUT_H
