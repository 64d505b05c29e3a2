//===- LoadedModel.h - what a family's reader produces ----------*- C++ -*-===//
//
// A model read from its description: the tfm module, the weights it
// references, the tokenizer, and what the driver, packager and runtime
// learn of it (ModelLoader.cpp's describeModel records it as `tfm.model`).
// Each family's reader fills one.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FAMILIES_LOADEDMODEL_H
#define TFM_FRONTEND_FAMILIES_LOADEDMODEL_H

#include "frontend/builders/DecoderSpec.h"
#include "frontend/formats/WeightStore.h"
#include "frontend/tokenizers/Tokenizer.h"
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
  /// The chat template (Jinja source; frontend/tokenizers/ChatTemplates.h);
  /// empty when the model has none.
  std::string chatTemplate;
  /// Where the tokenizer was read from (a file, or the directory of a
  /// byte-level BPE); empty without one.
  std::string tokenizerPath;
  /// What the reader changed or ignored and a user should know ("<file>:
  /// ..."), printed by the driver as notes.
  std::vector<std::string> notes;
};

/// What a diffusion pipeline is compiled for: the image size in pixels
/// (its feature maps are static; 0: the UNet's sample_size times the VAE's
/// scale factor, diffusers' default), and for a single-file checkpoint the
/// diffusers folder whose configs and tokenizer it is read with.
struct DiffusionOptions {
  int64_t height = 0, width = 0;
  std::string configFolder;
};

/// Records a decoder's sizes in `model`.
void recordDecoderShape(LoadedModel &model, const DecoderSpec &spec);
} // namespace mlir::tfm

#endif // TFM_FRONTEND_FAMILIES_LOADEDMODEL_H
