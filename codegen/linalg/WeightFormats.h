//===- WeightFormats.h - the stored forms of a weight ------------*- C++ -*-===//
//
// What a weight's storage type (tfm.weight_decl after tfm-quantize-weights)
// means for the blob: its format (WeightEncoding.h, which also encodes
// f32 values into it as the packager streams the checkpoint) and the
// format's name in the module's tfm.weight_formats record.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_LINALG_WEIGHTFORMATS_H
#define TFM_CODEGEN_LINALG_WEIGHTFORMATS_H

#include "codegen/packaging/WeightEncoding.h"

#include "mlir/IR/BuiltinTypes.h"

#include "llvm/ADT/StringRef.h"

#include <optional>

namespace mlir::tfm {

/// The format of a weight of storage type `type`.
StoredFormat storedFormatOf(RankedTensorType type);
/// "f32", "bf16", "f16", "q8_0", "q4_0" (the tfm.weight_formats record).
llvm::StringRef storedFormatName(StoredFormat format);
std::optional<StoredFormat> parseStoredFormat(llvm::StringRef name);

} // namespace mlir::tfm

#endif // TFM_CODEGEN_LINALG_WEIGHTFORMATS_H
