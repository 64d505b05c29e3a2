/* What test programs calling cached entry points by hand share
 * (decode_batch.c, prefill_batch.c): a failed call's message, tensors of
 * ids and scalars, the model's one-sequence cache and views of it. Include after the
 * compiled model's header. */
#ifndef TFM_TEST_E2E_INPUTS_CACHE_CALLS_H
#define TFM_TEST_E2E_INPUTS_CACHE_CALLS_H

#include <stdio.h>
#include <string.h>

static int failed(tfm_status_code code, const tfm_status *status) {
  if (code != TFM_OK)
    fprintf(stderr, "error: %s\n", status->message);
  return code != TFM_OK;
}

static tfm_tensor ids(const int32_t *values, int64_t n) {
  return (tfm_tensor){(void *)values, TFM_DTYPE_I32, 1, {n}, NULL};
}

static tfm_tensor scalar(int64_t *value) {
  return (tfm_tensor){value, TFM_DTYPE_I64, 0, {0}, NULL};
}

/* The model's one-sequence cache description. */
static const tfm_cache_desc *sequence_cache(const tfm_model_desc *desc) {
  for (int32_t i = 0; i < desc->num_caches; ++i)
    if (desc->caches[i].rank == 5)
      return &desc->caches[i];
  return NULL;
}

/* A cache tensor viewing `data` with the one-sequence shape. */
static tfm_tensor cache_view(const tfm_cache_desc *cache, float *data) {
  tfm_tensor t = {data, TFM_DTYPE_F32, 5, {0}, NULL};
  memcpy(t.shape, cache->shape, 5 * sizeof *t.shape);
  return t;
}

#endif /* TFM_TEST_E2E_INPUTS_CACHE_CALLS_H */
