//===- ChatTemplate.h - a model's chat template, in a subset of Jinja -----===//
//
// Hugging Face models say how a conversation becomes a prompt with a Jinja
// template (tokenizer_config.json's `chat_template`; GGUF's
// `tokenizer.chat_template`), rendered by transformers'
// apply_chat_template with `messages`, `add_generation_prompt` and the
// special tokens' spellings (`bos_token`, `eos_token`, ...). tfm-serve
// renders it for /v1/chat/completions with the subset of Jinja those
// templates use, as transformers configures Jinja (trim_blocks and
// lstrip_blocks on):
//
//   text, {{ expr }}, {# comments #}, whitespace control ({%- -%} {{- -}})
//   {% if %} {% elif %} {% else %} {% endif %}
//   {% for x in expr [if cond] %} ... {% else %} {% endfor %}, with loop.index,
//     index0, revindex, revindex0, first, last, length, previtem, nextitem;
//     `for k, v in d.items()` unpacks pairs
//   {% set name = expr %}, {% set ns.attr = expr %} (namespace objects)
//   {% generation %} ... {% endgeneration %} (transformers' marker of an
//     assistant's text: its body, rendered as is)
//   {% macro name(a, b=default) %} ... {% endmacro %} at the top level,
//     called as name(x, b=y) (recursively too, 32 calls deep at most): the
//     call's value is the body's text; the body sees its arguments and the
//     template's variables
//   literals: 'strings' "strings" 12 1.5 true/false/none (and True/False/
//     None), [lists], {'dicts': ...}
//   operators, by Jinja's precedence: `a if c else b`, or, and, not,
//     == != < <= > >= in, `not in`, + -, ~, * / // %, unary - +,
//     x.attr, x[key], x[a:b:c], f(args, key=value), x | filter, x is test
//   functions: raise_exception(message), namespace(k=v, ...), range(...),
//     strftime_now(format) (the local time, as later transformers define it)
//   filters: trim, length/count, upper, lower, capitalize, title, string,
//     int, float, tojson(indent, separators=, sort_keys=, ensure_ascii=),
//     join(sep, attribute), first, last, default/d, replace, list,
//     reverse, abs, items, unique, select/reject(test, args),
//     selectattr/rejectattr(attribute, test, args), map(filter, args) and
//     map(attribute=, default=); tojson is transformers 4.42+'s, which
//     pass tools to templates: json.dumps with those options, keys in
//     their order, non-ASCII kept, a plain string (not Jinja's own, which
//     sorts keys and escapes HTML)
//   tests: defined, undefined, none, string, number, integer, float,
//     boolean, true, false, mapping, iterable, sequence, odd, even, and with
//     an argument (`x is eq 3`, `x is eq(3)`): equalto/eq/==, ne/!=,
//     lt/lessthan/<, le/<=, gt/greaterthan/>, ge/>=, in, sameas (with
//     none, true or false: JSON values have no identity)
//   methods: strings' strip/lstrip/rstrip, split, startswith, endswith,
//     upper, lower, title, capitalize, replace; dicts' get, items, keys,
//     values
//
// A template using anything else is refused when it is parsed (filters,
// tests, functions and statements are checked then, and the tests and
// filters that select() and map() name in a string); methods, and names
// select() and map() are given in computed strings, are checked when
// called. Values are JSON values; an undefined name, attribute or
// key is Jinja's Undefined (empty when printed, false when tested).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_SERVE_JINJA_CHATTEMPLATE_H
#define TFM_SERVE_JINJA_CHATTEMPLATE_H

#include <nlohmann/json.hpp>

#include <ctime>
#include <memory>
#include <string>

namespace tfm::serve {

namespace chat_template {
struct Node;
} // namespace chat_template

class ChatTemplate {
public:
  /// Parses `source`; on failure returns null and says where and why in
  /// `error` ("line 3, column 12: ...").
  static std::unique_ptr<ChatTemplate> parse(const std::string &source,
                                             std::string &error);
  ~ChatTemplate();

  /// Why a render failed: the template raised (raise_exception: a fault of
  /// the conversation, whose message the caller shows), or it did
  /// something this subset or its values do not allow.
  enum class Failure { Raised, Invalid };

  /// Renders with `variables` (a JSON object: messages,
  /// add_generation_prompt, bos_token, ...). Returns false and sets
  /// `failure` and `error` when the template fails. strftime_now() formats
  /// `now`, a local time, where given (a test fixes the clock with it),
  /// else the clock's local time.
  bool render(const nlohmann::ordered_json &variables, std::string &out,
              Failure &failure, std::string &error,
              const std::tm *now = nullptr) const;

  /// Whether the template loops over a message's `content` (llava-hf's,
  /// Qwen2-VL's, Gemma 3's: `for part in message['content']`), so that it
  /// takes content as a list of typed parts ({"type": "text", "text": ...},
  /// {"type": "image"}) rather than a string, as vLLM decides.
  bool readsContentParts() const { return contentParts; }

private:
  ChatTemplate();
  bool contentParts = false;
  std::string source;
  std::unique_ptr<std::vector<chat_template::Node>> body;
};

} // namespace tfm::serve

#endif // TFM_SERVE_JINJA_CHATTEMPLATE_H
