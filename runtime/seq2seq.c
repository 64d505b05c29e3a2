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

/* The caches an entry point takes, in its order: the self-attention cache
 * and the cross-attention cache by kind. */
static void order_caches(const tfm_model_desc *desc,
                         const tfm_entry_point *entry, tfm_tensor *self,
                         tfm_tensor *cross, tfm_tensor **out) {
  for (int32_t i = 0; i < entry->num_caches; ++i)
    out[i] = desc->caches[entry->caches[i]].kind == TFM_CACHE_CROSS_ATTENTION
                 ? cross
                 : self;
}

/* Finds the cache descriptions of both kinds; 0 when the model lacks one. */
static int find_caches(const tfm_model_desc *desc, const tfm_cache_desc **self,
                       const tfm_cache_desc **cross) {
  *self = *cross = NULL;
  for (int32_t i = 0; i < desc->num_caches; ++i) {
    if (desc->caches[i].kind == TFM_CACHE_CROSS_ATTENTION)
      *cross = &desc->caches[i];
    else
      *self = &desc->caches[i];
  }
  return *self && *cross;
}

tfm_status_code tfm_seq2seq_generate(tfm_model *model, const int32_t *source,
                                     int64_t n,
                                     const tfm_generate_options *options,
                                     int32_t *out, int64_t capacity,
                                     int64_t *count, tfm_status *status) {
  if (!model || !source || !options || !count || (!out && capacity > 0))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_seq2seq_generate: NULL argument");
  *count = 0;
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  const tfm_entry_point *encode = tfm_model_entry_point(model, "encode");
  const tfm_entry_point *decode = tfm_model_entry_point(model, "decode");
  const tfm_cache_desc *self_desc, *cross_desc;
  if (!encode || !decode || !find_caches(desc, &self_desc, &cross_desc))
    return tfm_fail(status, TFM_ERROR_NOT_FOUND,
                    "model '%s' is not an encoder-decoder compiled with its "
                    "caches (@encode, @decode)",
                    desc->name);
  if (desc->bos_token < 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "model '%s' has no decoder start token", desc->name);
  int64_t room = self_desc->shape[2]; /* [layers, 2, capacity, ...] */
  int64_t steps = options->forced_tokens ? options->forced_count
                                         : options->max_new_tokens;
  if (steps < 0 || steps > room)
    return tfm_fail(status, TFM_ERROR_CONTEXT_OVERFLOW,
                    "%lld new tokens do not fit the decoder's %lld positions",
                    (long long)steps, (long long)room);
  tfm_sampler *sampler = NULL;
  tfm_status_code code = tfm_sampler_new(&options->sampler, desc->vocab_size,
                                         &sampler, status);
  if (code != TFM_OK)
    return code;
  tfm_tensor self = {0}, cross = {0}, output, *caches[2];
  float *logits = malloc((size_t)desc->vocab_size * sizeof *logits);
  int32_t *history = malloc((size_t)(steps + 1) * sizeof *history);
  if (!allocate_cache(self_desc, &self) || !allocate_cache(cross_desc, &cross) ||
      !logits || !history) {
    code = tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  /* The source, once: its cross-attention keys and values. */
  /* tfm_model_call only reads its inputs. */
  tfm_tensor source_ids = {(void *)(uintptr_t)source, TFM_DTYPE_I32, 1, {n},
                           NULL};
  order_caches(desc, encode, &self, &cross, caches);
  code = tfm_model_call(model, "encode", &source_ids, 1, caches, &output, 1,
                        status);
  if (code != TFM_OK)
    goto done;
  tfm_tensor_release(&output);
  /* The decoder, one token at a time from the start token. */
  int32_t token = (int32_t)desc->bos_token;
  int64_t encoded = n;
  order_caches(desc, decode, &self, &cross, caches);
  for (int64_t position = 0; position < steps; ++position) {
    tfm_tensor inputs[8];
    if (decode->num_inputs > 8) {
      code = tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                      "@decode has %d inputs", decode->num_inputs);
      break;
    }
    for (int32_t i = 0; i < decode->num_inputs; ++i) {
      int32_t role = decode->inputs[i].role;
      if (role == TFM_ROLE_TOKEN_IDS)
        inputs[i] = (tfm_tensor){&token, TFM_DTYPE_I32, 1, {1}, NULL};
      else
        inputs[i] = (tfm_tensor){role == TFM_ROLE_ENCODED_LENGTH ? &encoded
                                                                 : &position,
                                 TFM_DTYPE_I64, 0, {0}, NULL};
    }
    code = tfm_model_call(model, "decode", inputs, decode->num_inputs, caches,
                          &output, 1, status);
    if (code != TFM_OK)
      break;
    memcpy(logits, output.data, (size_t)desc->vocab_size * sizeof *logits);
    tfm_tensor_release(&output);
    if (options->on_logits)
      options->on_logits(options->user, logits, desc->vocab_size);
    history[position] = token;
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
  free(self.data);
  free(cross.data);
  free(logits);
  free(history);
  tfm_sampler_free(sampler);
  return code;
}
