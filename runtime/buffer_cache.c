/*===- buffer_cache.c - the heap of generated code ----------------------===//
 *
 * See buffer_cache.h. Every block has a 64-byte header (or `alignment`
 * bytes where more is asked) in front of the pointer handed out; its last
 * 16 bytes record the block's size and header size, which name the block's
 * size class. Free blocks of one class form a list through their headers.
 * The classes live in a small open-addressed table; what is kept is capped
 * at kMaxKeptBytes, beyond which blocks go back to the system.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/buffer_cache.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

enum { kClasses = 1024, kMinHeader = 64 };
static const size_t kMaxKeptBytes = (size_t)1 << 30;

typedef struct block_header {
  struct block_header *next_free;
  size_t size;   /* bytes after the header */
  size_t header; /* bytes of header, a multiple of the alignment */
} block_header;

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

static void *allocate(size_t alignment, size_t size) {
  size_t header = kMinHeader;
  while (header < alignment)
    header *= 2;
  if (size == 0)
    size = 1;
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
  pthread_mutex_unlock(&cache.lock);
  if (!block) {
    void *memory;
    if (posix_memalign(&memory, header, header + size)) {
      pthread_mutex_lock(&cache.lock);
      cache.live_bytes -= header + size;
      pthread_mutex_unlock(&cache.lock);
      return NULL;
    }
    block = memory;
  }
  block->size = size;
  block->header = header;
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
  size_t bytes = block->header + block->size;
  pthread_mutex_lock(&cache.lock);
  cache.live_bytes -= bytes;
  size_class *c = cache.kept_bytes + bytes <= kMaxKeptBytes
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

size_t tfm_buffer_cache_bytes(void) {
  pthread_mutex_lock(&cache.lock);
  size_t bytes = cache.kept_bytes;
  pthread_mutex_unlock(&cache.lock);
  return bytes;
}

size_t tfm_buffer_peak_live_bytes(void) {
  pthread_mutex_lock(&cache.lock);
  size_t bytes = cache.peak_live_bytes;
  pthread_mutex_unlock(&cache.lock);
  return bytes;
}
