//===- EncoderFamilies.h - Hugging Face encoder model_types -----*- C++ -*-===//
//
// What each Hugging Face encoder `model_type` is, as an EncoderSpec, and
// the module EncoderBuilder makes of it: `@encode(token ids, token types)`
// returning the last hidden state ([tokens, hidden]).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FAMILIES_ENCODERFAMILIES_H
#define TFM_FRONTEND_FAMILIES_ENCODERFAMILIES_H

#include "frontend/builders/EncoderSpec.h"
#include "frontend/formats/ConfigReader.h"
#include "frontend/formats/WeightStore.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

namespace mlir::tfm {

/// The model_types readEncoderFamily knows, for messages.
std::string supportedEncoderFamilies();

/// Fills `spec` from `config` for `modelType`; false when the type is not
/// an encoder tfmc knows. Problems with the config are recorded in `config`.
bool readEncoderFamily(llvm::StringRef modelType, ConfigReader &config,
                       EncoderSpec &spec);

/// Sizes that must be positive and fit together; errors name `configPath`.
llvm::Error validateEncoderSpec(const EncoderSpec &spec,
                                llvm::StringRef configPath);

/// The task head a config's `architectures` names.
enum class EncoderHead {
  None,                   // the base model: hidden states
  MaskedLm,               // *ForMaskedLM, *ForPreTraining
  SequenceClassification, // *ForSequenceClassification
  TokenClassification     // *ForTokenClassification
};
EncoderHead encoderHeadOf(llvm::ArrayRef<std::string> architectures);

/// Completes the spec's weight names from the checkpoint (with or without
/// the family's prefix, e.g. "bert."), and the head's (with `labels`
/// classes for a classifier); false when tfmc has no such head for the
/// family.
bool resolveEncoderNames(EncoderSpec &spec, const WeightStore &weights,
                         EncoderHead head, int64_t labels);

/// Reads a sentence-transformers directory's modules.json, if there is
/// one, into `spec.pooling` and `spec.normalize` (SentenceTransformers.cpp).
llvm::Error readSentenceTransformerModules(llvm::StringRef directory,
                                           EncoderSpec &spec);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FAMILIES_ENCODERFAMILIES_H
