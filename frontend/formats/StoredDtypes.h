//===- StoredDtypes.h - checkpoint element encodings, decoded ---*- C++ -*-===//
//
// How each WeightFormat lays out its elements, and their decoding to f32:
// IEEE half, bfloat16, and GGML's block formats as llama.cpp writes them
// into GGUF files (ggml-common.h's block_q8_0, block_q4_0, ...,
// block_iq4_xs; all little endian):
//
//   Q8_0  32 elements, 34 bytes: f16 d, int8 q[32];           x = d·q
//   Q4_0  32 elements, 18 bytes: f16 d, uint8 qs[16]; element j < 16 is
//         the low nibble of qs[j], element j + 16 its high nibble;
//                                                               x = d·(q − 8)
//   Q4_1  32 elements, 20 bytes: f16 d, f16 m, uint8 qs[16], nibbles as
//         Q4_0's;                                               x = d·q + m
//   Q4_K  256 elements, 144 bytes: f16 d, f16 dmin, uint8 scales[12],
//         uint8 qs[128]; 8 sub-blocks of 32 with 6-bit scale s and min m
//         packed in `scales`; each 32 bytes of qs hold two sub-blocks (low
//         nibbles, then high nibbles);               x = d·s·q − dmin·m
//   Q6_K  256 elements, 210 bytes: uint8 ql[128], uint8 qh[64], int8
//         scales[16], f16 d; 6-bit q = 4 low bits from ql, 2 high bits from
//         qh, in two halves of 128; 16 sub-blocks of 16 with an int8 scale;
//                                                          x = d·s·(q − 32)
//
// Read, and requantized for the kernels (checkpointDtype):
//
//   Q5_0  32 elements, 22 bytes: f16 d, uint32 qh, uint8 qs[16]; nibbles
//         as Q4_0's, the fifth bit of element j is bit j of qh;
//                                                              x = d·(q − 16)
//   Q5_1  32 elements, 24 bytes: f16 d, f16 m, uint32 qh, uint8 qs[16];
//                                                               x = d·q + m
//   Q2_K  256 elements, 84 bytes: uint8 scales[16] (4-bit scale s, 4-bit
//         min m), uint8 qs[64], f16 d, f16 dmin; 2-bit q in two halves of
//         128, each 32 bytes of qs shifted by 0, 2, 4, 6 for its four
//         pairs of 16-element sub-blocks;            x = d·s·q − dmin·m
//   Q3_K  256 elements, 110 bytes: uint8 hmask[32], uint8 qs[64], uint8
//         scales[12] (16 6-bit scales, minus 32), f16 d; q's two low bits
//         as Q2_K's, its third in hmask (4 is subtracted where it is
//         clear);                                         x = d·s·q
//   Q5_K  256 elements, 176 bytes: Q4_K's fields plus uint8 qh[32] before
//         qs: bit j of qh[l] is the fifth bit of sub-block j's element l;
//                                                    x = d·s·q − dmin·m
//   IQ4_NL 32 elements, 18 bytes: f16 d, uint8 qs[16], nibbles as Q4_0's
//         indexing 16 non-uniform levels L (−127 ... 113); x = d·L[q]
//   IQ4_XS 256 elements, 136 bytes: f16 d, uint16 scales_h, uint8
//         scales_l[4] (8 6-bit scales, minus 32), uint8 qs[128]: 8 IQ4_NL
//         blocks without their d;                        x = d·s·L[q]
//
// Kept as stored, like Q4_K (gpt-oss's experts):
//
//   MXFP4 32 elements, 17 bytes: uint8 e (E8M0: 2^(e − 127), 0xff NaN),
//         uint8 qs[16], nibbles as Q4_0's, each an E2M1 code naming
//         {0, .5, 1, 1.5, 2, 3, 4, 6} and their negatives;  x = 2^(e−127)·v[q]
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FORMATS_STOREDDTYPES_H
#define TFM_FRONTEND_FORMATS_STOREDDTYPES_H

#include "frontend/formats/WeightStore.h"

#include <cstdint>
#include <optional>
#include <string>

namespace mlir::tfm {

/// A block scale that is not a finite number: block `block`'s f16 field
/// `field` ("d", "dmin", "m"), or MXFP4's E8M0 exponent "e" (`e8m0`),
/// whose bits are `bits`.
struct NonFiniteScale {
  int64_t block;
  const char *field;
  uint16_t bits;
  bool e8m0;
};

/// Describes a NonFiniteScale's value: "NaN (f16 0x7e00)", "infinity
/// (f16 0x7c00)", "NaN (E8M0 0xff)".
std::string describeNonFiniteScale(const NonFiniteScale &scale);

/// The first of `blocks` consecutive blocks of `dtype` at `bytes` whose f16
/// scale (d, or its minimum's dmin or m) is infinite or NaN, if any (none
/// for the float dtypes). A corrupt file's such blocks would decode to NaN
/// everywhere, or to zeros where a kernel clamps them, with nothing said.
std::optional<NonFiniteScale>
findNonFiniteScale(WeightFormat dtype, const uint8_t *bytes, int64_t blocks);

/// Decodes `count` consecutive elements of `dtype` stored at `bytes` into
/// `out`; for a block dtype, `count` is a whole number of blocks and
/// `bytes` the start of one.
void decodeStoredElements(WeightFormat dtype, const uint8_t *bytes,
                          int64_t count, float *out);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FORMATS_STOREDDTYPES_H
