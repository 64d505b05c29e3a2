//===- Gemma4Family.h - Google's Gemma 4 text decoder -----------*- C++ -*-===//
//
// Gemma 4's config and checkpoint (model_type gemma4_text, and gemma4's
// image-text folders, whose text model tfmc builds): rows of
// kDecoderFamilies (DecoderFamilies.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FAMILIES_GEMMA4FAMILY_H
#define TFM_FRONTEND_FAMILIES_GEMMA4FAMILY_H

#include "frontend/builders/DecoderSpec.h"
#include "frontend/formats/ConfigReader.h"
#include "frontend/formats/WeightStore.h"

namespace mlir::tfm {

/// Gemma 4's text decoder: Gemma 3's layers with RMSNorms that scale by w
/// (not 1 + w), unscaled scores, a weightless norm of each value head,
/// sliding layers (head_dim, num_key_value_heads, RoPE "default") and full
/// ones (global_head_dim, num_global_key_value_heads where
/// attention_k_eq_v, whose value is the key's projection; "proportional"
/// RoPE) as layer_types says, the last num_kv_shared_layers reading the
/// keys and values of the last earlier layer of their type (with MLPs
/// twice as wide where use_double_wide_mlp), per-layer inputs
/// (hidden_size_per_layer_input), and final_logit_softcapping. Experts
/// (enable_moe_block) are refused by name.
DecoderSpec readGemma4TextSpec(ConfigReader &config);
/// gemma4: the same from text_config, tensors under model.language_model.,
/// the vision and audio towers read past.
DecoderSpec readGemma4Spec(ConfigReader &config);

/// Each layer's layer_scalar into the spec (it multiplies the residual
/// stream; a finite number is required), and the keys' and values'
/// weights of the layers that share an earlier layer's dropped, as
/// transformers drops them.
llvm::Error prepareGemma4Checkpoint(DecoderSpec &spec, WeightStore &store,
                                    llvm::StringRef checkpoint);

class GgufFile;

/// GGUF's gemma4 (llama.cpp's converter), on top of the LLaMA-like fields:
/// attention.sliding_window_pattern (a bool a layer), the full and the
/// sliding layers' head sizes (key_length, key_length_swa) and RoPE bases
/// (rope.freq_base, rope.freq_base_swa), head_count_kv and
/// feed_forward_length one a layer or for all, shared_kv_layers,
/// embedding_length_per_layer_input and final_logit_softcapping. `key` is
/// "gemma4.".
llvm::Error readGgufGemma4(const GgufFile &file, llvm::StringRef key,
                           DecoderSpec &spec);
/// Once the tensors are read: the full layers' RoPE factors
/// (rope_freqs.weight), which layers use their key as value (no attn_v),
/// the per-layer inputs' vocabulary, the layer scales
/// (layer_output_scale, 1 where absent, as llama.cpp reads them).
llvm::Error prepareGgufGemma4(const GgufFile &file, DecoderSpec &spec,
                              WeightStore &weights);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FAMILIES_GEMMA4FAMILY_H
