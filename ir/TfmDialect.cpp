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

// Custom parameter directives of the attributes' assembly formats.

/// #tfm.block_quant's format: the name of a format kept as block panels.
static ParseResult parseBlockFormatName(AsmParser &parser,
                                        WeightFormat &format) {
  SMLoc loc = parser.getCurrentLocation();
  std::string name;
  if (parser.parseKeywordOrString(&name))
    return failure();
  std::optional<WeightFormat> parsed = parseFormatName(name);
  if (!parsed || !isBlockFormat(*parsed)) {
    std::string known;
    for (const WeightFormatTraits &row : kWeightFormats)
      if (isBlockFormat(row.format))
        known += (known.empty() ? "" : ", ") + std::string(row.name);
    return parser.emitError(loc)
           << "expected a block format (" << known << "), got '" << name << "'";
  }
  format = *parsed;
  return success();
}

static void printBlockFormatName(AsmPrinter &printer, WeightFormat format) {
  printer << formatName(format);
}

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
