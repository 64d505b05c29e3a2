/*===- sampler.c - choosing the next token ------------------------------===//
 *
 * Repetition penalty (as CTRL and Hugging Face apply it: positive logits
 * divided, negative ones multiplied), then greedy argmax at temperature 0,
 * or temperature-scaled softmax restricted to the top k and to the top-p
 * nucleus, sampled with a seeded xorshift64* generator: same seed, same
 * tokens.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/status.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  float value; /* the logit, then its probability weight */
  int32_t id;
} tfm_candidate;

struct tfm_sampler {
  tfm_sampler_options options;
  int64_t vocab;
  uint64_t state;
  tfm_candidate *candidates; /* most likely first */
  unsigned char *seen; /* [vocab] marks for the repetition penalty */
};

tfm_sampler_options tfm_sampler_default_options(void) {
  tfm_sampler_options o = {0.0f, 0, 1.0f, 1.0f, 0};
  return o;
}

tfm_status_code tfm_sampler_new(const tfm_sampler_options *options,
                                int64_t vocab, tfm_sampler **out,
                                tfm_status *status) {
  if (!options || !out || vocab <= 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_sampler_new: NULL argument or empty vocabulary");
  if (!(options->temperature >= 0) || isinf(options->temperature))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "temperature must be a finite number >= 0, got %g",
                    options->temperature);
  if (options->top_k < 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "top-k must be >= 0, got %d", options->top_k);
  if (!(options->top_p > 0 && options->top_p <= 1))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "top-p must be in (0, 1], got %g", options->top_p);
  if (!(options->repetition_penalty > 0) ||
      isinf(options->repetition_penalty))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "repetition penalty must be a finite number > 0, got %g",
                    options->repetition_penalty);
  tfm_sampler *s = calloc(1, sizeof *s);
  if (s) {
    s->candidates = malloc((size_t)vocab * sizeof *s->candidates);
    s->seen = calloc((size_t)vocab, 1);
  }
  if (!s || !s->candidates || !s->seen) {
    tfm_sampler_free(s);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  s->options = *options;
  s->vocab = vocab;
  /* xorshift64* needs a non-zero state. */
  s->state = options->seed ^ 0x9E3779B97F4A7C15ull;
  if (!s->state)
    s->state = 1;
  *out = s;
  return tfm_ok(status);
}

void tfm_sampler_free(tfm_sampler *s) {
  if (!s)
    return;
  free(s->candidates);
  free(s->seen);
  free(s);
}

/* A uniform float in [0, 1). */
static float next_uniform(tfm_sampler *s) {
  s->state ^= s->state >> 12;
  s->state ^= s->state << 25;
  s->state ^= s->state >> 27;
  uint64_t bits = s->state * 0x2545F4914F6CDD1Dull;
  return (float)(bits >> 40) / 16777216.0f;
}

static int by_value_descending(const void *a, const void *b) {
  const tfm_candidate *x = a, *y = b;
  if (x->value != y->value)
    return x->value > y->value ? -1 : 1;
  return x->id - y->id; /* deterministic on ties */
}

int32_t tfm_sampler_sample(tfm_sampler *s, float *logits,
                           const int32_t *history, int64_t n) {
  if (!s || !logits || n < 0 || (n > 0 && !history))
    return -1;
  const tfm_sampler_options *o = &s->options;
  if (o->repetition_penalty != 1.0f && history) {
    for (int64_t i = 0; i < n; ++i) {
      int32_t id = history[i];
      if (id < 0 || id >= s->vocab || s->seen[id])
        continue;
      s->seen[id] = 1;
      logits[id] = logits[id] > 0 ? logits[id] / o->repetition_penalty
                                  : logits[id] * o->repetition_penalty;
    }
    for (int64_t i = 0; i < n; ++i)
      if (history[i] >= 0 && history[i] < s->vocab)
        s->seen[history[i]] = 0;
  }
  if (o->temperature == 0.0f)
    return tfm_argmax(logits, s->vocab);

  /* Candidates by decreasing logit, cut to the top k. */
  tfm_candidate *c = s->candidates;
  int64_t count = s->vocab;
  for (int64_t i = 0; i < count; ++i)
    c[i] = (tfm_candidate){logits[i], (int32_t)i};
  qsort(c, (size_t)count, sizeof *c, by_value_descending);
  if (o->top_k > 0 && o->top_k < count)
    count = o->top_k;
  /* Softmax weights at the temperature. */
  float max = c[0].value, total = 0;
  for (int64_t i = 0; i < count; ++i) {
    c[i].value = expf((c[i].value - max) / o->temperature);
    total += c[i].value;
  }
  /* The nucleus: the smallest prefix holding top_p of the mass. */
  float kept = 0;
  int64_t nucleus = 0;
  while (nucleus < count && (nucleus == 0 || kept < o->top_p * total))
    kept += c[nucleus++].value;
  float target = next_uniform(s) * kept, cumulative = 0;
  for (int64_t i = 0; i < nucleus; ++i) {
    cumulative += c[i].value;
    if (target < cumulative)
      return c[i].id;
  }
  return c[nucleus - 1].id;
}
