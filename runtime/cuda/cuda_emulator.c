/*===- cuda_emulator.c - a CUDA driver that runs kernels on the CPU ----===//
 *
 * See cuda_emulator.h. The driver functions are those runtime/cuda/cuda_driver.c
 * resolves; device memory is host memory.
 *
 *===----------------------------------------------------------------------===*/

#define _GNU_SOURCE
/* Fibers switch with _setjmp/_longjmp between their stacks, which the
 * fortified longjmp refuses. */
#undef _FORTIFY_SOURCE
#include "runtime/cuda/cuda_emulator.h"
#include "runtime/cuda/cuda_driver_api.h"
#include "tfm/half_floats.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>

#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TFM_EMU_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__)
#define TFM_EMU_ASAN 1
#endif
#ifdef TFM_EMU_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

enum {
  CUDA_ERROR_INVALID_VALUE = 1,
  CUDA_ERROR_OUT_OF_MEMORY = 2,
  CUDA_ERROR_NO_DEVICE = 100,
  CUDA_ERROR_INVALID_PTX = 218,
  CUDA_ERROR_NOT_FOUND = 500,
  CUDA_ERROR_LAUNCH_FAILED = 719
};

enum { kWarp = 32, kMaxThreads = 1024, kStackBytes = 256 << 10 };

/*===--- Fibers: the threads of one block -----------------------------===*/

typedef enum { kRunnable, kAtBarrier, kAtWarp, kDone } thread_state;

/* What a lane brings to a warp collective, and what it takes away. */
typedef enum { kShuffle, kMma, kWarpSync } collective_kind;
typedef struct {
  collective_kind kind;
  uint32_t mask;                       /* the lanes that take part */
  int32_t mode, lane, clamp, mma_kind; /* shuffle mode, its b and c; mma */
  uint32_t value, a[4], b[2];
  float c[4];
  uint32_t result;
  int32_t valid;
  float d[4];
} lane_operands;

typedef struct {
  jmp_buf resume_at; /* where it waits, once started */
  int started;
  thread_state state;
  int32_t tid[3], linear;
#ifdef TFM_EMU_ASAN
  void *fake_stack;
#endif
} fiber;

static struct {
  fiber threads[kMaxThreads];
  lane_operands lanes[kMaxThreads];
  char *stacks; /* kMaxThreads stacks of kStackBytes */
  /* A fiber starts from a ucontext (its own stack); every other switch is
   * a _longjmp, which, unlike swapcontext, makes no system call. */
  ucontext_t start;
  jmp_buf scheduler;
  fiber *current;
  int32_t count, block[3], grid[3], block_index[3];
  void (*entry)(void **);
  void **params;
  const char *kernel;
  /* Live device allocations (cuMemAlloc's), which a kernel's pointer
   * parameters must point into. */
  struct {
    uintptr_t base, bytes;
  } *allocations;
  size_t allocation_count, allocation_capacity;
  int failed;
  char error[512];
#ifdef TFM_EMU_ASAN
  const void *scheduler_stack; /* the scheduler's stack, for ASan */
  size_t scheduler_stack_bytes;
#endif
} emu;

static int in_device_memory(uintptr_t address);

static void fail(const char *format, ...) {
  if (emu.failed)
    return;
  emu.failed = 1;
  va_list args;
  va_start(args, format);
  vsnprintf(emu.error, sizeof emu.error, format, args);
  va_end(args);
  fprintf(stderr, "cuda emulator: %s\n", emu.error);
}

/* Back to the scheduler in state `state`; returns when scheduled again. */
static void yield(thread_state state) {
  fiber *self = emu.current;
  self->state = state;
  if (_setjmp(self->resume_at)) {
#ifdef TFM_EMU_ASAN
    __sanitizer_finish_switch_fiber(self->fake_stack, NULL, NULL);
#endif
    return;
  }
#ifdef TFM_EMU_ASAN
  __sanitizer_start_switch_fiber(&self->fake_stack, emu.scheduler_stack,
                                 emu.scheduler_stack_bytes);
#endif
  _longjmp(emu.scheduler, 1);
}

/* A fiber's first frame: it runs a thread of a block, ends it, and waits
 * to run the same thread index of the next block or launch (a fiber
 * starts once, a setcontext's system call, and is reused after). */
static void run_thread(void) {
#ifdef TFM_EMU_ASAN
  __sanitizer_finish_switch_fiber(NULL, &emu.scheduler_stack,
                                  &emu.scheduler_stack_bytes);
#endif
  for (;;) {
    emu.entry(emu.params);
    yield(kDone);
  }
}

/* Runs `t` until it waits or ends. */
static void resume(fiber *t) {
  emu.current = t;
  char *stack = emu.stacks + (size_t)t->linear * kStackBytes;
#ifdef TFM_EMU_ASAN
  void *fake_stack = NULL;
  __sanitizer_start_switch_fiber(&fake_stack, stack, kStackBytes);
#endif
  if (!_setjmp(emu.scheduler)) {
    if (t->started)
      _longjmp(t->resume_at, 1);
    t->started = 1;
    emu.start.uc_stack.ss_sp = stack;
    emu.start.uc_stack.ss_size = kStackBytes;
    emu.start.uc_link = NULL;
    makecontext(&emu.start, run_thread, 0);
    setcontext(&emu.start);
  }
#ifdef TFM_EMU_ASAN
  __sanitizer_finish_switch_fiber(fake_stack, NULL, NULL);
#endif
}

/*===--- Warp collectives ----------------------------------------------===*/

/* Reads element `i` (0 or 1) of a register of two 16-bit halves. */
static float half_element(int32_t kind, uint32_t reg, int i) {
  uint16_t bits = (uint16_t)(i ? reg >> 16 : reg & 0xffff);
  return kind == TFM_EMU_MMA_BF16 ? tfm_bf16_to_float(bits)
                                  : tfm_f16_to_float(bits);
}

/* D = A x B + C for the warp starting at thread `first`, from the
 * fragments of the PTX ISA's m16n8k16 layout: lane l holds, with
 * g = l / 4 and t = l % 4, A's rows g and g + 8 at columns 2t, 2t + 1
 * (registers 0, 1) and 2t + 8, 2t + 9 (registers 2, 3: rows g, g + 8),
 * B's rows 2t, 2t + 1 (register 0) and 2t + 8, 2t + 9 (register 1) at
 * column g, and C's and D's rows g (0, 1) and g + 8 (2, 3) at columns
 * 2t, 2t + 1. */
static void complete_mma(int first) {
  float a[16][16], b[16][8], c[16][8];
  int32_t kind = emu.lanes[first].mma_kind;
  for (int l = 0; l < kWarp; ++l) {
    const lane_operands *o = &emu.lanes[first + l];
    int g = l / 4, t = l % 4;
    for (int r = 0; r < 4; ++r)
      for (int i = 0; i < 2; ++i) {
        int row = g + (r & 1) * 8, col = 2 * t + i + (r >> 1) * 8;
        a[row][col] = half_element(kind, o->a[r], i);
      }
    for (int r = 0; r < 2; ++r)
      for (int i = 0; i < 2; ++i)
        b[2 * t + i + r * 8][g] = half_element(kind, o->b[r], i);
    for (int i = 0; i < 4; ++i)
      c[g + (i >> 1) * 8][2 * t + (i & 1)] = o->c[i];
  }
  for (int l = 0; l < kWarp; ++l) {
    lane_operands *o = &emu.lanes[first + l];
    int g = l / 4, t = l % 4;
    for (int i = 0; i < 4; ++i) {
      int row = g + (i >> 1) * 8, col = 2 * t + (i & 1);
      float sum = c[row][col];
      for (int k = 0; k < 16; ++k)
        sum += a[row][k] * b[k][col];
      o->d[i] = sum;
    }
  }
}

/* shfl.sync's source lane and predicate (the PTX ISA's pseudocode), for
 * the lanes of `mask`. */
static void complete_shuffle(int first, uint32_t mask) {
  for (int l = 0; l < kWarp; ++l) {
    if (!(mask >> l & 1))
      continue;
    lane_operands *o = &emu.lanes[first + l];
    int32_t segmask = (o->clamp >> 8) & 31, c = o->clamp & 31;
    int32_t max_lane = (l & segmask) | (c & ~segmask);
    int32_t min_lane = l & segmask;
    int32_t j = l, in_range = 0;
    switch (o->mode) {
    case TFM_EMU_SHFL_UP:
      j = l - o->lane;
      in_range = j >= max_lane;
      break;
    case TFM_EMU_SHFL_DOWN:
      j = l + o->lane;
      in_range = j <= max_lane;
      break;
    case TFM_EMU_SHFL_BFLY:
      j = l ^ o->lane;
      in_range = j <= max_lane;
      break;
    default:
      j = min_lane | (o->lane & ~segmask & 31);
      in_range = j <= max_lane;
      break;
    }
    /* A lane outside the mask, or one that left the kernel, has no value
     * to give: the hardware's is undefined, this one's own. */
    if (!in_range || j < 0 || j >= kWarp || !(mask >> j & 1) ||
        emu.threads[first + j].state == kDone)
      j = l;
    o->result = emu.lanes[first + j].value;
    o->valid = in_range;
  }
}

/* Completes the collectives of the warp starting at `first` whose lanes
 * (each collective's mask, less the lanes that have ended) all wait at
 * them: 1 if any did. */
static int complete_warp(int first) {
  int lanes = emu.count - first < kWarp ? emu.count - first : kWarp;
  uint32_t present = lanes == kWarp ? 0xffffffffu : (1u << lanes) - 1;
  uint32_t handled = 0;
  int completed = 0;
  for (int l = 0; l < lanes; ++l) {
    if (emu.threads[first + l].state != kAtWarp || (handled >> l & 1))
      continue;
    const lane_operands *leader = &emu.lanes[first + l];
    uint32_t mask = leader->mask & present, ready = 1;
    if (!(mask >> l & 1)) {
      fail("kernel %s: lane %d of warp %d waits at a collective whose mask "
           "0x%08x leaves it out",
           emu.kernel, l, first / kWarp, leader->mask);
      return 0;
    }
    for (int m = 0; m < lanes; ++m) {
      if (!(mask >> m & 1))
        continue;
      thread_state s = emu.threads[first + m].state;
      if (s == kDone) {
        mask &= ~(1u << m);
        continue;
      }
      if (s != kAtWarp) {
        ready = 0;
        continue;
      }
      const lane_operands *o = &emu.lanes[first + m];
      if (o->kind != leader->kind || o->mask != leader->mask) {
        fail("kernel %s: lanes %d and %d of warp %d wait at different "
             "collectives",
             emu.kernel, l, m, first / kWarp);
        return 0;
      }
    }
    handled |= mask;
    if (!ready)
      continue;
    if (leader->kind == kMma) {
      if (mask != 0xffffffffu) {
        fail("kernel %s: mma.sync in warp %d without all 32 lanes (0x%08x)",
             emu.kernel, first / kWarp, mask);
        return 0;
      }
      complete_mma(first);
    } else if (leader->kind == kShuffle) {
      complete_shuffle(first, mask);
    }
    for (int m = 0; m < lanes; ++m)
      if (mask >> m & 1)
        emu.threads[first + m].state = kRunnable;
    completed = 1;
  }
  return completed;
}

/* Runs one block: every thread until it waits or ends, then whatever
 * completes (the block's barrier, warps' collectives), until all end. */
static void run_block(void) {
  for (int i = 0; i < emu.count; ++i) {
    fiber *t = &emu.threads[i];
    t->linear = i;
    t->tid[0] = i % emu.block[0];
    t->tid[1] = i / emu.block[0] % emu.block[1];
    t->tid[2] = i / (emu.block[0] * emu.block[1]);
    t->state = kRunnable;
  }
  for (;;) {
    int ran = 0, at_barrier = 0, running = 0;
    for (int i = 0; i < emu.count && !emu.failed; ++i)
      if (emu.threads[i].state == kRunnable) {
        resume(&emu.threads[i]);
        ran = 1;
      }
    if (emu.failed)
      return;
    for (int i = 0; i < emu.count; ++i) {
      running += emu.threads[i].state != kDone;
      at_barrier += emu.threads[i].state == kAtBarrier;
    }
    if (running == 0)
      return;
    int released = 0;
    if (at_barrier == running) {
      for (int i = 0; i < emu.count; ++i)
        if (emu.threads[i].state == kAtBarrier)
          emu.threads[i].state = kRunnable;
      released = 1;
    }
    for (int first = 0; first < emu.count && !emu.failed; first += kWarp)
      released |= complete_warp(first);
    if (emu.failed)
      return;
    if (!ran && !released) {
      fail("kernel %s deadlocked in block (%d, %d, %d): %d of %d running "
           "threads wait at a barrier, the others at warp collectives",
           emu.kernel, emu.block_index[0], emu.block_index[1],
           emu.block_index[2], at_barrier, running);
      return;
    }
  }
}

/*===--- The intrinsics' stand-ins ----------------------------------===*/

int32_t tfm_emu_sreg(int32_t which) {
  const fiber *t = emu.current;
  if (which >= TFM_EMU_TID && which < TFM_EMU_TID + 3)
    return t->tid[which - TFM_EMU_TID];
  if (which >= TFM_EMU_NTID && which < TFM_EMU_NTID + 3)
    return emu.block[which - TFM_EMU_NTID];
  if (which >= TFM_EMU_CTAID && which < TFM_EMU_CTAID + 3)
    return emu.block_index[which - TFM_EMU_CTAID];
  if (which >= TFM_EMU_NCTAID && which < TFM_EMU_NCTAID + 3)
    return emu.grid[which - TFM_EMU_NCTAID];
  if (which == TFM_EMU_LANEID)
    return t->linear % kWarp;
  return kWarp;
}

void tfm_emu_barrier(void) { yield(kAtBarrier); }

void tfm_emu_warp_sync(uint32_t mask) {
  emu.lanes[emu.current->linear].kind = kWarpSync;
  emu.lanes[emu.current->linear].mask = mask;
  yield(kAtWarp);
}

uint32_t tfm_emu_shfl(int32_t mode, uint32_t mask, uint32_t value,
                      int32_t lane, int32_t clamp, int32_t *valid) {
  lane_operands *o = &emu.lanes[emu.current->linear];
  o->kind = kShuffle;
  o->mask = mask;
  o->mode = mode;
  o->value = value;
  o->lane = lane;
  o->clamp = clamp;
  yield(kAtWarp);
  *valid = o->valid;
  return o->result;
}

void tfm_emu_mma_m16n8k16(int32_t kind, const uint32_t *a, const uint32_t *b,
                          const float *c, float *d) {
  lane_operands *o = &emu.lanes[emu.current->linear];
  o->kind = kMma;
  o->mask = 0xffffffffu; /* .aligned: the whole warp */
  o->mma_kind = kind;
  memcpy(o->a, a, sizeof o->a);
  memcpy(o->b, b, sizeof o->b);
  memcpy(o->c, c, sizeof o->c);
  yield(kAtWarp);
  memcpy(d, o->d, sizeof o->d);
}

/* f32 -> bf16, rounding to nearest even, which LLVM calls for the kernels'
 * truncf on CPUs without AVX-512 BF16 and which this libgcc lacks. bf16
 * travels as _Float16 does (the low 16 bits of xmm0): the type only
 * carries the bits. */
_Float16 __truncsfbf2(float value);
_Float16 __truncsfbf2(float value) {
  uint32_t bits;
  memcpy(&bits, &value, sizeof bits);
  uint16_t narrow =
      isnan(value) ? (uint16_t)(bits >> 16 | 0x40)
                   : (uint16_t)((bits + 0x7fff + (bits >> 16 & 1)) >> 16);
  _Float16 result;
  memcpy(&result, &narrow, sizeof result);
  return result;
}

/*===--- The driver API ------------------------------------------------===*/

static int context, stream, module;

/* Whether TFM_CUDA_EMULATOR_FAIL asks for failure `name` (cuda_emulator.h). */
static int failing(const char *name) {
  const char *mode = getenv("TFM_CUDA_EMULATOR_FAIL");
  return mode && strcmp(mode, name) == 0;
}

CUresult cuGetErrorString(CUresult error, const char **text) {
  *text = error == CUDA_ERROR_LAUNCH_FAILED
              ? (emu.failed ? emu.error : "unspecified launch failure")
          : error == CUDA_ERROR_NO_DEVICE ? "no CUDA-capable device is detected"
          : error == CUDA_ERROR_INVALID_PTX   ? "a PTX JIT compilation failed"
          : error == CUDA_ERROR_NOT_FOUND     ? "named symbol not found"
          : error == CUDA_ERROR_OUT_OF_MEMORY ? "out of memory"
          : error == CUDA_ERROR_INVALID_VALUE ? "invalid argument"
                                              : "unknown error";
  return CUDA_SUCCESS;
}
CUresult cuInit(unsigned flags) {
  (void)flags;
  return failing("no-device") ? CUDA_ERROR_NO_DEVICE : CUDA_SUCCESS;
}
CUresult cuDeviceGetCount(int *count) {
  *count = 1;
  return CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice *device, int ordinal) {
  *device = ordinal;
  return CUDA_SUCCESS;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *out, CUdevice device) {
  (void)device;
  *out = (CUcontext)(void *)&context;
  return CUDA_SUCCESS;
}
CUresult cuCtxSetCurrent(CUcontext c) {
  (void)c;
  return CUDA_SUCCESS;
}
CUresult cuStreamCreate(CUstream *out, unsigned flags) {
  (void)flags;
  *out = (CUstream)(void *)&stream;
  return CUDA_SUCCESS;
}
/* Everything ran when it was launched. */
CUresult cuStreamSynchronize(CUstream s) {
  (void)s;
  return emu.failed ? CUDA_ERROR_LAUNCH_FAILED : CUDA_SUCCESS;
}
/* The PTX is not read: the kernels are this library's. */
CUresult cuModuleLoadDataEx(CUmodule *out, const void *image, unsigned n,
                            int *options, void **values) {
  (void)image;
  if (failing("bad-ptx")) {
    for (unsigned i = 0; i < n; ++i)
      if (options[i] == CU_JIT_ERROR_LOG_BUFFER)
        strcpy((char *)values[i], "ptxas fatal: unsupported .target");
    return CUDA_ERROR_INVALID_PTX;
  }
  *out = (CUmodule)(void *)&module;
  return CUDA_SUCCESS;
}
CUresult cuModuleUnload(CUmodule m) {
  (void)m;
  return CUDA_SUCCESS;
}
CUresult cuModuleGetFunction(CUfunction *out, CUmodule m, const char *name) {
  (void)m;
  for (int64_t i = 0; i < tfm_emu_kernel_count; ++i)
    if (strcmp(tfm_emu_kernels[i].name, name) == 0) {
      *out = (CUfunction)(uintptr_t)&tfm_emu_kernels[i];
      return CUDA_SUCCESS;
    }
  fprintf(stderr,
          "cuda emulator: no kernel %s (an emulator built for another "
          "model, or another compile of it?)\n",
          name);
  return CUDA_ERROR_NOT_FOUND;
}

CUresult cuLaunchKernel(CUfunction f, unsigned gx, unsigned gy, unsigned gz,
                        unsigned bx, unsigned by, unsigned bz, unsigned smem,
                        CUstream s, void **params, void **extra) {
  (void)s;
  if (emu.failed || failing("launch"))
    return CUDA_ERROR_LAUNCH_FAILED;
  const tfm_emu_kernel *kernel = (const tfm_emu_kernel *)(uintptr_t)f;
  unsigned long long threads = (unsigned long long)bx * by * bz;
  if (!kernel || extra || threads == 0 || threads > kMaxThreads ||
      gx == 0 || gy == 0 || gz == 0) {
    fprintf(stderr,
            "cuda emulator: a launch of %s with blocks of %u x %u x %u "
            "threads in a grid of %u x %u x %u (blocks hold 1 to %d threads, "
            "grids at least one block; no extra launch options)\n",
            kernel ? kernel->name : "no kernel", bx, by, bz, gx, gy, gz,
            kMaxThreads);
    return CUDA_ERROR_INVALID_VALUE;
  }
  if (smem) {
    fail("kernel %s asks for %u bytes of dynamic shared memory, which the "
         "emulator does not provide",
         kernel->name, smem);
    return CUDA_ERROR_LAUNCH_FAILED;
  }
  for (int i = 0; kernel->params && kernel->params[i]; ++i) {
    if (kernel->params[i] != 'p')
      continue;
    uintptr_t address = *(const uintptr_t *)params[i];
    if (!in_device_memory(address)) {
      fail("kernel %s's parameter %d points outside GPU memory (%#lx): "
           "host memory, which a GPU cannot read (an illegal address)",
           kernel->name, i, (unsigned long)address);
      return CUDA_ERROR_LAUNCH_FAILED;
    }
  }
  if (!emu.stacks) {
    void *stacks = mmap(NULL, (size_t)kMaxThreads * kStackBytes,
                        PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (stacks == MAP_FAILED)
      return CUDA_ERROR_OUT_OF_MEMORY;
    emu.stacks = stacks;
    getcontext(&emu.start);
  }
  emu.entry = kernel->entry;
  emu.kernel = kernel->name;
  emu.params = params;
  emu.count = (int32_t)threads;
  int32_t block[3] = {(int32_t)bx, (int32_t)by, (int32_t)bz};
  int32_t grid[3] = {(int32_t)gx, (int32_t)gy, (int32_t)gz};
  memcpy(emu.block, block, sizeof block);
  memcpy(emu.grid, grid, sizeof grid);
  for (int32_t z = 0; z < grid[2]; ++z)
    for (int32_t y = 0; y < grid[1]; ++y)
      for (int32_t x = 0; x < grid[0] && !emu.failed; ++x) {
        emu.block_index[0] = x;
        emu.block_index[1] = y;
        emu.block_index[2] = z;
        run_block();
      }
  return emu.failed ? CUDA_ERROR_LAUNCH_FAILED : CUDA_SUCCESS;
}

/* Device memory is the host's, 256-byte aligned as cuMemAlloc's is, and
 * remembered: a kernel given a pointer outside it would read host memory,
 * which a GPU cannot. */
CUresult cuMemAlloc_v2(CUdeviceptr *out, size_t bytes) {
  if (emu.allocation_count == emu.allocation_capacity) {
    size_t capacity = emu.allocation_capacity ? 2 * emu.allocation_capacity : 64;
    void *grown = realloc(emu.allocations, capacity * sizeof *emu.allocations);
    if (!grown)
      return CUDA_ERROR_OUT_OF_MEMORY;
    emu.allocations = grown;
    emu.allocation_capacity = capacity;
  }
  void *p = aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!p)
    return CUDA_ERROR_OUT_OF_MEMORY;
  emu.allocations[emu.allocation_count].base = (uintptr_t)p;
  emu.allocations[emu.allocation_count].bytes = bytes;
  ++emu.allocation_count;
  *out = (CUdeviceptr)(size_t)p;
  return CUDA_SUCCESS;
}
CUresult cuMemFree_v2(CUdeviceptr p) {
  for (size_t i = 0; i < emu.allocation_count; ++i)
    if (emu.allocations[i].base == (uintptr_t)p) {
      emu.allocations[i] = emu.allocations[--emu.allocation_count];
      break;
    }
  free((void *)(size_t)p);
  return CUDA_SUCCESS;
}

/* Whether `address` is null or within a live allocation (its end too: an
 * empty buffer's pointer). */
static int in_device_memory(uintptr_t address) {
  if (!address)
    return 1;
  for (size_t i = 0; i < emu.allocation_count; ++i)
    if (address - emu.allocations[i].base <= emu.allocations[i].bytes)
      return 1;
  return 0;
}

CUresult cuMemAllocAsync(CUdeviceptr *out, size_t bytes, CUstream s) {
  (void)s;
  return cuMemAlloc_v2(out, bytes);
}
CUresult cuMemFreeAsync(CUdeviceptr p, CUstream s) {
  (void)s;
  return cuMemFree_v2(p);
}
CUresult cuMemcpyAsync(CUdeviceptr to, CUdeviceptr from, size_t bytes,
                       CUstream s) {
  (void)s;
  memmove((void *)(size_t)to, (const void *)(size_t)from, bytes);
  return CUDA_SUCCESS;
}
CUresult cuMemsetD8Async(CUdeviceptr p, unsigned char value, size_t bytes,
                         CUstream s) {
  (void)s;
  memset((void *)(size_t)p, value, bytes);
  return CUDA_SUCCESS;
}
