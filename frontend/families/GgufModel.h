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

#include "frontend/families/LoadedModel.h"
#include "frontend/formats/LoraAdapter.h"

namespace mlir::tfm {

/// The general.architecture values tfmc reads ("llama, qwen2, gemma").
std::string supportedGgufArchitectureNames();

/// `withTokenizer`: read the embedded tokenizer (false when the user gives
/// another).
/// `adapters`: llama.cpp's GGUF LoRA files merged into its weights
/// (--lora).
llvm::Expected<LoadedModel>
loadGgufModel(mlir::MLIRContext &context, llvm::StringRef path,
              bool withTokenizer,
              llvm::ArrayRef<LoraAdapterSpec> adapters = {});

/// Adds every tensor of the GGUF file at `path` to `weights` (a .mlir
/// model compiled with --checkpoint FILE.gguf).
llvm::Error readGgufWeights(llvm::StringRef path, WeightStore &weights);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FAMILIES_GGUFMODEL_H
