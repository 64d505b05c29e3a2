//===- RuntimeFixtures.h - a fake model and tokenizer blobs for tests ----===//
//
// What the runtime's unit tests run against without generated code: a
// model description whose @forward writes known logits (logits[i, v] =
// token[i] * 10 + v) and tokenizer blobs (tfm_format.h) built from pieces.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TEST_RUNTIME_RUNTIMEFIXTURES_H
#define TFM_TEST_RUNTIME_RUNTIMEFIXTURES_H

#include "tfm/tfm_format.h"
#include "tfm/tfm_runtime.h"

#include <array>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace tfm_test {

constexpr int64_t kVocab = 5;
/// The fake model's embedded weights.
extern const uint8_t kWeights[16];

/// The fake model: vocabulary 5, context 4, BOS 1, EOS 2, @forward and a
/// packed twin @forward_batch.
tfm_model_desc fakeDesc();

/// An encoder's framing and WordPiece options for tokenizerBlob.
struct EncoderTokenizer {
  int32_t begin = -1, separator = -1;
  uint32_t pairSeparators = 1, secondType = 1;
  std::vector<std::pair<int32_t, uint32_t>> specials; // id, strip flags
  uint32_t wordPieceFlags = TFM_WORDPIECE_LOWERCASE |
                            TFM_WORDPIECE_STRIP_ACCENTS |
                            TFM_WORDPIECE_SPLIT_CJK;
  int32_t unknown = 0;
  uint32_t maxCharsPerWord = 100;
  /// Unigram: flags, per-token piece types and the character map's rules
  /// (key, replacement), embedded as charsMapBlob builds them.
  uint32_t unigramFlags = TFM_UNIGRAM_ADD_DUMMY_PREFIX |
                          TFM_UNIGRAM_REMOVE_EXTRA_WHITESPACES |
                          TFM_UNIGRAM_ESCAPE_WHITESPACES;
  std::vector<uint8_t> pieceTypes;
  std::vector<std::pair<std::string, std::string>> rules;
  /// A prompt's text replacements (text, what replaces it); where there
  /// are some, the kind's optional trailing fields are written before them.
  std::vector<std::pair<std::string, std::string>> promptReplacements;
};

/// SentencePiece's precompiled character map of `rules` (key, replacement):
/// uint32 trie bytes, a Darts-clone double-array trie, the NUL-terminated
/// replacements (runtime/tokenizer/chars_map.h). No rules: an empty map.
std::string charsMapBlob(
    const std::vector<std::pair<std::string, std::string>> &rules);

/// Builds a tokenizer blob (tfm_format.h).
std::string tokenizerBlob(uint32_t kind,
                          const std::vector<std::pair<std::string, float>> &pieces,
                          const std::vector<std::array<uint32_t, 3>> &merges = {},
                          const EncoderTokenizer &encoder = {});
/// The tokenizer of `blob`, expected to parse.
tfm_tokenizer *parse(const std::string &blob);
/// tfm_tokenizer_encode of `text` (at most 64 ids), expected to succeed.
std::vector<int32_t> encode(tfm_tokenizer *t, const char *text, int32_t bos);

} // namespace tfm_test

#endif // TFM_TEST_RUNTIME_RUNTIMEFIXTURES_H
