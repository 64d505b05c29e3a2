//===- TfmDialect.cpp - tfm dialect registration -----------------------===//
//
// Registers the tfm ops and attributes with MLIR.
//
//===----------------------------------------------------------------------===//

#include "ir/TfmDialect.h"
#include "ir/TfmOps.h"
#include "ir/TfmSharding.h"

#include "mlir/Transforms/InliningUtils.h"

#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace mlir::tfm;

#include "ir/TfmDialect.cpp.inc"
#include "ir/TfmEnums.cpp.inc"

#define GET_ATTRDEF_CLASSES
#include "ir/TfmAttrs.cpp.inc"

namespace {

/// tfm ops are pure computations on values: inlining them anywhere (e.g.
/// @prefill into @decode) is always legal.
struct TfmInlinerInterface : DialectInlinerInterface {
  using DialectInlinerInterface::DialectInlinerInterface;
  bool isLegalToInline(Operation *, Region *, bool, IRMapping &) const final {
    return true;
  }
};

} // namespace

void TfmDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "ir/TfmOps.cpp.inc"
      >();
  addAttributes<
#define GET_ATTRDEF_LIST
#include "ir/TfmAttrs.cpp.inc"
      >();
  addInterfaces<TfmInlinerInterface>();
  attachShardingModels(*getContext());
}
