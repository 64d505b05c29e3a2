//===- EncoderBuilder.h - an EncoderSpec as tfm IR --------------*- C++ -*-===//
//
// The module of an encoder (BERT and its kin, EncoderFamilies.h):
// `@encode(token ids, token types)` returning the last hidden state
// ([tokens, hidden]), or `@embed` for a sentence embedder.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_BUILDERS_ENCODERBUILDER_H
#define TFM_FRONTEND_BUILDERS_ENCODERBUILDER_H

#include "frontend/builders/EncoderSpec.h"
#include "frontend/formats/WeightStore.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

namespace mlir::tfm {

/// `@encode` of the encoder (`@embed` for a sentence embedder). Tensors the
/// checkpoint holds beyond the base model (a pooler, a task head) are refused
/// unless `isIgnoredWeight`.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildEncoder(mlir::MLIRContext &context, const EncoderSpec &spec,
             const WeightStore &weights, llvm::StringRef checkpoint,
             llvm::function_ref<bool(llvm::StringRef)> isIgnoredWeight);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_BUILDERS_ENCODERBUILDER_H
