//===- AttentionCall.h - tfm.attention as a call of a kernel ----*- C++ -*-===//
//
// tfm.attention handed to a fused kernel outside the generated code:
// tfm_rt_attention and its variants, which the CPU runtime implements
// (runtime/kernels/kernels_attention.c) and a GPU target makes a kernel of
// (CUDA: tfm-lower-attention-to-gpu). tfm-select-cpu-kernels takes every
// variant; tfm-call-attention-kernel only the plain one, for a target
// without the runtime's kernels.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_LINALG_ATTENTIONCALL_H
#define TFM_CODEGEN_LINALG_ATTENTIONCALL_H

#include "ir/TfmOps.h"

#include "mlir/IR/PatternMatch.h"

namespace mlir::tfm {

/// Whether a call of the attention kernels computes `attention`: every one
/// without a [heads, s, t] bias, or with `plainOnly` only those
/// tfm_rt_attention itself takes (no packed sequences, relative bias or
/// keys and values read as a narrow cache stores them).
bool callsAttentionKernel(AttentionOp attention, bool plainOnly);

/// The conversion of tfm.attention into those calls; with `bf16Dot`,
/// plain and packed f32 attention call the kernels' _bf16_dot twins, whose
/// prefill products (scores and weighted values) are vdpbf16ps's over
/// operands rounded to bf16 (--compute-dtype bf16 or int8).
void populateAttentionCallPatterns(RewritePatternSet &patterns,
                                   bool bf16Dot = false);

} // namespace mlir::tfm

#endif // TFM_CODEGEN_LINALG_ATTENTIONCALL_H
