//===- Passes.h - the packaging stage's pass -*- C++ -*-===//

#ifndef TFM_CODEGEN_PACKAGING_PASSES_H
#define TFM_CODEGEN_PACKAGING_PASSES_H

#include "mlir/Pass/Pass.h"

namespace mlir::tfm {

#define GEN_PASS_DECL
#include "codegen/packaging/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "codegen/packaging/Passes.h.inc"

} // namespace mlir::tfm

#endif // TFM_CODEGEN_PACKAGING_PASSES_H
