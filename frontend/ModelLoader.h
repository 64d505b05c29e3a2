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

#include "frontend/builders/DecoderSpec.h"
#include "frontend/formats/WeightStore.h"
#include "frontend/tokenizers/Tokenizer.h"
#include "ir/StopTokensAttr.h"
#include "ir/TfmDialect.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::tfm {

struct LoadedModel {
  mlir::OwningOpRef<mlir::ModuleOp> module;
  WeightStore weights;
  std::optional<TokenizerVocab> tokenizer;
  int64_t vocabSize = 0;
  int64_t maxContext = 0;
  int64_t hiddenSize = 0, numLayers = 0, numHeads = 0, numKVHeads = 0;
  int32_t bosToken = -1, eosToken = -1;
  /// Tokens that end generation besides eosToken (a config's and
  /// generation_config.json's other eos_token_ids, GGUF's eot and eom
  /// tokens): the module's kStopTokensAttrName, tfm_model_desc's
  /// stop_tokens.
  std::vector<int64_t> stopTokens;
  /// Whether encoded prompts start with BOS.
  bool addBos = true;
  /// The architecture (config.json's model_type; "llama" for llama2.c).
  std::string family;
  /// A classifier's class names by id (id2label); empty otherwise.
  std::vector<std::string> labels;
  /// An image model's preprocessor_config.json; null otherwise.
  ImagePreprocessingAttr imagePreprocessing;
  /// A speech model's preprocessing (Whisper's preprocessor_config.json).
  AudioPreprocessingAttr audioPreprocessing;
  /// A waveform speech model's input, and a recognizer's CTC decoding
  /// (its labels are the vocabulary).
  WaveformAttr waveform;
  /// An encoder-decoder's generation defaults (generation_config.json).
  GenerationAttr generation;
  /// The chat template (Jinja source; frontend/tokenizers/ChatTemplates.h); empty
  /// when the model has none.
  std::string chatTemplate;
  /// Where the tokenizer was read from (a file, or the directory of a
  /// byte-level BPE); empty without one.
  std::string tokenizerPath;
  /// What the reader changed or ignored and a user should know ("<file>:
  /// ..."), printed by the driver as notes.
  std::vector<std::string> notes;
};

/// Records what `model` (read from `path`) is on its module as the
/// `tfm.model` attribute, from which the driver, packager and runtime learn
/// it (ModelAttr). Special tokens outside the vocabulary are dropped with a
/// note in `model.notes`; values ModelAttr cannot hold are an error naming
/// `path`.
llvm::Error describeModel(LoadedModel &model, llvm::StringRef path);

/// Reads the tokenizer at `path` (what ModelAttr's `tokenizer` names): a
/// SentencePiece .model, a llama2.c tokenizer .bin, a GGUF file's embedded
/// tokenizer, or a byte-level BPE
/// directory or tokenizer.json; checked to have `vocabSize` tokens.
llvm::Expected<TokenizerVocab> readTokenizerAt(llvm::StringRef path,
                                               int64_t vocabSize);

/// Records a decoder's sizes in `model`.
void recordDecoderShape(LoadedModel &model, const DecoderSpec &spec);

/// `path`: a Hugging Face model directory, a llama2.c `.bin` or a GGUF
/// file (`.gguf`).
/// `tokenizerPath`: overrides the tokenizer found beside the model;
/// `chatTemplatePath`: the chat template the model carries.
/// What tfmc reads, a line per kind, from the families' tables (for
/// --help and the documentation's check).
std::string supportedModelsSummary();

/// What a diffusion pipeline is compiled for: the image size in pixels
/// (its feature maps are static; 0: the UNet's sample_size times the VAE's
/// scale factor, diffusers' default), and for a single-file checkpoint the
/// diffusers folder whose configs and tokenizer it is read with.
struct DiffusionOptions {
  int64_t height = 0, width = 0;
  std::string configFolder;
};

llvm::Expected<LoadedModel> loadModel(mlir::MLIRContext &context,
                                      llvm::StringRef path,
                                      llvm::StringRef tokenizerPath,
                                      llvm::StringRef chatTemplatePath = "",
                                      DiffusionOptions diffusion = {});

/// `model` with `chatTemplate` (read from `chatTemplatePath`) as its chat
/// template; an error naming the file when the template cannot be one.
llvm::Expected<ModelAttr> withChatTemplate(ModelAttr model,
                                           llvm::StringRef chatTemplate,
                                           llvm::StringRef chatTemplatePath);

/// The Hugging Face reader (HuggingFace.cpp).
llvm::Expected<LoadedModel> loadHuggingFaceModel(mlir::MLIRContext &context,
                                                 llvm::StringRef directory,
                                                 DiffusionOptions diffusion = {});

/// The llama2.c reader (Llama2c.cpp).
llvm::Expected<LoadedModel> loadLlama2cModel(mlir::MLIRContext &context,
                                             llvm::StringRef path);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_MODELLOADER_H
