/* The CUDA emulator's semantics with hand-written kernels (cuda-emulator.test):
 * a butterfly shuffle sum, a shuffle among two lanes while the others wait
 * at a barrier (how reductions finish), an mma.sync against a plain
 * product, and a deadlock the emulator must report instead of hanging;
 * with the argument "pointers", a kernel given device memory and then host
 * memory, which the emulator must refuse as a GPU would fault on it.
 * Prints one line per check; exits non-zero on the first wrong one. */
#include "runtime/cuda/cuda_driver_api.h"
#include "runtime/cuda/cuda_emulator.h"

#include <stdio.h>
#include <string.h>

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, unsigned smem,
                        CUstream s, void **params, void **extra);
CUresult cuModuleGetFunction(CUfunction *out, CUmodule m, const char *name);
CUresult cuMemAlloc_v2(CUdeviceptr *out, size_t bytes);

static int out[64];
static float mma_out[32][4];

static uint32_t shuffle(int mode, uint32_t mask, uint32_t v, int lane) {
  int32_t valid;
  return tfm_emu_shfl(mode, mask, v, lane, 31, &valid);
}

static void butterfly(void **params) {
  (void)params;
  uint32_t v = (uint32_t)tfm_emu_sreg(TFM_EMU_TID);
  for (int offset = 16; offset > 0; offset /= 2)
    v += shuffle(TFM_EMU_SHFL_BFLY, 0xffffffffu, v, offset);
  out[tfm_emu_sreg(TFM_EMU_TID)] = (int)v;
}

/* Lanes 0 and 1 of warp 0 sum their values by a masked shuffle; all 64
 * threads meet at a barrier afterwards. */
static void partial(void **params) {
  (void)params;
  int tid = tfm_emu_sreg(TFM_EMU_TID);
  uint32_t v = (uint32_t)(tid + 1);
  if (tid < 2)
    v += shuffle(TFM_EMU_SHFL_BFLY, 0x3u, v, 1);
  tfm_emu_barrier();
  out[tid] = (int)v;
}

/* bf16 values that are small integers: exact in any order of sums. */
static uint32_t pair(float lo, float hi) {
  uint32_t a, b;
  memcpy(&a, &lo, 4);
  memcpy(&b, &hi, 4);
  return (a >> 16) | (b >> 16) << 16;
}
static float A(int r, int k) { return (float)((r + 2 * k) % 5 - 2); }
static float B(int k, int c) { return (float)((3 * k + c) % 4 - 1); }

static void mma(void **params) {
  (void)params;
  int l = tfm_emu_sreg(TFM_EMU_LANEID), g = l / 4, t = l % 4;
  uint32_t a[4], b[2];
  float c[4], d[4];
  for (int r = 0; r < 4; ++r) {
    int row = g + (r & 1) * 8, col = 2 * t + (r >> 1) * 8;
    a[r] = pair(A(row, col), A(row, col + 1));
  }
  for (int r = 0; r < 2; ++r)
    b[r] = pair(B(2 * t + r * 8, g), B(2 * t + 1 + r * 8, g));
  for (int i = 0; i < 4; ++i)
    c[i] = 0.5f;
  tfm_emu_mma_m16n8k16(TFM_EMU_MMA_BF16, a, b, c, d);
  memcpy(mma_out[l], d, sizeof d);
}

/* Thread 0 waits at a barrier, the others at a full-warp shuffle that
 * lane 0 never reaches: a deadlock. */
static void deadlock(void **params) {
  (void)params;
  if (tfm_emu_sreg(TFM_EMU_TID) == 0)
    tfm_emu_barrier();
  else
    shuffle(TFM_EMU_SHFL_IDX, 0xffffffffu, 1, 0);
}

/* Thread 0 stores 1 where its one parameter, a pointer, points. */
static void store_one(void **params) {
  if (tfm_emu_sreg(TFM_EMU_TID) == 0)
    **(int **)params[0] = 1;
}

const tfm_emu_kernel tfm_emu_kernels[] = {{"butterfly", butterfly, ""},
                                          {"partial", partial, ""},
                                          {"mma", mma, ""},
                                          {"deadlock", deadlock, ""},
                                          {"store_one", store_one, "p"}};
const int64_t tfm_emu_kernel_count = 5;

static CUresult launch(const char *name, unsigned threads) {
  CUfunction f;
  if (cuModuleGetFunction(&f, NULL, name) != CUDA_SUCCESS)
    return -1;
  return cuLaunchKernel(f, 1, 1, 1, threads, 1, 1, 0, NULL, NULL, NULL);
}

/* store_one into device memory, then into host memory: the second launch
 * fails before the kernel runs (a GPU would fault on it). */
static int check_pointers(void) {
  CUdeviceptr device;
  if (cuMemAlloc_v2(&device, sizeof(int)) != CUDA_SUCCESS)
    return 1;
  CUfunction f;
  if (cuModuleGetFunction(&f, NULL, "store_one") != CUDA_SUCCESS)
    return 1;
  int *target = (int *)(uintptr_t)device;
  void *params[] = {&target};
  *target = 0;
  if (cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) !=
          CUDA_SUCCESS ||
      *target != 1)
    return printf("pointers: the launch on device memory failed\n"), 1;
  printf("pointers: device memory written\n");
  static int host;
  target = &host;
  if (cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, NULL, params, NULL) ==
          CUDA_SUCCESS ||
      host != 0)
    return printf("pointers: host memory written\n"), 1;
  printf("pointers: the launch on host memory failed\n");
  return 0;
}

int main(int argc, char **argv) {
  if (argc > 1 && strcmp(argv[1], "pointers") == 0)
    return check_pointers();
  if (launch("butterfly", 32) != CUDA_SUCCESS)
    return 1;
  for (int i = 0; i < 32; ++i)
    if (out[i] != 496)
      return printf("butterfly: lane %d got %d\n", i, out[i]), 1;
  printf("butterfly: every lane 496\n");
  if (launch("partial", 64) != CUDA_SUCCESS)
    return 1;
  for (int i = 0; i < 64; ++i)
    if (out[i] != (i < 2 ? 3 : i + 1))
      return printf("partial: thread %d got %d\n", i, out[i]), 1;
  printf("partial: lanes 0 and 1 summed, the rest past the barrier\n");
  if (launch("mma", 32) != CUDA_SUCCESS)
    return 1;
  for (int l = 0; l < 32; ++l)
    for (int i = 0; i < 4; ++i) {
      int row = l / 4 + (i >> 1) * 8, col = 2 * (l % 4) + (i & 1);
      float expected = 0.5f;
      for (int k = 0; k < 16; ++k)
        expected += A(row, k) * B(k, col);
      if (mma_out[l][i] != expected)
        return printf("mma: lane %d element %d got %g, expected %g\n", l, i,
                      mma_out[l][i], expected),
               1;
    }
  printf("mma: D = A x B + C in every lane's fragment\n");
  if (launch("deadlock", 32) == CUDA_SUCCESS)
    return printf("deadlock: the launch succeeded\n"), 1;
  printf("deadlock: the launch failed\n");
  return 0;
}
