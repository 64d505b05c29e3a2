/*===- vector_width.c - which vectors the kernels keep in registers ------===//
 *
 * See vector_width.h.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/kernels/vector_width.h"

#include <stdlib.h>
#include <string.h>

/* -1: not chosen yet (the CPU decides on first use). */
static int narrow_chosen = -1;

/* The environment variable TFM_NARROW_KERNELS=1 asks for the narrow
 * variants on a CPU with AVX-512 (what a CPU with AVX2 only runs, checked
 * there), and =0 for the wide ones on any CPU (what the kernels were
 * before they had narrow variants, measured). */
int tfm_kernels_narrow(void) {
  if (narrow_chosen < 0) {
    __builtin_cpu_init();
    const char *requested = getenv("TFM_NARROW_KERNELS");
    if (requested && (!strcmp(requested, "0") || !strcmp(requested, "1")))
      narrow_chosen = requested[0] == '1';
    else
      narrow_chosen = !__builtin_cpu_supports("avx512f");
  }
  return narrow_chosen;
}

int tfm_cpu_is_amd(void) {
  static int amd = -1;
  if (amd < 0) {
    __builtin_cpu_init();
    amd = __builtin_cpu_is("amd");
  }
  return amd;
}

int tfm_kernels_use_narrow(int narrow) {
  int before = tfm_kernels_narrow();
  narrow_chosen = narrow != 0;
  return before;
}
