//===- WeightFormats.h - the stored forms of a weight -----------*- C++ -*-===//
//
// What a weight's storage type (tfm.weight_decl after tfm-quantize-weights)
// means for the blob: its format (ir/WeightFormat.h, the table of formats,
// whose names the module's tfm.weight_formats record uses).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_LINALG_WEIGHTFORMATS_H
#define TFM_CODEGEN_LINALG_WEIGHTFORMATS_H

#include "ir/WeightFormat.h"

#include "mlir/IR/BuiltinTypes.h"

namespace mlir::tfm {

/// The format of a weight of storage type `type`.
WeightFormat storedFormatOf(RankedTensorType type);

} // namespace mlir::tfm

#endif // TFM_CODEGEN_LINALG_WEIGHTFORMATS_H
