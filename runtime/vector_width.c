/*===- vector_width.c - which vectors the kernels keep in registers ------===//
 *
 * See vector_width.h.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/vector_width.h"

/* -1: not chosen yet (the CPU decides on first use). */
static int narrow_chosen = -1;

int tfm_kernels_narrow(void) {
  if (narrow_chosen < 0) {
    __builtin_cpu_init();
    narrow_chosen = !__builtin_cpu_supports("avx512f");
  }
  return narrow_chosen;
}

int tfm_kernels_use_narrow(int narrow) {
  int before = tfm_kernels_narrow();
  narrow_chosen = narrow != 0;
  return before;
}
