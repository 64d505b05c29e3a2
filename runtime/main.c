/*===- main.c - the command line of a compiled model executable ---------===//
 *
 * `./story --prompt "Once upon a time" -n 100`. Linked into every executable
 * tfmc builds, against the `tfm_builtin_model` description that tfmc
 * generates. Greedy decoding over the whole sequence each step (the KV cache
 * comes with the tfm-kv-cache pass).
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/tfm_runtime.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

extern const tfm_model_desc tfm_builtin_model;

typedef struct {
  const char *prompt;
  const char *prompt_file;
  int tokenize;
  const char *tokens;
  long new_tokens;
  int print_ids;
  const char *logits_path;
  int stats;
  const char *weights_path;
} options;

static void usage(FILE *out, const char *argv0) {
  fprintf(out,
          "usage: %s [options]\n"
          "  --prompt TEXT     text to continue (default: start from BOS)\n"
          "  --prompt-file F   read the prompt text from file F\n"
          "  --tokenize        print the prompt's token ids and exit\n"
          "  --tokens \"1 2 3\"  token ids to continue instead of a prompt\n"
          "  -n N              new tokens to generate (default 128)\n"
          "  --print-ids       print generated token ids instead of text\n"
          "  --logits FILE     write the logits of every prompt position as\n"
          "                    little-endian f32 [positions, vocab]\n"
          "  --stats           print timing and memory as JSON to stderr\n"
          "  --weights FILE    weights side file (overrides the default)\n",
          argv0);
}

static int fail(const char *argv0, const char *message) {
  fprintf(stderr, "%s: error: %s\n", argv0, message);
  return 1;
}

static int parse_options(int argc, char **argv, options *o) {
  memset(o, 0, sizeof *o);
  o->new_tokens = 128;
  for (int i = 1; i < argc; ++i) {
    const char *arg = argv[i];
    int has_value = i + 1 < argc;
    if (!strcmp(arg, "--help") || !strcmp(arg, "-h")) {
      usage(stdout, argv[0]);
      exit(0);
    } else if (!strcmp(arg, "--print-ids")) {
      o->print_ids = 1;
    } else if (!strcmp(arg, "--tokenize")) {
      o->tokenize = 1;
    } else if (!strcmp(arg, "--stats")) {
      o->stats = 1;
    } else if (has_value && !strcmp(arg, "--prompt")) {
      o->prompt = argv[++i];
    } else if (has_value && !strcmp(arg, "--prompt-file")) {
      o->prompt_file = argv[++i];
    } else if (has_value && !strcmp(arg, "--tokens")) {
      o->tokens = argv[++i];
    } else if (has_value && !strcmp(arg, "--logits")) {
      o->logits_path = argv[++i];
    } else if (has_value && !strcmp(arg, "--weights")) {
      o->weights_path = argv[++i];
    } else if (has_value && !strcmp(arg, "-n")) {
      char *end;
      errno = 0;
      o->new_tokens = strtol(argv[++i], &end, 10);
      if (errno || *end || o->new_tokens < 0) {
        fprintf(stderr, "%s: error: -n expects a non-negative integer, got '%s'\n",
                argv[0], argv[i]);
        return 0;
      }
    } else {
      fprintf(stderr, "%s: error: unknown or incomplete option '%s'\n",
              argv[0], arg);
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

/* Parses "1 2 3" into ids; returns the count or -1 after reporting. */
static long parse_token_list(const char *argv0, const char *text,
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
      fprintf(stderr, "%s: error: --tokens: '%s' is not a token id (at offset %ld)\n",
              argv0, at, (long)(at - text));
      return -1;
    }
    if (n < capacity)
      ids[n] = (int32_t)value;
    ++n;
    at = end;
  }
}

/* Reads a whole file into a NUL-terminated string, or NULL. */
static char *read_text_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f)
    return NULL;
  size_t capacity = 4096, size = 0;
  char *text = malloc(capacity);
  size_t n;
  while (text && (n = fread(text + size, 1, capacity - size - 1, f)) > 0) {
    size += n;
    if (size + 1 == capacity) {
      char *grown = realloc(text, capacity *= 2);
      if (!grown)
        free(text);
      text = grown;
    }
  }
  fclose(f);
  if (text)
    text[size] = '\0';
  return text;
}

static double now_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
  options o;
  if (!parse_options(argc, argv, &o))
    return 2;
  tfm_status status;
  tfm_model *model;
  if (tfm_model_load(&tfm_builtin_model, o.weights_path, &model, &status))
    return fail(argv[0], status.message);
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  int64_t context = desc->max_context, vocab = desc->vocab_size;

  /* The prompt: ids, text, or BOS alone. */
  if (o.prompt_file && !(o.prompt = read_text_file(o.prompt_file))) {
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
  float *logits = NULL;
  int64_t n = 0;
  tfm_tokenizer *tokenizer = NULL;
  if (!o.print_ids && !o.tokenize) {
    tokenizer = tfm_model_tokenizer(model, &status);
    if (!tokenizer)
      return fail(argv[0], status.message);
  }
  if (o.tokens) {
    n = parse_token_list(argv[0], o.tokens, ids, capacity);
    if (n < 0)
      return 1;
  } else if (o.prompt) {
    if (!tokenizer && !(tokenizer = tfm_model_tokenizer(model, &status)))
      return fail(argv[0], status.message);
    int32_t bos = desc->add_bos ? desc->bos_token : -1;
    if (tfm_tokenizer_encode(tokenizer, o.prompt, bos, ids, capacity, &n,
                             &status))
      return fail(argv[0], status.message);
    if (o.tokenize) {
      for (int64_t i = 0; i < n; ++i)
        printf("%s%d", i ? " " : "", ids[i]);
      printf("\n");
      return 0;
    }
  } else if (desc->bos_token >= 0) {
    ids[n++] = desc->bos_token;
  }
  if (n == 0)
    return fail(argv[0], "the prompt is empty and the model has no BOS token");
  if (n + o.new_tokens > context) {
    char message[256];
    snprintf(message, sizeof message,
             "the prompt (%lld tokens) plus -n %ld exceeds the maximum "
             "context of %lld",
             (long long)n, o.new_tokens, (long long)context);
    return fail(argv[0], message);
  }

  logits = malloc((size_t)(n + o.new_tokens) * (size_t)vocab * sizeof *logits);
  if (!ids || !logits)
    return fail(argv[0], "out of memory");
  double start = now_seconds();
  if (tfm_forward(model, ids, n, logits, &status))
    return fail(argv[0], status.message);
  double prefill_seconds = now_seconds() - start;
  if (o.logits_path) {
    FILE *f = fopen(o.logits_path, "wb");
    if (!f || fwrite(logits, sizeof *logits, (size_t)(n * vocab), f) !=
                  (size_t)(n * vocab)) {
      fprintf(stderr, "%s: error: cannot write logits to '%s'\n", argv[0],
              o.logits_path);
      return 1;
    }
    fclose(f);
  }

  /* Greedy generation, streaming each token as it is chosen after the
   * prompt's own text. */
  int64_t prompt_length = n;
  if (o.prompt && !o.print_ids)
    fputs(o.prompt, stdout);
  double decode_start = now_seconds();
  for (long step = 0; step < o.new_tokens; ++step) {
    if (step > 0 && tfm_forward(model, ids, n, logits, &status))
      return fail(argv[0], status.message);
    int32_t next = tfm_argmax(logits + (n - 1) * vocab, vocab);
    int32_t previous = ids[n - 1];
    ids[n++] = next;
    if (o.print_ids) {
      printf("%s%d", step ? " " : "", next);
    } else if (next != desc->bos_token && next != desc->eos_token) {
      size_t size;
      const char *piece = tfm_tokenizer_decode(tokenizer, previous, next,
                                               desc->bos_token, &size);
      if (piece)
        fwrite(piece, 1, size, stdout);
    } else if (next == desc->bos_token) {
      fputc('\n', stdout);
    }
    fflush(stdout);
    if (next == desc->eos_token)
      break;
  }
  fputc('\n', stdout);
  double decode_seconds = now_seconds() - decode_start;
  int64_t generated = n - prompt_length;

  if (o.stats) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    /* The first generated token comes from the prefill's logits. */
    double decode_rate =
        generated > 1 && decode_seconds > 0
            ? (double)(generated - 1) / decode_seconds
            : 0.0;
    fprintf(stderr,
            "{\"prompt_tokens\": %lld, \"generated_tokens\": %lld, "
            "\"prefill_tokens_per_s\": %.3f, \"decode_tokens_per_s\": %.3f, "
            "\"peak_rss_bytes\": %lld}\n",
            (long long)prompt_length, (long long)generated,
            prefill_seconds > 0 ? (double)prompt_length / prefill_seconds : 0.0,
            decode_rate, (long long)usage.ru_maxrss * 1024);
  }
  free(logits);
  free(ids);
  tfm_model_free(model);
  return 0;
}
