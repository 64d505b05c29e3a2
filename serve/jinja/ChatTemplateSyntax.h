//===- ChatTemplateSyntax.h - a parsed chat template ----------------------===//
//
// What ChatTemplateParse.cpp builds and ChatTemplateRender.cpp walks: the
// template's statements (Node) and expressions (Expr). Every node keeps the
// offset in the source where it starts, to say where a render failed.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_SERVE_JINJA_CHATTEMPLATESYNTAX_H
#define TFM_SERVE_JINJA_CHATTEMPLATESYNTAX_H

#include <nlohmann/json.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace tfm::serve::chat_template {

struct Expr;
using ExprPtr = std::unique_ptr<Expr>;

struct Expr {
  enum class Kind {
    Literal,     // value
    Name,        // name
    Attribute,   // operands[0].name
    Subscript,   // operands[0][operands[1]]
    Slice,       // operands[0][operands[1]:operands[2]:operands[3]] (null:
                 // omitted)
    Call,        // operands[0](operands[1...], keywords)
    Filter,      // operands[0] | name(operands[1...], keywords)
    Test,        // operands[0] is [not] name[(operands[1...], keywords)]
    Unary,       // name operands[0] (name: "not", "-", "+")
    Binary,      // operands[0] name operands[1] ("and", "==", "not in", ...)
    Conditional, // operands[1] if operands[0] else operands[2] (null: none)
    List,        // [operands...]
    Dict,        // {keywords' expressions by keys in operands (pairs)}
  };
  Kind kind;
  size_t offset;
  nlohmann::ordered_json value;
  std::string name;
  bool negated = false; // Test: `is not`
  std::vector<ExprPtr> operands;
  std::vector<std::pair<std::string, ExprPtr>> keywords;
  /// Levels of expressions from this one down to its deepest operand:
  /// evaluation and destruction recurse that deep, so the parser bounds it.
  unsigned depth = 1;
  /// Whether evaluating it may call a macro, whose statements may change
  /// variables (a namespace's attributes) while it is evaluated.
  bool callsMacro = false;

  Expr(Kind kind, size_t offset) : kind(kind), offset(offset) {}
};

struct Node {
  enum class Kind { Text, Output, If, For, Set, Macro };
  Kind kind;
  size_t offset;
  std::string text;                 // Text
  ExprPtr value;                    // Output, Set, For (the iterable)
  // If: one (condition, body) per if/elif; `otherwise` the else body.
  std::vector<std::pair<ExprPtr, std::vector<Node>>> branches;
  std::vector<Node> otherwise;      // If's else, For's else (no items)
  // For: loop variables; Set: name [attr]; Macro: name, then parameters.
  std::vector<std::string> targets;
  ExprPtr filter;                   // For: `if cond` (null: none)
  std::vector<Node> body;           // For, Macro
  std::vector<ExprPtr> defaults;    // Macro: one a parameter (null: none)

  Node(Kind kind, size_t offset) : kind(kind), offset(offset) {}
};

/// "line L, column C" of `offset` in `source`.
std::string describePosition(const std::string &source, size_t offset);

/// Whether a filter, test or function of that name is in the subset.
bool isKnownFilter(const std::string &name);
bool isKnownTest(const std::string &name);
bool isKnownFunction(const std::string &name);

/// How many arguments a test of the subset takes besides the value tested
/// (`x is equalto 3`: one; `x is defined`: none).
size_t testArity(const std::string &name);

} // namespace tfm::serve::chat_template

#endif // TFM_SERVE_JINJA_CHATTEMPLATESYNTAX_H
