//===- DecoderFamilies.h - Hugging Face decoder model_types -----*- C++ -*-===//
//
// What each Hugging Face decoder `model_type` is, as a DecoderSpec: the
// sizes and options its config.json gives, the checkpoint names of its
// weights, and the rewrites some checkpoints need before the builder reads
// them (GPT-2's Conv1D layout, GPT-NeoX's fused QKV, Gemma's (1 + w)
// norms). A new decoder family is a reader and a row of kDecoderFamilies
// there, plus an op where it needs one; the lists in messages follow.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FAMILIES_DECODERFAMILIES_H
#define TFM_FRONTEND_FAMILIES_DECODERFAMILIES_H

#include "frontend/builders/DecoderSpec.h"
#include "frontend/formats/ConfigReader.h"
#include "frontend/formats/WeightStore.h"

namespace mlir::tfm {

/// The model_types readDecoderFamily knows, for messages.
std::string supportedDecoderFamilies();

/// Whether `modelType`'s usual tokenizer puts BOS before a prompt (LLaMA's
/// SentencePiece does, GPT-2's byte-level BPE does not): what a directory
/// without tokenizer files assumes.
bool decoderTokenizerAddsBos(llvm::StringRef modelType);

/// Fills `spec` from `config` for `modelType`; false when the type is
/// unknown. Problems with the config are recorded in `config`.
bool readDecoderFamily(llvm::StringRef modelType, ConfigReader &config,
                       DecoderSpec &spec);

/// Rewrites the checkpoint tensors of families whose layout differs from
/// what the builder reads, and completes the spec's weight names.
llvm::Error prepareDecoderWeights(llvm::StringRef modelType, DecoderSpec &spec,
                                  WeightStore &store,
                                  llvm::StringRef checkpoint);

/// Gemma's RMSNorms scale by (1 + w): stores 1 + w for the final norm and
/// every layer norm the spec names (attention, MLP, the branches' outputs,
/// Q and K), so that the builder's norms are the usual ones (Gemma,
/// Qwen3-Next and Qwen3.5 checkpoints).
void prepareGemmaWeights(const DecoderSpec &spec, WeightStore &store);

/// Phi-3's fused projections split: `base` + "weight" ([Q rows; K rows; V
/// rows] or [gate rows; up rows], `parts` their names and row counts, of
/// `cols` columns) becomes `base` + part + ".weight" for each part (rows of
/// a block dtype stay whole blocks). `what` names the config that implies
/// the shape, for the mismatch message.
llvm::Error
splitFusedRows(WeightStore &store, llvm::StringRef checkpoint,
               const std::string &base,
               llvm::ArrayRef<std::pair<const char *, int64_t>> parts,
               int64_t cols, llvm::StringRef what);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FAMILIES_DECODERFAMILIES_H
