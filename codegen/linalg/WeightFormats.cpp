//===- WeightFormats.cpp - the stored forms of a weight ------------------===//

#include "codegen/linalg/WeightFormats.h"
#include "ir/TfmDialect.h"

using namespace mlir;
using namespace mlir::tfm;

WeightFormat mlir::tfm::storedFormatOf(RankedTensorType type) {
  if (auto quant = dyn_cast_or_null<BlockQuantAttr>(type.getEncoding()))
    return quant.getFormat();
  Type element = type.getElementType();
  if (element.isBF16())
    return WeightFormat::BF16;
  if (element.isF16())
    return WeightFormat::F16;
  return WeightFormat::F32;
}
