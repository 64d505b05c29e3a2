//===- GptOssFamily.h - OpenAI's gpt-oss ------------------------*- C++ -*-===//
//
// gpt-oss's config and checkpoint (model_type gpt_oss): a row of
// kDecoderFamilies (DecoderFamilies.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FAMILIES_GPTOSSFAMILY_H
#define TFM_FRONTEND_FAMILIES_GPTOSSFAMILY_H

#include "frontend/builders/DecoderSpec.h"
#include "frontend/formats/ConfigReader.h"
#include "frontend/formats/WeightStore.h"

namespace mlir::tfm {

/// gpt-oss: LLaMA's sizes and names with head_dim, biases on Q, K, V and
/// the output (attention_bias), attention sinks, layer_types' sliding
/// (sliding_window, 128) and full layers (alternating, sliding first,
/// where the config does not list them), rope_scaling (YaRN), and
/// num_local_experts experts of intermediate_size, num_experts_per_tok a
/// token, clamped at swiglu_limit, with biases.
DecoderSpec readGptOssSpec(ConfigReader &config);

/// Each layer's stacked experts (mlp.experts.gate_up_proj [E, hidden, 2·I]
/// with gate and up interleaved, gate_up_proj_bias, down_proj [E, I,
/// hidden], down_proj_bias) as every expert's gate, up and down and their
/// biases, [out, in]; MXFP4 experts (gate_up_proj_blocks) are refused by
/// name.
llvm::Error prepareGptOssCheckpoint(DecoderSpec &spec, WeightStore &store,
                                    llvm::StringRef checkpoint);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FAMILIES_GPTOSSFAMILY_H
