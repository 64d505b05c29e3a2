//===- Classification.cpp - /classify and /rerank for classifiers -------===//

#include "serve/Classification.h"
#include "serve/Embeddings.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <set>

using namespace tfm::serve;
using json = nlohmann::ordered_json;

namespace {

/// Fields of `request` other than `known` are refused by name.
std::optional<ApiError> unknownField(const json &request,
                                     const std::set<std::string> &known) {
  for (auto &[key, value] : request.items())
    if (!known.count(key))
      return ApiError{400, "unknown field '" + key + "'", key, ""};
  return std::nullopt;
}

/// A classifier's probabilities: the softmax of its logits, or one logit's
/// sigmoid (a cross-encoder's relevance).
std::vector<double> probabilities(const std::vector<float> &logits) {
  std::vector<double> p(logits.size());
  if (logits.size() == 1) {
    p[0] = 1.0 / (1.0 + std::exp(-double(logits[0])));
    return p;
  }
  double max = *std::max_element(logits.begin(), logits.end()), sum = 0;
  for (size_t i = 0; i < logits.size(); ++i)
    sum += p[i] = std::exp(double(logits[i]) - max);
  for (double &x : p)
    x /= sum;
  return p;
}

std::string label(const ServedModel &model, size_t index) {
  if (int64_t(index) < model.desc->num_labels && model.desc->labels)
    return model.desc->labels[index];
  return "LABEL_" + std::to_string(index);
}

} // namespace

std::optional<ApiError> tfm::serve::parseClassificationRequest(
    const std::string &body, const ServedModel &model, int64_t context,
    ClassificationRequest &out) {
  json request;
  if (std::optional<ApiError> error = parseRequestObject(body, request))
    return error;
  if (std::optional<ApiError> error =
          unknownField(request, {"model", "input", "user"}))
    return error;
  if (std::optional<ApiError> error = checkModelField(request, model))
    return error;
  std::vector<std::vector<int32_t>> ids;
  if (std::optional<ApiError> error =
          parseInputField(request, model, context, ids, out.promptTokens))
    return error;
  for (std::vector<int32_t> &input : ids)
    out.inputs.push_back({std::move(input), {}});
  return std::nullopt;
}

json tfm::serve::classificationResponse(
    const std::vector<std::vector<float>> &logits, const ServedModel &model,
    int64_t promptTokens, const std::string &id, int64_t created) {
  json data = json::array();
  for (size_t i = 0; i < logits.size(); ++i) {
    std::vector<double> p = probabilities(logits[i]);
    size_t best = size_t(std::max_element(p.begin(), p.end()) - p.begin());
    data.push_back({{"index", i},
                    {"label", label(model, best)},
                    {"probs", p},
                    {"num_classes", p.size()}});
  }
  return {{"id", id},           {"object", "list"},
          {"created", created}, {"model", model.name},
          {"data", data},       {"usage", usage(promptTokens, 0)}};
}

std::optional<ApiError> tfm::serve::parseRerankRequest(const std::string &body,
                                                       const ServedModel &model,
                                                       int64_t context,
                                                       RerankRequest &out) {
  json request;
  if (std::optional<ApiError> error = parseRequestObject(body, request))
    return error;
  if (std::optional<ApiError> error =
          unknownField(request, {"model", "query", "documents", "top_n",
                                 "return_documents", "user"}))
    return error;
  if (std::optional<ApiError> error = checkModelField(request, model))
    return error;
  if (!model.tokenizer)
    return ApiError{400,
                    "reranking needs the model's tokenizer: it was compiled "
                    "without one",
                    "query", ""};
  auto query = request.find("query");
  if (query == request.end() || !query->is_string() ||
      query->get<std::string>().empty())
    return ApiError{400, "'query' must be a non-empty string", "query", ""};
  auto documents = request.find("documents");
  if (documents == request.end() || !documents->is_array() ||
      documents->empty())
    return ApiError{400, "'documents' must be a non-empty list", "documents",
                    ""};
  if (documents->size() > kMaxInputsPerRequest)
    return ApiError{400,
                    "'documents' holds " + std::to_string(documents->size()) +
                        " documents; a request may hold " +
                        std::to_string(kMaxInputsPerRequest),
                    "documents", ""};
  for (const json &document : *documents) {
    const json *text = &document;
    if (document.is_object()) {
      auto found = document.find("text");
      text = found == document.end() ? nullptr : &*found;
    }
    if (!text || !text->is_string() || text->get<std::string>().empty())
      return ApiError{400,
                      "'documents' " + std::to_string(out.documents.size()) +
                          " must be a non-empty string or an object with "
                          "'text'",
                      "documents", ""};
    out.documents.push_back(text->get<std::string>());
  }
  out.topN = int64_t(out.documents.size());
  if (auto found = request.find("top_n"); found != request.end()) {
    if (!found->is_number_integer() || found->get<int64_t>() < 1)
      return ApiError{400, "'top_n' must be a positive integer", "top_n", ""};
    out.topN = std::min(out.topN, found->get<int64_t>());
  }
  if (auto found = request.find("return_documents"); found != request.end()) {
    if (!found->is_boolean())
      return ApiError{400, "'return_documents' must be true or false",
                      "return_documents", ""};
    out.returnDocuments = found->get<bool>();
  }
  const std::string &text = query->get<std::string>();
  for (size_t i = 0; i < out.documents.size(); ++i) {
    tfm_status status;
    int64_t count = 0;
    const char *document = out.documents[i].c_str();
    if (tfm_tokenizer_encode_text(model.tokenizer, text.c_str(), document,
                                  nullptr, nullptr, 0, &count,
                                  &status) != TFM_OK)
      return ApiError{
          400,
          "'documents' " + std::to_string(i) +
              " cannot be tokenized with the query: " + status.message,
          "documents", ""};
    if (count > context)
      return ApiError{400,
                      "this model's maximum context is " +
                          std::to_string(context) +
                          " tokens; the query with document " +
                          std::to_string(i) + " has " + std::to_string(count),
                      "documents", "context_length_exceeded"};
    EncoderInput pair;
    pair.ids.resize(size_t(count));
    pair.types.resize(size_t(count));
    tfm_tokenizer_encode_text(model.tokenizer, text.c_str(), document,
                              pair.ids.data(), pair.types.data(), count, &count,
                              &status);
    out.promptTokens += count;
    out.pairs.push_back(std::move(pair));
  }
  return std::nullopt;
}

json tfm::serve::rerankResponse(const std::vector<std::vector<float>> &logits,
                                const RerankRequest &request,
                                const std::string &model) {
  std::vector<double> scores;
  for (const std::vector<float> &pair : logits)
    scores.push_back(probabilities(pair)[0]);
  std::vector<size_t> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return scores[a] > scores[b]; });
  json results = json::array();
  for (int64_t k = 0; k < request.topN; ++k) {
    size_t i = order[size_t(k)];
    json result = {{"index", i}, {"relevance_score", scores[i]}};
    if (request.returnDocuments)
      result["document"] = {{"text", request.documents[i]}};
    results.push_back(result);
  }
  return {{"object", "list"},
          {"model", model},
          {"results", results},
          {"usage",
           {{"prompt_tokens", request.promptTokens},
            {"total_tokens", request.promptTokens}}}};
}
