//===- WarpShuffles.h - sums and maxima across a warp's lanes ----*- C++ -*-===//
//
// The GPU kernels' lane reductions: decode's matrix-vector products sum a
// warp's 32 lanes, the tiled attention combines the 8 lanes of a query
// row. One butterfly serves both.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_CUDA_WARPSHUFFLES_H
#define TFM_CODEGEN_CUDA_WARPSHUFFLES_H

#include "mlir/IR/Builders.h"

namespace mlir::tfm {

/// Threads of a warp.
constexpr int64_t kWarp = 32;

/// `value` summed (or its maximum, where `maximum`) across each group of
/// `lanes` consecutive lanes (a power of two, at most a warp), in every
/// lane of the group: butterfly shuffles (`gpu.shuffle xor`) at distances
/// lanes / 2, ..., 1. Every lane of the warp must reach it.
Value combineAcrossLanes(OpBuilder &b, Location loc, Value value,
                         int64_t lanes, bool maximum);

} // namespace mlir::tfm

#endif // TFM_CODEGEN_CUDA_WARPSHUFFLES_H
