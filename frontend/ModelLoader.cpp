//===- ModelLoader.cpp - read a model description into tfm IR -----------===//

#include "frontend/ModelLoader.h"
#include "frontend/ErrorMessages.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::tfm;

void mlir::tfm::recordDecoderShape(LoadedModel &model,
                                   const DecoderSpec &spec) {
  model.vocabSize = spec.vocabSize;
  model.maxContext = spec.maxContext;
  model.hiddenSize = spec.hiddenSize;
  model.numLayers = spec.numLayers;
  model.numHeads = spec.numHeads;
  model.numKVHeads = spec.numKVHeads;
}

llvm::Expected<LoadedModel> mlir::tfm::loadModel(mlir::MLIRContext &context,
                                           llvm::StringRef path,
                                           llvm::StringRef tokenizerPath) {
  llvm::Expected<LoadedModel> model = [&]() -> llvm::Expected<LoadedModel> {
    if (llvm::sys::fs::is_directory(path))
      return loadHuggingFaceModel(context, path);
    if (!llvm::sys::fs::exists(path))
      return makeError("model '" + path + "' does not exist");
    if (path.ends_with(".bin"))
      return loadLlama2cModel(context, path);
    return makeError("model '" + path +
                     "': expected a Hugging Face model directory, a llama2.c "
                     ".bin checkpoint or a .mlir file");
  }();
  if (!model || tokenizerPath.empty())
    return model;
  // An explicit tokenizer replaces the one found beside the model.
  llvm::Expected<TokenizerVocab> vocab =
      tokenizerPath.ends_with(".model")
          ? readSentencePieceModel(tokenizerPath)
          : readLlama2cTokenizer(tokenizerPath, model->vocabSize);
  if (!vocab)
    return vocab.takeError();
  model->tokenizer = std::move(*vocab);
  if (int64_t(model->tokenizer->pieces.size()) != model->vocabSize)
    return makeError(tokenizerPath + ": tokenizer has " +
                     llvm::Twine(model->tokenizer->pieces.size()) +
                     " tokens, the model's vocabulary has " +
                     llvm::Twine(model->vocabSize));
  return model;
}
