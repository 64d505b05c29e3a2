/*===- buffer_cache.c - the heap of generated code ----------------------===//
 *
 * See buffer_cache.h. Every block has a 64-byte header (or `alignment`
 * bytes where more is asked) in front of the pointer handed out; its last
 * 16 bytes record the block's size and header size, which name the block's
 * size class. Free blocks of one class form a list through their headers.
 * The classes live in a small open-addressed table; what is kept is capped
 * at the most the process has had live at once (a call's working set,
 * which the next call needs again: a 30 s clip through wav2vec2-base
 * holds over a gigabyte, and giving it back to the system made every call
 * fault its pages in anew, 12% of the call), and at least kMinKeptBytes.
 * An allocation no kept block serves first returns kept blocks of other
 * sizes to the system (the largest first) while the live bytes and the
 * kept ones would pass that bound: a pipeline whose entry points take
 * turns (a UNet's steps, then a VAE's decode) holds one's buffers at a
 * time, not both.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/buffer_cache.h"
#include "runtime/cuda/cuda_driver.h"
#include "tfm/tfm_runtime.h"

#include <pthread.h>
#include <setjmp.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>

enum { kClasses = 1024, kMinHeader = 64 };
static const size_t kMinKeptBytes = (size_t)1 << 30;

typedef struct block_header {
  struct block_header *next_free;
  size_t size;   /* bytes after the header */
  size_t header; /* bytes of header, a multiple of the alignment */
  /* While live and allocated inside a call frame: its neighbours in the
   * frame's list of allocations (the frame releases them on failure). */
  struct block_header *frame_prev, *frame_next;
  struct tfm_call_frame *frame;
} block_header;

/* A generated entry point's call in progress on this thread: where to jump
 * when an allocation fails, and what the call has allocated so far. */
struct tfm_call_frame {
  jmp_buf *jump;
  block_header *allocations;
  struct tfm_call_frame *outer;
};

static _Thread_local tfm_call_frame *current_frame;
/* Tests: allocations left before one fails (negative: never). */
static _Atomic long long allocations_until_failure = -1;

typedef struct {
  size_t size, header; /* size 0: unused slot */
  block_header *free_list;
} size_class;

static struct {
  pthread_mutex_t lock;
  size_class classes[kClasses];
  size_t kept_bytes;
  size_t live_bytes, peak_live_bytes; /* handed out and not yet freed */
} cache = {.lock = PTHREAD_MUTEX_INITIALIZER};

static block_header *header_of(void *buffer) {
  size_t header = ((size_t *)buffer)[-1];
  return (block_header *)((char *)buffer - header);
}

/* The class of (size, header): found, or claimed; NULL when the table is
 * full (the block then bypasses the cache). Called with the lock held. */
static size_class *class_of(size_t size, size_t header) {
  size_t hash = (size * 0x9E3779B97F4A7C15ull + header) >> 7;
  for (size_t probe = 0; probe < kClasses; ++probe) {
    size_class *c = &cache.classes[(hash + probe) % kClasses];
    if (c->size == size && c->header == header)
      return c;
    if (c->size == 0) {
      c->size = size;
      c->header = header;
      return c;
    }
  }
  return NULL;
}

static int allocation_should_fail(void) {
  long long left = atomic_load(&allocations_until_failure);
  while (left >= 0) {
    if (atomic_compare_exchange_weak(&allocations_until_failure, &left,
                                     left - 1))
      return left == 0;
  }
  return 0;
}

static void track_in_frame(block_header *block) {
  tfm_call_frame *frame = current_frame;
  block->frame = frame;
  block->frame_prev = NULL;
  block->frame_next = frame ? frame->allocations : NULL;
  if (frame) {
    if (frame->allocations)
      frame->allocations->frame_prev = block;
    frame->allocations = block;
  }
}

static void untrack(block_header *block) {
  if (!block->frame)
    return;
  if (block->frame_prev)
    block->frame_prev->frame_next = block->frame_next;
  else
    block->frame->allocations = block->frame_next;
  if (block->frame_next)
    block->frame_next->frame_prev = block->frame_prev;
  block->frame = NULL;
}

static void end_frame(tfm_call_frame *frame) {
  for (block_header *b = frame->allocations; b; b = b->frame_next)
    b->frame = NULL;
  current_frame = frame->outer;
  free(frame);
}

/* An allocation failed: inside a generated call, release what the call
 * allocated and return to it (it reports TFM_ERROR_OUT_OF_MEMORY). Outside
 * one (a worker thread), the NULL goes back to the caller. */
static void fail_current_call(void) {
  tfm_call_frame *frame = current_frame;
  if (!frame)
    return;
  while (frame->allocations) {
    block_header *block = frame->allocations;
    _mlir_memref_to_llvm_free((char *)block + block->header);
  }
  jmp_buf *jump = frame->jump;
  end_frame(frame);
  longjmp(*jump, 1);
}

void tfm_buffer_fail_call(void) { fail_current_call(); }

tfm_call_frame *tfm_call_begin(void *jump) {
  tfm_call_frame *frame = calloc(1, sizeof *frame);
  if (!frame)
    return NULL;
  frame->jump = (jmp_buf *)jump;
  frame->outer = current_frame;
  current_frame = frame;
  return frame;
}

void tfm_call_end(tfm_call_frame *frame) {
  if (frame)
    end_frame(frame);
}

void tfm_buffer_fail_after(long long allocations) {
  atomic_store(&allocations_until_failure, allocations);
}

/* On a miss, with cache.lock held: moves kept blocks, the largest classes
 * first, to `evicted` (freed after unlocking) while the live bytes and the
 * kept ones pass the bound. */
static void evict_for_miss(block_header **evicted) {
  size_t cap = cache.peak_live_bytes > kMinKeptBytes ? cache.peak_live_bytes
                                                     : kMinKeptBytes;
  while (cache.kept_bytes && cache.live_bytes + cache.kept_bytes > cap) {
    size_class *largest = NULL;
    for (size_t i = 0; i < kClasses; ++i)
      if (cache.classes[i].free_list &&
          (!largest || cache.classes[i].size > largest->size))
        largest = &cache.classes[i];
    if (!largest)
      return;
    block_header *block = largest->free_list;
    largest->free_list = block->next_free;
    cache.kept_bytes -= block->header + block->size;
    block->next_free = *evicted;
    *evicted = block;
  }
}

static void *allocate(size_t alignment, size_t size) {
  size_t header = kMinHeader;
  while (header < alignment)
    header *= 2;
  if (size == 0)
    size = 1;
  if (allocation_should_fail()) {
    fail_current_call();
    return NULL;
  }
  pthread_mutex_lock(&cache.lock);
  size_class *c = class_of(size, header);
  block_header *block = c ? c->free_list : NULL;
  if (block) {
    c->free_list = block->next_free;
    cache.kept_bytes -= header + size;
  }
  cache.live_bytes += header + size;
  if (cache.live_bytes > cache.peak_live_bytes)
    cache.peak_live_bytes = cache.live_bytes;
  block_header *evicted = NULL;
  if (!block)
    evict_for_miss(&evicted);
  pthread_mutex_unlock(&cache.lock);
  while (evicted) {
    block_header *next = evicted->next_free;
    free(evicted);
    evicted = next;
  }
  if (!block) {
    void *memory;
    if (posix_memalign(&memory, header, header + size)) {
      pthread_mutex_lock(&cache.lock);
      cache.live_bytes -= header + size;
      pthread_mutex_unlock(&cache.lock);
      fail_current_call();
      return NULL;
    }
    block = memory;
  }
  block->size = size;
  block->header = header;
  track_in_frame(block);
  char *buffer = (char *)block + header;
  ((size_t *)buffer)[-1] = header;
  return buffer;
}

void *_mlir_memref_to_llvm_alloc(size_t size) { return allocate(kMinHeader, size); }

void *_mlir_memref_to_llvm_aligned_alloc(size_t alignment, size_t size) {
  return allocate(alignment, size);
}

void _mlir_memref_to_llvm_free(void *buffer) {
  if (!buffer)
    return;
  block_header *block = header_of(buffer);
  untrack(block);
  size_t bytes = block->header + block->size;
  pthread_mutex_lock(&cache.lock);
  cache.live_bytes -= bytes;
  size_t cap = cache.peak_live_bytes > kMinKeptBytes ? cache.peak_live_bytes
                                                     : kMinKeptBytes;
  size_class *c = cache.kept_bytes + bytes <= cap
                      ? class_of(block->size, block->header)
                      : NULL;
  if (c) {
    block->next_free = c->free_list;
    c->free_list = block;
    cache.kept_bytes += bytes;
  }
  pthread_mutex_unlock(&cache.lock);
  if (!c)
    free(block);
}

void tfm_buffer_release(void *buffer) { _mlir_memref_to_llvm_free(buffer); }

void *mgpuMemAlloc(uint64_t bytes, void *stream, int8_t host_shared) {
  (void)stream;
  (void)host_shared;
  void *device = tfm_cuda_alloc((size_t)bytes);
  if (!device)
    fail_current_call(); /* the generated call returns out of memory */
  return device;
}

void mgpuMemFree(void *device, void *stream) {
  (void)stream;
  tfm_cuda_free(device);
}

size_t tfm_buffer_cache_bytes(void) {
  pthread_mutex_lock(&cache.lock);
  size_t bytes = cache.kept_bytes;
  pthread_mutex_unlock(&cache.lock);
  return bytes;
}

/* tfm_runtime.h's: the peak of what generated code held at once (arenas,
 * outputs and any buffer outside an arena). */
int64_t tfm_activation_peak_bytes(void) {
  pthread_mutex_lock(&cache.lock);
  size_t bytes = cache.peak_live_bytes;
  pthread_mutex_unlock(&cache.lock);
  return (int64_t)bytes;
}
