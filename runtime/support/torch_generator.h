/*===- torch_generator.h - PyTorch's CPU generator, bit for bit -*- C -*-===*
 *
 * torch 1.13's CPUGeneratorImpl: an mt19937 seeded with the low 32 bits of
 * `torch.manual_seed(seed)`, and the uniform and exponential draws its CPU
 * kernels make from it. The runtime draws what torch draws where a user
 * compares against a torch program seed for seed: Stable Diffusion's
 * latents and noise (runtime/diffusion/torch_randn.h's Gaussian kernel)
 * and Whisper's sampled fallback windows (torch.multinomial's exponential
 * draws, runtime/transcribe).
 *
 * A generator is a plain struct (no allocation); it is not thread-safe, as
 * a torch.Generator is not.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_SUPPORT_TORCH_GENERATOR_H
#define TFM_RUNTIME_SUPPORT_TORCH_GENERATOR_H

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

/* uniform_real_distribution<float>(0, 1): 24 random bits. */
float tfm_torch_uniform_float(tfm_torch_generator *g);

/* uniform_real_distribution<double>(0, 1): 53 bits of random64(), whose
 * first 32-bit draw is the high word. */
double tfm_torch_uniform_double(tfm_torch_generator *g);

/* Tensor.exponential_(1) on a float32 CPU tensor, one element:
 * exponential_distribution<double>(1), -log(1 - u) of a double uniform,
 * cast to float (the portable kernel; torch built with MKL draws
 * otherwise, Debian's is not). */
float tfm_torch_exponential(tfm_torch_generator *g);

#ifdef __cplusplus
}
#endif

#endif /* TFM_RUNTIME_SUPPORT_TORCH_GENERATOR_H */
