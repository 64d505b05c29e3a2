//===- Embeddings.h - OpenAI's /v1/embeddings ---------------------*- C++
//-*-===//
//
// What tfm-serve accepts and answers on /v1/embeddings for a model with
// @embed (sentence embedders) or @embed_text (CLIP's text tower): OpenAI's
// request (`input` as a string, a list of strings, token ids or lists of
// them; `encoding_format` float or base64; `dimensions` only as the model's
// own) and its response, with `usage`.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_SERVE_EMBEDDINGS_H
#define TFM_SERVE_EMBEDDINGS_H

#include "serve/OpenAiApi.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tfm::serve {

struct EmbeddingRequest {
  /// Each input's token ids, framed as the encoder takes them.
  std::vector<std::vector<int32_t>> inputs;
  bool base64 = false;
  int64_t promptTokens = 0;
};

/// The request's `input` (a string, a list of strings, token ids or lists
/// of them) as token ids, each input framed as the encoder takes it and
/// within `context` tokens; `tokens` grows by their count.
std::optional<ApiError> parseInputField(const nlohmann::ordered_json &request,
                                        const ServedModel &model,
                                        int64_t context,
                                        std::vector<std::vector<int32_t>> &out,
                                        int64_t &tokens);

/// Parses and checks a body; `dimensions` is the model's embedding width,
/// `context` the most tokens an input may have.
std::optional<ApiError> parseEmbeddingRequest(const std::string &body,
                                              const ServedModel &model,
                                              int64_t dimensions,
                                              int64_t context,
                                              EmbeddingRequest &out);

/// The response: one `embedding` object per input, in order.
nlohmann::ordered_json
embeddingResponse(const std::vector<std::vector<float>> &embeddings,
                  bool base64, const std::string &model, int64_t promptTokens);

} // namespace tfm::serve

#endif // TFM_SERVE_EMBEDDINGS_H
