//===- OpenAiApi.h - OpenAI's completion requests and responses -----------===//
//
// What tfm-serve accepts and answers on /v1/completions and
// /v1/chat/completions, as OpenAI's API (and vLLM's extensions: ignore_eos,
// top_k, repetition_penalty, add_generation_prompt) defines it: parsing and
// checking a request (a chat's messages rendered with the model's chat
// template), turning generated tokens into text that stops at the
// request's stop strings, and the response bodies.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_SERVE_OPENAIAPI_H
#define TFM_SERVE_OPENAIAPI_H

#include "serve/Reasoning.h"
#include "serve/ToolCalls.h"
#include "serve/jinja/ChatTemplate.h"
#include "tfm/tfm_engine.h"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tfm::serve {

/// The model a server serves and its limits.
struct ServedModel {
  std::string name;
  const tfm_model_desc *desc = nullptr;
  const tfm_tokenizer *tokenizer = nullptr; // may be null: ids only
  int64_t contextPositions = 0;             // the engine's per sequence
  int64_t maxTokensPerRequest = 0;          // max_tokens' ceiling
  /// The chat template, or null with `chatTemplateProblem` saying why
  /// (none, or one this server cannot render).
  std::unique_ptr<ChatTemplate> chatTemplate;
  std::string chatTemplateProblem;
  /// The special tokens' spellings the template is given (bos_token,
  /// eos_token), as the tokenizer spells them.
  nlohmann::ordered_json specialTokens = nlohmann::ordered_json::object();
  /// The tokens that mark a thinking model's reasoning, if its vocabulary
  /// has them.
  ReasoningMarkers reasoning;
  /// How the chat template has the model write tool calls; None with
  /// `toolFormatProblem` saying why (requests with tools are refused).
  ToolFormat toolFormat = ToolFormat::None;
  std::string toolFormatProblem;
  /// The format's markers that are special tokens (shown to the parser of
  /// a request with tools), and the token of its opening marker (-1: not
  /// one token).
  std::vector<int32_t> toolMarkerTokens;
  int32_t toolOpenerToken = -1;
  /// Speculative decoding: the drafts a request may check a step (0: the
  /// server checks none) and the lookup n-gram of requests that name none.
  int32_t maxDrafts = 0, lookupNgram = 0;
  /// The draft model every request not using prompt lookup drafts with
  /// (--draft; empty: none).
  std::string draftName;
  /// Run-time LoRA adapters loaded at start (--lora): their names in the
  /// API (a request's `lora`, or its `model`) and ids (tfm_lora_load).
  std::map<std::string, int32_t> adapters;
  /// A vision-language model's image placeholder (-1: the model reads
  /// text only), and how an image file becomes its rows (@encode_image's,
  /// appended to `rows`) and the ids that stand for it in a prompt (its
  /// rows' placeholders, with Idefics3's tokens around its tiles:
  /// tfm_image_prompt_ids): "" or what is wrong with it.
  int32_t imageToken = -1;
  std::function<std::string(const std::string &file, std::vector<float> &rows,
                            std::vector<int32_t> &ids)>
      encodeImage;
  /// What a message's text holds for an image where its template reads no
  /// typed parts: the text the tokenizer expands into the placeholders
  /// (Gemma 3's <start_of_image>), else the placeholder's spelling.
  std::string imageMarker;
  /// A token's spelling, special tokens included ("" without a
  /// tokenizer).
  std::string spelling(int32_t token) const;
};

/// The two generation endpoints: their requests differ in the prompt
/// (`prompt`, or `messages`), their responses in shape.
enum class Endpoint { Completions, ChatCompletions };

/// A parsed grammar, freed unless the engine took it.
struct GrammarDeleter {
  void operator()(tfm_grammar *grammar) const { tfm_grammar_free(grammar); }
};
using GrammarHandle = std::unique_ptr<tfm_grammar, GrammarDeleter>;

struct CompletionRequest {
  Endpoint endpoint = Endpoint::Completions;
  std::vector<int32_t> prompt;
  int64_t maxTokens = 16;
  tfm_sampler_options sampler{};
  std::vector<std::string> stop;
  bool ignoreEos = false;
  bool stream = false;
  /// Speculative decoding's prompt lookup n-gram (0: none).
  int32_t lookupNgram = 0;
  /// The LoRA adapter the request runs with (0: none), and its name, which
  /// the response gives as its model (empty: the base's).
  int32_t lora = 0;
  std::string loraName;
  /// A chat's reasoning apart from its answer (reasoning_content), where
  /// the model marks it; false: all of the output in content, as it is
  /// (reasoning_format "none").
  bool separateReasoning = false;
  /// The grammar the output must match: `grammar` (GBNF, as llama.cpp's
  /// server takes it) or response_format json_object; null: none.
  GrammarHandle grammar;
  /// A chat's tools and tool_choice; where calls are possible, the answer
  /// is parsed into tool_calls. `toolCallOpened`: a required call's
  /// opening marker ends the prompt (a special token a grammar cannot
  /// write).
  ToolRequest tools;
  bool toolCallOpened = false;
  /// A chat's images' rows, end to end ([imageRowCount, hidden]), for the
  /// prompt's placeholders (ImageInputs.h).
  std::vector<float> imageRows;
  int64_t imageRowCount = 0;
  bool parsesToolCalls(const ServedModel &model) const {
    return tools.choice != ToolChoice::None &&
           model.toolFormat != ToolFormat::None;
  }
};

/// A refused request: the HTTP status and OpenAI's error object.
struct ApiError {
  int status;
  std::string message;
  std::string param; // the field at fault, if any
  std::string code;  // OpenAI's code ("context_length_exceeded"), if any
  nlohmann::ordered_json body() const;
};

/// How deep a request body's JSON may nest (OpenAI's go a few levels).
constexpr int kMaxRequestDepth = 64;
/// Inputs one request may give an encoder (embeddings, classification,
/// documents to rerank): OpenAI's limit on /v1/embeddings.
constexpr size_t kMaxInputsPerRequest = 2048;

/// A request's body as a JSON object, or the 400 that says it is not one
/// (not JSON, nested deeper than kMaxRequestDepth, a NUL character in any
/// string, a `user` that is not a string).
std::optional<ApiError> parseRequestObject(const std::string &body,
                                           nlohmann::ordered_json &out);
/// The request's `model`, if it names one, must be the served model's name
/// (404 otherwise, as OpenAI answers for a model that does not exist).
std::optional<ApiError> checkModelField(const nlohmann::ordered_json &request,
                                        const ServedModel &model);

/// Parses and checks a body of `endpoint`; a seed the request lacks is
/// `defaultSeed`. A chat's messages become the prompt through the model's
/// chat template (with add_generation_prompt, true unless the request says
/// otherwise) and its tokenizer, which adds no BOS (the template writes
/// it, as transformers' apply_chat_template expects).
std::optional<ApiError> parseCompletionRequest(Endpoint endpoint,
                                               const std::string &body,
                                               const ServedModel &model,
                                               uint64_t defaultSeed,
                                               CompletionRequest &out);

/// The prompt text a chat request's messages (and tools) make through the
/// model's chat template, as /v1/chat/completions would tokenize it
/// (llama.cpp's /apply-template); the body's generation fields are read
/// past, but checked as the chat endpoint checks them.
std::optional<ApiError> renderChatRequest(const std::string &body,
                                          const ServedModel &model,
                                          std::string &prompt);

/// Generated tokens as text: pieces decoded as they come, held back while
/// they could still be the start of a stop string or of a UTF-8 character.
class TextStream {
public:
  /// `shown`: special tokens that are output as their spelling (a tool
  /// call's markers), where others are not text.
  TextStream(const ServedModel &model, std::vector<std::string> stop,
             int32_t lastPromptToken, std::vector<int32_t> shown = {});
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
  std::vector<int32_t> shown;
  size_t holdBack = 0;
  int32_t previous;
  std::string pending;
  bool hitStop = false;
};

/// "stop" (end of sequence, or a stop string) or "length".
const char *finishReason(tfm_finish_reason reason, bool stopString);

/// `bytes` in base64 (RFC 4648's alphabet, padded): embeddings'
/// encoding_format "base64" (the floats' bytes, little endian), images'
/// b64_json.
std::string base64(std::string_view bytes);

/// `value` as JSON text. Text that is not UTF-8 (a model's byte tokens, a
/// template's message) has each bad byte as U+FFFD: a response never
/// fails to serialize.
std::string jsonText(const nlohmann::ordered_json &value);

/// A choice of `endpoint`'s response: the text (a completion's `text`, a
/// chat's message), or in a stream the piece (a chat's `delta`, whose
/// first also names the role); a chat's `reasoning`, where not empty, as
/// its reasoning_content; `toolCalls` (an array, where not empty) as its
/// tool_calls (a message's content then null where empty).
nlohmann::ordered_json completionChoice(Endpoint endpoint, const std::string &text,
                                const char *finishReason, bool streamed,
                                bool firstOfStream,
                                const std::string &reasoning = "",
                                const nlohmann::ordered_json &toolCalls =
                                    nlohmann::ordered_json::array());
/// A request's speculative decoding: tokens drafted, and how many of them
/// the model chose.
struct Speculation {
  int64_t drafted = 0, accepted = 0;
};
/// OpenAI's usage object; with `drafts` (a request that drafted), its
/// completion_tokens_details count the predicted tokens accepted and
/// rejected.
nlohmann::ordered_json usage(int64_t promptTokens, int64_t completionTokens,
                             std::optional<Speculation> drafts = std::nullopt);
/// The response object, or a chunk of a stream when `streamed`.
nlohmann::ordered_json completionResponse(Endpoint endpoint, bool streamed,
                                  const std::string &id, int64_t created,
                                  const std::string &model,
                                  nlohmann::ordered_json choice);

} // namespace tfm::serve

#endif // TFM_SERVE_OPENAIAPI_H
