/*===- kv_pages.h - a paged KV cache: blocks, block tables, prefixes -----===//
 *
 * The serving engine's KV memory (engine.c). The compiled @prefill_batch
 * reads a batched cache [slots, layers, 2, capacity, kv_heads, head_dim]
 * as one array. Reserving that whole array for every slot would
 * hold max_context positions for each sequence; instead the array is only
 * reserved address space, and its memory comes from a pool of fixed-size
 * blocks (`block_positions` positions of every layer's keys and values):
 * block i of a sequence is mapped, with mmap from one memfd, at the
 * addresses of positions [i * B, (i + 1) * B) of its slot. Each sequence's
 * block table lists the pool blocks it maps; the processor's page tables
 * are that table as the kernels see it, so the generated attention reads
 * a paged cache at the speed of a contiguous one (the design of vAttention,
 * Prabhu et al. 2024, rather than PagedAttention's software indirection
 * inside every kernel). Mapping needs each layer's keys of a slot to be
 * whole pages; a capacity where they are not (a page of 4096 bytes holds
 * 4096 / position_bytes positions) leaves the cache as plain memory, with
 * blocks that only count it.
 *
 * A block is shared by every sequence whose tokens agree up to its end
 * (prefix sharing): a full block's contents depend only on those tokens
 * (and on the rows a vision-language prompt gives its placeholders, which
 * the key hashes: tfm_kv_prefix), and full blocks are never written again (the
 * cache is append-only), so only full blocks are shared and no shared block is
 * ever copied. A block no sequence maps keeps its prefix for later requests
 * until the pool needs it (least recently released first).
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_ENGINE_KV_PAGES_H
#define TFM_RUNTIME_ENGINE_KV_PAGES_H

#include "tfm/tfm_runtime.h"

#include <stddef.h>
#include <stdint.h>

/* Positions per block unless asked otherwise: small enough that 16
 * sequences sharing a 512-token prefix store 1.25x one sequence's KV
 * (1.5x with 16). */
#define TFM_KV_DEFAULT_BLOCK_POSITIONS 8

typedef struct tfm_kv_pages tfm_kv_pages;

typedef struct {
  int64_t slots;           /* sequences mapped at once */
  int64_t planes;          /* of positions in a slot: layers x 2 (K, V) of
                              the shape [slots, layers, 2, ...], or layers
                              x 1 (a latent cache's rows alone) */
  int64_t capacity;        /* positions per sequence */
  int64_t position_bytes;  /* kv_heads * head_dim * the element's bytes */
  int64_t pool_bytes;      /* bound on the blocks' memory */
  int64_t block_positions; /* at least; rounded up to whole pages; 0:
                              TFM_KV_DEFAULT_BLOCK_POSITIONS (at most the
                              capacity); more than the capacity is
                              refused */
} tfm_kv_pages_options;

tfm_status_code tfm_kv_pages_new(const tfm_kv_pages_options *options,
                                 tfm_kv_pages **out, tfm_status *status);
void tfm_kv_pages_free(tfm_kv_pages *pages);

/* The batched cache's first element ([slots, layers, 2, capacity, ...]). */
float *tfm_kv_pages_base(const tfm_kv_pages *pages);
int64_t tfm_kv_pages_block_positions(const tfm_kv_pages *pages);

/* Maps pool blocks at slot `slot` until positions [0, end) are backed.
 * TFM_ERROR_OUT_OF_MEMORY when the pool has no free block left (the
 * blocks mapped before that stay, whole). */
tfm_status_code tfm_kv_pages_reserve(tfm_kv_pages *pages, int64_t slot,
                                     int64_t end, tfm_status *status);

/* A sequence's positions as the prefix table keys them. `tokens`; where
 * the tokens do not fix a position's keys and values (a placeholder whose
 * embedding is an image's row), `row_keys[i]` is a 64-bit hash of what
 * position i holds, 0 where its token does (row_keys NULL, or positions
 * from row_key_count on: tokens alone). `space` keeps apart keys and
 * values of the same positions computed otherwise (by a LoRA adapter: its
 * id; 0: the base model). */
typedef struct {
  const int32_t *tokens;
  const uint64_t *row_keys;
  int64_t row_key_count;
  int32_t space;
} tfm_kv_prefix;

/* Maps the longest run of shared blocks whose positions are a prefix of
 * `prefix`'s first `n` at the start of the empty slot `slot`, at most
 * `limit` positions of them; returns the positions now backed and holding
 * keys and values (a multiple of the block size). */
int64_t tfm_kv_pages_share_prefix(tfm_kv_pages *pages, int64_t slot,
                                  const tfm_kv_prefix *prefix, int64_t n,
                                  int64_t limit);

/* Offers slot `slot`'s full blocks up to position `filled` (their
 * positions `prefix`'s first `filled`) for sharing. */
void tfm_kv_pages_publish(tfm_kv_pages *pages, int64_t slot,
                          const tfm_kv_prefix *prefix, int64_t filled);

/* Unmaps every block of `slot`; blocks no other slot maps become free
 * (kept, if published, until reused). */
void tfm_kv_pages_release(tfm_kv_pages *pages, int64_t slot);

typedef struct {
  int64_t blocks;        /* in the pool */
  int64_t blocks_mapped; /* mapped by at least one slot */
  int64_t blocks_shared; /* mapped by two slots or more */
  int64_t blocks_cached; /* mapped by none, kept for their prefix */
  int64_t mappings;      /* block-in-slot mappings, shared ones counted
                            once per slot */
  int64_t block_bytes;   /* one block: every layer's keys and values */
  int mapped;            /* 0: a capacity that is no whole number of pages
                            a plane; the cache is plain memory for every
                            slot, blocks only count it, nothing is shared */
} tfm_kv_pages_stats;
void tfm_kv_pages_get_stats(const tfm_kv_pages *pages,
                            tfm_kv_pages_stats *stats);

/* A split model's pool (runtime/core/ranks.h): on rank 0, every block
 * mapped or unmapped is broadcast, and each other rank keeps a pool of the
 * same layout (its part of the heads makes a position's bytes alike on
 * every rank) in which it maps the same blocks at the same places, so that
 * the slots rank 0 hands the compiled code hold the same sequences on
 * every rank. `lead_ranks` starts that on rank 0 (the others build theirs
 * from the layout); `map` and `unmap` are what a follower then replays. */
void tfm_kv_pages_lead_ranks(tfm_kv_pages *pages);
/* The options that rebuild this pool's layout (its block size as chosen)
 * and the address space it reserves. */
void tfm_kv_pages_get_layout(const tfm_kv_pages *pages,
                             tfm_kv_pages_options *layout,
                             size_t *reserved_bytes);
/* Puts pool block `block`'s planes at block `index` of `slot` (0 when
 * mmap fails; nothing is then half-mapped), or takes them away. */
int tfm_kv_pages_map(tfm_kv_pages *pages, int64_t slot, int64_t index,
                     int64_t block);
void tfm_kv_pages_unmap(tfm_kv_pages *pages, int64_t slot, int64_t index);

#endif /* TFM_RUNTIME_ENGINE_KV_PAGES_H */
