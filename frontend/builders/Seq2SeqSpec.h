//===- Seq2SeqSpec.h - an encoder-decoder's shape and names ----*- C++ -*-===//
//
// What the seq2seq builders need to know about an encoder-decoder model
// (the original Transformer's architecture as Marian, BART, mBART, Whisper
// and T5 vary it): sizes, activation, where the norms go, how positions
// are encoded and the checkpoint's names.
// Seq2SeqFamilies.cpp fills it from a Hugging Face config.json.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_BUILDERS_SEQ2SEQSPEC_H
#define TFM_FRONTEND_BUILDERS_SEQ2SEQSPEC_H

#include "ir/TfmOps.h"

#include <cmath>
#include <cstdint>
#include <string>

namespace mlir::tfm {

struct Seq2SeqSpec {
  std::string family; // "marian", "bart", "t5"
  /// maxPositions: the most source or decoder positions; T5, whose
  /// relative positions have no table, takes n_positions (512) as its
  /// working limit.
  int64_t vocabSize = 0, hiddenSize = 0, maxPositions = 0;
  int64_t encoderLayers = 0, decoderLayers = 0;
  int64_t encoderHeads = 0, decoderHeads = 0;
  int64_t encoderFfn = 0, decoderFfn = 0;
  ActivationKind activation = ActivationKind::gelu;
  double normEpsilon = 1e-5;
  /// Token embeddings times sqrt(hidden) (scale_embedding).
  bool scaleEmbedding = false;
  /// Positions: the original Transformer's fixed sinusoids (sin in the
  /// first half, cos in the second: Marian), or a learned table read from
  /// `positionOffset` on (BART's 2).
  bool sinusoidalPositions = false;
  int64_t positionOffset = 0;
  /// A LayerNorm right after the embeddings (BART's layernorm_embedding).
  bool embeddingNorm = false;
  /// Whisper: the source is log-mel features [melBins, 2 * sourcePositions]
  /// through two conv1d + GELU stems (the second of stride 2) plus the
  /// encoder's stored position table; pre-norm blocks with a final LayerNorm
  /// per stack; k_proj without a bias; the token table is the decoder's
  /// embed_tokens and the head (proj_out) is tied to it, without a
  /// final_logits_bias.
  int64_t melBins = 0, sourcePositions = 0;
  bool preNorm = false, keyBias = true;
  bool speech() const { return melBins > 0; }
  /// The token table: the shared one, or Whisper's decoder embed_tokens.
  std::string tokenTable() const {
    return prefix + (speech() ? "decoder.embed_tokens.weight" : "shared.weight");
  }
  /// T5's blocks (T5Builder.cpp) instead of the original Transformer's:
  /// pre-norm, RMSNorm without bias (T5LayerNorm), no biases anywhere,
  /// unscaled scores, no position embeddings but a relative-position bias
  /// from the first layer's table of `relativeBuckets` buckets up to
  /// `relativeMaxDistance`; heads `headDim` wide (d_kv, not necessarily
  /// d_model / heads); a gated FFN (v1.1's gated-gelu) or not. A tied LM
  /// head reads the shared table with the decoder's output scaled by
  /// d_model^-0.5.
  bool t5Blocks = false;
  int64_t headDim = 0;
  bool gatedFfn = false;
  int64_t relativeBuckets = 0, relativeMaxDistance = 0;
  bool tiedHead = false;
  /// Where the checkpoint's names start: "model." in MarianMTModel and
  /// BartForConditionalGeneration checkpoints, "" in base models'.
  std::string prefix;
  /// The id the decoder starts from, the padding and end-of-sequence ids.
  int64_t decoderStartToken = -1, padToken = -1, eosToken = -1;

  /// The scale of the decoder's final norm as the builder reads it: a
  /// tied T5 head's d_model^-0.5 folded into it (a view the loader adds),
  /// or the stored one.
  std::string headNormName() const {
    std::string stored = "decoder.final_layer_norm.weight";
    return tiedHead ? stored + ".times_rsqrt_d_model" : stored;
  }
  double headNormScale() const { return 1.0 / std::sqrt(double(hiddenSize)); }
  int64_t encoderHeadDim() const {
    return headDim ? headDim : hiddenSize / encoderHeads;
  }
  int64_t decoderHeadDim() const {
    return headDim ? headDim : hiddenSize / decoderHeads;
  }
  double embeddingScale() const {
    return scaleEmbedding ? std::sqrt(double(hiddenSize)) : 1.0;
  }
  /// The checkpoint's position table of `side` ("encoder", "decoder").
  std::string storedPositionTable(const std::string &side) const {
    return prefix + side + ".embed_positions.weight";
  }
  /// The name of that table as the builder reads it: from row
  /// positionOffset on (a view the loader adds), or the stored one.
  std::string positionTable(const std::string &side) const {
    std::string stored = storedPositionTable(side);
    return positionOffset ? stored + ".from_row_" +
                                std::to_string(positionOffset)
                          : stored;
  }
};

} // namespace mlir::tfm

#endif // TFM_FRONTEND_BUILDERS_SEQ2SEQSPEC_H
