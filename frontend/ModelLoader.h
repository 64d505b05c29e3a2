//===- ModelLoader.h - read a model description into tfm IR -----*- C++ -*-===//
//
// The frontends' entry point: a Hugging Face directory (config.json +
// safetensors), a llama2.c checkpoint or a GGUF file becomes a tfm module,
// the weights it references, and the tokenizer vocabulary when one is
// found.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_MODELLOADER_H
#define TFM_FRONTEND_MODELLOADER_H

#include "frontend/families/LoadedModel.h"
#include "frontend/formats/LoraAdapter.h"

namespace mlir::tfm {

/// `path`: a Hugging Face model directory, a llama2.c `.bin` or a GGUF
/// file (`.gguf`).
/// `tokenizerPath`: overrides the tokenizer found beside the model;
/// `chatTemplatePath`: the chat template the model carries;
/// `adapters`: PEFT LoRA adapters merged into a decoder folder's weights
/// (refused for other models).
/// `mmprojPath`: llama.cpp's mmproj file, the image side of a GGUF text
/// model (Mmproj.h).
llvm::Expected<LoadedModel>
loadModel(mlir::MLIRContext &context, llvm::StringRef path,
          llvm::StringRef tokenizerPath, llvm::StringRef chatTemplatePath = "",
          DiffusionOptions diffusion = {},
          llvm::ArrayRef<LoraAdapterSpec> adapters = {},
          llvm::StringRef mmprojPath = "");

/// Records what `model` (read from `path`) is on its module as the
/// `tfm.model` attribute, from which the driver, packager and runtime learn
/// it (ModelAttr). Special tokens outside the vocabulary are dropped with a
/// note in `model.notes`; values ModelAttr cannot hold are an error naming
/// `path`.
llvm::Error describeModel(LoadedModel &model, llvm::StringRef path);

/// `model` with `chatTemplate` (read from `chatTemplatePath`) as its chat
/// template; an error naming the file when the template cannot be one.
llvm::Expected<ModelAttr> withChatTemplate(ModelAttr model,
                                           llvm::StringRef chatTemplate,
                                           llvm::StringRef chatTemplatePath);

/// What tfmc reads, a line per kind, from the families' tables (for
/// --help and the documentation's check).
std::string supportedModelsSummary();

/// The Hugging Face reader (HuggingFace.cpp).
llvm::Expected<LoadedModel>
loadHuggingFaceModel(mlir::MLIRContext &context, llvm::StringRef directory,
                     DiffusionOptions diffusion = {},
                     llvm::ArrayRef<LoraAdapterSpec> adapters = {});

} // namespace mlir::tfm

#endif // TFM_FRONTEND_MODELLOADER_H
