//===- GpuMatmuls.h - what the GPU matmul lowerings share --------*- C++ -*-===//
//
// tfm-lower-matvec-to-gpu and tfm-lower-matmul-to-gpu-tiles both lower
// tfm.linear's x·Wᵀ (linalg.matmul, C[m, n] += A[m, k] · B[n, k]) and both
// write the sums over a zero fill instead of adding them to it.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_CUDA_GPUMATMULS_H
#define TFM_CODEGEN_CUDA_GPUMATMULS_H

#include "codegen/cuda/WarpShuffles.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"

namespace mlir::tfm {

/// How many tiles of `tile` elements cover `size` (the last one partial).
Value tilesOf(OpBuilder &b, Location loc, Value size, int64_t tile);

/// Whether `matmul` computes C[m, n] += A[m, k] · B[n, k] on buffers.
bool isMatmulTransposedB(linalg::MatmulOp matmul);

/// The buffers of C[rows, columns] += A[rows, depth] · B[columns, depth]ᵀ
/// and its sizes.
struct MatmulTransposedB {
  Value lhs, rhs, out;
  Value rows, depth, columns;
};

/// `matmul`'s (isMatmulTransposedB) buffers, and its sizes read at `b`.
MatmulTransposedB readMatmulTransposedB(OpBuilder &b, linalg::MatmulOp matmul);

/// When `matmul`'s output was just filled with zeros (the op before it, on
/// that buffer), erases the fill and returns true: the kernel then writes
/// its sums instead of adding them, one launch fewer.
bool absorbZeroFill(linalg::MatmulOp matmul);

/// Writes an output element's `sum` into `out` at `indices`: stored when
/// the zero fill was absorbed (`overwrite`), else added to what is there,
/// as linalg.matmul accumulates.
void storeSum(OpBuilder &b, Location loc, Value sum, Value out,
              ValueRange indices, bool overwrite);

} // namespace mlir::tfm

#endif // TFM_CODEGEN_CUDA_GPUMATMULS_H
