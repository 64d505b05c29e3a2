/*===- kv_pages.c - a paged KV cache: blocks, block tables, prefixes -----===//
 *
 * See kv_pages.h. The pool is one memfd laid out plane by plane (a plane:
 * one layer's keys or values), block after block inside each plane, so
 * that consecutive blocks of a sequence that got consecutive pool blocks
 * are consecutive in the file too and the kernel merges their mappings
 * (the number of mappings a process may hold is bounded:
 * /proc/sys/vm/max_map_count).
 *
 *===----------------------------------------------------------------------===*/

#define _GNU_SOURCE
#include "runtime/engine/kv_pages.h"

#include "runtime/core/ranks.h"
#include "runtime/core/status.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum { kNone = -1 };

typedef struct {
  int32_t references; /* slots mapping it */
  int published;      /* in the prefix table */
  uint64_t hash;      /* of its parent's chain and its own tokens */
  int64_t parent;     /* the block before it in its sequence; kNone first */
  uint64_t parent_epoch;
  uint64_t epoch;     /* bumped on each reuse: children of a reused block
                         no longer match */
  int32_t space;      /* whose keys and values (the LoRA adapter that
                         computed them; 0: the base model's) */
  uint64_t rows;      /* its positions' row keys combined (0: tokens
                         alone; block_rows_key) */
  int64_t next_in_bucket, lru_prev, lru_next;
} block_info;

struct tfm_kv_pages {
  tfm_kv_pages_options options;
  int64_t block_positions, blocks_per_slot;
  int mapped_blocks; /* 0: the cache is plain memory, blocks only count */
  int leads;         /* rank 0 of a split model: the others map alike */
  size_t chunk_bytes; /* one block of one plane */
  size_t plane_bytes; /* one plane of one slot */
  size_t slot_bytes, reserved_bytes;
  char *base;
  int fd;
  int64_t blocks;
  block_info *info;
  int32_t *block_tokens; /* [blocks][block_positions], published blocks */
  int64_t *free_blocks, free_count;
  int64_t lru_head, lru_tail, cached_count; /* released, still published */
  int64_t *buckets, bucket_mask;
  int64_t *tables;    /* [slots][blocks_per_slot] */
  int64_t *mapped;    /* blocks mapped per slot */
  int64_t *published; /* blocks offered per slot */
};

static int64_t gcd(int64_t a, int64_t b) {
  while (b) {
    int64_t t = a % b;
    a = b;
    b = t;
  }
  return a;
}

/* The most mappings a process may hold (65530 unless raised). */
static int64_t max_map_count(void) {
  FILE *file = fopen("/proc/sys/vm/max_map_count", "r");
  long long count = 65530;
  if (file) {
    if (fscanf(file, "%lld", &count) != 1)
      count = 65530;
    fclose(file);
  }
  return count;
}

/* Block sizes must be whole pages in every plane and divide the capacity;
 * the worst case (every slot's every block mapped apart) must leave 8192
 * of the process's mappings to everything else. A capacity that is no
 * whole number of pages per plane cannot be mapped block by block: the
 * cache is then ordinary memory and blocks only count it (no sharing). The
 * search ends at the capacity at the latest (a multiple of `unit` that
 * divides itself): a size asked past it is refused by tfm_kv_pages_new,
 * the default cut to it. */
static void choose_block_positions(tfm_kv_pages *p) {
  const tfm_kv_pages_options *o = &p->options;
  int64_t page = sysconf(_SC_PAGESIZE);
  int64_t unit = page / gcd(page, o->position_bytes);
  int64_t wanted = o->block_positions > 0 ? o->block_positions
                                         : TFM_KV_DEFAULT_BLOCK_POSITIONS;
  if (wanted > o->capacity) /* the default, for a shorter context */
    wanted = o->capacity;
  p->mapped_blocks = o->capacity % unit == 0;
  if (!p->mapped_blocks) {
    p->block_positions = wanted;
    return;
  }
  int64_t size = unit;
  while (size < wanted || o->capacity % size != 0)
    size += unit;
  int64_t limit = max_map_count() - 8192;
  while (o->slots * (o->capacity / size) * o->planes > limit &&
         o->capacity % (size * 2) == 0)
    size *= 2;
  p->block_positions = size;
}

static int64_t *table_of(tfm_kv_pages *p, int64_t slot) {
  return p->tables + slot * p->blocks_per_slot;
}

static char *chunk_address(const tfm_kv_pages *p, int64_t slot, int64_t plane,
                           int64_t index) {
  return p->base + (size_t)slot * p->slot_bytes + (size_t)plane * p->plane_bytes +
         (size_t)index * p->chunk_bytes;
}

int tfm_kv_pages_map(tfm_kv_pages *p, int64_t slot, int64_t index,
                     int64_t block) {
  if (!p->mapped_blocks)
    return 1;
  for (int64_t plane = 0; plane < p->options.planes; ++plane) {
    off_t offset = (off_t)((plane * p->blocks + block) * (int64_t)p->chunk_bytes);
    void *at = chunk_address(p, slot, plane, index);
    if (mmap(at, p->chunk_bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED,
             p->fd, offset) == MAP_FAILED) {
      /* Back to reserved address space: nothing half-mapped. */
      for (int64_t done = 0; done < plane; ++done)
        mmap(chunk_address(p, slot, done, index), p->chunk_bytes, PROT_NONE,
             MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
      return 0;
    }
  }
  if (p->leads)
    tfm_ranks_lead_pool_map(p->base, slot, index, block);
  return 1;
}

void tfm_kv_pages_unmap(tfm_kv_pages *p, int64_t slot, int64_t index) {
  if (!p->mapped_blocks)
    return;
  for (int64_t plane = 0; plane < p->options.planes; ++plane)
    mmap(chunk_address(p, slot, plane, index), p->chunk_bytes, PROT_NONE,
         MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE, -1, 0);
  if (p->leads)
    tfm_ranks_lead_pool_map(p->base, slot, index, -1);
}

tfm_status_code tfm_kv_pages_new(const tfm_kv_pages_options *options,
                                 tfm_kv_pages **out, tfm_status *status) {
  if (!options || !out)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_kv_pages_new: NULL %s", options ? "output" : "options");
  *out = NULL;
  const tfm_kv_pages_options *o = options;
  if (o->slots <= 0 || o->planes <= 0 || o->capacity <= 0 ||
      o->position_bytes <= 0 || o->pool_bytes <= 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "a paged KV cache needs positive sizes (slots %lld, "
                    "planes %lld, capacity %lld, %lld bytes a position, "
                    "pool %lld bytes)",
                    (long long)o->slots, (long long)o->planes,
                    (long long)o->capacity, (long long)o->position_bytes,
                    (long long)o->pool_bytes);
  if (o->block_positions > o->capacity)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "blocks of %lld positions are more than the %lld "
                    "positions of a sequence",
                    (long long)o->block_positions, (long long)o->capacity);
  tfm_kv_pages *p = calloc(1, sizeof *p);
  if (!p)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  p->options = *o;
  p->fd = -1;
  p->base = MAP_FAILED;
  choose_block_positions(p);
  p->blocks_per_slot =
      (o->capacity + p->block_positions - 1) / p->block_positions;
  p->chunk_bytes = (size_t)(p->block_positions * o->position_bytes);
  p->plane_bytes = (size_t)(o->capacity * o->position_bytes);
  p->slot_bytes = p->plane_bytes * (size_t)o->planes;
  p->reserved_bytes = p->slot_bytes * (size_t)o->slots;
  p->blocks = o->pool_bytes / (int64_t)(p->chunk_bytes * (size_t)o->planes);
  if (p->blocks < 1) {
    tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
             "a KV pool of %lld bytes holds no block of %lld positions "
             "(%lld bytes)",
             (long long)o->pool_bytes, (long long)p->block_positions,
             (long long)(p->chunk_bytes * (size_t)o->planes));
    tfm_kv_pages_free(p); /* after the message, which reads it */
    return TFM_ERROR_INVALID_ARGUMENT;
  }
  int64_t buckets = 1;
  while (buckets < 2 * p->blocks)
    buckets *= 2;
  p->bucket_mask = buckets - 1;
  p->info = calloc((size_t)p->blocks, sizeof *p->info);
  p->block_tokens =
      malloc((size_t)(p->blocks * p->block_positions) * sizeof(int32_t));
  p->free_blocks = malloc((size_t)p->blocks * sizeof(int64_t));
  p->buckets = malloc((size_t)buckets * sizeof(int64_t));
  p->tables = malloc((size_t)(o->slots * p->blocks_per_slot) * sizeof(int64_t));
  p->mapped = calloc((size_t)o->slots, sizeof(int64_t));
  p->published = calloc((size_t)o->slots, sizeof(int64_t));
  if (!p->info || !p->block_tokens || !p->free_blocks || !p->buckets ||
      !p->tables || !p->mapped || !p->published) {
    long long blocks = (long long)p->blocks;
    tfm_kv_pages_free(p);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                    "out of memory for a KV pool of %lld blocks", blocks);
  }
  for (int64_t i = 0; i < buckets; ++i)
    p->buckets[i] = kNone;
  for (int64_t i = 0; i < o->slots * p->blocks_per_slot; ++i)
    p->tables[i] = kNone;
  /* Handed out from 0 upwards: consecutive blocks, merged mappings. */
  for (int64_t i = 0; i < p->blocks; ++i)
    p->free_blocks[i] = p->blocks - 1 - i;
  p->free_count = p->blocks;
  p->lru_head = p->lru_tail = kNone;
  size_t pool = p->chunk_bytes * (size_t)o->planes * (size_t)p->blocks;
  if (p->mapped_blocks)
    p->fd = memfd_create("tfm-kv-pool", MFD_CLOEXEC);
  if (p->mapped_blocks && (p->fd < 0 || ftruncate(p->fd, (off_t)pool) != 0)) {
    int error = errno;
    tfm_kv_pages_free(p);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                    "cannot create a KV pool of %zu bytes: %s", pool,
                    strerror(error));
  }
  p->base = mmap(NULL, p->reserved_bytes,
                 p->mapped_blocks ? PROT_NONE : PROT_READ | PROT_WRITE,
                 MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p->base == MAP_FAILED) {
    int error = errno;
    size_t reserved = p->reserved_bytes;
    tfm_kv_pages_free(p);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                    "cannot reserve %zu bytes of address space for %lld KV "
                    "slots: %s",
                    reserved, (long long)o->slots, strerror(error));
  }
  *out = p;
  return tfm_ok(status);
}

void tfm_kv_pages_lead_ranks(tfm_kv_pages *p) {
  p->leads = 1;
  tfm_kv_pages_options layout;
  size_t reserved;
  tfm_kv_pages_get_layout(p, &layout, &reserved);
  tfm_ranks_lead_pool_new(p->base, reserved, &layout, sizeof layout);
}

/*===- the other ranks' pools (runtime/core/ranks.h) ---------------------===*/

static void *mirror_make(const void *layout, size_t layout_bytes,
                         size_t reserved, tfm_status *status) {
  if (layout_bytes != sizeof(tfm_kv_pages_options)) {
    tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
             "rank 0's KV pool layout is %zu bytes, not %zu (another "
             "runtime's)",
             layout_bytes, sizeof(tfm_kv_pages_options));
    return NULL;
  }
  tfm_kv_pages_options wanted;
  memcpy(&wanted, layout, sizeof wanted);
  tfm_kv_pages *pool = NULL;
  if (tfm_kv_pages_new(&wanted, &pool, status) != TFM_OK)
    return NULL;
  tfm_kv_pages_options own;
  size_t own_reserved;
  tfm_kv_pages_get_layout(pool, &own, &own_reserved);
  if (own_reserved != reserved ||
      own.block_positions != wanted.block_positions) {
    tfm_kv_pages_free(pool);
    tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
             "its KV pool cannot take rank 0's layout (blocks of another "
             "size: a host whose vm.max_map_count differs)");
    return NULL;
  }
  return pool;
}

static void *mirror_base(void *pool) {
  return tfm_kv_pages_base((tfm_kv_pages *)pool);
}

static int mirror_map(void *pool, int64_t slot, int64_t index, int64_t block) {
  if (block < 0) {
    tfm_kv_pages_unmap((tfm_kv_pages *)pool, slot, index);
    return 1;
  }
  return tfm_kv_pages_map((tfm_kv_pages *)pool, slot, index, block);
}

static void mirror_release(void *pool) {
  tfm_kv_pages_free((tfm_kv_pages *)pool);
}

/* Hands the MPI side (where a split model links it) the way to make this
 * rank's copies of rank 0's pools, before main runs. */
__attribute__((constructor)) static void register_pool_mirror(void) {
  static const tfm_ranks_pool_mirror mirror = {mirror_make, mirror_base,
                                               mirror_map, mirror_release};
  if (tfm_ranks_set_pool_mirror)
    tfm_ranks_set_pool_mirror(&mirror);
}

void tfm_kv_pages_get_layout(const tfm_kv_pages *p,
                             tfm_kv_pages_options *layout,
                             size_t *reserved_bytes) {
  *layout = p->options;
  layout->block_positions = p->block_positions;
  *reserved_bytes = p->reserved_bytes;
}

void tfm_kv_pages_free(tfm_kv_pages *p) {
  if (!p)
    return;
  if (p->leads)
    tfm_ranks_lead_free(p->base);
  if (p->base != MAP_FAILED)
    munmap(p->base, p->reserved_bytes);
  if (p->fd >= 0)
    close(p->fd);
  free(p->info);
  free(p->block_tokens);
  free(p->free_blocks);
  free(p->buckets);
  free(p->tables);
  free(p->mapped);
  free(p->published);
  free(p);
}

float *tfm_kv_pages_base(const tfm_kv_pages *p) { return (float *)p->base; }
int64_t tfm_kv_pages_block_positions(const tfm_kv_pages *p) {
  return p->block_positions;
}

/*===--- The prefix table: published blocks by (parent, tokens) --------===*/

static uint64_t hash_block(uint64_t parent_hash, const int32_t *tokens,
                           int64_t n) {
  uint64_t h = parent_hash ^ 0x9e3779b97f4a7c15ull;
  for (int64_t i = 0; i < n; ++i) {
    h ^= (uint32_t)tokens[i];
    h *= 0x100000001b3ull;
    h ^= h >> 29;
  }
  return h;
}

/* The row keys of positions [start, start + n) combined, in order; 0
 * when every one is 0 (tokens alone), never 0 otherwise. */
static uint64_t block_rows_key(const tfm_kv_prefix *x, int64_t start,
                               int64_t n) {
  uint64_t h = 0;
  int any = 0;
  for (int64_t i = start; i < start + n && i < x->row_key_count; ++i) {
    if (!x->row_keys[i])
      continue;
    any = 1;
    h ^= x->row_keys[i] + 0x9e3779b97f4a7c15ull * (uint64_t)(i - start + 1);
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 31;
  }
  return any ? h | 1 : 0;
}

static int64_t *bucket_of(tfm_kv_pages *p, uint64_t hash) {
  return &p->buckets[hash & (uint64_t)p->bucket_mask];
}

/* The published block of `space` following `parent` (kNone: a first
 * block) whose tokens are `tokens` and row keys `rows`; kNone if there is
 * none. */
static int64_t find_block(tfm_kv_pages *p, int64_t parent, uint64_t hash,
                          const int32_t *tokens, uint64_t rows, int32_t space) {
  uint64_t parent_epoch = parent == kNone ? 0 : p->info[parent].epoch;
  for (int64_t b = *bucket_of(p, hash); b != kNone;
       b = p->info[b].next_in_bucket) {
    const block_info *info = &p->info[b];
    if (info->hash == hash && info->parent == parent &&
        info->parent_epoch == parent_epoch && info->space == space &&
        info->rows == rows &&
        memcmp(p->block_tokens + b * p->block_positions, tokens,
               (size_t)p->block_positions * sizeof *tokens) == 0)
      return b;
  }
  return kNone;
}

static void unpublish(tfm_kv_pages *p, int64_t block) {
  block_info *info = &p->info[block];
  for (int64_t *link = bucket_of(p, info->hash); *link != kNone;
       link = &p->info[*link].next_in_bucket)
    if (*link == block) {
      *link = info->next_in_bucket;
      break;
    }
  info->published = 0;
}

static void lru_remove(tfm_kv_pages *p, int64_t block) {
  block_info *info = &p->info[block];
  if (info->lru_prev != kNone)
    p->info[info->lru_prev].lru_next = info->lru_next;
  else
    p->lru_head = info->lru_next;
  if (info->lru_next != kNone)
    p->info[info->lru_next].lru_prev = info->lru_prev;
  else
    p->lru_tail = info->lru_prev;
  --p->cached_count;
}

static void lru_append(tfm_kv_pages *p, int64_t block) {
  block_info *info = &p->info[block];
  info->lru_prev = p->lru_tail;
  info->lru_next = kNone;
  if (p->lru_tail != kNone)
    p->info[p->lru_tail].lru_next = block;
  else
    p->lru_head = block;
  p->lru_tail = block;
  ++p->cached_count;
}

/* A block for new contents: a free one, else the cached prefix released
 * longest ago; kNone when every block is mapped. */
static int64_t take_block(tfm_kv_pages *p) {
  int64_t block;
  if (p->free_count > 0) {
    block = p->free_blocks[--p->free_count];
  } else if (p->lru_head != kNone) {
    block = p->lru_head;
    lru_remove(p, block);
    unpublish(p, block);
  } else {
    return kNone;
  }
  ++p->info[block].epoch;
  p->info[block].references = 0;
  return block;
}

static void drop_reference(tfm_kv_pages *p, int64_t block) {
  if (--p->info[block].references > 0)
    return;
  if (p->info[block].published)
    lru_append(p, block);
  else
    p->free_blocks[p->free_count++] = block;
}

/*===--- Slots ---------------------------------------------------------===*/

tfm_status_code tfm_kv_pages_reserve(tfm_kv_pages *p, int64_t slot,
                                     int64_t end, tfm_status *status) {
  int64_t needed = (end + p->block_positions - 1) / p->block_positions;
  if (slot < 0 || slot >= p->options.slots || end > p->options.capacity)
    return tfm_fail(status, TFM_ERROR_OUT_OF_RANGE,
                    "KV slot %lld, %lld positions: outside %lld slots of %lld",
                    (long long)slot, (long long)end,
                    (long long)p->options.slots,
                    (long long)p->options.capacity);
  int64_t *table = table_of(p, slot);
  while (p->mapped[slot] < needed) {
    int64_t block = take_block(p);
    if (block == kNone)
      return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                      "the KV pool's %lld blocks are all in use",
                      (long long)p->blocks);
    if (!tfm_kv_pages_map(p, slot, p->mapped[slot], block)) {
      p->free_blocks[p->free_count++] = block;
      return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                      "cannot map a KV block: %s", strerror(errno));
    }
    p->info[block].references = 1;
    table[p->mapped[slot]++] = block;
  }
  return tfm_ok(status);
}

int64_t tfm_kv_pages_share_prefix(tfm_kv_pages *p, int64_t slot,
                                  const tfm_kv_prefix *prefix, int64_t n,
                                  int64_t limit) {
  if (slot < 0 || slot >= p->options.slots || p->mapped[slot] != 0 ||
      !p->mapped_blocks)
    return 0;
  int64_t size = p->block_positions, parent = kNone;
  uint64_t parent_hash = 0;
  int64_t *table = table_of(p, slot);
  if (limit > n)
    limit = n;
  for (int64_t index = 0; (index + 1) * size <= limit; ++index) {
    const int32_t *own = prefix->tokens + index * size;
    uint64_t rows = block_rows_key(prefix, index * size, size);
    uint64_t hash = hash_block(parent_hash, own, size) ^ rows;
    int64_t block = find_block(p, parent, hash, own, rows, prefix->space);
    if (block == kNone || !tfm_kv_pages_map(p, slot, index, block))
      break;
    if (p->info[block].references++ == 0)
      lru_remove(p, block);
    table[index] = block;
    p->mapped[slot] = p->published[slot] = index + 1;
    parent = block;
    parent_hash = hash;
  }
  return p->mapped[slot] * size;
}

void tfm_kv_pages_publish(tfm_kv_pages *p, int64_t slot,
                          const tfm_kv_prefix *prefix, int64_t filled) {
  if (!p->mapped_blocks)
    return;
  int64_t size = p->block_positions;
  int64_t *table = table_of(p, slot);
  int64_t full = filled / size;
  if (full > p->mapped[slot])
    full = p->mapped[slot];
  for (int64_t index = p->published[slot]; index < full; ++index) {
    int64_t block = table[index];
    int64_t parent = index == 0 ? kNone : table[index - 1];
    /* A chain is offered only as far as each link is the one offered
     * (a twin computed at the same time by another slot stays private). */
    if (parent != kNone && !p->info[parent].published)
      break;
    const int32_t *own = prefix->tokens + index * size;
    uint64_t rows = block_rows_key(prefix, index * size, size);
    uint64_t hash =
        hash_block(parent == kNone ? 0 : p->info[parent].hash, own, size) ^
        rows;
    if (find_block(p, parent, hash, own, rows, prefix->space) != kNone)
      break;
    block_info *info = &p->info[block];
    info->hash = hash;
    info->space = prefix->space;
    info->rows = rows;
    info->parent = parent;
    info->parent_epoch = parent == kNone ? 0 : p->info[parent].epoch;
    memcpy(p->block_tokens + block * size, own, (size_t)size * sizeof *own);
    info->next_in_bucket = *bucket_of(p, hash);
    *bucket_of(p, hash) = block;
    info->published = 1;
    p->published[slot] = index + 1;
  }
}

void tfm_kv_pages_release(tfm_kv_pages *p, int64_t slot) {
  if (slot < 0 || slot >= p->options.slots)
    return;
  int64_t *table = table_of(p, slot);
  for (int64_t index = 0; index < p->mapped[slot]; ++index) {
    tfm_kv_pages_unmap(p, slot, index);
    drop_reference(p, table[index]);
    table[index] = kNone;
  }
  p->mapped[slot] = p->published[slot] = 0;
}

void tfm_kv_pages_get_stats(const tfm_kv_pages *p, tfm_kv_pages_stats *s) {
  memset(s, 0, sizeof *s);
  s->blocks = p->blocks;
  s->block_bytes = (int64_t)(p->chunk_bytes * (size_t)p->options.planes);
  s->mapped = p->mapped_blocks;
  s->blocks_cached = p->cached_count;
  for (int64_t b = 0; b < p->blocks; ++b) {
    s->blocks_mapped += p->info[b].references > 0;
    s->blocks_shared += p->info[b].references > 1;
  }
  for (int64_t slot = 0; slot < p->options.slots; ++slot)
    s->mappings += p->mapped[slot];
}
