/*===- seq2seq.c - generation with an encoder-decoder --------------------===//
 *
 * tfm_seq2seq_generate: an encoder-decoder compiled with tfm-kv-cache has
 * @encode(source, cross cache) -> (encoder output, cross cache), which
 * fills every decoder layer's cross-attention keys and values once, and
 * @decode(token, position, slot, self cache, cross cache, encoded length)
 * -> (logits, self cache). The source is encoded once; the decoder then
 * starts from the model's decoder start token (bos_token in its
 * description) and runs one token at a time through tfm_model_call, its
 * own keys and values appended to the self-attention cache. The caches
 * are the model's state (GPU memory for a --target=cuda model).
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/model_internal.h"
#include "runtime/core/status.h"
#include "runtime/generate/seq2seq_internal.h"
#include "tfm/tfm_runtime.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A zeroed tensor of `rank` dimensions `shape` for a cache of `model`
 * (in GPU memory for a GPU model). */
static int allocate_cache(const tfm_model *model, const tfm_cache_desc *desc,
                          int32_t rank, const int64_t *shape,
                          tfm_tensor *tensor) {
  size_t count = 1;
  memset(tensor, 0, sizeof *tensor);
  tensor->dtype = desc->dtype;
  tensor->rank = rank;
  for (int32_t d = 0; d < rank; ++d) {
    tensor->shape[d] = shape[d];
    count *= (size_t)shape[d];
  }
  tensor->data =
      tfm_model_state_alloc(model, count * (size_t)tfm_dtype_bytes(desc->dtype));
  return tensor->data != NULL;
}

/* The beams' self-attention caches live in one buffer of `beams` slots,
 * each [layers, 2, capacity, kv_heads, head_dim]; a beam's slot changes
 * as beams fork, so that a continuation can take its parent's cache
 * without copying. @decode sees one slot; @decode_batch (when the model
 * has it) the whole buffer, and each row's slot as its cache sequence. */
struct tfm_seq2seq_state {
  tfm_model *model;
  const tfm_entry_point *decode, *decode_batch;
  int beams;
  int64_t encoded;    /* source positions in the cross cache */
  tfm_tensor cross;   /* read by every beam */
  tfm_tensor slots;   /* [beams, layers, 2, capacity, kv_heads, head_dim] */
  int64_t slot_size;  /* bytes per slot */
  int *slot;          /* per beam, its slot */
  int *parent;        /* per next beam, the beam it continues (fork) */
  int *next_slot;     /* scratch of commit: per next beam, its slot */
  int *claimed;       /* scratch of commit: per slot, taken */
  int next_beams;     /* forks recorded this step */
  int64_t used;       /* positions the forked beams have written */
  int64_t first;      /* the decoder start token's: after previous text */
  int32_t *rows;      /* @decode_batch's positions, then its sequences */
  float *logits;      /* [beams, vocab] */
};

/* The caches entry point `entry` takes, in its order: the cross cache,
 * and slot `slot` alone (@decode) or every slot (@decode_batch). */
static void decode_caches(tfm_seq2seq_state *s, const tfm_entry_point *entry,
                          int slot, tfm_tensor *own, tfm_tensor **out) {
  const tfm_model_desc *desc = tfm_model_get_desc(s->model);
  *own = (tfm_tensor){(char *)s->slots.data + (size_t)slot * s->slot_size,
                      s->slots.dtype, s->slots.rank - 1, {0}, NULL};
  memcpy(own->shape, s->slots.shape + 1,
         (size_t)own->rank * sizeof *own->shape);
  for (int32_t i = 0; i < entry->num_caches; ++i) {
    const tfm_cache_desc *cache = &desc->caches[entry->caches[i]];
    out[i] = cache->kind == TFM_CACHE_CROSS_ATTENTION ? &s->cross
             : cache->rank == 6                       ? &s->slots
                                                      : own;
  }
}

void tfm_seq2seq_end(tfm_seq2seq_state *s) {
  if (!s)
    return;
  tfm_model_state_free(s->model, s->cross.data);
  tfm_model_state_free(s->model, s->slots.data);
  free(s->slot);
  free(s->parent);
  free(s->next_slot);
  free(s->claimed);
  free(s->rows);
  free(s->logits);
  free(s);
}

tfm_status_code tfm_seq2seq_align(tfm_seq2seq_state *s, const int32_t *tokens,
                                  int64_t n, tfm_tensor *weights,
                                  tfm_status *status) {
  const tfm_entry_point *align = tfm_model_entry_point(s->model, "align");
  if (!align || align->num_inputs != 2 || align->num_caches != 1)
    return tfm_fail(status, TFM_ERROR_NOT_FOUND,
                    "model '%s' has no @align: word timestamps need the "
                    "alignment_heads of its generation_config.json when it "
                    "is compiled",
                    tfm_model_get_desc(s->model)->name);
  tfm_tensor inputs[2];
  for (int32_t i = 0; i < 2; ++i)
    inputs[i] = align->inputs[i].role == TFM_ROLE_ENCODED_LENGTH
                    ? (tfm_tensor){&s->encoded, TFM_DTYPE_I64, 0, {0}, NULL}
                    : tfm_seq2seq_ids(tokens, n);
  tfm_tensor *cross = &s->cross;
  return tfm_model_call_with_state(s->model, "align", inputs, 2, &cross,
                                   weights, 1, status);
}

tfm_tensor tfm_seq2seq_ids(const int32_t *source, int64_t n) {
  return (tfm_tensor){(void *)(uintptr_t)source, TFM_DTYPE_I32, 1, {n}, NULL};
}

void tfm_seq2seq_find_caches(const tfm_model_desc *desc,
                             const tfm_cache_desc **self,
                             const tfm_cache_desc **cross) {
  *self = *cross = NULL;
  for (int32_t i = 0; i < desc->num_caches; ++i) {
    if (desc->caches[i].kind == TFM_CACHE_CROSS_ATTENTION)
      *cross = &desc->caches[i];
    else if (desc->caches[i].rank == 5)
      *self = &desc->caches[i];
  }
}

tfm_status_code tfm_seq2seq_begin(tfm_model *model, const tfm_tensor *source,
                                  int beams, const tfm_generation_rules *rules,
                                  int64_t steps, tfm_seq2seq_state **out,
                                  tfm_status *status) {
  *out = NULL;
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  const tfm_entry_point *encode = tfm_model_entry_point(model, "encode");
  const tfm_entry_point *decode = tfm_model_entry_point(model, "decode");
  const tfm_cache_desc *self_desc, *cross_desc;
  tfm_seq2seq_find_caches(desc, &self_desc, &cross_desc);
  if (!encode || !decode || !self_desc || !cross_desc ||
      encode->num_caches != 1 || decode->num_caches != 2 ||
      decode->num_inputs > 8)
    return tfm_fail(status, TFM_ERROR_NOT_FOUND,
                    "model '%s' is not an encoder-decoder compiled with its "
                    "caches (@encode, @decode)",
                    desc->name);
  if (desc->bos_token < 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "model '%s' has no decoder start token", desc->name);
  int64_t room = self_desc->shape[2]; /* [layers, 2, capacity, ...] */
  /* Previous text (Whisper's) takes the first positions. */
  int64_t before = rules ? rules->previous_count : 0;
  steps += before;
  if (steps < 0 || steps > room)
    return tfm_fail(status, TFM_ERROR_CONTEXT_OVERFLOW,
                    "%lld new tokens do not fit the decoder's %lld positions",
                    (long long)steps, (long long)room);
  tfm_seq2seq_state *s = calloc(1, sizeof *s);
  if (!s)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  s->model = model;
  s->decode = decode;
  /* One step of several beams reads the weights once. */
  const tfm_entry_point *batch = tfm_model_entry_point(model, "decode_batch");
  if (beams > 1 && batch && batch->num_caches == 2 && batch->num_inputs <= 8)
    s->decode_batch = batch;
  s->beams = beams;
  /* Text: the source ids; speech: the encoder's fixed frames. */
  s->encoded = source->dtype == TFM_DTYPE_I32 ? source->shape[0]
                                             : cross_desc->shape[2];
  int64_t shape[6] = {beams};
  memcpy(shape + 1, self_desc->shape, 5 * sizeof *shape);
  s->slot_size = tfm_dtype_bytes(self_desc->dtype);
  for (int d = 1; d < 6; ++d)
    s->slot_size *= shape[d];
  s->slot = malloc((size_t)beams * sizeof *s->slot);
  s->parent = malloc((size_t)beams * sizeof *s->parent);
  s->next_slot = malloc((size_t)beams * sizeof *s->next_slot);
  s->claimed = malloc((size_t)beams * sizeof *s->claimed);
  s->rows = malloc((size_t)(2 * beams) * sizeof *s->rows);
  s->logits =
      malloc((size_t)beams * (size_t)desc->vocab_size * sizeof *s->logits);
  int ok = s->slot && s->parent && s->next_slot && s->claimed && s->rows &&
           s->logits &&
           allocate_cache(model, cross_desc, cross_desc->rank,
                          cross_desc->shape, &s->cross) &&
           allocate_cache(model, self_desc, 6, shape, &s->slots);
  if (!ok) {
    tfm_seq2seq_end(s);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  for (int b = 0; b < beams; ++b)
    s->slot[b] = b;
  /* The source, once: its cross-attention keys and values. tfm_model_call
   * only reads its inputs. */
  tfm_tensor *cross = &s->cross, output;
  tfm_status_code code =
      tfm_model_call_with_state(model, "encode", source, 1, &cross, &output, 1,
                                status);
  if (code != TFM_OK) {
    tfm_seq2seq_end(s);
    return code;
  }
  tfm_tensor_release(&output);
  float *ignored;
  for (int64_t p = 0; p < before; ++p) {
    code = tfm_seq2seq_step(s, 1, &rules->previous[p], p, &ignored, status);
    if (code != TFM_OK) {
      tfm_seq2seq_end(s);
      return code;
    }
  }
  s->first = before;
  *out = s;
  return TFM_OK;
}

/* The inputs of `entry` for `count` rows of `tokens` at `position`: the
 * token ids, then by role the position (a scalar, or one per row), the
 * slot or the rows' cache sequences, the encoded length. */
static void decode_inputs(tfm_seq2seq_state *s, const tfm_entry_point *entry,
                          const int32_t *tokens, int count, int64_t *position,
                          tfm_tensor *inputs) {
  for (int32_t i = 0; i < entry->num_inputs; ++i) {
    int32_t role = entry->inputs[i].role;
    if (role == TFM_ROLE_TOKEN_IDS)
      inputs[i] = (tfm_tensor){(void *)(uintptr_t)tokens, TFM_DTYPE_I32, 1,
                               {count}, NULL};
    else if (role == TFM_ROLE_POSITIONS)
      inputs[i] = (tfm_tensor){s->rows, TFM_DTYPE_I32, 1, {count}, NULL};
    else if (role == TFM_ROLE_CACHE_SEQUENCES)
      inputs[i] = (tfm_tensor){s->rows + count, TFM_DTYPE_I32, 1, {count},
                               NULL};
    else
      inputs[i] = (tfm_tensor){role == TFM_ROLE_ENCODED_LENGTH ? &s->encoded
                                                               : position,
                               TFM_DTYPE_I64,
                               0,
                               {0},
                               NULL};
  }
}

/* One call of `entry` on `count` rows of `tokens` (@decode: one, in slot
 * `slot`), its logits into `logits`. */
static tfm_status_code call_decode(tfm_seq2seq_state *s,
                                   const tfm_entry_point *entry,
                                   const int32_t *tokens, int count, int slot,
                                   int64_t position, float *logits,
                                   tfm_status *status) {
  tfm_tensor inputs[8], output, own, *caches[2];
  decode_inputs(s, entry, tokens, count, &position, inputs);
  decode_caches(s, entry, slot, &own, caches);
  tfm_status_code code =
      tfm_model_call_with_state(s->model, entry->name, inputs,
                                entry->num_inputs, caches, &output, 1, status);
  if (code != TFM_OK)
    return code;
  int64_t vocab = tfm_model_get_desc(s->model)->vocab_size;
  memcpy(logits, output.data, (size_t)(count * vocab) * sizeof *logits);
  tfm_tensor_release(&output);
  return TFM_OK;
}

tfm_status_code tfm_seq2seq_step(tfm_seq2seq_state *s, int count,
                                 const int32_t *tokens, int64_t position,
                                 float **logits, tfm_status *status) {
  *logits = s->logits;
  position += s->first;
  /* Several beams in one call when the model has @decode_batch: row b at
   * `position` in beam b's slot. */
  if (s->decode_batch && count > 1) {
    for (int b = 0; b < count; ++b) {
      s->rows[b] = (int32_t)position;
      s->rows[count + b] = s->slot[b];
    }
    return call_decode(s, s->decode_batch, tokens, count, 0, position,
                       s->logits, status);
  }
  int64_t vocab = tfm_model_get_desc(s->model)->vocab_size;
  for (int b = 0; b < count; ++b) {
    tfm_status_code code =
        call_decode(s, s->decode, tokens + b, 1, s->slot[b], position,
                    s->logits + (size_t)b * (size_t)vocab, status);
    if (code != TFM_OK)
      return code;
  }
  return TFM_OK;
}

tfm_status_code tfm_seq2seq_fork(tfm_seq2seq_state *s, int from, int to,
                                 int64_t used, tfm_status *status) {
  int64_t capacity = s->slots.shape[3];
  used += s->first;
  if (used > capacity)
    return tfm_fail(status, TFM_ERROR_CONTEXT_OVERFLOW,
                    "a beam of %lld positions in a cache of %lld",
                    (long long)used, (long long)capacity);
  s->parent[to] = from;
  s->next_beams = to + 1 > s->next_beams ? to + 1 : s->next_beams;
  s->used = used;
  return TFM_OK;
}

/* Copies the first `used` positions of every layer's K and V planes of
 * slot `from` to slot `to`. */
static void copy_prefix(tfm_seq2seq_state *s, int from, int to) {
  /* [slots, layers, 2, capacity, kv_heads, head_dim] */
  const int64_t *shape = s->slots.shape;
  size_t row = (size_t)(shape[4] * shape[5] * tfm_dtype_bytes(s->slots.dtype));
  const char *source = (const char *)s->slots.data + from * s->slot_size;
  char *target = (char *)s->slots.data + to * s->slot_size;
  for (int64_t plane = 0; plane < shape[1] * 2; ++plane)
    tfm_model_state_move(s->model, target + (size_t)(plane * shape[3]) * row,
                         source + (size_t)(plane * shape[3]) * row,
                         (size_t)s->used * row);
}

void tfm_seq2seq_commit(tfm_seq2seq_state *s) {
  int n = s->next_beams;
  for (int b = 0; b < s->beams; ++b)
    s->claimed[b] = 0;
  /* A beam's first continuation takes its slot as it is. */
  for (int to = 0; to < n; ++to) {
    int slot = s->slot[s->parent[to]];
    s->next_slot[to] = s->claimed[slot] ? -1 : slot;
    s->claimed[slot] = 1;
  }
  /* Further ones get a slot no continuation holds (a dropped beam's) and
   * a copy of the positions written so far. */
  int free_slot = 0;
  for (int to = 0; to < n; ++to) {
    if (s->next_slot[to] >= 0)
      continue;
    while (s->claimed[free_slot])
      ++free_slot;
    s->claimed[free_slot] = 1;
    s->next_slot[to] = free_slot;
    copy_prefix(s, s->slot[s->parent[to]], free_slot);
  }
  /* The unclaimed slots go to beams past the live ones. */
  for (int to = n; to < s->beams; ++to) {
    while (s->claimed[free_slot])
      ++free_slot;
    s->claimed[free_slot] = 1;
    s->next_slot[to] = free_slot;
  }
  memcpy(s->slot, s->next_slot, (size_t)s->beams * sizeof *s->slot);
  s->next_beams = 0;
}

tfm_status_code tfm_seq2seq_generate(tfm_model *model, const int32_t *source,
                                     int64_t n,
                                     const tfm_generate_options *options,
                                     int32_t *out, int64_t capacity,
                                     int64_t *count, tfm_status *status) {
  return tfm_seq2seq_generate_with_rules(model, source, n, options, NULL, out,
                                         capacity, count, status);
}

tfm_status_code tfm_seq2seq_check_arguments(const char *function,
                                            const tfm_model *model,
                                            const tfm_tensor *source,
                                            const int32_t *out,
                                            int64_t capacity,
                                            const int64_t *count,
                                            tfm_status *status) {
  const char *missing = !model                   ? "model"
                        : !source || !source->data ? "source"
                        : !count                  ? "count"
                        : !out && capacity > 0    ? "out"
                                                  : NULL;
  if (missing)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT, "%s: NULL %s",
                    function, missing);
  if (capacity < 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "%s: negative capacity %lld", function,
                    (long long)capacity);
  return tfm_ok(status);
}

tfm_status_code tfm_seq2seq_generate_with_rules(
    tfm_model *model, const int32_t *source, int64_t n,
    const tfm_generate_options *options, const tfm_generation_rules *rules,
    int32_t *out, int64_t capacity, int64_t *count, tfm_status *status) {
  if (!source)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_seq2seq_generate: NULL source");
  tfm_tensor ids = tfm_seq2seq_ids(source, n);
  return tfm_seq2seq_generate_from(model, &ids, options, rules, out, capacity,
                                   count, status);
}

tfm_status_code tfm_seq2seq_generate_from(
    tfm_model *model, const tfm_tensor *source,
    const tfm_generate_options *options, const tfm_generation_rules *rules,
    int32_t *out, int64_t capacity, int64_t *count, tfm_status *status) {
  const char *function = "tfm_seq2seq_generate";
  tfm_status_code code = tfm_seq2seq_check_arguments(
      function, model, source, out, capacity, count, status);
  if (code == TFM_OK && !options)
    code = tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT, "%s: NULL options",
                    function);
  if (code == TFM_OK)
    code = tfm_check_forced_tokens(function, options, status);
  if (code == TFM_OK)
    code = tfm_generation_rules_check(function, rules, status);
  if (code != TFM_OK)
    return code;
  *count = 0;
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  /* A forced prompt (Whisper's language, task, no timestamps) comes before
   * the max_new_tokens. */
  int64_t steps =
      options->forced_tokens
          ? options->forced_count
          : options->max_new_tokens + (rules ? rules->prompt_count : 0);
  tfm_seq2seq_state *state = NULL;
  code = tfm_seq2seq_begin(model, source, 1, rules, steps, &state, status);
  if (code != TFM_OK)
    return code;
  tfm_sampler *sampler = NULL;
  int32_t *history = malloc((size_t)(steps + 1) * sizeof *history);
  if (!history) {
    code = tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  code = tfm_sampler_new(&options->sampler, desc->vocab_size, &sampler, status);
  /* The decoder, one token at a time from the start token. */
  int32_t token = (int32_t)desc->bos_token;
  for (int64_t position = 0; code == TFM_OK && position < steps; ++position) {
    float *logits;
    code = tfm_seq2seq_step(state, 1, &token, position, &logits, status);
    if (code != TFM_OK)
      break;
    if (options->on_logits)
      options->on_logits(options->user, logits, desc->vocab_size);
    history[position] = token;
    if (!options->forced_tokens)
      tfm_apply_generation_rules(rules, history, position + 1, steps,
                                 (int32_t)desc->eos_token, logits,
                                 desc->vocab_size);
    token = options->forced_tokens
                ? options->forced_tokens[position]
                : tfm_sampler_sample(sampler, logits, history, position + 1);
    if (*count < capacity)
      out[*count] = token;
    ++*count;
    if (options->on_token && options->on_token(options->user, token, "", 0))
      break;
    if (token == desc->eos_token && !options->ignore_eos &&
        !options->forced_tokens)
      break;
  }
done:
  free(history);
  tfm_sampler_free(sampler);
  tfm_seq2seq_end(state);
  return code;
}
