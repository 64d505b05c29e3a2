/*===- beam_search.c - beam search for encoder-decoders ------------------===//
 *
 * tfm_seq2seq_beam_search, as transformers' generate(num_beams=N) searches
 * (BeamSearchScorer and BeamHypotheses, 4.40): the source is encoded once
 * and every beam reads the one cross-attention cache; each beam has its own
 * self-attention cache. Per step every live beam is decoded, its logits
 * turned into log-probabilities plus the beam's score, and the 2N best of
 * all (beam, token) pairs taken in order: an end-of-sequence token among
 * the first N closes a hypothesis (scored sum / length^length_penalty),
 * other tokens extend the next step's N beams: a beam's first
 * continuation takes its cache over, further ones copy the positions
 * written so far. The live beams are decoded in one call where the model
 * has @decode_batch (seq2seq.c). A forced prompt (Whisper's) is decoded
 * first on one beam, as decoder_input_ids are. The search stops at
 * max_new_tokens or when no open beam can beat the N closed
 * hypotheses (early_stopping: as soon as there are N); the best hypothesis
 * is returned, ended by the end-of-sequence token when it has one.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/status.h"
#include "runtime/generate/seq2seq_internal.h"
#include "runtime/kernels/simd.h"
#include "tfm/tfm_runtime.h"

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  float score;   /* cumulative log-probability (open beams) */
  int32_t token; /* the candidate's token */
  int32_t beam;  /* the beam it extends */
} candidate;

/* A closed hypothesis: its tokens after the start token, and its score. */
typedef struct {
  double score;
  int32_t *tokens;
  int64_t length;
} hypothesis;

typedef struct {
  hypothesis *items;
  int count, capacity;
  double worst;
} hypotheses;

/* BeamHypotheses.add: a hypothesis better than the worst (or any while
 * there are fewer than `capacity`) is appended; past `capacity` the lowest
 * (the first of equals) goes. The list order decides ties at the end. */
static int add_hypothesis(hypotheses *h, const int32_t *tokens, int64_t length,
                          float sum_logprobs, int64_t generated,
                          float length_penalty) {
  double score = sum_logprobs / pow((double)generated, length_penalty);
  if (h->count >= h->capacity && !(score > h->worst))
    return 1;
  int32_t *copy = malloc((size_t)(length + 1) * sizeof *copy);
  if (!copy)
    return 0;
  memcpy(copy, tokens, (size_t)length * sizeof *copy);
  h->items[h->count++] = (hypothesis){score, copy, length};
  if (h->count <= h->capacity) {
    h->worst = h->count == 1 || score < h->worst ? score : h->worst;
    return 1;
  }
  int lowest = 0;
  for (int i = 1; i < h->count; ++i)
    if (h->items[i].score < h->items[lowest].score)
      lowest = i;
  free(h->items[lowest].tokens);
  memmove(&h->items[lowest], &h->items[lowest + 1],
          (size_t)(h->count - lowest - 1) * sizeof *h->items);
  --h->count;
  h->worst = h->items[0].score;
  for (int i = 1; i < h->count; ++i)
    if (h->items[i].score < h->worst)
      h->worst = h->items[i].score;
  return 1;
}

/* Candidates best first; equal scores keep the lower (beam, token) first. */
static int compare_candidates(const void *a, const void *b) {
  const candidate *x = a, *y = b;
  if (x->score != y->score)
    return x->score < y->score ? 1 : -1;
  if (x->beam != y->beam)
    return x->beam - y->beam;
  return x->token - y->token;
}

/* log_softmax(logits) into `out`: every step does it for every beam over
 * the whole vocabulary, so in vectors (the sum of exponentials in 16
 * lanes, then in double). */
TFM_CLONED
static void log_softmax(const float *logits, int64_t vocab, float *out) {
  v16 max16 = splat(-INFINITY);
  int64_t v = 0;
  for (; v + kLanes <= vocab; v += kLanes)
    max16 = vmax(max16, load16(logits + v));
  float max = -INFINITY;
  for (int i = 0; i < kLanes; ++i)
    max = max16[i] > max ? max16[i] : max;
  for (; v < vocab; ++v)
    max = logits[v] > max ? logits[v] : max;
  v16 sum16 = splat(0);
  for (v = 0; v + kLanes <= vocab; v += kLanes)
    sum16 += exp_nonpositive(load16(logits + v) - max);
  double sum = 0;
  for (int i = 0; i < kLanes; ++i)
    sum += sum16[i];
  for (; v < vocab; ++v)
    sum += exp((double)(logits[v] - max));
  float shift = max + (float)log(sum);
  for (v = 0; v < vocab; ++v)
    out[v] = logits[v] - shift;
}

/* Keeps top[0..*kept) the best `limit` candidates seen, best first (the
 * order compare_candidates sorts all of them in): the step needs only the
 * 2N best of beams x vocab. */
static void keep_best(candidate *top, int *kept, int limit, candidate c) {
  if (*kept == limit && compare_candidates(&c, &top[limit - 1]) >= 0)
    return;
  int at = *kept < limit ? (*kept)++ : limit - 1;
  while (at > 0 && compare_candidates(&c, &top[at - 1]) < 0) {
    top[at] = top[at - 1];
    --at;
  }
  top[at] = c;
}

tfm_status_code tfm_seq2seq_beam_search(tfm_model *model, const int32_t *source,
                                        int64_t n,
                                        const tfm_beam_options *options,
                                        int32_t *out, int64_t capacity,
                                        int64_t *count, tfm_status *status) {
  if (!source)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_seq2seq_beam_search: NULL source");
  tfm_tensor ids = tfm_seq2seq_ids(source, n);
  return tfm_seq2seq_beam_search_from(model, &ids, options, out, capacity,
                                      count, status);
}

/* One search's memory: per beam its sequence, the decoder start token
 * first (a row `stride` long), this step's and the next's, and its score;
 * one beam's log-probabilities; the 2N best candidates of a step; the
 * closed hypotheses. */
typedef struct {
  int beams;
  int64_t vocab;
  size_t stride;
  int32_t *sequences, *next_sequences, *last_tokens;
  float *scores, *row;
  candidate *top;
  hypotheses closed;
} search;

static int search_alloc(search *s, int beams, int64_t vocab, int64_t steps) {
  s->beams = beams;
  s->vocab = vocab;
  s->stride = (size_t)(steps + 1);
  s->sequences = malloc((size_t)beams * s->stride * sizeof *s->sequences);
  s->next_sequences = malloc((size_t)beams * s->stride * sizeof *s->sequences);
  s->scores = calloc((size_t)beams, sizeof *s->scores);
  s->row = malloc((size_t)vocab * sizeof *s->row);
  s->last_tokens = malloc((size_t)beams * sizeof *s->last_tokens);
  s->top = malloc((size_t)(2 * beams) * sizeof *s->top);
  s->closed =
      (hypotheses){calloc((size_t)beams + 1, sizeof(hypothesis)), 0, beams, 0};
  return s->sequences && s->next_sequences && s->scores && s->row &&
         s->last_tokens && s->top && s->closed.items;
}

static void search_free(search *s) {
  if (s->closed.items)
    for (int i = 0; i < s->closed.count; ++i)
      free(s->closed.items[i].tokens);
  free(s->closed.items);
  free(s->sequences);
  free(s->next_sequences);
  free(s->scores);
  free(s->row);
  free(s->last_tokens);
  free(s->top);
}

/* Decodes the `live` beams at `length` and keeps the 2N best of beams x
 * vocab in s->top (`kept` of them); at the first step all beams are the
 * start token alone, so one stands for all (the others would score
 * -1e9). */
static tfm_status_code score_live_beams(search *s, tfm_seq2seq_state *state,
                                        int live, int64_t length, int64_t steps,
                                        const tfm_generation_rules *rules,
                                        int32_t eos, int *kept,
                                        tfm_status *status) {
  float *logits;
  for (int b = 0; b < live; ++b)
    s->last_tokens[b] = s->sequences[(size_t)b * s->stride + (size_t)length];
  tfm_status_code code =
      tfm_seq2seq_step(state, live, s->last_tokens, length, &logits, status);
  if (code != TFM_OK)
    return code;
  *kept = 0;
  for (int b = 0; b < live; ++b) {
    const int32_t *sequence = s->sequences + (size_t)b * s->stride;
    /* transformers applies the rules to the log-probabilities, then adds
     * the beam's score. */
    log_softmax(logits + (size_t)b * (size_t)s->vocab, s->vocab, s->row);
    tfm_apply_generation_rules(rules, sequence, length + 1, steps, eos, s->row,
                               s->vocab);
    for (int64_t v = 0; v < s->vocab; ++v)
      keep_best(s->top, kept, 2 * s->beams,
                (candidate){s->row[v] + s->scores[b], (int32_t)v, b});
  }
  return TFM_OK;
}

/* BeamSearchScorer.process over the `kept` best: an end-of-sequence token
 * among the first N closes a hypothesis, the others extend the next step's
 * beams (their caches forked to follow), `*live` of them. */
static tfm_status_code process_candidates(search *s, tfm_seq2seq_state *state,
                                          int kept, int64_t length,
                                          int64_t prompt,
                                          const tfm_beam_options *options,
                                          int32_t eos, int *live,
                                          tfm_status *status) {
  int next = 0;
  for (int rank = 0; rank < kept && next < s->beams; ++rank) {
    const candidate *c = &s->top[rank];
    const int32_t *sequence = s->sequences + (size_t)c->beam * s->stride;
    if (c->token == eos) {
      if (rank >= s->beams)
        continue;
      if (!add_hypothesis(&s->closed, sequence + 1, length, c->score,
                          length - prompt + 1, options->length_penalty))
        return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
      continue;
    }
    int32_t *extended = s->next_sequences + (size_t)next * s->stride;
    memcpy(extended, sequence, (size_t)(length + 1) * sizeof *extended);
    extended[length + 1] = c->token;
    s->scores[next] = c->score;
    tfm_status_code code =
        tfm_seq2seq_fork(state, c->beam, next, length + 1, status);
    if (code != TFM_OK)
      return code;
    ++next;
  }
  tfm_seq2seq_commit(state);
  int32_t *swap = s->sequences;
  s->sequences = s->next_sequences;
  s->next_sequences = swap;
  *live = next;
  return TFM_OK;
}

/* The best hypothesis into out[0, capacity) (`*count` its length, with the
 * end-of-sequence token when it ended before `steps`); among equal scores
 * the last added, as sorted().pop() does. */
static void write_best(const hypotheses *closed, int64_t steps, int32_t eos,
                       int32_t *out, int64_t capacity, int64_t *count) {
  int best = -1;
  for (int i = 0; i < closed->count; ++i)
    if (best < 0 || closed->items[i].score >= closed->items[best].score)
      best = i;
  if (best < 0)
    return;
  const hypothesis *h = &closed->items[best];
  for (int64_t i = 0; i < h->length; ++i, ++*count)
    if (*count < capacity)
      out[*count] = h->tokens[i];
  if (h->length < steps) {
    if (*count < capacity)
      out[*count] = eos;
    ++*count;
  }
}

tfm_status_code tfm_seq2seq_beam_search_from(tfm_model *model,
                                             const tfm_tensor *source,
                                             const tfm_beam_options *options,
                                             int32_t *out, int64_t capacity,
                                             int64_t *count,
                                             tfm_status *status) {
  const char *function = "tfm_seq2seq_beam_search";
  tfm_status_code checked = tfm_seq2seq_check_arguments(
      function, model, source, out, capacity, count, status);
  if (checked == TFM_OK && !options)
    checked = tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                       "%s: NULL options", function);
  if (checked == TFM_OK)
    checked = tfm_generation_rules_check(function, options->rules, status);
  if (checked != TFM_OK)
    return checked;
  *count = 0;
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  int32_t eos = (int32_t)desc->eos_token;
  int beams = options->num_beams;
  /* A forced prompt (Whisper's language, task, no timestamps) comes
   * first, on one beam, as generate()'s decoder_input_ids; max_new_tokens
   * and the lengths that divide scores count after it. */
  const tfm_generation_rules *rules = options->rules;
  int64_t prompt = rules ? rules->prompt_count : 0;
  int64_t vocab = desc->vocab_size, steps = options->max_new_tokens + prompt;
  if (beams < 1 || 2 * (int64_t)beams > vocab)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "%d beams: expected 1 to half the vocabulary (%lld)", beams,
                    (long long)(vocab / 2));
  tfm_seq2seq_state *state = NULL;
  tfm_status_code code =
      tfm_seq2seq_begin(model, source, beams, rules, steps, &state, status);
  if (code != TFM_OK)
    return code;
  search s;
  if (!search_alloc(&s, beams, vocab, steps)) {
    code = tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
    goto done;
  }
  int live = 1, finished = 0;
  int64_t length = 0; /* tokens after the start token, per beam */
  for (int b = 0; b < beams; ++b)
    s.sequences[(size_t)b * s.stride] = (int32_t)desc->bos_token;
  while (length < steps && !finished) {
    if (length < prompt) {
      float *logits;
      code = tfm_seq2seq_step(state, 1, &s.sequences[length], length, &logits,
                              status);
      if (code != TFM_OK)
        goto done;
      /* The forced token, or the language the logits detect (-1). */
      tfm_apply_generation_rules(rules, s.sequences, length + 1, steps, eos,
                                 logits, vocab);
      int32_t forced = rules->prompt[length];
      for (int64_t v = 0; forced < 0 && v < vocab; ++v)
        if (logits[v] == 0.0f)
          forced = (int32_t)v;
      s.sequences[length + 1] = forced;
      ++length;
      continue;
    }
    int kept = 0;
    code = score_live_beams(&s, state, live, length, steps, rules, eos, &kept,
                            status);
    if (code == TFM_OK)
      code = process_candidates(&s, state, kept, length, prompt, options, eos,
                                &live, status);
    if (code != TFM_OK)
      goto done;
    ++length;
    /* BeamHypotheses.is_done, with the best score of this step. */
    if (s.closed.count >= beams)
      finished =
          options->early_stopping ||
          s.closed.worst >= s.top[0].score / pow((double)(length - prompt),
                                                 options->length_penalty);
  }
  /* finalize: open beams compete with the closed hypotheses. */
  if (!finished)
    for (int b = 0; b < live; ++b)
      if (!add_hypothesis(&s.closed, s.sequences + (size_t)b * s.stride + 1,
                          length, s.scores[b], length - prompt,
                          options->length_penalty)) {
        code = tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
        goto done;
      }
  write_best(&s.closed, steps, eos, out, capacity, count);
done:
  search_free(&s);
  tfm_seq2seq_end(state);
  return code;
}
