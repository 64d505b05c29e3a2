/*===- ranks.h - a model split over MPI ranks, as the core sees it ------===*
 *
 * A model compiled with tfmc --ranks N runs as N MPI processes, each with
 * its part of the weights and of the KV caches. Rank 0 runs the program
 * (the command line, an application, tfm-serve); the others follow it:
 * every call of the model's code and every change rank 0 makes to cache
 * memory (allocating, freeing, moving) is broadcast to them, and they make
 * it on their own parts, so the all-reduces in the code meet.
 *
 * The MPI side is libtfmrt_mpi (runtime/distributed/ranks.c), linked into
 * split models only: the core refers to it weakly, and refuses a split
 * model linked without it.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_CORE_RANKS_H
#define TFM_RUNTIME_CORE_RANKS_H

#include "runtime/core/status.h"
#include "tfm/tfm_runtime.h"

#include <stddef.h>
#include <stdint.h>

/* Joins the model's ranks (MPI initialized, its world as large as the
 * model's ranks): this process's rank, or -1 with `status` set. */
int32_t tfm_ranks_join(const tfm_model_desc *desc, tfm_status *status);
/* A rank other than 0, once loaded: follows rank 0 until it ends, then
 * exits the process. Never returns. */
void tfm_ranks_follow(tfm_model *model);
/* Ends every rank, `message` naming this one on stderr. */
void tfm_ranks_abort(const char *message);
/* One transfer of a pipeline stage's rows (runtime/distributed/pipeline.c)
 * and the seconds it took, for --stats. */
void tfm_ranks_count_stage_transfer(double seconds);
/* Around a run of the model's code on any rank, for --stats: begin's
 * result goes to end. */
double tfm_ranks_call_begin(void);
void tfm_ranks_call_end(double begun);

/* Rank 0, before it calls the model's code: the same call for the others. */
void tfm_ranks_lead_forward(const tfm_memref1d *tokens);
void tfm_ranks_lead_prefill(int decode, const tfm_memref1d *tokens,
                            int64_t start, int64_t slot,
                            const tfm_memref5d_f32 *cache,
                            const tfm_memref5d_f32 *rings,
                            const tfm_memref1d *state);
/* `parts` calls of `entry` (inputs[p * entry->num_inputs ...] part p's),
 * in one message: a model in pipeline stages then has every part's call
 * on every rank before rank 0, its last stage, waits for the first's rows
 * (tfm_model_call_parts). */
void tfm_ranks_lead_call(const tfm_model *model, const tfm_entry_point *entry,
                         int32_t parts, const tfm_tensor *inputs,
                         tfm_tensor *const *caches);
/* Rank 0, as it changes cache memory: the same change for the others. */
void tfm_ranks_lead_alloc(const void *state, size_t bytes);
/* The batch engine's paged KV pool (runtime/engine/kv_pages.h), known here
 * by its base and its layout's bytes: made (`reserved` bytes of address
 * space at `base`), and a block mapped at block `index` of a slot (`block`
 * -1: unmapped); freed as any cache memory is, by tfm_ranks_lead_free of
 * its base. */
void tfm_ranks_lead_pool_new(const void *base, size_t reserved,
                             const void *layout, size_t layout_bytes);
void tfm_ranks_lead_pool_map(const void *base, int64_t slot, int64_t index,
                             int64_t block);
void tfm_ranks_lead_free(const void *state);
void tfm_ranks_lead_move(void *to, const void *from, size_t bytes);
/* Rank 0: every rank's stats (tfm_rank_stats, tfm_runtime.h), `out`
 * holding the model's ranks (tfm_model_rank_stats checks). */
void tfm_ranks_gather_stats(const tfm_model *model, tfm_rank_stats *out);
/* This rank's stats (ranks.c; rank 0's own part of the gather). */
void tfm_ranks_own_stats(const tfm_model *model, tfm_rank_stats *out);

/* The other ranks' side of the batch engine's pools: how a follower makes
 * a pool of rank 0's layout reserving the same `reserved` bytes (NULL with
 * `status` set when it cannot be had, or is another size), finds its base,
 * maps a block (`block` -1: unmapped; 0 when mmap fails) and frees it. The
 * engine registers these (kv_pages.c, as the program starts, where the
 * engine is linked), so the MPI side calls through them and names no
 * engine code. */
typedef struct {
  void *(*make)(const void *layout, size_t layout_bytes, size_t reserved,
                tfm_status *status);
  void *(*base)(void *pool);
  int (*map)(void *pool, int64_t slot, int64_t index, int64_t block);
  void (*release)(void *pool);
} tfm_ranks_pool_mirror;
void tfm_ranks_set_pool_mirror(const tfm_ranks_pool_mirror *mirror);
#pragma weak tfm_ranks_set_pool_mirror

#pragma weak tfm_ranks_join
#pragma weak tfm_ranks_follow
#pragma weak tfm_ranks_abort
#pragma weak tfm_ranks_count_stage_transfer
#pragma weak tfm_ranks_call_begin
#pragma weak tfm_ranks_call_end
#pragma weak tfm_ranks_lead_forward
#pragma weak tfm_ranks_lead_prefill
#pragma weak tfm_ranks_lead_call
#pragma weak tfm_ranks_lead_alloc
#pragma weak tfm_ranks_lead_pool_new
#pragma weak tfm_ranks_lead_pool_map
#pragma weak tfm_ranks_lead_free
#pragma weak tfm_ranks_lead_move
#pragma weak tfm_ranks_gather_stats
#pragma weak tfm_ranks_own_stats

/* Whether `model` is split and this process is rank 0, which broadcasts
 * what it does (model.c). */
int tfm_model_leads(const tfm_model *model);
/* The model's ranks (1: not split). */
int32_t tfm_model_ranks(const tfm_model *model);
/* Around a run of the model's code (model.c): a split model's time in it
 * goes to --stats (tfm_ranks_call_begin/_end); nothing for another. */
double tfm_model_code_begin(const tfm_model *model);
void tfm_model_code_end(const tfm_model *model, double begun);

#endif /* TFM_RUNTIME_CORE_RANKS_H */
