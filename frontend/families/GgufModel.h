//===- GgufModel.h - LLaMA-family models from GGUF files --------*- C++ -*-===//
//
// A GGUF file's architecture, weights and tokenizer as a LoadedModel: the
// hyperparameters come from "<arch>.*" metadata, the tensors keep their
// stored types (WeightFormat: F32, F16, BF16, and GGML's block formats) as
// views of the mapped file, and the tokenizer comes from "tokenizer.ggml.*".
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FAMILIES_GGUFMODEL_H
#define TFM_FRONTEND_FAMILIES_GGUFMODEL_H

#include "frontend/ModelLoader.h"

namespace mlir::tfm {

class GgufFile;

/// The general.architecture values tfmc reads ("llama, qwen2, gemma").
std::string supportedGgufArchitectureNames();

/// `withTokenizer`: read the embedded tokenizer (false when the user gives
/// another).
llvm::Expected<LoadedModel> loadGgufModel(mlir::MLIRContext &context,
                                          llvm::StringRef path,
                                          bool withTokenizer);

/// Adds every tensor of the GGUF file at `path` to `weights` (a .mlir
/// model compiled with --checkpoint FILE.gguf).
llvm::Error readGgufWeights(llvm::StringRef path, WeightStore &weights);

/// The tokenizer `file` embeds; nothing when it has none.
llvm::Expected<std::optional<TokenizerVocab>>
readGgufTokenizer(const GgufFile &file);

/// The tokenizer of the GGUF file at `path` (--tokenizer model.gguf).
llvm::Expected<TokenizerVocab> readGgufTokenizerFile(llvm::StringRef path);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FAMILIES_GGUFMODEL_H
