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

namespace mlir::tfm {

inline llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

} // namespace mlir::tfm

#endif // TFM_FRONTEND_ERRORMESSAGES_H
