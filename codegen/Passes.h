//===- Passes.h - codegen passes --------------------------------*- C++ -*-===//

#ifndef TFM_CODEGEN_PASSES_H
#define TFM_CODEGEN_PASSES_H

#include "runtime/runtime_kernels.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"

namespace mlir::tfm {

#define GEN_PASS_DECL
#include "codegen/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "codegen/Passes.h.inc"

/// The module attribute holding the weight layout: name -> byte offset.
inline constexpr llvm::StringLiteral kWeightLayoutAttrName = "tfm.weight_layout";
/// The module attribute holding the weight blob's total size in bytes.
inline constexpr llvm::StringLiteral kWeightBytesAttrName = "tfm.weight_bytes";
/// The module attribute naming the weights stored as panels: name ->
/// [rows, cols] of the logical matrix.
inline constexpr llvm::StringLiteral kWeightPanelsAttrName = "tfm.weight_panels";
/// Alignment of every weight inside the blob (a cache line, AVX-512 width).
inline constexpr int64_t kWeightAlignment = 64;
/// Rows per panel of a weight stored as panels: panels[p][k][j] =
/// W[kPanelWidth·p + j][k], the last panel zero-padded (linalg.pack of W
/// with inner tile kPanelWidth on dim 0). The runtime's GEMM kernel
/// (runtime/kernels_panel_gemm.c) assumes this width.
inline constexpr int64_t kPanelWidth = TFM_PANEL_WIDTH;

/// Adds the tfm -> linalg lowering patterns.
void populateLowerToLinalgPatterns(RewritePatternSet &patterns,
                                   bool fusedAttention);

/// Adds the tfm.attention lowering: a call of the runtime's fused kernel
/// when `fusedAttention` (and the op has no bias), else linalg with
/// materialized scores.
void populateLowerAttentionPatterns(RewritePatternSet &patterns,
                                    bool fusedAttention);

} // namespace mlir::tfm

#endif // TFM_CODEGEN_PASSES_H
