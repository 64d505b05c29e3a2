//===- TokenizerBlob.cpp - a vocabulary in the runtime's format -----------===//
//
// The tokenizer blob a compiled model embeds and runtime/tokenizer reads
// (tfm_format.h's TFM_TOKENIZER_MAGIC layout).
//
//===----------------------------------------------------------------------===//

#include "frontend/tokenizers/Tokenizer.h"
#include "tfm/tfm_format.h"

#include "llvm/ADT/STLExtras.h"

using namespace mlir::tfm;

std::string mlir::tfm::serializeTokenizer(const TokenizerVocab &tokenizer) {
  std::string blob(TFM_TOKENIZER_MAGIC, TFM_TOKENIZER_MAGIC_SIZE);
  auto append32 = [&](auto value) {
    static_assert(sizeof value == 4);
    blob.append(reinterpret_cast<const char *>(&value), 4);
  };
  auto appendBytes = [&](const std::string &bytes) {
    append32(uint32_t(bytes.size()));
    blob += bytes;
  };
  uint32_t kind = 0;
  switch (tokenizer.kind) {
  case TokenizerVocab::Kind::ScoreBpe:
    kind = TFM_TOKENIZER_SCORE_BPE;
    break;
  case TokenizerVocab::Kind::ByteLevelBpe:
    kind = TFM_TOKENIZER_BYTE_LEVEL_BPE;
    break;
  case TokenizerVocab::Kind::WordPiece:
    kind = TFM_TOKENIZER_WORDPIECE;
    break;
  case TokenizerVocab::Kind::Unigram:
    kind = TFM_TOKENIZER_UNIGRAM;
    break;
  }
  append32(kind);
  append32(uint32_t(tokenizer.pieces.size()));
  const TokenizerVocab::Framing &framing = tokenizer.framing;
  append32(framing.begin);
  append32(framing.separator);
  append32(framing.pairSeparators);
  append32(framing.secondType);
  append32(uint32_t(tokenizer.specialTokens.size()));
  for (auto [i, id] : llvm::enumerate(tokenizer.specialTokens)) {
    append32(id);
    append32(uint32_t(i < tokenizer.specialTokenStrips.size()
                          ? tokenizer.specialTokenStrips[i]
                          : 0));
  }
  for (auto [i, piece] : llvm::enumerate(tokenizer.pieces)) {
    append32(i < tokenizer.scores.size() ? tokenizer.scores[i] : 0.0f);
    appendBytes(piece);
  }
  if (tokenizer.kind == TokenizerVocab::Kind::ScoreBpe) {
    append32(uint32_t(tokenizer.removeExtraWhitespaces
                          ? TFM_SCORE_BPE_REMOVE_EXTRA_WHITESPACES
                          : 0));
  } else if (tokenizer.kind == TokenizerVocab::Kind::ByteLevelBpe) {
    append32(uint32_t(tokenizer.merges.size()));
    for (const std::array<int32_t, 3> &merge : tokenizer.merges)
      for (int32_t id : merge)
        append32(id);
    using Split = TokenizerVocab::BpeSplit;
    uint32_t split = TFM_BPE_SPLIT_GPT2;
    switch (tokenizer.bpeSplit) {
    case Split::Gpt2:
      split = TFM_BPE_SPLIT_GPT2;
      break;
    case Split::Llama3:
      split = TFM_BPE_SPLIT_LLAMA3;
      break;
    case Split::Qwen2:
      split = TFM_BPE_SPLIT_QWEN2;
      break;
    case Split::Qwen35:
      split = TFM_BPE_SPLIT_QWEN35;
      break;
    case Split::Gemma4:
      split = TFM_BPE_SPLIT_GEMMA4;
      break;
    case Split::DeepseekLlm:
      split = TFM_BPE_SPLIT_DEEPSEEK_LLM;
      break;
    case Split::DeepseekCoder:
      split = TFM_BPE_SPLIT_DEEPSEEK_CODER;
      break;
    case Split::DeepseekV3:
      split = TFM_BPE_SPLIT_DEEPSEEK_V3;
      break;
    case Split::Gpt4o:
      split = TFM_BPE_SPLIT_GPT4O;
      break;
    case Split::Falcon:
      split = TFM_BPE_SPLIT_FALCON;
      break;
    case Split::DigitsThenGpt2:
      split = TFM_BPE_SPLIT_DIGITS_THEN_GPT2;
      break;
    case Split::Clip:
      split = TFM_BPE_SPLIT_CLIP;
      break;
    }
    if (tokenizer.ignoreMerges)
      split |= uint32_t(TFM_BPE_IGNORE_MERGES);
    if (tokenizer.nfc)
      split |= uint32_t(TFM_BPE_NFC);
    append32(split);
  } else if (tokenizer.kind == TokenizerVocab::Kind::WordPiece) {
    const TokenizerVocab::WordPieceOptions &options = tokenizer.wordPiece;
    append32(uint32_t((options.lowercase ? TFM_WORDPIECE_LOWERCASE : 0) |
                      (options.stripAccents ? TFM_WORDPIECE_STRIP_ACCENTS : 0) |
                      (options.splitCjk ? TFM_WORDPIECE_SPLIT_CJK : 0)));
    append32(options.unknown);
    append32(options.maxCharsPerWord);
    appendBytes(options.continuationPrefix);
  } else if (tokenizer.kind == TokenizerVocab::Kind::Unigram) {
    const TokenizerVocab::UnigramOptions &options = tokenizer.unigram;
    append32(uint32_t(
        (options.addDummyPrefix ? TFM_UNIGRAM_ADD_DUMMY_PREFIX : 0) |
        (options.removeExtraWhitespaces ? TFM_UNIGRAM_REMOVE_EXTRA_WHITESPACES
                                        : 0) |
        (options.escapeWhitespaces ? TFM_UNIGRAM_ESCAPE_WHITESPACES : 0) |
        (options.byteFallback ? TFM_UNIGRAM_BYTE_FALLBACK : 0) |
        (options.lowercase ? TFM_UNIGRAM_LOWERCASE : 0) |
        (options.siglipText ? TFM_UNIGRAM_SIGLIP_TEXT : 0)));
    append32(options.unknown);
    using Piece = TokenizerVocab::UnigramOptions::Piece;
    for (size_t i = 0; i < tokenizer.pieces.size(); ++i) {
      Piece type = i < options.pieceTypes.size() ? options.pieceTypes[i]
                                                 : Piece::Reserved;
      blob += char(type == Piece::Normal        ? TFM_UNIGRAM_PIECE_NORMAL
                   : type == Piece::UserDefined ? TFM_UNIGRAM_PIECE_USER_DEFINED
                                                : TFM_UNIGRAM_PIECE_RESERVED);
    }
    appendBytes(options.charsMap);
  }
  append32(uint32_t(tokenizer.promptReplacements.size()));
  for (const auto &[text, replacement] : tokenizer.promptReplacements) {
    appendBytes(text);
    appendBytes(replacement);
  }
  return blob;
}
