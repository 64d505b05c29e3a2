//===- Classification.h - /classify and /rerank for classifiers --*- C++
//-*-===//
//
// What tfm-serve accepts and answers for a sequence classifier (@classify):
//   - POST /classify, in vLLM's shape: `input` a string, a list of strings,
//     token ids or lists of them; each input's label (id2label of the
//     likeliest), its probabilities (softmax; a single logit's sigmoid, as
//     vLLM and sentence-transformers' CrossEncoder score one), num_classes;
//   - POST /rerank and /v1/rerank for a cross-encoder (one logit), in the
//     Jina/Cohere shape llama.cpp and vLLM accept: `query`, `documents`
//     (strings, or objects with `text`), `top_n`, `return_documents`; each
//     (query, document) pair framed as the tokenizer frames a text pair,
//     scored by the logit's sigmoid, the results best first.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_SERVE_CLASSIFICATION_H
#define TFM_SERVE_CLASSIFICATION_H

#include "serve/EncoderCalls.h"
#include "serve/OpenAiApi.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace tfm::serve {

struct ClassificationRequest {
  std::vector<EncoderInput> inputs;
  int64_t promptTokens = 0;
};

/// Parses and checks a /classify body; `context` is the most tokens an
/// input may have.
std::optional<ApiError> parseClassificationRequest(const std::string &body,
                                                   const ServedModel &model,
                                                   int64_t context,
                                                   ClassificationRequest &out);

/// The /classify response for the inputs' logits, in order.
nlohmann::ordered_json
classificationResponse(const std::vector<std::vector<float>> &logits,
                       const ServedModel &model, int64_t promptTokens,
                       const std::string &id, int64_t created);

struct RerankRequest {
  /// Each document paired with the query, in the documents' order.
  std::vector<EncoderInput> pairs;
  std::vector<std::string> documents;
  int64_t topN = 0; // how many results: all unless top_n says fewer
  bool returnDocuments = false;
  int64_t promptTokens = 0;
};

/// Parses and checks a /rerank body; pairs longer than `context` tokens are
/// refused, naming the document.
std::optional<ApiError> parseRerankRequest(const std::string &body,
                                           const ServedModel &model,
                                           int64_t context, RerankRequest &out);

/// The /rerank response for the pairs' logits (one each).
nlohmann::ordered_json
rerankResponse(const std::vector<std::vector<float>> &logits,
               const RerankRequest &request, const std::string &model);

} // namespace tfm::serve

#endif // TFM_SERVE_CLASSIFICATION_H
