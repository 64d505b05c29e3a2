//===- TfmOps.h - tfm dialect operations ------------------------*- C++ -*-===//
//
// The ops of the tfm dialect, generated from TfmOps.td.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_IR_TFMOPS_H
#define TFM_IR_TFMOPS_H

#include "ir/TfmDialect.h"
#include "ir/TfmTraits.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/InferTypeOpInterface.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "ir/TfmOps.h.inc"

#endif // TFM_IR_TFMOPS_H
