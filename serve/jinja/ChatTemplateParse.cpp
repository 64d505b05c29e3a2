//===- ChatTemplateParse.cpp - chat template source to syntax -------------===//
//
// Three steps: the source is cut into text and tags, with Jinja's
// whitespace rules applied as transformers sets them (trim_blocks,
// lstrip_blocks, and the tags' own `-`); each tag's inside is cut into
// tokens; a recursive descent parser builds statements and expressions with
// Jinja's precedence. Errors are thrown as ParseError and become
// ChatTemplate::parse's message.
//
//===----------------------------------------------------------------------===//

#include "serve/jinja/ChatTemplate.h"
#include "serve/jinja/ChatTemplateSyntax.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <set>

using namespace tfm::serve;
using namespace tfm::serve::chat_template;
using json = nlohmann::ordered_json;

std::string chat_template::describePosition(const std::string &source,
                                            size_t offset) {
  size_t line = 1, column = 1;
  for (size_t i = 0; i < offset && i < source.size(); ++i) {
    if (source[i] == '\n') {
      ++line;
      column = 1;
    } else {
      ++column;
    }
  }
  return "line " + std::to_string(line) + ", column " + std::to_string(column);
}

bool chat_template::isKnownFilter(const std::string &name) {
  static const std::set<std::string> known = {
      "trim",  "length", "count",   "upper", "lower", "capitalize",
      "title", "string", "int",     "float", "tojson", "join",
      "first", "last",   "default", "d",     "replace", "list",
      "reverse", "abs",  "select",  "reject", "selectattr", "rejectattr",
      "map",   "items",  "unique"};
  return known.count(name);
}

/// The subset's tests and how many arguments each takes. Jinja names the
/// comparisons three ways ("==", "eq", "equalto"); the symbols are usable
/// only as select()'s and selectattr()'s argument.
static const std::map<std::string, size_t> &testArities() {
  static const std::map<std::string, size_t> arities = {
      {"defined", 0},  {"undefined", 0}, {"none", 0},     {"string", 0},
      {"number", 0},   {"integer", 0},   {"float", 0},    {"boolean", 0},
      {"true", 0},     {"false", 0},     {"mapping", 0},  {"iterable", 0},
      {"sequence", 0}, {"odd", 0},       {"even", 0},     {"equalto", 1},
      {"eq", 1},       {"==", 1},        {"ne", 1},       {"!=", 1},
      {"lt", 1},       {"lessthan", 1},  {"<", 1},        {"le", 1},
      {"<=", 1},       {"gt", 1},        {"greaterthan", 1}, {">", 1},
      {"ge", 1},       {">=", 1},        {"in", 1},       {"sameas", 1}};
  return arities;
}

bool chat_template::isKnownTest(const std::string &name) {
  return testArities().count(name);
}

size_t chat_template::testArity(const std::string &name) {
  auto found = testArities().find(name);
  return found == testArities().end() ? 0 : found->second;
}

bool chat_template::isKnownFunction(const std::string &name) {
  return name == "raise_exception" || name == "namespace" || name == "range" ||
         name == "strftime_now";
}

namespace {

struct ParseError {
  size_t offset;
  std::string message;
};

/// How deep expressions and statements may nest: parsing, rendering and
/// freeing them recurse that deep (a template of 10 000 '[' overflowed the
/// stack: fuzz-chat-template). Real templates nest a few levels.
constexpr unsigned kMaxNesting = 100;

//===----------------------------------------------------------------------===//
// Text and tags
//===----------------------------------------------------------------------===//

struct Chunk {
  enum class Kind { Text, Output, Statement } kind;
  std::string content;
  size_t offset; // of content in the source

  /// Where a tag's first word starts: what errors about it point at.
  size_t start() const {
    size_t first = content.find_first_not_of(" \t\r\n");
    return offset + (first == std::string::npos ? 0 : first);
  }
};

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

/// The end of a tag's inside that starts at `from`: the closer's offset.
/// Strings are skipped, so that '}}' inside quotes does not end it, and
/// brackets are balanced as Jinja's lexer balances them, so that
/// `{{ {'a': {'b': 1}} }}` ends at its last '}}'. Where they never balance,
/// the first closer outside strings (the parser then says what is wrong).
size_t findCloser(const std::string &s, size_t from, const char *closer) {
  size_t first = std::string::npos;
  char quote = 0;
  unsigned depth = 0;
  for (size_t i = from; i + 1 < s.size(); ++i) {
    if (quote) {
      if (s[i] == '\\')
        ++i;
      else if (s[i] == quote)
        quote = 0;
      continue;
    }
    if (s[i] == '\'' || s[i] == '"') {
      quote = s[i];
      continue;
    }
    if (s.compare(i, 2, closer) == 0) {
      if (depth == 0)
        return i;
      if (first == std::string::npos)
        first = i;
    }
    if (s[i] && std::strchr("([{", s[i]))
      ++depth;
    else if (s[i] && std::strchr(")]}", s[i]) && depth > 0)
      --depth;
  }
  return first;
}

std::vector<Chunk> splitChunks(const std::string &s) {
  std::vector<Chunk> chunks;
  bool stripNextText = false, trimNextNewline = false;
  size_t at = 0;
  while (at <= s.size()) {
    size_t open = s.find('{', at);
    while (open != std::string::npos && open + 1 < s.size() &&
           !std::strchr("{%#", s[open + 1]))
      open = s.find('{', open + 1);
    if (open + 1 >= s.size())
      open = std::string::npos;
    std::string text =
        s.substr(at, open == std::string::npos ? std::string::npos : open - at);
    size_t textOffset = at;
    if (stripNextText) {
      size_t keep = 0;
      while (keep < text.size() && isSpace(text[keep]))
        ++keep;
      text.erase(0, keep);
      textOffset += keep;
    } else if (trimNextNewline) {
      if (text.rfind("\r\n", 0) == 0)
        text.erase(0, 2), textOffset += 2;
      else if (text.rfind('\n', 0) == 0)
        text.erase(0, 1), textOffset += 1;
    }
    stripNextText = trimNextNewline = false;
    if (open == std::string::npos) {
      if (!text.empty())
        chunks.push_back({Chunk::Kind::Text, text, textOffset});
      break;
    }
    char type = s[open + 1];
    size_t inside = open + 2;
    bool stripBefore = inside < s.size() && s[inside] == '-';
    bool keepBefore = inside < s.size() && s[inside] == '+';
    if (stripBefore || keepBefore)
      ++inside;
    if (stripBefore) {
      while (!text.empty() && isSpace(text.back()))
        text.pop_back();
    } else if (type != '{' && !keepBefore) {
      // lstrip_blocks: a block tag after nothing but a line's indentation.
      size_t newline = text.find_last_of('\n');
      size_t lineStart = newline == std::string::npos ? 0 : newline + 1;
      bool atLineStart = newline != std::string::npos || textOffset == 0 ||
                         s[textOffset - 1] == '\n';
      if (atLineStart &&
          text.find_first_not_of(" \t", lineStart) == std::string::npos)
        text.erase(lineStart);
    }
    if (!text.empty())
      chunks.push_back({Chunk::Kind::Text, text, textOffset});
    const char *closer = type == '{' ? "}}" : type == '%' ? "%}" : "#}";
    size_t close = type == '#' ? s.find(closer, inside)
                               : findCloser(s, inside, closer);
    if (close == std::string::npos)
      throw ParseError{open, std::string("'{") + type +
                                 "' is not closed by '" + closer + "'"};
    size_t insideEnd = close;
    bool stripAfter = close > inside && s[close - 1] == '-';
    if (stripAfter)
      --insideEnd;
    if (type != '#')
      chunks.push_back({type == '{' ? Chunk::Kind::Output
                                    : Chunk::Kind::Statement,
                        s.substr(inside, insideEnd - inside), inside});
    stripNextText = stripAfter;
    trimNextNewline = type != '{'; // trim_blocks
    at = close + 2;
  }
  return chunks;
}

//===----------------------------------------------------------------------===//
// Tokens of a tag
//===----------------------------------------------------------------------===//

struct Token {
  enum class Kind { Name, Number, String, Operator, End } kind;
  std::string text; // Name, Operator
  json value;       // Number, String
  size_t offset;
};

void appendUtf8(std::string &out, uint32_t code) {
  if (code < 0x80) {
    out += char(code);
  } else if (code < 0x800) {
    out += char(0xC0 | code >> 6);
    out += char(0x80 | (code & 0x3F));
  } else if (code < 0x10000) {
    out += char(0xE0 | code >> 12);
    out += char(0x80 | (code >> 6 & 0x3F));
    out += char(0x80 | (code & 0x3F));
  } else {
    out += char(0xF0 | code >> 18);
    out += char(0x80 | (code >> 12 & 0x3F));
    out += char(0x80 | (code >> 6 & 0x3F));
    out += char(0x80 | (code & 0x3F));
  }
}

/// A Python string literal's escapes (Jinja's string literals are
/// Python's).
std::string unescape(const std::string &s, size_t offset) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    char c = s[++i];
    switch (c) {
    case 'n': out += '\n'; break;
    case 't': out += '\t'; break;
    case 'r': out += '\r'; break;
    case '0': out += '\0'; break;
    case '\\': case '\'': case '"': out += c; break;
    case '\n': break; // a continued line
    case 'x': case 'u': case 'U': {
      size_t digits = c == 'x' ? 2 : c == 'u' ? 4 : 8;
      std::string hex = s.substr(i + 1, digits);
      if (hex.size() != digits ||
          hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos)
        throw ParseError{offset + i, "a malformed \\" + std::string(1, c) +
                                         " escape"};
      uint32_t code = uint32_t(std::stoul(hex, nullptr, 16));
      if (code > 0x10FFFF)
        throw ParseError{offset + i, "an escape past Unicode's last code"};
      appendUtf8(out, code);
      i += digits;
      break;
    }
    default: out += '\\'; out += c; // Python keeps unknown escapes
    }
  }
  return out;
}

std::vector<Token> tokenize(const std::string &s, size_t base) {
  static const char *const operators[] = {
      "==", "!=", "<=", ">=", "//", "**", "+", "-", "*", "/", "%", "~", "<",
      ">", "(", ")", "[", "]", "{", "}", ".", ",", ":", "|", "="};
  std::vector<Token> tokens;
  size_t i = 0;
  while (true) {
    while (i < s.size() && isSpace(s[i]))
      ++i;
    if (i == s.size())
      break;
    size_t start = i;
    char c = s[i];
    if (std::isalpha((unsigned char)c) || c == '_') {
      while (i < s.size() && (std::isalnum((unsigned char)s[i]) || s[i] == '_'))
        ++i;
      tokens.push_back({Token::Kind::Name, s.substr(start, i - start), {},
                        base + start});
    } else if (std::isdigit((unsigned char)c)) {
      while (i < s.size() && (std::isdigit((unsigned char)s[i]) || s[i] == '_'))
        ++i;
      bool isFloat = i + 1 < s.size() && s[i] == '.' &&
                     std::isdigit((unsigned char)s[i + 1]);
      if (isFloat)
        for (++i; i < s.size() && std::isdigit((unsigned char)s[i]);)
          ++i;
      std::string digits;
      for (char d : s.substr(start, i - start))
        if (d != '_')
          digits += d;
      json value;
      try {
        value = isFloat ? json(std::stod(digits)) : json(std::stoll(digits));
      } catch (const std::exception &) {
        throw ParseError{base + start, "the number '" + digits +
                                           "' is out of range"};
      }
      tokens.push_back({Token::Kind::Number, "", value, base + start});
    } else if (c == '\'' || c == '"') {
      for (++i; i < s.size() && s[i] != c; ++i)
        if (s[i] == '\\')
          ++i;
      if (i >= s.size())
        throw ParseError{base + start, "a string is not closed"};
      ++i;
      tokens.push_back({Token::Kind::String, "",
                        unescape(s.substr(start + 1, i - start - 2),
                                 base + start + 1),
                        base + start});
    } else {
      const char *found = nullptr;
      for (const char *op : operators)
        if (s.compare(i, std::strlen(op), op) == 0) {
          found = op;
          break;
        }
      if (!found)
        throw ParseError{base + start,
                         "unexpected character '" + std::string(1, c) + "'"};
      i += std::strlen(found);
      tokens.push_back({Token::Kind::Operator, found, {}, base + start});
    }
  }
  tokens.push_back({Token::Kind::End, "", {}, base + s.size()});
  return tokens;
}

//===----------------------------------------------------------------------===//
// Expressions
//===----------------------------------------------------------------------===//

class ExprParser {
public:
  /// `macros`: the names the template defines macros by, callable as
  /// functions are.
  ExprParser(std::vector<Token> tokens, const std::set<std::string> &macros)
      : tokens(std::move(tokens)), macros(macros) {}

  /// Counts a level of the parser's recursion for as long as it lives.
  class Nested {
  public:
    explicit Nested(ExprParser &parser) : parser(parser) {
      if (++parser.nesting > kMaxNesting)
        parser.fail(tooDeep());
    }
    ~Nested() { --parser.nesting; }

  private:
    ExprParser &parser;
  };
  static std::string tooDeep() {
    return "expressions nest deeper than " + std::to_string(kMaxNesting) +
           " levels";
  }

  const Token &peek(size_t ahead = 0) const {
    return tokens[std::min(at + ahead, tokens.size() - 1)];
  }
  bool atEnd() const { return peek().kind == Token::Kind::End; }
  bool isOperator(const char *op, size_t ahead = 0) const {
    return peek(ahead).kind == Token::Kind::Operator && peek(ahead).text == op;
  }
  bool isName(const char *name, size_t ahead = 0) const {
    return peek(ahead).kind == Token::Kind::Name && peek(ahead).text == name;
  }
  bool acceptOperator(const char *op) {
    return isOperator(op) ? (++at, true) : false;
  }
  bool acceptName(const char *name) { return isName(name) ? (++at, true) : false; }
  [[noreturn]] void fail(const std::string &message) const {
    throw ParseError{peek().offset, message};
  }
  void expectOperator(const char *op) {
    if (!acceptOperator(op))
      fail(std::string("expected '") + op + "'" + found());
  }
  std::string expectName() {
    if (peek().kind != Token::Kind::Name)
      fail("expected a name" + found());
    return tokens[at++].text;
  }
  std::string found() const {
    const Token &t = peek();
    switch (t.kind) {
    case Token::Kind::End: return ", found the tag's end";
    case Token::Kind::String: return ", found a string";
    case Token::Kind::Number: return ", found a number";
    default: return ", found '" + t.text + "'";
    }
  }
  void expectEnd() {
    if (!atEnd())
      fail("unexpected" + found().substr(7));
  }

  ExprPtr expression(bool withConditional = true) {
    Nested level(*this);
    ExprPtr value = orExpr();
    if (withConditional && isName("if")) {
      size_t offset = peek().offset;
      ++at;
      auto e = std::make_unique<Expr>(Expr::Kind::Conditional, offset);
      e->operands.push_back(orExpr());
      e->operands.push_back(std::move(value));
      e->operands.push_back(acceptName("else") ? expression() : nullptr);
      return bounded(std::move(e));
    }
    return value;
  }

private:
  std::vector<Token> tokens;
  const std::set<std::string> &macros;
  size_t at = 0;
  unsigned nesting = 0;

  /// `e`, its operands in, with its depth; refused past kMaxNesting (the
  /// loops below build left-deep chains without recursing: a + a + ...).
  ExprPtr bounded(ExprPtr e) {
    for (const ExprPtr &operand : e->operands)
      if (operand) {
        e->depth = std::max(e->depth, operand->depth + 1);
        e->callsMacro |= operand->callsMacro;
      }
    for (const auto &keyword : e->keywords) {
      e->depth = std::max(e->depth, keyword.second->depth + 1);
      e->callsMacro |= keyword.second->callsMacro;
    }
    if (e->depth > kMaxNesting)
      throw ParseError{e->offset, tooDeep()};
    return e;
  }

  ExprPtr binary(std::string op, ExprPtr left, ExprPtr right, size_t offset) {
    auto e = std::make_unique<Expr>(Expr::Kind::Binary, offset);
    e->name = std::move(op);
    e->operands.push_back(std::move(left));
    e->operands.push_back(std::move(right));
    return bounded(std::move(e));
  }

  ExprPtr orExpr() {
    ExprPtr left = andExpr();
    while (isName("or")) {
      size_t offset = tokens[at++].offset;
      left = binary("or", std::move(left), andExpr(), offset);
    }
    return left;
  }
  ExprPtr andExpr() {
    ExprPtr left = notExpr();
    while (isName("and")) {
      size_t offset = tokens[at++].offset;
      left = binary("and", std::move(left), notExpr(), offset);
    }
    return left;
  }
  ExprPtr notExpr() {
    if (isName("not")) {
      Nested level(*this);
      size_t offset = tokens[at++].offset;
      auto e = std::make_unique<Expr>(Expr::Kind::Unary, offset);
      e->name = "not";
      e->operands.push_back(notExpr());
      return bounded(std::move(e));
    }
    return compare();
  }
  ExprPtr compare() {
    ExprPtr left = additive();
    while (true) {
      size_t offset = peek().offset;
      std::string op;
      for (const char *c : {"==", "!=", "<=", ">=", "<", ">"})
        if (isOperator(c))
          op = c;
      if (!op.empty())
        ++at;
      else if (acceptName("in"))
        op = "in";
      else if (isName("not") && isName("in", 1))
        at += 2, op = "not in";
      else
        return left;
      left = binary(op, std::move(left), additive(), offset);
    }
  }
  ExprPtr additive() {
    ExprPtr left = concat();
    while (isOperator("+") || isOperator("-")) {
      const Token &t = tokens[at++];
      left = binary(t.text, std::move(left), concat(), t.offset);
    }
    return left;
  }
  ExprPtr concat() {
    ExprPtr left = multiplicative();
    while (isOperator("~")) {
      size_t offset = tokens[at++].offset;
      left = binary("~", std::move(left), multiplicative(), offset);
    }
    return left;
  }
  ExprPtr multiplicative() {
    ExprPtr left = unary();
    while (isOperator("*") || isOperator("/") || isOperator("//") ||
           isOperator("%")) {
      const Token &t = tokens[at++];
      left = binary(t.text, std::move(left), unary(), t.offset);
    }
    return left;
  }
  ExprPtr unary() {
    if (isOperator("-") || isOperator("+")) {
      Nested level(*this);
      const Token &t = tokens[at++];
      auto e = std::make_unique<Expr>(Expr::Kind::Unary, t.offset);
      e->name = t.text;
      e->operands.push_back(unary());
      return filtersAndTests(bounded(std::move(e)));
    }
    return filtersAndTests(postfix(primary()));
  }

  /// `(args, key=value)` after a callee or a filter's name.
  void arguments(Expr &call) {
    expectOperator("(");
    while (!acceptOperator(")")) {
      if (peek().kind == Token::Kind::Name && isOperator("=", 1)) {
        std::string key = tokens[at].text;
        at += 2;
        call.keywords.emplace_back(key, expression());
      } else {
        if (!call.keywords.empty())
          fail("a positional argument after a keyword argument");
        call.operands.push_back(expression());
      }
      if (!isOperator(")"))
        expectOperator(",");
    }
  }

  ExprPtr filtersAndTests(ExprPtr value) {
    while (true) {
      if (isOperator("|")) {
        ++at;
        size_t offset = peek().offset;
        auto e = std::make_unique<Expr>(Expr::Kind::Filter, offset);
        e->name = expectName();
        if (!isKnownFilter(e->name))
          throw ParseError{offset, "the filter '" + e->name +
                                       "' is not in tfm-serve's Jinja subset"};
        e->operands.push_back(std::move(value));
        if (isOperator("("))
          arguments(*e);
        checkNamedArgument(*e);
        value = bounded(std::move(e));
      } else if (isName("is")) {
        ++at;
        auto e = std::make_unique<Expr>(Expr::Kind::Test, peek().offset);
        e->negated = acceptName("not");
        size_t offset = peek().offset;
        // `is none`, `is true`: keywords as tests' names.
        e->name = expectName();
        if (!isKnownTest(e->name))
          throw ParseError{offset, "the test '" + e->name +
                                       "' is not in tfm-serve's Jinja subset"};
        e->operands.push_back(std::move(value));
        testArguments(*e, offset);
        value = bounded(std::move(e));
      } else {
        return value;
      }
    }
  }

  /// A test's argument: `is equalto(3)`, or as Jinja also takes it,
  /// `is equalto 3` (a value without operators; not `and`, `or`, `else`,
  /// which go on the expression around). Tests without arguments take
  /// none that way, so that `x is none` never swallows what follows.
  void testArguments(Expr &test, size_t offset) {
    size_t arity = testArity(test.name);
    if (isOperator("(")) {
      arguments(test);
    } else if (arity > 0) {
      const Token &t = peek();
      bool value = t.kind == Token::Kind::String ||
                   t.kind == Token::Kind::Number ||
                   (t.kind == Token::Kind::Name && !isName("and") &&
                    !isName("or") && !isName("else")) ||
                   isOperator("[") || isOperator("{");
      if (value)
        test.operands.push_back(postfix(primary()));
    }
    if (!test.keywords.empty())
      throw ParseError{offset, "the test '" + test.name +
                                   "' takes no keyword arguments"};
    if (test.operands.size() - 1 != arity)
      throw ParseError{offset, "the test '" + test.name + "' takes " +
                                   (arity ? "one argument" : "no arguments")};
  }

  /// select('equalto', x), selectattr('role', 'equalto', x) and map('upper')
  /// name a test or filter in a string: one written there must be in the
  /// subset too (one computed is checked when rendered).
  void checkNamedArgument(const Expr &filter) {
    size_t at = filter.name == "select" || filter.name == "reject" ? 1
                : filter.name == "selectattr" || filter.name == "rejectattr"
                    ? 2
                : filter.name == "map" ? 1
                                       : 0;
    if (!at || at >= filter.operands.size())
      return;
    const Expr &named = *filter.operands[at];
    if (named.kind != Expr::Kind::Literal || !named.value.is_string())
      return;
    std::string name = named.value.get<std::string>();
    bool isFilter = filter.name == "map";
    if (isFilter ? !isKnownFilter(name) : !isKnownTest(name))
      throw ParseError{named.offset, std::string(isFilter ? "the filter '"
                                                          : "the test '") +
                                         name +
                                         "' is not in tfm-serve's Jinja subset"};
  }

  ExprPtr postfix(ExprPtr value) {
    while (true) {
      size_t offset = peek().offset;
      if (acceptOperator(".")) {
        auto e = std::make_unique<Expr>(Expr::Kind::Attribute, offset);
        e->name = expectName();
        e->operands.push_back(std::move(value));
        value = bounded(std::move(e));
      } else if (acceptOperator("[")) {
        value = subscript(std::move(value), offset);
      } else if (isOperator("(")) {
        if (value->kind == Expr::Kind::Name &&
            !isKnownFunction(value->name) && !macros.count(value->name))
          throw ParseError{value->offset,
                           "the function '" + value->name +
                               "' is not in tfm-serve's Jinja subset"};
        auto e = std::make_unique<Expr>(Expr::Kind::Call, offset);
        // Methods and the subset's functions change no variables; a name
        // of the template's macros (or a value that may hold one) may.
        e->callsMacro = value->kind != Expr::Kind::Attribute &&
                        (value->kind != Expr::Kind::Name ||
                         macros.count(value->name));
        e->operands.push_back(std::move(value));
        arguments(*e);
        value = bounded(std::move(e));
      } else {
        return value;
      }
    }
  }

  ExprPtr subscript(ExprPtr value, size_t offset) {
    ExprPtr parts[3];
    int colons = 0;
    while (!acceptOperator("]")) {
      if (acceptOperator(":")) {
        if (++colons > 2)
          fail("a slice has at most two ':'");
        continue;
      }
      if (parts[colons])
        fail("expected ']' or ':'" + found());
      parts[colons] = expression();
    }
    if (colons == 0) {
      if (!parts[0])
        throw ParseError{offset, "an empty subscript"};
      auto e = std::make_unique<Expr>(Expr::Kind::Subscript, offset);
      e->operands.push_back(std::move(value));
      e->operands.push_back(std::move(parts[0]));
      return bounded(std::move(e));
    }
    auto e = std::make_unique<Expr>(Expr::Kind::Slice, offset);
    e->operands.push_back(std::move(value));
    for (ExprPtr &part : parts)
      e->operands.push_back(std::move(part));
    return bounded(std::move(e));
  }

  ExprPtr primary() {
    const Token &t = peek();
    size_t offset = t.offset;
    auto literal = [&](json value) {
      auto e = std::make_unique<Expr>(Expr::Kind::Literal, offset);
      e->value = std::move(value);
      return e;
    };
    switch (t.kind) {
    case Token::Kind::Number:
    case Token::Kind::String: {
      json value = t.value;
      ++at;
      // Adjacent strings concatenate, as in Python.
      while (value.is_string() && peek().kind == Token::Kind::String)
        value = value.get<std::string>() + tokens[at++].value.get<std::string>();
      return literal(std::move(value));
    }
    case Token::Kind::Name: {
      std::string name = t.text;
      ++at;
      if (name == "true" || name == "True")
        return literal(true);
      if (name == "false" || name == "False")
        return literal(false);
      if (name == "none" || name == "None")
        return literal(nullptr);
      auto e = std::make_unique<Expr>(Expr::Kind::Name, offset);
      e->name = name;
      return e;
    }
    case Token::Kind::Operator:
      if (acceptOperator("(")) {
        ExprPtr inner = expression();
        if (isOperator(","))
          fail("tuples are not in tfm-serve's Jinja subset; use a list");
        expectOperator(")");
        return inner;
      }
      if (acceptOperator("[")) {
        auto e = std::make_unique<Expr>(Expr::Kind::List, offset);
        while (!acceptOperator("]")) {
          e->operands.push_back(expression());
          if (!isOperator("]"))
            expectOperator(",");
        }
        return bounded(std::move(e));
      }
      if (acceptOperator("{")) {
        auto e = std::make_unique<Expr>(Expr::Kind::Dict, offset);
        while (!acceptOperator("}")) {
          e->operands.push_back(expression());
          expectOperator(":");
          e->operands.push_back(expression());
          if (!isOperator("}"))
            expectOperator(",");
        }
        return bounded(std::move(e));
      }
      break;
    case Token::Kind::End:
      break;
    }
    fail("expected a value" + found());
  }
};

//===----------------------------------------------------------------------===//
// Statements
//===----------------------------------------------------------------------===//

class TemplateParser {
public:
  TemplateParser(std::vector<Chunk> chunks) : chunks(std::move(chunks)) {
    findMacros();
  }

  std::vector<Node> parseAll() {
    std::vector<Node> body;
    std::string ended = parseBody(body, {});
    (void)ended;
    return body;
  }

private:
  std::vector<Chunk> chunks;
  size_t at = 0;
  unsigned nesting = 0; // open {% if %}, {% for %} and {% macro %} blocks
  std::set<std::string> macros; // the names of the template's macros

  /// Collects the names macros are defined by before the template is
  /// parsed, so that a call is known for a function wherever it stands (a
  /// recursive macro calls itself before its {% endmacro %}). A malformed
  /// definition is left for the parser to report where it comes.
  void findMacros() {
    for (const Chunk &chunk : chunks) {
      if (chunk.kind != Chunk::Kind::Statement || keywordOf(chunk) != "macro")
        continue;
      try {
        std::vector<Token> tokens = tokenize(chunk.content, chunk.offset);
        if (tokens.size() > 1 && tokens[1].kind == Token::Kind::Name)
          macros.insert(tokens[1].text);
      } catch (const ParseError &) {
      }
    }
  }

  ExprParser parserOf(const Chunk &chunk) const {
    return ExprParser(tokenize(chunk.content, chunk.offset), macros);
  }

  /// Counts an open block for as long as it lives.
  class Block {
  public:
    Block(TemplateParser &parser, size_t offset) : parser(parser) {
      if (++parser.nesting > kMaxNesting)
        throw ParseError{offset, "blocks nest deeper than " +
                                     std::to_string(kMaxNesting) + " levels"};
    }
    ~Block() { --parser.nesting; }

  private:
    TemplateParser &parser;
  };

  static std::string keywordOf(const Chunk &chunk) {
    size_t start = chunk.content.find_first_not_of(" \t\r\n");
    if (start == std::string::npos)
      return "";
    size_t end = start;
    while (end < chunk.content.size() &&
           (std::isalnum((unsigned char)chunk.content[end]) ||
            chunk.content[end] == '_'))
      ++end;
    return chunk.content.substr(start, end - start);
  }

  /// Parses nodes until a statement whose keyword is in `enders` (left
  /// unconsumed; its keyword returned) or the end (an error when enders
  /// are expected).
  std::string parseBody(std::vector<Node> &body,
                        const std::set<std::string> &enders,
                        size_t openedAt = 0) {
    while (at < chunks.size()) {
      const Chunk &chunk = chunks[at];
      if (chunk.kind == Chunk::Kind::Text) {
        Node node(Node::Kind::Text, chunk.offset);
        node.text = chunk.content;
        body.push_back(std::move(node));
        ++at;
        continue;
      }
      if (chunk.kind == Chunk::Kind::Output) {
        ExprParser p = parserOf(chunk);
        Node node(Node::Kind::Output, chunk.start());
        node.value = p.expression();
        p.expectEnd();
        body.push_back(std::move(node));
        ++at;
        continue;
      }
      std::string keyword = keywordOf(chunk);
      if (enders.count(keyword))
        return keyword;
      ++at;
      ExprParser p = parserOf(chunk);
      if (keyword == "if") {
        body.push_back(parseIf(p, chunk.start()));
      } else if (keyword == "for") {
        body.push_back(parseFor(p, chunk.start()));
      } else if (keyword == "set") {
        body.push_back(parseSet(p, chunk.start()));
      } else if (keyword == "macro") {
        body.push_back(parseMacro(p, chunk.start()));
      } else if (keyword == "generation") {
        parseGeneration(p, chunk.start(), body);
      } else if (keyword == "elif" || keyword == "else" || keyword == "endif" ||
                 keyword == "endfor") {
        throw ParseError{chunk.start(), "'" + keyword + "' without its 'if'" +
                                           (keyword == "endfor"
                                                ? std::string(" or 'for'")
                                                : std::string(""))};
      } else if (keyword == "endmacro" || keyword == "endgeneration") {
        std::string opener = keyword.substr(3);
        throw ParseError{chunk.start(),
                         "'" + keyword + "' without its '" + opener + "'"};
      } else {
        throw ParseError{chunk.start(),
                         keyword.empty()
                             ? std::string("an empty statement")
                             : "the statement '" + keyword +
                                   "' is not in tfm-serve's Jinja subset"};
      }
    }
    if (!enders.empty()) {
      std::string expected;
      for (const std::string &e : enders)
        expected += (expected.empty() ? "'" : " or '") + e + "'";
      throw ParseError{openedAt, "this block is not closed: the template "
                                 "ends before " + expected};
    }
    return "";
  }

  /// The statement at `at` (an ender): checks it is just its keyword.
  void consumeBare(const std::string &keyword) {
    ExprParser p = parserOf(chunks[at]);
    p.expectName();
    if (!p.atEnd())
      p.fail("'" + keyword + "' takes nothing after it");
    ++at;
  }

  /// transformers' {% generation %} ... {% endgeneration %} marks an
  /// assistant's text for return_assistant_tokens_mask (llava-hf's and
  /// other processors' templates carry it); rendered, it is its body, so
  /// the body's nodes join the enclosing one's.
  void parseGeneration(ExprParser &p, size_t offset, std::vector<Node> &body) {
    Block open(*this, offset);
    p.expectName(); // generation
    p.expectEnd();
    std::vector<Node> inner;
    parseBody(inner, {"endgeneration"}, offset);
    consumeBare("endgeneration");
    for (Node &node : inner)
      body.push_back(std::move(node));
  }

  Node parseIf(ExprParser &p, size_t offset) {
    Block open(*this, offset);
    Node node(Node::Kind::If, offset);
    p.expectName(); // if
    ExprPtr condition = p.expression();
    p.expectEnd();
    while (true) {
      std::vector<Node> body;
      std::string ender = parseBody(body, {"elif", "else", "endif"}, offset);
      node.branches.emplace_back(std::move(condition), std::move(body));
      if (ender == "elif") {
        ExprParser q = parserOf(chunks[at]);
        ++at;
        q.expectName();
        condition = q.expression();
        q.expectEnd();
        continue;
      }
      if (ender == "else") {
        consumeBare("else");
        parseBody(node.otherwise, {"endif"}, offset);
      }
      consumeBare("endif");
      return node;
    }
  }

  Node parseFor(ExprParser &p, size_t offset) {
    Block open(*this, offset);
    Node node(Node::Kind::For, offset);
    p.expectName(); // for
    do
      node.targets.push_back(p.expectName());
    while (p.acceptOperator(","));
    if (!p.acceptName("in"))
      p.fail("expected 'in'" + p.found());
    node.value = p.expression(/*withConditional=*/false);
    if (p.acceptName("if"))
      node.filter = p.expression(/*withConditional=*/false);
    if (p.acceptName("recursive"))
      p.fail("recursive loops are not in tfm-serve's Jinja subset");
    p.expectEnd();
    std::string ender = parseBody(node.body, {"else", "endfor"}, offset);
    if (ender == "else") {
      consumeBare("else");
      parseBody(node.otherwise, {"endfor"}, offset);
    }
    consumeBare("endfor");
    return node;
  }

  Node parseSet(ExprParser &p, size_t offset) {
    Node node(Node::Kind::Set, offset);
    p.expectName(); // set
    node.targets.push_back(p.expectName());
    if (p.acceptOperator("."))
      node.targets.push_back(p.expectName());
    if (!p.acceptOperator("="))
      p.fail("expected '=' (block assignments are not in tfm-serve's Jinja "
             "subset)" + p.found());
    node.value = p.expression();
    p.expectEnd();
    return node;
  }

  /// {% macro name(a, b=default) %}...{% endmacro %}. Only at the
  /// template's top level: a macro then sees the template's variables and
  /// its arguments, which is all a renderer without closures can give it.
  Node parseMacro(ExprParser &p, size_t offset) {
    if (nesting > 0)
      throw ParseError{offset, "macros are defined only at the template's "
                               "top level in tfm-serve's Jinja subset"};
    Block open(*this, offset);
    Node node(Node::Kind::Macro, offset);
    p.expectName(); // macro
    node.targets.push_back(p.expectName());
    p.expectOperator("(");
    while (!p.acceptOperator(")")) {
      size_t where = p.peek().offset;
      std::string parameter = p.expectName();
      if (std::find(node.targets.begin() + 1, node.targets.end(),
                    parameter) != node.targets.end())
        throw ParseError{where, "the parameter '" + parameter + "' repeats"};
      node.targets.push_back(parameter);
      if (p.acceptOperator("="))
        node.defaults.push_back(p.expression());
      else if (!node.defaults.empty() && node.defaults.back())
        throw ParseError{where, "a parameter without a default after one with "
                             "a default"};
      else
        node.defaults.push_back(nullptr);
      if (!p.isOperator(")"))
        p.expectOperator(",");
    }
    p.expectEnd();
    parseBody(node.body, {"endmacro"}, offset);
    consumeBare("endmacro");
    refuseSpecialNames(node.body);
    return node;
  }

  /// Inside a macro Jinja gives `varargs`, `kwargs` and `caller` meanings
  /// (extra arguments, a {% call %} block's body) this subset lacks:
  /// refused, rather than read as undefined variables.
  static void refuseSpecialNames(const std::vector<Node> &nodes) {
    for (const Node &node : nodes) {
      for (const ExprPtr *e : {&node.value, &node.filter})
        refuseSpecialNames(e->get());
      for (const auto &[condition, body] : node.branches) {
        refuseSpecialNames(condition.get());
        refuseSpecialNames(body);
      }
      refuseSpecialNames(node.body);
      refuseSpecialNames(node.otherwise);
      for (const std::string &target : node.targets)
        if (isSpecialName(target))
          throw ParseError{node.offset, specialNameMessage(target)};
    }
  }
  static void refuseSpecialNames(const Expr *e) {
    if (!e)
      return;
    if (e->kind == Expr::Kind::Name && isSpecialName(e->name))
      throw ParseError{e->offset, specialNameMessage(e->name)};
    for (const ExprPtr &operand : e->operands)
      refuseSpecialNames(operand.get());
    for (const auto &keyword : e->keywords)
      refuseSpecialNames(keyword.second.get());
  }
  static bool isSpecialName(const std::string &name) {
    return name == "varargs" || name == "kwargs" || name == "caller";
  }
  static std::string specialNameMessage(const std::string &name) {
    return "a macro's '" + name + "' is not in tfm-serve's Jinja subset";
  }
};

/// Whether `e`, past its filters (`x['content'] | selectattr(...)`), is a
/// value's `content`, subscripted or as an attribute.
bool isContentAccess(const Expr *e) {
  while (e && e->kind == Expr::Kind::Filter)
    e = e->operands[0].get();
  if (!e)
    return false;
  if (e->kind == Expr::Kind::Attribute)
    return e->name == "content";
  return e->kind == Expr::Kind::Subscript &&
         e->operands[1]->kind == Expr::Kind::Literal &&
         e->operands[1]->value == "content";
}

/// Whether a loop of `nodes` (at any depth) iterates over a message's
/// content: vLLM's test for a template that reads OpenAI-style content
/// parts rather than a string.
bool loopsOverContent(const std::vector<Node> &nodes) {
  for (const Node &node : nodes) {
    if (node.kind == Node::Kind::For && isContentAccess(node.value.get()))
      return true;
    if (loopsOverContent(node.body) || loopsOverContent(node.otherwise))
      return true;
    for (const auto &branch : node.branches)
      if (loopsOverContent(branch.second))
        return true;
  }
  return false;
}

} // namespace

ChatTemplate::ChatTemplate() = default;
ChatTemplate::~ChatTemplate() = default;

std::unique_ptr<ChatTemplate> ChatTemplate::parse(const std::string &source,
                                                  std::string &error) {
  std::unique_ptr<ChatTemplate> parsed(new ChatTemplate());
  parsed->source = source;
  try {
    TemplateParser parser(splitChunks(source));
    parsed->body = std::make_unique<std::vector<Node>>(parser.parseAll());
    parsed->contentParts = loopsOverContent(*parsed->body);
  } catch (const ParseError &e) {
    error = describePosition(source, e.offset) + ": " + e.message;
    return nullptr;
  }
  return parsed;
}
