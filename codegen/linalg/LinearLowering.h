//===- LinearLowering.h - what every lowering of tfm.linear shares -*- C++ -*-===//
//
// tfm.linear lowers two ways: to linalg.matmul (tfm-lower-to-linalg, any
// target) or to a call of the runtime's panel GEMM (tfm-select-cpu-kernels).
// Both compute the product over the input's rows, then apply the op's
// epilogue (bias, activation, gate) and restore its result shape, here.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_LINALG_LINEARLOWERING_H
#define TFM_CODEGEN_LINALG_LINEARLOWERING_H

#include "ir/TfmOps.h"

#include "mlir/Transforms/DialectConversion.h"

namespace mlir::tfm {

/// Collapses `[seq, heads, head_dim]` to `[seq, heads*head_dim]`; rank-2
/// values pass through.
Value collapseToRows(OpBuilder &b, Location loc, Value v);

/// The activation of one scalar `x` (inside a linalg body).
Value applyActivation(OpBuilder &b, Location loc, ActivationKind kind, Value x);

/// The product's type: [rows, out] (or [rows, 2·out] for a gated op, whose
/// weight holds gate and up side by side).
RankedTensorType linearProductType(LinearOp op);

/// Replaces `op` by `product` ([rows, columns] of linearProductType) after
/// its epilogue: `bias` (if the product does not include it yet) and the
/// activation in one pass, then the op's own result shape.
void replaceLinear(ConversionPatternRewriter &rewriter, LinearOp op,
                   Value product, Value bias);

} // namespace mlir::tfm

#endif // TFM_CODEGEN_LINALG_LINEARLOWERING_H
