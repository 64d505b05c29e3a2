//===- FuzzErrors.h - what a reader's refusal must be ------------*- C++ -*-===//
//
// A reader that refuses an input answers with an llvm::Error; that is the
// expected outcome, not a finding, but the error has to say something.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TEST_FUZZ_FUZZERRORS_H
#define TFM_TEST_FUZZ_FUZZERRORS_H

#include "llvm/Support/Error.h"

#include <cstdlib>

namespace tfm_fuzz {

/// Consumes `error`; aborts (a finding) when it carries no message.
inline void expectMessage(llvm::Error error) {
  if (!error)
    return;
  if (llvm::toString(std::move(error)).empty())
    std::abort();
}

} // namespace tfm_fuzz

#endif // TFM_TEST_FUZZ_FUZZERRORS_H
