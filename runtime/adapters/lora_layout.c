/*===- lora_layout.c - an adapter's matrices laid out in a slot ----------===*
 *
 * See lora_layout.h: A in the first r of the slot's rank rows, B's columns
 * likewise, times the scale (a lower rank padded with zeros, which the
 * update then adds nothing for); a fused checkpoint projection (Phi-3's)
 * laid out on the parts the model reads.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/adapters/lora_layout.h"
#include "runtime/core/status.h"
#include "tfm/half_floats.h"

#include <stdio.h>
#include <string.h>

tfm_status_code tfm_lora_fail(lora_layout *layout, tfm_status_code code,
                              const char *file, const char *what) {
  return tfm_fail(layout->status, code, "tfm_lora_load: %s%s%s: %s",
                  layout->path, file ? "/" : "", file ? file : "", what);
}

/* Target `weight`'s index (the table is sorted by name), or -1. */
static int32_t find_target(const tfm_lora_desc *desc, const char *weight) {
  int32_t low = 0, high = desc->num_targets - 1;
  while (low <= high) {
    int32_t middle = low + (high - low) / 2;
    int order = strcmp(desc->targets[middle].weight, weight);
    if (order == 0)
      return middle;
    if (order < 0)
      low = middle + 1;
    else
      high = middle - 1;
  }
  return -1;
}

static float value_at(const lora_matrix *m, int64_t index) {
  if (m->bytes == 4) {
    float v;
    memcpy(&v, m->data + 4 * index, 4);
    return v;
  }
  uint16_t half;
  memcpy(&half, m->data + 2 * index, 2);
  return m->bf16 ? tfm_bf16_to_float(half) : tfm_f16_to_float(half);
}

/* A checkpoint's fused projection that the model reads split into parts
 * (Phi-3's qkv_proj as qkv_proj.q, .k and .v; gate_up_proj as .gate and
 * .up: preparePhi3Checkpoint), its rows in this order. */
static const char *const kFusedParts[][4] = {{"q", "k", "v", NULL},
                                             {"gate", "up", NULL, NULL}};

/* Places `m` on the parts of fused weight `weight` where the model adapts
 * every part: A on each, B's rows split among them. Returns 0 when
 * `weight` is no such projection. */
static int place_fused(lora_layout *layout, const char *file, const char *name,
                       const char *weight, int is_a, const lora_matrix *m,
                       double factor, tfm_status_code *code) {
  const tfm_lora_desc *desc = tfm_lora_bank_desc(layout->bank);
  size_t stem = strlen(weight) - strlen(".weight");
  for (size_t f = 0; f < sizeof kFusedParts / sizeof *kFusedParts; ++f) {
    int32_t parts[4];
    int count = 0, found = 1;
    int64_t rows = 0;
    for (; kFusedParts[f][count] && found; ++count) {
      char part[800];
      snprintf(part, sizeof part, "%.*s.%s.weight", (int)stem, weight,
               kFusedParts[f][count]);
      parts[count] = find_target(desc, part);
      found = parts[count] >= 0;
      if (found)
        rows += desc->targets[parts[count]].out_features;
    }
    if (!found)
      continue;
    if (!is_a && m->rows != rows) {
      char what[1024];
      snprintf(what, sizeof what,
               "'%s' is [%lld, %lld], where this model's '%s' takes [%lld, "
               "r]: an adapter of another model",
               name, (long long)m->rows, (long long)m->cols, weight,
               (long long)rows);
      *code = tfm_lora_fail(layout, TFM_ERROR_INVALID_ARGUMENT, file, what);
      return 1;
    }
    lora_matrix slice = *m;
    *code = TFM_OK;
    for (int p = 0; p < count && *code == TFM_OK; ++p) {
      const tfm_lora_target *t = &desc->targets[parts[p]];
      if (!is_a)
        slice.rows = t->out_features;
      *code =
          tfm_lora_place(layout, file, name, t->weight, is_a, &slice, factor);
      if (!is_a)
        slice.data += (size_t)(slice.rows * slice.cols * slice.bytes);
    }
    return 1;
  }
  return 0;
}

tfm_status_code tfm_lora_place(lora_layout *layout, const char *file,
                               const char *name, const char *weight, int is_a,
                               const lora_matrix *m, double factor) {
  char what[1024];
  const tfm_lora_desc *desc = tfm_lora_bank_desc(layout->bank);
  int32_t target = find_target(desc, weight);
  tfm_status_code fused;
  if (target < 0 && strlen(weight) > strlen(".weight") &&
      place_fused(layout, file, name, weight, is_a, m, factor, &fused))
    return fused;
  if (target < 0) {
    snprintf(what, sizeof what,
             "the adapter adapts '%s', which this model was not compiled to "
             "adapt (tfmc --lora-targets), or does not have",
             weight);
    return tfm_lora_fail(layout, TFM_ERROR_INVALID_ARGUMENT, file, what);
  }
  const tfm_lora_target *t = &desc->targets[target];
  int64_t r = is_a ? m->rows : m->cols;
  int64_t expected = is_a ? t->in_features : t->out_features;
  if ((is_a ? m->cols : m->rows) != expected) {
    char takes[64];
    snprintf(takes, sizeof takes, is_a ? "[r, %lld]" : "[%lld, r]",
             (long long)expected);
    snprintf(what, sizeof what,
             "'%s' is [%lld, %lld], where this model's '%s' takes %s: an "
             "adapter of another model",
             name, (long long)m->rows, (long long)m->cols, weight, takes);
    return tfm_lora_fail(layout, TFM_ERROR_INVALID_ARGUMENT, file, what);
  }
  if (r > desc->rank) {
    snprintf(what, sizeof what,
             "'%s' has rank %lld, above the %d this model's slots hold "
             "(tfmc --lora-rank)",
             name, (long long)r, desc->rank);
    return tfm_lora_fail(layout, TFM_ERROR_INVALID_ARGUMENT, file, what);
  }
  (is_a ? layout->ranks_a : layout->ranks_b)[target] = (int32_t)r;
  int64_t rank = desc->rank;
  float *a = layout->slot + tfm_lora_target_offset(layout->bank, target);
  if (is_a) {
    for (int64_t i = 0; i < m->rows * m->cols; ++i)
      a[i] = value_at(m, i); /* rows r of [rank, in] */
    return TFM_OK;
  }
  float *b = a + rank * t->in_features;
  for (int64_t o = 0; o < m->rows; ++o)
    for (int64_t c = 0; c < m->cols; ++c)
      b[o * rank + c] = (float)(factor * value_at(m, o * m->cols + c));
  return TFM_OK;
}

tfm_status_code tfm_lora_check_pairs(lora_layout *layout, const char *file) {
  const tfm_lora_desc *desc = tfm_lora_bank_desc(layout->bank);
  int pairs = 0;
  for (int32_t t = 0; t < desc->num_targets; ++t) {
    int32_t a = layout->ranks_a[t], b = layout->ranks_b[t];
    if (a == b) {
      pairs += a > 0;
      continue;
    }
    char what[1024];
    if (!a || !b)
      snprintf(what, sizeof what, "'%s' has lora_%s but no lora_%s",
               desc->targets[t].weight, a ? "A" : "B", a ? "B" : "A");
    else
      snprintf(what, sizeof what,
               "'%s' has lora_A of rank %d and lora_B of rank %d",
               desc->targets[t].weight, a, b);
    return tfm_lora_fail(layout, TFM_ERROR_INVALID_ARGUMENT, file, what);
  }
  if (!pairs)
    return tfm_lora_fail(layout, TFM_ERROR_INVALID_ARGUMENT, file,
                         "the adapter has no LoRA matrices");
  return TFM_OK;
}
