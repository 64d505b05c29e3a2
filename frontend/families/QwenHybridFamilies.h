//===- QwenHybridFamilies.h - Qwen3-Next and Qwen3.5 ------------*- C++ -*-===//
//
// The hybrid decoders that interleave Gated DeltaNet layers (linear
// attention with a carried state) with gated full attention: Qwen3-Next
// (qwen3_next) and Qwen3.5 (qwen3_5 and qwen3_5_moe, whose folders hold an
// image-text model with the text model's fields in text_config, or the
// text models alone: qwen3_5_text, qwen3_5_moe_text). Rows of
// kDecoderFamilies (DecoderFamilies.cpp). docs/plans/deltanet.md has the
// equations and where the sources disagree.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FAMILIES_QWENHYBRIDFAMILIES_H
#define TFM_FRONTEND_FAMILIES_QWENHYBRIDFAMILIES_H

#include "frontend/builders/DecoderSpec.h"
#include "frontend/formats/ConfigReader.h"
#include "frontend/formats/Gguf.h"
#include "frontend/formats/WeightStore.h"

namespace mlir::tfm {

/// Qwen3-Next: every full_attention_interval-th layer (or as layer_types
/// lists them) gated full attention, the others Gated DeltaNet, and a
/// mixture of experts with a gated shared expert in every layer.
DecoderSpec readQwen3NextSpec(ConfigReader &config);
/// Qwen3.5's dense models (qwen3_5 with text_config, qwen3_5_text).
DecoderSpec readQwen35Spec(ConfigReader &config);
/// Qwen3.5's mixtures of experts (qwen3_5_moe with text_config,
/// qwen3_5_moe_text): always renormalized, a gated shared expert.
DecoderSpec readQwen35MoeSpec(ConfigReader &config);

/// Puts the checkpoint in the form the builder reads: Gemma's (1 + w) on
/// every RMSNorm but the gated one, the decay −exp(A_log), the
/// convolution's [C, 1, K] weight as [C, K], and Qwen3-Next's projections
/// fused per key head ([q, k, v, z] and [b, a] of each) split into
/// [q | k | v] of every head, z, b and a.
llvm::Error prepareQwenHybridCheckpoint(DecoderSpec &spec, WeightStore &store,
                                        llvm::StringRef checkpoint);

/// GGUF's qwen35, qwen35moe and qwen3next (llama.cpp's Qwen3.5 and
/// Qwen3-Next) on top of the LLaMA-like fields: the Gated DeltaNet sizes
/// (ssm.conv_kernel, state_size, group_count, time_step_rank, inner_size),
/// which layers are recurrent (attention.recurrent_layers, else every
/// full_attention_interval-th attends), the gated attention, the MLP norm
/// post_attention_norm, and the tensors attn_qkv, attn_gate, ssm_beta,
/// ssm_alpha, ssm_dt.bias, ssm_conv1d, ssm_a, ssm_norm and ssm_out. The
/// converter adds the norms' 1 and stores −exp(A_log) as ssm_a; in qwen35
/// files whose value heads outnumber the key heads it reorders the value
/// heads so that value head h reads key head h mod Hk (`tiled`), and
/// qwen3next files keep each key head's beta and alpha rows together
/// (ssm_ba, split by prepareGgufDeltaNet). `key` is "qwen35.".
llvm::Error readGgufDeltaNet(const GgufFile &file, llvm::StringRef key,
                             DecoderSpec &spec);

/// qwen3next's ssm_ba split into the ssm_beta and ssm_alpha the spec
/// names; files from before llama.cpp split ssm_in are refused by name.
llvm::Error prepareGgufDeltaNet(const GgufFile &file, const DecoderSpec &spec,
                                WeightStore &weights);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FAMILIES_QWENHYBRIDFAMILIES_H
