//===- ChatTemplateTest.cpp - tfm-serve's Jinja subset against Jinja ------===//
//
// Inputs/chat-templates.json holds what transformers' apply_chat_template
// (Jinja 2) renders for popular models' templates and one that uses every
// construct of the subset, over several conversations, and for real
// tool-calling templates (Inputs/tool-templates/) over conversations that
// call tools (make_chat_template_goldens.py). Each case must render byte
// for byte the same, or raise the same message. The rest checks macros,
// the filters and tests that pick items, what the subset refuses and where
// it says the fault is.
//
//===----------------------------------------------------------------------===//

#include "serve/jinja/ChatTemplate.h"

#include <gtest/gtest.h>

#include <ctime>
#include <fstream>
#include <map>
#include <sstream>

using tfm::serve::ChatTemplate;
using json = nlohmann::ordered_json;

namespace {

std::string readInput(const std::string &name) {
  std::ifstream in(TFM_SERVE_TEST_INPUTS "/" + name);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

json readGoldens() { return json::parse(readInput("chat-templates.json")); }

/// A local time "YYYY-MM-DDTHH:MM:SS" with its weekday and day of the year.
std::tm localTime(const std::string &iso) {
  std::tm time{};
  strptime(iso.c_str(), "%Y-%m-%dT%H:%M:%S", &time);
  std::time_t seconds = timegm(&time);
  gmtime_r(&seconds, &time);
  return time;
}

/// Renders `source` with `variables` (strftime_now at `now` where given);
/// the output, or "error: ..." / "raised: ...".
std::string render(const std::string &source, const json &variables,
                   const std::tm *now = nullptr) {
  std::string error;
  auto parsed = ChatTemplate::parse(source, error);
  if (!parsed)
    return "parse error: " + error;
  std::string out;
  ChatTemplate::Failure failure;
  if (!parsed->render(variables, out, failure, error, now))
    return (failure == ChatTemplate::Failure::Raised ? "raised: "
                                                     : "error: ") +
           error;
  return out;
}

std::string parseError(const std::string &source) {
  std::string error;
  return ChatTemplate::parse(source, error) ? "parsed" : error;
}

TEST(ChatTemplate, RendersAsTransformersDoes) {
  json goldens = readGoldens();
  ASSERT_GE(goldens["cases"].size(), 70u);
  int raised = 0;
  for (const json &c : goldens["cases"]) {
    std::string name = c["template"].get<std::string>() + " / " +
                       c["conversation"].get<std::string>() +
                       (c["add_generation_prompt"].get<bool>()
                            ? " / generation prompt"
                            : "");
    json variables = goldens["variables"];
    variables["messages"] = goldens["conversations"][c["conversation"]
                                                         .get<std::string>()];
    variables["add_generation_prompt"] = c["add_generation_prompt"];
    std::string got = render(
        goldens["templates"][c["template"].get<std::string>()], variables);
    if (c.contains("raises")) {
      ++raised;
      EXPECT_EQ(got, "raised: " + c["raises"].get<std::string>()) << name;
    } else {
      EXPECT_EQ(got, c["expected"].get<std::string>()) << name;
    }
  }
  EXPECT_GT(raised, 0);
}

TEST(ChatTemplate, RendersToolTemplatesAsTransformersDoes) {
  // Qwen 2.5 and 3, Llama 3.1 and 3.2, Mistral Nemo and Small 3.2, Hermes 2
  // Pro and 3, over tool calls and a plain conversation, on the clock the
  // goldens' strftime_now read (Mistral Small 3.2 always calls it; Llama
  // 3.2 where no date_string is given).
  json goldens = readGoldens();
  std::tm now = localTime(goldens["now"].get<std::string>());
  ASSERT_EQ(goldens["tool_cases"].size(), 64u);
  std::map<std::string, std::string> sources;
  int raised = 0;
  for (const json &c : goldens["tool_cases"]) {
    std::string templateName = c["template"].get<std::string>();
    std::string name = templateName + " / " +
                       c["conversation"].get<std::string>() +
                       (c["add_generation_prompt"].get<bool>()
                            ? " / generation prompt"
                            : "");
    if (!sources.count(templateName)) {
      sources[templateName] =
          readInput("tool-templates/" + templateName + ".jinja");
      ASSERT_FALSE(sources[templateName].empty()) << templateName;
    }
    const json &conversation =
        goldens["tool_conversations"][c["conversation"].get<std::string>()];
    json variables = goldens["variables"];
    variables.update(conversation["variables"]);
    variables["messages"] = conversation["messages"];
    variables["add_generation_prompt"] = c["add_generation_prompt"];
    std::string got = render(sources[templateName], variables, &now);
    if (c.contains("raises")) {
      ++raised;
      EXPECT_EQ(got, "raised: " + c["raises"].get<std::string>()) << name;
    } else {
      EXPECT_EQ(got, c["expected"].get<std::string>()) << name;
    }
  }
  EXPECT_EQ(sources.size(), 8u);
  EXPECT_GT(raised, 0);
}

TEST(ChatTemplate, RendersVisionTemplatesAsTransformersDoes) {
  // llava-hf's LLaVA 1.5 ({% generation %} in it), Qwen2.5-VL and Gemma 3,
  // over content given as typed parts, images among them.
  json goldens = readGoldens();
  ASSERT_EQ(goldens["vision_cases"].size(), 18u);
  std::map<std::string, std::string> sources;
  for (const json &c : goldens["vision_cases"]) {
    std::string templateName = c["template"].get<std::string>();
    std::string name =
        templateName + " / " + c["conversation"].get<std::string>() +
        (c["add_generation_prompt"].get<bool>() ? " / generation prompt" : "");
    if (!sources.count(templateName)) {
      sources[templateName] =
          readInput("vision-templates/" + templateName + ".jinja");
      ASSERT_FALSE(sources[templateName].empty()) << templateName;
    }
    json variables = goldens["variables"];
    variables["messages"] =
        goldens["vision_conversations"][c["conversation"].get<std::string>()];
    variables["add_generation_prompt"] = c["add_generation_prompt"];
    EXPECT_EQ(render(sources[templateName], variables),
              c["expected"].get<std::string>())
        << name;
  }
  EXPECT_EQ(sources.size(), 3u);
}

TEST(ChatTemplate, KnowsWhichTemplatesReadContentParts) {
  // vLLM's test: a loop over a message's content, through filters too.
  auto reads = [](const std::string &source) {
    std::string error;
    auto parsed = ChatTemplate::parse(source, error);
    EXPECT_TRUE(parsed) << error;
    return parsed && parsed->readsContentParts();
  };
  for (const char *name :
       {"llava-hf-llava-1.5-7b-hf", "Qwen-Qwen2.5-VL-3B-Instruct",
        "google-gemma-3-4b-it"})
    EXPECT_TRUE(
        reads(readInput("vision-templates/" + std::string(name) + ".jinja")))
        << name;
  json goldens = readGoldens();
  for (const char *name : {"llama2", "chatml", "gemma", "qwen2", "llama3"})
    EXPECT_FALSE(reads(goldens["templates"][name].get<std::string>())) << name;
  EXPECT_TRUE(reads("{% macro m(x) %}{% for p in x.content %}{{ p.text }}"
                    "{% endfor %}{% endmacro %}{{ m(messages[0]) }}"));
  EXPECT_FALSE(reads("{% for m in messages %}{% for c in m.contents %}"
                     "{% endfor %}{% endfor %}"));
}

TEST(ChatTemplate, GenerationBlocksRenderTheirBody) {
  json variables = {{"messages", json::array()}};
  EXPECT_EQ(
      render("a{% generation %}b{{ 1 + 1 }}{% endgeneration %}c", variables),
      "ab2c");
  EXPECT_EQ(parseError("{% endgeneration %}"),
            "line 1, column 4: 'endgeneration' without its 'generation'");
  EXPECT_EQ(parseError("{% generation %}x"),
            "line 1, column 4: this block is not closed: the template ends "
            "before 'endgeneration'");
  EXPECT_EQ(parseError("{% generation x %}{% endgeneration %}"),
            "line 1, column 15: unexpected 'x'");
}

TEST(ChatTemplate, Macros) {
  json none = json::object();
  // Defaults, keywords, a default computed from an earlier parameter, a
  // parameter not given (undefined).
  EXPECT_EQ(render("{% macro greet(name, greeting='Hello', punct='!') %}"
                   "{{ greeting }}, {{ name }}{{ punct }}{% endmacro %}"
                   "{{ greet('Ann') }}|{{ greet('Bob', punct='?') }}|"
                   "{{ greet(greeting='Hi', name='Cy') }}",
                   none),
            "Hello, Ann!|Hello, Bob?|Hi, Cy!");
  EXPECT_EQ(render("{% macro m(a, b=a ~ 'x') %}{{ b }}{% endmacro %}"
                   "{{ m('q') }}",
                   none),
            "qx");
  EXPECT_EQ(render("{% macro m(a, b) %}[{{ b }}]{{ b is defined }}"
                   "{% endmacro %}{{ m(1) }}",
                   none),
            "[]False");
  // The call's value is the body's text.
  EXPECT_EQ(render("{% macro m() %}ab{% endmacro %}{{ m() ~ m() }} "
                   "{{ m() | length }} {{ m() | upper }} {{ m }}",
                   none),
            "abab 2 AB <Macro 'm'>");
  // The body sees the template's variables (as they are when it is
  // called), not its caller's loop; its assignments stay in it, but a
  // namespace carries state out.
  EXPECT_EQ(render("{% set top = 'T' %}{% macro m() %}{{ top }}"
                   "{{ i is defined }}{% endmacro %}{% for i in [1] %}"
                   "{{ m() }}{% endfor %}",
                   none),
            "TFalse");
  EXPECT_EQ(render("{% macro m() %}{{ top }}{% endmacro %}"
                   "{% set top = 'late' %}{{ m() }}",
                   none),
            "late");
  EXPECT_EQ(render("{% set x = 1 %}{% macro m() %}{% set x = 2 %}{{ x }}"
                   "{% endmacro %}{{ m() }}{{ x }}",
                   none),
            "21");
  EXPECT_EQ(render("{% set ns = namespace(n=0) %}{% macro inc() %}"
                   "{% set ns.n = ns.n + 1 %}{% endmacro %}"
                   "{{ inc() }}{{ inc() }}{{ ns.n }}",
                   none),
            "2");
  // A macro called in a subscript may change the namespace the subscript
  // reads: as in Python, the list read before the call is indexed.
  EXPECT_EQ(render("{% set ns = namespace(l=[1, 2]) %}{% macro grow() %}"
                   "{% set ns.l = ns.l + [3] %}{% set ns.k = 1 %}2"
                   "{% endmacro %}[{{ ns.l[grow() | int] }}] {{ ns.l }}",
                   none),
            "[] [1, 2, 3]");
  // Recursion, as Hermes' json_to_python_type.
  EXPECT_EQ(render("{% macro fact(n) %}{% if n <= 1 %}1{% else %}"
                   "{{ n * (fact(n - 1) | int) }}{% endif %}{% endmacro %}"
                   "{{ fact(5) }}",
                   none),
            "120");
  EXPECT_EQ(render("{% macro m() %}{% endmacro %}{{ m is defined }} "
                   "{{ strftime_now is defined }} {{ nope is defined }}",
                   none),
            "True True False");
  EXPECT_EQ(render("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}", none),
            "error: line 1, column 35: the macro 'm' takes at most 1 "
            "argument(s)");
  EXPECT_EQ(render("{% macro m(a) %}{% endmacro %}{{ m(b=2) }}", none),
            "error: line 1, column 35: the macro 'm' has no parameter 'b'");
  EXPECT_EQ(render("{% macro m(a) %}{% endmacro %}{{ m(1, a=2) }}", none),
            "error: line 1, column 35: the macro 'm' is given 'a' twice");
  EXPECT_EQ(render("{{ m() }}{% macro m() %}{% endmacro %}", none),
            "error: line 1, column 5: 'm' is undefined: it cannot be called");
}

TEST(ChatTemplate, MacroRecursionIsBounded) {
  json none = json::object();
  EXPECT_EQ(render("{% macro r(n) %}{{ r(n + 1) }}{% endmacro %}{{ r(0) }}",
                   none),
            "error: line 1, column 21: macro calls nest deeper than 32 "
            "levels");
  // Each level as deep as the parser allows (blocks and expressions about
  // 100 levels each): statements and expressions nesting through macros
  // are bounded too, so that the stack stays what a template without
  // macros may take.
  std::string deep = "{% macro r(n) %}";
  for (int i = 0; i < 98; ++i)
    deep += "{% if true %}";
  deep += "{{ " + std::string(97, '[') + "r(n)" + std::string(97, ']') +
          " }}";
  for (int i = 0; i < 98; ++i)
    deep += "{% endif %}";
  deep += "{% endmacro %}{{ r(0) }}";
  std::string got = render(deep, none);
  EXPECT_NE(got.find("statements and expressions nest deeper than 256 "
                     "levels, with the bodies of the macros they call"),
            std::string::npos)
      << got.substr(0, 200);
  // Without macros the parser's bounds keep a render within it.
  std::string flat;
  for (int i = 0; i < 99; ++i)
    flat += "{% if true %}";
  flat += "{{ " + std::string(98, '[') + "1" + std::string(98, ']') +
          " | length }}";
  for (int i = 0; i < 99; ++i)
    flat += "{% endif %}";
  EXPECT_EQ(render(flat, none), "1");
  // Hermes' json_to_python_type recurses without end on a type union with
  // "null" (a string's letters are types again; Jinja overflows Python's
  // stack): a render error.
  json tools = json::parse(R"([{"type": "function", "function": {
      "name": "f", "description": "d", "parameters": {"type": "object",
      "properties": {"x": {"type": ["string", "null"],
                           "description": "x"}}}}}])");
  got = render(readInput("tool-templates/"
                         "NousResearch-Hermes-3-Llama-3.1-8B-tool_use.jinja"),
               {{"tools", tools}, {"messages", json::array()}});
  EXPECT_EQ(got.substr(0, 7), "error: ") << got.substr(0, 200);
  EXPECT_NE(got.find("macro calls nest deeper than 32 levels"),
            std::string::npos)
      << got.substr(0, 200);
}

TEST(ChatTemplate, FiltersThatPickItems) {
  json variables = {
      {"messages",
       {{{"role", "system"}, {"content", "S"}},
        {{"role", "user"}, {"content", "U1"}, {"name", "ann"}},
        {{"role", "assistant"}, {"content", "A"}},
        {{"role", "user"}, {"content", "U2"}}}}};
  EXPECT_EQ(render("{{ [1, 2, 3, 4] | select('odd') | list }} "
                   "{{ [1, 2, 3, 4] | reject('odd') | list }} "
                   "{{ [0, 1, '', 'a', none] | select | list }} "
                   "{{ [3, 5, 7] | select('gt', 4) | list }} "
                   "{{ [3, 5, 7] | reject('>', 4) | list }}",
                   variables),
            "[1, 3] [2, 4] [1, 'a'] [5, 7] [3]");
  // Mistral's templates: selectattr(attribute, test, argument).
  EXPECT_EQ(render("{{ messages | selectattr('role', 'equalto', 'user') | "
                   "map(attribute='content') | join(',') }} "
                   "{{ messages | rejectattr('role', 'eq', 'user') | list | "
                   "length }} "
                   "{{ messages | selectattr('name') | list | length }} "
                   "{{ messages | rejectattr('name') | map(attribute='role') "
                   "| join(',') }}",
                   variables),
            "U1,U2 2 1 system,assistant,user");
  EXPECT_EQ(render("{{ messages | map(attribute='name', default='anon') | "
                   "list }} {{ messages | join(', ', attribute='role') }}",
                   variables),
            "['anon', 'ann', 'anon', 'anon'] system, user, assistant, user");
  EXPECT_EQ(render("{{ ['a', 'B'] | map('upper') | list }} "
                   "{{ ['ab', 'ba'] | map('replace', 'a', 'x') | list }} "
                   "{{ [{'f': {'n': 'x'}}, {'f': {'n': 'y'}}] | "
                   "map(attribute='f.n') | join }} "
                   "{{ [[1, 2], [3, 4]] | map(attribute='1') | list }} "
                   "{{ [[1, 2], [3, 4]] | map(attribute=0) | list }}",
                   variables),
            "['A', 'B'] ['xb', 'bx'] xy [2, 4] [1, 3]");
  EXPECT_EQ(render("{% for k, v in {'a': 1, 'b': 2} | items %}{{ k }}={{ v }};"
                   "{% endfor %} {{ nothing | items | list }}",
                   variables),
            "a=1;b=2; []");
  // unique: case-insensitive by default; 1, 1.0 and true are one value.
  EXPECT_EQ(render("{{ ['a', 'A', 'b', 1, 1.0, true] | unique | list }} "
                   "{{ ['a', 'A', 'b'] | unique(case_sensitive=true) | list }} "
                   "{{ messages | unique(attribute='role') | "
                   "map(attribute='content') | join(',') }}",
                   variables),
            "['a', 'b', 1] ['a', 'A', 'b'] S,U1,A");
  // Past an item's missing attribute Jinja fails; lists are unhashable.
  EXPECT_EQ(render("{{ messages | selectattr('nope.deeper') | list }}",
                   variables),
            "error: line 1, column 15: the value is undefined: it has no "
            "'deeper'");
  EXPECT_EQ(render("{{ [1, [2]] | unique | list }}", variables),
            "error: line 1, column 15: unique needs values a set can hold, "
            "not a list");
  EXPECT_EQ(render("{{ [1, 2] | map | list }}", variables),
            "error: line 1, column 13: map needs a filter's name or "
            "attribute=");
  EXPECT_EQ(render("{{ 5 | items }}", variables),
            "error: line 1, column 8: items needs a dict, not a int");
  // A test or filter named by a computed string is checked when rendered.
  EXPECT_EQ(render("{{ [1] | select('divisible' ~ 'by', 3) | list }}",
                   variables),
            "error: line 1, column 10: the test 'divisibleby' is not in "
            "tfm-serve's Jinja subset");
}

TEST(ChatTemplate, TestsWithArguments) {
  json none = json::object();
  EXPECT_EQ(render("{{ 3 is eq 3 }} {{ 3 is eq(4) }} {{ 'a' is ne 'b' }} "
                   "{{ none is sameas none }} {{ false is sameas 0 }} "
                   "{{ 2 is in [1, 2] }} {{ 1 is lt 2 }} {{ 'b' is ge 'a' }} "
                   "{{ 1 is equalto 1.0 }} {{ 1 is eq 1 and 2 is eq 3 }} "
                   "{{ 1 is eq 1 or false }}",
                   none),
            "True False True True False True True True True False True");
  // Jinja's Undefined iterates (as nothing); dicts are equal whatever
  // their keys' order, numbers and booleans by value.
  EXPECT_EQ(render("{{ nothing is iterable }} {{ nothing is sequence }} "
                   "{{ {'a': 1, 'b': 2} == {'b': 2, 'a': 1} }} "
                   "{{ [1, {'a': true}] == [1.0, {'a': 1}] }}",
                   none),
            "True True True True");
  EXPECT_EQ(render("{{ 1 is sameas 1 }}", none),
            "error: line 1, column 9: 'sameas' compares with none, true or "
            "false in tfm-serve's Jinja subset");
}

TEST(ChatTemplate, TojsonIsJsonDumps) {
  json none = json::object();
  // transformers 4.42+'s tojson (the versions that pass tools): Python's
  // json.dumps, a plain string (Jinja's own gives Markup, which `+`
  // HTML-escapes the other operand for), nothing escaped for HTML,
  // non-ASCII kept, keys in their order unless sort_keys.
  EXPECT_EQ(render(R"({{ '"a"' + 'x' | tojson }}|{{ 'x' | tojson + '<b>' }}|)"
                   R"({{ {'k': "<it's & \u00e9>"} | tojson }})",
                   none),
            R"("a""x"|"x"<b>|{"k": "<it's & é>"})");
  EXPECT_EQ(render("{{ {'b': 1, 'a': {'d': 2, 'c': [3]}} | tojson }}|"
                   "{{ {'b': 1, 'a': {'d': 2, 'c': [3]}} | "
                   "tojson(sort_keys=true) }}",
                   none),
            R"({"b": 1, "a": {"d": 2, "c": [3]}}|{"a": {"c": [3], "d": 2}, "b": 1})");
  // indent: that many spaces a level (none for 0 or less, on new lines
  // all the same), or a string; ',' between items then. Empty lists and
  // dicts stay on their line. Positional, indent is Jinja's own tojson's.
  EXPECT_EQ(render("{{ {'a': [1, {}], 'b': []} | tojson(indent=2) }}|"
                   "{{ [1, [2]] | tojson(indent=0) }}|"
                   "{{ [1] | tojson(indent=-3) }}|"
                   "{{ {'a': 1} | tojson(indent='\\t') }}|"
                   "{{ 5 | tojson(indent=4) }}|{{ [1, [2]] | tojson(2) }}",
                   none),
            "{\n  \"a\": [\n    1,\n    {}\n  ],\n  \"b\": []\n}|"
            "[\n1,\n[\n2\n]\n]|[\n1\n]|{\n\t\"a\": 1\n}|5|"
            "[\n  1,\n  [\n    2\n  ]\n]");
  // separators (a list: tuples are not in the subset), with or without
  // indent.
  EXPECT_EQ(render("{{ {'a': [1, 2]} | tojson(separators=[',', ':']) }}|"
                   "{{ {'a': [1, 2]} | tojson(indent=1, "
                   "separators=[', ', ' = ']) }}",
                   none),
            "{\"a\":[1,2]}|{\n \"a\" = [\n  1, \n  2\n ]\n}");
  // Escapes as json.dumps': control characters, '"' and '\'; ensure_ascii
  // writes everything past '~' as \uXXXX, surrogate pairs past U+FFFF.
  EXPECT_EQ(render(R"({{ "\u00e9\U0001F60A\x7f\x01\n\"\\/<" | tojson }}|)"
                   R"({{ "\u00e9\U0001F60A\x7f\x01\n\"\\/<" | )"
                   R"(tojson(ensure_ascii=true) }})",
                   none),
            "\"é😊\x7f\\u0001\\n\\\"\\\\/<\"|"
            R"("\u00e9\ud83d\ude0a\u007f\u0001\n\"\\/<")");
  // Floats as Python's repr (an exponent from 1e16, not 1e15), printed
  // or written.
  EXPECT_EQ(render("{{ [1.5, 1000000000000000.0, 10000000000000000.0, "
                   "0.0001, 0.00001, -1234567890123456.7, 2.0] | tojson }}|"
                   "{{ 1000000000000000.0 }} {{ -1234567890123456.7 }}|"
                   "{{ [none, true, false, 'x'] | tojson }}",
                   none),
            "[1.5, 1000000000000000.0, 1e+16, 0.0001, 1e-05, "
            "-1234567890123456.8, 2.0]|1000000000000000.0 "
            "-1234567890123456.8|[null, true, false, \"x\"]");
  // What json.dumps would refuse, and an indent past the output's bound.
  EXPECT_EQ(render("{{ 1 | tojson(2, 3) }}", none),
            "error: line 1, column 8: tojson takes one argument besides its "
            "keywords (indent)");
  EXPECT_EQ(render("{{ 1 | tojson(2, indent=2) }}", none),
            "error: line 1, column 8: tojson is given 'indent' twice");
  EXPECT_EQ(render("{{ 1 | tojson(width=2) }}", none),
            "error: line 1, column 8: tojson has no argument 'width'");
  EXPECT_EQ(render("{{ 1 | tojson(indent=1.5) }}", none),
            "error: line 1, column 8: tojson's indent must be an integer or a "
            "string, not a float");
  EXPECT_EQ(render("{{ 1 | tojson(separators=[',']) }}", none),
            "error: line 1, column 8: tojson's separators must be a list of "
            "two strings");
  EXPECT_EQ(render("{{ 1 | tojson(indent=100000000) }}", none),
            "error: line 1, column 8: tojson's indent is longer than the "
            "rendered prompt may be");
  EXPECT_EQ(render("{{ [[[[[[[[1]]]]]]]] | tojson(indent=' ' * 1000000) }}",
                   none),
            "error: line 1, column 24: tojson's text passes 16 MiB");
}

TEST(ChatTemplate, TitleFilterIsJinjas) {
  // Jinja's title filter starts words only after whitespace, '-', '(',
  // '{', '[' and '<'; str.title() after any character not a letter.
  EXPECT_EQ(render("{{ 'hello-wORLD (it\\'s) a\x1c" "b c_d \"x\" 3rd [x<y' | "
                   "title }}|{{ 'it\\'s c_d 3rd'.title() }}",
                   json::object()),
            "Hello-World (It's) A\x1c" "B C_d \"x\" 3rd [X<Y|It'S C_D 3Rd");
}

TEST(ChatTemplate, TagsEndAfterBalancedBrackets) {
  // As Jinja's lexer: '}}' inside brackets does not end an output tag.
  EXPECT_EQ(render("{{ {'a': {'b': 1}} | tojson }} {{ [{'f': {'n': 'x'}}] }}",
                   json::object()),
            "{\"a\": {\"b\": 1}} [{'f': {'n': 'x'}}]");
  EXPECT_EQ(render("{% set d = {'a': {'b': '%}'}} %}{{ d.a.b }}",
                   json::object()),
            "%}");
}

TEST(ChatTemplate, StrftimeNow) {
  // transformers' strftime_now: Python's strftime of the local time,
  // %f its microseconds, %z and %Z empty (a naive datetime).
  std::tm now = localTime("2025-03-09T14:05:07");
  EXPECT_EQ(render("{{ strftime_now('%Y-%m-%d %H:%M:%S %a %b %j|%f|%z%Z|%%f|"
                   "%d %B %Y') }}",
                   json::object(), &now),
            "2025-03-09 14:05:07 Sun Mar 068|000000||%f|09 March 2025");
  // Without a time given, the clock's.
  std::time_t seconds = std::time(nullptr);
  std::tm local{};
  localtime_r(&seconds, &local);
  EXPECT_EQ(render("{{ strftime_now('%Y') }}", json::object()),
            std::to_string(local.tm_year + 1900));
  EXPECT_EQ(render("{{ strftime_now(1) }}", json::object()),
            "error: line 1, column 16: strftime_now() takes a format string");
}

TEST(ChatTemplate, WhitespaceControl) {
  json none = json::object();
  // trim_blocks: the newline after a block tag goes; lstrip_blocks: the
  // indentation before one; `-` strips all whitespace on its side; output
  // tags keep their surroundings.
  EXPECT_EQ(render("a\n  {% if true %}\n  b\n  {% endif %}\nc", none),
                   "a\n  b\nc");
  EXPECT_EQ(render("a  {%- if true -%}  b  {%- endif %}", none), "ab");
  EXPECT_EQ(render("x\n  {{ 1 }}\ny", none), "x\n  1\ny");
  EXPECT_EQ(render("x {{- 1 -}} \n y", none), "x1y");
  EXPECT_EQ(render("a {# note #}\nb", none), "a b");
  EXPECT_EQ(render("  {%+ if true %}x{% endif %}", none), "  x");
}

TEST(ChatTemplate, ScopesAsJinja) {
  json none = json::object();
  // A loop's assignments stay in it; a namespace carries state out.
  EXPECT_EQ(render("{% set x = 1 %}{% for i in [5] %}{% set x = i %}{% "
                   "endfor %}{{ x }}",
                   none),
            "1");
  EXPECT_EQ(render("{% set n = namespace(x=1) %}{% for i in [5] %}{% set "
                   "n.x = i %}{% endfor %}{{ n.x }}",
                   none),
            "5");
  EXPECT_EQ(render("{% if true %}{% set y = 2 %}{% endif %}{{ y }}", none),
            "2");
}

TEST(ChatTemplate, RefusesWhatTheSubsetLacks) {
  EXPECT_EQ(parseError("{{ messages | wordcount }}"),
            "line 1, column 15: the filter 'wordcount' is not in "
            "tfm-serve's Jinja subset");
  EXPECT_EQ(parseError("a\n{% call m() %}{% endcall %}"),
            "line 2, column 4: the statement 'call' is not in tfm-serve's "
            "Jinja subset");
  EXPECT_EQ(parseError("{{ x is divisibleby 3 }}"),
            "line 1, column 9: the test 'divisibleby' is not in tfm-serve's "
            "Jinja subset");
  EXPECT_EQ(parseError("{{ cycler('a', 'b') }}"),
            "line 1, column 4: the function 'cycler' is not in "
            "tfm-serve's Jinja subset");
  // Tests and filters named in select's, selectattr's and map's strings.
  EXPECT_EQ(parseError("{{ x | select('divisibleby', 3) }}"),
            "line 1, column 15: the test 'divisibleby' is not in "
            "tfm-serve's Jinja subset");
  EXPECT_EQ(parseError("{{ x | rejectattr('a', 'escaped') }}"),
            "line 1, column 24: the test 'escaped' is not in "
            "tfm-serve's Jinja subset");
  EXPECT_EQ(parseError("{{ x | map('wordcount') }}"),
            "line 1, column 12: the filter 'wordcount' is not in "
            "tfm-serve's Jinja subset");
  EXPECT_EQ(parseError("{{ x is eq }}"),
            "line 1, column 9: the test 'eq' takes one argument");
  EXPECT_EQ(parseError("{{ x is defined(1) }}"),
            "line 1, column 9: the test 'defined' takes no arguments");
  EXPECT_EQ(parseError("{{ x is eq(other=1) }}"),
            "line 1, column 9: the test 'eq' takes no keyword arguments");
  // Macros: at the top level, without varargs, kwargs or caller.
  EXPECT_EQ(parseError("{% if x %}\n  {% macro m() %}{% endmacro %}"
                       "{% endif %}"),
            "line 2, column 6: macros are defined only at the template's "
            "top level in tfm-serve's Jinja subset");
  EXPECT_EQ(parseError("{% macro m() %}{{ varargs }}{% endmacro %}"),
            "line 1, column 19: a macro's 'varargs' is not in tfm-serve's "
            "Jinja subset");
  EXPECT_EQ(parseError("{% macro m() %}{{ caller() }}{% endmacro %}"),
            "line 1, column 19: the function 'caller' is not in "
            "tfm-serve's Jinja subset");
  EXPECT_EQ(parseError("{% macro m(a=1, b) %}{% endmacro %}"),
            "line 1, column 17: a parameter without a default after one "
            "with a default");
  EXPECT_EQ(parseError("{% macro m(a, a) %}{% endmacro %}"),
            "line 1, column 15: the parameter 'a' repeats");
  EXPECT_EQ(parseError("{% macro m %}{% endmacro %}"),
            "line 1, column 12: expected '(', found the tag's end");
  EXPECT_EQ(parseError("{% macro m() %}x"),
            "line 1, column 4: this block is not closed: the template ends "
            "before 'endmacro'");
  EXPECT_EQ(parseError("{% endmacro %}"),
            "line 1, column 4: 'endmacro' without its 'macro'");
  EXPECT_EQ(parseError("{{ (1, 2) }}"),
            "line 1, column 6: tuples are not in tfm-serve's Jinja subset; "
            "use a list");
}

TEST(ChatTemplate, SaysWhereTheSourceIsMalformed) {
  EXPECT_EQ(parseError("ab\ncd {{ x "), "line 2, column 4: '{{' is not "
                                        "closed by '}}'");
  EXPECT_EQ(parseError("{% for m in messages %}x"),
            "line 1, column 4: this block is not closed: the template ends "
            "before 'else' or 'endfor'");
  EXPECT_EQ(parseError("{% endif %}"),
            "line 1, column 4: 'endif' without its 'if'");
  // A quote is skipped to its end when the tag's end is looked for.
  EXPECT_EQ(parseError("{{ 'abc }}"), "line 1, column 1: '{{' is not closed "
                                      "by '}}'");
  EXPECT_EQ(parseError("{{ 1 + }}"),
            "line 1, column 8: expected a value, found the tag's end");
  EXPECT_EQ(parseError("{% if x %}{% else y %}{% endif %}"),
            "line 1, column 19: 'else' takes nothing after it");
  EXPECT_EQ(parseError("{{ a b }}"), "line 1, column 6: unexpected 'b'");
  EXPECT_EQ(parseError("{{ '\\u12' }}"),
            "line 1, column 6: a malformed \\u escape");
  EXPECT_EQ(parseError("{{ x ! y }}"),
            "line 1, column 6: unexpected character '!'");
}

TEST(ChatTemplate, NestingIsBounded) {
  // Parsing, rendering and freeing recurse as deep as expressions and
  // blocks nest: 100 levels pass, deeper is refused (10 000 '[' overflowed
  // the stack), whether by recursion (brackets, unary operators) or by
  // long left-deep chains (a + a + ...).
  auto repeated = [](const std::string &part, int times) {
    std::string out;
    for (int i = 0; i < times; ++i)
      out += part;
    return out;
  };
  EXPECT_EQ(parseError("{{ " + repeated("[", 99) + repeated("]", 99) + " }}"),
            "parsed");
  EXPECT_EQ(parseError("{{ " + repeated("[", 10000) + " }}"),
            "line 1, column 104: expressions nest deeper than 100 levels");
  EXPECT_EQ(parseError("{{ " + repeated("-", 200) + "1 }}"),
            "line 1, column 103: expressions nest deeper than 100 levels");
  EXPECT_EQ(parseError("{{ " + repeated("not ", 200) + "x }}"),
            "line 1, column 400: expressions nest deeper than 100 levels");
  EXPECT_EQ(parseError("{{ " + repeated("(", 200) + "1" + repeated(")", 200) +
                       " }}"),
            "line 1, column 104: expressions nest deeper than 100 levels");
  EXPECT_EQ(parseError("{{ 1" + repeated(" + 1", 99) + " }}"), "parsed");
  EXPECT_EQ(parseError("{{ 1" + repeated(" + 1", 100000) + " }}"),
            "line 1, column 402: expressions nest deeper than 100 levels");
  EXPECT_EQ(parseError("{{ x" + repeated(".a", 200) + " }}"),
            "line 1, column 203: expressions nest deeper than 100 levels");
  EXPECT_EQ(parseError(repeated("{% if x %}", 200) + repeated("{% endif %}", 200)),
            "line 1, column 1004: blocks nest deeper than 100 levels");
}

TEST(ChatTemplate, RenderErrorsNameThePlace) {
  json variables = {{"messages", json::array()}};
  // Jinja's Undefined: missing is empty, but a member of it is an error.
  EXPECT_EQ(render("[{{ messages[0] }}]", variables), "[]");
  EXPECT_EQ(render("\n{{ messages[0]['role'] }}", variables),
            "error: line 2, column 15: the value is undefined: it has no "
            "'role'");
  EXPECT_EQ(render("{{ 'a' + 1 }}", variables),
            "error: line 1, column 8: cannot apply '+' to a str and a int");
  EXPECT_EQ(render("{{ 1 // 0 }}", variables),
            "error: line 1, column 6: division by zero");
  // Integers past int64 fail rather than wrap (found by fuzz-chat-template).
  EXPECT_EQ(render("{{ 4928609403746240284 * 22222222 }}", variables),
            "error: line 1, column 24: integer overflow in '*'");
  EXPECT_EQ(render("{{ 9223372036854774784 + 1024 }}", variables),
            "error: line 1, column 24: integer overflow in '+'");
  EXPECT_EQ(render("{{ 3 * 4 - 20 }}", variables), "-8");
  EXPECT_EQ(render("{{ 'x'.nope() }}", variables),
            "error: line 1, column 12: a str has no method 'nope' in "
            "tfm-serve's Jinja subset");
  EXPECT_EQ(render("{{ raise_exception('Roles must alternate') }}",
                   variables),
            "raised: Roles must alternate");
}

TEST(ChatTemplate, BytesThatAreNotUtf8) {
  // A template's literal may hold any bytes (it comes from a model file):
  // printed as they are, but tojson makes each bad one U+FFFD, as Python
  // decoding with errors="replace" (fuzz-chat-template's first finding:
  // the JSON writer threw).
  json none = json::object();
  EXPECT_EQ(render("{{ 'a\xff' }}", none), "a\xff");
  EXPECT_EQ(render("{{ 'a\xff" "b' | tojson }}", none), "\"a\uFFFDb\"");
  EXPECT_EQ(render("{{ 'a\xff" "b' | tojson(ensure_ascii=true) }}", none),
            "\"a\\ufffdb\"");
}

TEST(ChatTemplate, RendersAreBounded) {
  json none = json::object();
  // A template comes from a model file: it cannot loop or print without
  // end.
  EXPECT_EQ(render("{% for i in range(5000000) %}{% endfor %}", none),
            "error: line 1, column 18: range() is longer than 16384");
  EXPECT_EQ(render("{% for i in range(300) %}{% for j in range(300) %}{% "
                   "endfor %}{% endfor %}",
                   none),
            "error: line 1, column 29: the template loops more than 16384 "
            "times");
  // Items handed to loops count, run or not (a nested loop's list is
  // built each time round, its filter run over all of them): 300 lists
  // of 300 that run nothing fail at the 55th.
  EXPECT_EQ(render("{% for i in range(300) %}"
                   "{% for j in range(300) if false %}{% endfor %}{% endfor %}",
                   none),
            "error: line 1, column 29: the template loops more than 16384 "
            "times");
  EXPECT_EQ(render("{% for i in range(50) %}{% for j in range(300) %}"
                   "{% endfor %}{% endfor %}x",
                   none),
            "x");
  // Text a template holds prints without steps (what expressions make
  // counts: below), so the output's bound is met first.
  EXPECT_EQ(render("{% for i in range(4000) %}" + std::string(5000, 'x') +
                       "{% endfor %}",
                   none),
            "error: line 1, column 27: the rendered prompt passes 16 MiB");
  // Within the items, every statement and expression evaluated counts:
  // 10 000 runs of a body of 16 expressions stop at 2^16 steps.
  std::string heavy = render("{% for i in range(100) %}{% for j in range(100) "
                             "%}{{ i + j + i + j + i + j + i + j }}"
                             "{% endfor %}{% endfor %}",
                             none);
  EXPECT_EQ(heavy.substr(0, 7), "error: ") << heavy;
  EXPECT_NE(heavy.find("the template takes more than 65536 steps"),
            std::string::npos)
      << heavy;
  // Strings an expression makes cost a step each 64 bytes: 4 000 of
  // 5 000 bytes stop at the 840th.
  std::string strings = render(
      "{% for i in range(4000) %}{{ 'x' * 5000 }}{% endfor %}", none);
  EXPECT_NE(strings.find("the template takes more than 65536 steps"),
            std::string::npos)
      << strings.substr(0, 80);
  // Copying a list costs a step an item.
  std::string copies = render("{% set big = range(10000) | list %}"
                              "{% for i in range(100) %}{{ big | length }}"
                              "{% endfor %}",
                              none);
  EXPECT_NE(copies.find("the template takes more than 65536 steps"),
            std::string::npos)
      << copies.substr(0, 80);
  // A ChatML conversation of 2 000 messages stays inside them.
  json messages = json::array();
  for (int i = 0; i < 2000; ++i)
    messages.push_back({{"role", i % 2 ? "assistant" : "user"},
                        {"content", "m" + std::to_string(i)}});
  std::string chat =
      render("{% for message in messages %}{{'<|im_start|>' + message['role'] "
             "+ '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}",
             {{"messages", messages}});
  EXPECT_EQ(chat.substr(0, 25), "<|im_start|>user\nm0<|im_e") << chat.substr(0, 80);
  EXPECT_NE(chat.find("m1999<|im_end|>"), std::string::npos);
}

} // namespace
