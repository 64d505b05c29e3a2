//===- ChatTemplateRender.cpp - rendering a parsed chat template ----------===//
//
// Walks the syntax of ChatTemplateSyntax.h over JSON values with Jinja's
// (that is, Python's) semantics: truthiness, `and`/`or` returning an
// operand, str() and repr() when printing, Undefined for what is missing
// (a JSON "discarded" value here). Scopes follow Jinja's: a loop body's
// assignments stay in the loop, which is why templates carry state out of
// loops in namespace objects. A render is bounded (output size, loop
// iterations), since a template comes from a model file.
//
//===----------------------------------------------------------------------===//

#include "serve/jinja/ChatTemplate.h"
#include "serve/jinja/ChatTemplateSyntax.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>

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

/// Marks a JSON object as a namespace() (assignable with `set ns.x`).
const char *const kNamespaceKey = "\x01namespace";

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
    return v.contains(kNamespaceKey) ? "namespace" : "dict";
  default: return "undefined";
  }
}

std::string floatText(double d) {
  if (std::isnan(d))
    return "nan";
  if (std::isinf(d))
    return d > 0 ? "inf" : "-inf";
  return json(d).dump(); // shortest round trip, "1.0" for whole numbers
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

/// Python's json.dumps(v, sort_keys=True[, indent]) as Jinja's tojson
/// calls it, made safe for HTML as Jinja makes it (<, >, &, ' escaped).
void pythonJson(const json &v, int indent, int depth, std::string &out) {
  auto newline = [&](int level) {
    if (indent >= 0)
      out += '\n' + std::string(size_t(indent * level), ' ');
  };
  const char *itemSeparator = indent >= 0 ? "," : ", ";
  switch (v.type()) {
  case json::value_t::array:
  case json::value_t::object: {
    bool isArray = v.is_array();
    if (v.empty() || (!isArray && v.size() == 1 && v.contains(kNamespaceKey))) {
      out += isArray ? "[]" : "{}";
      return;
    }
    out += isArray ? '[' : '{';
    // Jinja's tojson sorts keys (its policy json.dumps_kwargs).
    std::vector<std::pair<std::string, const json *>> entries;
    for (auto &[key, value] : v.items())
      if (isArray || key != kNamespaceKey)
        entries.emplace_back(key, &value);
    if (!isArray)
      std::sort(entries.begin(), entries.end(),
                [](auto &a, auto &b) { return a.first < b.first; });
    bool first = true;
    for (auto &[key, value] : entries) {
      if (!first)
        out += itemSeparator;
      first = false;
      newline(depth + 1);
      if (!isArray) {
        pythonJson(json(key), indent, depth + 1, out);
        out += ": ";
      }
      pythonJson(*value, indent, depth + 1, out);
    }
    newline(depth);
    out += isArray ? ']' : '}';
    return;
  }
  case json::value_t::string: {
    // ensure_ascii: every non-ASCII code point as \uXXXX (pairs past BMP).
    // A template's literals may hold bytes that are not UTF-8: each becomes
    // U+FFFD, as Python decoding with errors="replace" would make it.
    std::string s = v.dump(-1, ' ', /*ensure_ascii=*/true,
                           json::error_handler_t::replace);
    for (char c : s) {
      if (c == '<') out += "\\u003c";
      else if (c == '>') out += "\\u003e";
      else if (c == '&') out += "\\u0026";
      else if (c == '\'') out += "\\u0027";
      else out += c;
    }
    return;
  }
  case json::value_t::number_float: {
    double d = v.get<double>();
    out += std::isnan(d) ? "NaN" : std::isinf(d) ? (d > 0 ? "Infinity"
                                                          : "-Infinity")
                                                 : floatText(d);
    return;
  }
  case json::value_t::discarded:
    out += "null"; // Jinja would fail; null is what a caller expects
    return;
  default:
    out += v.dump();
  }
}

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

class Renderer {
public:
  Renderer(const json &variables, std::string &out) : out(out) {
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
  std::string &out;
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
    if (out.size() + s.size() > kMaxOutputBytes)
      fail(offset, "the rendered prompt passes " +
                       std::to_string(kMaxOutputBytes >> 20) + " MiB");
    out += s;
  }

  json *lookup(const std::string &name) {
    for (auto scope = scopes.rbegin(); scope != scopes.rend(); ++scope)
      if (auto found = scope->find(name); found != scope->end())
        return &found->second;
    return nullptr;
  }

  void run(const Node &node) {
    countStep(node.offset);
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
    }
  }

  std::vector<json> items(const json &iterable, size_t offset) {
    std::vector<json> list;
    if (iterable.is_array()) {
      list.assign(iterable.begin(), iterable.end());
    } else if (iterable.is_object()) {
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
      json *found = lookup(e.name);
      return found ? *found : undefined();
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
    case Expr::Kind::Conditional:
      if (truthy(eval(*e.operands[0])))
        return eval(*e.operands[1]);
      return e.operands[2] ? eval(*e.operands[2]) : undefined();
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
      const json *base = view(*e.operands[0], baseHolder);
      json key = e.kind == Expr::Kind::Attribute ? json(e.name)
                                                 : eval(*e.operands[1]);
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

  std::vector<json> evalAll(const Expr &e, size_t first) {
    std::vector<json> values;
    for (size_t i = first; i < e.operands.size(); ++i)
      values.push_back(eval(*e.operands[i]));
    return values;
  }

  const Expr *keyword(const Expr &e, const char *name) {
    for (auto &[key, value] : e.keywords)
      if (key == name)
        return value.get();
    return nullptr;
  }

  /// The i-th argument (or keyword `name`), or `fallback` when absent.
  json argument(const Expr &e, size_t first, size_t i, const char *name,
                json fallback) {
    if (first + i < e.operands.size())
      return eval(*e.operands[first + i]);
    if (const Expr *k = name ? keyword(e, name) : nullptr)
      return eval(*k);
    return fallback;
  }

  std::string stringArgument(const Expr &e, size_t first, size_t i,
                             const char *name, const std::string &fallback) {
    json v = argument(e, first, i, name, fallback);
    if (!v.is_string())
      fail(e.offset, std::string("'") + (name ? name : "the argument") +
                         "' must be a string, not a " + typeName(v));
    return v.get<std::string>();
  }

  json call(const Expr &e) {
    const Expr &callee = *e.operands[0];
    if (callee.kind == Expr::Kind::Name) {
      if (callee.name == "raise_exception")
        throw RenderError{ChatTemplate::Failure::Raised, e.offset,
                          text(argument(e, 1, 0, nullptr, ""))};
      if (callee.name == "namespace") {
        json ns = json::object();
        ns[kNamespaceKey] = true;
        for (auto &[key, value] : e.keywords)
          ns[key] = eval(*value);
        return ns;
      }
      if (callee.name == "range")
        return range(e);
    }
    if (callee.kind == Expr::Kind::Attribute)
      return method(eval(*callee.operands[0]), callee.name, e);
    fail(e.offset, "only raise_exception, namespace, range and methods can "
                   "be called here");
  }

  json range(const Expr &e) {
    std::vector<json> args = evalAll(e, 1);
    if (args.empty() || args.size() > 3 ||
        !std::all_of(args.begin(), args.end(),
                     [](const json &a) { return a.is_number_integer(); }))
      fail(e.offset, "range() takes one to three integers");
    int64_t start = args.size() > 1 ? args[0].get<int64_t>() : 0;
    int64_t stop = args.size() > 1 ? args[1].get<int64_t>()
                                   : args[0].get<int64_t>();
    int64_t step = args.size() > 2 ? args[2].get<int64_t>() : 1;
    if (step == 0)
      fail(e.offset, "range()'s step cannot be zero");
    json list = json::array();
    for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
      if (list.size() >= kMaxIterations)
        fail(e.offset, "range() is longer than " +
                           std::to_string(kMaxIterations));
      list.push_back(i);
    }
    return list;
  }

  json method(const json &self, const std::string &name, const Expr &e) {
    if (self.is_string()) {
      const std::string &s = self.get_ref<const std::string &>();
      if (name == "strip" || name == "lstrip" || name == "rstrip") {
        json chars = argument(e, 1, 0, nullptr, nullptr);
        return stripChars(s, chars.is_string() ? chars.get<std::string>()
                                               : kWhitespace,
                          name != "rstrip", name != "lstrip");
      }
      if (name == "startswith" || name == "endswith") {
        std::string affix = stringArgument(e, 1, 0, nullptr, "");
        bool at = name == "startswith"
                      ? s.compare(0, affix.size(), affix) == 0
                      : s.size() >= affix.size() &&
                            s.compare(s.size() - affix.size(), affix.size(),
                                      affix) == 0;
        return at;
      }
      if (std::optional<json> result =
              caseOrReplace(name, s, e, nullptr, nullptr))
        return *result;
      if (name == "split")
        return split(s, argument(e, 1, 0, "sep", nullptr), e);
    } else if (self.is_object() && !self.contains(kNamespaceKey)) {
      if (name == "get") {
        json key = argument(e, 1, 0, nullptr, undefined());
        auto found = key.is_string() ? self.find(key.get<std::string>())
                                     : self.end();
        return found != self.end() ? *found
                                   : argument(e, 1, 1, nullptr, nullptr);
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
    fail(e.offset, "a " + typeName(self) + " has no method '" + name +
                       "' in tfm-serve's Jinja subset");
  }

  json split(const std::string &s, const json &separator, const Expr &e) {
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
      fail(e.offset, "split()'s separator must be a non-empty string");
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
    const std::string &name = e.name;
    if (name == "default" || name == "d") {
      bool boolean = truthy(argument(e, 1, 1, "boolean", false));
      bool useDefault = isUndefined(v) || (boolean && !truthy(v));
      return useDefault ? argument(e, 1, 0, "default_value", "") : v;
    }
    if (name == "tojson") {
      json indent = argument(e, 1, 0, "indent", nullptr);
      if (!indent.is_null() && !indent.is_number_integer())
        fail(e.offset, "tojson's indent must be an integer");
      std::string out;
      pythonJson(v, indent.is_null() ? -1 : int(indent.get<int64_t>()), 0,
                 out);
      return out;
    }
    if (name == "string")
      return text(v);
    if (name == "length" || name == "count") {
      if (v.is_string())
        return codePoints(v.get<std::string>()).size();
      if (v.is_array() || v.is_object())
        return v.size() - (v.contains(kNamespaceKey) ? 1 : 0);
      if (isUndefined(v))
        return 0;
      fail(e.offset, "a " + typeName(v) + " has no length");
    }
    if (name == "list" || name == "reverse") {
      std::vector<json> list = items(v, e.offset);
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
      std::vector<json> list = items(v, e.offset);
      if (list.empty())
        return undefined();
      return name == "first" ? list.front() : list.back();
    }
    if (name == "join") {
      std::string separator = stringArgument(e, 1, 0, "d", "");
      std::string joined;
      std::vector<json> list = items(v, e.offset);
      for (size_t i = 0; i < list.size(); ++i)
        joined += (i ? separator : "") + text(list[i]);
      return joined;
    }
    if (name == "int" || name == "float" || name == "abs")
      return number(v, name, e);
    // The rest act on text.
    std::string s = text(v);
    if (name == "trim")
      return stripChars(s, kWhitespace, true, true);
    if (std::optional<json> result = caseOrReplace(name, s, e, "old", "new"))
      return *result;
    fail(e.offset, "the filter '" + name + "' is not in the subset");
  }

  /// What a filter and a string method of the same name both do
  /// (`x | upper`, `x.upper()`); `replace`'s arguments may be named
  /// `oldName` and `newName`. nullopt for another name.
  std::optional<json> caseOrReplace(const std::string &name,
                                    const std::string &s, const Expr &e,
                                    const char *oldName, const char *newName) {
    if (name == "upper" || name == "lower")
      return caseMapped(s, name == "upper");
    if (name == "capitalize")
      return capitalized(s);
    if (name == "title")
      return titled(s);
    if (name == "replace")
      return replaced(s, stringArgument(e, 1, 0, oldName, ""),
                      stringArgument(e, 1, 1, newName, ""));
    return std::nullopt;
  }

  json number(const json &v, const std::string &name, const Expr &e) {
    if (name == "abs") {
      if (!v.is_number())
        fail(e.offset, "abs needs a number, not a " + typeName(v));
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
      fail(e.offset, "the value does not fit an integer");
    return int64_t(d);
  }

  bool test(const Expr &e) {
    json v = eval(*e.operands[0]);
    const std::string &name = e.name;
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
    if (name == "mapping") return v.is_object();
    if (name == "iterable") return v.is_array() || v.is_object() || v.is_string();
    if (name == "sequence") return v.is_array() || v.is_object() || v.is_string();
    if (name == "odd" || name == "even") {
      if (!v.is_number_integer())
        fail(e.offset, "'" + name + "' tests an integer, not a " + typeName(v));
      return (v.get<int64_t>() % 2 != 0) == (name == "odd");
    }
    fail(e.offset, "the test '" + name + "' is not in the subset");
  }

  static double asDouble(const json &v) {
    return v.is_boolean() ? double(v.get<bool>()) : v.get<double>();
  }
  static bool isNumeric(const json &v) { return v.is_number() || v.is_boolean(); }

  bool equal(const json &a, const json &b) {
    if (isNumeric(a) && isNumeric(b))
      return asDouble(a) == asDouble(b);
    if (isUndefined(a) || isUndefined(b))
      return isUndefined(a) && isUndefined(b);
    return a == b;
  }

  json binary(const Expr &e) {
    const std::string &op = e.name;
    json a = eval(*e.operands[0]);
    if (op == "and")
      return truthy(a) ? eval(*e.operands[1]) : a;
    if (op == "or")
      return truthy(a) ? a : eval(*e.operands[1]);
    json b = eval(*e.operands[1]);
    if (op == "==")
      return equal(a, b);
    if (op == "!=")
      return !equal(a, b);
    if (op == "in" || op == "not in")
      return contains(b, a, e) == (op == "in");
    if (op == "~")
      return text(a) + text(b);
    if (op == "<" || op == "<=" || op == ">" || op == ">=") {
      int order;
      if (isNumeric(a) && isNumeric(b))
        order = asDouble(a) < asDouble(b) ? -1 : asDouble(a) > asDouble(b);
      else if (a.is_string() && b.is_string())
        order = a.get<std::string>().compare(b.get<std::string>());
      else
        fail(e.offset, "cannot compare a " + typeName(a) + " with a " +
                           typeName(b));
      return op == "<" ? order < 0 : op == "<=" ? order <= 0
                         : op == ">" ? order > 0 : order >= 0;
    }
    if (op == "+" && a.is_string() && b.is_string())
      return a.get<std::string>() + b.get<std::string>();
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

  bool contains(const json &container, const json &item, const Expr &e) {
    if (container.is_string()) {
      if (!item.is_string())
        fail(e.offset, "'in <string>' needs a string on the left, not a " +
                           typeName(item));
      return container.get<std::string>().find(item.get<std::string>()) !=
             std::string::npos;
    }
    if (container.is_array())
      return std::any_of(container.begin(), container.end(),
                         [&](const json &x) { return equal(x, item); });
    if (container.is_object())
      return item.is_string() && container.contains(item.get<std::string>());
    if (isUndefined(container))
      return false;
    fail(e.offset, "'in' needs a string, list or dict, not a " +
                       typeName(container));
  }
};

} // namespace

bool ChatTemplate::render(const json &variables, std::string &out,
                          Failure &failure, std::string &error) const {
  out.clear();
  try {
    Renderer(variables, out).run(*body);
  } catch (const RenderError &e) {
    failure = e.failure;
    error = e.failure == Failure::Raised
                ? e.message
                : describePosition(source, e.offset) + ": " + e.message;
    return false;
  }
  return true;
}
