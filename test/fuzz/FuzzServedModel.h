//===- FuzzServedModel.h - a model as tfm-serve's fuzz targets serve it ---===//
//
// What the request fuzzers (FuzzHttpBody.cpp, FuzzServeRequests.cpp) check
// requests against: a model of 512 ids (BOS 1, EOS 2) and `positions`
// positions, with the tokenizer of a fuzzed blob, or none where the blob is
// empty or refused (then text is refused and only ids are read). It takes
// images as a vision-language model does (placeholder 3), each file that
// is not empty two rows of zeros: the files' decoding has a fuzzer of its
// own (FuzzImage.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TEST_FUZZ_FUZZSERVEDMODEL_H
#define TFM_TEST_FUZZ_FUZZSERVEDMODEL_H

#include "serve/OpenAiApi.h"

#include <string>
#include <string_view>
#include <vector>

namespace tfm_fuzz {

struct FuzzServedModel {
  tfm_model_desc desc{};
  tfm::serve::ServedModel served;
  tfm_tokenizer *tokenizer = nullptr; // owned; `served` reads it

  FuzzServedModel(std::string_view blob, int64_t positions) {
    std::vector<uint8_t> bytes(blob.begin(), blob.end());
    tfm_status status;
    if (!bytes.empty() && tfm_tokenizer_new(bytes.data(), bytes.size(),
                                            &tokenizer, &status) != TFM_OK)
      tokenizer = nullptr;
    desc.vocab_size = 512;
    desc.bos_token = 1;
    desc.eos_token = 2;
    desc.max_context = positions;
    served.name = "fuzz";
    served.desc = &desc;
    served.tokenizer = tokenizer;
    served.contextPositions = positions;
    served.imageToken = kImageToken;
    served.encodeImage = [](const std::string &file, std::vector<float> &rows,
                            std::vector<int32_t> &ids) -> std::string {
      if (file.empty())
        return "an empty file";
      rows.insert(rows.end(), size_t(kImageRows * 4), 0.0f);
      ids.assign(size_t(kImageRows), kImageToken);
      return "";
    };
  }
  static constexpr int32_t kImageToken = 3;
  static constexpr int64_t kImageRows = 2;
  ~FuzzServedModel() {
    tfm_tokenizer_free(tokenizer);
  }
  FuzzServedModel(const FuzzServedModel &) = delete;
  FuzzServedModel &operator=(const FuzzServedModel &) = delete;
};

} // namespace tfm_fuzz

#endif // TFM_TEST_FUZZ_FUZZSERVEDMODEL_H
