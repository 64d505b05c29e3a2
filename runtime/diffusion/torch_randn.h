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
 * The generator itself (mt19937, its uniform draws) is
 * runtime/support/torch_generator.h.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_DIFFUSION_TORCH_RANDN_H
#define TFM_RUNTIME_DIFFUSION_TORCH_RANDN_H

#include "runtime/support/torch_generator.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* torch.randn(n, generator=g) for float32 (any shape of n elements, as the
 * draw does not depend on the shape), continuing g's stream. n <= 0 draws
 * nothing. */
void tfm_torch_randn(tfm_torch_generator *g, float *out, int64_t n);

#ifdef __cplusplus
}
#endif

#endif /* TFM_RUNTIME_DIFFUSION_TORCH_RANDN_H */
