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

#include <cstdint>
#include <cstring>
#include <vector>

namespace mlir::tfm {

/// Q4_K, Q5_K, Q6_K (GGUF's) and MXFP4 (OCP's, as gpt-oss and GGUF store
/// it) are copied from a checkpoint's blocks (encodeCheckpointPanel); the
/// others are encoded from f32 values.
enum class StoredFormat {
  F32, BF16, F16, Q8_0, Q4_0, Q4_1, Q4_K, Q5_K, Q6_K, MXFP4
};

/// Whether the format is one of GGUF's K-quants (super-blocks of 256).
inline bool isKQuant(StoredFormat format) {
  return format == StoredFormat::Q4_K || format == StoredFormat::Q5_K ||
         format == StoredFormat::Q6_K;
}
/// Whether the format's panels are copied from a checkpoint's blocks.
inline bool isCopiedFromCheckpoint(StoredFormat format) {
  return isKQuant(format) || format == StoredFormat::MXFP4;
}

/// Whether the format is block-quantized (always stored as block panels).
bool isBlockFormat(StoredFormat format);
/// The runtime's tfm_block_format (runtime/include/tfm/weight_formats.h) of a block
/// format: what the block kernels are told they read.
int blockFormatCode(StoredFormat format);
/// Rows per panel: 32 for floats, 16 for block formats.
int64_t panelRows(StoredFormat format);
/// Bytes of a [rows, cols] matrix in `format`, as panels or row-major.
int64_t storedMatrixBytes(StoredFormat format, int64_t rows, int64_t cols,
                          bool panels);

/// The checkpoint blocks (ggml-common.h) the packager copies. K-quants,
/// of 256 elements: block_q4_K, 144 bytes (f16 d and dmin, 12 bytes of
/// packed 6-bit scales and minimums for 8 sub-blocks of 32, then 128 bytes
/// of nibbles); block_q5_K, 176 bytes (Q4_K's 16 bytes of d, dmin and
/// scales, 32 of fifth bits, 128 of nibbles); block_q6_K, 210 bytes (128
/// bytes of low 4 bits, 64 of high 2 bits, 16 int8 scales, f16 d).
/// block_mxfp4, 32 elements in 17 bytes: an E8M0 exponent, then 16 bytes
/// whose byte j holds element j (low nibble) and j + 16 (high).
constexpr int64_t kKQuantElements = 256, kQ4KBytes = 144, kQ5KBytes = 176,
                  kQ6KBytes = 210, kMxfp4Elements = 32, kMxfp4Bytes = 17;
/// Elements of one of the format's checkpoint blocks (a row's multiple).
inline int64_t checkpointBlockElements(StoredFormat format) {
  return format == StoredFormat::MXFP4 ? kMxfp4Elements : kKQuantElements;
}
/// Bytes of one of the format's checkpoint blocks.
inline int64_t checkpointBlockBytes(StoredFormat format) {
  switch (format) {
  case StoredFormat::Q4_K: return kQ4KBytes;
  case StoredFormat::Q5_K: return kQ5KBytes;
  case StoredFormat::MXFP4: return kMxfp4Bytes;
  default: return kQ6KBytes;
  }
}
/// The checkpoint's name of the format ("Q4_K", "Q5_K", "Q6_K", "MXFP4").
inline const char *checkpointBlockName(StoredFormat format) {
  switch (format) {
  case StoredFormat::Q4_K: return "Q4_K";
  case StoredFormat::Q5_K: return "Q5_K";
  case StoredFormat::MXFP4: return "MXFP4";
  default: return "Q6_K";
  }
}

/// Appends one Q4_K, Q5_K, Q6_K or MXFP4 panel to `out`: 16 rows of `cols`
/// elements (a multiple of checkpointBlockElements), given as each row's
/// blocks in the checkpoint's format one after another (rows missing from
/// the matrix all zero bytes). The numbers stay the file's exactly.
void encodeCheckpointPanel(StoredFormat format, const uint8_t *rowBlocks,
                           int64_t cols, std::vector<uint8_t> &out);

/// Appends `count` f32 values in `format` (F32, BF16 or F16) to `out`.
void encodeRowMajor(StoredFormat format, const float *values, int64_t count,
                    std::vector<uint8_t> &out);
/// Appends one panel (panelRows(format) rows of `cols` values, row-major,
/// missing rows zero) in `format` (not one copied from a checkpoint) to
/// `out`.
void encodePanel(StoredFormat format, const float *rows, int64_t cols,
                 std::vector<uint8_t> &out);

} // namespace mlir::tfm

#endif // TFM_CODEGEN_PACKAGING_WEIGHTENCODING_H
