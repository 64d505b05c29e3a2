//===- EntryPointTable.h - the generated C of a model's entry points -*- C++ -*-===//
//
// The part of a compiled model's generated C source that describes and
// calls its entry points (tfm_model_abi.h): per entry point its input,
// output and cache descriptors and a call that builds MLIR's memref
// descriptors from tfm_tensors, runs the generated function inside a call
// frame (an allocation failure returns TFM_ERROR_OUT_OF_MEMORY) and hands
// the result back; then the table and the model's caches.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_PACKAGING_ENTRYPOINTTABLE_H
#define TFM_CODEGEN_PACKAGING_ENTRYPOINTTABLE_H

#include "codegen/packaging/ModelPackager.h"

#include "llvm/Support/raw_ostream.h"

namespace mlir::tfm {

/// Writes the descriptors, calls and table of `model`'s entry points,
/// whose generated functions are `<symbolPrefix><name>` (MLIR's C
/// interface, with the library prefix). Defines the static arrays
/// `tfm_entry_points` and `tfm_caches` for the model description.
void writeEntryPointTable(const ModelDescription &model,
                          llvm::StringRef symbolPrefix, llvm::raw_ostream &os);

} // namespace mlir::tfm

#endif // TFM_CODEGEN_PACKAGING_ENTRYPOINTTABLE_H
