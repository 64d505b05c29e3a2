//===- Embeddings.cpp - OpenAI's /v1/embeddings -------------------------===//

#include "serve/Embeddings.h"

#include <set>

using namespace tfm::serve;
using json = nlohmann::ordered_json;

namespace {

ApiError badInput(const std::string &what) {
  return {400, "'input' " + what, "input", ""};
}

/// Token ids as JSON gives them: each an integer in [0, vocab).
std::optional<ApiError> readIds(const json &ids, const ServedModel &model,
                                std::vector<int32_t> &out) {
  for (const json &id : ids) {
    if (!id.is_number_integer())
      return badInput("must be a string, a list of strings, token ids or "
                      "lists of token ids");
    int64_t value = id.get<int64_t>();
    if (value < 0 || value >= model.desc->vocab_size)
      return badInput("has token id " + std::to_string(value) +
                      ", outside the vocabulary [0, " +
                      std::to_string(model.desc->vocab_size) + ")");
    out.push_back(int32_t(value));
  }
  return std::nullopt;
}

/// `text` through the tokenizer, framed as the encoder takes it, and padded
/// to the context where the model's texts are (SigLIP's: pad_texts).
std::optional<ApiError> tokenize(const std::string &text,
                                 const ServedModel &model,
                                 std::vector<int32_t> &out) {
  if (!model.tokenizer)
    return badInput("must be token ids: the model was compiled without a "
                    "tokenizer");
  if (text.empty())
    return badInput("must not hold an empty string");
  int64_t count = 0;
  tfm_status status;
  if (tfm_tokenizer_encode_text(model.tokenizer, text.c_str(), nullptr, nullptr,
                                nullptr, 0, &count, &status) != TFM_OK)
    return badInput(std::string("cannot be tokenized: ") + status.message);
  out.resize(size_t(count));
  tfm_tokenizer_encode_text(model.tokenizer, text.c_str(), nullptr, out.data(),
                            nullptr, count, &count, &status);
  if (model.desc->pad_texts && count < model.desc->max_context)
    out.resize(size_t(model.desc->max_context), model.desc->text_pad_token);
  return std::nullopt;
}

/// The floats' bytes, little endian (OpenAI's encoding_format "base64"
/// encodes them).
std::string_view bytesOf(const std::vector<float> &values) {
  return {reinterpret_cast<const char *>(values.data()),
          values.size() * sizeof(float)};
}

} // namespace

std::optional<ApiError> tfm::serve::parseInputField(
    const json &request, const ServedModel &model, int64_t context,
    std::vector<std::vector<int32_t>> &out, int64_t &tokens) {
  auto input = request.find("input");
  if (input == request.end())
    return ApiError{400, "'input' is required", "input", ""};
  // A string; a list of strings; token ids; or lists of token ids.
  std::vector<json> items;
  if (input->is_string() ||
      (input->is_array() && !input->empty() && (*input)[0].is_number()))
    items.push_back(*input);
  else if (input->is_array())
    items.assign(input->begin(), input->end());
  if (items.empty())
    return badInput("must hold at least one input");
  if (items.size() > kMaxInputsPerRequest)
    return badInput("holds " + std::to_string(items.size()) +
                    " inputs; a request may hold " +
                    std::to_string(kMaxInputsPerRequest));
  for (const json &item : items) {
    std::vector<int32_t> ids;
    std::optional<ApiError> error =
        item.is_string()  ? tokenize(item.get<std::string>(), model, ids)
        : item.is_array() ? readIds(item, model, ids)
                          : std::optional<ApiError>(badInput(
                                "must be a string, a list of strings, token "
                                "ids or lists of token ids"));
    if (error)
      return error;
    if (ids.empty())
      return badInput("must not hold an empty list of token ids");
    if (int64_t(ids.size()) > context)
      return ApiError{400,
                      "this model's maximum context is " +
                          std::to_string(context) + " tokens; input " +
                          std::to_string(out.size()) + " has " +
                          std::to_string(ids.size()),
                      "input", "context_length_exceeded"};
    tokens += int64_t(ids.size());
    out.push_back(std::move(ids));
  }
  return std::nullopt;
}

std::optional<ApiError>
tfm::serve::parseEmbeddingRequest(const std::string &body,
                                  const ServedModel &model, int64_t dimensions,
                                  int64_t context, EmbeddingRequest &out) {
  json request;
  if (std::optional<ApiError> error = parseRequestObject(body, request))
    return error;
  static const std::set<std::string> known = {
      "model", "input", "encoding_format", "dimensions", "user"};
  for (auto &[key, value] : request.items())
    if (!known.count(key))
      return ApiError{400, "unknown field '" + key + "'", key, ""};
  if (std::optional<ApiError> error = checkModelField(request, model))
    return error;
  if (auto found = request.find("encoding_format"); found != request.end()) {
    if (*found != json("float") && *found != json("base64"))
      return ApiError{400, "'encoding_format' must be \"float\" or \"base64\"",
                      "encoding_format", ""};
    out.base64 = *found == json("base64");
  }
  if (auto found = request.find("dimensions"); found != request.end())
    if (*found != json(dimensions))
      return ApiError{400,
                      "'dimensions' can only be the model's own " +
                          std::to_string(dimensions) +
                          ": it has no shortened embeddings",
                      "dimensions", ""};
  return parseInputField(request, model, context, out.inputs, out.promptTokens);
}

json tfm::serve::embeddingResponse(
    const std::vector<std::vector<float>> &embeddings, bool asBase64,
    const std::string &model, int64_t promptTokens) {
  json data = json::array();
  for (size_t i = 0; i < embeddings.size(); ++i)
    data.push_back(
        {{"object", "embedding"},
         {"index", i},
         {"embedding", asBase64 ? json(base64(bytesOf(embeddings[i])))
                                : json(embeddings[i])}});
  return {{"object", "list"},
          {"data", data},
          {"model", model},
          {"usage",
           {{"prompt_tokens", promptTokens}, {"total_tokens", promptTokens}}}};
}
