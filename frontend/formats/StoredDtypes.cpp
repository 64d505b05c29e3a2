//===- StoredDtypes.cpp - checkpoint element encodings, decoded ---------===//

#include "frontend/formats/StoredDtypes.h"
#include "tfm/half_floats.h"
#include "tfm/weight_formats.h"

#include "llvm/Support/Endian.h"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <iterator>

using namespace mlir;
using namespace mlir::tfm;
using llvm::support::endian::read16le;
using llvm::support::endian::read32le;

namespace {

void decodeQ8_0(const uint8_t *block, float *out) {
  float d = tfm_f16_to_float(read16le(block));
  for (int i = 0; i < 32; ++i)
    out[i] = d * float(int8_t(block[2 + i]));
}

void decodeQ4_0(const uint8_t *block, float *out) {
  float d = tfm_f16_to_float(read16le(block));
  const uint8_t *qs = block + 2;
  for (int j = 0; j < 16; ++j) {
    out[j] = d * float(int(qs[j] & 0xf) - 8);
    out[j + 16] = d * float(int(qs[j] >> 4) - 8);
  }
}

void decodeQ4_1(const uint8_t *block, float *out) {
  float d = tfm_f16_to_float(read16le(block));
  float m = tfm_f16_to_float(read16le(block + 2));
  const uint8_t *qs = block + 4;
  for (int j = 0; j < 16; ++j) {
    out[j] = d * float(qs[j] & 0xf) + m;
    out[j + 16] = d * float(qs[j] >> 4) + m;
  }
}

void decodeQ4_K(const uint8_t *block, float *out) {
  float d = tfm_f16_to_float(read16le(block));
  float dmin = tfm_f16_to_float(read16le(block + 2));
  const uint8_t *packed = block + 4, *qs = block + 16;
  for (int pair = 0; pair < 4; ++pair, qs += 32, out += 64) {
    int scaleLow, minLow, scaleHigh, minHigh;
    tfm_q4k_scale_min(2 * pair, packed, &scaleLow, &minLow);
    tfm_q4k_scale_min(2 * pair + 1, packed, &scaleHigh, &minHigh);
    for (int l = 0; l < 32; ++l) {
      out[l] = d * scaleLow * float(qs[l] & 0xf) - dmin * minLow;
      out[l + 32] = d * scaleHigh * float(qs[l] >> 4) - dmin * minHigh;
    }
  }
}

void decodeQ6_K(const uint8_t *block, float *out) {
  const uint8_t *ql = block, *qh = block + 128;
  const auto *scales = reinterpret_cast<const int8_t *>(block + 192);
  float d = tfm_f16_to_float(read16le(block + 208));
  for (int half = 0; half < 2; ++half, ql += 64, qh += 32, scales += 8,
           out += 128) {
    for (int l = 0; l < 32; ++l) {
      int sub = l / 16;
      int q1 = ((ql[l] & 0xf) | (((qh[l] >> 0) & 3) << 4)) - 32;
      int q2 = ((ql[l + 32] & 0xf) | (((qh[l] >> 2) & 3) << 4)) - 32;
      int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
      int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
      out[l] = d * scales[sub] * q1;
      out[l + 32] = d * scales[sub + 2] * q2;
      out[l + 64] = d * scales[sub + 4] * q3;
      out[l + 96] = d * scales[sub + 6] * q4;
    }
  }
}

/// The bit of element `j` (0..31) in a Q5_0/Q5_1 block's 32-bit `qh`.
int fifthBit(uint32_t qh, int j) { return (qh >> j) & 1; }

void decodeQ5_0(const uint8_t *block, float *out) {
  float d = tfm_f16_to_float(read16le(block));
  uint32_t qh = read32le(block + 2);
  const uint8_t *qs = block + 6;
  for (int j = 0; j < 16; ++j) {
    out[j] = d * float(((qs[j] & 0xf) | fifthBit(qh, j) << 4) - 16);
    out[j + 16] = d * float(((qs[j] >> 4) | fifthBit(qh, j + 16) << 4) - 16);
  }
}

void decodeQ5_1(const uint8_t *block, float *out) {
  float d = tfm_f16_to_float(read16le(block));
  float m = tfm_f16_to_float(read16le(block + 2));
  uint32_t qh = read32le(block + 4);
  const uint8_t *qs = block + 8;
  for (int j = 0; j < 16; ++j) {
    out[j] = d * float((qs[j] & 0xf) | fifthBit(qh, j) << 4) + m;
    out[j + 16] = d * float((qs[j] >> 4) | fifthBit(qh, j + 16) << 4) + m;
  }
}

void decodeQ5_K(const uint8_t *block, float *out) {
  float d = tfm_f16_to_float(read16le(block));
  float dmin = tfm_f16_to_float(read16le(block + 2));
  const uint8_t *packed = block + 4, *qh = block + 16, *qs = block + 48;
  // Sub-blocks pair up as Q4_K's; the fifth bit of sub-block j's element
  // l is bit j of qh[l].
  for (int pair = 0; pair < 4; ++pair, qs += 32, out += 64) {
    int scaleLow, minLow, scaleHigh, minHigh;
    tfm_q4k_scale_min(2 * pair, packed, &scaleLow, &minLow);
    tfm_q4k_scale_min(2 * pair + 1, packed, &scaleHigh, &minHigh);
    for (int l = 0; l < 32; ++l) {
      int low = (qs[l] & 0xf) | ((qh[l] >> (2 * pair)) & 1) << 4;
      int high = (qs[l] >> 4) | ((qh[l] >> (2 * pair + 1)) & 1) << 4;
      out[l] = d * scaleLow * float(low) - dmin * minLow;
      out[l + 32] = d * scaleHigh * float(high) - dmin * minHigh;
    }
  }
}

void decodeQ2_K(const uint8_t *block, float *out) {
  const uint8_t *scales = block, *qs = block + 16;
  float d = tfm_f16_to_float(read16le(block + 80));
  float dmin = tfm_f16_to_float(read16le(block + 82));
  // Two halves of 128; in each, shift s of its 32 bytes holds sub-blocks
  // 2s (bytes 0-15) and 2s + 1 (bytes 16-31) of 16 elements, each with a
  // 4-bit scale (low nibble) and minimum (high nibble).
  for (int half = 0; half < 2; ++half, qs += 32)
    for (int shift = 0; shift < 8; shift += 2)
      for (int part = 0; part < 2; ++part, ++scales, out += 16)
        for (int l = 0; l < 16; ++l)
          out[l] = d * float(*scales & 0xf) *
                       float((qs[16 * part + l] >> shift) & 3) -
                   dmin * float(*scales >> 4);
}

/// Q3_K's 16 signed 6-bit scales, unpacked from 12 bytes: the low
/// nibbles of bytes 0-7 hold scales 0-7, their high nibbles 8-15, and
/// bytes 8-11 the two high bits of each, in four groups of four.
void q3KScales(const uint8_t *packed, int *scales) {
  for (int j = 0; j < 16; ++j) {
    int low = (packed[j % 8] >> (4 * (j / 8))) & 0xf;
    int high = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
    scales[j] = (low | high << 4) - 32;
  }
}

void decodeQ3_K(const uint8_t *block, float *out) {
  const uint8_t *hmask = block, *qs = block + 32;
  int scales[16];
  q3KScales(block + 96, scales);
  float d = tfm_f16_to_float(read16le(block + 108));
  // As Q2_K's layout, with a third bit per element in hmask: bit
  // (half·4 + shift/2) of hmask[l]; a code is the two low bits minus 4
  // where that bit is clear.
  const int *scale = scales;
  for (int half = 0; half < 2; ++half, qs += 32)
    for (int shift = 0; shift < 8; shift += 2)
      for (int part = 0; part < 2; ++part, ++scale, out += 16) {
        int bit = 4 * half + shift / 2;
        for (int l = 0; l < 16; ++l) {
          int element = 16 * part + l;
          int code = ((qs[element] >> shift) & 3) -
                     ((hmask[element] >> bit) & 1 ? 0 : 4);
          out[l] = d * float(*scale) * float(code);
        }
      }
}

/// IQ4_NL's and IQ4_XS's 16 levels (llama.cpp's kvalues_iq4nl), which a
/// nibble indexes: denser near zero, where weights are.
constexpr int8_t kIq4Levels[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                   1,    13,   25,  38,  53,  69,  89,  113};

/// 32 elements of IQ4: 16 bytes of nibbles (the low ones first), times `d`.
void decodeIq4Nibbles(const uint8_t *qs, float d, float *out) {
  for (int j = 0; j < 16; ++j) {
    out[j] = d * float(kIq4Levels[qs[j] & 0xf]);
    out[j + 16] = d * float(kIq4Levels[qs[j] >> 4]);
  }
}

void decodeIQ4_NL(const uint8_t *block, float *out) {
  decodeIq4Nibbles(block + 2, tfm_f16_to_float(read16le(block)), out);
}

void decodeIQ4_XS(const uint8_t *block, float *out) {
  float d = tfm_f16_to_float(read16le(block));
  uint16_t scalesHigh = read16le(block + 2);
  const uint8_t *scalesLow = block + 4, *qs = block + 8;
  for (int sub = 0; sub < 8; ++sub) {
    int scale = ((scalesLow[sub / 2] >> (4 * (sub % 2))) & 0xf) |
                ((scalesHigh >> (2 * sub)) & 3) << 4;
    decodeIq4Nibbles(qs + 16 * sub, d * float(scale - 32), out + 32 * sub);
  }
}

/// MXFP4's E2M1 values, by code (OCP Microscaling Formats v1.0, 5.3.3).
constexpr float kE2M1Values[16] = {0,  0.5f,  1,  1.5f,  2,  3,  4,  6,
                                   -0, -0.5f, -1, -1.5f, -2, -3, -4, -6};

void decodeMXFP4(const uint8_t *block, float *out) {
  // 2^(e - 127); e = 255 (NaN) is refused before anything decodes.
  float scale = std::ldexp(1.0f, int(block[0]) - 127);
  for (int j = 0; j < 16; ++j) {
    out[j] = scale * kE2M1Values[block[1 + j] & 0xf];
    out[j + 16] = scale * kE2M1Values[block[1 + j] >> 4];
  }
}

using BlockDecoder = void (*)(const uint8_t *, float *);

/// A scale of a block: its byte offset, name (ggml-common.h's) and
/// encoding (an f16, or MXFP4's E8M0 exponent byte).
struct ScaleField {
  int offset;
  const char *name; // null: no such field
  bool e8m0 = false;
};

/// Each format's decoder and f16 scales, in WeightFormat's order (its name
/// and block sizes are the table's, ir/WeightFormat.h).
struct DtypeLayout {
  WeightFormat dtype;
  BlockDecoder decode; // null for the floats, decoded element by element
  ScaleField scales[2];
};

constexpr ScaleField kNone = {0, nullptr};

constexpr DtypeLayout kLayouts[] = {
    {WeightFormat::F32, nullptr, {kNone, kNone}},
    {WeightFormat::F16, nullptr, {kNone, kNone}},
    {WeightFormat::BF16, nullptr, {kNone, kNone}},
    {WeightFormat::Q8_0, decodeQ8_0, {{0, "d"}, kNone}},
    {WeightFormat::Q4_0, decodeQ4_0, {{0, "d"}, kNone}},
    {WeightFormat::Q4_1, decodeQ4_1, {{0, "d"}, {2, "m"}}},
    {WeightFormat::Q4_K, decodeQ4_K, {{0, "d"}, {2, "dmin"}}},
    {WeightFormat::Q6_K, decodeQ6_K, {{208, "d"}, kNone}},
    {WeightFormat::Q5_0, decodeQ5_0, {{0, "d"}, kNone}},
    {WeightFormat::Q5_1, decodeQ5_1, {{0, "d"}, {2, "m"}}},
    {WeightFormat::Q2_K, decodeQ2_K, {{80, "d"}, {82, "dmin"}}},
    {WeightFormat::Q3_K, decodeQ3_K, {{108, "d"}, kNone}},
    {WeightFormat::Q5_K, decodeQ5_K, {{0, "d"}, {2, "dmin"}}},
    {WeightFormat::IQ4_NL, decodeIQ4_NL, {{0, "d"}, kNone}},
    {WeightFormat::IQ4_XS, decodeIQ4_XS, {{0, "d"}, kNone}},
    {WeightFormat::MXFP4, decodeMXFP4, {{0, "e", true}, kNone}},
    // tfmc's own: no checkpoint stores it (isCheckpointFormat); its
    // blocks would be Q8_0's.
    {WeightFormat::Q8_CHANNEL, decodeQ8_0, {{0, "d"}, kNone}},
};

constexpr bool layoutsInEnumOrder() {
  for (size_t i = 0; i < std::size(kLayouts); ++i)
    if (static_cast<size_t>(kLayouts[i].dtype) != i)
      return false;
  return std::size(kLayouts) == TFM_FORMAT_COUNT;
}
static_assert(layoutsInEnumOrder(), "kLayouts: one row per WeightFormat");

const DtypeLayout &layoutOf(WeightFormat dtype) {
  return kLayouts[static_cast<size_t>(dtype)];
}

} // namespace

std::optional<NonFiniteScale>
mlir::tfm::findNonFiniteScale(WeightFormat dtype, const uint8_t *bytes,
                              int64_t blocks) {
  const DtypeLayout &layout = layoutOf(dtype);
  for (int64_t b = 0; b < blocks; ++b)
    for (const ScaleField &scale : layout.scales) {
      if (!scale.name)
        continue;
      const uint8_t *field =
          bytes + b * checkpointBlockBytes(dtype) + scale.offset;
      // E8M0's one NaN, 0xff; an f16 whose exponent bits are all set:
      // infinity or NaN.
      if (scale.e8m0 && *field == 0xff)
        return NonFiniteScale{b, scale.name, *field, true};
      uint16_t bits = scale.e8m0 ? 0 : read16le(field);
      if ((bits & 0x7c00) == 0x7c00)
        return NonFiniteScale{b, scale.name, bits, false};
    }
  return std::nullopt;
}

std::string mlir::tfm::describeNonFiniteScale(const NonFiniteScale &scale) {
  char hex[8];
  std::snprintf(hex, sizeof hex, "%x", unsigned(scale.bits));
  if (scale.e8m0)
    return std::string("NaN (E8M0 0x") + hex + ")";
  const char *what = (scale.bits & 0x3ff)    ? "NaN"
                     : (scale.bits & 0x8000) ? "-infinity"
                                             : "infinity";
  return std::string(what) + " (f16 0x" + hex + ")";
}

void mlir::tfm::decodeStoredElements(WeightFormat dtype, const uint8_t *bytes,
                                     int64_t count, float *out) {
  switch (dtype) {
  case WeightFormat::F32:
    std::memcpy(out, bytes, 4 * count);
    return;
  case WeightFormat::F16:
    for (int64_t i = 0; i < count; ++i)
      out[i] = tfm_f16_to_float(read16le(bytes + 2 * i));
    return;
  case WeightFormat::BF16:
    for (int64_t i = 0; i < count; ++i)
      out[i] = tfm_bf16_to_float(read16le(bytes + 2 * i));
    return;
  default:
    break;
  }
  int64_t elements = checkpointBlockElements(dtype),
          blockBytes = checkpointBlockBytes(dtype);
  for (int64_t b = 0; b < count / elements; ++b)
    layoutOf(dtype).decode(bytes + b * blockBytes, out + b * elements);
}
