//===- EncoderFamilies.h - Hugging Face encoder model_types -----*- C++ -*-===//
//
// What each Hugging Face encoder `model_type` is, as an EncoderSpec, and
// the module EncoderBuilder makes of it: `@encode(token ids, token types)`
// returning the last hidden state ([tokens, hidden]).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_ENCODERFAMILIES_H
#define TFM_FRONTEND_ENCODERFAMILIES_H

#include "frontend/ConfigReader.h"
#include "frontend/EncoderSpec.h"
#include "frontend/WeightStore.h"

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

/// Completes the spec's weight names from the checkpoint (with or without
/// the family's prefix, e.g. "bert."), the masked-LM head's too when
/// `maskedLm` (the config's architecture is *ForMaskedLM); false when the
/// family has no such head in tfmc.
bool resolveEncoderNames(EncoderSpec &spec, const WeightStore &weights,
                         bool maskedLm);

/// Reads a sentence-transformers directory's modules.json, if there is
/// one, into `spec.pooling` and `spec.normalize` (SentenceTransformers.cpp).
llvm::Error readSentenceTransformerModules(llvm::StringRef directory,
                                           EncoderSpec &spec);

/// `@encode` of the encoder (`@embed` for a sentence embedder). Tensors the checkpoint holds beyond the base
/// model (a pooler, a task head) are refused unless `isIgnoredWeight`.
llvm::Expected<mlir::OwningOpRef<mlir::ModuleOp>>
buildEncoder(mlir::MLIRContext &context, const EncoderSpec &spec,
             const WeightStore &weights, llvm::StringRef checkpoint,
             llvm::function_ref<bool(llvm::StringRef)> isIgnoredWeight);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_ENCODERFAMILIES_H
