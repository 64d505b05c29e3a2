//===- TfmDialect.h - the tfm dialect ---------------------------*- C++ -*-===//
//
// Declares the tfm dialect and its enum attributes. Include "ir/TfmOps.h" for
// the ops.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_IR_TFMDIALECT_H
#define TFM_IR_TFMDIALECT_H

#include "mlir/IR/Dialect.h"
#include "mlir/IR/DialectImplementation.h"

#include "ir/TfmDialect.h.inc"

namespace mlir::tfm {

/// On @forward: the model's maximum context, which tfm-kv-cache takes as
/// the cache capacity unless told otherwise (set by the frontends).
inline constexpr llvm::StringLiteral kMaxContextAttrName = "tfm.max_context";
/// On the cache argument of @prefill/@decode (set by tfm-kv-cache): state
/// that codegen updates in place.
inline constexpr llvm::StringLiteral kKVCacheArgAttrName = "tfm.kv_cache";

} // namespace mlir::tfm
#include "ir/TfmEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "ir/TfmAttrs.h.inc"

#endif // TFM_IR_TFMDIALECT_H
