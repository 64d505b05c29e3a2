//===- OpenAiApi.cpp - OpenAI's completion requests and responses ---------===//

#include "OpenAiApi.h"

#include <algorithm>
#include <set>

using namespace tfm::serve;
using nlohmann::json;

json ApiError::body() const {
  json error = {{"message", message},
                {"type", status >= 500 ? "server_error"
                                       : "invalid_request_error"}};
  error["param"] = param.empty() ? json(nullptr) : json(param);
  error["code"] = code.empty() ? json(nullptr) : json(code);
  return {{"error", error}};
}

namespace {

ApiError badField(const std::string &field, const std::string &what) {
  return {400, "'" + field + "' " + what, field, ""};
}

/// `value` as a person writes it: 400, not 400.0.
std::string formatNumber(double value) {
  return value == double(int64_t(value)) ? std::to_string(int64_t(value))
                                         : json(value).dump();
}

/// A number field within [low, high]; `open` excludes `low`.
std::optional<ApiError> readNumber(const json &request, const char *field,
                                   double low, double high, bool open,
                                   double &out) {
  auto found = request.find(field);
  if (found == request.end() || found->is_null())
    return std::nullopt;
  if (!found->is_number())
    return badField(field, "must be a number");
  double value = found->get<double>();
  if (value < low || value > high || (open && value == low))
    return badField(field, "must be in " + std::string(open ? "(" : "[") +
                               formatNumber(low) + ", " + formatNumber(high) +
                               "], got " + found->dump());
  out = value;
  return std::nullopt;
}

/// The prompt as ids: text through the model's tokenizer, or ids as given.
std::optional<ApiError> readPrompt(const json &request,
                                   const ServedModel &model,
                                   std::vector<int32_t> &ids) {
  auto found = request.find("prompt");
  if (found == request.end())
    return ApiError{400, "'prompt' is required", "prompt", ""};
  json prompt = *found;
  // OpenAI also takes a batch of prompts; one is what this server answers.
  if (prompt.is_array() && prompt.size() == 1 &&
      (prompt[0].is_string() || prompt[0].is_array()))
    prompt = prompt[0];
  if (prompt.is_array()) {
    if (prompt.empty())
      return badField("prompt", "must not be empty");
    for (const json &id : prompt) {
      if (!id.is_number_integer())
        return badField("prompt", "must be a string or an array of token "
                                  "ids (integers), or one of either");
      int64_t value = id.get<int64_t>();
      if (value < 0 || value >= model.desc->vocab_size)
        return badField("prompt", "has token id " + std::to_string(value) +
                                      ", outside the vocabulary [0, " +
                                      std::to_string(model.desc->vocab_size) +
                                      ")");
      ids.push_back(int32_t(value));
    }
    return std::nullopt;
  }
  if (!prompt.is_string())
    return badField("prompt", "must be a string or an array of token ids");
  if (!model.tokenizer)
    return badField("prompt", "must be token ids: the model was compiled "
                              "without a tokenizer");
  std::string text = prompt.get<std::string>();
  int32_t bos = model.desc->add_bos ? model.desc->bos_token : -1;
  tfm_status status;
  int64_t count = 0;
  // Sized for the context: a longer prompt is refused by its count.
  ids.resize(size_t(model.contextPositions) + 1);
  if (tfm_tokenizer_encode(model.tokenizer, text.c_str(), bos, ids.data(),
                           int64_t(ids.size()), &count, &status) != TFM_OK)
    return badField("prompt", std::string("cannot be tokenized: ") +
                                  status.message);
  // Past the capacity only the count is known; it is what gets reported.
  ids.resize(size_t(count));
  if (ids.empty() && model.desc->bos_token >= 0)
    ids.push_back(model.desc->bos_token);
  if (ids.empty())
    return badField("prompt", "is empty");
  return std::nullopt;
}

std::optional<ApiError> readStop(const json &request,
                                 std::vector<std::string> &stop) {
  auto found = request.find("stop");
  if (found == request.end() || found->is_null())
    return std::nullopt;
  if (found->is_string()) {
    stop.push_back(found->get<std::string>());
  } else if (found->is_array() && found->size() <= 4) {
    for (const json &s : *found) {
      if (!s.is_string())
        return badField("stop", "must be a string or up to 4 strings");
      stop.push_back(s.get<std::string>());
    }
  } else {
    return badField("stop", "must be a string or up to 4 strings");
  }
  if (std::any_of(stop.begin(), stop.end(),
                  [](const std::string &s) { return s.empty(); }))
    return badField("stop", "must not hold an empty string");
  return std::nullopt;
}

} // namespace

std::optional<ApiError>
tfm::serve::parseCompletionRequest(const std::string &body,
                                   const ServedModel &model,
                                   uint64_t defaultSeed,
                                   CompletionRequest &out) {
  json request = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (request.is_discarded())
    return ApiError{400, "the body is not valid JSON", "", ""};
  if (!request.is_object())
    return ApiError{400, "the body must be a JSON object", "", ""};
  static const std::set<std::string> known = {
      "model",  "prompt",     "max_tokens", "temperature", "top_p",
      "top_k",  "seed",       "stop",       "ignore_eos",  "stream",
      "n",      "user",       "repetition_penalty"};
  for (auto &[key, value] : request.items())
    if (!known.count(key))
      return ApiError{400, "unknown field '" + key + "'", key, ""};
  if (auto found = request.find("model"); found != request.end()) {
    if (!found->is_string())
      return badField("model", "must be a string");
    if (found->get<std::string>() != model.name)
      return ApiError{404,
                      "model '" + found->get<std::string>() +
                          "' does not exist; this server serves '" +
                          model.name + "'",
                      "model", "model_not_found"};
  }
  if (auto found = request.find("n");
      found != request.end() && *found != json(1))
    return badField("n", "must be 1: one completion per request");
  if (auto error = readPrompt(request, model, out.prompt))
    return error;
  double maxTokens = 16;
  if (auto error = readNumber(request, "max_tokens", 1,
                              double(model.maxTokensPerRequest), false,
                              maxTokens))
    return error;
  if (maxTokens != double(int64_t(maxTokens)))
    return badField("max_tokens", "must be an integer");
  out.maxTokens = int64_t(maxTokens);
  if (int64_t(out.prompt.size()) + out.maxTokens > model.contextPositions)
    return ApiError{400,
                    "this model's maximum context is " +
                        std::to_string(model.contextPositions) +
                        " tokens; the prompt has " +
                        std::to_string(out.prompt.size()) +
                        " and max_tokens asks for " +
                        std::to_string(out.maxTokens) + " more",
                    "max_tokens", "context_length_exceeded"};
  out.sampler = tfm_sampler_default_options();
  double temperature = 1, topP = 1, topK = 0, penalty = 1;
  if (auto error = readNumber(request, "temperature", 0, 2, false, temperature))
    return error;
  if (auto error = readNumber(request, "top_p", 0, 1, true, topP))
    return error;
  if (auto error = readNumber(request, "top_k", 0,
                              double(model.desc->vocab_size), false, topK))
    return error;
  if (auto error = readNumber(request, "repetition_penalty", 0, 10, true,
                              penalty))
    return error;
  out.sampler.temperature = float(temperature);
  out.sampler.top_p = float(topP);
  out.sampler.top_k = int32_t(topK);
  out.sampler.repetition_penalty = float(penalty);
  out.sampler.seed = defaultSeed;
  if (auto found = request.find("seed"); found != request.end() &&
                                         !found->is_null()) {
    if (!found->is_number_integer() || found->get<int64_t>() < 0)
      return badField("seed", "must be a non-negative integer");
    out.sampler.seed = found->get<uint64_t>();
  }
  for (const char *flag : {"ignore_eos", "stream"}) {
    auto found = request.find(flag);
    if (found != request.end() && !found->is_boolean())
      return badField(flag, "must be true or false");
  }
  out.ignoreEos = request.value("ignore_eos", false);
  out.stream = request.value("stream", false);
  return readStop(request, out.stop);
}

TextStream::TextStream(const ServedModel &model, std::vector<std::string> stop,
                       int32_t lastPromptToken)
    : model(model), stop(std::move(stop)), previous(lastPromptToken) {
  for (const std::string &s : this->stop)
    holdBack = std::max(holdBack, s.size() - 1);
}

/// Bytes at the end of `text` that begin a UTF-8 character not yet whole.
static size_t incompleteTail(const std::string &text) {
  for (size_t back = 1; back <= 3 && back <= text.size(); ++back) {
    unsigned char c = (unsigned char)text[text.size() - back];
    if ((c & 0xC0) == 0x80)
      continue; // a continuation byte: look further back
    size_t length = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    return length > back ? back : 0;
  }
  return 0;
}

std::string TextStream::add(int32_t token) {
  if (hitStop)
    return "";
  size_t size = 0;
  const char *piece = nullptr;
  if (model.tokenizer && token != model.desc->bos_token &&
      token != model.desc->eos_token &&
      !tfm_tokenizer_is_special(model.tokenizer, token))
    piece = tfm_tokenizer_decode(model.tokenizer, previous, token,
                                 model.desc->bos_token, &size);
  previous = token;
  if (piece)
    pending.append(piece, size);
  size_t earliest = std::string::npos;
  for (const std::string &s : stop)
    earliest = std::min(earliest, pending.find(s));
  if (earliest != std::string::npos) {
    hitStop = true;
    std::string text = pending.substr(0, earliest);
    pending.clear();
    return text;
  }
  size_t keep = std::max(holdBack, incompleteTail(pending));
  if (pending.size() <= keep)
    return "";
  std::string text = pending.substr(0, pending.size() - keep);
  pending.erase(0, pending.size() - keep);
  return text;
}

std::string TextStream::flush() {
  std::string text;
  text.swap(pending);
  return hitStop ? "" : text;
}

const char *tfm::serve::finishReason(tfm_finish_reason reason,
                                     bool stopString) {
  return stopString || reason == TFM_FINISH_EOS ? "stop" : "length";
}

json tfm::serve::completionChoice(const std::string &text,
                                  const char *finishReason) {
  return {{"index", 0},
          {"text", text},
          {"logprobs", nullptr},
          {"finish_reason", finishReason ? json(finishReason) : json(nullptr)}};
}

json tfm::serve::usage(int64_t promptTokens, int64_t completionTokens) {
  return {{"prompt_tokens", promptTokens},
          {"completion_tokens", completionTokens},
          {"total_tokens", promptTokens + completionTokens}};
}

json tfm::serve::completionResponse(const std::string &id, int64_t created,
                                    const std::string &model, json choice) {
  return {{"id", id},
          {"object", "text_completion"},
          {"created", created},
          {"model", model},
          {"choices", json::array({std::move(choice)})}};
}
