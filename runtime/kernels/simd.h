/*===- simd.h - vector helpers shared by the runtime's kernels ---*- C -*-===//
 *
 * GCC's generic 16-float vectors (one AVX-512 register; two AVX2 or four
 * SSE registers on older CPUs) and the attribute that clones a hot function
 * for AVX-512, AVX2 and baseline x86-64, the best picked at load time: one
 * binary runs everywhere and uses the CPU it finds.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_KERNELS_SIMD_H
#define TFM_RUNTIME_KERNELS_SIMD_H

#include <stdint.h>
#include <string.h>

typedef float v16 __attribute__((vector_size(64)));
typedef int32_t vi16 __attribute__((vector_size(64)));
/* Half as wide: the narrow kernels' vectors, one AVX2 register (see
 * vector_width.h). */
typedef float v8 __attribute__((vector_size(32)));
typedef int32_t vi8 __attribute__((vector_size(32)));

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define TFM_CLONED                                                             \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define TFM_CLONED
#endif
/* Helpers inline into each clone and take its instruction set. */
#define TFM_INLINE static inline __attribute__((always_inline))

enum { kLanes = 16 };

/* n rounded up to whole vectors (head sizes padded in local buffers). */
TFM_INLINE int64_t round_up_to_lanes(int64_t n) {
  return (n + kLanes - 1) / kLanes * kLanes;
}
/* A vector of x, and loads and stores, for either width. In hot loops
 * write scalar · vector instead of a splat: GCC folds the broadcast into
 * the FMA, where a splat() temporary has gone through the stack (four
 * 16-byte stores, one 64-byte load) in the AVX-512 target clones. Loads
 * and stores are unaligned: weights and activations are only
 * float-aligned in general. */
#define TFM_DEFINE_VECTOR_ACCESS(SPLAT, LOAD, STORE, VF)                       \
  TFM_INLINE VF SPLAT(float x) { return (VF){0} + x; }                         \
  TFM_INLINE VF LOAD(const float *p) {                                         \
    VF v;                                                                      \
    memcpy(&v, p, sizeof v);                                                   \
    return v;                                                                  \
  }                                                                            \
  TFM_INLINE void STORE(float *p, VF v) { memcpy(p, &v, sizeof v); }
TFM_DEFINE_VECTOR_ACCESS(splat, load16, store16, v16)
TFM_DEFINE_VECTOR_ACCESS(splat8, load8, store8, v8)
#undef TFM_DEFINE_VECTOR_ACCESS

/* Lane-wise maximum, for either width. */
#define TFM_DEFINE_VMAX(NAME, VF, VI)                                          \
  TFM_INLINE VF NAME(VF a, VF b) {                                             \
    VI greater = a > b;                                                        \
    return (VF)(((VI)a & greater) | ((VI)b & ~greater));                       \
  }
TFM_DEFINE_VMAX(vmax, v16, vi16)
TFM_DEFINE_VMAX(vmax8, v8, vi8)
#undef TFM_DEFINE_VMAX
/* Halving adds: four shuffles instead of fifteen lane extracts. */
TFM_INLINE float hsum(v16 v) {
  v += __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1, 2, 3,
                               4, 5, 6, 7);
  v += __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14, 15, 8,
                               9, 10, 11);
  v += __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8, 9, 14,
                               15, 12, 13);
  v += __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11, 10, 13,
                               12, 15, 14);
  return v[0];
}

TFM_INLINE float hsum8(v8 v) {
  v += __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3);
  v += __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5);
  v += __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6);
  return v[0];
}

/* The largest lane, by the same halvings. */
TFM_INLINE float hmax(v16 v) {
  v = vmax(v, __builtin_shufflevector(v, v, 8, 9, 10, 11, 12, 13, 14, 15, 0, 1,
                                      2, 3, 4, 5, 6, 7));
  v = vmax(v, __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3, 12, 13, 14,
                                      15, 8, 9, 10, 11));
  v = vmax(v, __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5, 10, 11, 8,
                                      9, 14, 15, 12, 13));
  v = vmax(v, __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6, 9, 8, 11,
                                      10, 13, 12, 15, 14));
  return v[0];
}

TFM_INLINE float hmax8(v8 v) {
  v = vmax8(v, __builtin_shufflevector(v, v, 4, 5, 6, 7, 0, 1, 2, 3));
  v = vmax8(v, __builtin_shufflevector(v, v, 2, 3, 0, 1, 6, 7, 4, 5));
  v = vmax8(v, __builtin_shufflevector(v, v, 1, 0, 3, 2, 5, 4, 7, 6));
  return v[0];
}

/* e^x for x <= 0 (scores minus their maximum); exactly 0 below -87, which
 * includes the -inf of masked keys. Cephes' expf: x = n·ln2 + r, |r| <=
 * ln2/2, a degree-6 polynomial for e^r, 2^n through the exponent bits;
 * relative error ~1e-7. */
#define TFM_DEFINE_EXP_NONPOSITIVE(NAME, VF, VI, MAX)                        \
  TFM_INLINE VF NAME(VF x) {                                                   \
    VI underflow = x < -87.0f;                                                 \
    x = MAX(x, (VF){0} - 87.0f);                                               \
    VI n = __builtin_convertvector(x * 1.44269504088896341f - 0.5f, VI);       \
    VF fn = __builtin_convertvector(n, VF);                                    \
    VF r = x - fn * 0.693359375f + fn * 2.12194440e-4f;                        \
    VF p = (VF){0} + 1.9875691500e-4f;                                         \
    p = p * r + 1.3981999507e-3f;                                              \
    p = p * r + 8.3334519073e-3f;                                              \
    p = p * r + 4.1665795894e-2f;                                              \
    p = p * r + 1.6666665459e-1f;                                              \
    p = p * r + 5.0000001201e-1f;                                              \
    p = p * r * r + r + 1.0f;                                                  \
    VI scale = (n + 127) << 23;                                                \
    VF result = p * (VF)scale;                                                 \
    return (VF)((VI)result & ~underflow);                                      \
  }
TFM_DEFINE_EXP_NONPOSITIVE(exp_nonpositive, v16, vi16, vmax)
TFM_DEFINE_EXP_NONPOSITIVE(exp_nonpositive8, v8, vi8, vmax8)
#undef TFM_DEFINE_EXP_NONPOSITIVE

#endif /* TFM_RUNTIME_KERNELS_SIMD_H */
