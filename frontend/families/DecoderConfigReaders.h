//===- DecoderConfigReaders.h - config fields decoder families share -*- C++ -*-===//
//
// Pieces of config.json that several decoder families name alike, for the
// families' readers to compose (DecoderFamilies.cpp,
// DeepseekFamilies.cpp). Each records its problems in the config.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FAMILIES_DECODERCONFIGREADERS_H
#define TFM_FRONTEND_FAMILIES_DECODERCONFIGREADERS_H

#include "frontend/builders/DecoderSpec.h"
#include "frontend/formats/ConfigReader.h"
#include "frontend/formats/WeightStore.h"

#include "llvm/Support/Error.h"

namespace mlir::tfm {

/// The sizes every LLaMA-like config names the same way (vocab_size,
/// hidden_size, num_hidden_layers, num_attention_heads,
/// num_key_value_heads, intermediate_size, max_position_embeddings,
/// rope_theta), with LLaMA's rotate-half RoPE.
void readLlamaSizes(ConfigReader &config, DecoderSpec &spec);

/// Each head's size: head_dim (positive) where the config names one, else
/// hidden_size / num_attention_heads (Qwen3 and the decoders after it).
void readHeadDim(ConfigReader &config, DecoderSpec &spec);

/// LLaMA's checkpoint names: model.layers.N.{input_layernorm, self_attn.
/// {q,k,v,o}_proj, post_attention_layernorm, mlp.{up,gate,down}_proj}, and
/// lm_head unless tie_word_embeddings (default `tiedByDefault`); under
/// `prefix` ("model.", or an image-text model's "model.language_model.").
void useLlamaNames(ConfigReader &config, DecoderSpec &spec,
                   bool tiedByDefault,
                   const std::string &prefix = "model.");

/// Partial rotary: config value `key` (default `fallback`) of each head's
/// dimensions rotate, rounded down as the reference does.
void readPartialRotary(ConfigReader &config, llvm::StringRef key,
                       double fallback, DecoderSpec &spec);

/// rope_scaling: "linear", "dynamic" (NTK), "llama3", "longrope" (or
/// "su") and "yarn", into the spec's frequencies and magnitude; other
/// types are refused by name.
void readRopeScaling(ConfigReader &config, DecoderSpec &spec);

/// Experts in place of the dense MLP: the router `block` + "gate.weight"
/// and each expert's projections `block` + "experts.{e}." + gate, up and
/// down + ".weight" (Mixtral's w1, w3, w2). Clears the dense MLP's names.
void useExpertNames(DecoderSpec &spec, const std::string &block,
                    const char *gate, const char *up, const char *down);

/// The default counts of a mixture of experts' config fields.
struct ExpertCountDefaults {
  int64_t experts, perToken;
};

/// transformers 5's stacked experts of `layer` (`gateUpName`, [E, 2I, D],
/// gate rows first, and `downName`, [E, D, I]) as the per-expert weights
/// the spec names, each a view of its rows (Qwen3.5-MoE, Gemma 4's
/// 26B-A4B); a shape the config does not imply is refused.
llvm::Error splitStackedExperts(const DecoderSpec &spec, WeightStore &store,
                                llvm::StringRef checkpoint, int64_t layer,
                                const std::string &gateUpName,
                                const std::string &downName);

/// How many experts a layer has (`expertsKey`) and how many each token
/// goes through (num_experts_per_tok), both positive, the second at most
/// the first.
void readExpertCounts(ConfigReader &config, DecoderSpec &spec,
                      llvm::StringRef expertsKey,
                      ExpertCountDefaults defaults);

/// Each layer's window from layer_types ("sliding_attention": `window`,
/// "full_attention": none), where the config lists them (transformers 4.53
/// and later write it); false where it does not.
bool readLayerTypes(ConfigReader &config, DecoderSpec &spec, int64_t window);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FAMILIES_DECODERCONFIGREADERS_H
