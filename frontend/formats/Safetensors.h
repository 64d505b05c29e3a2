//===- Safetensors.h - reader of .safetensors files -------------*- C++ -*-===//
//
// Reads single-file and sharded (model.safetensors.index.json) checkpoints
// into a WeightStore, validating the header: its length, its JSON, each
// tensor's dtype, shape and byte range (in bounds, matching the shape, not
// overlapping another tensor).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FORMATS_SAFETENSORS_H
#define TFM_FRONTEND_FORMATS_SAFETENSORS_H

#include "frontend/formats/WeightStore.h"

#include "llvm/Support/Error.h"

namespace mlir::tfm {

/// Adds every tensor of one .safetensors file to `store`, as views of the
/// mapped file in their stored dtype.
llvm::Error readSafetensorsFile(llvm::StringRef path, WeightStore &store);

/// Reads the checkpoint of a Hugging Face model directory: model.safetensors,
/// or the shards listed by model.safetensors.index.json.
llvm::Error readSafetensorsCheckpoint(llvm::StringRef directory,
                                      WeightStore &store);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FORMATS_SAFETENSORS_H
