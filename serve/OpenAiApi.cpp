//===- OpenAiApi.cpp - OpenAI's completion requests and responses ---------===//

#include "serve/OpenAiApi.h"
#include "serve/ImageInputs.h"

#include <algorithm>
#include <cstdlib>
#include <set>

using namespace tfm::serve;
using json = nlohmann::ordered_json;

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

/// `text` through the model's tokenizer, starting with `bos` (-1: none);
/// errors name `field`.
std::optional<ApiError> tokenizeText(const ServedModel &model,
                                     const std::string &text, int32_t bos,
                                     const std::string &field,
                                     std::vector<int32_t> &ids) {
  tfm_status status;
  int64_t count = 0;
  // Sized for the context: a longer prompt is refused by its count.
  ids.resize(size_t(model.contextPositions) + 1);
  if (tfm_tokenizer_encode(model.tokenizer, text.c_str(), bos, ids.data(),
                           int64_t(ids.size()), &count, &status) != TFM_OK)
    return badField(field, std::string("cannot be tokenized: ") +
                               status.message);
  // Past the capacity only the count is known; it is what gets reported.
  ids.resize(size_t(count));
  if (ids.empty() && model.desc->bos_token >= 0)
    ids.push_back(model.desc->bos_token);
  if (ids.empty())
    return badField(field, "is empty");
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
  return tokenizeText(model, prompt.get<std::string>(),
                      model.desc->add_bos ? model.desc->bos_token : -1,
                      "prompt", ids);
}

/// A message's content as the template reads it: a string, or the texts
/// of its parts (OpenAI's [{"type": "text", "text": ...}]) joined by
/// newlines, as vLLM joins them; null (an assistant's tool call) is empty.
/// A vision-language model's image parts ({"type": "image_url"}) are its
/// placeholder there, their files appended to `images` (null: not kept).
/// Where the template reads typed parts itself (`parts`: it loops over
/// content, as llava-hf's, Qwen2-VL's and Gemma 3's do), the content is
/// the list of parts, {"type": "text", "text": ...} and {"type": "image"}
/// in order (a string one text part, null none), and the template writes
/// the placeholders, as vLLM gives such templates their content.
std::optional<ApiError> messageContent(const json &content, size_t index,
                                       const ServedModel &model, bool parts,
                                       json &out,
                                       std::vector<std::string> *images) {
  std::string field = "messages[" + std::to_string(index) + "].content";
  std::string text;
  out = parts ? json::array() : json("");
  auto addText = [&](const std::string &piece) {
    if (parts)
      out.push_back({{"type", "text"}, {"text", piece}});
    else
      text += (text.empty() ? "" : "\n") + piece;
  };
  if (content.is_null())
    return std::nullopt;
  if (content.is_string()) {
    if (parts)
      addText(content.get<std::string>());
    else
      out = content;
    return std::nullopt;
  }
  if (!content.is_array())
    return badField(field, "must be a string or an array of text parts");
  for (const json &part : content) {
    if (model.imageToken >= 0 && part.is_object() &&
        part.value("type", json()) == "image_url") {
      std::string file;
      if (auto error = readImagePart(part, field, file))
        return error;
      if (images)
        images->push_back(std::move(file));
      if (parts)
        out.push_back({{"type", "image"}});
      else
        addText(model.imageMarker);
    } else if (!part.is_object() || part.value("type", json()) != "text" ||
               !part.contains("text") || !part["text"].is_string()) {
      return badField(field, model.imageToken >= 0
                                 ? "has a part that is neither {\"type\": "
                                   "\"text\", \"text\": string} nor "
                                   "{\"type\": \"image_url\", ...}"
                                 : "has a part that is not {\"type\": "
                                   "\"text\", \"text\": string}: this model "
                                   "reads text only");
    } else {
      addText(part["text"].get<std::string>());
    }
  }
  if (!parts)
    out = text;
  return std::nullopt;
}

/// A chat's messages (and tools), rendered with the model's template.
std::optional<ApiError> renderMessages(const json &request,
                                       const ServedModel &model,
                                       const ToolRequest &tools,
                                       std::string &prompt,
                                       std::vector<std::string> *images) {
  auto found = request.find("messages");
  if (found == request.end())
    return ApiError{400, "'messages' is required", "messages", ""};
  if (!found->is_array() || found->empty())
    return badField("messages", "must be a non-empty array of messages");
  if (!model.chatTemplate)
    return ApiError{400, model.chatTemplateProblem, "messages",
                    "chat_template_unavailable"};
  if (!model.tokenizer)
    return badField("messages", "cannot be read: the model was compiled "
                                "without a tokenizer");
  // A vision-language model's template that reads typed parts gets them;
  // text models' templates keep the strings they were always given.
  bool parts = model.imageToken >= 0 && model.chatTemplate->readsContentParts();
  json messages = json::array();
  for (size_t i = 0; i < found->size(); ++i) {
    const json &message = (*found)[i];
    std::string at = "messages[" + std::to_string(i) + "]";
    if (!message.is_object())
      return badField(at, "must be an object with a role and content");
    if (!message.contains("role") || !message["role"].is_string())
      return badField(at + ".role", "must be a string");
    json normalized = message;
    if (auto error =
            messageContent(json(message.value("content", json())), i, model,
                           parts, normalized["content"], images))
      return error;
    if (auto error = normalizeToolFields(normalized, at))
      return badField(error->field, error->message);
    messages.push_back(std::move(normalized));
  }
  json variables = model.specialTokens;
  variables["messages"] = std::move(messages);
  // tool_choice "none": the model is not told of the tools, so it answers.
  if (tools.choice != ToolChoice::None)
    variables["tools"] = tools.templateTools;
  bool generationPrompt = true;
  if (auto flag = request.find("add_generation_prompt");
      flag != request.end()) {
    if (!flag->is_boolean())
      return badField("add_generation_prompt", "must be true or false");
    generationPrompt = flag->get<bool>();
  }
  variables["add_generation_prompt"] = generationPrompt;
  std::string error;
  ChatTemplate::Failure failure;
  if (!model.chatTemplate->render(variables, prompt, failure, error))
    return failure == ChatTemplate::Failure::Raised
               ? ApiError{400, "the model's chat template refuses the "
                               "conversation: " + error,
                          "messages", ""}
               : ApiError{400, "the model's chat template failed at " + error,
                          "messages", "chat_template_error"};
  return std::nullopt;
}

/// A chat's messages, rendered with the model's template and tokenized.
std::optional<ApiError> readMessages(const json &request,
                                     const ServedModel &model,
                                     CompletionRequest &out) {
  std::string prompt;
  std::vector<std::string> images;
  if (auto error = renderMessages(request, model, out.tools, prompt, &images))
    return error;
  if (auto error =
          tokenizeText(model, prompt, /*bos=*/-1, "messages", out.prompt))
    return error;
  // A vision-language processor tokenizes the rendered chat with the
  // tokenizer's special tokens (llava-hf's template writes no BOS, which
  // LLaVA was trained with); one the template wrote is not doubled.
  int32_t bos = model.desc->bos_token;
  if (model.imageToken >= 0 && model.desc->add_bos && bos >= 0 &&
      out.prompt.front() != bos)
    out.prompt.insert(out.prompt.begin(), bos);
  return spliceImages(model, images, out.prompt, out.imageRows,
                      out.imageRowCount);
}

/// reasoning_format, as llama.cpp's server takes it: "auto" (the default)
/// and "deepseek" put the reasoning of a model that marks it in
/// reasoning_content, "none" leaves the output as it is.
std::optional<ApiError> readReasoningFormat(const json &request,
                                            const ServedModel &model,
                                            CompletionRequest &out) {
  std::string format = "auto";
  if (auto found = request.find("reasoning_format"); found != request.end()) {
    if (!found->is_string() ||
        (*found != "auto" && *found != "deepseek" && *found != "none"))
      return badField("reasoning_format",
                      "must be \"auto\", \"deepseek\" or \"none\", got " +
                          found->dump());
    format = found->get<std::string>();
  }
  out.separateReasoning = format != "none" && model.reasoning.any();
  return std::nullopt;
}

/// Any JSON object, as llama.cpp's grammars/json.gbnf spells it (white
/// space bounded, so that a model cannot pad forever): response_format
/// json_object.
constexpr const char *kJsonObjectGrammar = R"(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{4}) )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9]{1,4})? ws
ws     ::= | " " | "\n" [ \t]{0,20}
)";

/// `grammar` (GBNF text) or response_format ({"type": "json_object"},
/// {"type": "json_schema", "json_schema": {"schema": ...}}, or "text":
/// none), parsed for the model's tokenizer into out.grammar; a grammar that
/// does not parse is a 400 naming its line and column, a schema keyword
/// tfmc does not support one naming its JSON path.
std::optional<ApiError> readGrammar(const json &request,
                                    const ServedModel &model,
                                    CompletionRequest &out) {
  auto grammar = request.find("grammar");
  auto format = request.find("response_format");
  std::string text, field;
  if (grammar != request.end() && !grammar->is_null()) {
    if (!grammar->is_string())
      return badField("grammar", "must be a string (GBNF)");
    text = grammar->get<std::string>();
    field = "grammar";
  }
  if (format != request.end() && !format->is_null()) {
    const json *type = format->is_object() && format->contains("type")
                           ? &(*format)["type"]
                           : nullptr;
    if (!type || !type->is_string())
      return badField("response_format",
                      "must be {\"type\": \"text\"} or {\"type\": "
                      "\"json_object\"}");
    if (*type != "text" && *type != "json_object" && *type != "json_schema")
      return badField("response_format",
                      "type must be \"text\", \"json_object\" or "
                      "\"json_schema\", got " +
                          type->dump());
    if (*type != "text" && !field.empty())
      return badField("response_format",
                      "and 'grammar' both constrain the output: give one");
    if (*type == "json_object") {
      text = kJsonObjectGrammar;
      field = "response_format";
    } else if (*type == "json_schema") {
      // OpenAI's {"type": "json_schema", "json_schema": {"name": ...,
      // "schema": {...}, "strict": ...}}.
      const json *wrapper = format->contains("json_schema")
                                ? &(*format)["json_schema"]
                                : nullptr;
      const json *schema = wrapper && wrapper->is_object() &&
                                   wrapper->contains("schema")
                               ? &(*wrapper)["schema"]
                               : nullptr;
      if (!schema || !(schema->is_object() || schema->is_boolean()))
        return badField("response_format",
                        "type \"json_schema\" needs \"json_schema\": "
                        "{\"schema\": {...}}");
      char *gbnf = nullptr;
      tfm_status status;
      if (tfm_json_schema_to_gbnf(schema->dump().c_str(), &gbnf, &status) !=
          TFM_OK)
        return badField("response_format", status.message);
      text = gbnf;
      free(gbnf);
      field = "response_format";
    }
  }
  if (field.empty())
    return std::nullopt;
  if (!model.tokenizer)
    return badField(field, "needs the model's tokenizer: it was compiled "
                           "without one");
  tfm_grammar *parsed = nullptr;
  tfm_status status;
  if (tfm_grammar_new(text.c_str(), model.tokenizer, model.desc, &parsed,
                      &status) != TFM_OK)
    return badField(field, std::string("is not a usable grammar: ") +
                               status.message);
  out.grammar.reset(parsed);
  return std::nullopt;
}

/// `tools` and `tool_choice`, checked against what the model's template
/// can do; a required call's opening marker appended to the prompt where
/// it is a special token (Mistral's [TOOL_CALLS]).
std::optional<ApiError> readTools(const json &request,
                                  const ServedModel &model,
                                  CompletionRequest &out) {
  if (auto error = readToolRequest(request, out.tools))
    return badField(error->field, error->message);
  if (out.tools.choice != ToolChoice::None &&
      model.toolFormat == ToolFormat::None)
    return ApiError{400,
                    "'tools' cannot be used with this model: " +
                        model.toolFormatProblem,
                    "tools", ""};
  return std::nullopt;
}

/// tool_choice "required" or a named function: the output must be a call,
/// so a grammar constrains it.
std::optional<ApiError> readToolChoiceGrammar(const ServedModel &model,
                                              CompletionRequest &out) {
  if (out.tools.choice != ToolChoice::Required &&
      out.tools.choice != ToolChoice::Named)
    return std::nullopt;
  if (out.grammar)
    return badField("tool_choice", "and 'response_format' (or 'grammar') "
                                   "both constrain the output: give one");
  std::string gbnf;
  if (auto error = toolCallGrammar(model.toolFormat, out.tools, gbnf))
    return badField(error->field, error->message);
  tfm_grammar *parsed = nullptr;
  tfm_status status;
  if (tfm_grammar_new(gbnf.c_str(), model.tokenizer, model.desc, &parsed,
                      &status) != TFM_OK)
    return badField("tools", std::string("cannot be made a grammar: ") +
                                 status.message);
  out.grammar.reset(parsed);
  return std::nullopt;
}

/// A required call whose opening marker is a special token starts after
/// it: the prompt ends with it.
std::optional<ApiError> openToolCall(const ServedModel &model,
                                     CompletionRequest &out) {
  if ((out.tools.choice != ToolChoice::Required &&
       out.tools.choice != ToolChoice::Named) ||
      !prefillsMarker(model.toolFormat))
    return std::nullopt;
  if (model.toolOpenerToken < 0)
    return badField("tool_choice",
                    "cannot be enforced: the vocabulary has no " +
                        toolMarkers(model.toolFormat).front() + " token");
  out.prompt.push_back(model.toolOpenerToken);
  out.toolCallOpened = true;
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

namespace {

/// Thrown by the parser's callback at a value nested too deep.
struct NestedTooDeep {};

/// The first string of `value` (a key or a value, at `path`) holding a NUL
/// character: the tokenizer reads C strings, so text would end there.
std::optional<ApiError> findNul(const json &value, const std::string &path,
                                const std::string &field) {
  auto refuse = [&](const std::string &where, size_t at) {
    return ApiError{400,
                    "'" + where + "' holds a NUL character (\\u0000) at byte " +
                        std::to_string(at) + ": text cannot contain one",
                    field, ""};
  };
  if (value.is_string()) {
    const std::string &text = value.get_ref<const std::string &>();
    if (size_t at = text.find('\0'); at != std::string::npos)
      return refuse(path, at);
  } else if (value.is_array()) {
    for (size_t i = 0; i < value.size(); ++i)
      if (auto error = findNul(value[i], path + "[" + std::to_string(i) + "]",
                               field))
        return error;
  } else if (value.is_object()) {
    for (auto &[key, item] : value.items()) {
      std::string at = path.empty() ? key : path + "." + key;
      if (size_t nul = key.find('\0'); nul != std::string::npos)
        return refuse(at, nul);
      if (auto error = findNul(item, at, field.empty() ? key : field))
        return error;
    }
  }
  return std::nullopt;
}

} // namespace

std::optional<ApiError> tfm::serve::parseRequestObject(const std::string &body,
                                                       json &out) {
  // nlohmann parses without recursion, but copies and frees values
  // recursively: 150,000 nested arrays overflowed the stack. No request
  // of the API nests more than a few levels.
  auto limitDepth = [](int depth, json::parse_event_t event, json &) {
    if ((event == json::parse_event_t::object_start ||
         event == json::parse_event_t::array_start) &&
        depth >= kMaxRequestDepth)
      throw NestedTooDeep{};
    return true;
  };
  try {
    out = json::parse(body, limitDepth, /*allow_exceptions=*/false);
  } catch (const NestedTooDeep &) {
    out = json();
    return ApiError{400,
                    "the body nests JSON deeper than " +
                        std::to_string(kMaxRequestDepth) + " levels",
                    "", ""};
  }
  if (out.is_discarded())
    return ApiError{400, "the body is not valid JSON", "", ""};
  if (!out.is_object())
    return ApiError{400, "the body must be a JSON object", "", ""};
  if (std::optional<ApiError> error = findNul(out, "", ""))
    return error;
  if (auto user = out.find("user"); user != out.end() && !user->is_string())
    return badField("user", "must be a string");
  return std::nullopt;
}

namespace {

/// "'a', 'b'": the LoRA adapters' names, for messages.
std::string adapterNames(const ServedModel &model) {
  std::string list;
  for (const auto &[name, id] : model.adapters)
    list += (list.empty() ? "'" : ", '") + name + "'";
  return list;
}

/// The adapter a request runs with: its `lora`, or an adapter's name as
/// its `model` (as vLLM serves them); 0 for the base model.
std::optional<ApiError> readAdapter(const json &request,
                                    const ServedModel &model,
                                    CompletionRequest &out) {
  std::string asked;
  if (auto found = request.find("model");
      found != request.end() && model.adapters.count(found->get<std::string>()))
    asked = found->get<std::string>();
  if (auto found = request.find("lora");
      found != request.end() && !found->is_null()) {
    if (!found->is_string())
      return badField("lora", "must be the name of a LoRA adapter");
    const std::string &name = found->get<std::string>();
    if (!model.adapters.count(name))
      return badField("lora", "'" + name +
                                  "' is not an adapter of this "
                                  "server" +
                                  (model.adapters.empty()
                                       ? std::string(" (it loads none: start "
                                                     "it with --lora)")
                                       : " (its adapters are " +
                                             adapterNames(model) + ")"));
    if (!asked.empty() && asked != name)
      return badField("lora", "'" + name + "' and the model '" + asked +
                                  "' name different adapters");
    asked = name;
  }
  out.lora = asked.empty() ? 0 : model.adapters.at(asked);
  out.loraName = asked;
  return std::nullopt;
}

} // namespace

std::optional<ApiError> tfm::serve::checkModelField(const json &request,
                                                    const ServedModel &model) {
  auto found = request.find("model");
  if (found == request.end())
    return std::nullopt;
  if (!found->is_string())
    return badField("model", "must be a string");
  const std::string &name = found->get<std::string>();
  if (name != model.name && !model.adapters.count(name))
    return ApiError{
        404,
        "model '" + name + "' does not exist; this server serves '" +
            model.name + "'" +
            (model.adapters.empty()
                 ? std::string()
                 : ", and its LoRA adapters " + adapterNames(model)),
        "model", "model_not_found"};
  return std::nullopt;
}

namespace {

/// A field neither endpoint knows is refused, never ignored.
std::optional<ApiError> checkFieldNames(const json &request,
                                        Endpoint endpoint) {
  static const std::set<std::string> common = {
      "model",        "max_tokens",
      "temperature",  "top_p",
      "top_k",        "seed",
      "stop",         "ignore_eos",
      "stream",       "n",
      "user",         "repetition_penalty",
      "grammar",      "response_format",
      "lookup_ngram", "lora"};
  static const std::set<std::string> chatOnly = {
      "messages", "max_completion_tokens", "add_generation_prompt",
      "stream_options", "reasoning_format", "tools", "tool_choice",
      "parallel_tool_calls"};
  bool chat = endpoint == Endpoint::ChatCompletions;
  for (auto &[key, value] : request.items())
    if (!common.count(key) && (chat ? !chatOnly.count(key) : key != "prompt"))
      return ApiError{400, "unknown field '" + key + "'", key, ""};
  return std::nullopt;
}

} // namespace

std::optional<ApiError> tfm::serve::renderChatRequest(const std::string &body,
                                                      const ServedModel &model,
                                                      std::string &prompt) {
  json request;
  if (auto error = parseRequestObject(body, request))
    return error;
  if (auto error = checkFieldNames(request, Endpoint::ChatCompletions))
    return error;
  if (auto error = checkModelField(request, model))
    return error;
  CompletionRequest chat;
  if (auto error = readTools(request, model, chat))
    return error;
  return renderMessages(request, model, chat.tools, prompt,
                        /*images=*/nullptr);
}

std::optional<ApiError>
tfm::serve::parseCompletionRequest(Endpoint endpoint, const std::string &body,
                                   const ServedModel &model,
                                   uint64_t defaultSeed,
                                   CompletionRequest &out) {
  json request;
  if (std::optional<ApiError> error = parseRequestObject(body, request))
    return error;
  bool chat = endpoint == Endpoint::ChatCompletions;
  out.endpoint = endpoint;
  if (auto error = checkFieldNames(request, endpoint))
    return error;
  // A chat's newer name for max_tokens.
  if (auto found = request.find("max_completion_tokens");
      found != request.end()) {
    if (request.contains("max_tokens"))
      return badField("max_completion_tokens",
                      "and 'max_tokens' are the same limit: give one");
    request["max_tokens"] = *found;
  }
  // Every stream ends with the usage; include_usage is accepted for it.
  if (auto found = request.find("stream_options"); found != request.end())
    if (!found->is_object() || found->size() > 1 ||
        (found->size() == 1 &&
         !found->value("include_usage", json()).is_boolean()))
      return badField("stream_options",
                      "must be {\"include_usage\": true or false}");
  if (std::optional<ApiError> error = checkModelField(request, model))
    return error;
  if (auto found = request.find("n");
      found != request.end() && *found != json(1))
    return badField("n", "must be 1: one completion per request");
  if (chat)
    if (auto error = readTools(request, model, out))
      return error;
  if (auto error = chat ? readMessages(request, model, out)
                        : readPrompt(request, model, out.prompt))
    return error;
  if (auto error = openToolCall(model, out))
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
  if (topK != double(int64_t(topK)))
    return badField("top_k", "must be an integer, got " + formatNumber(topK));
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
  double lookupNgram = model.lookupNgram;
  if (auto error =
          readNumber(request, "lookup_ngram", 0, 64, false, lookupNgram))
    return error;
  if (lookupNgram != double(int32_t(lookupNgram)))
    return badField("lookup_ngram", "must be an integer");
  if (lookupNgram > 0 && !model.maxDrafts)
    return badField("lookup_ngram",
                    "asks for speculative decoding, which this server does "
                    "not do (start it with --lookup-ngram or --draft-max, "
                    "for a model compiled with tfmc --speculative)");
  out.lookupNgram = int32_t(lookupNgram);
  if (auto error = readAdapter(request, model, out))
    return error;
  if (chat)
    if (auto error = readReasoningFormat(request, model, out))
      return error;
  if (auto error = readGrammar(request, model, out))
    return error;
  if (auto error = readToolChoiceGrammar(model, out))
    return error;
  return readStop(request, out.stop);
}

std::string ServedModel::spelling(int32_t token) const {
  size_t size = 0;
  const char *piece =
      tokenizer ? tfm_tokenizer_decode(tokenizer, -1, token, -1, &size)
                : nullptr;
  return piece ? std::string(piece, size) : std::string();
}

TextStream::TextStream(const ServedModel &model, std::vector<std::string> stop,
                       int32_t lastPromptToken, std::vector<int32_t> shown)
    : model(model), stop(std::move(stop)), shown(std::move(shown)),
      previous(lastPromptToken) {
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
      !tfm_ends_generation(model.desc, token) &&
      (!tfm_tokenizer_is_special(model.tokenizer, token) ||
       std::find(shown.begin(), shown.end(), token) != shown.end()))
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

json tfm::serve::completionChoice(Endpoint endpoint, const std::string &text,
                                  const char *finishReason, bool streamed,
                                  bool firstOfStream,
                                  const std::string &reasoning,
                                  const json &toolCalls) {
  json choice = {{"index", 0}};
  if (endpoint == Endpoint::Completions) {
    choice["text"] = text;
  } else if (!streamed) {
    choice["message"] = {{"role", "assistant"}, {"content", text}};
    if (!reasoning.empty())
      choice["message"]["reasoning_content"] = reasoning;
    if (!toolCalls.empty()) {
      if (text.empty())
        choice["message"]["content"] = nullptr;
      choice["message"]["tool_calls"] = toolCalls;
    }
  } else {
    // A stream's first delta names the role; its last may be empty.
    json delta = json::object();
    if (firstOfStream)
      delta["role"] = "assistant";
    if (!reasoning.empty())
      delta["reasoning_content"] = reasoning;
    if (!text.empty() ||
        (firstOfStream && !finishReason && reasoning.empty() &&
         toolCalls.empty()))
      delta["content"] = text;
    if (!toolCalls.empty())
      delta["tool_calls"] = toolCalls;
    choice["delta"] = std::move(delta);
  }
  choice["logprobs"] = nullptr;
  choice["finish_reason"] = finishReason ? json(finishReason) : json(nullptr);
  return choice;
}

std::string tfm::serve::base64(std::string_view bytes) {
  static const char digits[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (size_t i = 0; i < bytes.size(); i += 3) {
    uint32_t group = uint32_t(uint8_t(bytes[i])) << 16;
    if (i + 1 < bytes.size())
      group |= uint32_t(uint8_t(bytes[i + 1])) << 8;
    if (i + 2 < bytes.size())
      group |= uint32_t(uint8_t(bytes[i + 2]));
    out += digits[group >> 18 & 63];
    out += digits[group >> 12 & 63];
    out += i + 1 < bytes.size() ? digits[group >> 6 & 63] : '=';
    out += i + 2 < bytes.size() ? digits[group & 63] : '=';
  }
  return out;
}

std::string tfm::serve::jsonText(const json &value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

json tfm::serve::usage(int64_t promptTokens, int64_t completionTokens,
                       std::optional<Speculation> drafts) {
  json out = {{"prompt_tokens", promptTokens},
              {"completion_tokens", completionTokens},
              {"total_tokens", promptTokens + completionTokens}};
  // OpenAI's names for a completion's predicted tokens kept and not.
  if (drafts)
    out["completion_tokens_details"] = {
        {"accepted_prediction_tokens", drafts->accepted},
        {"rejected_prediction_tokens", drafts->drafted - drafts->accepted}};
  return out;
}

json tfm::serve::completionResponse(Endpoint endpoint, bool streamed,
                                    const std::string &id, int64_t created,
                                    const std::string &model, json choice) {
  const char *object = endpoint == Endpoint::Completions ? "text_completion"
                       : streamed ? "chat.completion.chunk"
                                  : "chat.completion";
  return {{"id", id},
          {"object", object},
          {"created", created},
          {"model", model},
          {"choices", json::array({std::move(choice)})}};
}
