//===- ExpandedKeyAttr.h - MLA's key up-projection as stored ----*- C++ -*-===//
//
// On a tfm.attention of multi-head latent attention in its absorbed form
// (DecoderIRBuilder::latentAttention): the weight_decl of each head's key
// up-projection as stored ([heads · nope, latent], a FlatSymbolRefAttr),
// which the expanded form tfm-expand-latent-attention builds reads. Apart
// from TfmDialect.h, which nearly every file includes.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_IR_EXPANDEDKEYATTR_H
#define TFM_IR_EXPANDEDKEYATTR_H

#include "llvm/ADT/StringRef.h"

namespace mlir::tfm {

inline constexpr llvm::StringLiteral kExpandedKeyAttrName = "tfm.expanded_key";

} // namespace mlir::tfm

#endif // TFM_IR_EXPANDEDKEYATTR_H
