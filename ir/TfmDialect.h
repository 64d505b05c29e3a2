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
#include "ir/TfmEnums.h.inc"

#define GET_ATTRDEF_CLASSES
#include "ir/TfmAttrs.h.inc"

#endif // TFM_IR_TFMDIALECT_H
