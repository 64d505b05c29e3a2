/*===- model_internal.h - model internals shared inside the runtime ------===*/

#ifndef TFM_RUNTIME_CORE_MODEL_INTERNAL_H
#define TFM_RUNTIME_CORE_MODEL_INTERNAL_H

#include "tfm/tfm_runtime.h"

/* The cache @prefill updates (NULL without one). */
const tfm_cache_desc *tfm_model_kv_cache(const tfm_model *model);
/* The rings of windowed layers @prefill keeps beside it where their keys
 * are of another type than the cache's (NULL otherwise). */
const tfm_cache_desc *tfm_model_ring_cache(const tfm_model *model);
/* The recurrent states @prefill updates beside it (NULL without recurrent
 * layers). */
const tfm_cache_desc *tfm_model_recurrent_state(const tfm_model *model);

/* Which of the cached entry points tfm_run_prefill calls: @prefill, @decode
 * (one token), @verify (@prefill returning every position's logits; a
 * split model has none, so its ranks see only the first two) or a
 * vision-language model's @prefill_embeddings (rows in place of tokens). */
typedef enum {
  TFM_ENTRY_PREFILL = 0,
  TFM_ENTRY_DECODE = 1,
  TFM_ENTRY_VERIFY = 2,
  TFM_ENTRY_PREFILL_EMBEDDINGS = 3
} tfm_cached_entry;

/* Whether the model has @prefill_embeddings (a vision-language model). */
int tfm_model_takes_image_rows(const tfm_model *model);

/* How many image rows one call may take: where an image's rows attend to
 * each other both ways (desc->image_rows_bidirectional), one image's
 * (@encode_image's rows), so that no call holds part of an image or two
 * images; otherwise no limit (INT64_MAX). */
int64_t tfm_model_image_rows_per_call(const tfm_model *model);

/* The language-model entry points the runtime calls with their known
 * signatures (tfm_forward, sessions), run inside a call frame
 * (buffer_cache.c) as the generated calls are: an allocation failure in
 * the generated code releases what the call allocated and returns
 * TFM_ERROR_OUT_OF_MEMORY, never a write through NULL. `entry` picks
 * @prefill, @decode, @verify or @prefill_embeddings, whose `input` is
 * the tokens (tfm_memref1d) or, for @prefill_embeddings, the rows
 * (tfm_memref2d_f32); `rings` and `state`: the rings and the recurrent
 * states of a model that has them (NULL otherwise).
 * TFM_ERROR_NOT_FOUND without them. */
tfm_status_code tfm_run_forward(tfm_model *model, tfm_memref2d_f32 *logits,
                                tfm_memref1d *tokens, tfm_status *status);
tfm_status_code tfm_run_prefill(tfm_model *model, tfm_cached_entry entry,
                                tfm_memref2d_f32 *logits, void *input,
                                int64_t start, int64_t slot,
                                tfm_memref5d_f32 *cache,
                                tfm_memref5d_f32 *rings, tfm_memref1d *state,
                                tfm_status *status);

/* Runs a packed entry point (@<name>_batch, whose input `lengths_at` holds
 * the sequence lengths, already checked) in groups of whole sequences that
 * stay in cache, joining their outputs into `output` (packed_call.c). */
tfm_status_code tfm_call_packed(tfm_model *model,
                                const tfm_entry_point *entry,
                                const tfm_tensor *inputs, int32_t lengths_at,
                                tfm_tensor *output, tfm_status *status);

/* Runs `entry` on inputs and caches tfm_model_call has checked (the other
 * ranks of a split model too: the ones that follow call it directly). */
tfm_status_code tfm_model_dispatch(tfm_model *model,
                                   const tfm_entry_point *entry,
                                   const tfm_tensor *inputs,
                                   tfm_tensor *const *caches,
                                   tfm_tensor *outputs, tfm_status *status);

/* tfm_model_call of `parts` parts of a batch, one after another: part p's
 * inputs are inputs[p * num_inputs ...] and its outputs outputs[p *
 * num_outputs ...]. Rank 0 of a model split into pipeline stages tells the
 * other ranks of every part before it runs its own part of the first, so
 * that each stage works on one part while the next works on the part
 * before (micro-batches; runtime/distributed/pipeline.c). On failure no
 * output is held. The parts share `caches`. */
tfm_status_code tfm_model_call_parts(tfm_model *model, const char *name,
                                     int32_t parts, const tfm_tensor *inputs,
                                     int32_t num_inputs,
                                     tfm_tensor *const *caches,
                                     tfm_tensor *outputs, int32_t num_outputs,
                                     tfm_status *status);

/* The weights as the generated code takes them. */
tfm_memref1d tfm_model_weights_descriptor(const tfm_model *model);

/* Whether the model's code runs on a GPU (--target=cuda): its weights and
 * caches are then GPU memory, which the host cannot read. */
int tfm_model_on_gpu(const tfm_model *model);
/* Memory for state the entry points keep between calls (a session's KV
 * cache), zeroed: host memory, or GPU memory for a GPU model. NULL when
 * there is none to be had. */
void *tfm_model_state_alloc(const tfm_model *model, size_t bytes);
/* Frees what tfm_model_state_alloc gave (NULL: nothing). */
void tfm_model_state_free(const tfm_model *model, void *state);
/* tfm_model_call with caches from tfm_model_state_alloc: GPU memory for a
 * GPU model, which tfm_model_call refuses (its caller's caches are host
 * memory). */
tfm_status_code tfm_model_call_with_state(tfm_model *model, const char *name,
                                          const tfm_tensor *inputs,
                                          int32_t num_inputs,
                                          tfm_tensor *const *caches,
                                          tfm_tensor *outputs,
                                          int32_t num_outputs,
                                          tfm_status *status);
/* memmove within a model's state (device memory for a GPU model); 0 when
 * the GPU failed (tfm_model_check_device says why). */
int tfm_model_state_move(const tfm_model *model, void *to, const void *from,
                         size_t bytes);
/* After a generated call of a GPU model: TFM_OK, or TFM_ERROR_DEVICE with
 * what the GPU reported (nothing to do for a CPU model). */
tfm_status_code tfm_model_check_device(const tfm_model *model,
                                       const char *entry, tfm_status *status);

/* Checks ids against the vocabulary: TFM_ERROR_OUT_OF_RANGE naming the
 * first bad one. */
tfm_status_code tfm_check_token_ids(const tfm_model_desc *desc,
                                    const int32_t *tokens, int64_t n,
                                    tfm_status *status);

/* Checks that options->forced_count is not negative and that forced
 * tokens are there when it counts some (generate.c); `function` names the
 * caller in the message. */
tfm_status_code tfm_check_forced_tokens(const char *function,
                                        const tfm_generate_options *options,
                                        tfm_status *status);

/* Copies the generated code's logits ([rows, vocab], from buffer_cache.c) to
 * `out` and frees them; a descriptor of another shape is reported. */
tfm_status_code tfm_take_logits(const tfm_model_desc *desc,
                                tfm_memref2d_f32 *result, int64_t rows,
                                float *out, tfm_status *status);

#endif /* TFM_RUNTIME_CORE_MODEL_INTERNAL_H */
