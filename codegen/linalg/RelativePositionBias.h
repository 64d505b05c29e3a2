//===- RelativePositionBias.h - tfm.attention's relative_bias terms -*- C++ -*-===//
//
// T5's relative-position terms depend on the query-key distance alone, so
// both lowerings of tfm.attention (the fused kernel and the reference)
// read them from one row per head indexed by distance instead of a
// [heads, s, t] tensor.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_LINALG_RELATIVEPOSITIONBIAS_H
#define TFM_CODEGEN_LINALG_RELATIVEPOSITIONBIAS_H

#include "ir/TfmOps.h"

#include "mlir/IR/Builders.h"

namespace mlir::tfm {

/// The terms of `op`'s relative_bias `table` ([buckets, heads]) for queries
/// `query` ([s, heads, d]) and keys `key` ([t, kv_heads, d]) by distance:
/// `[heads, s + t - 1]`, column c holding the term of query position - key
/// position = c - (s - 1), so that query i and key j (queries being the
/// last s of the t positions) read column t - 1 + i - j. Distances are
/// bucketed through a compile-time table of relativePositionBucket for
/// |distance| <= max_distance; farther ones share the edge buckets.
Value buildDistanceBias(OpBuilder &b, Location loc, AttentionOp op,
                        Value table, Value query, Value key);

} // namespace mlir::tfm

#endif // TFM_CODEGEN_LINALG_RELATIVEPOSITIONBIAS_H
