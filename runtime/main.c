/*===- main.c - the command line of a compiled model executable ---------===//
 *
 * `./story --prompt "Once upon a time" -n 100 --temperature 0.8 --seed 7`.
 * Linked into every executable tfmc builds, against the `tfm_builtin_model`
 * description that tfmc generates. Text streams to stdout as it is
 * generated; --stats prints one JSON line to stderr.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/buffer_cache.h"
#include "runtime/main_internal.h"
#include "runtime/read_file.h"
#include "runtime/tfm_runtime.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

extern const tfm_model_desc tfm_builtin_model;

enum { kMaxStopStrings = 16 };

typedef struct {
  const char *prompt;
  const char *prompt_file;
  const char *tokens;
  const char *forced_tokens;
  long new_tokens;
  int print_ids;
  int tokenize;
  const char *logits_path;
  const char *step_logits_path;
  int stats;
  long warmup;
  const char *weights_path;
  tfm_call_options call;
  tfm_sampler_options sampler;
  const char *stop[kMaxStopStrings];
  int stop_count;
  int ignore_eos;
  int beams; /* an encoder-decoder's beam search (1: greedy) */
  int new_tokens_given, rules_given; /* -n; any generation rule flag */
  float length_penalty;              /* a beam search's (default 1) */
  int early_stopping;
  tfm_generation_rules rules; /* an encoder-decoder's (suppressed: below) */
  const char *suppress;       /* --suppress "ids" */
  const char *perplexity;     /* --perplexity FILE */
} options;

static void usage(FILE *out, const char *argv0) {
  fprintf(out,
          "usage: %s [options]\n"
          "  --prompt TEXT          text to continue (default: start from BOS)\n"
          "  --prompt-file FILE     read the prompt text from FILE\n"
          "  --perplexity FILE      the model's perplexity on a text (JSON)\n"
          "  --tokens \"1 2 3\"       token ids to continue instead of text\n"
          "  -n N                   new tokens to generate (default 128)\n"
          "  --temperature T        0 (default) is greedy\n"
          "  --top-k K              sample among the K most likely (0: all)\n"
          "  --top-p P              sample within probability mass P (1: all)\n"
          "  --repetition-penalty R >1 discourages repeating tokens (1: off)\n"
          "  --seed S               sampling seed: same seed, same text\n"
          "  --stop TEXT            stop once TEXT is generated (repeatable)\n"
          "  --ignore-eos           do not stop at the end-of-sequence token\n"
          "  --force-tokens \"4 5\"   emit these ids instead of sampling (teacher\n"
          "                         forcing, to score a continuation)\n"
          "  --print-ids            print generated token ids instead of text\n"
          "  --tokenize             print the prompt's token ids and exit\n"
          "  --logits FILE          write the prompt's logits, f32 [positions, vocab]\n"
          "  --step-logits FILE     write the logits each new token was chosen\n"
          "                         from, f32 [new tokens, vocab]\n"
          "  --stats                timing and memory as JSON on stderr\n"
          "  --warmup N             prefill the prompt N times first, untimed\n"
          "                         (benchmarks: steady-state figures)\n"
          "  --weights FILE         weights side file (overrides the default)\n"
          "  --call NAME            run entry point @NAME (encode, embed, ...);\n"
          "                         the default for models that do not generate:\n"
          "    --tokens \"1 2\" [--token-types \"0 1\"]  the input as ids, or\n"
          "    --decoder-tokens \"ids\"  an encoder-decoder's decoder ids\n"
          "                         (teacher forcing; --tokens is the source)\n"
          "  --text TEXT, --text-file FILE  an encoder-decoder's source (one\n"
          "                         per line), translated to text; --tokens\n"
          "                         \"ids\" gives its ids, --print-ids prints ids\n"
          "  --beams N              an encoder-decoder's beam search width\n"
          "                         (default 1: greedy or sampled)\n"
          "  --no-repeat-ngram N, --min-new-tokens N, --suppress \"ids\",\n"
          "  --forced-eos           an encoder-decoder's generation rules (as\n"
          "                         generation_config.json's, transformers')\n"
          "    --text TEXT [--text-pair TEXT]  text through the tokenizer\n"
          "    --text-file FILE     one text per line, one output per line\n"
          "    --batch N            at most N lines of --text-file (packed end\n"
          "                         to end) or N images per call, through\n"
          "                         @NAME_batch (default 32)\n"
          "    IMAGE...             an image model's inputs: PNG or JPEG files,\n"
          "                         preprocessed as preprocessor_config.json says\n"
          "    --preprocess         write the preprocessed images, f32 [3, H, W]\n"
          "  AUDIO...               a speech model's inputs (WAV, FLAC, ...):\n"
          "                         mono, resampled, log-mel as\n"
          "                         preprocessor_config.json says; one\n"
          "                         transcript per file (--preprocess\n"
          "                         --output FILE writes the features)\n"
          "    --pixels FILE        an image model's input, raw f32 [3, H, W]\n"
          "    --features FILE      a speech model's log-mel features, raw f32\n"
          "                         [mel bins, frames] (also for generation)\n"
          "    --truncate           cut text longer than the context\n"
          "    --tokenize           print the ids and token types, run nothing\n"
          "    --format F           text (default), json, or f32 (raw, stdout)\n"
          "    --output FILE        write the outputs as raw f32\n",
          argv0);
}

int tfm_main_fail(const char *argv0, const char *message) {
  fprintf(stderr, "%s: error: %s\n", argv0, message);
  return 1;
}

/* Parses a number option; returns 0 after reporting when it is not one. */
static int parse_number(const char *argv0, const char *flag, const char *text,
                        double *value) {
  char *end;
  errno = 0;
  *value = strtod(text, &end);
  if (errno || end == text || *end || isnan(*value)) {
    fprintf(stderr, "%s: error: %s expects a number, got '%s'\n", argv0, flag,
            text);
    return 0;
  }
  return 1;
}

static int parse_options(int argc, char **argv, options *o) {
  memset(o, 0, sizeof *o);
  o->new_tokens = 128;
  o->length_penalty = 1.0f;
  o->sampler = tfm_sampler_default_options();
  for (int i = 1; i < argc; ++i) {
    const char *arg = argv[i];
    const char *value = i + 1 < argc ? argv[i + 1] : NULL;
    double number;
    if (arg[0] != '-') {
      /* Image files (PNG, JPEG) for an image model, audio files for a
       * speech model. */
      if (!o->call.images && !(o->call.images = malloc(sizeof(char *) * argc))) {
        fprintf(stderr, "%s: error: out of memory\n", argv[0]);
        return 0;
      }
      o->call.images[o->call.image_count++] = arg;
    } else if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
      usage(stdout, argv[0]);
      exit(0);
    } else if (!strcmp(arg, "--print-ids")) {
      o->print_ids = 1;
    } else if (!strcmp(arg, "--truncate")) {
      o->call.truncate = 1;
    } else if (!strcmp(arg, "--preprocess")) {
      o->call.preprocess = 1;
    } else if (!strcmp(arg, "--tokenize")) {
      o->call.tokenize = 1;
      o->tokenize = 1;
    } else if (!strcmp(arg, "--stats")) {
      o->stats = 1;
    } else if (!strcmp(arg, "--ignore-eos")) {
      o->ignore_eos = 1;
    } else if (!strcmp(arg, "--forced-eos")) {
      o->rules.forced_eos = 1;
      o->rules_given = 1;
    } else if (!value) {
      fprintf(stderr, "%s: error: unknown or incomplete option '%s'\n",
              argv[0], arg);
      usage(stderr, argv[0]);
      return 0;
    } else if (!strcmp(arg, "--prompt")) {
      o->prompt = argv[++i];
    } else if (!strcmp(arg, "--perplexity")) {
      o->perplexity = argv[++i];
    } else if (!strcmp(arg, "--prompt-file")) {
      o->prompt_file = argv[++i];
    } else if (!strcmp(arg, "--tokens")) {
      o->tokens = argv[++i];
    } else if (!strcmp(arg, "--force-tokens")) {
      o->forced_tokens = argv[++i];
    } else if (!strcmp(arg, "--logits")) {
      o->logits_path = argv[++i];
    } else if (!strcmp(arg, "--step-logits")) {
      o->step_logits_path = argv[++i];
    } else if (!strcmp(arg, "--weights")) {
      o->weights_path = argv[++i];
    } else if (!strcmp(arg, "--call")) {
      o->call.name = argv[++i];
    } else if (!strcmp(arg, "--text")) {
      o->call.text = argv[++i];
    } else if (!strcmp(arg, "--text-pair")) {
      o->call.text_pair = argv[++i];
    } else if (!strcmp(arg, "--pixels") || !strcmp(arg, "--features")) {
      o->call.pixels = argv[++i];
    } else if (!strcmp(arg, "--text-file")) {
      o->call.text_file = argv[++i];
    } else if (!strcmp(arg, "--format")) {
      o->call.format = argv[++i];
    } else if (!strcmp(arg, "--token-types")) {
      o->call.token_types = argv[++i];
    } else if (!strcmp(arg, "--decoder-tokens")) {
      o->call.decoder_tokens = argv[++i];
    } else if (!strcmp(arg, "--suppress")) {
      o->suppress = argv[++i];
      o->rules_given = 1;
    } else if (!strcmp(arg, "--output")) {
      o->call.output_path = argv[++i];
    } else if (!strcmp(arg, "--stop")) {
      if (o->stop_count == kMaxStopStrings) {
        fprintf(stderr, "%s: error: at most %d --stop strings\n", argv[0],
                kMaxStopStrings);
        return 0;
      }
      o->stop[o->stop_count++] = argv[++i];
    } else if (!strcmp(arg, "-n") || !strcmp(arg, "--top-k") ||
               !strcmp(arg, "--seed") || !strcmp(arg, "--warmup") ||
               !strcmp(arg, "--batch") || !strcmp(arg, "--beams") ||
               !strcmp(arg, "--no-repeat-ngram") ||
               !strcmp(arg, "--min-new-tokens")) {
      char *end;
      errno = 0;
      long long n = strtoll(argv[++i], &end, 10);
      if (errno || *end || end == argv[i] || n < 0) {
        fprintf(stderr, "%s: error: %s expects a non-negative integer, got '%s'\n",
                argv[0], arg, argv[i]);
        return 0;
      }
      if (!strcmp(arg, "-n")) {
        o->new_tokens = (long)n;
        o->new_tokens_given = 1;
      }
      else if (!strcmp(arg, "--top-k"))
        o->sampler.top_k = (int32_t)n;
      else if (!strcmp(arg, "--warmup"))
        o->warmup = (long)n;
      else if (!strcmp(arg, "--batch") && (n < 1 || n > 65536)) {
        fprintf(stderr, "%s: error: --batch expects 1 to 65536, got %lld\n",
                argv[0], n);
        return 0;
      } else if (!strcmp(arg, "--batch"))
        o->call.batch = (int)n;
      else if (!strcmp(arg, "--beams") && (n < 1 || n > 64)) {
        fprintf(stderr, "%s: error: --beams expects 1 to 64, got %lld\n",
                argv[0], n);
        return 0;
      } else if (!strcmp(arg, "--beams"))
        o->beams = (int)n;
      else if (!strcmp(arg, "--no-repeat-ngram")) {
        o->rules.no_repeat_ngram_size = (int32_t)n;
        o->rules_given = 1;
      } else if (!strcmp(arg, "--min-new-tokens")) {
        o->rules.min_new_tokens = (int64_t)n;
        o->rules_given = 1;
      }
      else
        o->sampler.seed = (uint64_t)n;
    } else if (!strcmp(arg, "--temperature") || !strcmp(arg, "--top-p") ||
               !strcmp(arg, "--repetition-penalty")) {
      if (!parse_number(argv[0], arg, argv[++i], &number))
        return 0;
      if (!strcmp(arg, "--temperature"))
        o->sampler.temperature = (float)number;
      else if (!strcmp(arg, "--top-p"))
        o->sampler.top_p = (float)number;
      else
        o->sampler.repetition_penalty = (float)number;
    } else {
      fprintf(stderr, "%s: error: unknown option '%s'\n", argv[0], arg);
      usage(stderr, argv[0]);
      return 0;
    }
  }
  if (!!o->prompt + !!o->prompt_file + !!o->tokens > 1) {
    fprintf(stderr,
            "%s: error: give one of --prompt, --prompt-file and --tokens\n",
            argv[0]);
    return 0;
  }
  return 1;
}

/* Parses "1 2 3" into ids (writing at most `capacity`); returns the count,
 * or -1 after reporting. */
long tfm_main_parse_ids(const char *argv0, const char *flag, const char *text,
                        int32_t *ids, long capacity) {
  long n = 0;
  const char *at = text;
  for (;;) {
    while (*at == ' ' || *at == ',' || *at == '\t')
      ++at;
    if (!*at)
      return n;
    char *end;
    errno = 0;
    long value = strtol(at, &end, 10);
    if (end == at || errno || value < INT32_MIN || value > INT32_MAX) {
      fprintf(stderr, "%s: error: %s: '%s' is not a token id (at offset %ld)\n",
              argv0, flag, at, (long)(at - text));
      return -1;
    }
    if (n < capacity)
      ids[n] = (int32_t)value;
    ++n;
    at = end;
  }
}

int32_t *tfm_main_parse_id_list(const char *argv0, const char *flag,
                                const char *text, long *count) {
  *count = tfm_main_parse_ids(argv0, flag, text, NULL, 0);
  if (*count < 0)
    return NULL;
  int32_t *ids = calloc((size_t)*count + 1, sizeof *ids);
  if (!ids) {
    fprintf(stderr, "%s: error: out of memory\n", argv0);
    return NULL;
  }
  tfm_main_parse_ids(argv0, flag, text, ids, *count);
  return ids;
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

int main(int argc, char **argv) {
  options o;
  if (!parse_options(argc, argv, &o))
    return 2;
  tfm_status status;
  tfm_model *model;
  if (tfm_model_load(&tfm_builtin_model, o.weights_path, &model, &status))
    return tfm_main_fail(argv[0], status.message);
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  int64_t context = desc->max_context, vocab = desc->vocab_size;
  /* An encoder-decoder generates from its source (main_seq2seq.c), or is
   * teacher-forced through @forward (--decoder-tokens). */
  const tfm_entry_point *forward = tfm_model_entry_point(model, "forward");
  int seq2seq = forward && forward->num_inputs == 2 &&
                tfm_model_entry_point(model, "encode") &&
                tfm_model_entry_point(model, "decode");
  if (seq2seq && !o.call.name && !o.call.decoder_tokens) {
    /* The model's generation defaults where the command line is silent. */
    const tfm_generation_defaults *g = desc->generation;
    if (g && !o.beams)
      o.beams = g->num_beams;
    if (g && !o.new_tokens_given && g->max_new_tokens > 0)
      o.new_tokens = g->max_new_tokens;
    if (g && !o.rules_given) {
      o.rules.no_repeat_ngram_size = g->no_repeat_ngram_size;
      o.rules.min_new_tokens = g->min_new_tokens;
      o.rules.forced_eos = g->forced_eos;
      o.rules.suppressed = g->suppressed;
      o.rules.suppressed_count = g->num_suppressed;
      o.rules.bad_words = g->bad_words;
      o.rules.bad_word_lengths = g->bad_word_lengths;
      o.rules.bad_word_count = g->num_bad_words;

    }
    if (g) {
      /* mBART's target language, Whisper's language, task and
       * no-timestamps prompt, whatever the rules given. */
      o.rules.has_forced_bos = g->forced_bos >= 0;
      o.rules.forced_bos = g->forced_bos;
      o.rules.prompt = g->prompt;
      o.rules.prompt_count = g->num_prompt;
      o.rules.begin_suppressed = g->begin_suppressed;
      o.rules.begin_suppressed_count = g->num_begin_suppressed;
      o.length_penalty = g->length_penalty;
      o.early_stopping = g->early_stopping;
    }
    tfm_seq2seq_command command = {o.tokens,
                                   o.call.text,
                                   o.call.text_file,
                                   o.call.pixels,
                                   o.call.images,
                                   o.call.image_count,
                                   o.call.preprocess,
                                   o.call.output_path,
                                   o.print_ids,
                                   o.call.tokenize,
                                   o.new_tokens,
                                   o.sampler,
                                   o.ignore_eos,
                                   o.step_logits_path,
                                   o.forced_tokens,
                                   o.beams > 0 ? o.beams : 1,
                                   o.rules,
                                   o.suppress,
                                   o.length_penalty,
                                   o.early_stopping};
    return tfm_main_seq2seq(argv[0], model, &command);
  }
  if (o.perplexity) {
    if (seq2seq || !forward || forward->num_inputs != 1)
      return tfm_main_fail(argv[0],
                         "--perplexity is for decoder language models");
    return tfm_main_perplexity(argv[0], model, o.perplexity);
  }
  /* Models that do not generate (encoders) run their first entry point. */
  int generates = !seq2seq && (tfm_model_entry_point(model, "prefill") ||
                               (forward && forward->num_inputs == 1));
  if (o.call.name || !generates) {
    if (seq2seq && !o.call.name)
      o.call.name = "forward";
    if (!o.call.name)
      o.call.name = desc->entry_points[0].name;
    o.call.tokens = o.tokens;
    return tfm_main_call(argv[0], model, &o.call);
  }
  if (o.call.image_count)
    return tfm_main_fail(argv[0], "unexpected argument (images are for image "
                         "models; a prompt is --prompt TEXT)");

  /* The prompt: ids, text, or BOS alone. */
  if (o.prompt_file && !(o.prompt = tfm_main_read_text_file(o.prompt_file))) {
    fprintf(stderr, "%s: error: cannot read prompt file '%s': %s\n", argv[0],
            o.prompt_file, strerror(errno));
    return 1;
  }
  /* Room for the context, or for a prompt of one id per byte (+ BOS and
   * the dummy prefix), whichever is larger. */
  int64_t capacity = context + 1;
  if (o.prompt && (int64_t)strlen(o.prompt) + 2 > capacity)
    capacity = (int64_t)strlen(o.prompt) + 2;
  int32_t *ids = malloc((size_t)capacity * sizeof *ids);
  if (!ids)
    return tfm_main_fail(argv[0], "out of memory");
  int64_t n = 0;
  if (o.tokens) {
    n = tfm_main_parse_ids(argv[0], "--tokens", o.tokens, ids, capacity);
    if (n < 0)
      return 1;
    if (n > capacity)
      n = capacity; /* the context check below reports it */
  } else if (o.prompt) {
    tfm_tokenizer *tokenizer = tfm_model_tokenizer(model, &status);
    if (!tokenizer)
      return tfm_main_fail(argv[0], status.message);
    int32_t bos = desc->add_bos ? desc->bos_token : -1;
    if (tfm_tokenizer_encode(tokenizer, o.prompt, bos, ids, capacity, &n,
                             &status))
      return tfm_main_fail(argv[0], status.message);
  }
  /* An empty prompt, given as text or as ids, starts from BOS alone. */
  if (n == 0 && desc->bos_token >= 0)
    ids[n++] = desc->bos_token;
  if (o.tokenize) {
    for (int64_t i = 0; i < n; ++i)
      printf("%s%d", i ? " " : "", ids[i]);
    printf("\n");
    return 0;
  }
  if (n == 0)
    return tfm_main_fail(argv[0], "the prompt is empty and the model has no BOS token "
                         "to start from (give at least one token)");
  /* Without a tokenizer the output can only be ids. */
  if (!o.print_ids && !desc->tokenizer)
    o.print_ids = 1;

  if (o.logits_path) {
    float *logits = malloc((size_t)(n * vocab) * sizeof *logits);
    if (!logits)
      return tfm_main_fail(argv[0], "out of memory");
    if (tfm_forward(model, ids, n, logits, &status))
      return tfm_main_fail(argv[0], status.message);
    if (!tfm_main_write_floats(o.logits_path, logits, (size_t)(n * vocab))) {
      fprintf(stderr, "%s: error: cannot write logits to '%s'\n", argv[0],
              o.logits_path);
      return 1;
    }
    free(logits);
  }

  stream_state stream = {o.print_ids, 0, NULL};
  if (o.step_logits_path && !(stream.step_logits = fopen(o.step_logits_path, "wb"))) {
    fprintf(stderr, "%s: error: cannot write '%s'\n", argv[0],
            o.step_logits_path);
    return 1;
  }
  tfm_session *session;
  if (tfm_session_new(model, &session, &status))
    return tfm_main_fail(argv[0], status.message);
  if (o.warmup > 0) {
    /* In the session that then generates: its cache and every buffer the
     * prefill uses are in place (and stay mapped) before the timed run. */
    float *logits = malloc((size_t)vocab * sizeof *logits);
    if (!logits)
      return tfm_main_fail(argv[0], "out of memory");
    for (long i = 0; i < o.warmup; ++i) {
      if (tfm_prefill(session, ids, n, logits, &status))
        return tfm_main_fail(argv[0], status.message);
      tfm_session_reset(session);
    }
    free(logits);
  }
  tfm_generate_options generate = {0};
  if (o.forced_tokens) {
    int32_t *forced = malloc((size_t)(context + 1) * sizeof *forced);
    long count = forced ? tfm_main_parse_ids(argv[0], "--force-tokens",
                                             o.forced_tokens, forced,
                                           context + 1)
                        : -1;
    if (count < 0)
      return 1;
    generate.forced_tokens = forced;
    generate.forced_count = count > context + 1 ? context + 1 : count;
  }
  generate.max_new_tokens = o.new_tokens;
  generate.sampler = o.sampler;
  generate.stop_strings = o.stop;
  generate.stop_string_count = o.stop_count;
  generate.ignore_eos = o.ignore_eos;
  generate.on_token = print_token;
  generate.on_logits = save_logits;
  generate.user = &stream;
  /* Echo the prompt's text before its continuation. */
  if (o.prompt && !o.print_ids)
    fputs(o.prompt, stdout);
  tfm_generate_result result;
  if (tfm_generate(session, ids, n, &generate, &result, &status))
    return tfm_main_fail(argv[0], status.message);
  fputc('\n', stdout);
  if (stream.step_logits)
    fclose(stream.step_logits);

  if (o.stats) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    /* The first new token comes from the prefill's logits. */
    double decoded = (double)result.generated_tokens;
    /* What the memory holds by design, beside the peak RSS: weights, the
     * KV cache, and the most the compiled code had allocated at once. */
    long long cache_bytes = 0;
    for (int32_t c = 0; c < desc->num_caches; ++c) {
      /* A batched cache ([sequences, ...], the first dimension dynamic)
       * is not this session's. */
      long long elements = 1;
      for (int32_t d = 0; d < desc->caches[c].rank; ++d)
        elements *= desc->caches[c].shape[d];
      if (elements > 0)
        cache_bytes += elements * (long long)sizeof(float);
    }
    fprintf(stderr,
            "{\"prompt_tokens\": %lld, \"generated_tokens\": %lld, "
            "\"prefill_seconds\": %.6f, \"decode_seconds\": %.6f, "
            "\"prefill_tokens_per_s\": %.3f, \"decode_tokens_per_s\": %.3f, "
            "\"peak_rss_bytes\": %lld, \"weights_bytes\": %lld, "
            "\"kv_cache_bytes\": %lld, \"activation_peak_bytes\": %lld, "
            "\"weight_bytes_per_token\": %lld}\n",
            (long long)result.prompt_tokens, (long long)result.generated_tokens,
            result.prefill_seconds, result.decode_seconds,
            result.prefill_seconds > 0
                ? (double)result.prompt_tokens / result.prefill_seconds
                : 0.0,
            result.decode_seconds > 0 ? decoded / result.decode_seconds : 0.0,
            (long long)usage.ru_maxrss * 1024,
            (long long)desc->weights_size, cache_bytes,
            (long long)tfm_buffer_peak_live_bytes(),
            (long long)desc->decode_weight_bytes);
  }
  tfm_session_free(session);
  tfm_model_free(model);
  free(ids);
  return 0;
}
