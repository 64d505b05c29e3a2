//===- BufferizationPipeline.h - tensors to buffers, for both targets -*- C++ -*-===//

#ifndef TFM_CODEGEN_LINALG_BUFFERIZATIONPIPELINE_H
#define TFM_CODEGEN_LINALG_BUFFERIZATIONPIPELINE_H

#include "mlir/Pass/PassManager.h"

namespace mlir::tfm {

/// Bufferization of a model's linalg on tensors, shared by both targets:
/// one-shot across function boundaries (identity layouts), caches updated
/// in place no longer returned (tfm-drop-returned-arguments), allocations
/// hoisted, ownership-based deallocation.
void buildBufferizationPipeline(OpPassManager &pm);

} // namespace mlir::tfm

#endif // TFM_CODEGEN_LINALG_BUFFERIZATIONPIPELINE_H
