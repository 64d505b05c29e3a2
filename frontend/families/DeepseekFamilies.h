//===- DeepseekFamilies.h - DeepSeek's architecture and its router -*- C++ -*-===//
//
// The decoders built on DeepSeek-V2/V3's architecture, multi-head latent
// attention and a mixture of experts with DeepSeek's router (model_types
// deepseek_v2, deepseek_v3, kimi_k2; GGUF deepseek2), and GLM-4.5's
// (glm4_moe), which keeps the router beside grouped-query attention. Rows
// of kDecoderFamilies (DecoderFamilies.cpp) and kGgufArchitectures.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FAMILIES_DEEPSEEKFAMILIES_H
#define TFM_FRONTEND_FAMILIES_DEEPSEEKFAMILIES_H

#include "frontend/builders/DecoderSpec.h"
#include "frontend/formats/ConfigReader.h"
#include "frontend/formats/Gguf.h"
#include "frontend/formats/WeightStore.h"

namespace mlir::tfm {

/// DeepSeek-V3 (and Kimi-K2, Moonlight, which reuse it) and DeepSeek-V2.
DecoderSpec readDeepseekSpec(ConfigReader &config);

/// GLM-4.5, 4.6 and 4.7 (glm4_moe): grouped-query attention with biases on
/// Q, K and V (attention_bias), optional RMSNorms of each head of Q and K
/// (use_qk_norm), RoPE's half-rotation on the first partial_rotary_factor
/// (0.5) of each head; DeepSeek-V3's router (n_group and topk_group 1 where
/// left out), one shared expert by default, first_k_dense_replace dense
/// layers.
DecoderSpec readGlm4MoeSpec(ConfigReader &config);

/// Splits each layer's kv_b_proj ([heads · (nope + value), latent]) into
/// the absorbed key up-projection ([heads · latent, nope], each head's
/// rows transposed), the key up-projection as stored ([heads · nope,
/// latent], the expanded form's) and the value up-projection ([heads ·
/// value, latent]).
llvm::Error prepareDeepseekCheckpoint(DecoderSpec &spec, WeightStore &store,
                                      llvm::StringRef checkpoint);

/// The expanded form's key up-projection of a deepseek2 file, which stores
/// only the absorbed one (attn_k_b, [heads · latent, nope]): each head's
/// block transposed (`blk.N.attn_k_up.weight`, [heads · nope, latent]),
/// widened to f32 where attn_k_b is in blocks. Sets spec.layer.keyUp; a
/// file without attn_k_b of that shape is left as it is.
void prepareGgufLatentAttention(DecoderSpec &spec, WeightStore &store);

/// GGUF's deepseek2 (llama.cpp's DeepSeek-V2/V3 architecture, which
/// Kimi-K2 and Moonlight files use) on top of the LLaMA-like fields
/// decoderSpecOf read: the MLA widths (q_lora_rank, kv_lora_rank,
/// key_length_mla, value_length_mla) and tensors (attn_q_a, attn_q_b,
/// attn_kv_a_mqa, attn_k_b, attn_v_b), DeepSeek's softmax scale from
/// yarn_log_multiplier, dense leading layers, shared experts and the
/// router (expert_gating_func, exp_probs_b, groups, weights' norm and
/// scale) as llama.cpp reads them. `key` is "deepseek2.".
llvm::Error readGgufLatentAttention(const GgufFile &file, llvm::StringRef key,
                                    DecoderSpec &spec);

/// GGUF's glm4moe (GLM-4.5, 4.6, 4.7) on top of the LLaMA-like fields with
/// Q/K/V biases: the MLP norm post_attention_norm, attn_q_norm and
/// attn_k_norm where present, and DeepSeek's router with sigmoid scores
/// unless expert_gating_func says otherwise. `key` is "glm4moe.".
llvm::Error readGgufGlm4Moe(const GgufFile &file, llvm::StringRef key,
                            DecoderSpec &spec);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FAMILIES_DEEPSEEKFAMILIES_H
