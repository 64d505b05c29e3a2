//===- FuzzTokenizerUse.h - a runtime tokenizer put through its API -*- C++ -*-//
//
// What a compiled model does with its tokenizer, on any text: encode as a
// decoder does (with and without BOS), as an encoder does (one text and a
// pair), decode every id it produced, and ask for ids out of range. The
// counts a first call reports must be what a second call with that much
// room writes.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TEST_FUZZ_FUZZTOKENIZERUSE_H
#define TFM_TEST_FUZZ_FUZZTOKENIZERUSE_H

#include "tfm/tfm_runtime.h"

#include <climits>
#include <cstdlib>
#include <string>
#include <vector>

namespace tfm_fuzz {

inline void decodeAll(const tfm_tokenizer *tokenizer,
                      const std::vector<int32_t> &ids, int32_t bos) {
  int32_t previous = bos;
  for (int32_t id : ids) {
    size_t size = 0;
    const char *bytes = tfm_tokenizer_decode(tokenizer, previous, id, bos, &size);
    if (!bytes)
      std::abort(); // an id the tokenizer produced must decode
    volatile char sink = 0;
    for (size_t i = 0; i < size; ++i)
      sink = sink ^ bytes[i];
    (void)tfm_tokenizer_is_special(tokenizer, id);
    previous = id;
  }
}

/// Encodes as a decoder does; the ids, or none when refused.
inline std::vector<int32_t> encodeForDecoder(const tfm_tokenizer *tokenizer,
                                             const std::string &text,
                                             int32_t bos) {
  tfm_status status;
  int64_t count = 0;
  if (tfm_tokenizer_encode(tokenizer, text.c_str(), bos, nullptr, 0, &count,
                           &status) != TFM_OK)
    return {};
  std::vector<int32_t> ids(static_cast<size_t>(count));
  int64_t again = 0;
  if (tfm_tokenizer_encode(tokenizer, text.c_str(), bos, ids.data(), count,
                           &again, &status) != TFM_OK ||
      again != count)
    std::abort();
  return ids;
}

/// Encodes as an encoder does (a pair when `second`).
inline std::vector<int32_t> encodeForEncoder(const tfm_tokenizer *tokenizer,
                                             const std::string &first,
                                             const char *second) {
  tfm_status status;
  int64_t count = 0;
  if (tfm_tokenizer_encode_text(tokenizer, first.c_str(), second, nullptr,
                                nullptr, 0, &count, &status) != TFM_OK)
    return {};
  std::vector<int32_t> ids(static_cast<size_t>(count)), types(ids.size());
  int64_t again = 0;
  if (tfm_tokenizer_encode_text(tokenizer, first.c_str(), second, ids.data(),
                                types.data(), count, &again,
                                &status) != TFM_OK ||
      again != count)
    std::abort();
  return ids;
}

/// Reads every prompt replacement (each a pair of strings, or none).
inline void readReplacements(const tfm_tokenizer *tokenizer) {
  for (int32_t i = 0;; ++i) {
    const char *text = nullptr, *replacement = nullptr;
    tfm_tokenizer_prompt_replacement(tokenizer, i, &text, &replacement);
    if (!text != !replacement)
      std::abort();
    if (!text)
      return;
    volatile size_t sink =
        std::string(text).size() + std::string(replacement).size();
    (void)sink;
  }
}

inline void exerciseTokenizer(const tfm_tokenizer *tokenizer,
                              const std::string &text) {
  readReplacements(tokenizer);
  decodeAll(tokenizer, encodeForDecoder(tokenizer, text, -1), -1);
  decodeAll(tokenizer, encodeForDecoder(tokenizer, text, 1), 1);
  decodeAll(tokenizer, encodeForEncoder(tokenizer, text, nullptr), -1);
  decodeAll(tokenizer, encodeForEncoder(tokenizer, text, text.c_str()), -1);
  size_t size = 0;
  for (int32_t id : {-1, INT32_MIN, INT32_MAX})
    if (tfm_tokenizer_decode(tokenizer, -1, id, -1, &size))
      std::abort(); // out of range: NULL
}

} // namespace tfm_fuzz

#endif // TFM_TEST_FUZZ_FUZZTOKENIZERUSE_H
