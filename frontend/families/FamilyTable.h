//===- FamilyTable.h - lookups in a table of families -----------*- C++ -*-===//
//
// Each kind registers its families once, as a table of rows keyed by a
// name (decoders, encoders and encoder-decoders: model_type; GGUF:
// general.architecture). Lookups and the lists that errors, --help and the
// docs show all come from the table.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FAMILIES_FAMILYTABLE_H
#define TFM_FRONTEND_FAMILIES_FAMILYTABLE_H

#include "llvm/ADT/StringRef.h"

#include <string>

namespace mlir::tfm {

/// The row of `table` whose key (`row.*key`) is `name`, or null.
template <typename Row, size_t N>
const Row *findFamily(const Row (&table)[N], llvm::StringLiteral Row::*key,
                      llvm::StringRef name) {
  for (const Row &row : table)
    if (row.*key == name)
      return &row;
  return nullptr;
}

/// The keys of `table`, in its order: "gemma, gpt2, ...".
template <typename Row, size_t N>
std::string familyNames(const Row (&table)[N], llvm::StringLiteral Row::*key) {
  std::string names;
  for (const Row &row : table)
    names += (names.empty() ? "" : ", ") + (row.*key).str();
  return names;
}

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FAMILIES_FAMILYTABLE_H
