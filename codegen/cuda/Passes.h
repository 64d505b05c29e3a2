//===- Passes.h - the CUDA target's passes -*- C++ -*-===//

#ifndef TFM_CODEGEN_CUDA_PASSES_H
#define TFM_CODEGEN_CUDA_PASSES_H

#include "codegen/linalg/Passes.h"

namespace mlir::tfm {

#define GEN_PASS_DECL
#include "codegen/cuda/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "codegen/cuda/Passes.h.inc"

} // namespace mlir::tfm

#endif // TFM_CODEGEN_CUDA_PASSES_H
