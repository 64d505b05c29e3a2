//===- Passes.h - codegen passes --------------------------------*- C++ -*-===//

#ifndef TFM_CODEGEN_PASSES_H
#define TFM_CODEGEN_PASSES_H

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
/// Alignment of every weight inside the blob (a cache line, AVX-512 width).
inline constexpr int64_t kWeightAlignment = 64;

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
