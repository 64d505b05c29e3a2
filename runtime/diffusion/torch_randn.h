/*===- torch_randn.h - PyTorch's CPU Gaussian draws, bit for bit -*- C -*-===*
 *
 * Stable Diffusion's initial latents are `torch.randn(shape, generator=
 * torch.Generator().manual_seed(seed))` in diffusers' pipelines, and Euler
 * ancestral draws its per-step noise from the same generator. To give the
 * image a diffusers user gets for a seed, the runtime draws the same
 * numbers: torch 1.13's CPUGeneratorImpl (an mt19937 seeded with the low 32
 * bits of the seed) and its float32 normal kernel:
 *   - n >= 16: every value first gets a uniform draw (24 random bits), then
 *     each block of 16 becomes 8 Box-Muller pairs (u1 = 1 - data[j],
 *     u2 = data[j + 8]); when n is not a multiple of 16 the last 16 values
 *     are drawn again and transformed again, overwriting the tail;
 *   - n < 16: one double-precision Box-Muller pair per two values (53-bit
 *     uniforms), the second value of a pair cached in the generator for the
 *     next draw, as torch caches it across calls.
 * The 16-wide transform exists twice in torch: the AVX2 kernel (Cephes-style
 * log and sincos polynomials, what torch runs on every x86 CPU with AVX2,
 * AVX-512 ones included) and the portable one (libm's logf, cosf and sinf,
 * what it runs without AVX2, e.g. on ARM). Both are reproduced in portable
 * C; TFM_TORCH_NORMAL_AVX2 is the default whatever this machine is.
 *
 * A generator is a plain struct (no allocation); it is not thread-safe, as
 * a torch.Generator is not.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_DIFFUSION_TORCH_RANDN_H
#define TFM_RUNTIME_DIFFUSION_TORCH_RANDN_H

#include <stdbool.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* AVX2: torch on x86 with AVX2, the usual case. PORTABLE: torch without
 * AVX2 (ATEN_CPU_CAPABILITY=default, ARM). */
typedef enum {
  TFM_TORCH_NORMAL_AVX2 = 0,
  TFM_TORCH_NORMAL_PORTABLE = 1
} tfm_torch_normal_kernel;

typedef struct {
  uint32_t state[624];    /* mt19937 */
  int32_t next;           /* index of the next word; 624: regenerate first */
  bool has_cached_normal; /* torch's next_double_normal_sample */
  double cached_normal;
  tfm_torch_normal_kernel kernel;
} tfm_torch_generator;

/* torch.Generator().manual_seed(seed): only the low 32 bits of `seed`
 * matter, as in torch. Clears the cached normal. */
void tfm_torch_generator_seed(tfm_torch_generator *g, uint64_t seed,
                              tfm_torch_normal_kernel kernel);

/* The generator's next 32 random bits (CPUGeneratorImpl::random). */
uint32_t tfm_torch_generator_random(tfm_torch_generator *g);

/* torch.randn(n, generator=g) for float32 (any shape of n elements, as the
 * draw does not depend on the shape), continuing g's stream. n <= 0 draws
 * nothing. */
void tfm_torch_randn(tfm_torch_generator *g, float *out, int64_t n);

#ifdef __cplusplus
}
#endif

#endif /* TFM_RUNTIME_DIFFUSION_TORCH_RANDN_H */
