//===- StoredDtypes.cpp - checkpoint element encodings, decoded ---------===//

#include "frontend/StoredDtypes.h"
#include "codegen/WeightEncoding.h"

#include "llvm/Support/Endian.h"

#include <cstring>

using namespace mlir;
using namespace mlir::tfm;
using llvm::support::endian::read16le;

float mlir::tfm::bfloat16ToFloat(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

int64_t mlir::tfm::dtypeBlockElements(WeightDtype dtype) {
  switch (dtype) {
  case WeightDtype::F32:
  case WeightDtype::F16:
  case WeightDtype::BF16: return 1;
  case WeightDtype::Q8_0:
  case WeightDtype::Q4_0:
  case WeightDtype::Q4_1: return 32;
  case WeightDtype::Q4_K:
  case WeightDtype::Q6_K: return 256;
  }
  return 1;
}

int64_t mlir::tfm::dtypeBlockBytes(WeightDtype dtype) {
  switch (dtype) {
  case WeightDtype::F32: return 4;
  case WeightDtype::F16:
  case WeightDtype::BF16: return 2;
  case WeightDtype::Q8_0: return 34;
  case WeightDtype::Q4_0: return 18;
  case WeightDtype::Q4_1: return 20;
  case WeightDtype::Q4_K: return 144;
  case WeightDtype::Q6_K: return 210;
  }
  return 4;
}

int64_t mlir::tfm::dtypeStoredBytes(WeightDtype dtype, int64_t elements) {
  return elements / dtypeBlockElements(dtype) * dtypeBlockBytes(dtype);
}

const char *mlir::tfm::dtypeName(WeightDtype dtype) {
  switch (dtype) {
  case WeightDtype::F32: return "F32";
  case WeightDtype::F16: return "F16";
  case WeightDtype::BF16: return "BF16";
  case WeightDtype::Q8_0: return "Q8_0";
  case WeightDtype::Q4_0: return "Q4_0";
  case WeightDtype::Q4_1: return "Q4_1";
  case WeightDtype::Q4_K: return "Q4_K";
  case WeightDtype::Q6_K: return "Q6_K";
  }
  return "?";
}

namespace {

void decodeQ8_0(const uint8_t *block, float *out) {
  float d = halfToFloat(read16le(block));
  for (int i = 0; i < 32; ++i)
    out[i] = d * float(int8_t(block[2 + i]));
}

void decodeQ4_0(const uint8_t *block, float *out) {
  float d = halfToFloat(read16le(block));
  const uint8_t *qs = block + 2;
  for (int j = 0; j < 16; ++j) {
    out[j] = d * float(int(qs[j] & 0xf) - 8);
    out[j + 16] = d * float(int(qs[j] >> 4) - 8);
  }
}

void decodeQ4_1(const uint8_t *block, float *out) {
  float d = halfToFloat(read16le(block));
  float m = halfToFloat(read16le(block + 2));
  const uint8_t *qs = block + 4;
  for (int j = 0; j < 16; ++j) {
    out[j] = d * float(qs[j] & 0xf) + m;
    out[j + 16] = d * float(qs[j] >> 4) + m;
  }
}

void decodeQ4_K(const uint8_t *block, float *out) {
  float d = halfToFloat(read16le(block));
  float dmin = halfToFloat(read16le(block + 2));
  const uint8_t *packed = block + 4, *qs = block + 16;
  for (int pair = 0; pair < 4; ++pair, qs += 32, out += 64) {
    int scaleLow, minLow, scaleHigh, minHigh;
    q4KScaleMin(2 * pair, packed, scaleLow, minLow);
    q4KScaleMin(2 * pair + 1, packed, scaleHigh, minHigh);
    for (int l = 0; l < 32; ++l) {
      out[l] = d * scaleLow * float(qs[l] & 0xf) - dmin * minLow;
      out[l + 32] = d * scaleHigh * float(qs[l] >> 4) - dmin * minHigh;
    }
  }
}

void decodeQ6_K(const uint8_t *block, float *out) {
  const uint8_t *ql = block, *qh = block + 128;
  const auto *scales = reinterpret_cast<const int8_t *>(block + 192);
  float d = halfToFloat(read16le(block + 208));
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

} // namespace

void mlir::tfm::decodeStoredElements(WeightDtype dtype, const uint8_t *bytes,
                                     int64_t count, float *out) {
  switch (dtype) {
  case WeightDtype::F32:
    std::memcpy(out, bytes, 4 * count);
    return;
  case WeightDtype::F16:
    for (int64_t i = 0; i < count; ++i)
      out[i] = halfToFloat(read16le(bytes + 2 * i));
    return;
  case WeightDtype::BF16:
    for (int64_t i = 0; i < count; ++i)
      out[i] = bfloat16ToFloat(read16le(bytes + 2 * i));
    return;
  default:
    break;
  }
  void (*decodeBlock)(const uint8_t *, float *) =
      dtype == WeightDtype::Q8_0   ? decodeQ8_0
      : dtype == WeightDtype::Q4_0 ? decodeQ4_0
      : dtype == WeightDtype::Q4_1 ? decodeQ4_1
      : dtype == WeightDtype::Q4_K ? decodeQ4_K
                                   : decodeQ6_K;
  int64_t elements = dtypeBlockElements(dtype),
          blockBytes = dtypeBlockBytes(dtype);
  for (int64_t b = 0; b < count / elements; ++b)
    decodeBlock(bytes + b * blockBytes, out + b * elements);
}
