//===- Seq2SeqBuilder.h - a Seq2SeqSpec as tfm IR ---------------*- C++ -*-===//
//
// The module of an encoder-decoder (Seq2SeqFamilies.h), as its definition
// computes it: `@forward(source ids, decoder ids)` returning the decoder's
// logits for every decoder position ([decoder tokens, vocab]). T5's blocks
// are T5Builder.cpp's.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_BUILDERS_SEQ2SEQBUILDER_H
#define TFM_FRONTEND_BUILDERS_SEQ2SEQBUILDER_H

#include "frontend/builders/Seq2SeqSpec.h"
#include "frontend/formats/WeightStore.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

namespace mlir::tfm {

/// `@forward(source, decoder ids) -> logits`. Tensors of the checkpoint
/// that the model does not read are refused unless `isIgnoredWeight`.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildSeq2Seq(mlir::MLIRContext &context, const Seq2SeqSpec &spec,
             const WeightStore &weights, llvm::StringRef checkpoint,
             llvm::function_ref<bool(llvm::StringRef)> isIgnoredWeight);

/// The same for T5's blocks (spec.t5Blocks), which buildSeq2Seq calls.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildT5(mlir::MLIRContext &context, const Seq2SeqSpec &spec,
        const WeightStore &weights, llvm::StringRef checkpoint,
        llvm::function_ref<bool(llvm::StringRef)> isIgnoredWeight);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_BUILDERS_SEQ2SEQBUILDER_H
