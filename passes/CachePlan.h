//===- CachePlan.h - what tfm-kv-cache found in @forward --------*- C++ -*-===//
//
// The analysis of tfm-kv-cache (KVCache.cpp) and what the functions it
// derives share: @prefill/@decode and @encode there, @decode_batch in
// DecodeBatch.cpp.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_PASSES_CACHEPLAN_H
#define TFM_PASSES_CACHEPLAN_H

#include "ir/TfmOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/IRMapping.h"

#include <optional>

namespace mlir::tfm {

/// What the analysis found: the layers' self-attention ops in order and
/// the shape of one layer's cached keys ([?, kv_heads, head_dim]); for an
/// encoder-decoder also its cross-attention ops (keys and values computed
/// from the source alone) and their key shape, and which arguments of
/// @forward are the source and the decoder's tokens.
struct CachePlan {
  SmallVector<AttentionOp> layers;
  RankedTensorType keyType;
  SmallVector<AttentionOp> crossLayers;
  RankedTensorType crossKeyType;
  unsigned tokensArg = 0;
  std::optional<unsigned> sourceArg;
};

/// The cache of `layers` layers of keys of `keyType` ([?, kv_heads,
/// head_dim]): [layers, 2, capacity, kv_heads, head_dim].
RankedTensorType cacheTypeOf(RankedTensorType keyType, size_t layers,
                             int64_t capacity);

/// Source positions the cross cache holds: as many as the encoder's
/// output has where that is fixed (Whisper's 1500 frames of 30 s), else
/// `capacity` (text sources, as long as the decoder's context).
int64_t crossCapacity(const CachePlan &plan, int64_t capacity);

/// In a clone of @forward (`mapping` from the original), points every
/// cross-attention at the keys and values @encode cached: appends the
/// cross cache and the encoded length to the clone's arguments. The
/// encoder is then dead in the clone.
void readCrossCache(func::FuncOp clone, const IRMapping &mapping,
                    const CachePlan &plan, int64_t capacity);

/// Removes what no longer feeds the results, then the argument `unused`
/// if given (which must then be unused); the function's type follows.
void pruneDeadCode(func::FuncOp func, std::optional<unsigned> unused);

/// The window every self-attention layer shares (0: none, or not one).
int64_t sharedWindow(const CachePlan &plan);

/// @decode_batch(tokens [B], positions [B], sequences [B], cache [S,
/// layers, 2, capacity, kv_heads, head_dim], ...) -> (logits [B, vocab],
/// cache): one token of each of B sequences, each at its own position in
/// its own sequence of the cache (DecodeBatch.cpp).
void buildDecodeBatch(func::FuncOp forward, const CachePlan &plan,
                      int64_t capacity);

} // namespace mlir::tfm

#endif // TFM_PASSES_CACHEPLAN_H
