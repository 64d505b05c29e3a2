//===- ToolCalls.cpp - OpenAI's tools and tool_calls over a chat template -===//

#include "serve/ToolCalls.h"

#include "tfm/tfm_runtime.h"

#include <algorithm>
#include <cstdlib>

using namespace tfm::serve;
using json = nlohmann::ordered_json;

const char *tfm::serve::toolFormatName(ToolFormat format) {
  switch (format) {
  case ToolFormat::Hermes:
    return "hermes";
  case ToolFormat::Llama3:
    return "llama3";
  case ToolFormat::Mistral:
    return "mistral";
  case ToolFormat::MistralArgs:
    return "mistral-args";
  case ToolFormat::None:
    break;
  }
  return "none";
}

ToolFormat tfm::serve::detectToolFormat(const std::string &source,
                                        std::string &why) {
  auto has = [&](const char *text) {
    return source.find(text) != std::string::npos;
  };
  if (!has("tools")) {
    why = "the model's chat template takes no tools";
    return ToolFormat::None;
  }
  // Formats whose calls are not JSON objects: told apart first, since
  // their templates also name the markers below.
  if (has("<function=") || has("<|tool_call>") || has("to=functions.")) {
    why = "the model's chat template writes tool calls in a syntax tfm-serve "
          "does not parse (it parses hermes, llama3, mistral and "
          "mistral-args)";
    return ToolFormat::None;
  }
  if (has("[TOOL_CALLS]"))
    return has("[ARGS]") ? ToolFormat::MistralArgs : ToolFormat::Mistral;
  if (has("<tool_call>"))
    return ToolFormat::Hermes;
  if (has("<|start_header_id|>") && has("\"parameters\""))
    return ToolFormat::Llama3;
  why = "the model's chat template takes tools but tfm-serve does not know "
        "how it writes a call (it parses hermes, llama3, mistral and "
        "mistral-args)";
  return ToolFormat::None;
}

std::vector<std::string> tfm::serve::toolMarkers(ToolFormat format) {
  switch (format) {
  case ToolFormat::Hermes:
    return {"<tool_call>", "</tool_call>"};
  case ToolFormat::Llama3:
    return {"<|python_tag|>"};
  case ToolFormat::Mistral:
    return {"[TOOL_CALLS]"};
  case ToolFormat::MistralArgs:
    return {"[TOOL_CALLS]", "[ARGS]", "[CALL_ID]"};
  case ToolFormat::None:
    break;
  }
  return {};
}

bool ToolRequest::allows(const std::string &name) const {
  if (choice == ToolChoice::Named)
    return name == named;
  return std::any_of(tools.begin(), tools.end(),
                     [&](const Tool &tool) { return tool.name == name; });
}

namespace {

/// OpenAI's function names: 1 to 64 of a-z, A-Z, 0-9, _ and -.
bool validFunctionName(const std::string &name) {
  return !name.empty() && name.size() <= 64 &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                  (c >= '0' && c <= '9') || c == '_' || c == '-';
         });
}

/// How many tools one request may list (OpenAI's limit).
constexpr size_t kMaxTools = 128;

std::optional<ToolError> readTool(const json &tool, size_t index,
                                  ToolRequest &out) {
  std::string at = "tools[" + std::to_string(index) + "]";
  if (!tool.is_object() || tool.value("type", json()) != "function" ||
      !tool.contains("function") || !tool["function"].is_object())
    return ToolError{at, "must be {\"type\": \"function\", \"function\": "
                         "{\"name\": ..., \"parameters\": {...}}}"};
  const json &function = tool["function"];
  for (auto &[key, value] : function.items())
    if (key != "name" && key != "description" && key != "parameters" &&
        key != "strict")
      return ToolError{at + ".function", "has an unknown field '" + key + "'"};
  const json name = function.value("name", json());
  if (!name.is_string() || !validFunctionName(name.get<std::string>()))
    return ToolError{at + ".function.name",
                     "must be 1 to 64 letters, digits, underscores or "
                     "dashes"};
  if (function.contains("description") && !function["description"].is_string())
    return ToolError{at + ".function.description", "must be a string"};
  if (function.contains("strict") && !function["strict"].is_boolean())
    return ToolError{at + ".function.strict", "must be true or false"};
  Tool parsed{name.get<std::string>(), json::object()};
  if (auto found = function.find("parameters"); found != function.end()) {
    if (!found->is_object())
      return ToolError{at + ".function.parameters",
                       "must be a JSON Schema object"};
    parsed.parameters = *found;
  }
  if (out.allows(parsed.name))
    return ToolError{at + ".function.name",
                     "names '" + parsed.name + "' a second time"};
  out.tools.push_back(std::move(parsed));
  return std::nullopt;
}

} // namespace

std::optional<ToolError> tfm::serve::readToolRequest(const json &request,
                                                     ToolRequest &out) {
  auto tools = request.find("tools");
  bool listed = tools != request.end() && !tools->is_null();
  if (listed) {
    if (!tools->is_array() || tools->size() > kMaxTools)
      return ToolError{"tools", "must be an array of up to " +
                                    std::to_string(kMaxTools) + " tools"};
    for (size_t i = 0; i < tools->size(); ++i)
      if (auto error = readTool((*tools)[i], i, out))
        return error;
    out.templateTools = *tools;
  }
  out.choice = out.tools.empty() ? ToolChoice::None : ToolChoice::Auto;
  if (auto found = request.find("tool_choice");
      found != request.end() && !found->is_null()) {
    if (*found == "none") {
      out.choice = ToolChoice::None;
    } else if (*found == "auto" || *found == "required") {
      out.choice = *found == "auto" ? ToolChoice::Auto : ToolChoice::Required;
    } else if (found->is_object() &&
               found->value("type", json()) == "function" &&
               found->value("function", json()).is_object() &&
               (*found)["function"].value("name", json()).is_string()) {
      out.choice = ToolChoice::Named;
      out.named = (*found)["function"]["name"].get<std::string>();
      if (std::none_of(out.tools.begin(), out.tools.end(),
                       [&](const Tool &t) { return t.name == out.named; }))
        return ToolError{"tool_choice", "names the function '" + out.named +
                                            "', which 'tools' does not list"};
    } else {
      return ToolError{"tool_choice",
                       "must be \"none\", \"auto\", \"required\" or "
                       "{\"type\": \"function\", \"function\": {\"name\": "
                       "...}}"};
    }
    if (out.choice != ToolChoice::None && out.tools.empty())
      return ToolError{"tool_choice", "asks for a tool call, but 'tools' "
                                      "lists no function"};
  }
  if (auto found = request.find("parallel_tool_calls");
      found != request.end() && !found->is_null()) {
    if (!found->is_boolean())
      return ToolError{"parallel_tool_calls", "must be true or false"};
    out.parallel = found->get<bool>();
  }
  return std::nullopt;
}

std::optional<ToolError> tfm::serve::normalizeToolFields(json &message,
                                                         const std::string &at) {
  if (auto id = message.find("tool_call_id");
      id != message.end() && !id->is_string())
    return ToolError{at + ".tool_call_id", "must be a string"};
  auto calls = message.find("tool_calls");
  if (calls == message.end())
    return std::nullopt;
  if (calls->is_null()) {
    // Templates test `'tool_calls' in message`: absent, not null.
    message.erase("tool_calls");
    return std::nullopt;
  }
  if (!calls->is_array())
    return ToolError{at + ".tool_calls", "must be an array of tool calls"};
  for (size_t i = 0; i < calls->size(); ++i) {
    json &call = (*calls)[i];
    std::string here = at + ".tool_calls[" + std::to_string(i) + "]";
    if (!call.is_object() || !call.value("function", json()).is_object() ||
        !call["function"].value("name", json()).is_string())
      return ToolError{here, "must be {\"id\": ..., \"type\": \"function\", "
                             "\"function\": {\"name\": ..., \"arguments\": "
                             "...}}"};
    if (call.contains("id") && !call["id"].is_string())
      return ToolError{here + ".id", "must be a string"};
    json &arguments = call["function"]["arguments"];
    if (arguments.is_string()) {
      json parsed = json::parse(arguments.get<std::string>(), nullptr,
                                /*allow_exceptions=*/false);
      if (parsed.is_discarded())
        return ToolError{here + ".function.arguments",
                         "must be JSON text (the call's arguments object)"};
      arguments = std::move(parsed);
    } else if (arguments.is_null()) {
      arguments = json::object();
    }
  }
  return std::nullopt;
}

bool tfm::serve::prefillsMarker(ToolFormat format) {
  return format == ToolFormat::Mistral;
}

std::optional<ToolError>
tfm::serve::toolCallGrammar(ToolFormat format, const ToolRequest &request,
                            std::string &gbnf) {
  if (format == ToolFormat::MistralArgs)
    return ToolError{"tool_choice",
                     "cannot be enforced for this model: its calls are "
                     "written with special tokens ([TOOL_CALLS], [ARGS]) "
                     "that tfm-serve's grammars cannot name; use \"auto\""};
  std::vector<std::string> schemas, rules;
  std::vector<const Tool *> chosen;
  for (const Tool &tool : request.tools)
    if (request.allows(tool.name)) {
      chosen.push_back(&tool);
      schemas.push_back(tool.parameters.dump());
      rules.push_back("tool-args-" + std::to_string(rules.size()));
    }
  std::vector<const char *> schemaTexts, ruleNames;
  for (size_t i = 0; i < chosen.size(); ++i) {
    schemaTexts.push_back(schemas[i].c_str());
    ruleNames.push_back(rules[i].c_str());
  }
  char *written = nullptr;
  tfm_status status;
  if (tfm_json_schemas_to_gbnf(schemaTexts.data(), ruleNames.data(),
                               chosen.size(), &written, &status) != TFM_OK) {
    // "json schema: schema 1: at $...": say which function's parameters.
    std::string message = status.message;
    std::string field = "tools";
    size_t at = message.find("schema ");
    if (chosen.size() > 1 && at != std::string::npos) {
      size_t index = size_t(std::atoi(message.c_str() + at + 7));
      if (index < chosen.size())
        field = "tools[" +
                std::to_string(size_t(chosen[index] - request.tools.data())) +
                "].function.parameters";
    } else if (chosen.size() == 1) {
      field = "tools[" +
              std::to_string(size_t(chosen[0] - request.tools.data())) +
              "].function.parameters";
    }
    return ToolError{field, message};
  }
  std::string argumentRules = written;
  free(written);
  // Function names are [A-Za-z0-9_-]: literal as they are.
  const char *key = format == ToolFormat::Llama3 ? "parameters" : "arguments";
  std::string call = "tool-call ::=";
  for (size_t i = 0; i < chosen.size(); ++i)
    call += std::string(i ? " |" : "") + " \"{\\\"name\\\": \\\"" +
            chosen[i]->name + "\\\", \\\"" + key + "\\\": \" " + rules[i] +
            " \"}\"";
  bool many = request.parallel && request.choice != ToolChoice::Named;
  std::string root;
  switch (format) {
  case ToolFormat::Hermes:
    root = "root ::= tool-block" + std::string(many ? " (\"\\n\" tool-block)*"
                                                    : "") +
           "\ntool-block ::= \"<tool_call>\\n\" tool-call \"\\n</tool_call>\"";
    break;
  case ToolFormat::Llama3:
    // Llama 3's templates take one call a turn.
    root = "root ::= tool-call";
    break;
  case ToolFormat::Mistral:
    root = "root ::= \"[\" tool-call" +
           std::string(many ? " (\", \" tool-call)*" : "") + " \"]\"";
    break;
  case ToolFormat::MistralArgs:
  case ToolFormat::None:
    return ToolError{"tools", "this model's tool calls cannot be parsed"};
  }
  gbnf = root + "\n" + call + "\n" + argumentRules;
  return std::nullopt;
}

json ToolCall::toJson() const {
  return {{"id", id},
          {"type", "function"},
          {"function", {{"name", name}, {"arguments", arguments}}}};
}

namespace {

/// Where the JSON object or array starting at `from` ends (one past its
/// closing bracket): npos while it is not whole yet, kNotJson where `from`
/// holds no '{' or '['.
constexpr size_t kNotJson = std::string::npos - 1;
size_t jsonEnd(const std::string &text, size_t from) {
  if (from >= text.size())
    return std::string::npos;
  if (text[from] != '{' && text[from] != '[')
    return kNotJson;
  int depth = 0;
  bool inString = false, escaped = false;
  for (size_t i = from; i < text.size(); ++i) {
    char c = text[i];
    if (inString) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        inString = false;
    } else if (c == '"') {
      inString = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if (c == '}' || c == ']') {
      if (--depth == 0)
        return i + 1;
    }
  }
  return std::string::npos;
}

size_t skipSpace(const std::string &text, size_t from) {
  while (from < text.size() && (text[from] == ' ' || text[from] == '\n' ||
                                text[from] == '\t' || text[from] == '\r'))
    ++from;
  return from;
}

/// Whether `text` from `from` could still become `marker` (is a prefix of
/// it), or already starts with it.
bool mayBecome(const std::string &text, size_t from, const std::string &marker) {
  size_t n = std::min(text.size() - from, marker.size());
  return text.compare(from, n, marker, 0, n) == 0;
}

} // namespace

ToolCallParser::ToolCallParser(ToolFormat format, const ToolRequest &request,
                               bool insideCall, uint64_t seed)
    : format(format), request(request),
      state(insideCall ? State::Opened : State::Content),
      markers(toolMarkers(format)), random(seed) {
  if (insideCall)
    raw = markers.front();
  if (format == ToolFormat::None || request.choice == ToolChoice::None)
    state = State::Plain;
}

std::string ToolCallParser::newId() {
  static const char digits[] =
      "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  // Mistral's templates refuse ids that are not 9 letters and digits.
  bool mistral =
      format == ToolFormat::Mistral || format == ToolFormat::MistralArgs;
  std::string id = mistral ? "" : "call_";
  for (int i = 0; i < (mistral ? 9 : 24); ++i)
    id += digits[random() % 62];
  return id;
}

bool ToolCallParser::accept(const json &call, const char *argumentsKey) {
  if (!call.is_object() || !call.value("name", json()).is_string())
    return false;
  std::string name = call["name"].get<std::string>();
  if (!request.allows(name))
    return false;
  json arguments = call.value(argumentsKey, json());
  if (arguments.is_null() && std::string(argumentsKey) == "parameters")
    arguments = call.value("arguments", json());
  // Some models write the arguments as JSON text.
  if (arguments.is_string())
    arguments = json::parse(arguments.get<std::string>(), nullptr, false);
  if (!arguments.is_object())
    return false;
  pending.push_back({"", name, arguments.dump()});
  return true;
}

size_t ToolCallParser::readBody(bool atEnd) {
  pending.clear();
  size_t start = skipSpace(buffer, 0);
  if (format == ToolFormat::MistralArgs) {
    // f[ARGS]{...}, or f[CALL_ID]id[ARGS]{...}.
    size_t args = buffer.find("[ARGS]", start);
    if (args == std::string::npos)
      return atEnd || buffer.size() - start > 80 ? std::string::npos : 0;
    std::string name = buffer.substr(start, args - start);
    if (size_t id = name.find("[CALL_ID]"); id != std::string::npos)
      name.erase(id);
    size_t from = skipSpace(buffer, args + 6);
    size_t end = jsonEnd(buffer, from);
    if (end == kNotJson || (end == std::string::npos && atEnd))
      return std::string::npos;
    if (end == std::string::npos)
      return 0;
    json arguments = json::parse(buffer.substr(from, end - from), nullptr,
                                 false);
    return accept(json{{"name", name}, {"arguments", arguments}}, "arguments")
               ? end
               : std::string::npos;
  }
  // Mistral's list is read a call at a time: "[" before the first, and
  // "," or "]" after each (AfterCall).
  if (format == ToolFormat::Mistral && !inList) {
    if (start == buffer.size())
      return atEnd ? std::string::npos : 0;
    if (buffer[start] != '[')
      return std::string::npos;
    start = skipSpace(buffer, start + 1);
  }
  size_t end = jsonEnd(buffer, start);
  if (end == kNotJson || (end == std::string::npos && atEnd))
    return std::string::npos;
  if (end == std::string::npos)
    return 0;
  json body = json::parse(buffer.substr(start, end - start), nullptr, false);
  const char *key = format == ToolFormat::Llama3 ? "parameters" : "arguments";
  if (!accept(body, key))
    return std::string::npos;
  inList = format == ToolFormat::Mistral;
  return end;
}

std::string ToolCallParser::fallBack() {
  // Not a call after all: what was read as one is content, as written.
  std::string text = raw + buffer;
  raw.clear();
  buffer.clear();
  state = State::Plain;
  return text;
}

std::string ToolCallParser::advance(bool atEnd) {
  std::string out;
  for (;;) {
    switch (state) {
    case State::Plain:
      out += buffer;
      buffer.clear();
      return out;
    case State::Content: {
      // Between and after calls, white space only separates them.
      if (calls > 0) {
        size_t text = skipSpace(buffer, 0);
        if (text == buffer.size() && !atEnd)
          return out;
        buffer.erase(0, text);
      }
      if (format == ToolFormat::Llama3) {
        // A call is the whole answer: it starts it, or never comes.
        if (sawText || calls > 0) {
          state = State::Plain;
          continue;
        }
        size_t first = skipSpace(buffer, 0);
        if (first == buffer.size() && !atEnd)
          return out;
        if (first < buffer.size() && buffer[first] == '{') {
          raw.clear();
          state = State::Opened;
          continue;
        }
        if (first < buffer.size() && mayBecome(buffer, first, markers[0])) {
          if (buffer.size() - first < markers[0].size() && !atEnd)
            return out;
          if (buffer.size() - first >= markers[0].size()) {
            raw = buffer.substr(0, first + markers[0].size());
            buffer.erase(0, first + markers[0].size());
            state = State::Opened;
            continue;
          }
        }
        state = State::Plain;
        continue;
      }
      const std::string &opener = markers[0];
      size_t at = buffer.find(opener);
      if (at != std::string::npos) {
        out += buffer.substr(0, at);
        sawText = sawText || at > 0;
        raw = opener;
        buffer.erase(0, at + opener.size());
        state = State::Opened;
        continue;
      }
      // Hold back a tail that may become the opener.
      size_t keep = 0;
      if (!atEnd)
        for (size_t n = std::min(buffer.size(), opener.size() - 1); n > 0; --n)
          if (buffer.compare(buffer.size() - n, n, opener, 0, n) == 0) {
            keep = n;
            break;
          }
      out += buffer.substr(0, buffer.size() - keep);
      sawText = sawText || buffer.size() > keep;
      buffer.erase(0, buffer.size() - keep);
      return out;
    }
    case State::Opened: {
      size_t used = readBody(atEnd);
      if (used == std::string::npos)
        return out + fallBack();
      if (used == 0)
        return out;
      if (!request.parallel && calls + pending.size() > 1)
        pending.resize(calls < 1 ? 1 : 0);
      for (ToolCall &call : pending) {
        call.id = newId();
        fresh.push_back(call);
        ++calls;
      }
      pending.clear();
      raw += buffer.substr(0, used);
      buffer.erase(0, used);
      state = State::AfterCall;
      continue;
    }
    case State::AfterCall: {
      size_t next = skipSpace(buffer, 0);
      if (format == ToolFormat::Hermes) {
        static const std::string closer = "</tool_call>";
        if (next == buffer.size() && !atEnd)
          return out;
        if (mayBecome(buffer, next, closer) &&
            buffer.size() - next < closer.size() && !atEnd)
          return out;
        if (buffer.compare(next, closer.size(), closer) == 0)
          buffer.erase(0, next + closer.size());
      } else if (format == ToolFormat::Llama3 ||
                 (format == ToolFormat::Mistral && inList)) {
        if (next == buffer.size() && !atEnd)
          return out;
        // The separator before another call: Llama's ";", a list's ",".
        char separator = format == ToolFormat::Llama3 ? ';' : ',';
        if (next < buffer.size() && buffer[next] == separator) {
          buffer.erase(0, next + 1);
          raw.clear();
          state = State::Opened;
          continue;
        }
        if (inList && next < buffer.size() && buffer[next] == ']')
          buffer.erase(0, next + 1);
        inList = false;
      }
      raw.clear();
      state = State::Content;
      continue;
    }
    }
  }
}

std::string ToolCallParser::add(const std::string &text) {
  buffer += text;
  return advance(false);
}

std::string ToolCallParser::finish() { return advance(true); }

std::vector<ToolCall> ToolCallParser::takeCalls() {
  std::vector<ToolCall> out;
  out.swap(fresh);
  return out;
}
