//===- JsonDepth.h - JSON parsed only when nested boundedly -----*- C++ -*-===//
//
// llvm::json's parser (and the Value it builds, when destroyed) recurses
// once per nested array or object, so a file of 100 000 '[' overflows the
// stack before any check of ours runs. Every JSON text the frontend reads
// (config.json and the other model files, tokenizer files, a safetensors
// header) is measured first by a scan that counts brackets outside
// strings, and refused past a depth no real file comes near: real
// tokenizer.json files nest about 6 levels.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FORMATS_JSONDEPTH_H
#define TFM_FRONTEND_FORMATS_JSONDEPTH_H

#include "frontend/formats/ErrorMessages.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"

#include <algorithm>
#include <cstddef>

namespace mlir::tfm {

/// The deepest JSON nesting the frontend parses: far above any model
/// file's, far below what overflows the stack (also under ASan).
constexpr size_t kMaxJsonDepth = 512;

/// The deepest nesting of arrays and objects in `text`, counting brackets
/// outside strings (escapes included); malformed text gets a number too,
/// and the parser says what is wrong with it.
inline size_t jsonNestingDepth(llvm::StringRef text) {
  size_t depth = 0, deepest = 0;
  bool inString = false, escaped = false;
  for (char c : text) {
    if (inString) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"') {
      inString = true;
    } else if (c == '[' || c == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

/// Parses `text` read from `path`, refusing nesting deeper than
/// kMaxJsonDepth; `what` names the text in errors ("JSON", a safetensors
/// file's "JSON header").
inline llvm::Expected<llvm::json::Value>
parseBoundedJson(llvm::StringRef text, llvm::StringRef path,
                 llvm::StringRef what = "JSON") {
  size_t depth = jsonNestingDepth(text);
  if (depth > kMaxJsonDepth)
    return makeError(path + ": " + what + " nested " + llvm::Twine(depth) +
                     " levels deep, deeper than the " +
                     llvm::Twine(kMaxJsonDepth) + " levels tfmc reads");
  llvm::Expected<llvm::json::Value> json = llvm::json::parse(text);
  if (!json)
    return makeError(path + ": malformed " + what + ": " +
                     llvm::toString(json.takeError()));
  return json;
}

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FORMATS_JSONDEPTH_H
