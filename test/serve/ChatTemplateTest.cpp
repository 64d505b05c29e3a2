//===- ChatTemplateTest.cpp - tfm-serve's Jinja subset against Jinja ------===//
//
// Inputs/chat-templates.json holds what transformers' apply_chat_template
// (Jinja 2) renders for popular models' templates and one that uses every
// construct of the subset, over several conversations
// (make_chat_template_goldens.py). Each case must render byte for byte the
// same, or raise the same message. The rest checks what the subset refuses
// and where it says the fault is.
//
//===----------------------------------------------------------------------===//

#include "serve/jinja/ChatTemplate.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

using tfm::serve::ChatTemplate;
using json = nlohmann::ordered_json;

namespace {

json readGoldens() {
  std::ifstream in(TFM_SERVE_TEST_INPUTS "/chat-templates.json");
  std::stringstream text;
  text << in.rdbuf();
  return json::parse(text.str());
}

/// Renders `source` with `variables`; the output, or "error: ..." /
/// "raised: ...".
std::string render(const std::string &source, const json &variables) {
  std::string error;
  auto parsed = ChatTemplate::parse(source, error);
  if (!parsed)
    return "parse error: " + error;
  std::string out;
  ChatTemplate::Failure failure;
  if (!parsed->render(variables, out, failure, error))
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
  EXPECT_EQ(parseError("{{ messages | selectattr('role') }}"),
            "line 1, column 15: the filter 'selectattr' is not in "
            "tfm-serve's Jinja subset");
  EXPECT_EQ(parseError("a\n{% macro m() %}{% endmacro %}"),
            "line 2, column 4: the statement 'macro' is not in tfm-serve's "
            "Jinja subset");
  EXPECT_EQ(parseError("{{ x is divisibleby 3 }}"),
            "line 1, column 9: the test 'divisibleby' is not in tfm-serve's "
            "Jinja subset");
  EXPECT_EQ(parseError("{{ strftime_now('%Y') }}"),
            "line 1, column 4: the function 'strftime_now' is not in "
            "tfm-serve's Jinja subset");
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
  EXPECT_EQ(render("{{ 'a\xff" "b' | tojson }}", none), "\"a\\ufffdb\"");
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
