//===- StopTokensAttr.h - the module's end-of-generation tokens -*- C++ -*-===//
//
// A language model's tokens that end generation besides its EOS (a
// config's other eos_token_ids), kept on the module as an array<i32> for
// tfmc to write into the model's description (tfm_model_desc's
// stop_tokens). Apart from TfmDialect.h, which nearly every file includes.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_IR_STOPTOKENSATTR_H
#define TFM_IR_STOPTOKENSATTR_H

#include "llvm/ADT/StringRef.h"

namespace mlir::tfm {

inline constexpr llvm::StringLiteral kStopTokensAttrName = "tfm.stop_tokens";

} // namespace mlir::tfm

#endif // TFM_IR_STOPTOKENSATTR_H
