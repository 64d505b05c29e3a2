//===- TfmDialect.cpp - tfm dialect registration -----------------------===//
//
// Registers the tfm ops and attributes with MLIR.
//
//===----------------------------------------------------------------------===//

#include "ir/TfmDialect.h"
#include "ir/TfmOps.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tfm;

#include "ir/TfmDialect.cpp.inc"
#include "ir/TfmEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "ir/TfmAttrs.cpp.inc"

void TfmDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ir/TfmOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "ir/TfmAttrs.cpp.inc"
      >();
}
