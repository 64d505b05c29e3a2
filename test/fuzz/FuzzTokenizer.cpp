//===- FuzzTokenizer.cpp - a compiled model's tokenizer on any bytes ------===//
//
// The runtime's tokenizer (runtime/tokenizer*.c): a blob parsed by
// tfm_tokenizer_new (from a model file a user may have altered), then any
// text through FuzzTokenizerUse.h. The input's parts: the blob, then the
// text (a NUL in it ends it, as a C string does). Seeds are blobs tfmc
// serialized from real tokenizers (scripts/fuzz.sh seeds).
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzFiles.h"
#include "test/fuzz/FuzzTokenizerUse.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<std::string_view> parts = tfm_fuzz::splitParts(data, size, 2);
  // An exact-size copy, so that reading past the blob is caught.
  std::vector<uint8_t> blob(parts[0].begin(), parts[0].end());
  tfm_tokenizer *tokenizer = nullptr;
  tfm_status status;
  if (tfm_tokenizer_new(blob.data(), blob.size(), &tokenizer, &status) !=
      TFM_OK) {
    if (!status.message[0])
      std::abort(); // a refusal says what is wrong
    return 0;
  }
  tfm_fuzz::exerciseTokenizer(tokenizer, std::string(parts[1]));
  tfm_tokenizer_free(tokenizer);
  return 0;
}
