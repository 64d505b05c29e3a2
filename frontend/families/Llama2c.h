//===- Llama2c.h - llama2.c checkpoints -------------------------*- C++ -*-===//
//
// Karpathy's llama2.c `.bin` checkpoints (a LLaMA decoder in f32) and the
// tokenizer.bin beside them.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FAMILIES_LLAMA2C_H
#define TFM_FRONTEND_FAMILIES_LLAMA2C_H

#include "frontend/families/LoadedModel.h"

namespace mlir::tfm {

/// The llama2.c checkpoint at `path`, with the tokenizer.bin beside it
/// when there is one.
llvm::Expected<LoadedModel> loadLlama2cModel(mlir::MLIRContext &context,
                                             llvm::StringRef path);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FAMILIES_LLAMA2C_H
