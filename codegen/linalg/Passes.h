//===- Passes.h - target-independent lowering passes -*- C++ -*-===//

#ifndef TFM_CODEGEN_LINALG_PASSES_H
#define TFM_CODEGEN_LINALG_PASSES_H

#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Pass/Pass.h"
#include "tfm/runtime_kernels.h"

namespace mlir::tfm {

#define GEN_PASS_DECL
#include "codegen/linalg/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "codegen/linalg/Passes.h.inc"

/// On a lowered entry point's argument (tfm-lower-to-linalg's
/// mark-host-inputs): an input in memory the caller owns (token ids, pixels,
/// audio features), which a GPU build copies to the device
/// (tfm-place-buffers-on-device, which removes it). The tfm dialect's
/// verifier accepts it on any function (ir/TfmAttrs.cpp).
inline constexpr llvm::StringLiteral kHostInputArgAttrName = "tfm.host_input";
/// The module attribute holding the weight layout: name -> byte offset.
inline constexpr llvm::StringLiteral kWeightLayoutAttrName = "tfm.weight_layout";
/// The module attribute holding the weight blob's total size in bytes.
inline constexpr llvm::StringLiteral kWeightBytesAttrName = "tfm.weight_bytes";
/// The module attribute naming the weights stored as panels: name ->
/// [rows, cols] of the logical matrix.
inline constexpr llvm::StringLiteral kWeightPanelsAttrName = "tfm.weight_panels";
/// The module attribute naming the weights stored narrower than f32: name
/// -> "bf16", "f16", "q8_0" or "q4_0" (codegen/linalg/WeightFormats.h).
inline constexpr llvm::StringLiteral kWeightFormatsAttrName =
    "tfm.weight_formats";
/// The module attribute holding how many bytes of weights a @decode step
/// reads (set by tfm-lay-out-weights when the module has a @decode).
inline constexpr llvm::StringLiteral kDecodeWeightBytesAttrName =
    "tfm.decode_weight_bytes";
/// Alignment of every weight inside the blob (a cache line, AVX-512 width).
inline constexpr int64_t kWeightAlignment = 64;
/// Rows per panel of a weight stored as panels: panels[p][k][j] =
/// W[kPanelWidth·p + j][k], the last panel zero-padded (linalg.pack of W
/// with inner tile kPanelWidth on dim 0). The runtime's GEMM kernel
/// (runtime/kernels/kernels_panel_gemm.c) assumes this width.
inline constexpr int64_t kPanelWidth = TFM_PANEL_WIDTH;

/// The target-independent tfm -> linalg lowering, one family of ops per
/// function (and file), and all of them (tfm-lower-to-linalg).
/// Position ids, embeddings, rotary and sinusoidal encodings.
void populateLowerEmbeddingPatterns(RewritePatternSet &patterns);
/// tfm.linear (linalg.matmul), activations, add, mul, concat.
void populateLowerLinearAndElementwisePatterns(RewritePatternSet &patterns);
/// LayerNorm, RMSNorm and their fused residual adds.
void populateLowerNormPatterns(RewritePatternSet &patterns);
/// tfm.attention with materialized scores.
void populateLowerAttentionPatterns(RewritePatternSet &patterns);
/// KV cache reads and appends, and an int8 cache's rows.
void populateLowerKVCachePatterns(RewritePatternSet &patterns);
/// tfm.pool: a sequence's hidden states to one (normalized) vector.
void populateLowerPoolingPatterns(RewritePatternSet &patterns);
/// tfm.patches: an image cut into flattened patches (vision transformers).
void populateLowerPatchesPatterns(RewritePatternSet &patterns);
/// A mixture of experts' routing and row moves (LowerExperts.cpp).
void populateLowerExpertPatterns(RewritePatternSet &patterns);
/// Feature maps: convolutions, group norms, upsampling, timestep embeddings.
void populateLowerImagePatterns(RewritePatternSet &patterns);
/// tfm.causal_conv1d and tfm.gated_delta_rule (LowerRecurrent.cpp).
void populateLowerRecurrentPatterns(RewritePatternSet &patterns);
void populateLowerToLinalgPatterns(RewritePatternSet &patterns);

} // namespace mlir::tfm

#endif // TFM_CODEGEN_LINALG_PASSES_H
