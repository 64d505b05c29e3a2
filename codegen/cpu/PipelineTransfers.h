//===- PipelineTransfers.h - pipeline stages' rows through MPI -*- C++ -*-===//
//
// The CPU's kernel selection for the pipeline stages' ops
// (tfm.pipeline_receive, _send, _last_stage, _stage_layers, _collect): calls
// of the MPI side of the runtime (runtime/distributed/pipeline.c, in
// libtfmrt_mpi, which every model split over ranks links); _collect is its
// operand.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_CPU_PIPELINETRANSFERS_H
#define TFM_CODEGEN_CPU_PIPELINETRANSFERS_H

#include "mlir/IR/PatternMatch.h"

namespace mlir::tfm {

/// A call of runtime function `name` of scalars (no C interface: the C
/// side is `name`), declared at the module's start the first time.
Value callScalarFunction(OpBuilder &b, Location loc, StringRef name,
                         ValueRange inputs, Type result);

/// Whether `op` moves rows between pipeline stages.
bool isPipelineTransfer(Operation *op);

void populatePipelineTransferPatterns(RewritePatternSet &patterns);

} // namespace mlir::tfm

#endif // TFM_CODEGEN_CPU_PIPELINETRANSFERS_H
