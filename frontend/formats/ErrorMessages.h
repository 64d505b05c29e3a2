//===- ErrorMessages.h - user-facing frontend errors ------------*- C++ -*-===//
//
// Bad user input (a malformed checkpoint, an unsupported config) is reported
// as an llvm::Error whose message names the file and the thing that is wrong;
// the driver prints it and exits non-zero.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FORMATS_ERRORMESSAGES_H
#define TFM_FRONTEND_FORMATS_ERRORMESSAGES_H

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

/// The largest size a config may give: token ids and the runtime's
/// per-dimension counts are 32-bit, and products of a few such sizes (a
/// table's elements, its bytes) then stay far from overflowing 64 bits.
constexpr int64_t kMaxConfigSize = (int64_t(1) << 31) - 1;

/// The first size that is not positive or is larger than kMaxConfigSize,
/// as "<where>: <name> must be positive, got <value>"; success when all
/// are in range. Checked before anything is allocated from them.
inline llvm::Error expectPositiveSizes(const llvm::Twine &where,
                                       std::initializer_list<NamedSize> sizes) {
  for (NamedSize size : sizes) {
    if (size.value <= 0)
      return makeError(where + ": " + size.name + " must be positive, got " +
                       llvm::Twine(size.value));
    if (size.value > kMaxConfigSize)
      return makeError(where + ": " + size.name + " " +
                       llvm::Twine(size.value) +
                       " is larger than any model's (at most " +
                       llvm::Twine(kMaxConfigSize) + ")");
  }
  return llvm::Error::success();
}

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FORMATS_ERRORMESSAGES_H
