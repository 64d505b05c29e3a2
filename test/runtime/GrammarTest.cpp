//===- GrammarTest.cpp - GBNF grammars and the token mask ----------------===//
//
// runtime/grammar/: what the parser refuses (with line and column), which
// texts the stacks accept (repetitions, classes, negation, Unicode, JSON),
// and the mask over a small vocabulary: tokens that split a UTF-8
// character, end-of-generation only where the grammar may end, special
// tokens never, a refused token changing nothing.
//
//===----------------------------------------------------------------------===//

#include "RuntimeFixtures.h"

extern "C" {
#include "runtime/grammar/grammar_internal.h"
#include "runtime/tokenizer/tokenizer_derived.h"
}

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <thread>
#include <vector>

using namespace tfm_test;

namespace {

/// The parse error of `gbnf` ("" when it parses).
std::string parseError(const std::string &gbnf) {
  tfm_grammar_rules rules;
  char error[400];
  if (tfm_grammar_parse(gbnf.c_str(), &rules, error, sizeof error)) {
    tfm_grammar_rules_free(&rules);
    return "";
  }
  return error;
}

/// Follows texts through a parsed grammar, code point by code point.
struct Follower {
  tfm_grammar_rules rules{};
  std::vector<uint32_t> scratch = std::vector<uint32_t>(TFM_GRAMMAR_SCRATCH);
  explicit Follower(const std::string &gbnf) {
    char error[400];
    EXPECT_TRUE(tfm_grammar_parse(gbnf.c_str(), &rules, error, sizeof error))
        << error;
  }
  ~Follower() { tfm_grammar_rules_free(&rules); }
  /// 'W' whole match, 'P' a prefix of one, 'N' neither.
  char follow(const std::string &text) {
    tfm_grammar_stacks stacks{}, next{};
    EXPECT_EQ(tfm_grammar_start(&rules, &stacks, scratch.data()),
              TFM_GRAMMAR_DONE);
    const unsigned char *s = (const unsigned char *)text.c_str();
    char verdict = 'P';
    while (*s) {
      uint32_t c = *s++;
      int extra = c >= 0xF0 ? 3 : c >= 0xE0 ? 2 : c >= 0xC0 ? 1 : 0;
      c &= extra ? 0x3F >> extra : 0x7F;
      while (extra--)
        c = c << 6 | (*s++ & 0x3F);
      EXPECT_EQ(
          tfm_grammar_accept_char(&rules, &stacks, c, &next, scratch.data()),
          TFM_GRAMMAR_DONE);
      std::swap(stacks, next);
      if (stacks.count == 0) {
        verdict = 'N';
        break;
      }
    }
    if (verdict == 'P' && tfm_grammar_may_end(&stacks))
      verdict = 'W';
    tfm_grammar_stacks_free(&stacks);
    tfm_grammar_stacks_free(&next);
    return verdict;
  }
};

TEST(Grammar, RefusesWhatItCannotFollowWithLineAndColumn) {
  EXPECT_EQ(parseError("root ::= \"a"), "line 1, column 10: unterminated string literal");
  EXPECT_EQ(parseError("root ::= a\n"), "line 1, column 1: rule 'a' is used but not defined");
  EXPECT_EQ(parseError("start ::= \"a\"\n"), "line 1, column 1: the grammar has no 'root' rule");
  EXPECT_EQ(parseError("root ::= root \"a\" | \"b\""),
            "line 1, column 1: rule 'root' is left-recursive: it reaches "
            "itself before reading a character (a repetition of something "
            "that may be empty does too)");
  // x* over something that may be empty would loop without reading.
  EXPECT_NE(parseError("root ::= (\"a\"?)*").find("left-recursive"),
            std::string::npos);
  EXPECT_EQ(parseError("root ::= \"a\"\nroot ::= \"b\""),
            "line 2, column 1: rule 'root' is defined twice");
  EXPECT_EQ(parseError("root ::= * \"a\""), "line 1, column 10: '*' repeats nothing");
  EXPECT_EQ(parseError("root ::= \"\\q\""), "line 1, column 11: unknown escape '\\q'");
  EXPECT_EQ(parseError("root ::= [b-a]"),
            "line 1, column 10: character range with its end before its start");
  EXPECT_EQ(parseError("root ::= (\"a\" | \"b\""), "line 1, column 10: '(' is not closed");
  EXPECT_EQ(parseError("root ::= \"a\"{3,2}"),
            "line 1, column 13: repetition {3,2} with its maximum below its minimum");
  EXPECT_EQ(parseError("root ::= \"a\"{99999}"),
            "line 1, column 14: repetition count above 10000");
  EXPECT_EQ(parseError("root ::= <think>"),
            "line 1, column 10: token references (<...>, !<...>) are not supported");
  EXPECT_EQ(parseError("root = \"a\""), "line 1, column 6: expected '::=' after the rule name");
  EXPECT_EQ(parseError("root ::= \"a\" )"), "line 1, column 14: unmatched ')'");
  EXPECT_EQ(parseError("# only a comment\n"), "line 1, column 1: the grammar has no 'root' rule");
}

TEST(Grammar, RepetitionsClassesAndAlternatives) {
  Follower bounded("root ::= \"a\"{2,4}");
  EXPECT_EQ(bounded.follow("a"), 'P');
  EXPECT_EQ(bounded.follow("aa"), 'W');
  EXPECT_EQ(bounded.follow("aaaa"), 'W');
  EXPECT_EQ(bounded.follow("aaaaa"), 'N');
  Follower exact("root ::= (\"ab\" | [0-9]){3} \"!\"");
  EXPECT_EQ(exact.follow("ab1ab!"), 'W');
  EXPECT_EQ(exact.follow("ab1!"), 'N');
  Follower open("root ::= [a-c]{2,} \".\"");
  EXPECT_EQ(open.follow("abcabc."), 'W');
  EXPECT_EQ(open.follow("a."), 'N');
  // A newline after '|' goes on with the rule; an empty alternative.
  Follower lines("root ::= \"x\" |\n  \"y\" tail\ntail ::= | \"z\"+  # comment\n");
  EXPECT_EQ(lines.follow("x"), 'W');
  EXPECT_EQ(lines.follow("y"), 'W');
  EXPECT_EQ(lines.follow("yzzz"), 'W');
  EXPECT_EQ(lines.follow("xz"), 'N');
  // Negation, '.', escapes and code points past ASCII.
  Follower line("root ::= [^\\n]+ \"\\n\" . [\\u3041-\\u309F\\x41]+");
  EXPECT_EQ(line.follow("a b\n\xE2\x82\xAC\xE3\x81\x81" "A"), 'W');
  EXPECT_EQ(line.follow("\n"), 'N');
  EXPECT_EQ(line.follow("a\nxB"), 'N');
}

// Alternatives that match the empty text in many ways, repeated: 82^5
// paths to the same few stacks, each followed once (the fuzzer's timeout
// of December 2026 took minutes a character).
TEST(Grammar, EmptyAlternativesRepeatedAreFollowedOnce) {
  std::string empties;
  for (int i = 0; i < 80; ++i)
    empties += "| ";
  Follower ambiguous("root ::= (" + empties + "\"ab\" | [0-9]){2,5} \"!\"");
  EXPECT_EQ(ambiguous.follow("!"), 'W');
  EXPECT_EQ(ambiguous.follow("ab7ab!"), 'W');
  EXPECT_EQ(ambiguous.follow("1234ab!"), 'W');
  EXPECT_EQ(ambiguous.follow("123456!"), 'N');
  EXPECT_EQ(ambiguous.follow("a!"), 'N');
}

// An alternative that repeats an earlier one adds no text and doubled the
// stack sets it reached (fuzz-grammar: "x" | | | ... took seconds a
// character): the parser keeps the first of each, a class by its ranges, a
// reference by its rule.
TEST(Grammar, RepeatedAlternativesAreKeptOnce) {
  tfm_grammar_rules rules;
  char error[400];
  ASSERT_TRUE(tfm_grammar_parse("root ::= \"a\" | x | [b-c] | \"a\" | "
                                "[b-c] | x | [b-d] | \"\" | \"\"\n"
                                "x ::= \"e\"",
                                &rules, error, sizeof error))
      << error;
  // "a", x, [b-c], [b-d] and the empty one.
  EXPECT_EQ(rules.rules[rules.root].alternative_count, 5u);
  tfm_grammar_rules_free(&rules);
  Follower follower("root ::= \"a\" | x | [b-c] | \"a\" | [b-c] | x | "
                    "[b-d] | \"\" | \"\"\nx ::= \"e\"");
  for (const char *text : {"a", "e", "c", "d", ""})
    EXPECT_EQ(follower.follow(text), 'W') << text;
  EXPECT_EQ(follower.follow("f"), 'N');
}

// a^n then n of b or c, last first: after n a's, 2^n stacks (which letter
// each a waits for). Past 2^13 the grammar is refused as too ambiguous.
TEST(Grammar, TooManyStacksAreRefused) {
  tfm_grammar_rules rules;
  char error[400];
  ASSERT_TRUE(tfm_grammar_parse("root ::= \"a\" root \"b\" | \"a\" root "
                                "\"c\" | \"\"",
                                &rules, error, sizeof error))
      << error;
  std::vector<uint32_t> scratch(TFM_GRAMMAR_SCRATCH);
  tfm_grammar_stacks stacks{}, next{};
  ASSERT_EQ(tfm_grammar_start(&rules, &stacks, scratch.data()),
            TFM_GRAMMAR_DONE);
  tfm_grammar_step step = TFM_GRAMMAR_DONE;
  int read = 0;
  while (step == TFM_GRAMMAR_DONE && read < 20) {
    step = tfm_grammar_accept_char(&rules, &stacks, 'a', &next, scratch.data());
    std::swap(stacks, next);
    ++read;
  }
  EXPECT_EQ(step, TFM_GRAMMAR_TOO_AMBIGUOUS);
  // After the 12th a: 2^12 letter sequences to come, each beside an a
  // that may follow, or its first letter: more than 2^13 stacks.
  EXPECT_EQ(read, 12);
  tfm_status status;
  EXPECT_EQ(tfm_grammar_step_status(step, "", &status),
            TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(status.message).find("too ambiguous"),
            std::string::npos);
  tfm_grammar_stacks_free(&stacks);
  tfm_grammar_stacks_free(&next);
  tfm_grammar_rules_free(&rules);
}

TEST(Grammar, JsonValues) {
  Follower json(R"(root   ::= object
value  ::= object | array | string | number | ("true" | "false" | "null") ws
object ::= "{" ws ( string ":" ws value ("," ws string ":" ws value)* )? "}" ws
array  ::= "[" ws ( value ("," ws value)* )? "]" ws
string ::= "\"" ( [^"\\\x7F\x00-\x1F] | "\\" (["\\bfnrt] | "u" [0-9a-fA-F]{4}) )* "\"" ws
number ::= ("-"? ([0-9] | [1-9] [0-9]{0,15})) ("." [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws
ws ::= | " " | "\n" [ \t]{0,20}
)");
  EXPECT_EQ(json.follow(R"({"a": [1, -2.5e3, true, null, {"b\u00e9": "x\"y"}]})"), 'W');
  EXPECT_EQ(json.follow(R"({"a": [1, 2)"), 'P');
  EXPECT_EQ(json.follow(R"({"a": 01})"), 'N');
  EXPECT_EQ(json.follow(R"({"a" 1})"), 'N');
  EXPECT_EQ(json.follow("{\"a\": \"line\nbreak\"}"), 'N');
}

/// The GBNF of a JSON schema (or its error, prefixed "ERROR: ").
std::string schemaGrammar(const std::string &schema) {
  char *gbnf = nullptr;
  tfm_status status;
  if (tfm_json_schema_to_gbnf(schema.c_str(), &gbnf, &status) != TFM_OK)
    return std::string("ERROR: ") + status.message;
  std::string text = gbnf;
  free(gbnf);
  return text;
}

TEST(JsonSchema, InstancesAreWholeMatchesAndOthersAreNot) {
  Follower person(schemaGrammar(R"({"type": "object", "properties": {
      "name": {"type": "string", "maxLength": 5},
      "age": {"type": "integer", "minimum": 0},
      "tags": {"type": "array", "items": {"enum": ["a", "b"]}, "maxItems": 2}},
      "required": ["name"]})"));
  EXPECT_EQ(person.follow(R"({"name":"ab"})"), 'W');
  EXPECT_EQ(person.follow(R"({"name": "abc", "age": 3, "tags": ["a","b"]})"), 'W');
  EXPECT_EQ(person.follow(R"({"name":"abcdef"})"), 'N');
  EXPECT_EQ(person.follow(R"({"name":"a","tags":["a","b","a"]})"), 'N');
  EXPECT_EQ(person.follow(R"({"name":"a","age":-1})"), 'N');
  EXPECT_EQ(person.follow(R"({"name":"a","extra":1})"), 'N');
  // Required properties come first: the order is the grammar's.
  EXPECT_EQ(person.follow(R"({"age":3,"name":"a"})"), 'N');
  Follower tree(schemaGrammar(R"({"$defs": {"node": {"type": "object",
      "properties": {"v": {"type": "integer"}, "kids": {"type": "array",
      "items": {"$ref": "#/$defs/node"}}}, "required": ["v"]}},
      "$ref": "#/$defs/node"})"));
  EXPECT_EQ(tree.follow(R"({"v":1,"kids":[{"v":2},{"v":3,"kids":[]}]})"), 'W');
  EXPECT_EQ(tree.follow(R"({"v":1,"kids":[{"w":2}]})"), 'N');
  Follower choice(schemaGrammar(R"({"anyOf": [{"type": "string",
      "format": "date"}, {"const": 42}, {"type": ["null", "boolean"]}]})"));
  for (const char *yes : {"\"2024-02-29\"", "42", "null", "true"})
    EXPECT_EQ(choice.follow(yes), 'W') << yes;
  for (const char *no : {"\"x\"", "43", "\"2024-13-01\""})
    EXPECT_EQ(choice.follow(no), 'N') << no;
  Follower tuple(schemaGrammar(R"({"type": "array", "prefixItems": [
      {"type": "string", "format": "uuid"}, {"type": "number"}],
      "items": false})"));
  EXPECT_EQ(tuple.follow(R"(["123e4567-e89b-12d3-a456-426614174000", 1.5e3])"), 'W');
  EXPECT_EQ(tuple.follow(R"(["x", 1])"), 'N');
  // Rules longer than a line buffer (a wide object's body).
  std::string wide = R"({"type": "object", "properties": {)";
  for (int i = 0; i < 40; ++i)
    wide += (i ? ", " : "") + std::string("\"property_number_") +
            std::to_string(i) + "\": {\"type\": \"boolean\"}";
  wide += R"(}, "required": ["property_number_0"]})";
  Follower many(schemaGrammar(wide));
  EXPECT_EQ(many.follow(R"({"property_number_0": true, "property_number_39": false})"), 'W');
  Follower anyObject(schemaGrammar(R"({"type": "object",
      "additionalProperties": true, "title": "t", "description": "d"})"));
  EXPECT_EQ(anyObject.follow(R"({"x": [1, {"y": null}], "z": "w"})"), 'W');
}

// Integer bounds, digit by digit: every integer in range and none outside,
// across lengths and signs.
TEST(JsonSchema, IntegerRangesAreExact) {
  struct Range {
    const char *schema;
    long low, high;
  } ranges[] = {
      {R"({"type": "integer", "minimum": 13, "maximum": 57})", 13, 57},
      {R"({"type": "integer", "minimum": -12, "maximum": 7})", -12, 7},
      {R"({"type": "integer", "exclusiveMinimum": -100, "exclusiveMaximum": -3})",
       -99, -4},
      {R"({"type": "integer", "minimum": 0, "maximum": 1000})", 0, 1000},
      {R"({"type": "integer", "minimum": 1.5, "maximum": 9.5})", 2, 9},
      {R"({"type": "integer", "minimum": 95, "maximum": 105})", 95, 105}};
  for (const Range &range : ranges) {
    Follower follower(schemaGrammar(range.schema));
    // Outside the range a text may still begin one inside ("1" of "13").
    for (long v = range.low - 30; v <= range.high + 30; ++v)
      EXPECT_EQ(follower.follow(std::to_string(v)) == 'W',
                v >= range.low && v <= range.high)
          << range.schema << " " << v;
    EXPECT_NE(follower.follow("-0"), 'W') << range.schema;
    EXPECT_EQ(follower.follow("007"), 'N') << range.schema;
  }
  Follower above(schemaGrammar(R"({"type": "integer", "minimum": 18})"));
  EXPECT_EQ(above.follow("17"), 'P'); // 170 is above
  EXPECT_EQ(above.follow("-1"), 'N');
  EXPECT_EQ(above.follow("9999999999999999"), 'W');
  EXPECT_EQ(above.follow("18"), 'W');
}

// allOf as pydantic and zod write an extended model: the base's
// properties and the new ones, all required ones required.
TEST(JsonSchema, AllOfMergesObjectSchemas) {
  Follower pet(schemaGrammar(R"({"$defs": {
      "Animal": {"type": "object", "properties": {"name": {"type": "string",
                 "maxLength": 4}}, "required": ["name"]},
      "Color": {"enum": ["red", "black"]}},
    "allOf": [{"$ref": "#/$defs/Animal"},
              {"properties": {"lives": {"type": "integer", "minimum": 1,
                                        "maximum": 9},
                              "color": {"allOf": [{"$ref": "#/$defs/Color"}],
                                        "description": "fur"}},
               "required": ["lives"]}],
    "title": "Cat"})"));
  EXPECT_EQ(pet.follow(R"({"name": "Tom", "lives": 9, "color": "black"})"), 'W');
  EXPECT_EQ(pet.follow(R"({"name": "Tom", "lives": 9})"), 'W');
  EXPECT_EQ(pet.follow(R"({"name": "Tom"})"), 'N');
  EXPECT_EQ(pet.follow(R"({"name": "Tom", "lives": 10})"), 'N');
  EXPECT_EQ(pet.follow(R"({"name": "Tom", "lives": 1, "color": "blue"})"), 'N');
  EXPECT_EQ(schemaGrammar(R"({"allOf": [{"type": "object", "properties":
      {"a": {}}, "additionalProperties": false}, {"properties": {"b": {}}}]})"),
            "ERROR: json schema: at $.allOf: allOf merges object schemas that "
            "name properties; allOf[0] has 'additionalProperties'");
  EXPECT_EQ(schemaGrammar(R"({"allOf": [{"properties": {"a": {}}},
      {"properties": {"a": {"type": "string"}}}]})"),
            "ERROR: json schema: at $.allOf: allOf: the property 'a' is "
            "defined by two of its schemas");
  EXPECT_EQ(schemaGrammar(R"({"allOf": [{"type": "integer"}, {"minimum": 2}]})"),
            "ERROR: json schema: at $.allOf: allOf merges object schemas that "
            "name properties; allOf[0] has 'type'");
}

// A number's whole-number bounds: decimals inside them, their ends as
// the bounds say, nothing outside.
TEST(JsonSchema, NumberRangesAreExact) {
  struct Case {
    const char *schema;
    std::vector<const char *> yes, no;
  } cases[] = {
      {R"({"type": "number", "minimum": 0, "maximum": 1})",
       {"0", "1", "0.5", "1.0", "1.00", "0.999"},
       {"1.5", "2", "-0.1", "1.01", "-1", "-0"}},
      {R"({"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1})",
       {"0.5", "0.001"}, {"0", "1", "0.0", "1.0", "1.5"}},
      {R"({"type": "number", "minimum": -90, "maximum": 90})",
       {"-90", "-89.5", "0", "12.25", "90", "90.0"},
       {"-90.5", "90.1", "91", "-91"}},
      {R"({"type": "number", "minimum": 0})", {"0", "123.45"}, {"-1", "-0.5"}},
      {R"({"type": "number", "maximum": -5})", {"-5", "-5.1", "-1000"},
       {"-4.9", "0", "5"}},
      {R"({"type": "number", "exclusiveMaximum": -5, "minimum": -7})",
       {"-7", "-6.5", "-5.01"}, {"-5", "-5.0", "-7.5", "-4"}},
  };
  for (const Case &c : cases) {
    Follower follower(schemaGrammar(c.schema));
    for (const char *yes : c.yes)
      EXPECT_EQ(follower.follow(yes), 'W') << c.schema << " " << yes;
    for (const char *no : c.no)
      EXPECT_NE(follower.follow(no), 'W') << c.schema << " " << no;
  }
}

// format "date": days that exist (python3-jsonschema's checker reads them
// with datetime.date).
TEST(JsonSchema, DatesAreCalendarDates) {
  Follower date(schemaGrammar(R"({"type": "string", "format": "date"})"));
  for (const char *yes : {"2024-02-29", "2000-02-29", "0004-02-29",
                          "2023-02-28", "2023-04-30", "2023-12-31",
                          "0001-01-01"})
    EXPECT_EQ(date.follow(std::string("\"") + yes + "\""), 'W') << yes;
  for (const char *no : {"2023-02-29", "1900-02-29", "2023-04-31",
                         "2023-11-31", "0000-01-01", "2023-00-10",
                         "2023-01-32"})
    EXPECT_EQ(date.follow(std::string("\"") + no + "\""), 'N') << no;
}

// Patterns: the JSON strings whose text the regex matches.
TEST(JsonSchema, PatternsMatchAsRegexesDo) {
  struct Case {
    const char *pattern;
    std::vector<const char *> yes, no;
  } cases[] = {
      {"^[A-Z]{2}-\\d{3,4}$", {"\"AB-123\"", "\"ZZ-0000\""},
       {"\"AB-12\"", "\"ab-123\"", "\"AB-12345\""}},
      {"^(cat|dog)s?$", {"\"cat\"", "\"dogs\""}, {"\"cow\"", "\"cats!\""}},
      {"b+c", {"\"bc\"", "\"abbbcd\""}, {"\"ac\""}},
      {"^[^@\\s]+@[a-z]+\\.(?:com|org)$", {"\"x.y@mail.org\""},
       {"\"x y@mail.org\"", "\"x@mail.net\""}},
      {"^a.c$", {"\"abc\"", "\"a-c\""}, {"\"ac\"", "\"a\\nc\""}},
      {"^\\w+$", {"\"snake_case1\""}, {"\"kebab-case\""}},
      // Characters JSON escapes are written as JSON escapes them.
      {"^[\"\\\\]x$", {"\"\\\"x\"", "\"\\\\x\""}, {"\"\"x\""}},
      {"^\\$\\d+(\\.\\d{2})?$", {"\"$5\"", "\"$12.50\""}, {"\"$1.5\""}},
      {"^é+$", {"\"ééé\""}, {"\"e\""}},
  };
  for (const Case &c : cases) {
    std::string quoted; // the regex as a JSON string's body
    for (const char *p = c.pattern; *p; ++p)
      quoted += *p == '"' || *p == '\\' ? std::string("\\") + *p
                                          : std::string(1, *p);
    std::string schema =
        std::string(R"({"type": "string", "pattern": ")") + quoted + "\"}";
    std::string grammar = schemaGrammar(schema);
    ASSERT_EQ(grammar.rfind("ERROR", 0), std::string::npos) << grammar;
    Follower follower(grammar);
    for (const char *yes : c.yes)
      EXPECT_EQ(follower.follow(yes), 'W') << c.pattern << " " << yes;
    for (const char *no : c.no)
      EXPECT_EQ(follower.follow(no), 'N') << c.pattern << " " << no;
  }
}

// Several schemas in one grammar (a tool call's functions): each is its
// rule, each schema's "#/$defs/..." and "#" its own.
TEST(JsonSchema, SeveralSchemasKeepTheirOwnDefinitions) {
  const char *schemas[] = {
      R"({"$defs": {"x": {"type": "integer"}}, "type": "array",
          "items": {"$ref": "#/$defs/x"}})",
      R"({"$defs": {"x": {"type": "string"}}, "type": "object",
          "properties": {"x": {"$ref": "#/$defs/x"}, "more": {"$ref": "#"}}})"};
  const char *rules[] = {"first", "second"};
  char *gbnf = nullptr;
  tfm_status status;
  ASSERT_EQ(tfm_json_schemas_to_gbnf(schemas, rules, 2, &gbnf, &status),
            TFM_OK)
      << status.message;
  std::string text = gbnf;
  free(gbnf);
  EXPECT_EQ(text.find("root ::="), std::string::npos) << text;
  Follower first("root ::= first\n" + text);
  EXPECT_EQ(first.follow("[1, 2]"), 'W');
  EXPECT_EQ(first.follow("[\"a\"]"), 'N');
  Follower second("root ::= second\n" + text);
  EXPECT_EQ(second.follow(R"({"x": "a", "more": {"x": "b"}})"), 'W');
  EXPECT_EQ(second.follow(R"({"x": 1})"), 'N');
  // An error names the schema.
  const char *bad[] = {"{}", R"({"type": "number", "multipleOf": 2})"};
  ASSERT_NE(tfm_json_schemas_to_gbnf(bad, rules, 2, &gbnf, &status), TFM_OK);
  EXPECT_STREQ(status.message, "json schema: schema 1: at $.multipleOf: the "
                               "keyword 'multipleOf' is not supported");
  const char *twice[] = {"first", "first"};
  ASSERT_NE(tfm_json_schemas_to_gbnf(schemas, twice, 2, &gbnf, &status),
            TFM_OK);
}

TEST(JsonSchema, RefusesWhatItDoesNotSupportWithItsPath) {
  EXPECT_EQ(schemaGrammar(R"({"type": "integer", "multipleOf": 3})"),
            "ERROR: json schema: at $.multipleOf: the keyword 'multipleOf' is "
            "not supported");
  EXPECT_EQ(schemaGrammar(R"({"properties": {"a": {"pattern": "^a"}}})"),
            "ERROR: json schema: at $.properties.a.pattern: 'pattern' does "
            "not apply to a schema without a type");
  EXPECT_EQ(schemaGrammar(R"({"type": "number", "maximum": 3.5})"),
            "ERROR: json schema: at $.maximum: a number's bounds must be "
            "whole numbers of up to 16 digits (an integer's may be any)");
  EXPECT_EQ(schemaGrammar(R"({"type": "number", "exclusiveMinimum": 2,
                             "maximum": 2})"),
            "ERROR: json schema: at $: no number lies within the bounds");
  EXPECT_EQ(schemaGrammar(R"({"type": "integer", "minimum": 5, "maximum": 4})"),
            "ERROR: json schema: at $: no integer lies within the bounds");
  EXPECT_EQ(schemaGrammar(R"js({"type": "string", "pattern": "a(?!b)"})js"),
            "ERROR: json schema: at $.pattern: at offset 2: lookarounds and "
            "other (?...) groups are not supported");
  EXPECT_EQ(schemaGrammar(R"js({"type": "string", "pattern": "(a)\\1"})js"),
            "ERROR: json schema: at $.pattern: at offset 4: this escape is "
            "not supported (backreferences, \\b, \\p and the like)");
  EXPECT_EQ(schemaGrammar(R"({"type": "string", "pattern": "a^b"})"),
            "ERROR: json schema: at $.pattern: at offset 1: '^' and '$' are "
            "supported only at the pattern's start and end");
  EXPECT_EQ(
      schemaGrammar(R"js({"type": "string", "pattern": "^x(?:a1|)*b$"})js"),
      "ERROR: json schema: at $.pattern: at offset 9: an unbounded "
      "repetition of something that may match nothing (write it "
      "without its empty alternative)");
  EXPECT_NE(schemaGrammar(R"js({"type": "string", "pattern": "(a?)+"})js")
                .find("unbounded repetition"),
            std::string::npos);
  EXPECT_EQ(schemaGrammar(R"({"type": "string", "pattern": "[a-"})"),
            "ERROR: json schema: at $.pattern: at offset 3: '[' is not closed");
  EXPECT_EQ(schemaGrammar(R"({"type": "string", "pattern": "a{3,2}"})"),
            "ERROR: json schema: at $.pattern: at offset 1: a {m,n} quantifier "
            "outside 0 <= m <= n <= 10000");
  EXPECT_EQ(schemaGrammar(R"({"type": "string", "minItems": 2})"),
            "ERROR: json schema: at $.minItems: 'minItems' does not apply to "
            "string");
  EXPECT_EQ(schemaGrammar(R"({"type": "object", "required": ["x"]})"),
            "ERROR: json schema: at $.required[0]: a required property that "
            "'properties' does not define");
  EXPECT_EQ(schemaGrammar(R"({"$ref": "#/$defs/missing"})"),
            "ERROR: json schema: at $: $ref \"#/$defs/missing\" names no "
            "definition");
  // Validating it would come back to itself before reading anything.
  EXPECT_EQ(schemaGrammar(R"({"anyOf": [{"$ref": "#"}, {"type": "null"}]})"),
            "ERROR: json schema: at $.anyOf[0]: $ref \"#\" refers back to a "
            "schema it is part of before any object or array opens "
            "(validating it would never end)");
  EXPECT_EQ(schemaGrammar(R"({"$defs": {"a": {"oneOf": [{"$ref": "#/$defs/b"}]},
                                        "b": {"allOf": [{"$ref": "#/$defs/a"}]}},
                             "$ref": "#/$defs/a"})"),
            "ERROR: json schema: at #/$defs/b.allOf[0]: $ref \"#/$defs/a\" "
            "refers back to a schema it is part of before any object or array "
            "opens (validating it would never end)");
  EXPECT_EQ(schemaGrammar(R"({"$ref": "http://x/y.json"})"),
            "ERROR: json schema: at $: $ref \"http://x/y.json\" is not "
            "supported (only \"#\", \"#/$defs/...\" and "
            "\"#/definitions/...\")");
  EXPECT_EQ(schemaGrammar(R"({"type": "strin"})"),
            "ERROR: json schema: at $.type: unknown type \"strin\"");
  EXPECT_EQ(schemaGrammar(R"({"anyOf": []})"),
            "ERROR: json schema: at $: 'anyOf' must be a non-empty array of "
            "schemas");
  EXPECT_EQ(schemaGrammar(R"({"type": "object",)"),
            "ERROR: json schema: not JSON: offset 18: expected a member's "
            "name in quotes");
  EXPECT_EQ(schemaGrammar("{\"a\": \"\\ud800\"}"),
            "ERROR: json schema: not JSON: offset 13: an unpaired surrogate "
            "in a string");
  // The fuzzer's find: a name that is not UTF-8 made a grammar that did
  // not parse.
  EXPECT_EQ(schemaGrammar("{\"properties\": {\"k\xc1" "ds\": {}}}"),
            "ERROR: json schema: not JSON: offset 18: malformed UTF-8 in a "
            "string");
  EXPECT_EQ(schemaGrammar(R"({"type": "string", "format": "email"})"),
            "ERROR: json schema: at $.format: unsupported format (supported: "
            "date, time, date-time, uuid)");
}

/// A vocabulary for the mask: <unk>, BOS, EOS (specials), bytes C3 and A9
/// (é split in two), then text pieces.
struct MaskFixture : ::testing::Test {
  tfm_tokenizer *tokenizer = nullptr;
  tfm_model_desc desc = fakeDesc();
  tfm_grammar *grammar = nullptr;
  const std::vector<std::string> pieces = {
      "<unk>", "\n<s>\n", "\n</s>\n", "<0xC3>", "<0xA9>", "{", "}", "\"",
      "a", "b", "ab", "{\"", "\": ", "é", "é}", " ", "<0xED>", "<0x9F>"};
  void SetUp() override {
    std::vector<std::pair<std::string, float>> scored;
    for (const std::string &p : pieces)
      scored.push_back({p, 0});
    tokenizer = parse(tokenizerBlob(TFM_TOKENIZER_SCORE_BPE, scored));
    ASSERT_NE(tokenizer, nullptr);
    desc.vocab_size = int64_t(pieces.size());
  }
  void TearDown() override {
    tfm_grammar_free(grammar);
    tfm_tokenizer_free(tokenizer);
  }
  int32_t id(const std::string &piece) const {
    for (size_t i = 0; i < pieces.size(); ++i)
      if (pieces[i] == piece)
        return int32_t(i);
    ADD_FAILURE() << piece;
    return -1;
  }
  /// The pieces `matcher` allows next, joined by '|'.
  std::string allowed(tfm_grammar_matcher *matcher) const {
    std::vector<float> logits(pieces.size(), 0.0f);
    int64_t count = tfm_grammar_matcher_mask(matcher, logits.data());
    std::string out;
    int64_t seen = 0;
    for (size_t i = 0; i < pieces.size(); ++i)
      if (!std::isinf(logits[i])) {
        out += (out.empty() ? "" : "|") + pieces[i];
        ++seen;
      }
    EXPECT_EQ(count, seen);
    return out;
  }
};

TEST_F(MaskFixture, AllowsWhatTheGrammarAdmitsNext) {
  tfm_status status;
  ASSERT_EQ(tfm_grammar_new("root ::= \"{\\\"\" [ab]+ \"\\\": \" \"\\u00e9\"+ \"}\"",
                            tokenizer, &desc, &grammar, &status),
            TFM_OK)
      << status.message;
  tfm_grammar_matcher *m = nullptr;
  ASSERT_EQ(tfm_grammar_matcher_new(grammar, &m, &status), TFM_OK);
  // "{" alone is a prefix of "{\"" (the literal), so both are allowed.
  EXPECT_EQ(allowed(m), "{|{\"");
  EXPECT_EQ(tfm_grammar_matcher_accept(m, id("{\""), &status), TFM_OK);
  EXPECT_EQ(allowed(m), "a|b|ab");
  // A refused token is an error and changes nothing.
  EXPECT_EQ(tfm_grammar_matcher_accept(m, id("}"), &status),
            TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(status.message, "token 6 is not allowed by the grammar here");
  EXPECT_EQ(tfm_grammar_matcher_accept(m, id("ab"), &status), TFM_OK);
  EXPECT_EQ(allowed(m), "\"|a|b|ab|\": ");
  EXPECT_EQ(tfm_grammar_matcher_accept(m, id("\": "), &status), TFM_OK);
  // é whole, or its first byte (the second then finishes it); not its
  // second byte alone, not the end yet.
  EXPECT_EQ(allowed(m), "<0xC3>|é|é}");
  EXPECT_FALSE(tfm_grammar_matcher_may_end(m));
  EXPECT_EQ(tfm_grammar_matcher_accept(m, id("<0xC3>"), &status), TFM_OK);
  EXPECT_EQ(allowed(m), "<0xA9>");
  EXPECT_EQ(tfm_grammar_matcher_accept(m, id("<0xA9>"), &status), TFM_OK);
  EXPECT_EQ(allowed(m), "<0xC3>|}|é|é}");
  EXPECT_EQ(tfm_grammar_matcher_accept(m, id("é}"), &status), TFM_OK);
  // A whole match: only the end-of-generation token is left.
  EXPECT_TRUE(tfm_grammar_matcher_may_end(m));
  EXPECT_EQ(allowed(m), "\n</s>\n");
  EXPECT_EQ(tfm_grammar_matcher_accept(m, 2, &status), TFM_OK);
  EXPECT_EQ(allowed(m), "");
  EXPECT_EQ(tfm_grammar_matcher_accept(m, id("a"), &status),
            TFM_ERROR_INVALID_ARGUMENT);
  tfm_grammar_matcher_free(m);
}

// After ED, only 80 to 9F: A0 to BF begin surrogates, which no text has,
// and which left a sampled JSON string with no byte to go on with.
TEST_F(MaskFixture, NoByteLeadsToASurrogate) {
  tfm_status status;
  ASSERT_EQ(tfm_grammar_new("root ::= [^\"]+", tokenizer, &desc, &grammar,
                            &status),
            TFM_OK)
      << status.message;
  tfm_grammar_matcher *m = nullptr;
  ASSERT_EQ(tfm_grammar_matcher_new(grammar, &m, &status), TFM_OK);
  EXPECT_EQ(tfm_grammar_matcher_accept(m, id("<0xED>"), &status), TFM_OK);
  EXPECT_EQ(allowed(m), "<0x9F>");
  tfm_grammar_matcher_free(m);
}

// One vocabulary trie a model: the tokenizer keeps the first grammar's,
// later grammars (on any thread) share it; a grammar may outlive others.
TEST_F(MaskFixture, GrammarsShareTheTokenizersVocabulary) {
  tfm_status status;
  EXPECT_EQ(tfm_tokenizer_derived_get(tokenizer), nullptr);
  std::vector<tfm_grammar *> grammars(8, nullptr);
  std::vector<std::thread> threads;
  for (size_t i = 0; i < grammars.size(); ++i)
    threads.emplace_back([&, i] {
      tfm_status own;
      EXPECT_EQ(tfm_grammar_new(i % 2 ? "root ::= \"ab\"" : "root ::= [ab]+",
                                tokenizer, &desc, &grammars[i], &own),
                TFM_OK);
    });
  for (std::thread &t : threads)
    t.join();
  tfm_tokenizer_derived *kept = tfm_tokenizer_derived_get(tokenizer);
  ASSERT_NE(kept, nullptr);
  for (tfm_grammar *g : grammars)
    tfm_grammar_free(g);
  // Still the tokenizer's, and what a new grammar reads.
  ASSERT_EQ(tfm_grammar_new("root ::= \"a\"", tokenizer, &desc, &grammar,
                            &status),
            TFM_OK);
  EXPECT_EQ(tfm_tokenizer_derived_get(tokenizer), kept);
  tfm_grammar_matcher *m = nullptr;
  ASSERT_EQ(tfm_grammar_matcher_new(grammar, &m, &status), TFM_OK);
  EXPECT_EQ(allowed(m), "a");
  tfm_grammar_matcher_free(m);
  // Another description (other stop tokens) reads its own.
  tfm_model_desc other = desc;
  tfm_grammar *own = nullptr;
  ASSERT_EQ(tfm_grammar_new("root ::= \"a\"", tokenizer, &other, &own,
                            &status),
            TFM_OK);
  EXPECT_EQ(tfm_tokenizer_derived_get(tokenizer), kept);
  tfm_grammar_free(own);
}

// Greedy under a grammar: the highest logit the grammar allows, the same
// token the mask and tfm_argmax give, accepted; -1 once nothing may follow.
TEST_F(MaskFixture, GreedyTakesTheBestAllowedToken) {
  tfm_status status;
  ASSERT_EQ(tfm_grammar_new("root ::= \"b\" [ab]", tokenizer, &desc,
                            &grammar, &status),
            TFM_OK);
  tfm_grammar_matcher *m = nullptr, *masked = nullptr;
  ASSERT_EQ(tfm_grammar_matcher_new(grammar, &m, &status), TFM_OK);
  ASSERT_EQ(tfm_grammar_matcher_new(grammar, &masked, &status), TFM_OK);
  std::vector<float> logits(pieces.size(), 0.0f);
  logits[size_t(id("a"))] = 5;  // refused first
  logits[size_t(id("ab"))] = 4; // refused too
  logits[size_t(id("b"))] = 3;
  std::vector<float> copy = logits;
  int64_t allowed = -7;
  EXPECT_EQ(tfm_grammar_matcher_accept_greedy(m, logits.data(), &allowed),
            id("b"));
  EXPECT_EQ(allowed, 1);
  ASSERT_GT(tfm_grammar_matcher_mask(masked, copy.data()), 0);
  EXPECT_EQ(tfm_argmax(copy.data(), int64_t(copy.size())), id("b"));
  // Ties go to the lower id, as tfm_argmax's.
  std::fill(logits.begin(), logits.end(), 1.0f);
  EXPECT_EQ(tfm_grammar_matcher_accept_greedy(m, logits.data(), &allowed),
            id("a"));
  // A whole match: only the end token, then nothing.
  std::fill(logits.begin(), logits.end(), 0.0f);
  EXPECT_EQ(tfm_grammar_matcher_accept_greedy(m, logits.data(), &allowed), 2);
  EXPECT_EQ(tfm_grammar_matcher_accept_greedy(m, logits.data(), &allowed), -1);
  EXPECT_EQ(allowed, 0);
  tfm_grammar_matcher_free(m);
  tfm_grammar_matcher_free(masked);
}

TEST_F(MaskFixture, EndOnlyWhereTheGrammarMayEndAndErrorsNamed) {
  tfm_status status;
  ASSERT_EQ(tfm_grammar_new("root ::= \"a\"*", tokenizer, &desc, &grammar,
                            &status),
            TFM_OK);
  tfm_grammar_matcher *m = nullptr;
  ASSERT_EQ(tfm_grammar_matcher_new(grammar, &m, &status), TFM_OK);
  // The empty text is whole: the end token is allowed from the start;
  // BOS and <unk> never are.
  EXPECT_EQ(allowed(m), "\n</s>\n|a");
  EXPECT_EQ(tfm_grammar_matcher_accept(m, 1, &status),
            TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(status.message,
               "token 1 is not text (a special or empty token): no grammar "
               "allows it");
  EXPECT_EQ(tfm_grammar_matcher_accept(m, 99, &status),
            TFM_ERROR_OUT_OF_RANGE);
  tfm_grammar_matcher_free(m);
  tfm_grammar_free(grammar);
  grammar = nullptr;
  EXPECT_EQ(tfm_grammar_new("root ::= \"a\" b", tokenizer, &desc, &grammar,
                            &status),
            TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(status.message,
               "grammar: line 1, column 1: rule 'b' is used but not defined");
  EXPECT_EQ(grammar, nullptr);
  // A mask that would step more stacks than its bound (the real one is
  // 2^26; this vocabulary is small) fails, and says why.
  ASSERT_EQ(tfm_grammar_new("root ::= (\"a\" | \"a\" \"a\"? | [a|])*",
                            tokenizer, &desc, &grammar, &status),
            TFM_OK);
  ASSERT_EQ(tfm_grammar_matcher_new(grammar, &m, &status), TFM_OK);
  std::vector<float> logits(desc.vocab_size, 0.0f);
  EXPECT_GT(tfm_grammar_matcher_mask(m, logits.data()), 0);
  EXPECT_EQ(tfm_grammar_matcher_failure(m, &status), TFM_OK);
  tfm_grammar_set_mask_steps(grammar, 4);
  ASSERT_EQ(tfm_grammar_matcher_accept(m, id("a"), &status), TFM_OK);
  EXPECT_EQ(tfm_grammar_matcher_mask(m, logits.data()), -1);
  EXPECT_EQ(tfm_grammar_matcher_failure(m, &status),
            TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_NE(std::string(status.message).find("2^26"), std::string::npos);
  tfm_grammar_matcher_free(m);
  tfm_grammar_free(grammar);
  grammar = nullptr;
  // An alternation of more strings than TFM_GRAMMAR_MAX_STACKS starts
  // with a stack each: refused by name. One fewer is followed.
  for (int strings :
       {int(TFM_GRAMMAR_MAX_STACKS), TFM_GRAMMAR_MAX_STACKS + 1}) {
    std::string gbnf = "root ::= ( \"a0\"";
    for (int i = 1; i < strings; ++i)
      gbnf += " | \"a" + std::to_string(i) + "\"";
    gbnf += " )";
    tfm_status_code code =
        tfm_grammar_new(gbnf.c_str(), tokenizer, &desc, &grammar, &status);
    if (strings == TFM_GRAMMAR_MAX_STACKS) {
      EXPECT_EQ(code, TFM_OK) << status.message;
      tfm_grammar_free(grammar);
      grammar = nullptr;
      continue;
    }
    EXPECT_EQ(code, TFM_ERROR_INVALID_ARGUMENT);
    EXPECT_STREQ(status.message,
                 "grammar: at the start of the text: the grammar reads the "
                 "text in more than 8192 ways at once, or in ways holding "
                 "more than 131072 positions together (alternatives that "
                 "match the same text, repeated or nested): too ambiguous "
                 "to follow");
  }
}

} // namespace
