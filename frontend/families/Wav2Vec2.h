//===- Wav2Vec2.h - Wav2Vec2 and HuBERT -------------------------*- C++ -*-===//
//
// transformers' Wav2Vec2Model / Wav2Vec2ForCTC and HubertModel /
// HubertForCTC from Hugging Face directories (model_type wav2vec2,
// hubert): a convolutional feature encoder over 16 kHz samples, a
// transformer encoder with a convolutional position embedding, and the
// CTC head whose frames the runtime decodes greedily (tfm_transcribe).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FAMILIES_WAV2VEC2_H
#define TFM_FRONTEND_FAMILIES_WAV2VEC2_H

#include "frontend/families/LoadedModel.h"
#include "frontend/formats/ConfigReader.h"

namespace mlir::tfm {

/// Whether config.json's model_type is a waveform speech model's.
bool isSpeechFamily(llvm::StringRef modelType);

/// The waveform speech families, for messages.
std::string supportedSpeechFamilies();

/// Builds the module of the model `config` describes from `directory`
/// (its config.json, model.safetensors, preprocessor_config.json and, for
/// a CTC head, the tokenizer's vocab.json) into `model`.
llvm::Error loadSpeechModel(MLIRContext &context, llvm::StringRef directory,
                            llvm::StringRef modelType, ConfigReader &config,
                            LoadedModel &model);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FAMILIES_WAV2VEC2_H
