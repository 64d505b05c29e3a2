/*===- cuda_emulator.h - a CUDA driver that runs kernels on the CPU -*- C -*-===//
 *
 * `tfmc --target=cuda --emit=cuda-emulator -o libemu.so` compiles a model's
 * GPU kernels for the host instead of to PTX and links them with
 * cuda_emulator.c into a stand-in for libcuda.so.1. A CUDA build of the
 * same model run with TFM_CUDA_DRIVER=libemu.so then loads its PTX into
 * the emulator, which launches the host versions of its kernels: the GPU
 * path's numerics (tiling, shared memory, shuffles, tensor-core fragments,
 * split attention) checked on a machine without a GPU, slowly.
 *
 * Each block's threads are fibers on one host thread, switched where the
 * kernel waits for the others: at a barrier (the whole block), and at a
 * shuffle (the lanes of its mask) or an mma.sync (the whole warp), whose
 * lanes' operands are gathered and whose results are handed out as the
 * hardware would. Blocks run one after another, so a kernel's static
 * shared memory is one global of the host code. A barrier that not every
 * running thread reaches, or lanes of one mask waiting at different
 * collectives, are deadlocks on a GPU: here the launch fails and says
 * where.
 *
 * TFM_CUDA_EMULATOR_FAIL makes it fail as real machines do, so that the
 * runtime's CUDA error paths run without a GPU (cuda-target.test):
 *   no-device  cuInit reports CUDA_ERROR_NO_DEVICE (no GPU, or none visible)
 *   bad-ptx    the driver rejects the kernels' PTX, with a JIT log
 *   launch     modules load, every kernel launch fails
 *
 * What the compiler emits and this file reads, and the stand-ins for the
 * NVVM intrinsics that the kernels call (codegen/cuda/KernelsOnHost.cpp
 * rewrites each intrinsic to one of these).
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_CUDA_CUDA_EMULATOR_H
#define TFM_RUNTIME_CUDA_CUDA_EMULATOR_H

#include <stdint.h>

/* A kernel, entered with the launch's parameter array (pointers to each
 * argument, as cuLaunchKernel takes them). `params` has a character per
 * parameter, 'p' for a pointer: each must point into device memory (an
 * allocation of cuMemAlloc's) or be null, which the emulator checks at the
 * launch, since here host memory would read as well as device memory. */
typedef struct {
  const char *name;
  void (*entry)(void **params);
  const char *params;
} tfm_emu_kernel;

/* The kernels of the model the emulator was built for. */
extern const tfm_emu_kernel tfm_emu_kernels[];
extern const int64_t tfm_emu_kernel_count;

/* The special registers: kind * 3 + dimension (x, y, z). */
enum {
  TFM_EMU_TID = 0,     /* thread index */
  TFM_EMU_NTID = 3,    /* block size */
  TFM_EMU_CTAID = 6,   /* block index */
  TFM_EMU_NCTAID = 9,  /* grid size */
  TFM_EMU_LANEID = 12, /* lane in the warp */
  TFM_EMU_WARPSIZE = 13
};
int32_t tfm_emu_sreg(int32_t which);

/* bar.sync: waits for every running thread of the block. */
void tfm_emu_barrier(void);
/* bar.warp.sync: waits for the warp's running lanes. */
void tfm_emu_warp_sync(uint32_t mask);

/* shfl.sync in mode TFM_EMU_SHFL_*: the 32-bit value of the lane the PTX
 * rules pick, and whether that lane was in range (*valid). */
enum {
  TFM_EMU_SHFL_IDX = 0,
  TFM_EMU_SHFL_UP = 1,
  TFM_EMU_SHFL_DOWN = 2,
  TFM_EMU_SHFL_BFLY = 3
};
uint32_t tfm_emu_shfl(int32_t mode, uint32_t mask, uint32_t value,
                      int32_t lane, int32_t clamp, int32_t *valid);

/* mma.sync.aligned.m16n8k16.row.col.f32.{bf16,f16}.{bf16,f16}.f32: this
 * lane's fragments of A (4 registers of two halves), B (2) and C (4 f32),
 * and its fragment of D = A x B + C. */
enum { TFM_EMU_MMA_BF16 = 0, TFM_EMU_MMA_F16 = 1 };
void tfm_emu_mma_m16n8k16(int32_t kind, const uint32_t *a, const uint32_t *b,
                          const float *c, float *d);

#endif /* TFM_RUNTIME_CUDA_CUDA_EMULATOR_H */
