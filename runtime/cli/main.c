/*===- main.c - the command line of a compiled model executable ---------===//
 *
 * `./story --prompt "Once upon a time" -n 100 --temperature 0.8 --seed 7`.
 * Linked into every executable tfmc builds, against the `tfm_builtin_model`
 * description that tfmc generates. Text streams to stdout as it is
 * generated; --stats prints one JSON line to stderr.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/cli/main_internal.h"
#include "runtime/cli/main_options.h"
#include "runtime/support/read_file.h"
#include "tfm/tfm_runtime.h"

#include <dlfcn.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

extern const tfm_model_desc tfm_builtin_model;
int tfm_main_fail(const char *argv0, const char *message) {
  fprintf(stderr, "%s: error: %s\n", argv0, message);
  return 1;
}

char *tfm_main_read_text_file(const char *path) {
  size_t size;
  return (char *)tfm_read_file(path, &size);
}

int tfm_main_write_floats(const char *path, const float *values,
                          size_t count) {
  FILE *f = fopen(path, "wb");
  if (!f)
    return 0;
  int ok = fwrite(values, sizeof *values, count, f) == count;
  return fclose(f) == 0 && ok;
}

/* Streaming output and --step-logits, through tfm_generate's callbacks. */
typedef struct {
  int print_ids;
  long printed;
  FILE *step_logits;
} stream_state;

static int print_token(void *user, int32_t token, const char *text,
                       size_t size) {
  stream_state *s = user;
  if (s->print_ids)
    printf("%s%d", s->printed++ ? " " : "", token);
  else
    fwrite(text, 1, size, stdout);
  fflush(stdout);
  return 0;
}

static void save_logits(void *user, const float *logits, int64_t vocab) {
  stream_state *s = user;
  if (s->step_logits)
    fwrite(logits, sizeof *logits, (size_t)vocab, s->step_logits);
}

/* The most bytes of text one token can stand for: no prompt longer than
 * the context times this fits (tokenizers that drop text while normalizing,
 * collapsing runs of spaces, are the exception, and rare in decoders). */
static size_t longest_piece_bytes(const tfm_tokenizer *tokenizer,
                                  int64_t vocab) {
  size_t longest = 1, size;
  for (int32_t id = 0; id < vocab; ++id)
    if (tfm_tokenizer_decode(tokenizer, -1, id, -1, &size) && size > longest)
      longest = size;
  return longest;
}

/* --prompt-file into *text (the caller's to free) and o->prompt. To
 * generate, a file that cannot fit the context is refused after reading at
 * most the bytes that could; --tokenize reads any size. */
static int read_prompt_file(const char *argv0, tfm_model *model,
                            tfm_main_options *o, char **text) {
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  size_t max_size = SIZE_MAX - 1, size;
  if (!o->tokenize) {
    tfm_status status;
    tfm_tokenizer *tokenizer = tfm_model_tokenizer(model, &status);
    if (!tokenizer)
      return tfm_main_fail(argv0, status.message);
    size_t piece = longest_piece_bytes(tokenizer, desc->vocab_size);
    max_size = (size_t)desc->max_context * piece;
  }
  *text = (char *)tfm_read_file_at_most(o->prompt_file, max_size, &size);
  o->prompt = *text;
  if (*text)
    return 0;
  if (errno == EFBIG)
    fprintf(stderr,
            "%s: error: prompt file '%s' is longer than the context of %lld "
            "tokens can hold (more than %zu bytes, at most %zu per token)\n",
            argv0, o->prompt_file, (long long)desc->max_context, max_size,
            max_size / (size_t)desc->max_context);
  else
    fprintf(stderr, "%s: error: cannot read prompt file '%s': %s\n", argv0,
            o->prompt_file, strerror(errno));
  return 1;
}

/* What run_model allocated, for main to release on every path. */
typedef struct {
  tfm_model *model;
  tfm_session *session;
  void *draft_library; /* --draft: the library, its model and session */
  tfm_model *draft_model;
  tfm_session *draft_session;
  int32_t *ids, *forced;
  float *logits;
  char *prompt; /* --prompt-file's text */
  FILE *step_logits;
  tfm_grammar *grammar;
  char *grammar_text;     /* --grammar-file's */
  double grammar_seconds; /* making the grammar: part of the first token's
                             latency */
  double image_seconds;   /* the prompt's images decoded and encoded: part
                             of it too */
} run_holdings;

/* The model's generation defaults (generation_config.json) where the
 * command line is silent, for an encoder-decoder. */
static void apply_generation_defaults(const tfm_model *model,
                                      tfm_main_options *o) {
  const tfm_generation_defaults *g = tfm_model_get_desc(model)->generation;
  if (!g)
    return;
  if (!o->beams)
    o->beams = g->num_beams;
  if (!o->new_tokens_given && g->max_new_tokens > 0)
    o->new_tokens = g->max_new_tokens;
  tfm_generation_rules defaults;
  tfm_generation_rules_defaults(model, &defaults);
  if (!o->rules_given) {
    o->rules = defaults;
  } else {
    /* mBART's target language, Whisper's language, task and no-timestamps
     * prompt, whatever the rules given. */
    o->rules.has_forced_bos = defaults.has_forced_bos;
    o->rules.forced_bos = defaults.forced_bos;
    o->rules.prompt = defaults.prompt;
    o->rules.prompt_count = defaults.prompt_count;
    o->rules.begin_suppressed = defaults.begin_suppressed;
    o->rules.begin_suppressed_count = defaults.begin_suppressed_count;
    o->rules.languages = defaults.languages;
    o->rules.language_count = defaults.language_count;
  }
  o->length_penalty = g->length_penalty;
  o->early_stopping = g->early_stopping;
}

/* An encoder-decoder generating from its source (main_seq2seq.c). */
static int run_seq2seq(const char *argv0, tfm_model *model,
                       tfm_main_options *o) {
  /* Whisper with timestamps: audio of any length, window by window. */
  if (tfm_main_is_whisper_long_form(model, o))
    return tfm_main_whisper(argv0, model, o);
  if (!tfm_main_refuse_unused(argv0, o, TFM_MAIN_MODE_SEQ2SEQ))
    return 1;
  /* Only audio is preprocessed (to log-mel features, for --output). */
  int audio = o->call.image_count > 0;
  if (o->call.preprocess && !audio)
    return tfm_main_fail(argv0, "--preprocess writes the features of audio "
                                "files; give AUDIO... files");
  if (o->call.output_path && !o->call.preprocess)
    return tfm_main_fail(argv0, "--output writes --preprocess's features; "
                                "translations are printed (--step-logits "
                                "FILE writes each step's logits)");
  apply_generation_defaults(model, o);
  tfm_seq2seq_command command = {
      o->tokens,          o->call.text,
      o->call.text_file,  o->call.pixels,
      o->call.images,     o->call.image_count,
      o->call.preprocess, o->call.output_path,
      o->print_ids,       o->call.tokenize,
      o->new_tokens,      o->sampler,
      o->ignore_eos,      o->step_logits_path,
      o->forced_tokens,   o->beams > 0 ? o->beams : 1,
      o->rules,           o->suppress,
      o->previous_text,   o->length_penalty,
      o->early_stopping};
  return tfm_main_seq2seq(argv0, model, &command);
}

/* One entry point called with the command line's inputs (main_call.c):
 * @NAME, an encoder's first, or an encoder-decoder's @forward teacher-forced
 * with --decoder-tokens. */
static int run_entry_point(const char *argv0, tfm_model *model,
                           tfm_main_options *o, int seq2seq) {
  if (seq2seq && !o->call.name)
    o->call.name = "forward";
  if (!o->call.name)
    o->call.name = tfm_model_get_desc(model)->entry_points[0].name;
  if (!tfm_main_refuse_unused(argv0, o, TFM_MAIN_MODE_CALL))
    return 1;
  if (o->text_count > 1)
    return tfm_main_fail(argv0, "--text is given more than once: an entry "
                                "point runs on one text (--text-file runs "
                                "one a line)");
  /* Teacher forcing's output is @forward's logits, [decoder positions,
   * vocab]: --logits writes them as a decoder's does. */
  if (o->logits_path) {
    if (!seq2seq || strcmp(o->call.name, "forward"))
      return tfm_main_fail(argv0, "--logits is for language models' "
                                  "logits; @NAME's output goes to "
                                  "--output FILE (raw f32)");
    if (o->call.output_path)
      return tfm_main_fail(argv0, "--logits and --output both name where "
                                  "@forward's logits go: give one");
    o->call.output_path = o->logits_path;
  }
  o->call.tokens = o->tokens;
  return tfm_main_call(argv0, model, &o->call);
}

/* The prompt as ids (--tokens, --prompt, --prompt-file, or BOS alone) in
 * held->ids; returns their count, or -1 after reporting an error. */
static int64_t prompt_ids(const char *argv0, tfm_model *model,
                          tfm_main_options *o, run_holdings *held) {
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  tfm_status status;
  if (o->prompt_file && read_prompt_file(argv0, model, o, &held->prompt))
    return -1;
  /* Room for the context, or for a prompt of one id per byte (+ BOS and
   * the dummy prefix), whichever is larger. */
  int64_t capacity = desc->max_context + 1;
  if (o->prompt && (int64_t)strlen(o->prompt) + 2 > capacity)
    capacity = (int64_t)strlen(o->prompt) + 2;
  int32_t *ids = held->ids = malloc((size_t)capacity * sizeof *ids);
  if (!ids)
    return tfm_main_fail(argv0, "out of memory"), -1;
  int64_t n = 0;
  if (o->tokens) {
    n = tfm_main_parse_ids(argv0, "--tokens", o->tokens, ids, capacity);
    if (n < 0)
      return -1;
    if (n > capacity)
      n = capacity; /* the context check below reports it */
  } else if (o->prompt) {
    tfm_tokenizer *tokenizer = tfm_model_tokenizer(model, &status);
    if (!tokenizer)
      return tfm_main_fail(argv0, status.message), -1;
    int32_t bos = desc->add_bos ? desc->bos_token : -1;
    if (tfm_tokenizer_encode(tokenizer, o->prompt, bos, ids, capacity, &n,
                             &status))
      return tfm_main_fail(argv0, status.message), -1;
  }
  /* An empty prompt, given as text or as ids, starts from BOS alone. */
  if (n == 0 && desc->bos_token >= 0)
    ids[n++] = desc->bos_token;
  return n;
}

/* --logits: the prompt's logits from @forward, written as raw f32. */
/* Every position's logits of the prompt: @forward's, or with an adapter
 * (which @forward, called without a session, does not run with) a
 * session's, token by token. */
static tfm_status_code prompt_logits(tfm_model *model, const int32_t *ids,
                                     int64_t n, int32_t adapter, float *logits,
                                     tfm_status *status) {
  if (!adapter)
    return tfm_forward(model, ids, n, logits, status);
  int64_t vocab = tfm_model_get_desc(model)->vocab_size;
  tfm_session *session = NULL;
  tfm_status_code code = tfm_session_new(model, &session, status);
  if (code == TFM_OK)
    code = tfm_session_set_lora(session, adapter, status);
  for (int64_t i = 0; code == TFM_OK && i < n; ++i)
    code = tfm_decode(session, ids[i], logits + i * vocab, status);
  tfm_session_free(session);
  return code;
}

static int write_prompt_logits(const char *argv0, tfm_model *model,
                               const int32_t *ids, int64_t n, int32_t adapter,
                               run_holdings *held, const char *path) {
  int64_t vocab = tfm_model_get_desc(model)->vocab_size;
  tfm_status status;
  float *logits = held->logits = malloc((size_t)(n * vocab) * sizeof *logits);
  if (!logits)
    return tfm_main_fail(argv0, "out of memory");
  if (prompt_logits(model, ids, n, adapter, logits, &status))
    return tfm_main_fail(argv0, status.message);
  if (!tfm_main_write_floats(path, logits, (size_t)(n * vocab))) {
    fprintf(stderr, "%s: error: cannot write logits to '%s'\n", argv0,
            path);
    return 1;
  }
  free(logits);
  held->logits = NULL;
  return 0;
}

/* --warmup N: N prefills in the session that then generates, so that its
 * cache and every buffer the prefill uses are in place (and stay mapped)
 * before the timed run. */
static int warm_up(const char *argv0, tfm_session *session, const int32_t *ids,
                   int64_t n, long times, int64_t vocab, run_holdings *held) {
  tfm_status status;
  float *logits = held->logits = malloc((size_t)vocab * sizeof *logits);
  if (!logits)
    return tfm_main_fail(argv0, "out of memory");
  for (long i = 0; i < times; ++i) {
    if (tfm_prefill(session, ids, n, logits, &status))
      return tfm_main_fail(argv0, status.message);
    tfm_session_reset(session);
  }
  free(logits);
  held->logits = NULL;
  return 0;
}

/* --prompt-cache FILE, before generating: the session FILE saved (none
 * yet: an empty one), cut back to where its tokens and the prompt's part,
 * the prompt's last token always run again for its logits. *reused: the
 * prompt's positions not computed again. */
static int resume_prompt_cache(const char *argv0, tfm_session *session,
                               const char *path, const int32_t *ids, int64_t n,
                               int64_t *reused) {
  tfm_status status;
  *reused = 0;
  if (access(path, F_OK) != 0)
    return 0;
  if (tfm_session_load(session, path, &status))
    return tfm_main_fail(argv0, status.message);
  const int32_t *held = tfm_session_tokens(session);
  int64_t common = 0, length = tfm_session_length(session);
  while (common < length && common < n - 1 && held[common] == ids[common])
    ++common;
  if (tfm_session_truncate(session, common, &status))
    return tfm_main_fail(argv0, status.message);
  if (tfm_session_cached(session) == common) {
    *reused = common;
  } else {
    /* A state that cannot go back would be recomputed from the common
     * tokens anyway: the prompt is run whole instead. */
    tfm_session_reset(session);
  }
  fprintf(stderr, "%s: prompt cache '%s': %lld of %lld prompt tokens reused\n",
          argv0, path, (long long)*reused, (long long)n);
  return 0;
}

/* --stats of a model split over ranks: each rank's weights (its part and
 * what all hold alike), peak RSS, time in the model's all-reduces or stage
 * transfers, and in its code. */
static void print_rank_stats(const tfm_model *model) {
  int32_t ranks = tfm_model_get_desc(model)->ranks;
  if (ranks <= 1)
    return;
  tfm_rank_stats *stats = calloc((size_t)ranks, sizeof *stats);
  tfm_status status;
  if (!stats || tfm_model_rank_stats(model, stats, &status)) {
    free(stats);
    return;
  }
  fprintf(stderr, ", \"replicated_weights_bytes\": %llu, \"ranks\": [",
          (unsigned long long)tfm_model_get_desc(model)->replicated_weights_size);
  for (int32_t r = 0; r < ranks; ++r)
    fprintf(stderr,
            "%s{\"rank\": %d, \"weights_bytes\": %llu, "
            "\"peak_rss_bytes\": %lld, \"all_reduces\": %lld, "
            "\"all_reduce_seconds\": %.6f, \"stage_transfers\": %lld, "
            "\"stage_seconds\": %.6f, \"call_seconds\": %.6f}",
            r ? ", " : "", r, (unsigned long long)stats[r].weights_bytes,
            (long long)stats[r].peak_rss_bytes, (long long)stats[r].all_reduces,
            stats[r].all_reduce_seconds, (long long)stats[r].stage_transfers,
            stats[r].stage_seconds, stats[r].call_seconds);
  fprintf(stderr, "]");
  free(stats);
}

/* --stats: timings, memory and what the memory holds by design, as JSON on
 * stderr. */
static void print_stats(const tfm_model *model,
                        const tfm_generate_result *result,
                        const run_holdings *held) {
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  /* The first new token comes from the prefill's logits. */
  double decoded = (double)result->generated_tokens;
  /* What the memory holds by design, beside the peak RSS: weights, the
   * KV cache, and the most the compiled code had allocated at once. */
  long long cache_bytes = 0, state_bytes = 0;
  for (int32_t c = 0; c < desc->num_caches; ++c) {
    /* A batched cache ([sequences, ...], the first dimension dynamic)
     * is not this session's. */
    long long elements = 1;
    for (int32_t d = 0; d < desc->caches[c].rank; ++d)
      elements *= desc->caches[c].shape[d];
    if (elements <= 0)
      continue;
    long long bytes = elements * tfm_dtype_bytes(desc->caches[c].dtype);
    if (desc->caches[c].kind == TFM_CACHE_RECURRENT_STATE)
      state_bytes += bytes;
    else
      cache_bytes += bytes;
  }
  fprintf(stderr,
          "{\"prompt_tokens\": %lld, \"generated_tokens\": %lld, "
          "\"prefill_seconds\": %.6f, \"decode_seconds\": %.6f, "
          "\"prefill_tokens_per_s\": %.3f, \"decode_tokens_per_s\": %.3f, "
          "\"peak_rss_bytes\": %lld, \"weights_bytes\": %lld, "
          "\"kv_cache_bytes\": %lld, \"recurrent_state_bytes\": %lld, "
          "\"activation_peak_bytes\": %lld, "
          "\"grammar_seconds\": %.6f, \"image_seconds\": %.6f, "
          "\"weight_bytes_per_token\": %lld, "
          "\"drafted_tokens\": %lld, \"accepted_tokens\": %lld",
          (long long)result->prompt_tokens, (long long)result->generated_tokens,
          result->prefill_seconds, result->decode_seconds,
          result->prefill_seconds > 0
              ? (double)result->prompt_tokens / result->prefill_seconds
              : 0.0,
          result->decode_seconds > 0 ? decoded / result->decode_seconds : 0.0,
          (long long)usage.ru_maxrss * 1024, (long long)desc->weights_size,
          cache_bytes, state_bytes, (long long)tfm_activation_peak_bytes(),
          held->grammar_seconds, held->image_seconds,
          (long long)desc->decode_weight_bytes,
          (long long)result->drafted_tokens,
          (long long)result->accepted_tokens);
  print_rank_stats(model);
  fprintf(stderr, "}\n");
}

/* A decoder's generation from its prompt. */

/* --grammar, --grammar-file or a JSON schema's grammar (--json-schema,
 * --json-schema-file), parsed for the model's tokenizer into
 * held->grammar; nonzero after reporting an error (with the file's name). */
static int load_grammar(const char *argv0, tfm_model *model,
                        const tfm_main_options *o, run_holdings *held) {
  struct timespec start, end;
  clock_gettime(CLOCK_MONOTONIC, &start);
  const char *text = o->grammar ? o->grammar : o->json_schema;
  const char *file = o->grammar_file ? o->grammar_file : o->json_schema_file;
  tfm_status status;
  if (file) {
    size_t size = 0;
    text = held->grammar_text = (char *)tfm_read_file(file, &size);
    if (!text) {
      fprintf(stderr, "%s: error: cannot read '%s': %s\n", argv0, file,
              strerror(errno));
      return 1;
    }
  }
  if (o->json_schema || o->json_schema_file) {
    char *gbnf = NULL;
    if (tfm_json_schema_to_gbnf(text, &gbnf, &status)) {
      fprintf(stderr, "%s: error: %s%s%s\n", argv0, file ? file : "",
              file ? ": " : "", status.message);
      return 1;
    }
    free(held->grammar_text);
    text = held->grammar_text = gbnf;
    file = NULL;
  }
  tfm_tokenizer *tokenizer = tfm_model_tokenizer(model, &status);
  if (!tokenizer)
    return tfm_main_fail(argv0, "--grammar needs the model's tokenizer");
  if (tfm_grammar_new(text, tokenizer, tfm_model_get_desc(model),
                      &held->grammar, &status)) {
    fprintf(stderr, "%s: error: %s%s%s\n", argv0, file ? file : "",
            file ? ": " : "", status.message);
    return 1;
  }
  clock_gettime(CLOCK_MONOTONIC, &end);
  held->grammar_seconds = (double)(end.tv_sec - start.tv_sec) +
                          1e-9 * (double)(end.tv_nsec - start.tv_nsec);
  return 0;
}

static int run_generate(const char *argv0, tfm_model *model,
                        tfm_main_options *o, run_holdings *held) {
  tfm_status status;
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  int64_t context = desc->max_context, vocab = desc->vocab_size;
  int images = o->call.image_count || o->call.pixels;
  if (images && !tfm_main_takes_images(model))
    return tfm_main_fail(argv0, "unexpected argument (images are for image "
                         "models; a prompt is --prompt TEXT)");
  if (images && (o->logits_path || o->warmup > 0 || o->prompt_cache_path))
    return tfm_main_fail(
        argv0, o->logits_path  ? "--logits: the prompt's "
                                 "logits are of text alone (images are given to "
                                 "generation)"
               : o->warmup > 0 ? "--warmup runs the prompt's text "
                                 "alone; give it without images"
                               : "--prompt-cache keeps text alone; a session "
                                 "holding an image's rows is not saved");
  if (!tfm_main_refuse_unused(argv0, o, TFM_MAIN_MODE_GENERATE))
    return 1;
  int64_t n = prompt_ids(argv0, model, o, held);
  if (n < 0)
    return 1;
  int32_t *ids = held->ids;
  if (o->tokenize) {
    for (int64_t i = 0; i < n; ++i)
      printf("%s%d", i ? " " : "", ids[i]);
    printf("\n");
    return 0;
  }
  if (n == 0)
    return tfm_main_fail(argv0, "the prompt is empty and the model has no BOS token "
                         "to start from (give at least one token)");
  /* Without a tokenizer the output can only be ids. */
  if (!o->print_ids && !desc->tokenizer)
    o->print_ids = 1;
  int32_t adapter = 0;
  if (o->lora && tfm_main_load_lora(argv0, model, o->lora, &adapter))
    return 1;
  if (o->logits_path &&
      write_prompt_logits(argv0, model, ids, n, adapter, held, o->logits_path))
    return 1;

  stream_state stream = {o->print_ids, 0, NULL};
  if (o->step_logits_path &&
      !(stream.step_logits = held->step_logits = fopen(o->step_logits_path, "wb"))) {
    fprintf(stderr, "%s: error: cannot write '%s'\n", argv0,
            o->step_logits_path);
    return 1;
  }
  if (tfm_session_new(model, &held->session, &status))
    return tfm_main_fail(argv0, status.message);
  tfm_session *session = held->session;
  /* A vision-language model's prompt: its placeholders need images. */
  if (images || tfm_main_takes_images(model)) {
    struct timespec start, end;
    clock_gettime(CLOCK_MONOTONIC, &start);
    if (tfm_main_prompt_images(argv0, model, session, &o->call, &held->ids, &n))
      return 1;
    clock_gettime(CLOCK_MONOTONIC, &end);
    held->image_seconds = (double)(end.tv_sec - start.tv_sec) +
                          1e-9 * (double)(end.tv_nsec - start.tv_nsec);
  }
  ids = held->ids;
  if (o->warmup > 0 &&
      warm_up(argv0, session, ids, n, o->warmup, vocab, held))
    return 1;
  tfm_generate_options generate = {0};
  if (o->forced_tokens) {
    int32_t *forced = held->forced =
        malloc((size_t)(context + 1) * sizeof *forced);
    long count = forced ? tfm_main_parse_ids(argv0, "--force-tokens",
                                             o->forced_tokens, forced,
                                           context + 1)
                        : -1;
    if (count < 0)
      return 1;
    generate.forced_tokens = forced;
    generate.forced_count = count > context + 1 ? context + 1 : count;
  }
  generate.max_new_tokens = o->new_tokens;
  generate.sampler = o->sampler;
  generate.stop_strings = o->stop;
  generate.stop_string_count = o->stop_count;
  generate.ignore_eos = o->ignore_eos;
  generate.lookup_ngram = o->lookup_ngram;
  generate.draft_max = o->draft_max;
  generate.lora = adapter;
  if (o->draft_path) {
    if (tfm_main_load_draft(argv0, o->draft_path, &held->draft_library,
                            &held->draft_model))
      return 1;
    if (tfm_session_new(held->draft_model, &held->draft_session, &status))
      return tfm_main_fail(argv0, status.message);
    generate.draft = held->draft_session;
    generate.draft_p_min = o->draft_p_min;
  }
  generate.on_token = print_token;
  /* Only where they are recorded: a grammar's greedy steps skip the mask
   * where the model's choice is allowed, and the recorded logits are the
   * masked ones. */
  generate.on_logits = stream.step_logits ? save_logits : NULL;
  generate.user = &stream;
  if ((o->grammar || o->grammar_file || o->json_schema ||
       o->json_schema_file) &&
      load_grammar(argv0, model, o, held))
    return 1;
  generate.grammar = held->grammar;
  /* Echo the prompt's text before its continuation. */
  if (o->prompt && !o->print_ids)
    fputs(o->prompt, stdout);
  int64_t reused = 0;
  if (o->prompt_cache_path &&
      resume_prompt_cache(argv0, session, o->prompt_cache_path, ids, n,
                          &reused))
    return 1;
  tfm_generate_result result;
  if (tfm_generate(session, ids + reused, n - reused, &generate, &result,
                   &status))
    return tfm_main_fail(argv0, status.message);
  fputc('\n', stdout);
  if (o->prompt_cache_path &&
      tfm_session_save(session, o->prompt_cache_path, &status))
    return tfm_main_fail(argv0, status.message);
  if (stream.step_logits)
    fclose(stream.step_logits);
  held->step_logits = NULL;

  if (o->stats)
    print_stats(model, &result, held);
  return 0;
}

/* Everything after loading: an encoder-decoder's, an encoder's or a
 * decoder's command line. Returns the exit code. */
static int run_model(const char *argv0, tfm_model *model,
                     tfm_main_options *o, run_holdings *held) {
  /* An encoder-decoder generates from its source, or is teacher-forced
   * through @forward (--decoder-tokens). */
  const tfm_entry_point *forward = tfm_model_entry_point(model, "forward");
  int seq2seq = forward && forward->num_inputs == 2 &&
                tfm_model_entry_point(model, "encode") &&
                tfm_model_entry_point(model, "decode");
  if (seq2seq && !o->call.name && !o->call.decoder_tokens)
    return run_seq2seq(argv0, model, o);
  if (o->perplexity) {
    if (seq2seq || !forward || forward->num_inputs != 1)
      return tfm_main_fail(argv0,
                         "--perplexity is for decoder language models");
    if (!tfm_main_refuse_unused(argv0, o, TFM_MAIN_MODE_PERPLEXITY))
      return 1;
    return tfm_main_perplexity(argv0, model, o->perplexity);
  }
  /* A diffusion pipeline draws its prompt. */
  if (!o->call.name && tfm_model_get_desc(model)->diffusion) {
    if (!tfm_main_refuse_unused(argv0, o, TFM_MAIN_MODE_IMAGE))
      return 1;
    return tfm_main_image(argv0, model, o);
  }
  /* CLIP: texts and images given, each image against every text. */
  if (!o->call.name && tfm_main_is_similarity(model) &&
      (o->text_count || o->call.text_file) && o->call.image_count) {
    if (!tfm_main_refuse_unused(argv0, o, TFM_MAIN_MODE_SIMILARITY))
      return 1;
    tfm_similarity_options similarity = {o->texts, o->text_count,
                                         o->call.text_file, o->call.images,
                                         o->call.image_count};
    return tfm_main_similarity(argv0, model, &similarity);
  }
  /* A speech recognizer: the audio files' transcripts. */
  if (!o->call.name && tfm_main_is_transcription(model)) {
    if (!o->call.image_count)
      return tfm_main_fail(argv0, "give audio files to transcribe (WAV, "
                                  "FLAC, Ogg, ...)");
    if (!tfm_main_refuse_unused(argv0, o, TFM_MAIN_MODE_TRANSCRIBE))
      return 1;
    return tfm_main_transcribe(argv0, model, o);
  }
  /* Models that do not generate (encoders) run their first entry point. */
  int generates = !seq2seq && (tfm_model_entry_point(model, "prefill") ||
                               (forward && forward->num_inputs == 1));
  if (o->call.name || !generates)
    return run_entry_point(argv0, model, o, seq2seq);
  return run_generate(argv0, model, o, held);
}

int main(int argc, char **argv) {
  tfm_main_options o;
  switch (tfm_main_parse_options(argc, argv, &o)) {
  case TFM_MAIN_OPTIONS_BAD:
    tfm_main_options_free(&o);
    return 2;
  case TFM_MAIN_OPTIONS_HELP:
    tfm_main_usage(stdout, argv[0]);
    tfm_main_options_free(&o);
    return 0;
  case TFM_MAIN_OPTIONS_RUN:
    break;
  }
  tfm_status status;
  run_holdings held = {0};
  if (tfm_model_load(&tfm_builtin_model, o.weights_path, &held.model,
                     &status))
    return tfm_main_fail(argv[0], status.message);
  int code = run_model(argv[0], held.model, &o, &held);
  /* Everything released, whatever the path (and leak checkers stay quiet
   * in sanitizer builds). */
  if (held.step_logits)
    fclose(held.step_logits);
  tfm_session_free(held.session);
  tfm_session_free(held.draft_session);
  tfm_model_free(held.draft_model);
  if (held.draft_library)
    dlclose(held.draft_library);
  tfm_grammar_free(held.grammar);
  free(held.grammar_text);
  tfm_model_free(held.model);
  free(held.ids);
  free(held.forced);
  free(held.logits);
  free(held.prompt);
  tfm_main_options_free(&o);
  return code;
}
