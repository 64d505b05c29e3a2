//===- GpuAlignment.h - run-time alignment checks for wide loads -*- C++ -*-===//
//
// The GPU lowerings load 16 bytes at once (ld.global.v4.f32) where a
// buffer's rows start on 16-byte boundaries. Buffers in GPU memory are
// views into allocations whose addresses are known only at run time, so
// the kernels test it and keep a one-element path for the other case.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_CUDA_GPUALIGNMENT_H
#define TFM_CODEGEN_CUDA_GPUALIGNMENT_H

#include "mlir/IR/Builders.h"

namespace mlir::tfm {

/// Bytes a wide load reads: four f32.
constexpr int64_t kWideLoadBytes = 16;
constexpr int64_t kWideLoadElements = kWideLoadBytes / 4;

/// Whether buffer `buffer`'s innermost stride is 1 at compile time, which
/// wide loads along its rows need.
bool hasUnitInnerStride(Value buffer);

/// An i1, true at run time when buffer `buffer`'s first element and every
/// stride but the innermost (in bytes) are multiples of 16: then every run
/// of 16 bytes along a row that starts at a multiple of 16 bytes (four
/// f32, eight bf16) is 16-byte aligned.
Value rowsStartAligned(OpBuilder &b, Location loc, Value buffer);

} // namespace mlir::tfm

#endif // TFM_CODEGEN_CUDA_GPUALIGNMENT_H
