/*===- packed_call.c - packed sequences, run in cache-sized groups -------===//
 *
 * A packed entry point (@<name>_batch, tfm-pack-sequences) computes any
 * number of sequences in one call, but past a few hundred tokens it gets
 * slower per token: the activations of every op ([tokens, 3072] after the
 * FFN's first GEMM) no longer stay in cache while the weights stream past.
 * Measured on BERT-base (bench/compare_encoders.py --batches): sequences
 * of 8 to 64 tokens cost 18.4 ms each in packs of about 143 tokens, 22.3 ms
 * one to a call, and 21 to 27 ms in packs of 288 to 1137 tokens. So
 * tfm_model_call runs a packed call as groups of whole sequences of at
 * most kPackTokens tokens (a longer sequence alone), one call of the
 * compiled function each, and joins their outputs: the caller sees one
 * result, the same as one call would give.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/buffer_cache.h"
#include "runtime/core/model_internal.h"
#include "runtime/core/status.h"

#include <string.h>

enum { kPackTokens = 160 };

/* Whether the packed entry's output has one row per sequence (pooled:
 * @embed_batch, @classify_batch), not one per token: its one-sequence
 * twin's output has one dimension less. */
static int pooled_output(tfm_model *model, const tfm_entry_point *entry) {
  char twin[256];
  size_t length = strlen(entry->name), suffix = strlen("_batch");
  if (length <= suffix || length - suffix >= sizeof twin)
    return -1;
  memcpy(twin, entry->name, length - suffix);
  twin[length - suffix] = '\0';
  const tfm_entry_point *one = tfm_model_entry_point(model, twin);
  if (!one || one->num_outputs != 1)
    return -1;
  return one->outputs[0].rank == entry->outputs[0].rank - 1;
}

static int64_t row_bytes(const tfm_tensor *t) {
  int64_t bytes = tfm_dtype_bytes(t->dtype);
  for (int32_t d = 1; d < t->rank; ++d)
    bytes *= t->shape[d];
  return bytes;
}

tfm_status_code tfm_call_packed(tfm_model *model, const tfm_entry_point *entry,
                                const tfm_tensor *inputs, int32_t lengths_at,
                                tfm_tensor *output, tfm_status *status) {
  const int32_t *lengths = inputs[lengths_at].data;
  int64_t sequences = inputs[lengths_at].shape[0];
  int64_t tokens = 0;
  for (int64_t s = 0; s < sequences; ++s)
    tokens += lengths[s];
  tfm_memref1d weights = tfm_model_weights_descriptor(model);
  int pooled = pooled_output(model, entry);
  if (tokens <= kPackTokens || entry->num_outputs != 1 ||
      entry->num_caches != 0 || pooled < 0 || entry->num_inputs > 8) {
    int32_t code = entry->call(&weights, inputs, NULL, output);
    return code == TFM_OK
               ? tfm_ok(status)
               : tfm_fail(status, (tfm_status_code)code,
                          "@%s of model '%s' ran out of memory", entry->name,
                          tfm_model_get_desc(model)->name);
  }
  uint8_t *joined = NULL;
  int64_t bytes_per_row = 0;
  for (int64_t first = 0, at = 0; first < sequences;) {
    /* Whole sequences up to kPackTokens tokens (at least one). */
    int64_t end = first, group_tokens = 0;
    while (end < sequences &&
           (end == first || group_tokens + lengths[end] <= kPackTokens))
      group_tokens += lengths[end++];
    tfm_tensor group[8], part;
    for (int32_t i = 0; i < entry->num_inputs; ++i) {
      group[i] = inputs[i];
      int32_t role = entry->inputs[i].role;
      if (role == TFM_ROLE_SEQUENCE_LENGTHS) {
        group[i].data = (int32_t *)inputs[i].data + first;
        group[i].shape[0] = end - first;
      } else if (role == TFM_ROLE_TOKEN_IDS ||
                 role == TFM_ROLE_TOKEN_TYPE_IDS) {
        group[i].data = (int32_t *)inputs[i].data + at;
        group[i].shape[0] = group_tokens;
      }
    }
    memset(&part, 0, sizeof part);
    int32_t code = entry->call(&weights, group, NULL, &part);
    if (code != TFM_OK) {
      if (joined)
        tfm_buffer_release(joined);
      return tfm_fail(status, (tfm_status_code)code,
                      "@%s of model '%s' ran out of memory", entry->name,
                      tfm_model_get_desc(model)->name);
    }
    if (!joined) {
      /* The whole result: the first part's row shape, every row. */
      bytes_per_row = row_bytes(&part);
      int64_t rows = pooled ? sequences : tokens;
      joined = _mlir_memref_to_llvm_aligned_alloc(
          64, (size_t)(rows * bytes_per_row));
      if (!joined) {
        tfm_tensor_release(&part);
        return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                        "@%s of model '%s' ran out of memory", entry->name,
                        tfm_model_get_desc(model)->name);
      }
      *output = part;
      output->data = joined;
      output->owner = joined;
      output->shape[0] = rows;
    }
    int64_t row = pooled ? first : at;
    memcpy(joined + row * bytes_per_row, part.data,
           (size_t)(part.shape[0] * bytes_per_row));
    tfm_tensor_release(&part);
    at += group_tokens;
    first = end;
  }
  return tfm_ok(status);
}
