/*===- entry_call.c - tfm_model_call: any entry point, checked ----------===//
 *
 * Checks a call against the entry point's descriptors (counts, dtypes,
 * ranks, static dimensions, token ids, lengths) before the generated call
 * runs, so that the generated code only ever sees inputs it was compiled
 * for; the generated call turns allocation failures into a status.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/buffer_cache.h"
#include "runtime/core/model_internal.h"
#include "runtime/core/ranks.h"
#include "runtime/core/status.h"

#include <string.h>

static const char *dtype_name(int32_t dtype) {
  switch (dtype) {
  case TFM_DTYPE_F32:
    return "f32";
  case TFM_DTYPE_I32:
    return "i32";
  case TFM_DTYPE_I64:
    return "i64";
  case TFM_DTYPE_I8:
    return "i8";
  case TFM_DTYPE_BF16:
    return "bf16";
  case TFM_DTYPE_F16:
    return "f16";
  }
  return "?";
}

/* `tensor` against `expected` ("input 0 of @forward"). */
static tfm_status_code check_tensor(const tfm_model_desc *desc,
                                    const tfm_tensor *tensor,
                                    const tfm_tensor_desc *expected,
                                    int packed, const char *what,
                                    int32_t index, const char *entry,
                                    tfm_status *status) {
  if (!tensor->data)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "%s %d of @%s: NULL data", what, index, entry);
  if (tensor->dtype != expected->dtype || tensor->rank != expected->rank)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "%s %d of @%s: expected a rank-%d %s tensor, got rank %d "
                    "%s",
                    what, index, entry, expected->rank,
                    dtype_name(expected->dtype), tensor->rank,
                    dtype_name(tensor->dtype));
  for (int32_t d = 0; d < expected->rank; ++d) {
    int64_t want = expected->shape[d], got = tensor->shape[d];
    if (want < 0 && got == 0)
      return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                      "%s %d of @%s: dimension %d is empty (an empty batch "
                      "or sequence)",
                      what, index, entry, d);
    if ((want >= 0 && got != want) || got < 0)
      return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                      "%s %d of @%s: dimension %d is %lld, expected %lld",
                      what, index, entry, d, (long long)got,
                      (long long)want);
  }
  int sequence = expected->role == TFM_ROLE_TOKEN_IDS ||
                 expected->role == TFM_ROLE_TOKEN_TYPE_IDS ||
                 expected->role == TFM_ROLE_GLOBAL_ATTENTION ||
                 expected->role == TFM_ROLE_DECODER_TOKEN_IDS;
  if (sequence && !packed && tensor->shape[0] > desc->max_context)
    return tfm_fail(status, TFM_ERROR_CONTEXT_OVERFLOW,
                    "%s %d of @%s: %lld tokens exceed the maximum context "
                    "of model '%s' (%lld)",
                    what, index, entry, (long long)tensor->shape[0],
                    desc->name, (long long)desc->max_context);
  /* A speech model's samples: enough for one frame (its feature encoder's
   * receptive field), and no more than its longest clip. */
  const tfm_waveform_input *waveform = desc->waveform;
  if (waveform && expected->role == TFM_ROLE_FEATURES && expected->rank == 1 &&
      expected->shape[0] < 0) {
    int64_t n = tensor->shape[0];
    double rate = (double)waveform->sampling_rate;
    if (n < waveform->min_samples)
      return tfm_fail(status, TFM_ERROR_AUDIO,
                      "%s %d of @%s: a clip of %lld samples (%.1f ms) is "
                      "shorter than model '%s' hears in one frame (%lld "
                      "samples, %.1f ms)",
                      what, index, entry, (long long)n, 1e3 * (double)n / rate,
                      desc->name, (long long)waveform->min_samples,
                      1e3 * (double)waveform->min_samples / rate);
    if (n > desc->max_context)
      return tfm_fail(status, TFM_ERROR_CONTEXT_OVERFLOW,
                      "%s %d of @%s: a clip of %lld samples (%.1f s) is "
                      "longer than model '%s' takes (%.1f s): split it",
                      what, index, entry, (long long)n, (double)n / rate,
                      desc->name, (double)desc->max_context / rate);
  }
  if (expected->bound > 0 && expected->dtype == TFM_DTYPE_I32) {
    /* Values index a table: one out of range would read past it. */
    int64_t count = 1;
    for (int32_t d = 0; d < tensor->rank; ++d)
      count *= tensor->shape[d];
    const int32_t *values = tensor->data;
    for (int64_t i = 0; i < count; ++i)
      if (values[i] < 0 || values[i] >= expected->bound)
        return tfm_fail(status, TFM_ERROR_OUT_OF_RANGE,
                        "%s %d of @%s: %s %d at position %lld is out of "
                        "range [0, %lld)",
                        what, index, entry,
                        expected->role == TFM_ROLE_TOKEN_TYPE_IDS
                            ? "token type"
                            : "token id",
                        values[i], (long long)i, (long long)expected->bound);
  }
  return TFM_OK;
}

/* The index of the entry point's input of role `role` (the last one, if
 * several), or -1. */
static int32_t input_of_role(const tfm_entry_point *entry, int32_t role) {
  int32_t index = -1;
  for (int32_t i = 0; i < entry->num_inputs; ++i)
    if (entry->inputs[i].role == role)
      index = i;
  return index;
}

/* How many rows the call runs: its token ids (or rows in their place);
 * -1: no such input. */
static int64_t token_count(const tfm_entry_point *entry,
                           const tfm_tensor *inputs) {
  int32_t ids = input_of_role(entry, TFM_ROLE_TOKEN_IDS);
  /* A vision-language model's @prefill_batch_embeddings: rows of an
   * image's tokens in place of ids. */
  if (ids < 0)
    ids = input_of_role(entry, TFM_ROLE_FEATURES);
  return ids < 0 ? -1 : inputs[ids].shape[0];
}

/* The lengths (input `index`) of the sequences packed in the token ids:
 * each in [1, max_context], summing to the token count, which is what the
 * generated code slices the rows by. */
static tfm_status_code check_lengths(const tfm_model_desc *desc,
                                     const tfm_tensor *inputs,
                                     const tfm_entry_point *entry,
                                     int32_t index, tfm_status *status) {
  int64_t tokens = token_count(entry, inputs);
  const int32_t *lengths = inputs[index].data;
  int64_t sum = 0;
  for (int64_t b = 0; b < inputs[index].shape[0]; ++b) {
    if (lengths[b] < 1 || lengths[b] > desc->max_context)
      return tfm_fail(status,
                      lengths[b] < 1 ? TFM_ERROR_INVALID_ARGUMENT
                                     : TFM_ERROR_CONTEXT_OVERFLOW,
                      "input %d of @%s: sequence %lld has %d tokens, "
                      "expected 1 to %lld (the maximum context of model "
                      "'%s')",
                      index, entry->name, (long long)b, lengths[b],
                      (long long)desc->max_context, desc->name);
    sum += lengths[b];
  }
  if (sum != tokens)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "input %d of @%s: sequence lengths sum to %lld, but "
                    "there are %lld tokens",
                    index, entry->name, (long long)sum, (long long)tokens);
  return TFM_OK;
}

/* The rows of @decode_batch (one token of each of several sequences) or
 * the chunks of @prefill_batch (input `chunk_lengths`: that many tokens of
 * one sequence each, end to end): each chunk's positions consecutive and
 * inside the batched cache's capacity, its sequence one of the cache's and
 * no two chunks on one sequence (they would append to the same place),
 * chunk lengths at least 1 summing to the token count, a position per
 * token and a sequence per chunk. */
static tfm_status_code check_batch_rows(const tfm_tensor *inputs,
                                        tfm_tensor *const *caches,
                                        const tfm_model_desc *desc,
                                        const tfm_entry_point *entry,
                                        int32_t positions, int32_t sequences,
                                        int32_t chunk_lengths,
                                        tfm_status *status) {
  /* The paged cache, and the windowed layers' rings where there are. */
  const tfm_tensor *cache = NULL, *rings = NULL;
  for (int32_t i = 0; i < entry->num_caches; ++i) {
    const tfm_cache_desc *d = &desc->caches[entry->caches[i]];
    if (d->rank == 6 && d->kind == TFM_CACHE_SELF_ATTENTION_RINGS)
      rings = caches[i];
    else if (d->rank == 6)
      cache = caches[i];
  }
  int64_t rows = token_count(entry, inputs);
  if (positions < 0 || sequences < 0 || !cache)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "@%s: batched rows need positions, cache sequences and "
                    "a batched cache",
                    entry->name);
  if (rings && rings->shape[0] != cache->shape[0])
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "@%s: the rings hold %lld sequences, the cache %lld: "
                    "expected as many",
                    entry->name, (long long)rings->shape[0],
                    (long long)cache->shape[0]);
  const int32_t *length =
      chunk_lengths >= 0 ? inputs[chunk_lengths].data : NULL;
  int64_t chunks = length ? inputs[chunk_lengths].shape[0] : rows;
  const char *unit = length ? "chunk" : "row";
  if (inputs[positions].shape[0] != rows ||
      inputs[sequences].shape[0] != chunks)
    return length
               ? tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                          "@%s: %lld tokens, %lld positions, %lld cache "
                          "sequences and %lld chunk lengths: expected a "
                          "position per token and a sequence per chunk",
                          entry->name, (long long)rows,
                          (long long)inputs[positions].shape[0],
                          (long long)inputs[sequences].shape[0],
                          (long long)chunks)
               : tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                          "@%s: %lld tokens, %lld positions and %lld cache "
                          "sequences: expected one of each per row",
                          entry->name, (long long)rows,
                          (long long)inputs[positions].shape[0],
                          (long long)inputs[sequences].shape[0]);
  /* [sequences, layers, 2, capacity, kv_heads, head_dim] */
  int64_t count = cache->shape[0], capacity = cache->shape[3];
  const int32_t *position = inputs[positions].data;
  const int32_t *sequence = inputs[sequences].data;
  int64_t first = 0; /* the chunk's first row */
  for (int64_t c = 0; c < chunks; ++c) {
    int64_t n = length ? length[c] : 1;
    if (n < 1 || n > rows - first)
      return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                      "@%s: chunk %lld has %lld tokens, expected 1 to the "
                      "%lld not in earlier chunks",
                      entry->name, (long long)c, (long long)n,
                      (long long)(rows - first));
    for (int64_t r = first; r < first + n; ++r) {
      if (position[r] < 0 || position[r] >= capacity)
        return tfm_fail(status,
                        position[r] < 0 ? TFM_ERROR_OUT_OF_RANGE
                                        : TFM_ERROR_CONTEXT_OVERFLOW,
                        "@%s: row %lld is at position %d, outside the "
                        "cache's %lld positions",
                        entry->name, (long long)r, position[r],
                        (long long)capacity);
      if (r > first && position[r] != position[r - 1] + 1)
        return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                        "@%s: row %lld is at position %d after position %d: "
                        "a chunk's positions are consecutive",
                        entry->name, (long long)r, position[r],
                        position[r - 1]);
    }
    if (sequence[c] < 0 || sequence[c] >= count)
      return tfm_fail(status, TFM_ERROR_OUT_OF_RANGE,
                      "@%s: %s %lld reads cache sequence %d of %lld",
                      entry->name, unit, (long long)c, sequence[c],
                      (long long)count);
    for (int64_t earlier = 0; earlier < c; ++earlier)
      if (sequence[earlier] == sequence[c])
        return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                        "@%s: %ss %lld and %lld both use cache sequence %d",
                        entry->name, unit, (long long)earlier, (long long)c,
                        sequence[c]);
    first += n;
  }
  if (first != rows)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "@%s: chunk lengths sum to %lld, but there are %lld "
                    "tokens",
                    entry->name, (long long)first, (long long)rows);
  return TFM_OK;
}

/* tfm_model_call's checks; *found: the entry point. `state_caches`: the
 * caches are the runtime's, from tfm_model_state_alloc (GPU memory for a
 * GPU model), not the caller's. */
static tfm_status_code
check_call(tfm_model *model, const char *name, const tfm_tensor *inputs,
           int32_t num_inputs, tfm_tensor *const *caches, tfm_tensor *outputs,
           int32_t num_outputs, int state_caches, const tfm_entry_point **found,
           tfm_status *status) {
  if (!model || !name || (num_inputs && !inputs) ||
      (num_outputs && !outputs))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_model_call: NULL %s",
                    !model ? "model" : !name ? "name"
                                     : (num_inputs && !inputs) ? "inputs"
                                                               : "outputs");
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  const tfm_entry_point *entry = tfm_model_entry_point(model, name);
  if (!entry)
    return tfm_fail(status, TFM_ERROR_NOT_FOUND,
                    "model '%s' has no entry point @%s", desc->name, name);
  if (num_inputs != entry->num_inputs || num_outputs != entry->num_outputs)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "@%s takes %d inputs and returns %d outputs, got %d and "
                    "%d",
                    name, entry->num_inputs, entry->num_outputs, num_inputs,
                    num_outputs);
  /* Packed sequences and chunks: the limits apply to each sequence
   * (check_lengths) or chunk (check_batch_rows). */
  int32_t packed = input_of_role(entry, TFM_ROLE_SEQUENCE_LENGTHS);
  int32_t chunk_lengths = input_of_role(entry, TFM_ROLE_CHUNK_LENGTHS);
  for (int32_t i = 0; i < num_inputs; ++i) {
    tfm_status_code code = check_tensor(
        desc, &inputs[i], &entry->inputs[i],
        packed >= 0 || chunk_lengths >= 0, "input", i, name, status);
    if (code != TFM_OK)
      return code;
  }
  if (packed >= 0) {
    tfm_status_code code =
        check_lengths(desc, inputs, entry, packed, status);
    if (code != TFM_OK)
      return code;
  }
  /* Token ids, token types and a global attention mask describe the same
   * positions: the generated code reads them row by row, so their lengths
   * must agree. */
  int32_t first_sequence = -1;
  for (int32_t i = 0; i < num_inputs; ++i) {
    int32_t role = entry->inputs[i].role;
    if (role != TFM_ROLE_TOKEN_IDS && role != TFM_ROLE_TOKEN_TYPE_IDS &&
        role != TFM_ROLE_GLOBAL_ATTENTION)
      continue;
    if (first_sequence < 0) {
      first_sequence = i;
    } else if (inputs[i].shape[0] != inputs[first_sequence].shape[0]) {
      return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                      "input %d of @%s has %lld positions, input %d has "
                      "%lld: token ids, token types and global attention "
                      "go together",
                      i, name, (long long)inputs[i].shape[0], first_sequence,
                      (long long)inputs[first_sequence].shape[0]);
    }
  }
  /* The caller's caches are host memory; a GPU model's live on the GPU,
   * in its sessions. */
  if (entry->num_caches > 0 && tfm_model_on_gpu(model) && !state_caches)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "@%s of model '%s' keeps a cache, which lives on the GPU "
                    "for a --target=cuda model: call it through a session",
                    name, desc->name);
  for (int32_t i = 0; i < entry->num_caches; ++i) {
    const tfm_cache_desc *cache = &desc->caches[entry->caches[i]];
    tfm_tensor_desc expected = {-1 /* no role */, cache->dtype, cache->rank, {0}};
    memcpy(expected.shape, cache->shape, sizeof expected.shape);
    if (!caches || !caches[i])
      return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                      "cache %d of @%s: NULL tensor", i, name);
    tfm_status_code code = check_tensor(desc, caches[i], &expected, 0,
                                        "cache", i, name, status);
    if (code != TFM_OK)
      return code;
  }
  int32_t positions = input_of_role(entry, TFM_ROLE_POSITIONS);
  int32_t sequences = input_of_role(entry, TFM_ROLE_CACHE_SEQUENCES);
  if (positions >= 0 || sequences >= 0) {
    tfm_status_code code =
        check_batch_rows(inputs, caches, desc, entry, positions, sequences,
                         chunk_lengths, status);
    if (code != TFM_OK)
      return code;
  }
  memset(outputs, 0, (size_t)num_outputs * sizeof *outputs);
  *found = entry;
  return TFM_OK;
}

static tfm_status_code call_entry(tfm_model *model, const char *name,
                                  const tfm_tensor *inputs, int32_t num_inputs,
                                  tfm_tensor *const *caches,
                                  tfm_tensor *outputs, int32_t num_outputs,
                                  int state_caches, tfm_status *status) {
  const tfm_entry_point *entry = NULL;
  tfm_status_code code =
      check_call(model, name, inputs, num_inputs, caches, outputs, num_outputs,
                 state_caches, &entry, status);
  if (code != TFM_OK)
    return code;
  return tfm_model_dispatch(model, entry, inputs, caches, outputs, status);
}

/* This rank's part of a checked call (the other ranks make theirs when
 * rank 0 has told them). */
static tfm_status_code run_entry(tfm_model *model, const tfm_entry_point *entry,
                                 const tfm_tensor *inputs,
                                 tfm_tensor *const *caches, tfm_tensor *outputs,
                                 tfm_status *status) {
  double begun = tfm_model_code_begin(model);
  int32_t packed = input_of_role(entry, TFM_ROLE_SEQUENCE_LENGTHS);
  if (packed >= 0) { /* in groups of whole sequences (packed_call.c) */
    tfm_status_code code =
        tfm_call_packed(model, entry, inputs, packed, outputs, status);
    tfm_model_code_end(model, begun);
    return code;
  }
  tfm_memref1d weights = tfm_model_weights_descriptor(model);
  int32_t code = entry->call(&weights, inputs, caches, outputs);
  tfm_model_code_end(model, begun);
  tfm_status_code device = tfm_model_check_device(model, entry->name, status);
  if (device != TFM_OK) {
    for (int32_t i = 0; i < entry->num_outputs; ++i)
      tfm_tensor_release(&outputs[i]);
    return device;
  }
  if (code != TFM_OK) {
    /* The other ranks of a split model may wait in the call's
     * all-reduces: end them all rather than leave them hanging. */
    if (tfm_model_leads(model))
      tfm_ranks_abort("the model's code ran out of memory");
    return tfm_fail(status, (tfm_status_code)code,
                    "@%s of model '%s' ran out of memory", entry->name,
                    tfm_model_get_desc(model)->name);
  }
  return tfm_ok(status);
}

tfm_status_code tfm_model_dispatch(tfm_model *model,
                                   const tfm_entry_point *entry,
                                   const tfm_tensor *inputs,
                                   tfm_tensor *const *caches,
                                   tfm_tensor *outputs, tfm_status *status) {
  /* The other ranks of a split model make the same call. */
  if (tfm_model_leads(model))
    tfm_ranks_lead_call(model, entry, 1, inputs, caches);
  return run_entry(model, entry, inputs, caches, outputs, status);
}

tfm_status_code tfm_model_call_parts(tfm_model *model, const char *name,
                                     int32_t parts, const tfm_tensor *inputs,
                                     int32_t num_inputs,
                                     tfm_tensor *const *caches,
                                     tfm_tensor *outputs, int32_t num_outputs,
                                     tfm_status *status) {
  const tfm_entry_point *entry = NULL;
  for (int32_t p = 0; p < parts; ++p) {
    tfm_status_code code = check_call(
        model, name, inputs + (size_t)p * num_inputs, num_inputs, caches,
        outputs + (size_t)p * num_outputs, num_outputs, 0, &entry, status);
    if (code != TFM_OK)
      return code;
  }
  /* Every part's call reaches the other ranks, in one message, before
   * this rank runs its own part of the first: stage 0 (rank 1) goes on to
   * the second part as soon as it has sent the first's rows on. (With a
   * message for each part, rank 0 could be stuck sending the second while
   * rank 1 waits for it to take the first's rows.) */
  if (tfm_model_leads(model))
    tfm_ranks_lead_call(model, entry, parts, inputs, caches);
  for (int32_t p = 0; p < parts; ++p) {
    tfm_status_code code =
        run_entry(model, entry, inputs + (size_t)p * num_inputs, caches,
                  outputs + (size_t)p * num_outputs, status);
    if (code != TFM_OK) {
      for (int32_t q = 0; q < p * num_outputs; ++q)
        tfm_tensor_release(&outputs[q]);
      return code;
    }
  }
  return tfm_ok(status);
}

void tfm_tensor_release(tfm_tensor *tensor) {
  if (!tensor || !tensor->owner)
    return;
  tfm_buffer_release(tensor->owner);
  tensor->owner = NULL;
  tensor->data = NULL;
}

tfm_status_code tfm_model_call(tfm_model *model, const char *name,
                               const tfm_tensor *inputs, int32_t num_inputs,
                               tfm_tensor *const *caches, tfm_tensor *outputs,
                               int32_t num_outputs, tfm_status *status) {
  return call_entry(model, name, inputs, num_inputs, caches, outputs,
                    num_outputs, /*state_caches=*/0, status);
}

tfm_status_code tfm_model_call_with_state(tfm_model *model, const char *name,
                                          const tfm_tensor *inputs,
                                          int32_t num_inputs,
                                          tfm_tensor *const *caches,
                                          tfm_tensor *outputs,
                                          int32_t num_outputs,
                                          tfm_status *status) {
  return call_entry(model, name, inputs, num_inputs, caches, outputs,
                    num_outputs, /*state_caches=*/1, status);
}
