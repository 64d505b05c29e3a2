//===- ErrorMessages.h - user-facing frontend errors ------------*- C++ -*-===//
//
// Bad user input (a malformed checkpoint, an unsupported config) is reported
// as an llvm::Error whose message names the file and the thing that is wrong;
// the driver prints it and exits non-zero.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_ERRORMESSAGES_H
#define TFM_FRONTEND_ERRORMESSAGES_H

#include "llvm/ADT/Twine.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <initializer_list>

namespace mlir::tfm {

inline llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

/// A size a config gives, named for messages ("hidden size").
struct NamedSize {
  const char *name;
  int64_t value;
};

/// The first size that is not positive, as "<where>: <name> must be
/// positive, got <value>"; success when all are.
inline llvm::Error expectPositiveSizes(const llvm::Twine &where,
                                       std::initializer_list<NamedSize> sizes) {
  for (NamedSize size : sizes)
    if (size.value <= 0)
      return makeError(where + ": " + size.name + " must be positive, got " +
                       llvm::Twine(size.value));
  return llvm::Error::success();
}

} // namespace mlir::tfm

#endif // TFM_FRONTEND_ERRORMESSAGES_H
