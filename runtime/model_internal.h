/*===- model_internal.h - model internals shared inside the runtime ------===*/

#ifndef TFM_RUNTIME_MODEL_INTERNAL_H
#define TFM_RUNTIME_MODEL_INTERNAL_H

#include "runtime/tfm_runtime.h"

/* The language-model entry points the runtime calls directly (NULL when
 * absent), and the cache @prefill updates (NULL without one). */
tfm_forward_fn tfm_model_forward(const tfm_model *model);
tfm_prefill_fn tfm_model_prefill(const tfm_model *model);
tfm_prefill_fn tfm_model_decode(const tfm_model *model);
const tfm_cache_desc *tfm_model_kv_cache(const tfm_model *model);

/* The weights as the generated code takes them. */
tfm_memref1d tfm_model_weights_descriptor(const tfm_model *model);

/* Checks ids against the vocabulary: TFM_ERROR_OUT_OF_RANGE naming the
 * first bad one. */
tfm_status_code tfm_check_token_ids(const tfm_model_desc *desc,
                                    const int32_t *tokens, int64_t n,
                                    tfm_status *status);

/* Copies the generated code's logits ([rows, vocab], from buffer_cache.c) to
 * `out` and frees them; a descriptor of another shape is reported. */
tfm_status_code tfm_take_logits(const tfm_model_desc *desc,
                                tfm_memref2d_f32 *result, int64_t rows,
                                float *out, tfm_status *status);

#endif /* TFM_RUNTIME_MODEL_INTERNAL_H */
