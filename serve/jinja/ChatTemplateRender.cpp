//===- ChatTemplateRender.cpp - rendering a parsed chat template ----------===//
//
// Walks the syntax of ChatTemplateSyntax.h over JSON values with Jinja's
// (that is, Python's) semantics: truthiness, `and`/`or` returning an
// operand, str() and repr() when printing, Undefined for what is missing
// (a JSON "discarded" value here). Scopes follow Jinja's: a loop body's
// assignments stay in the loop, which is why templates carry state out of
// loops in namespace objects; a macro sees the template's top-level
// variables and its arguments. A render is bounded (output size, loop
// iterations, steps, macro recursion), since a template comes from a model
// file.
//
//===----------------------------------------------------------------------===//

#include "serve/jinja/ChatTemplate.h"
#include "serve/jinja/ChatTemplateSyntax.h"

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <map>
#include <optional>
#include <set>

using namespace tfm::serve;
using namespace tfm::serve::chat_template;
using json = nlohmann::ordered_json;

namespace {

/// The most a render may print, and loop iterations it may run (items
/// handed to loops: a chat's messages, their parts, once or twice over;
/// 2^16 let a 1 KB template take 1.8 s under ASan, found by
/// fuzz-chat-template).
constexpr size_t kMaxOutputBytes = size_t(16) << 20;
constexpr size_t kMaxIterations = size_t(1) << 14;
/// And the steps it may take (statements and expressions evaluated, the
/// lists and strings they make weighed by size: Renderer::eval): loops
/// within the item limit over a 2 KB body of thirty expressions took 2.9 s
/// under ASan (fuzz-chat-template). Templates of real models take 10-30
/// a message, so this is a conversation of 2 000 messages or more.
constexpr size_t kMaxSteps = size_t(1) << 16;

/// How deep macro calls may nest: Hermes' json_to_python_type recurses
/// once a level of a tool's JSON schema; a template that recurses without
/// end stops here with a message that says so.
constexpr unsigned kMaxMacroDepth = 32;
/// And how deep statements and expressions may nest while rendering, the
/// bodies of the macros they call included: evaluating recurses that deep.
/// The parser bounds both to 100 levels, so only macros pass this, and the
/// stack stays what a template without them takes (32 calls of a body 200
/// levels deep took 3-4 MiB of an -O3 build's stack).
constexpr unsigned kMaxRenderDepth = 256;

/// Marks a JSON object as a namespace() (assignable with `set ns.x`).
const char *const kNamespaceKey = "\x01namespace";
/// Marks a JSON object as a macro ([index, name]: Renderer::macros) or a
/// function of the subset (its name): what a template's names hold besides
/// data, so that `strftime_now is defined` and a macro held in a variable
/// behave as in Jinja.
const char *const kMacroKey = "\x01macro";
const char *const kFunctionKey = "\x01function";

bool isMacro(const json &v) { return v.is_object() && v.contains(kMacroKey); }
bool isFunction(const json &v) {
  return v.is_object() && v.contains(kFunctionKey);
}
bool isCallable(const json &v) { return isMacro(v) || isFunction(v); }

struct RenderError {
  ChatTemplate::Failure failure;
  size_t offset;
  std::string message;
};

json undefined() { return json(json::value_t::discarded); }
bool isUndefined(const json &v) { return v.is_discarded(); }

bool truthy(const json &v) {
  switch (v.type()) {
  case json::value_t::boolean: return v.get<bool>();
  case json::value_t::number_integer:
  case json::value_t::number_unsigned: return v.get<int64_t>() != 0;
  case json::value_t::number_float: return v.get<double>() != 0;
  case json::value_t::string: return !v.get_ref<const std::string &>().empty();
  case json::value_t::array:
  case json::value_t::object: return !v.empty();
  default: return false; // null, undefined
  }
}

/// Python's name of a value's type, for messages.
std::string typeName(const json &v) {
  switch (v.type()) {
  case json::value_t::null: return "none";
  case json::value_t::boolean: return "bool";
  case json::value_t::number_integer:
  case json::value_t::number_unsigned: return "int";
  case json::value_t::number_float: return "float";
  case json::value_t::string: return "str";
  case json::value_t::array: return "list";
  case json::value_t::object:
    return v.contains(kNamespaceKey) ? "namespace"
           : isMacro(v)              ? "macro"
           : isFunction(v)           ? "function"
                                     : "dict";
  default: return "undefined";
  }
}

/// Python's repr() of a float: the shortest digits that read back the
/// same (the nearest where several are as short: to_chars gives them),
/// written out from 1e-4 to below 1e16 ("1.0" for whole numbers), with an
/// exponent of two digits at least elsewhere ("1e+16", "1.5e-05").
std::string floatText(double d) {
  if (std::isnan(d))
    return "nan";
  if (std::isinf(d))
    return d > 0 ? "inf" : "-inf";
  char buffer[40];
  char *end = std::to_chars(buffer, buffer + sizeof buffer, d,
                            std::chars_format::scientific)
                  .ptr;
  std::string scientific(buffer, end); // "-1.2345e+15"
  size_t e = scientific.find('e');
  int exponent = std::atoi(scientific.c_str() + e + 1);
  std::string sign = scientific[0] == '-' ? "-" : "";
  std::string digits;
  for (size_t i = sign.size(); i < e; ++i)
    if (scientific[i] != '.')
      digits += scientific[i];
  if (exponent < -4 || exponent >= 16) {
    std::string out = sign + digits[0];
    if (digits.size() > 1)
      out += "." + digits.substr(1);
    char text[16];
    std::snprintf(text, sizeof text, "e%c%02d", exponent < 0 ? '-' : '+',
                  std::abs(exponent));
    return out + text;
  }
  if (exponent < 0)
    return sign + "0." + std::string(size_t(-exponent - 1), '0') + digits;
  size_t point = size_t(exponent) + 1;
  if (digits.size() < point)
    digits.append(point - digits.size(), '0');
  std::string fraction = digits.substr(point);
  return sign + digits.substr(0, point) + "." +
         (fraction.empty() ? "0" : fraction);
}

std::string repr(const json &v);

/// Python's str().
std::string text(const json &v) {
  switch (v.type()) {
  case json::value_t::string: return v.get<std::string>();
  case json::value_t::null: return "None";
  case json::value_t::boolean: return v.get<bool>() ? "True" : "False";
  case json::value_t::number_float: return floatText(v.get<double>());
  case json::value_t::discarded: return "";
  case json::value_t::number_integer:
  case json::value_t::number_unsigned: return v.dump();
  default: return repr(v);
  }
}

/// Python's repr().
std::string repr(const json &v) {
  if (v.is_string()) {
    const std::string &s = v.get_ref<const std::string &>();
    char quote = s.find('\'') != std::string::npos &&
                         s.find('"') == std::string::npos
                     ? '"'
                     : '\'';
    std::string out(1, quote);
    for (char c : s) {
      if (c == '\\' || c == quote)
        out += '\\', out += c;
      else if (c == '\n')
        out += "\\n";
      else if (c == '\t')
        out += "\\t";
      else if (c == '\r')
        out += "\\r";
      else
        out += c;
    }
    return out + quote;
  }
  if (v.is_array()) {
    std::string out = "[";
    for (size_t i = 0; i < v.size(); ++i)
      out += (i ? ", " : "") + repr(v[i]);
    return out + "]";
  }
  if (isMacro(v)) // as Jinja's Macro prints itself
    return "<Macro " + repr(v[kMacroKey][1]) + ">";
  if (isFunction(v))
    return "<function " + v[kFunctionKey].get<std::string>() + ">";
  if (v.is_object()) {
    std::string out = "{";
    bool first = true;
    for (auto &[key, value] : v.items()) {
      if (key == kNamespaceKey)
        continue;
      out += (first ? "" : ", ") + repr(json(key)) + ": " + repr(value);
      first = false;
    }
    return out + "}";
  }
  return text(v);
}

/// The tojson filter: Python's json.dumps(v, ensure_ascii=False,
/// indent=None, separators=None, sort_keys=False) as transformers 4.42+
/// define it (the versions that pass `tools` to a template; Jinja's own
/// tojson sorts keys, escapes HTML and gives Markup), with those four
/// options as json.dumps takes them.
struct PythonJson {
  /// What a level of nesting indents by (json.dumps' indent: a string, or
  /// that many spaces); nullopt: all on one line.
  std::optional<std::string> indent;
  /// json.dumps' separators: (', ', ': ') on one line, (',', ': ')
  /// indented.
  std::string itemSeparator = ", ", keySeparator = ": ";
  bool sortKeys = false, ensureAscii = false;
  size_t offset = 0; // of the filter, to say where a render failed
  std::string out;

  void write(const json &v, size_t depth = 0) {
    switch (v.type()) {
    case json::value_t::array:
    case json::value_t::object: {
      if (isCallable(v)) {
        out += "null"; // Python would fail, as for Undefined
        return;
      }
      bool isArray = v.is_array();
      std::vector<std::pair<std::string, const json *>> entries;
      for (auto &[key, value] : v.items())
        if (isArray || key != kNamespaceKey)
          entries.emplace_back(key, &value);
      if (entries.empty()) {
        out += isArray ? "[]" : "{}";
        return;
      }
      if (sortKeys && !isArray)
        std::stable_sort(entries.begin(), entries.end(),
                         [](auto &a, auto &b) { return a.first < b.first; });
      out += isArray ? '[' : '{';
      bool first = true;
      for (auto &[key, value] : entries) {
        if (!first)
          out += itemSeparator;
        first = false;
        newline(depth + 1);
        if (!isArray) {
          write(json(key), depth + 1);
          out += keySeparator;
        }
        write(*value, depth + 1);
      }
      newline(depth);
      out += isArray ? ']' : '}';
      return;
    }
    case json::value_t::string:
      // A template's literals may hold bytes that are not UTF-8: each
      // becomes U+FFFD, as Python decoding with errors="replace" would
      // make it. ensure_ascii writes \uXXXX (pairs past the BMP).
      out += v.dump(-1, ' ', ensureAscii, json::error_handler_t::replace);
      break;
    case json::value_t::number_float: {
      double d = v.get<double>();
      out += std::isnan(d)   ? "NaN"
             : std::isinf(d) ? (d > 0 ? "Infinity" : "-Infinity")
                             : floatText(d);
      break;
    }
    case json::value_t::discarded:
      out += "null"; // Python would fail; null is what a caller expects
      return;
    default:
      out += v.dump();
    }
    bound();
  }

  void newline(size_t level) {
    if (!indent)
      return;
    if (indent->size() * level > kMaxOutputBytes)
      bound(indent->size() * level);
    out += '\n';
    for (size_t i = 0; i < level; ++i)
      out += *indent;
    bound();
  }

  /// Fails where the text passes what a render may print (an indent of
  /// 10^9 spaces, a long string indenting every level).
  void bound(size_t more = 0) const {
    if (out.size() + more > kMaxOutputBytes)
      throw RenderError{ChatTemplate::Failure::Invalid, offset,
                        "tojson's text passes " +
                            std::to_string(kMaxOutputBytes >> 20) + " MiB"};
  }
};

/// Code points of a UTF-8 string, each as its bytes.
std::vector<std::string> codePoints(const std::string &s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    unsigned char c = (unsigned char)s[i];
    size_t n = c >= 0xF0 ? 4 : c >= 0xE0 ? 3 : c >= 0xC0 ? 2 : 1;
    out.push_back(s.substr(i, n));
    i += n;
  }
  return out;
}

std::string stripChars(const std::string &s, const std::string &chars,
                       bool left, bool right) {
  size_t begin = 0, end = s.size();
  if (left)
    while (begin < end && chars.find(s[begin]) != std::string::npos)
      ++begin;
  if (right)
    while (end > begin && chars.find(s[end - 1]) != std::string::npos)
      --end;
  return s.substr(begin, end - begin);
}

const std::string kWhitespace = " \t\n\r\f\v";

std::string caseMapped(std::string s, bool upper) {
  for (char &c : s)
    c = char(upper ? std::toupper((unsigned char)c)
                   : std::tolower((unsigned char)c));
  return s;
}

std::string capitalized(const std::string &s) {
  std::string out = caseMapped(s, false);
  if (!out.empty())
    out[0] = char(std::toupper((unsigned char)out[0]));
  return out;
}

std::string titled(const std::string &s) {
  std::string out = s;
  bool startOfWord = true;
  for (char &c : out) {
    bool letter = std::isalpha((unsigned char)c);
    c = char(letter && startOfWord ? std::toupper((unsigned char)c)
                                   : std::tolower((unsigned char)c));
    startOfWord = !letter;
  }
  return out;
}

/// Jinja's title filter, unlike str.title(): each word's first character
/// upper case, the rest lower, where words are separated by whitespace and
/// '-', '(', '{', '[', '<' only ('"x"' stays '"x"').
std::string wordsTitled(const std::string &s) {
  std::string out = s;
  bool startOfWord = true;
  for (char &c : out) {
    // Python's \s: ASCII whitespace and the separators \x1c to \x1f.
    if ((c && std::strchr("-({[<", c)) || std::isspace((unsigned char)c) ||
        (c >= '\x1c' && c <= '\x1f')) {
      startOfWord = true;
      continue;
    }
    c = char(startOfWord ? std::toupper((unsigned char)c)
                         : std::tolower((unsigned char)c));
    startOfWord = false;
  }
  return out;
}

std::string replaced(std::string s, const std::string &from,
                     const std::string &to) {
  if (from.empty())
    return s;
  std::string out;
  size_t at = 0;
  for (size_t found; (found = s.find(from, at)) != std::string::npos;
       at = found + from.size())
    out += s.substr(at, found - at) + to;
  return out + s.substr(at);
}

/// What a call's arguments evaluate to.
struct Arguments {
  std::vector<json> positional;
  std::vector<std::pair<std::string, json>> keywords;

  /// The i-th positional argument, else the keyword `name`, else
  /// `fallback`.
  json get(size_t i, const char *name, json fallback) const {
    if (i < positional.size())
      return positional[i];
    if (name)
      for (auto &[key, value] : keywords)
        if (key == name)
          return value;
    return fallback;
  }
  size_t size() const { return positional.size() + keywords.size(); }
};

class Renderer {
public:
  Renderer(const json &variables, std::string &out, const std::tm *now)
      : out(&out), now(now) {
    scopes.emplace_back();
    for (auto &[key, value] : variables.items())
      scopes.back()[key] = value;
  }

  void run(const std::vector<Node> &nodes) {
    for (const Node &node : nodes)
      run(node);
  }

private:
  std::vector<std::map<std::string, json>> scopes;
  /// Where names are looked up from the innermost scope down to, before
  /// the top level (scopes[0]): a macro's body sees its arguments and the
  /// template's variables, not its caller's.
  size_t scopeFloor = 0;
  std::string *out; // a macro's body prints into its own buffer
  const std::tm *now; // strftime_now's time; null: the clock's
  std::vector<const Node *> macros; // defined so far, in kMacroKey's index
  unsigned macroDepth = 0, depth = 0;

  /// Counts a level of statements or expressions being run for as long as
  /// it lives (kMaxRenderDepth).
  class Nested {
  public:
    Nested(Renderer &renderer, size_t offset) : renderer(renderer) {
      if (++renderer.depth > kMaxRenderDepth)
        fail(offset, "statements and expressions nest deeper than " +
                         std::to_string(kMaxRenderDepth) +
                         " levels, with the bodies of the macros they call");
    }
    ~Nested() { --renderer.depth; }

  private:
    Renderer &renderer;
  };
  size_t iterations = 0, steps = 0;

  void countStep(size_t offset, size_t weight = 1) {
    if ((steps += weight) > kMaxSteps)
      fail(offset, "the template takes more than " +
                       std::to_string(kMaxSteps) +
                       " steps (statements and expressions evaluated)");
  }

  [[noreturn]] static void fail(size_t offset, const std::string &message) {
    throw RenderError{ChatTemplate::Failure::Invalid, offset, message};
  }

  void print(const std::string &s, size_t offset) {
    if (out->size() + s.size() > kMaxOutputBytes)
      fail(offset, "the rendered prompt passes " +
                       std::to_string(kMaxOutputBytes >> 20) + " MiB");
    *out += s;
  }

  /// The variable `name` of the innermost scope that holds it (down to the
  /// floor, then the top level).
  json *lookup(const std::string &name) {
    for (size_t i = scopes.size(); i-- > scopeFloor;)
      if (auto found = scopes[i].find(name); found != scopes[i].end())
        return &found->second;
    if (scopeFloor > 0)
      if (auto found = scopes[0].find(name); found != scopes[0].end())
        return &found->second;
    return nullptr;
  }

  void run(const Node &node) {
    countStep(node.offset);
    Nested level(*this, node.offset);
    switch (node.kind) {
    case Node::Kind::Text:
      return print(node.text, node.offset);
    case Node::Kind::Output:
      return print(text(eval(*node.value)), node.offset);
    case Node::Kind::If:
      for (const auto &[condition, body] : node.branches)
        if (json holder; truthy(*view(*condition, holder)))
          return run(body);
      return run(node.otherwise);
    case Node::Kind::Set: {
      json value = eval(*node.value);
      if (node.targets.size() == 1) {
        scopes.back()[node.targets[0]] = std::move(value);
        return;
      }
      json *target = lookup(node.targets[0]);
      if (!target || !target->is_object() || !target->contains(kNamespaceKey))
        fail(node.offset, "'" + node.targets[0] +
                              "' is not a namespace(): its attributes cannot "
                              "be set");
      (*target)[node.targets[1]] = std::move(value);
      return;
    }
    case Node::Kind::For:
      return runFor(node);
    case Node::Kind::Macro: {
      // Defined where it stands, as `set` would assign it (macros are at
      // the top level only: the parser refuses them elsewhere).
      json macro = json::object();
      macro[kMacroKey] = json::array({macros.size(), node.targets[0]});
      macros.push_back(&node);
      scopes.back()[node.targets[0]] = std::move(macro);
      return;
    }
    }
  }

  std::vector<json> items(const json &iterable, size_t offset) {
    std::vector<json> list;
    if (iterable.is_array()) {
      list.assign(iterable.begin(), iterable.end());
    } else if (iterable.is_object() && !isCallable(iterable)) {
      for (auto &[key, value] : iterable.items())
        if (key != kNamespaceKey)
          list.push_back(key);
    } else if (iterable.is_string()) {
      for (std::string &c : codePoints(iterable.get<std::string>()))
        list.push_back(std::move(c));
    } else if (!isUndefined(iterable)) {
      fail(offset, "a " + typeName(iterable) + " cannot be iterated");
    }
    return list;
  }

  void bindTargets(const Node &node, const json &item,
                   std::map<std::string, json> &scope) {
    if (node.targets.size() == 1) {
      scope[node.targets[0]] = item;
      return;
    }
    if (!item.is_array() || item.size() != node.targets.size())
      fail(node.offset, "cannot unpack " + repr(item) + " into " +
                            std::to_string(node.targets.size()) + " names");
    for (size_t i = 0; i < node.targets.size(); ++i)
      scope[node.targets[i]] = item[i];
  }

  void runFor(const Node &node) {
    std::vector<json> list = items(eval(*node.value), node.offset);
    // Every item a loop is handed counts, run or not: a loop nested in
    // another rebuilds its list each time round, and a 1 KB template of
    // loops over 70-character strings inside loops took 3 s while running
    // fewer than the limit's iterations (found by fuzz-chat-template).
    if ((iterations += list.size()) > kMaxIterations)
      fail(node.offset, "the template loops more than " +
                            std::to_string(kMaxIterations) + " times");
    if (node.filter) {
      std::vector<json> kept;
      for (json &item : list) {
        scopes.emplace_back();
        bindTargets(node, item, scopes.back());
        bool keep = truthy(eval(*node.filter));
        scopes.pop_back();
        if (keep)
          kept.push_back(std::move(item));
      }
      list = std::move(kept);
    }
    if (list.empty())
      return run(node.otherwise);
    size_t n = list.size();
    // `loop` is built once and updated in place, moved into each
    // iteration's scope and back: rebuilding its nine members every
    // iteration made a render at the iteration limit take 3 s under ASan
    // (found by fuzz-chat-template).
    auto freshLoop = [&] {
      return json{{"index", 0},          {"index0", 0},
                  {"revindex", 0},       {"revindex0", 0},
                  {"first", false},      {"last", false},
                  {"length", n},         {"previtem", undefined()},
                  {"nextitem", undefined()}};
    };
    json loop = freshLoop();
    for (size_t i = 0; i < n; ++i) {
      loop["index"] = i + 1;
      loop["index0"] = i;
      loop["revindex"] = n - i;
      loop["revindex0"] = n - i - 1;
      loop["first"] = i == 0;
      loop["last"] = i + 1 == n;
      loop["previtem"] = i ? list[i - 1] : undefined();
      loop["nextitem"] = i + 1 < n ? list[i + 1] : undefined();
      scopes.emplace_back();
      auto &scope = scopes.back();
      bindTargets(node, list[i], scope);
      json &bound = scope["loop"] = std::move(loop);
      run(node.body);
      // The body may have set `loop` to something else in its scope.
      loop = bound.is_object() && bound.size() == 9 ? std::move(bound)
                                                    : freshLoop();
      scopes.pop_back();
    }
  }

  /// An expression's value, counted: a step, and a step for each item of
  /// a list or dict and each 64 bytes of a string it makes or copies (a
  /// loop re-reading a variable of 10 000 items copied 10^8 of them; one
  /// applying tojson to a long string made 2 KB of escapes a time round).
  json eval(const Expr &e) {
    Nested level(*this, e.offset);
    json value = evalUncounted(e);
    countStep(e.offset, 1 + sizeInSteps(value));
    return value;
  }

  static size_t sizeInSteps(const json &value) {
    if (value.is_string())
      return value.get_ref<const std::string &>().size() / 64;
    return value.is_array() || value.is_object() ? value.size() : 0;
  }

  json evalUncounted(const Expr &e) {
    switch (e.kind) {
    case Expr::Kind::Literal:
      return e.value;
    case Expr::Kind::Name: {
      if (const json *found = lookup(e.name))
        return *found;
      // The functions are the environment's globals: defined, callable.
      if (isKnownFunction(e.name))
        return json{{kFunctionKey, e.name}};
      return undefined();
    }
    case Expr::Kind::Attribute:
    case Expr::Kind::Subscript: {
      json holder;
      const json *value = view(e, holder);
      return value == &holder ? std::move(holder) : *value;
    }
    case Expr::Kind::Slice:
      return slice(e);
    case Expr::Kind::Call:
      return call(e);
    case Expr::Kind::Filter:
      return filter(e);
    case Expr::Kind::Test:
      return test(e) != e.negated;
    case Expr::Kind::Unary: {
      json v = eval(*e.operands[0]);
      if (e.name == "not")
        return !truthy(v);
      if (!v.is_number())
        fail(e.offset, "unary '" + e.name + "' needs a number, not a " +
                           typeName(v));
      if (e.name == "+")
        return v;
      return v.is_number_float() ? json(-v.get<double>())
                                 : json(-v.get<int64_t>());
    }
    case Expr::Kind::Binary:
      return binary(e);
    case Expr::Kind::Conditional: {
      const ExprPtr &chosen =
          truthy(eval(*e.operands[0])) ? e.operands[1] : e.operands[2];
      return chosen ? eval(*chosen) : undefined();
    }
    case Expr::Kind::List: {
      json list = json::array();
      for (const ExprPtr &item : e.operands)
        list.push_back(eval(*item));
      return list;
    }
    case Expr::Kind::Dict: {
      json dict = json::object();
      for (size_t i = 0; i + 1 < e.operands.size(); i += 2) {
        json key = eval(*e.operands[i]);
        if (!key.is_string())
          fail(e.operands[i]->offset, "dict keys must be strings here");
        dict[key.get<std::string>()] = eval(*e.operands[i + 1]);
      }
      return dict;
    }
    }
    return undefined();
  }

  /// The value of `e` where it is stored (a variable, or an item or
  /// attribute of one), else `holder` with it computed. Copying values only
  /// where they are used: `messages[0]['role']` in a loop copied the whole
  /// conversation each time round (fuzz-chat-template: 3 s a render).
  /// Expressions change no variables, so what this points at stays put
  /// while the expression around it is evaluated.
  const json *view(const Expr &e, json &holder) {
    if (e.kind == Expr::Kind::Name) {
      if (const json *found = lookup(e.name))
        return found;
    } else if (e.kind == Expr::Kind::Attribute ||
               e.kind == Expr::Kind::Subscript) {
      json baseHolder;
      const Expr &keyExpr = *e.operands.back();
      // A macro the key calls may set a namespace's attribute, moving what
      // `base` would point into: the base is then copied.
      if (e.kind == Expr::Kind::Subscript && keyExpr.callsMacro) {
        json base = eval(*e.operands[0]);
        holder = member(base, eval(keyExpr), e);
        return &holder;
      }
      const json *base = view(*e.operands[0], baseHolder);
      json key = e.kind == Expr::Kind::Attribute ? json(e.name)
                                                 : eval(keyExpr);
      if (base != &baseHolder)
        if (const json *item = storedMember(*base, key))
          return item;
      holder = member(*base, key, e);
      return &holder;
    }
    holder = eval(e);
    return &holder;
  }

  /// The item of a dict or list that x.name or x[key] names, in place;
  /// nullptr for anything else (member() then says what it is).
  static const json *storedMember(const json &v, const json &key) {
    if (v.is_object() && key.is_string()) {
      auto found = v.find(key.get<std::string>());
      return found == v.end() ? nullptr : &*found;
    }
    if (v.is_array() && key.is_number_integer()) {
      int64_t size = int64_t(v.size()), index = key.get<int64_t>();
      if (index < 0)
        index += size;
      return index < 0 || index >= size ? nullptr : &v[size_t(index)];
    }
    return nullptr;
  }

  /// x.name or x[key]: an item of a dict, list or string, or Undefined.
  json member(const json &v, const json &key, const Expr &e) {
    if (isUndefined(v))
      fail(e.offset, describeUndefined(*e.operands[0]) +
                         " is undefined: it has no " +
                         (key.is_string() ? "'" + key.get<std::string>() + "'"
                                          : repr(key)));
    return memberOf(v, key);
  }

  /// member() of a value that is not Undefined.
  static json memberOf(const json &v, const json &key) {
    if (const json *item = storedMember(v, key))
      return *item;
    if (v.is_string() && key.is_number_integer()) {
      std::vector<std::string> chars = codePoints(v.get<std::string>());
      int64_t size = int64_t(chars.size()), index = key.get<int64_t>();
      if (index < 0)
        index += size;
      if (index >= 0 && index < size)
        return chars[size_t(index)];
    }
    return undefined();
  }

  static std::string describeUndefined(const Expr &e) {
    if (e.kind == Expr::Kind::Name)
      return "'" + e.name + "'";
    if (e.kind == Expr::Kind::Attribute)
      return "'" + e.name + "'";
    return "the value";
  }

  json slice(const Expr &e) {
    json v = eval(*e.operands[0]);
    std::vector<json> elements;
    if (v.is_array())
      elements.assign(v.begin(), v.end());
    else if (v.is_string())
      for (std::string &c : codePoints(v.get<std::string>()))
        elements.push_back(std::move(c));
    else
      fail(e.offset, "a " + typeName(v) + " cannot be sliced");
    auto bound = [&](const ExprPtr &part, std::optional<int64_t> &out) {
      if (!part)
        return;
      json b = eval(*part);
      if (b.is_null())
        return;
      if (!b.is_number_integer())
        fail(part->offset, "slice bounds must be integers");
      out = b.get<int64_t>();
    };
    std::optional<int64_t> start, stop, step;
    bound(e.operands[1], start);
    bound(e.operands[2], stop);
    bound(e.operands[3], step);
    int64_t n = int64_t(elements.size()), by = step.value_or(1);
    if (by == 0)
      fail(e.offset, "a slice's step cannot be zero");
    // Python's slice.indices().
    auto clamp = [&](std::optional<int64_t> x, int64_t fallback) {
      if (!x)
        return fallback;
      int64_t i = *x < 0 ? *x + n : *x;
      return by > 0 ? std::clamp<int64_t>(i, 0, n)
                    : std::clamp<int64_t>(i, -1, n - 1);
    };
    int64_t from = clamp(start, by > 0 ? 0 : n - 1);
    int64_t to = clamp(stop, by > 0 ? n : -1);
    json result = json::array();
    std::string joined;
    for (int64_t i = from; by > 0 ? i < to : i > to; i += by) {
      if (v.is_string())
        joined += elements[size_t(i)].get<std::string>();
      else
        result.push_back(elements[size_t(i)]);
    }
    return v.is_string() ? json(joined) : result;
  }

  Arguments evalArguments(const Expr &e, size_t first) {
    Arguments args;
    for (size_t i = first; i < e.operands.size(); ++i)
      args.positional.push_back(eval(*e.operands[i]));
    for (auto &[key, value] : e.keywords)
      args.keywords.emplace_back(key, eval(*value));
    return args;
  }

  std::string stringArgument(const Arguments &args, size_t i,
                             const char *name, const std::string &fallback,
                             size_t offset) {
    json v = args.get(i, name, fallback);
    if (!v.is_string())
      fail(offset, std::string("'") + (name ? name : "the argument") +
                       "' must be a string, not a " + typeName(v));
    return v.get<std::string>();
  }

  json call(const Expr &e) {
    const Expr &callee = *e.operands[0];
    if (callee.kind == Expr::Kind::Attribute) {
      json self = eval(*callee.operands[0]);
      return method(self, callee.name, evalArguments(e, 1), e.offset);
    }
    json function = eval(callee);
    if (isMacro(function))
      return callMacro(function, e);
    if (isUndefined(function))
      fail(e.offset, describeUndefined(callee) + " is undefined: it cannot "
                                                 "be called");
    if (!isFunction(function))
      fail(e.offset, "a " + typeName(function) + " cannot be called");
    const std::string &name = function[kFunctionKey].get_ref<const std::string &>();
    Arguments args = evalArguments(e, 1);
    if (name == "raise_exception")
      throw RenderError{ChatTemplate::Failure::Raised, e.offset,
                        text(args.get(0, nullptr, ""))};
    if (name == "namespace") {
      json ns = json::object();
      ns[kNamespaceKey] = true;
      for (auto &[key, value] : args.keywords)
        ns[key] = value;
      return ns;
    }
    if (name == "range")
      return range(args, e.offset);
    if (name == "strftime_now")
      return strftimeNow(args, e.offset);
    fail(e.offset, "the function '" + name + "' is not in the subset");
  }

  /// A macro's call: its body rendered, with the arguments bound to its
  /// parameters (the rest to their defaults, evaluated then, or
  /// undefined), on a scope of its own over the template's top level.
  /// A failure ends the render, so what this changes is restored only on
  /// the way back.
  json callMacro(const json &macro, const Expr &e) {
    const Node &node = *macros[macro[kMacroKey][0].get<size_t>()];
    const std::string &name = node.targets[0];
    size_t parameters = node.targets.size() - 1;
    Arguments args = evalArguments(e, 1);
    if (args.positional.size() > parameters)
      fail(e.offset, "the macro '" + name + "' takes at most " +
                         std::to_string(parameters) + " argument(s)");
    std::vector<std::optional<json>> given(parameters);
    for (size_t i = 0; i < args.positional.size(); ++i)
      given[i] = std::move(args.positional[i]);
    for (auto &[key, value] : args.keywords) {
      auto at = std::find(node.targets.begin() + 1, node.targets.end(), key);
      if (at == node.targets.end())
        fail(e.offset, "the macro '" + name + "' has no parameter '" + key +
                           "'");
      std::optional<json> &slot = given[size_t(at - node.targets.begin() - 1)];
      if (slot)
        fail(e.offset, "the macro '" + name + "' is given '" + key +
                           "' twice");
      slot = std::move(value);
    }
    // Each level recurses through a body's statements and expressions.
    if (macroDepth == kMaxMacroDepth)
      fail(e.offset, "macro calls nest deeper than " +
                         std::to_string(kMaxMacroDepth) + " levels");
    size_t floor = scopeFloor;
    std::string *caller = out, printed;
    ++macroDepth;
    scopes.emplace_back();
    scopeFloor = scopes.size() - 1;
    out = &printed;
    for (size_t i = 0; i < parameters; ++i) {
      const ExprPtr &fallback = node.defaults[i];
      scopes.back()[node.targets[i + 1]] =
          given[i] ? std::move(*given[i])
          : fallback ? eval(*fallback)
                     : undefined();
    }
    run(node.body);
    out = caller;
    scopes.pop_back();
    scopeFloor = floor;
    --macroDepth;
    return printed;
  }

  json range(const Arguments &arguments, size_t offset) {
    const std::vector<json> &args = arguments.positional;
    if (args.empty() || args.size() > 3 || !arguments.keywords.empty() ||
        !std::all_of(args.begin(), args.end(),
                     [](const json &a) { return a.is_number_integer(); }))
      fail(offset, "range() takes one to three integers");
    int64_t start = args.size() > 1 ? args[0].get<int64_t>() : 0;
    int64_t stop = args.size() > 1 ? args[1].get<int64_t>()
                                   : args[0].get<int64_t>();
    int64_t step = args.size() > 2 ? args[2].get<int64_t>() : 1;
    if (step == 0)
      fail(offset, "range()'s step cannot be zero");
    json list = json::array();
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      if (list.size() >= kMaxIterations)
        fail(offset, "range() is longer than " +
                         std::to_string(kMaxIterations));
      list.push_back(i);
    }
    return list;
  }

  /// transformers' strftime_now(format): datetime.now().strftime(format),
  /// the local time, or the time render() was given.
  json strftimeNow(const Arguments &args, size_t offset) {
    json format = args.get(0, "format", undefined());
    if (!format.is_string() || args.size() != 1)
      fail(offset, "strftime_now() takes a format string");
    std::tm local{};
    long microseconds = 0;
    if (now) {
      local = *now;
    } else {
      auto clock = std::chrono::system_clock::now();
      std::time_t seconds = std::chrono::system_clock::to_time_t(clock);
      localtime_r(&seconds, &local);
      microseconds = long(std::chrono::duration_cast<std::chrono::microseconds>(
                              clock.time_since_epoch())
                              .count() %
                          1000000);
    }
    return formatTime(format.get<std::string>(), local, microseconds, offset);
  }

  /// Python's strftime of a naive datetime: C's, except that %f is the
  /// microseconds and %z, %Z are empty (no time zone).
  std::string formatTime(const std::string &format, const std::tm &time,
                         long microseconds, size_t offset) {
    if (format.size() > 1024)
      fail(offset, "strftime_now()'s format is longer than 1024 bytes");
    if (format.find('\0') != std::string::npos)
      fail(offset, "strftime_now()'s format holds a NUL");
    std::string c;
    for (size_t i = 0; i < format.size(); ++i) {
      if (format[i] != '%' || i + 1 == format.size()) {
        c += format[i];
        continue;
      }
      char directive = format[++i];
      if (directive == 'f') {
        char digits[16];
        std::snprintf(digits, sizeof digits, "%06ld", microseconds);
        c += digits;
      } else if (directive != 'z' && directive != 'Z') {
        c += '%';
        c += directive;
      }
    }
    // No directive writes more than 12 bytes for each of its 2 (%c).
    std::vector<char> buffer(c.size() * 16 + 64);
    size_t written = std::strftime(buffer.data(), buffer.size(), c.c_str(),
                                   &time);
    return std::string(buffer.data(), written);
  }

  json method(const json &self, const std::string &name,
              const Arguments &args, size_t offset) {
    if (self.is_string()) {
      const std::string &s = self.get_ref<const std::string &>();
      if (name == "strip" || name == "lstrip" || name == "rstrip") {
        json chars = args.get(0, nullptr, nullptr);
        return stripChars(s, chars.is_string() ? chars.get<std::string>()
                                               : kWhitespace,
                          name != "rstrip", name != "lstrip");
      }
      if (name == "startswith" || name == "endswith") {
        std::string affix = stringArgument(args, 0, nullptr, "", offset);
        bool at = name == "startswith"
                      ? s.compare(0, affix.size(), affix) == 0
                      : s.size() >= affix.size() &&
                            s.compare(s.size() - affix.size(), affix.size(),
                                      affix) == 0;
        return at;
      }
      if (std::optional<json> result =
              caseOrReplace(name, s, args, nullptr, nullptr, offset))
        return *result;
      if (name == "split")
        return split(s, args.get(0, "sep", nullptr), offset);
    } else if (self.is_object() && !self.contains(kNamespaceKey) &&
               !isCallable(self)) {
      if (name == "get") {
        json key = args.get(0, nullptr, undefined());
        auto found = key.is_string() ? self.find(key.get<std::string>())
                                     : self.end();
        return found != self.end() ? *found : args.get(1, nullptr, nullptr);
      }
      if (name == "items" || name == "keys" || name == "values") {
        json list = json::array();
        for (auto &[key, value] : self.items())
          list.push_back(name == "items"  ? json::array({key, value})
                         : name == "keys" ? json(key)
                                          : value);
        return list;
      }
    }
    fail(offset, "a " + typeName(self) + " has no method '" + name +
                     "' in tfm-serve's Jinja subset");
  }

  json split(const std::string &s, const json &separator, size_t offset) {
    json parts = json::array();
    if (separator.is_null()) {
      size_t at = 0;
      while (true) {
        at = s.find_first_not_of(kWhitespace, at);
        if (at == std::string::npos)
          return parts;
        size_t end = s.find_first_of(kWhitespace, at);
        parts.push_back(s.substr(at, end - at));
        if (end == std::string::npos)
          return parts;
        at = end;
      }
    }
    if (!separator.is_string() || separator.get<std::string>().empty())
      fail(offset, "split()'s separator must be a non-empty string");
    const std::string &sep = separator.get_ref<const std::string &>();
    size_t at = 0;
    for (size_t found; (found = s.find(sep, at)) != std::string::npos;
         at = found + sep.size())
      parts.push_back(s.substr(at, found - at));
    parts.push_back(s.substr(at));
    return parts;
  }

  json filter(const Expr &e) {
    json v = eval(*e.operands[0]);
    return applyFilter(e.name, std::move(v), evalArguments(e, 1), e.offset);
  }

  /// The filter `name` on `v`: `v | name(args)`, or map(name, args)'s on
  /// each item.
  json applyFilter(const std::string &name, json v, const Arguments &args,
                   size_t offset) {
    if (!isKnownFilter(name)) // map's, named by a computed string
      fail(offset, "the filter '" + name +
                       "' is not in tfm-serve's Jinja subset");
    if (name == "default" || name == "d") {
      bool boolean = truthy(args.get(1, "boolean", false));
      bool useDefault = isUndefined(v) || (boolean && !truthy(v));
      return useDefault ? args.get(0, "default_value", "") : v;
    }
    if (name == "tojson")
      return tojson(v, args, offset);
    if (name == "string")
      return text(v);
    if (name == "length" || name == "count") {
      if (v.is_string())
        return codePoints(v.get<std::string>()).size();
      if (v.is_array() || (v.is_object() && !isCallable(v)))
        return v.size() - (v.contains(kNamespaceKey) ? 1 : 0);
      if (isUndefined(v))
        return 0;
      fail(offset, "a " + typeName(v) + " has no length");
    }
    if (name == "list" || name == "reverse") {
      std::vector<json> list = items(v, offset);
      if (name == "reverse" && v.is_string()) {
        std::string joined;
        for (auto it = list.rbegin(); it != list.rend(); ++it)
          joined += it->get<std::string>();
        return joined;
      }
      if (name == "reverse")
        std::reverse(list.begin(), list.end());
      return json(list);
    }
    if (name == "first" || name == "last") {
      std::vector<json> list = items(v, offset);
      if (list.empty())
        return undefined();
      return name == "first" ? list.front() : list.back();
    }
    if (name == "join") {
      std::string separator = stringArgument(args, 0, "d", "", offset);
      json attribute = args.get(1, "attribute", nullptr);
      std::string joined;
      std::vector<json> list = items(v, offset);
      for (size_t i = 0; i < list.size(); ++i)
        joined += (i ? separator : "") +
                  text(attribute.is_null()
                           ? list[i]
                           : attributePath(list[i], attribute, offset));
      return joined;
    }
    if (name == "select" || name == "reject" || name == "selectattr" ||
        name == "rejectattr")
      return selectItems(name, v, args, offset);
    if (name == "map")
      return mapItems(v, args, offset);
    if (name == "unique")
      return uniqueItems(v, args, offset);
    if (name == "items") {
      if (isUndefined(v))
        return json::array();
      if (!v.is_object() || v.contains(kNamespaceKey) || isCallable(v))
        fail(offset, "items needs a dict, not a " + typeName(v));
      json pairs = json::array();
      for (auto &[key, value] : v.items())
        pairs.push_back(json::array({key, value}));
      return pairs;
    }
    if (name == "int" || name == "float" || name == "abs")
      return number(v, name, offset);
    // The rest act on text.
    std::string s = text(v);
    if (name == "trim")
      return stripChars(s, kWhitespace, true, true);
    if (name == "title")
      return wordsTitled(s);
    if (std::optional<json> result =
            caseOrReplace(name, s, args, "old", "new", offset))
      return *result;
    fail(offset, "the filter '" + name + "' is not in the subset");
  }

  /// tojson(indent, separators=, sort_keys=, ensure_ascii=): PythonJson,
  /// with indent positional as in Jinja's own tojson.
  json tojson(const json &v, const Arguments &args, size_t offset) {
    static const std::set<std::string> options = {
        "indent", "separators", "sort_keys", "ensure_ascii"};
    if (args.positional.size() > 1)
      fail(offset, "tojson takes one argument besides its keywords (indent)");
    for (auto &[key, value] : args.keywords) {
      if (!options.count(key))
        fail(offset, "tojson has no argument '" + key + "'");
      if (key == "indent" && !args.positional.empty())
        fail(offset, "tojson is given 'indent' twice");
    }
    PythonJson writer;
    writer.offset = offset;
    json indent = args.get(0, "indent", nullptr);
    if (indent.is_string()) {
      writer.indent = indent.get<std::string>();
    } else if (indent.is_number_integer() || indent.is_boolean()) {
      // ' ' * indent: none for 0 or less, but a new line all the same.
      int64_t n = indent.is_boolean() ? int64_t(indent.get<bool>())
                                      : indent.get<int64_t>();
      if (n > int64_t(kMaxOutputBytes))
        fail(offset, "tojson's indent is longer than the rendered prompt "
                     "may be");
      writer.indent = std::string(size_t(std::max<int64_t>(n, 0)), ' ');
    } else if (!indent.is_null()) {
      fail(offset, "tojson's indent must be an integer or a string, not a " +
                       typeName(indent));
    }
    if (writer.indent)
      writer.itemSeparator = ",";
    json separators = args.get(SIZE_MAX, "separators", nullptr);
    if (!separators.is_null()) {
      if (!separators.is_array() || separators.size() != 2 ||
          !separators[0].is_string() || !separators[1].is_string())
        fail(offset, "tojson's separators must be a list of two strings");
      writer.itemSeparator = separators[0].get<std::string>();
      writer.keySeparator = separators[1].get<std::string>();
    }
    writer.sortKeys = truthy(args.get(SIZE_MAX, "sort_keys", false));
    writer.ensureAscii = truthy(args.get(SIZE_MAX, "ensure_ascii", false));
    writer.write(v);
    return std::move(writer.out);
  }

  /// select(test, args) and reject(...) keep the items a test passes
  /// (fails); selectattr(attribute, test, args) and rejectattr(...) test
  /// an attribute of each. Without a test, the value's truth.
  json selectItems(const std::string &filter, const json &v,
                   const Arguments &args, size_t offset) {
    bool byAttribute = filter == "selectattr" || filter == "rejectattr";
    bool keep = filter == "select" || filter == "selectattr";
    size_t first = byAttribute ? 1 : 0;
    if (byAttribute && args.positional.empty())
      fail(offset, filter + " needs an attribute's name");
    std::optional<std::string> test;
    Arguments testArguments;
    if (args.positional.size() > first) {
      if (!args.positional[first].is_string())
        fail(offset, filter + " needs a test's name, not a " +
                         typeName(args.positional[first]));
      test = args.positional[first].get<std::string>();
      testArguments.positional.assign(args.positional.begin() + first + 1,
                                      args.positional.end());
      testArguments.keywords = args.keywords;
    }
    json kept = json::array();
    for (json &item : items(v, offset)) {
      json tested = byAttribute
                        ? attributePath(item, args.positional[0], offset)
                        : item;
      bool passes = test ? applyTest(*test, tested, testArguments, offset)
                         : truthy(tested);
      if (passes == keep)
        kept.push_back(std::move(item));
    }
    return kept;
  }

  /// map(attribute='a.b', default=d): each item's attribute (d where it
  /// has none); map(filter, args): the filter on each item.
  json mapItems(const json &v, const Arguments &args, size_t offset) {
    json mapped = json::array();
    json attribute = args.get(SIZE_MAX, "attribute", undefined());
    if (!isUndefined(attribute)) {
      json fallback = args.get(SIZE_MAX, "default", undefined());
      for (json &item : items(v, offset)) {
        json value = attributePath(item, attribute, offset);
        mapped.push_back(isUndefined(value) ? fallback : std::move(value));
      }
      return mapped;
    }
    if (args.positional.empty() || !args.positional[0].is_string())
      fail(offset, "map needs a filter's name or attribute=");
    std::string filter = args.positional[0].get<std::string>();
    Arguments rest;
    rest.positional.assign(args.positional.begin() + 1, args.positional.end());
    rest.keywords = args.keywords;
    for (json &item : items(v, offset))
      mapped.push_back(applyFilter(filter, std::move(item), rest, offset));
    return mapped;
  }

  /// unique(case_sensitive=false, attribute=none): the items, each value
  /// (or attribute) once, in the order first seen.
  json uniqueItems(const json &v, const Arguments &args, size_t offset) {
    bool caseSensitive = truthy(args.get(0, "case_sensitive", false));
    json attribute = args.get(1, "attribute", nullptr);
    std::set<std::string> seen;
    json kept = json::array();
    for (json &item : items(v, offset)) {
      json key = attribute.is_null() ? item
                                     : attributePath(item, attribute, offset);
      if (!caseSensitive && key.is_string())
        key = caseMapped(key.get<std::string>(), false);
      if (seen.insert(hashKey(key, offset)).second)
        kept.push_back(std::move(item));
    }
    return kept;
  }

  /// What makes values one in a Python set: equal numbers are one (1, 1.0
  /// and true); lists and dicts cannot be in one.
  std::string hashKey(const json &v, size_t offset) {
    if (v.is_string())
      return "s" + v.get<std::string>();
    if (v.is_boolean())
      return v.get<bool>() ? "n1" : "n0";
    if (v.is_number_float()) {
      double d = v.get<double>();
      return std::trunc(d) == d && std::fabs(d) < 9.2e18
                 ? "n" + std::to_string(int64_t(d))
                 : "f" + floatText(d);
    }
    if (v.is_number())
      return "n" + v.dump();
    if (v.is_null())
      return "z";
    if (isUndefined(v))
      return "u";
    fail(offset, "unique needs values a set can hold, not a " + typeName(v));
  }

  /// Jinja's attribute getter (selectattr, map, join, unique): "a.b.0"
  /// walks dict keys and list indices (parts of digits are indices), an
  /// integer is an index. Undefined where an item lacks one; an error
  /// past that, as Jinja's.
  json attributePath(const json &item, const json &attribute, size_t offset) {
    std::vector<json> parts;
    if (attribute.is_number_integer()) {
      parts.push_back(attribute);
    } else if (attribute.is_string()) {
      for (const json &part :
           split(attribute.get<std::string>(), ".", offset)) {
        const std::string &s = part.get_ref<const std::string &>();
        bool index = !s.empty() &&
                     s.find_first_not_of("0123456789") == std::string::npos;
        // Past int64, an index no list reaches.
        parts.push_back(!index       ? json(s)
                        : s.size() > 18 ? json(INT64_MAX)
                                        : json(std::stoll(s)));
      }
    } else {
      fail(offset, "an attribute is named by a string or an integer, not a " +
                       typeName(attribute));
    }
    const json *value = &item;
    json holder;
    for (const json &part : parts) {
      if (isUndefined(*value))
        fail(offset, "the value is undefined: it has no " +
                         (part.is_string() ? "'" + part.get<std::string>() + "'"
                                           : repr(part)));
      if (const json *stored = storedMember(*value, part)) {
        value = stored;
      } else {
        json next = memberOf(*value, part);
        holder = std::move(next);
        value = &holder;
      }
    }
    return *value;
  }

  /// What a filter and a string method of the same name both do
  /// (`x | upper`, `x.upper()`); `replace`'s arguments may be named
  /// `oldName` and `newName`. nullopt for another name.
  std::optional<json> caseOrReplace(const std::string &name,
                                    const std::string &s,
                                    const Arguments &args, const char *oldName,
                                    const char *newName, size_t offset) {
    if (name == "upper" || name == "lower")
      return caseMapped(s, name == "upper");
    if (name == "capitalize")
      return capitalized(s);
    if (name == "title")
      return titled(s);
    if (name == "replace")
      return replaced(s, stringArgument(args, 0, oldName, "", offset),
                      stringArgument(args, 1, newName, "", offset));
    return std::nullopt;
  }

  json number(const json &v, const std::string &name, size_t offset) {
    if (name == "abs") {
      if (!v.is_number())
        fail(offset, "abs needs a number, not a " + typeName(v));
      return v.is_number_float() ? json(std::fabs(v.get<double>()))
                                 : json(std::llabs(v.get<int64_t>()));
    }
    double d = 0;
    if (v.is_number() || v.is_boolean()) {
      d = v.is_boolean() ? double(v.get<bool>()) : v.get<double>();
    } else if (v.is_string()) {
      // Jinja's int/float: a failed conversion gives the default, 0.
      try {
        size_t used = 0;
        d = std::stod(v.get<std::string>(), &used);
        if (used != v.get<std::string>().size())
          d = 0;
      } catch (const std::exception &) {
        d = 0;
      }
    }
    if (name == "float")
      return d;
    if (!std::isfinite(d) || std::fabs(d) > 9.2e18)
      fail(offset, "the value does not fit an integer");
    return int64_t(d);
  }

  bool test(const Expr &e) {
    json v = eval(*e.operands[0]);
    return applyTest(e.name, v, evalArguments(e, 1), e.offset);
  }

  /// The test `name` on `v`: `v is name(args)`, or select(name, args)'s
  /// on each item.
  bool applyTest(const std::string &name, const json &v, const Arguments &args,
                 size_t offset) {
    if (!isKnownTest(name)) // select's, named by a computed string
      fail(offset, "the test '" + name +
                       "' is not in tfm-serve's Jinja subset");
    size_t arity = testArity(name);
    if (args.positional.size() != arity || !args.keywords.empty())
      fail(offset, "the test '" + name + "' takes " +
                       (arity ? "one argument" : "no arguments"));
    if (arity == 1)
      return compareTest(name, v, args.positional[0], offset);
    if (name == "defined") return !isUndefined(v);
    if (name == "undefined") return isUndefined(v);
    if (name == "none") return v.is_null();
    if (name == "string") return v.is_string();
    if (name == "number") return v.is_number();
    if (name == "integer") return v.is_number_integer();
    if (name == "float") return v.is_number_float();
    if (name == "boolean") return v.is_boolean();
    if (name == "true") return v.is_boolean() && v.get<bool>();
    if (name == "false") return v.is_boolean() && !v.get<bool>();
    if (name == "mapping") return v.is_object() && !isCallable(v);
    // Jinja's Undefined iterates as nothing and has a length: both.
    if (name == "iterable" || name == "sequence")
      return v.is_array() || (v.is_object() && !isCallable(v)) ||
             v.is_string() || isUndefined(v);
    if (name == "odd" || name == "even") {
      if (!v.is_number_integer())
        fail(offset, "'" + name + "' tests an integer, not a " + typeName(v));
      return (v.get<int64_t>() % 2 != 0) == (name == "odd");
    }
    fail(offset, "the test '" + name + "' is not in the subset");
  }

  /// The tests that compare the value with their argument.
  bool compareTest(const std::string &name, const json &v, const json &other,
                   size_t offset) {
    if (name == "equalto" || name == "eq" || name == "==")
      return equal(v, other);
    if (name == "ne" || name == "!=")
      return !equal(v, other);
    if (name == "in")
      return contains(other, v, offset);
    if (name == "sameas")
      return sameAs(v, other, offset);
    int order = compare(v, other, offset);
    if (name == "lt" || name == "lessthan" || name == "<")
      return order < 0;
    if (name == "le" || name == "<=")
      return order <= 0;
    if (name == "gt" || name == "greaterthan" || name == ">")
      return order > 0;
    return order >= 0; // ge, >=
  }

  /// Python's `is`: none, true and false are each one object. The other
  /// values here are JSON, without an identity to compare, so `sameas`
  /// answers only where one side is none, true or false.
  static bool sameAs(const json &a, const json &b, size_t offset) {
    auto singleton = [](const json &x) { return x.is_null() || x.is_boolean(); };
    if (!singleton(a) && !singleton(b))
      fail(offset, "'sameas' compares with none, true or false in "
                   "tfm-serve's Jinja subset");
    return a.type() == b.type() && a == b;
  }

  static double asDouble(const json &v) {
    return v.is_boolean() ? double(v.get<bool>()) : v.get<double>();
  }
  static bool isNumeric(const json &v) { return v.is_number() || v.is_boolean(); }

  /// Python's ==: numbers (booleans among them) by value, lists item by
  /// item, dicts by their keys in any order (Mistral's templates compare
  /// messages: `message == user_messages[-1]`).
  static bool equal(const json &a, const json &b) {
    if (isNumeric(a) && isNumeric(b))
      return asDouble(a) == asDouble(b);
    if (isUndefined(a) || isUndefined(b))
      return isUndefined(a) && isUndefined(b);
    if (a.is_array() && b.is_array())
      return a.size() == b.size() &&
             std::equal(a.begin(), a.end(), b.begin(), equal);
    if (a.is_object() && b.is_object()) {
      if (a.size() != b.size())
        return false;
      for (auto &[key, value] : a.items()) {
        auto found = b.find(key);
        if (found == b.end() || !equal(value, *found))
          return false;
      }
      return true;
    }
    return a == b;
  }

  /// -1, 0 or 1: how Python orders two numbers or two strings; other pairs
  /// fail.
  static int compare(const json &a, const json &b, size_t offset) {
    if (isNumeric(a) && isNumeric(b))
      return asDouble(a) < asDouble(b) ? -1 : asDouble(a) > asDouble(b);
    if (a.is_string() && b.is_string()) {
      int order = a.get_ref<const std::string &>().compare(
          b.get_ref<const std::string &>());
      return (order > 0) - (order < 0);
    }
    fail(offset, "cannot compare a " + typeName(a) + " with a " + typeName(b));
  }

  json binary(const Expr &e) {
    const std::string &op = e.name;
    json a = eval(*e.operands[0]);
    if (op == "and")
      return truthy(a) ? eval(*e.operands[1]) : a;
    if (op == "or")
      return truthy(a) ? a : eval(*e.operands[1]);
    json b = eval(*e.operands[1]);
    if (op == "==" || op == "!=" || op == "in" || op == "not in" ||
        op == "<" || op == "<=" || op == ">" || op == ">=")
      return compareTest(op == "not in" ? "in" : op, a, b, e.offset) !=
             (op == "not in");
    if (op == "~")
      return text(a) + text(b);
    if (op == "+" && a.is_string() && b.is_string())
      return a.get_ref<const std::string &>() +
             b.get_ref<const std::string &>();
    if (op == "+" && a.is_array() && b.is_array()) {
      json joined = a;
      joined.insert(joined.end(), b.begin(), b.end());
      return joined;
    }
    if (op == "*" && a.is_string() && b.is_number_integer()) {
      int64_t times = b.get<int64_t>();
      if (times > 0 && a.get<std::string>().size() * size_t(times) >
                           kMaxOutputBytes)
        fail(e.offset, "the repeated string is too long");
      std::string repeated;
      for (int64_t i = 0; i < times; ++i)
        repeated += a.get<std::string>();
      return repeated;
    }
    if (!isNumeric(a) || !isNumeric(b))
      fail(e.offset, "cannot apply '" + op + "' to a " + typeName(a) +
                         " and a " + typeName(b));
    bool integers = !a.is_number_float() && !b.is_number_float();
    double x = asDouble(a), y = asDouble(b);
    if ((op == "/" || op == "//" || op == "%") && y == 0)
      fail(e.offset, "division by zero");
    if (op == "/")
      return x / y;
    if (integers) {
      // Python's integers do not overflow; past int64 the template fails
      // (found by fuzz-chat-template: 4928609403746240512 * 22222222).
      const double limit = 9223372036854775808.0; // 2^63
      if (x >= limit || x < -limit || y >= limit || y < -limit)
        fail(e.offset, "an integer operand is out of range");
      int64_t i = int64_t(x), j = int64_t(y), result = 0;
      bool overflow = false;
      if (op == "+")
        overflow = __builtin_add_overflow(i, j, &result);
      else if (op == "-")
        overflow = __builtin_sub_overflow(i, j, &result);
      else if (op == "*")
        overflow = __builtin_mul_overflow(i, j, &result);
      else
        overflow = i == INT64_MIN && j == -1;
      if (overflow)
        fail(e.offset, "integer overflow in '" + op + "'");
      if (op == "+" || op == "-" || op == "*")
        return result;
      // Python's floor division and modulo: the sign of the divisor.
      int64_t q = i / j - ((i % j != 0) && ((i < 0) != (j < 0)));
      return op == "//" ? json(q) : json(i - q * j);
    }
    if (op == "+") return x + y;
    if (op == "-") return x - y;
    if (op == "*") return x * y;
    double q = std::floor(x / y);
    return op == "//" ? q : x - q * y;
  }

  bool contains(const json &container, const json &item, size_t offset) {
    if (container.is_string()) {
      if (!item.is_string())
        fail(offset, "'in <string>' needs a string on the left, not a " +
                         typeName(item));
      return container.get<std::string>().find(item.get<std::string>()) !=
             std::string::npos;
    }
    if (container.is_array())
      return std::any_of(container.begin(), container.end(),
                         [&](const json &x) { return equal(x, item); });
    if (container.is_object() && !isCallable(container))
      return item.is_string() && container.contains(item.get<std::string>());
    if (isUndefined(container))
      return false;
    fail(offset, "'in' needs a string, list or dict, not a " +
                     typeName(container));
  }
};

} // namespace

bool ChatTemplate::render(const json &variables, std::string &out,
                          Failure &failure, std::string &error,
                          const std::tm *now) const {
  out.clear();
  try {
    Renderer(variables, out, now).run(*body);
  } catch (const RenderError &e) {
    failure = e.failure;
    error = e.failure == Failure::Raised
                ? e.message
                : describePosition(source, e.offset) + ": " + e.message;
    return false;
  }
  return true;
}
