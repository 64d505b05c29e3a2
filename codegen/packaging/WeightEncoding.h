//===- WeightEncoding.h - f32 values into a stored weight format -*- C++ -*-===//
//
// The formats a weight may be stored in and the encoding of f32 values into
// each (runtime/include/tfm/weight_formats.h documents the byte layouts). Free of MLIR,
// so that the runtime's kernel tests encode weights exactly as the packager
// does.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_PACKAGING_WEIGHTENCODING_H
#define TFM_CODEGEN_PACKAGING_WEIGHTENCODING_H

#include "ir/WeightFormat.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace mlir::tfm {

/// The formats' names, block sizes and kinds are the table's
/// (ir/WeightFormat.h). Those copied from a checkpoint's blocks
/// (isCopiedFromCheckpoint: the K-quants, MXFP4) go through
/// encodeCheckpointPanel; the others are encoded from f32 values. The
/// checkpoint blocks (ggml-common.h) the packager copies: block_q4_K, 144
/// bytes (f16 d and dmin, 12 bytes of packed 6-bit scales and minimums for
/// 8 sub-blocks of 32, then 128 bytes of nibbles); block_q5_K, 176 bytes
/// (Q4_K's 16 bytes of d, dmin and scales, 32 of fifth bits, 128 of
/// nibbles); block_q6_K, 210 bytes (128 bytes of low 4 bits, 64 of high 2
/// bits, 16 int8 scales, f16 d); block_mxfp4, 32 elements in 17 bytes: an
/// E8M0 exponent, then 16 bytes whose byte j holds element j (low nibble)
/// and j + 16 (high).

/// Appends one Q4_K, Q5_K, Q6_K or MXFP4 panel to `out`: 16 rows of `cols`
/// elements (a multiple of checkpointBlockElements), given as each row's
/// blocks in the checkpoint's format one after another (rows missing from
/// the matrix all zero bytes). The numbers stay the file's exactly.
void encodeCheckpointPanel(WeightFormat format, const uint8_t *rowBlocks,
                           int64_t cols, std::vector<uint8_t> &out);

/// Appends `count` f32 values in `format` (F32, BF16 or F16) to `out`.
void encodeRowMajor(WeightFormat format, const float *values, int64_t count,
                    std::vector<uint8_t> &out);
/// Appends one panel (panelRows(format) rows of `cols` values, row-major,
/// missing rows zero) in `format` (not one copied from a checkpoint) to
/// `out`.
void encodePanel(WeightFormat format, const float *rows, int64_t cols,
                 std::vector<uint8_t> &out);

} // namespace mlir::tfm

#endif // TFM_CODEGEN_PACKAGING_WEIGHTENCODING_H
