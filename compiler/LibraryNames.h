//===- LibraryNames.h - how a compiled library names its symbols -*- C++ -*-===//
//
// tfmc prefixes a library's symbols (NAME_model, NAME_prefill, ...) with a
// C identifier made from its file's name, and tfm-serve looks the model up
// by the same rule: one definition, with no dependencies, for both.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_COMPILER_LIBRARYNAMES_H
#define TFM_COMPILER_LIBRARYNAMES_H

#include <cctype>
#include <string>
#include <string_view>

namespace mlir::tfm {

/// A C identifier from a file name ("story-2" -> "story_2"; "2x" -> "m_2x").
inline std::string identifierFrom(std::string_view name) {
  std::string id;
  for (char c : name)
    id += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  if (id.empty() || std::isdigit(static_cast<unsigned char>(id[0])))
    id = "m_" + id;
  return id;
}

} // namespace mlir::tfm

#endif // TFM_COMPILER_LIBRARYNAMES_H
