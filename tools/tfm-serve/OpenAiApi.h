//===- OpenAiApi.h - OpenAI's completion requests and responses -----------===//
//
// What tfm-serve accepts and answers on /v1/completions, as OpenAI's API
// (and vLLM's extensions: ignore_eos, top_k, repetition_penalty) defines
// it: parsing and checking a request, turning generated tokens into text
// that stops at the request's stop strings, and the response bodies.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TOOLS_TFM_SERVE_OPENAIAPI_H
#define TFM_TOOLS_TFM_SERVE_OPENAIAPI_H

#include "runtime/tfm_engine.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tfm::serve {

/// The model a server serves and its limits.
struct ServedModel {
  std::string name;
  const tfm_model_desc *desc = nullptr;
  const tfm_tokenizer *tokenizer = nullptr; // may be null: ids only
  int64_t contextPositions = 0;             // the engine's per sequence
  int64_t maxTokensPerRequest = 0;          // max_tokens' ceiling
};

struct CompletionRequest {
  std::vector<int32_t> prompt;
  int64_t maxTokens = 16;
  tfm_sampler_options sampler{};
  std::vector<std::string> stop;
  bool ignoreEos = false;
  bool stream = false;
};

/// A refused request: the HTTP status and OpenAI's error object.
struct ApiError {
  int status;
  std::string message;
  std::string param; // the field at fault, if any
  std::string code;  // OpenAI's code ("context_length_exceeded"), if any
  nlohmann::json body() const;
};

/// Parses and checks a /v1/completions body; a seed the request lacks is
/// `defaultSeed`.
std::optional<ApiError> parseCompletionRequest(const std::string &body,
                                               const ServedModel &model,
                                               uint64_t defaultSeed,
                                               CompletionRequest &out);

/// Generated tokens as text: pieces decoded as they come, held back while
/// they could still be the start of a stop string or of a UTF-8 character.
class TextStream {
public:
  TextStream(const ServedModel &model, std::vector<std::string> stop,
             int32_t lastPromptToken);
  /// Adds a token; returns the text that is now final.
  std::string add(int32_t token);
  /// The text held back, once generation has ended.
  std::string flush();
  /// A stop string appeared: generation must end (add returned the text
  /// before it).
  bool stopped() const { return hitStop; }

private:
  const ServedModel &model;
  std::vector<std::string> stop;
  size_t holdBack = 0;
  int32_t previous;
  std::string pending;
  bool hitStop = false;
};

/// "stop" (end of sequence, or a stop string) or "length".
const char *finishReason(tfm_finish_reason reason, bool stopString);

nlohmann::json completionChoice(const std::string &text,
                                const char *finishReason);
nlohmann::json usage(int64_t promptTokens, int64_t completionTokens);
/// The response object (a chunk of a stream when `chunk`).
nlohmann::json completionResponse(const std::string &id, int64_t created,
                                  const std::string &model,
                                  nlohmann::json choice);

} // namespace tfm::serve

#endif // TFM_TOOLS_TFM_SERVE_OPENAIAPI_H
