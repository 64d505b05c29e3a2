/*===- simd.h - vector helpers shared by the runtime's kernels ---*- C -*-===//
 *
 * GCC's generic 16-float vectors (one AVX-512 register; two AVX2 or four
 * SSE registers on older CPUs) and the attribute that clones a hot function
 * for AVX-512, AVX2 and baseline x86-64, the best picked at load time: one
 * binary runs everywhere and uses the CPU it finds.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_SIMD_H
#define TFM_RUNTIME_SIMD_H

#include <stdint.h>
#include <string.h>

typedef float v16 __attribute__((vector_size(64)));
typedef int32_t vi16 __attribute__((vector_size(64)));

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
/* In hot loops write scalar · vector instead: GCC folds the broadcast into
 * the FMA, where a splat() temporary has gone through the stack (four
 * 16-byte stores, one 64-byte load) in the AVX-512 target clones. */
TFM_INLINE v16 splat(float x) { return (v16){0} + x; }
/* Unaligned: weights and activations are only float-aligned in general. */
TFM_INLINE v16 load16(const float *p) {
  v16 v;
  memcpy(&v, p, sizeof v);
  return v;
}
TFM_INLINE void store16(float *p, v16 v) { memcpy(p, &v, sizeof v); }

#endif /* TFM_RUNTIME_SIMD_H */
