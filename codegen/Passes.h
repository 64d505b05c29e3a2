//===- Passes.h - every codegen pass, by stage and target -------*- C++ -*-===//
//
// Each folder of codegen/ owns its passes (its Passes.td): linalg/ the
// target-independent lowering, cpu/ and cuda/ the targets, packaging/ the
// C interface of entry points. Tools register them all here.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_PASSES_H
#define TFM_CODEGEN_PASSES_H

#include "codegen/cpu/Passes.h"
#include "codegen/cuda/Passes.h"
#include "codegen/linalg/Passes.h"
#include "codegen/packaging/Passes.h"

namespace mlir::tfm {

inline void registerTfmCodegenPasses() {
  registerTfmLinalgPasses();
  registerTfmCpuPasses();
  registerTfmCudaPasses();
  registerTfmPackagingPasses();
}

} // namespace mlir::tfm

#endif // TFM_CODEGEN_PASSES_H
