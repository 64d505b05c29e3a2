/*===- torch_generator.c - PyTorch's CPU generator, bit for bit --------===//
 *
 * at::mt19937 and the uniform and exponential distributions of torch 1.13
 * (torch_generator.h).
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/support/torch_generator.h"

#include <math.h>

enum { kMtWords = 624, kMtShift = 397 };

void tfm_torch_generator_seed(tfm_torch_generator *g, uint64_t seed,
                              tfm_torch_normal_kernel kernel) {
  /* at::mt19937(seed): the classic initialisation from a 32-bit seed. */
  g->state[0] = (uint32_t)(seed & 0xffffffffu);
  for (int j = 1; j < kMtWords; ++j)
    g->state[j] =
        1812433253u * (g->state[j - 1] ^ (g->state[j - 1] >> 30)) + (uint32_t)j;
  g->next = kMtWords;
  g->has_cached_normal = false;
  g->cached_normal = 0;
  g->kernel = kernel;
}

static void regenerate(tfm_torch_generator *g) {
  uint32_t *s = g->state;
  for (int j = 0; j < kMtWords; ++j) {
    uint32_t y = (s[j] & 0x80000000u) | (s[(j + 1) % kMtWords] & 0x7fffffffu);
    s[j] =
        s[(j + kMtShift) % kMtWords] ^ (y >> 1) ^ ((y & 1u) ? 0x9908b0dfu : 0);
  }
  g->next = 0;
}

uint32_t tfm_torch_generator_random(tfm_torch_generator *g) {
  if (g->next >= kMtWords)
    regenerate(g);
  uint32_t y = g->state[g->next++];
  y ^= y >> 11;
  y ^= (y << 7) & 0x9d2c5680u;
  y ^= (y << 15) & 0xefc60000u;
  y ^= y >> 18;
  return y;
}

float tfm_torch_uniform_float(tfm_torch_generator *g) {
  return (float)(tfm_torch_generator_random(g) & 0xffffffu) *
         (1.0f / 16777216.0f);
}

double tfm_torch_uniform_double(tfm_torch_generator *g) {
  uint64_t high = tfm_torch_generator_random(g);
  uint64_t low = tfm_torch_generator_random(g);
  uint64_t bits = ((high << 32) | low) & ((UINT64_C(1) << 53) - 1);
  return (double)bits * (1.0 / 9007199254740992.0);
}

float tfm_torch_exponential(tfm_torch_generator *g) {
  /* transformation::exponential on the CPU: -1 / lambda * log(1 - u). */
  return (float)(-1.0 / 1.0 * log(1.0 - tfm_torch_uniform_double(g)));
}
