//===- ToolCallsTest.cpp - OpenAI's tools over chat templates -------------===//
//
// serve/ToolCalls.cpp: the call syntax told from templates, tools and
// tool_choice read and refused, assistant messages' arguments made JSON
// values, the grammar of a required call, and the parser that turns a
// model's answer into content and tool_calls: whole, streamed a byte at a
// time (the same result), and falling back to content where the text is
// not a valid call.
//
//===----------------------------------------------------------------------===//

#include "serve/ToolCalls.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

using namespace tfm::serve;
using json = nlohmann::ordered_json;

namespace {

std::string readTemplate(const std::string &name) {
  std::ifstream in(std::string(TFM_SERVE_TEST_INPUTS) + "/tool-templates/" +
                   name + ".jinja");
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_FALSE(text.str().empty()) << name;
  return text.str();
}

ToolRequest twoTools(const char *choice = "auto") {
  json request = json::parse(R"({"tools": [
    {"type": "function", "function": {"name": "get_weather",
      "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                     "required": ["city"]}}},
    {"type": "function", "function": {"name": "add",
      "parameters": {"type": "object", "properties": {"a": {"type": "integer"},
                     "b": {"type": "integer"}}, "required": ["a", "b"]}}}]})");
  request["tool_choice"] = choice;
  ToolRequest out;
  EXPECT_FALSE(readToolRequest(request, out).has_value());
  return out;
}

struct Parsed {
  std::string content;
  std::vector<ToolCall> calls;
};

/// The answer through a parser, given whole or a byte at a time.
Parsed parse(ToolFormat format, const ToolRequest &request,
             const std::string &answer, bool bytewise,
             bool insideCall = false) {
  ToolCallParser parser(format, request, insideCall, 1);
  Parsed out;
  if (bytewise)
    for (char c : answer)
      out.content += parser.add(std::string(1, c));
  else
    out.content += parser.add(answer);
  out.content += parser.finish();
  out.calls = parser.takeCalls();
  return out;
}

/// parse, whole and bytewise, which must agree.
Parsed parseBoth(ToolFormat format, const ToolRequest &request,
                 const std::string &answer, bool insideCall = false) {
  Parsed whole = parse(format, request, answer, false, insideCall);
  Parsed bytes = parse(format, request, answer, true, insideCall);
  EXPECT_EQ(whole.content, bytes.content) << answer;
  EXPECT_EQ(whole.calls.size(), bytes.calls.size()) << answer;
  for (size_t i = 0; i < whole.calls.size() && i < bytes.calls.size(); ++i) {
    EXPECT_EQ(whole.calls[i].name, bytes.calls[i].name);
    EXPECT_EQ(whole.calls[i].arguments, bytes.calls[i].arguments);
  }
  return whole;
}

} // namespace

TEST(ToolCalls, FormatsAreToldFromTemplates) {
  std::string why;
  for (auto [name, format] :
       std::vector<std::pair<const char *, ToolFormat>>{
           {"Qwen-Qwen2.5-7B-Instruct", ToolFormat::Hermes},
           {"Qwen-Qwen3-0.6B", ToolFormat::Hermes},
           {"NousResearch-Hermes-2-Pro-Llama-3-8B-tool_use",
            ToolFormat::Hermes},
           {"NousResearch-Hermes-3-Llama-3.1-8B-tool_use", ToolFormat::Hermes},
           {"meta-llama-Llama-3.1-8B-Instruct", ToolFormat::Llama3},
           {"meta-llama-Llama-3.2-3B-Instruct", ToolFormat::Llama3},
           {"mistralai-Mistral-Nemo-Instruct-2407", ToolFormat::Mistral},
           {"Mistral-Small-3.2-24B-Instruct-2506", ToolFormat::MistralArgs}})
    EXPECT_EQ(detectToolFormat(readTemplate(name), why), format) << name;
  EXPECT_EQ(detectToolFormat("{{ messages }}", why), ToolFormat::None);
  EXPECT_EQ(why, "the model's chat template takes no tools");
  EXPECT_EQ(detectToolFormat("{{ tools }}<tool_call>\n<function=f>", why),
            ToolFormat::None);
  EXPECT_NE(why.find("does not parse"), std::string::npos);
}

TEST(ToolCalls, RequestsAreReadAndRefused) {
  ToolRequest request = twoTools("required");
  EXPECT_EQ(request.choice, ToolChoice::Required);
  EXPECT_EQ(request.tools.size(), 2u);
  EXPECT_TRUE(request.allows("add"));
  EXPECT_FALSE(request.allows("sub"));

  auto refusal = [](const char *body) {
    ToolRequest out;
    auto error = readToolRequest(json::parse(body), out);
    return error ? error->field + ": " + error->message : "accepted";
  };
  EXPECT_EQ(refusal(R"({"tool_choice": "required"})"),
            "tool_choice: asks for a tool call, but 'tools' lists no "
            "function");
  EXPECT_EQ(refusal(R"({"tools": [{"type": "function", "function": {"name": "a b"}}]})"),
            "tools[0].function.name: must be 1 to 64 letters, digits, "
            "underscores or dashes");
  EXPECT_EQ(refusal(R"({"tools": [{"type": "code"}]})").substr(0, 9),
            "tools[0]:");
  EXPECT_EQ(refusal(R"({"tools": [{"type": "function", "function": {"name": "f"}},
                                  {"type": "function", "function": {"name": "f"}}]})"),
            "tools[1].function.name: names 'f' a second time");
  EXPECT_EQ(refusal(R"({"tools": [{"type": "function", "function": {"name": "f"}}],
                        "tool_choice": {"type": "function", "function": {"name": "g"}}})"),
            "tool_choice: names the function 'g', which 'tools' does not list");
  EXPECT_EQ(refusal(R"({"tools": [{"type": "function", "function": {"name": "f"}}],
                        "tool_choice": "always"})")
                .substr(0, 12),
            "tool_choice:");
  EXPECT_EQ(refusal(R"({"tools": [{"type": "function", "function": {"name": "f",
                        "parameters": []}}]})"),
            "tools[0].function.parameters: must be a JSON Schema object");
  EXPECT_EQ(refusal(R"({"tools": [], "parallel_tool_calls": 1})"),
            "parallel_tool_calls: must be true or false");
  EXPECT_EQ(refusal(R"({"tools": [{"type": "function", "function": {"name": "f"}}],
                        "tool_choice": "none"})"),
            "accepted");
}

TEST(ToolCalls, ArgumentsBecomeJsonValuesForTemplates) {
  json message = json::parse(R"({"role": "assistant", "content": null,
    "tool_calls": [{"id": "abc123XYZ", "type": "function",
      "function": {"name": "add", "arguments": "{\"a\": 1, \"b\": 2}"}}]})");
  EXPECT_FALSE(normalizeToolFields(message, "messages[1]").has_value());
  EXPECT_EQ(message["tool_calls"][0]["function"]["arguments"],
            json::parse(R"({"a": 1, "b": 2})"));

  json broken = json::parse(R"({"role": "assistant", "tool_calls": [
    {"id": "x", "type": "function", "function": {"name": "add", "arguments": "{a"}}]})");
  auto error = normalizeToolFields(broken, "messages[1]");
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->field, "messages[1].tool_calls[0].function.arguments");

  json none = json::parse(R"({"role": "assistant", "content": "hi", "tool_calls": null})");
  EXPECT_FALSE(normalizeToolFields(none, "messages[0]").has_value());
  EXPECT_FALSE(none.contains("tool_calls"));
  json tool = json::parse(R"({"role": "tool", "content": "3", "tool_call_id": 7})");
  EXPECT_EQ(normalizeToolFields(tool, "messages[2]")->field,
            "messages[2].tool_call_id");
}

TEST(ToolCalls, HermesAnswersAreParsed) {
  ToolRequest request = twoTools();
  Parsed parsed = parseBoth(
      ToolFormat::Hermes, request,
      "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": "
      "{\"city\": \"Paris\"}}\n</tool_call>\n<tool_call>\n{\"name\": \"add\", "
      "\"arguments\": {\"a\": 1, \"b\": 2}}\n</tool_call>");
  EXPECT_EQ(parsed.content, "Let me check.\n");
  ASSERT_EQ(parsed.calls.size(), 2u);
  EXPECT_EQ(parsed.calls[0].name, "get_weather");
  EXPECT_EQ(parsed.calls[0].arguments, R"({"city":"Paris"})");
  EXPECT_EQ(parsed.calls[1].arguments, R"({"a":1,"b":2})");
  EXPECT_EQ(parsed.calls[0].id.substr(0, 5), "call_");
  EXPECT_EQ(parsed.calls[0].id.size(), 29u);
  EXPECT_NE(parsed.calls[0].id, parsed.calls[1].id);

  // Arguments written as JSON text (some models do) are read as JSON.
  parsed = parseBoth(ToolFormat::Hermes, request,
                     "<tool_call>{\"name\": \"add\", \"arguments\": "
                     "\"{\\\"a\\\": 5, \\\"b\\\": 6}\"}</tool_call>");
  ASSERT_EQ(parsed.calls.size(), 1u);
  EXPECT_EQ(parsed.calls[0].arguments, R"({"a":5,"b":6})");
}

TEST(ToolCalls, TextThatIsNoCallIsContent) {
  ToolRequest request = twoTools();
  for (const char *answer :
       {"No tools needed: 2 < 3, and <tool> is not a tag.",
        "<tool_call>\n{\"name\": \"delete_all\", \"arguments\": {}}\n"
        "</tool_call>",
        "<tool_call>\n{\"name\": \"add\", \"arguments\": {\"a\": 1",
        "<tool_call>\nnot json</tool_call>", "<tool_ca"}) {
    Parsed parsed = parseBoth(ToolFormat::Hermes, request, answer);
    EXPECT_EQ(parsed.content, answer);
    EXPECT_TRUE(parsed.calls.empty()) << answer;
  }
  // tool_choice "none": never parsed.
  ToolRequest none = twoTools("none");
  std::string call = "<tool_call>{\"name\": \"add\", \"arguments\": {}}"
                     "</tool_call>";
  EXPECT_EQ(parseBoth(ToolFormat::Hermes, none, call).content, call);
}

TEST(ToolCalls, Llama3AnswersAreParsed) {
  ToolRequest request = twoTools();
  Parsed parsed = parseBoth(
      ToolFormat::Llama3, request,
      " {\"name\": \"add\", \"parameters\": {\"a\": 1, \"b\": 2}}");
  EXPECT_EQ(parsed.content, "");
  ASSERT_EQ(parsed.calls.size(), 1u);
  EXPECT_EQ(parsed.calls[0].arguments, R"({"a":1,"b":2})");
  parsed = parseBoth(ToolFormat::Llama3, request,
                     "<|python_tag|>{\"name\": \"get_weather\", "
                     "\"parameters\": {\"city\": \"Oslo\"}}; {\"name\": "
                     "\"add\", \"parameters\": {\"a\": 3, \"b\": 4}}");
  ASSERT_EQ(parsed.calls.size(), 2u);
  EXPECT_EQ(parsed.calls[1].name, "add");
  // Only an answer that starts with the call is one.
  std::string prose = "Sure: {\"name\": \"add\", \"parameters\": {}}";
  EXPECT_EQ(parseBoth(ToolFormat::Llama3, request, prose).content, prose);
  std::string object = "{\"answer\": 42}";
  EXPECT_EQ(parseBoth(ToolFormat::Llama3, request, object).content, object);
}

TEST(ToolCalls, MistralAnswersAreParsed) {
  ToolRequest request = twoTools();
  Parsed parsed = parseBoth(
      ToolFormat::Mistral, request,
      "[TOOL_CALLS][{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}, "
      "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}]");
  EXPECT_EQ(parsed.content, "");
  ASSERT_EQ(parsed.calls.size(), 2u);
  // Mistral's templates take ids of 9 letters and digits only.
  EXPECT_EQ(parsed.calls[0].id.size(), 9u);
  // A required call: the prompt ended with [TOOL_CALLS].
  parsed = parseBoth(ToolFormat::Mistral, request,
                     "[{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}]",
                     /*insideCall=*/true);
  ASSERT_EQ(parsed.calls.size(), 1u);
  // The list is read a call at a time: the calls before a bad one (or
  // before max_tokens cut the list) are calls, the rest content.
  parsed = parseBoth(ToolFormat::Mistral, request,
                     "[TOOL_CALLS][{\"name\": \"add\", \"arguments\": {}}, "
                     "{\"name\": \"rm\", \"arguments\": {}}]");
  ASSERT_EQ(parsed.calls.size(), 1u);
  EXPECT_EQ(parsed.content, " {\"name\": \"rm\", \"arguments\": {}}]");
  parsed = parseBoth(ToolFormat::Mistral, request,
                     "[TOOL_CALLS][{\"name\": \"add\", \"arguments\": {}}, "
                     "{\"name\": \"add\", \"argu");
  ASSERT_EQ(parsed.calls.size(), 1u);
  EXPECT_EQ(parsed.content, " {\"name\": \"add\", \"argu");
  std::string notList = "[TOOL_CALLS]{\"name\": \"add\", \"arguments\": {}}";
  EXPECT_EQ(parseBoth(ToolFormat::Mistral, request, notList).content, notList);

  parsed = parseBoth(ToolFormat::MistralArgs, request,
                     "[TOOL_CALLS]add[ARGS]{\"a\": 1, \"b\": 2}[TOOL_CALLS]"
                     "get_weather[CALL_ID]abc123XYZ[ARGS]{\"city\": \"Rome\"}");
  ASSERT_EQ(parsed.calls.size(), 2u);
  EXPECT_EQ(parsed.calls[1].name, "get_weather");
  EXPECT_EQ(parsed.calls[1].arguments, R"({"city":"Rome"})");
}

TEST(ToolCalls, OneCallUnlessParallel) {
  ToolRequest request = twoTools();
  request.parallel = false;
  Parsed parsed = parseBoth(
      ToolFormat::Hermes, request,
      "<tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 1, \"b\": 2}}"
      "</tool_call><tool_call>{\"name\": \"add\", \"arguments\": {\"a\": 3, "
      "\"b\": 4}}</tool_call>");
  ASSERT_EQ(parsed.calls.size(), 1u);
  EXPECT_EQ(parsed.calls[0].arguments, R"({"a":1,"b":2})");
}

TEST(ToolCalls, RequiredCallsAreAGrammar) {
  ToolRequest request = twoTools("required");
  std::string gbnf;
  ASSERT_FALSE(toolCallGrammar(ToolFormat::Hermes, request, gbnf).has_value());
  EXPECT_NE(gbnf.find("root ::= tool-block (\"\\n\" tool-block)*"),
            std::string::npos)
      << gbnf;
  EXPECT_NE(gbnf.find("\"{\\\"name\\\": \\\"add\\\", \\\"arguments\\\": \" "
                      "tool-args-1 \"}\""),
            std::string::npos)
      << gbnf;
  ASSERT_FALSE(toolCallGrammar(ToolFormat::Llama3, request, gbnf).has_value());
  EXPECT_NE(gbnf.find("\\\"parameters\\\""), std::string::npos) << gbnf;
  ASSERT_FALSE(toolCallGrammar(ToolFormat::Mistral, request, gbnf).has_value());
  EXPECT_EQ(gbnf.rfind("root ::= \"[\" tool-call (\", \" tool-call)* \"]\"", 0),
            0u)
      << gbnf;
  // A named function: only it, once.
  ToolRequest named = twoTools();
  named.choice = ToolChoice::Named;
  named.named = "get_weather";
  ASSERT_FALSE(toolCallGrammar(ToolFormat::Hermes, named, gbnf).has_value());
  EXPECT_EQ(gbnf.find("\\\"add\\\""), std::string::npos) << gbnf;
  EXPECT_NE(gbnf.find("root ::= tool-block\n"), std::string::npos) << gbnf;
  // Special-token syntax, and a schema keyword tfmc lacks, are refused.
  auto error = toolCallGrammar(ToolFormat::MistralArgs, request, gbnf);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->field, "tool_choice");
  request.tools[1].parameters["properties"]["a"]["multipleOf"] = 2;
  error = toolCallGrammar(ToolFormat::Hermes, request, gbnf);
  ASSERT_TRUE(error.has_value());
  EXPECT_EQ(error->field, "tools[1].function.parameters");
  EXPECT_NE(error->message.find("$.properties.a"), std::string::npos)
      << error->message;
}
