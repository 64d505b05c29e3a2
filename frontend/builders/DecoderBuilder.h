//===- DecoderBuilder.h - decoder-only models as tfm IR ---------*- C++ -*-===//
//
// Builds `func.func @forward(%tokens: tensor<?xi32>) -> tensor<?x{vocab}xf32>`
// for a DecoderSpec, checking every weight it references against the
// WeightStore (present, right shape) and that the store holds nothing else.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_BUILDERS_DECODERBUILDER_H
#define TFM_FRONTEND_BUILDERS_DECODERBUILDER_H

#include "frontend/builders/DecoderSpec.h"
#include "frontend/formats/WeightStore.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include "llvm/Support/Error.h"

namespace mlir::tfm {

/// Checks the spec's numbers (positive, heads dividing the width, ...).
llvm::Error validateDecoderSpec(const DecoderSpec &spec,
                                llvm::StringRef configPath);

/// Builds the module; `checkpoint` names the weights' file for messages.
/// Names listed in `ignoredWeights` may be left unused (e.g. buffers that
/// some checkpoints save, like GPT-2's attention mask).
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildDecoder(mlir::MLIRContext &context, const DecoderSpec &spec,
             const WeightStore &weights, llvm::StringRef checkpoint,
             llvm::function_ref<bool(llvm::StringRef)> isIgnoredWeight);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_BUILDERS_DECODERBUILDER_H
