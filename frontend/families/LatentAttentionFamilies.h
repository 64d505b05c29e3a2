//===- LatentAttentionFamilies.h - DeepSeek's MLA decoders ------*- C++ -*-===//
//
// The Hugging Face decoders built on DeepSeek-V2/V3's architecture:
// multi-head latent attention and a mixture of experts with DeepSeek's
// router (model_types deepseek_v2, deepseek_v3, kimi_k2). Rows of
// kDecoderFamilies (DecoderFamilies.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_LATENTATTENTIONFAMILIES_H
#define TFM_FRONTEND_LATENTATTENTIONFAMILIES_H

#include "frontend/builders/DecoderSpec.h"
#include "frontend/formats/ConfigReader.h"
#include "frontend/formats/WeightStore.h"

namespace mlir::tfm {

/// DeepSeek-V3 (and Kimi-K2, Moonlight, which reuse it) and DeepSeek-V2.
DecoderSpec readDeepseekSpec(ConfigReader &config);

/// Splits each layer's kv_b_proj ([heads · (nope + value), latent]) into
/// the absorbed key up-projection ([heads · latent, nope], each head's
/// rows transposed) and the value up-projection ([heads · value, latent]).
llvm::Error prepareDeepseekCheckpoint(DecoderSpec &spec, WeightStore &store,
                                      llvm::StringRef checkpoint);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_LATENTATTENTIONFAMILIES_H
