//===- EncoderSpec.h - what a BERT-style encoder is made of -----*- C++ -*-===//
//
// The architecture of an encoder-only transformer (BERT and its relatives)
// as EncoderFamilies reads it from config.json, with the checkpoint names
// of its weights. EncoderBuilder turns it into tfm IR: token, position and
// token-type embeddings summed and normalized, then post-norm blocks
// (LayerNorm after each residual add) of bidirectional attention and a
// GELU MLP.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_BUILDERS_ENCODERSPEC_H
#define TFM_FRONTEND_BUILDERS_ENCODERSPEC_H

#include "ir/TfmDialect.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace mlir::tfm {

struct EncoderSpec {
  std::string family;
  int64_t vocabSize = 0, hiddenSize = 0, numLayers = 0, numHeads = 0,
          intermediateSize = 0, maxPositions = 0, typeVocabSize = 0;
  double normEpsilon = 1e-12;
  mlir::tfm::ActivationKind activation = mlir::tfm::ActivationKind::gelu;
  /// RoBERTa's numbering: positions skip padding tokens and start after
  /// the padding id (tfm.position_ids padding_id); -1: 0, 1, 2, ...
  int64_t positionPaddingId = -1;

  /// Width of the embeddings when it differs from the hidden size
  /// (ELECTRA): a projection to the hidden size follows their norm. 0: the
  /// hidden size.
  int64_t embeddingSize = 0;

  /// Checkpoint names: "{}" is the layer index, biases are the weights'
  /// names with "weight" replaced by "bias" (all of them have one). No
  /// token types (DistilBERT): typeEmbeddings is empty and @encode takes
  /// token ids only.
  std::string wordEmbeddings, positionEmbeddings, typeEmbeddings,
      embeddingNorm, embeddingProjection;
  std::string query, key, value, attentionOutput, attentionNorm,
      intermediate, output, outputNorm;

  /// Longformer's sparse attention (tfm.sparse_attention): per layer, how
  /// far a token sees on either side (half the config's even
  /// attention_window); empty: full attention. Global tokens attend with
  /// their own projections (the global names, "{}" the layer), given by a
  /// global_attention input, or the first `globalPrefix` tokens for a
  /// classifier (as LongformerForSequenceClassification sets them).
  struct SparseAttention {
    std::vector<int64_t> windows;
    std::string globalQuery, globalKey, globalValue;
    int64_t globalPrefix = 0;
  };
  std::optional<SparseAttention> sparse;

  /// A masked-LM head (*ForMaskedLM): dense + activation + LayerNorm, then
  /// the decoder to the vocabulary (the word embeddings when tied) with
  /// its bias; the entry point is @fill_mask, returning [tokens, vocab]
  /// logits.
  struct MaskedLmHead {
    std::string dense, norm, decoder, bias;
    mlir::tfm::ActivationKind activation = mlir::tfm::ActivationKind::gelu;
    /// The dense layer's width: the hidden size, or ELECTRA's generator's
    /// embedding size (which its tied decoder reads).
    int64_t width = 0;
  };
  std::optional<MaskedLmHead> maskedLm;

  /// A classification head: per sequence (*ForSequenceClassification: the
  /// first token's state through `dense` + `activation` — tanh for BERT's
  /// pooler and RoBERTa, GELU for ELECTRA, ReLU for DistilBERT — then
  /// `output`; @classify returns [labels]) or per token
  /// (*ForTokenClassification: `output` on every state; @classify_tokens
  /// returns [tokens, labels]).
  struct ClassifierHead {
    bool perToken = false;
    std::string dense, output;
    int64_t labels = 0;
    mlir::tfm::ActivationKind activation = mlir::tfm::ActivationKind::tanh;
  };
  std::optional<ClassifierHead> classifier;

  /// A base model's pooler (BertModel's pooler_output: dense + tanh on the
  /// first token's state), the weight's name when the checkpoint has one:
  /// the module then has @pool beside @encode. Empty otherwise.
  std::string pooler;

  /// A sentence embedder (sentence-transformers' Pooling, then Normalize
  /// if listed): the module's entry point is @embed, returning one vector.
  std::optional<mlir::tfm::PoolingKind> pooling;
  bool normalize = false;

  int64_t headDim() const { return hiddenSize / numHeads; }
  int64_t embeddingWidth() const {
    return embeddingSize ? embeddingSize : hiddenSize;
  }
  int64_t maxTokens() const {
    return positionPaddingId >= 0 ? maxPositions - positionPaddingId - 1
                                  : maxPositions;
  }
};

} // namespace mlir::tfm

#endif // TFM_FRONTEND_BUILDERS_ENCODERSPEC_H
