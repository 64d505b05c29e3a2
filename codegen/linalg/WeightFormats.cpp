//===- WeightFormats.cpp - the stored forms of a weight ------------------===//

#include "codegen/linalg/WeightFormats.h"
#include "ir/TfmDialect.h"

#include "llvm/ADT/StringSwitch.h"

using namespace mlir;
using namespace mlir::tfm;

StoredFormat mlir::tfm::storedFormatOf(RankedTensorType type) {
  if (auto quant = dyn_cast_or_null<BlockQuantAttr>(type.getEncoding())) {
    switch (quant.getFormat()) {
    case BlockFormat::q8_0: return StoredFormat::Q8_0;
    case BlockFormat::q4_0: return StoredFormat::Q4_0;
    case BlockFormat::q4_1: return StoredFormat::Q4_1;
    case BlockFormat::q4_k: return StoredFormat::Q4_K;
    case BlockFormat::q5_k: return StoredFormat::Q5_K;
    case BlockFormat::q6_k: return StoredFormat::Q6_K;
    case BlockFormat::mxfp4: return StoredFormat::MXFP4;
    }
  }
  Type element = type.getElementType();
  if (element.isBF16())
    return StoredFormat::BF16;
  if (element.isF16())
    return StoredFormat::F16;
  return StoredFormat::F32;
}

llvm::StringRef mlir::tfm::storedFormatName(StoredFormat format) {
  switch (format) {
  case StoredFormat::F32: return "f32";
  case StoredFormat::BF16: return "bf16";
  case StoredFormat::F16: return "f16";
  case StoredFormat::Q8_0: return "q8_0";
  case StoredFormat::Q4_0: return "q4_0";
  case StoredFormat::Q4_1: return "q4_1";
  case StoredFormat::Q4_K: return "q4_k";
  case StoredFormat::Q5_K: return "q5_k";
  case StoredFormat::Q6_K: return "q6_k";
  case StoredFormat::MXFP4: return "mxfp4";
  }
  return "f32";
}

std::optional<StoredFormat> mlir::tfm::parseStoredFormat(llvm::StringRef name) {
  return llvm::StringSwitch<std::optional<StoredFormat>>(name)
      .Case("f32", StoredFormat::F32)
      .Case("bf16", StoredFormat::BF16)
      .Case("f16", StoredFormat::F16)
      .Case("q8_0", StoredFormat::Q8_0)
      .Case("q4_0", StoredFormat::Q4_0)
      .Case("q4_1", StoredFormat::Q4_1)
      .Case("q4_k", StoredFormat::Q4_K)
      .Case("q5_k", StoredFormat::Q5_K)
      .Case("q6_k", StoredFormat::Q6_K)
      .Case("mxfp4", StoredFormat::MXFP4)
      .Default(std::nullopt);
}

