//===- BlockReads.h - block panels the runtime reads ------------*- C++ -*-===//
//
// The CPU's kernel selection for what reads block panels besides a product:
// a table's lookups (tfm_rt_embedding_blocks) and a tfm.dequantize that
// other ops read (tfm_rt_dequantize_blocks).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_CPU_BLOCKREADS_H
#define TFM_CODEGEN_CPU_BLOCKREADS_H

#include "mlir/IR/PatternMatch.h"

namespace mlir::tfm {

/// Whether a pattern of populateBlockReadPatterns takes `op`.
bool readsBlocks(Operation *op);

void populateBlockReadPatterns(RewritePatternSet &patterns);

} // namespace mlir::tfm

#endif // TFM_CODEGEN_CPU_BLOCKREADS_H
