//===- WeightFormat.h - the formats a weight may be stored in ---*- C++ -*-===//
//
// The compiler's view of the one table of weight formats
// (runtime/include/tfm/weight_formats.h: TFM_WEIGHT_FORMATS): an enum whose
// values are the runtime's tfm_weight_format numbers, and every trait and
// name lookup, generated from the table's rows. #tfm.block_quant, the
// frontends' tensors, tfm-quantize-weights and the packager all speak it, so
// that a format is defined once. Free of MLIR and LLVM, so that the
// runtime's kernel tests can use it.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_IR_WEIGHTFORMAT_H
#define TFM_IR_WEIGHTFORMAT_H

#include "tfm/runtime_kernels.h"
#include "tfm/weight_formats.h"

#include <cstddef>
#include <cstdint>
#include <iterator>
#include <optional>
#include <string_view>

namespace mlir::tfm {

/// A format a checkpoint may store a weight in (GGUF's and safetensors'
/// names), and the stored format tfmc keeps it in.
enum class WeightFormat : uint8_t {
#define TFM_ENUM_ROW(NAME, GGML, ELEMS, BYTES, KEPT, FORMAT, DTYPE, BITS,      \
                     CODES, META, JOIN)                                        \
  NAME = TFM_FORMAT_##NAME,
  TFM_WEIGHT_FORMATS(TFM_ENUM_ROW)
#undef TFM_ENUM_ROW
};

/// One row of the table.
struct WeightFormatTraits {
  WeightFormat format;
  const char *checkpointName; // "Q4_K", "BF16"
  uint32_t ggmlType;
  int64_t blockElements, blockBytes; // of the checkpoint's blocks
  tfm_format_kept kept;
  const char *name;  // "q4_k", "q8_0", "f32"
  const char *dtype; // "q4_k", "int8", "f32"
  unsigned codeBits; // 0 unless kept as block panels
  const char *joinDtype; // "int4-min", "int8": in a join of mixed formats
};

inline constexpr WeightFormatTraits kWeightFormats[] = {
#define TFM_TRAITS_ROW(NAME, GGML, ELEMS, BYTES, KEPT, FORMAT, DTYPE, BITS,    \
                       CODES, META, JOIN)                                      \
  {WeightFormat::NAME, #NAME,  GGML,  ELEMS, BYTES,                            \
   TFM_KEPT_##KEPT,    FORMAT, DTYPE, BITS,  JOIN},
    TFM_WEIGHT_FORMATS(TFM_TRAITS_ROW)
#undef TFM_TRAITS_ROW
};
static_assert(std::size(kWeightFormats) == TFM_FORMAT_COUNT);

constexpr const WeightFormatTraits &traitsOf(WeightFormat format) {
  return kWeightFormats[static_cast<size_t>(format)];
}

/// The format's name as a checkpoint spells it ("Q4_K", "BF16").
constexpr const char *checkpointName(WeightFormat format) {
  return traitsOf(format).checkpointName;
}
/// The stored format's name in tfmc ("q4_k", "q8_0", "bf16").
constexpr const char *formatName(WeightFormat format) {
  return traitsOf(format).name;
}
/// Elements of one of the checkpoint's blocks (1 for floats): a row's
/// multiple, which a split of a stored row must keep whole.
constexpr int64_t checkpointBlockElements(WeightFormat format) {
  return traitsOf(format).blockElements;
}
/// Bytes of one of the checkpoint's blocks (of an element, for floats).
constexpr int64_t checkpointBlockBytes(WeightFormat format) {
  return traitsOf(format).blockBytes;
}
/// Bytes that `elements` elements take in the checkpoint (whole blocks).
constexpr int64_t checkpointStoredBytes(WeightFormat format, int64_t elements) {
  return elements / checkpointBlockElements(format) *
         checkpointBlockBytes(format);
}
/// The runtime's tfm_weight_format: what the block kernels are told they
/// read.
constexpr int blockFormatCode(WeightFormat format) {
  return static_cast<int>(format);
}
/// The dtype that keeps weights in the format, by --weights-dtype's name
/// ("int8", "int8-channel", "q4_k").
constexpr const char *dtypeName(WeightFormat format) {
  return traitsOf(format).dtype;
}
/// The dtype a weight of the format takes in a join that mixes formats
/// (tfm-quantize-weights): a format copied from the file joins as the
/// encoded one that holds it ("int4-min" for Q4_K, "int8" for Q5_K, Q6_K
/// and MXFP4), q8_channel as int8 (its values within a step of Q8_0's),
/// any other as its own dtype.
constexpr const char *joinDtype(WeightFormat format) {
  return traitsOf(format).joinDtype;
}
/// Bits of a code in a block panel (0: not kept as block panels).
constexpr unsigned codeBits(WeightFormat format) {
  return traitsOf(format).codeBits;
}

constexpr bool isFloatFormat(WeightFormat format) {
  return traitsOf(format).kept == TFM_KEPT_FLOAT;
}
/// Whether tfmc keeps the format as block panels (#tfm.block_quant).
constexpr bool isBlockFormat(WeightFormat format) {
  tfm_format_kept kept = traitsOf(format).kept;
  return kept == TFM_KEPT_ENCODED || kept == TFM_KEPT_COPIED;
}
/// Whether the format's panels are copied from a checkpoint's blocks
/// (there is no encoder from f32 values): the K-quants and MXFP4.
constexpr bool isCopiedFromCheckpoint(WeightFormat format) {
  return traitsOf(format).kept == TFM_KEPT_COPIED;
}
/// Whether a checkpoint's tensors of the format are decoded and
/// requantized to int8.
constexpr bool checkpointRequantizes(WeightFormat format) {
  return traitsOf(format).kept == TFM_KEPT_REQUANTIZED;
}
/// Whether the format is one of GGUF's K-quants kept as stored
/// (super-blocks of 256).
constexpr bool isKQuant(WeightFormat format) {
  return isCopiedFromCheckpoint(format) &&
         checkpointBlockElements(format) == 256;
}

/// The format a stored format's name names ("q8_0", "f16"; not a
/// requantized one's).
constexpr std::optional<WeightFormat> parseFormatName(std::string_view name) {
  for (const WeightFormatTraits &row : kWeightFormats)
    if (row.kept != TFM_KEPT_REQUANTIZED && name == row.name)
      return row.format;
  return std::nullopt;
}
/// The format a storage dtype keeps weights in ("int8": Q8_0, "int4-min":
/// Q4_1, "q5_k", "bf16").
constexpr std::optional<WeightFormat> formatOfDtype(std::string_view dtype) {
  for (const WeightFormatTraits &row : kWeightFormats)
    if (row.kept != TFM_KEPT_REQUANTIZED && dtype == row.dtype)
      return row.format;
  return std::nullopt;
}
/// Whether a checkpoint may store the format (every one but tfmc's own
/// q8_channel).
constexpr bool isCheckpointFormat(WeightFormat format) {
  return traitsOf(format).ggmlType != TFM_GGML_NONE;
}
/// The format GGML's type number `type` names, if tfmc reads it.
constexpr std::optional<WeightFormat> formatOfGgmlType(uint32_t type) {
  for (const WeightFormatTraits &row : kWeightFormats)
    if (isCheckpointFormat(row.format) && row.ggmlType == type)
      return row.format;
  return std::nullopt;
}

/// Rows of the panels a matrix stored in `format` is cut into: 32 for
/// floats, 16 for block formats.
constexpr int64_t panelRows(WeightFormat format) {
  return isBlockFormat(format) ? TFM_BLOCK_PANEL_ROWS : TFM_PANEL_WIDTH;
}
/// Bytes of a [rows, cols] matrix in `format`, as panels or row-major
/// (floats), or block panels (block formats).
inline int64_t storedMatrixBytes(WeightFormat format, int64_t rows,
                                 int64_t cols, bool panels) {
  if (isBlockFormat(format))
    return tfm_block_matrix_bytes(blockFormatCode(format), rows, cols);
  if (panels)
    rows = (rows + TFM_PANEL_WIDTH - 1) / TFM_PANEL_WIDTH * TFM_PANEL_WIDTH;
  return rows * cols * checkpointBlockBytes(format);
}

} // namespace mlir::tfm

#endif // TFM_IR_WEIGHTFORMAT_H
