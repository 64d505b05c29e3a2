//===- Seq2SeqFamilies.h - encoder-decoder model_types ----------*- C++ -*-===//
//
// What each Hugging Face encoder-decoder `model_type` is, as a Seq2SeqSpec,
// and the module Seq2SeqBuilder.cpp makes of it: the model as its
// definition computes it, `@forward(source ids, decoder ids)` returning the
// decoder's logits for every decoder position ([decoder tokens, vocab]).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FAMILIES_SEQ2SEQFAMILIES_H
#define TFM_FRONTEND_FAMILIES_SEQ2SEQFAMILIES_H

#include "frontend/builders/Seq2SeqSpec.h"
#include "frontend/formats/ConfigReader.h"
#include "frontend/formats/WeightStore.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace mlir::tfm {

/// The model_types readSeq2SeqFamily knows, for messages.
std::string supportedSeq2SeqFamilies();

/// Fills `spec` from `config` for `modelType`; false when the type is not
/// an encoder-decoder tfmc knows. Problems are recorded in `config`.
bool readSeq2SeqFamily(llvm::StringRef modelType, ConfigReader &config,
                       Seq2SeqSpec &spec);

/// Sizes that must be positive and fit together; errors name `configPath`.
llvm::Error validateSeq2SeqSpec(const Seq2SeqSpec &spec,
                                llvm::StringRef configPath);

/// The generation defaults of the model in `directory`: its
/// generation_config.json, else the generation fields of its config.json
/// (`config`), as transformers' generate() reads them.
llvm::Expected<GenerationAttr>
readGenerationDefaults(mlir::MLIRContext &context, llvm::StringRef directory,
                       const llvm::json::Object &config,
                       const Seq2SeqSpec &spec);

/// A speech model's preprocessing: preprocessor_config.json in `directory`
/// (WhisperFeatureExtractor's fields and defaults), checked to give the
/// features the encoder takes.
llvm::Expected<AudioPreprocessingAttr>
readAudioPreprocessing(mlir::MLIRContext &context, llvm::StringRef directory,
                       const Seq2SeqSpec &spec);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FAMILIES_SEQ2SEQFAMILIES_H
