//===- ToolCalls.h - OpenAI's tools and tool_calls over a chat template ---===//
//
// A chat request may list functions the model can call (`tools`) and say
// whether it must (`tool_choice`). The model's chat template tells the
// model about them (the `tools` variable) and says how it writes a call;
// the model writes calls as text in that syntax, which tfm-serve parses
// back into the response's `tool_calls`. Each family has its syntax:
//
//   hermes   <tool_call>\n{"name": "f", "arguments": {...}}\n</tool_call>
//            (Qwen2.5, Qwen3, QwQ, Hermes 2 Pro and 3), one block a call;
//   llama3   {"name": "f", "parameters": {...}} as the whole answer,
//            perhaps after <|python_tag|>, calls apart by ";" (Llama 3.1,
//            3.2, 3.3);
//   mistral  [TOOL_CALLS][{"name": "f", "arguments": {...}}, ...]
//            (Mistral 7B v0.3, Nemo, Small before 3.1);
//   mistral-args
//            [TOOL_CALLS]f[ARGS]{...}, once a call (Mistral Small 3.2,
//            Devstral, Magistral).
//
// The syntax is told from the template's source, as llama.cpp's and vLLM's
// parsers are chosen. Where a call is required (`tool_choice` "required" or
// a named function) the output is constrained by a grammar: the syntax
// around a choice of the listed functions, each with arguments that match
// its `parameters` schema.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_SERVE_TOOLCALLS_H
#define TFM_SERVE_TOOLCALLS_H

#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <random>
#include <string>
#include <vector>

namespace tfm::serve {

enum class ToolFormat { None, Hermes, Llama3, Mistral, MistralArgs };

/// "hermes", "llama3", "mistral", "mistral-args" or "none".
const char *toolFormatName(ToolFormat format);

/// The call syntax a chat template teaches its model; None where the
/// template takes no `tools` or writes calls in a syntax tfm-serve does not
/// parse (`why` then says which).
ToolFormat detectToolFormat(const std::string &templateSource,
                            std::string &why);

/// The spellings of the markers a format writes: the special tokens among
/// them must reach the parser, though special tokens are otherwise not
/// output text.
std::vector<std::string> toolMarkers(ToolFormat format);

/// A refused field and why.
struct ToolError {
  std::string field, message;
};

struct Tool {
  std::string name;
  nlohmann::ordered_json parameters; // a JSON Schema ({} where not given)
};

enum class ToolChoice { None, Auto, Required, Named };

/// What a request asks of tool calls.
struct ToolRequest {
  std::vector<Tool> tools;
  ToolChoice choice = ToolChoice::None;
  std::string named;           // ToolChoice::Named's function
  bool parallel = true;        // parallel_tool_calls
  /// The listed functions as the template gets them (OpenAI's objects).
  nlohmann::ordered_json templateTools;
  bool allows(const std::string &name) const;
};

/// Reads `tools`, `tool_choice` and `parallel_tool_calls` (absent: no tool
/// calls). Function names are OpenAI's: 1 to 64 of a-z A-Z 0-9 _ -.
std::optional<ToolError> readToolRequest(const nlohmann::ordered_json &request,
                                         ToolRequest &out);

/// A message of the conversation as templates read it: an assistant's
/// `tool_calls` with their `arguments` as JSON values (OpenAI sends them
/// as JSON text; templates write them with `tojson`), a tool message's
/// `tool_call_id` checked. `at` names the message ("messages[2]").
std::optional<ToolError> normalizeToolFields(nlohmann::ordered_json &message,
                                             const std::string &at);

/// The GBNF of a call of one of `request`'s allowed functions (several
/// where it allows parallel calls) in `format`'s syntax, with arguments
/// that match each function's parameters; or an error (a schema tfmc does
/// not support, a format whose syntax is special tokens only). For
/// `mistral`, the grammar starts after [TOOL_CALLS], a special token the
/// prompt ends with (`prefillsMarker`).
std::optional<ToolError> toolCallGrammar(ToolFormat format,
                                         const ToolRequest &request,
                                         std::string &gbnf);
/// Whether a required call starts with the format's opening marker in the
/// prompt (a special token no grammar can write).
bool prefillsMarker(ToolFormat format);

/// A parsed call, as the response's tool_calls lists it.
struct ToolCall {
  std::string id, name;
  std::string arguments; // JSON text
  nlohmann::ordered_json toJson() const;
};

/// Parses a chat's answer text, as it streams, into content and calls.
/// Text that could still be the start of a call is held back; a call is
/// reported once it is whole. Text that turns out not to be a valid call
/// of a listed function (malformed JSON, an unlisted name) is content
/// after all, as it was written.
class ToolCallParser {
public:
  /// `insideCall`: the prompt ends with the opening marker.
  ToolCallParser(ToolFormat format, const ToolRequest &request,
                 bool insideCall, uint64_t seed);
  /// Adds answer text; returns the content that is now final. New calls
  /// are in takeCalls().
  std::string add(const std::string &text);
  /// The end of the answer: the rest of the content.
  std::string finish();
  /// The calls completed since the last take.
  std::vector<ToolCall> takeCalls();
  /// Calls so far, all told.
  size_t callCount() const { return calls; }

private:
  enum class State { Content, Opened, AfterCall, Plain };
  /// Moves through `buffer` as far as its text allows; `atEnd`: no more
  /// will come.
  std::string advance(bool atEnd);
  /// Reads whole calls at the start of `buffer` (after an opener); returns
  /// how many bytes they took, 0 if more text is needed, npos if they are
  /// not calls.
  size_t readBody(bool atEnd);
  bool accept(const nlohmann::ordered_json &call, const char *argumentsKey);
  std::string fallBack();
  std::string newId();

  ToolFormat format;
  const ToolRequest &request;
  State state;
  std::vector<std::string> markers; // the format's, its opener first
  std::string buffer; // text not yet given out or consumed
  std::string raw;    // the text of the call being read, its opener too
  bool sawText = false;
  bool inList = false; // inside Mistral's [...] of calls
  size_t calls = 0;
  std::vector<ToolCall> fresh, pending;
  std::mt19937_64 random;
};

} // namespace tfm::serve

#endif // TFM_SERVE_TOOLCALLS_H
