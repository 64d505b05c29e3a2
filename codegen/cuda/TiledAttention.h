//===- TiledAttention.h - prefill attention over tiles ------------*- C++
//-*-===//
//
// tfm-lower-attention-to-gpu's kernel for a prefill (queries known at run
// time only): a block per (head, tile of queries) that stages tiles of
// keys and values in workgroup memory, so that each key row is read from
// memory once per tile of queries instead of once per query.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_CUDA_TILEDATTENTION_H
#define TFM_CODEGEN_CUDA_TILEDATTENTION_H

#include "mlir/IR/Builders.h"

namespace mlir::tfm {

/// tfm_rt_attention's buffers and flags: q [s, heads, d], k and v [t,
/// kv_heads, d], out [s, heads, d]; the queries are the last s of the t
/// positions.
struct AttentionOperands {
  Value q, k, v, out;
  double scale;
  /// Scores soft-capped to softcap · tanh(score / softcap); 0: none.
  double softcap;
  bool causal;
  /// Keys a query sees at most (sliding window); 0: all.
  int64_t window;
  int64_t heads, width;
  /// Query heads per key-value head (grouped-query attention).
  int64_t group;
};

/// The keys a query sees, [first, end).
struct KeyRange {
  Value first, end;
};

/// The keys query `query` sees among `keys` positions, the `queries`
/// queries being the last of them: up to the query itself where
/// `causal` (a row past the last query: up to the last key), none
/// `window` or more positions behind it where `window` > 0. Both attention
/// kernels mask by it.
KeyRange visibleKeys(OpBuilder &b, Location loc, Value query, Value queries,
                     Value keys, bool causal, int64_t window);

/// Whether the tiled kernel takes heads `width` wide (a multiple of 8, at
/// most 128: its tiles must fit a block's 48 KB of workgroup memory).
bool tiledAttentionFits(int64_t width);

/// Builds the tiled kernel at `b` (a gpu.launch writing `out`).
void buildTiledPrefillAttention(OpBuilder &b, Location loc,
                                const AttentionOperands &operands);

} // namespace mlir::tfm

#endif // TFM_CODEGEN_CUDA_TILEDATTENTION_H
