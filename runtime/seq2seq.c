/*===- seq2seq.c - generation with an encoder-decoder --------------------===//
 *
 * tfm_seq2seq_generate: an encoder-decoder compiled with tfm-kv-cache has
 * @encode(source, cross cache) -> (encoder output, cross cache), which
 * fills every decoder layer's cross-attention keys and values once, and
 * @decode(token, position, slot, self cache, cross cache, encoded length)
 * -> (logits, self cache). The source is encoded once; the decoder then
 * starts from the model's decoder start token (bos_token in its
 * description) and runs one token at a time through tfm_model_call, its
 * own keys and values appended to the self-attention cache.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/seq2seq_internal.h"
#include "runtime/status.h"
#include "runtime/tfm_runtime.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* A cache tensor of the model's description, zeroed. */
static int allocate_cache(const tfm_cache_desc *desc, tfm_tensor *tensor) {
  size_t count = 1;
  memset(tensor, 0, sizeof *tensor);
  tensor->dtype = desc->dtype;
  tensor->rank = desc->rank;
  for (int32_t d = 0; d < desc->rank; ++d) {
    tensor->shape[d] = desc->shape[d];
    count *= (size_t)desc->shape[d];
  }
  tensor->data = calloc(count, sizeof(float));
  return tensor->data != NULL;
}

struct tfm_seq2seq_state {
  tfm_model *model;
  const tfm_entry_point *decode;
  int beams;
  int64_t encoded;    /* source positions in the cross cache */
  tfm_tensor cross;   /* read by every beam */
  tfm_tensor *caches; /* 2 x beams: this step's, then the next step's */
  int current;        /* 0 or 1: which half is this step's */
  /* Per beam of this step, the next step's beam that took its cache whole
   * (-1: none yet), which later children copy from. */
  int *moved_to;
  float *logits;
};

/* The caches @decode takes for beam `beam`, in its order. */
static void decode_caches(tfm_seq2seq_state *s, int beam, tfm_tensor **out) {
  const tfm_model_desc *desc = tfm_model_get_desc(s->model);
  for (int32_t i = 0; i < s->decode->num_caches; ++i)
    out[i] =
        desc->caches[s->decode->caches[i]].kind == TFM_CACHE_CROSS_ATTENTION
            ? &s->cross
            : &s->caches[s->current * s->beams + beam];
}

void tfm_seq2seq_end(tfm_seq2seq_state *s) {
  if (!s)
    return;
  free(s->cross.data);
  if (s->caches)
    for (int i = 0; i < 2 * s->beams; ++i)
      free(s->caches[i].data);
  free(s->caches);
  free(s->moved_to);
  free(s->logits);
  free(s);
}

tfm_tensor tfm_seq2seq_ids(const int32_t *source, int64_t n) {
  return (tfm_tensor){(void *)(uintptr_t)source, TFM_DTYPE_I32, 1, {n}, NULL};
}

tfm_status_code tfm_seq2seq_begin(tfm_model *model, const tfm_tensor *source,
                                  int beams, int64_t steps,
                                  tfm_seq2seq_state **out, tfm_status *status) {
  *out = NULL;
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  const tfm_entry_point *encode = tfm_model_entry_point(model, "encode");
  const tfm_entry_point *decode = tfm_model_entry_point(model, "decode");
  const tfm_cache_desc *self_desc = NULL, *cross_desc = NULL;
  for (int32_t i = 0; i < desc->num_caches; ++i) {
    if (desc->caches[i].kind == TFM_CACHE_CROSS_ATTENTION)
      cross_desc = &desc->caches[i];
    else
      self_desc = &desc->caches[i];
  }
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
  if (steps < 0 || steps > room)
    return tfm_fail(status, TFM_ERROR_CONTEXT_OVERFLOW,
                    "%lld new tokens do not fit the decoder's %lld positions",
                    (long long)steps, (long long)room);
  tfm_seq2seq_state *s = calloc(1, sizeof *s);
  if (!s)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  s->model = model;
  s->decode = decode;
  s->beams = beams;
  /* Text: the source ids; speech: the encoder's fixed frames. */
  s->encoded = source->dtype == TFM_DTYPE_I32 ? source->shape[0]
                                             : cross_desc->shape[2];
  s->caches = calloc((size_t)(2 * beams), sizeof *s->caches);
  s->logits = malloc((size_t)desc->vocab_size * sizeof *s->logits);
  s->moved_to = malloc((size_t)beams * sizeof *s->moved_to);
  for (int i = 0; s->moved_to && i < beams; ++i)
    s->moved_to[i] = -1;
  int ok = s->caches && s->logits && s->moved_to &&
           allocate_cache(cross_desc, &s->cross);
  for (int i = 0; ok && i < 2 * beams; ++i)
    ok = allocate_cache(self_desc, &s->caches[i]);
  if (!ok) {
    tfm_seq2seq_end(s);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  /* The source, once: its cross-attention keys and values. tfm_model_call
   * only reads its inputs. */
  tfm_tensor *cross = &s->cross, output;
  tfm_status_code code =
      tfm_model_call(model, "encode", source, 1, &cross, &output, 1, status);
  if (code != TFM_OK) {
    tfm_seq2seq_end(s);
    return code;
  }
  tfm_tensor_release(&output);
  *out = s;
  return TFM_OK;
}

tfm_status_code tfm_seq2seq_step(tfm_seq2seq_state *s, int beam, int32_t token,
                                 int64_t position, float **logits,
                                 tfm_status *status) {
  tfm_tensor inputs[8], output, *caches[2];
  for (int32_t i = 0; i < s->decode->num_inputs; ++i) {
    int32_t role = s->decode->inputs[i].role;
    if (role == TFM_ROLE_TOKEN_IDS)
      inputs[i] = (tfm_tensor){&token, TFM_DTYPE_I32, 1, {1}, NULL};
    else
      inputs[i] = (tfm_tensor){role == TFM_ROLE_ENCODED_LENGTH ? &s->encoded
                                                               : &position,
                               TFM_DTYPE_I64,
                               0,
                               {0},
                               NULL};
  }
  decode_caches(s, beam, caches);
  tfm_status_code code =
      tfm_model_call(s->model, "decode", inputs, s->decode->num_inputs, caches,
                     &output, 1, status);
  if (code != TFM_OK)
    return code;
  int64_t vocab = tfm_model_get_desc(s->model)->vocab_size;
  memcpy(s->logits, output.data, (size_t)vocab * sizeof *s->logits);
  tfm_tensor_release(&output);
  *logits = s->logits;
  return TFM_OK;
}

tfm_status_code tfm_seq2seq_fork(tfm_seq2seq_state *s, int from, int to,
                                 int64_t used, tfm_status *status) {
  tfm_tensor *current = &s->caches[s->current * s->beams];
  tfm_tensor *next = &s->caches[(1 - s->current) * s->beams];
  /* [layers, 2, capacity, heads, dim]: every layer's K and V planes. */
  int64_t capacity = current[from].shape[2];
  if (used > capacity)
    return tfm_fail(status, TFM_ERROR_CONTEXT_OVERFLOW,
                    "a beam of %lld positions in a cache of %lld",
                    (long long)used, (long long)capacity);
  if (s->moved_to[from] < 0) {
    /* The first continuation of a beam takes its cache as it is: the
     * buffers trade places, nothing is copied. */
    tfm_tensor taken = next[to];
    next[to] = current[from];
    current[from] = taken;
    s->moved_to[from] = to;
    return TFM_OK;
  }
  /* Further continuations copy the positions written so far from it. */
  const tfm_tensor *source = &next[s->moved_to[from]];
  tfm_tensor *target = &next[to];
  size_t row = (size_t)(source->shape[3] * source->shape[4]) * sizeof(float);
  for (int64_t plane = 0; plane < source->shape[0] * 2; ++plane)
    memcpy((char *)target->data + (size_t)(plane * capacity) * row,
           (const char *)source->data + (size_t)(plane * capacity) * row,
           (size_t)used * row);
  return TFM_OK;
}

void tfm_seq2seq_commit(tfm_seq2seq_state *s) {
  s->current = 1 - s->current;
  for (int i = 0; i < s->beams; ++i)
    s->moved_to[i] = -1;
}

tfm_status_code tfm_seq2seq_generate(tfm_model *model, const int32_t *source,
                                     int64_t n,
                                     const tfm_generate_options *options,
                                     int32_t *out, int64_t capacity,
                                     int64_t *count, tfm_status *status) {
  return tfm_seq2seq_generate_with_rules(model, source, n, options, NULL, out,
                                         capacity, count, status);
}

tfm_status_code tfm_seq2seq_generate_with_rules(
    tfm_model *model, const int32_t *source, int64_t n,
    const tfm_generate_options *options, const tfm_generation_rules *rules,
    int32_t *out, int64_t capacity, int64_t *count, tfm_status *status) {
  if (!source)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_seq2seq_generate: NULL argument");
  tfm_tensor ids = tfm_seq2seq_ids(source, n);
  return tfm_seq2seq_generate_from(model, &ids, options, rules, out, capacity,
                                   count, status);
}

tfm_status_code tfm_seq2seq_generate_from(
    tfm_model *model, const tfm_tensor *source,
    const tfm_generate_options *options, const tfm_generation_rules *rules,
    int32_t *out, int64_t capacity, int64_t *count, tfm_status *status) {
  if (!model || !source || !options || !count || (!out && capacity > 0))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_seq2seq_generate: NULL argument");
  *count = 0;
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  /* A forced prompt (Whisper's language, task, no timestamps) comes before
   * the max_new_tokens. */
  int64_t steps = options->forced_tokens
                      ? options->forced_count
                      : options->max_new_tokens +
                            (rules ? rules->prompt_count : 0);
  tfm_seq2seq_state *state = NULL;
  tfm_status_code code =
      tfm_seq2seq_begin(model, source, 1, steps, &state, status);
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
    code = tfm_seq2seq_step(state, 0, token, position, &logits, status);
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
