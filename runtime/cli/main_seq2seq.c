/*===- main_seq2seq.c - the executable's encoder-decoder mode ------------===//
 *
 * `./translate --text "..." [-n N] [--beams N]` (or --text-file, one source
 * per line, or --tokens "source ids"): encodes each source once and
 * generates the decoder's ids through tfm_seq2seq_generate (greedy by
 * default, the sampler options apply) or the best of a beam search
 * (--beams N, length penalty 1, no early stopping: generate()'s defaults);
 * prints the decoded text, as decode(skip_special_tokens=True) spells it
 * before clean_up_tokenization, or the ids (--print-ids, or a model
 * compiled without a tokenizer); --tokenize prints each source's ids
 * instead of translating; --previous-text conditions a Whisper transcript
 * on the text before it. --force-tokens feeds given ids instead
 * (through the caches, e.g. to check them against @forward, whose
 * logits --step-logits writes). Teacher forcing (--decoder-tokens) runs
 * @forward through the generic mode instead (main_call.c).
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/cli/main_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* on_logits: each step's logits, appended to --step-logits. */
static void write_step_logits(void *user, const float *logits, int64_t vocab) {
  fwrite(logits, sizeof *logits, (size_t)vocab, (FILE *)user);
}

/* The source ids of `text` as the tokenizer frames a source (T5, Marian:
 * text </s>; BART: <s> text </s>), or NULL after reporting why not. */
static int32_t *encode_source(const char *argv0, const tfm_tokenizer *tokenizer,
                              const char *text, const char *where, long *n) {
  if (!*text) {
    fprintf(stderr, "%s: error: %s is empty: no source to translate\n", argv0,
            where);
    return NULL;
  }
  tfm_status status;
  int64_t count = 0;
  if (tfm_tokenizer_encode_text(tokenizer, text, NULL, NULL, NULL, 0, &count,
                                &status) != TFM_OK) {
    fprintf(stderr, "%s: error: %s: %s\n", argv0, where, status.message);
    return NULL;
  }
  int32_t *ids = malloc((size_t)(count + 1) * sizeof *ids);
  if (!ids ||
      tfm_tokenizer_encode_text(tokenizer, text, NULL, ids, NULL, count,
                                &count, &status) != TFM_OK) {
    fprintf(stderr, "%s: error: %s: %s\n", argv0, where,
            ids ? status.message : "out of memory");
    free(ids);
    return NULL;
  }
  *n = (long)count;
  return ids;
}

/* Prints generated ids, or their text (tfm_seq2seq_decode_text: special
 * tokens such as </s>, <pad> and sentinels skipped, the decoder start token
 * counting as the SentencePiece BOS whose following space is dropped); 0
 * after reporting an error. */
static int print_output(const char *argv0, const tfm_model *model,
                        const tfm_tokenizer *tokenizer, const int32_t *ids,
                        int64_t count) {
  if (!tokenizer) {
    for (int64_t i = 0; i < count; ++i)
      printf("%s%d", i ? " " : "", ids[i]);
    printf("\n");
    return 1;
  }
  char *text = NULL;
  size_t length = 0;
  tfm_status status;
  if (tfm_seq2seq_decode_text(model, tokenizer, ids, count, &text, &length,
                              &status) != TFM_OK) {
    fprintf(stderr, "%s: error: %s\n", argv0, status.message);
    return 0;
  }
  fwrite(text, 1, length, stdout);
  printf("\n");
  free(text);
  return 1;
}

/* Generates from one source and prints the result; 0 after reporting an
 * error. */
static int translate(const char *argv0, tfm_model *model,
                     const tfm_seq2seq_command *command,
                     const tfm_tokenizer *output_tokenizer,
                     const tfm_tensor *source, const int32_t *forced_ids,
                     long forced, const tfm_generation_rules *rules,
                     FILE *step_logits) {
  long steps = command->forced_tokens
                   ? forced
                   : command->new_tokens + rules->prompt_count;
  int32_t *generated = malloc((size_t)(steps + 1) * sizeof *generated);
  if (!generated) {
    fprintf(stderr, "%s: error: out of memory\n", argv0);
    return 0;
  }
  tfm_generate_options options;
  memset(&options, 0, sizeof options);
  options.max_new_tokens = command->new_tokens;
  options.sampler = command->sampler;
  options.ignore_eos = command->ignore_eos;
  options.forced_tokens = command->forced_tokens ? forced_ids : NULL;
  options.forced_count = forced;
  options.on_logits = step_logits ? write_step_logits : NULL;
  options.user = step_logits;
  int64_t count = 0;
  tfm_status status;
  tfm_beam_options beam = {command->beams, command->new_tokens,
                           command->length_penalty, command->early_stopping,
                           rules};
  tfm_status_code code =
      command->beams > 1 && !command->forced_tokens
          ? tfm_seq2seq_beam_search_from(model, source, &beam, generated,
                                         steps + 1, &count, &status)
          : tfm_seq2seq_generate_from(model, source, &options, rules,
                                      generated, steps + 1, &count, &status);
  int ok = code == TFM_OK;
  if (!ok)
    fprintf(stderr, "%s: error: %s\n", argv0, status.message);
  else
    ok = print_output(argv0, model, output_tokenizer, generated, count);
  free(generated);
  return ok;
}

/* A speech model: translate() from --features (raw log-mel features) or
 * from each audio file in turn (tfm_audio_load), or with --preprocess the
 * audio's features written to --output. */
static int transcribe(const char *argv0, tfm_model *model,
                      const tfm_seq2seq_command *command,
                      const tfm_tokenizer *output_tokenizer,
                      const int32_t *forced_ids, long forced,
                      const tfm_generation_rules *rules, FILE *step_logits) {
  const tfm_entry_point *encode = tfm_model_entry_point(model, "encode");
  const tfm_tensor_desc *desc = &encode->inputs[0];
  if (desc->dtype != TFM_DTYPE_F32) {
    fprintf(stderr, "%s: error: model '%s' takes text, not audio\n", argv0,
            tfm_model_get_desc(model)->name);
    return 0;
  }
  tfm_tensor source = {NULL, TFM_DTYPE_F32, desc->rank, {0}, NULL};
  memcpy(source.shape, desc->shape, sizeof source.shape);
  int64_t count = 1;
  for (int32_t d = 0; d < desc->rank; ++d)
    count *= desc->shape[d];
  FILE *raw = NULL;
  if (command->preprocess &&
      !(raw = fopen(command->output_path ? command->output_path : "/dev/stdout",
                    "wb"))) {
    fprintf(stderr, "%s: error: cannot write '%s'\n", argv0,
            command->output_path);
    return 0;
  }
  int ok = 1;
  for (int i = 0; ok && i < (command->features ? 1 : command->audio_count);
       ++i) {
    float *features = NULL;
    if (command->features) {
      features = tfm_main_read_features(argv0, encode, command->features);
    } else if (!tfm_audio_load) {
      /* Linked without audio decoding: the model has no audio preprocessing
       * (main_internal.h), as tfm_audio_load would say. */
      fprintf(stderr, "%s: error: " TFM_NO_AUDIO_PREPROCESSING "\n", argv0,
              tfm_model_get_desc(model)->name);
    } else if ((features = malloc((size_t)count * sizeof *features))) {
      tfm_status status;
      if (tfm_audio_load(model, command->audio[i], features, count,
                         &status) != TFM_OK) {
        fprintf(stderr, "%s: error: %s\n", argv0, status.message);
        free(features);
        features = NULL;
      }
    }
    source.data = features;
    ok = features != NULL;
    if (ok && raw)
      ok = fwrite(features, sizeof *features, (size_t)count, raw) ==
           (size_t)count;
    else if (ok)
      ok = translate(argv0, model, command, output_tokenizer, &source,
                     forced_ids, forced, rules, step_logits);
    free(features);
  }
  if (raw && fclose(raw) != 0 && ok) {
    fprintf(stderr, "%s: error: cannot write '%s'\n", argv0,
            command->output_path);
    ok = 0;
  }
  return ok;
}

int tfm_main_seq2seq(const char *argv0, tfm_model *model,
                     const tfm_seq2seq_command *command) {
  int sources = !!command->tokens + !!command->text + !!command->text_file +
                !!command->features + !!command->audio_count;
  if (sources != 1) {
    fprintf(stderr,
            "%s: error: an encoder-decoder needs one source: --text, "
            "--text-file, --tokens \"ids\", --features FILE or audio files "
            "(or --decoder-tokens for teacher forcing)\n",
            argv0);
    return 1;
  }
  tfm_status status;
  const tfm_tokenizer *tokenizer = NULL;
  int given_ids = command->tokens || command->features || command->audio_count;
  if (!given_ids || !command->print_ids) {
    tokenizer = tfm_model_tokenizer(model, &status);
    if (!tokenizer && !given_ids) {
      fprintf(stderr, "%s: error: %s (give the source as --tokens \"ids\")\n",
              argv0, status.message);
      return 1;
    }
  }
  long forced = 0, suppressed = 0;
  int32_t *forced_ids =
      command->forced_tokens
          ? tfm_main_parse_id_list(argv0, "--force-tokens",
                                   command->forced_tokens, &forced)
          : NULL;
  int32_t *suppressed_ids =
      command->suppress ? tfm_main_parse_id_list(argv0, "--suppress",
                                                 command->suppress, &suppressed)
                        : NULL;
  int ok = (forced_ids || !command->forced_tokens) &&
           (suppressed_ids || !command->suppress);
  tfm_generation_rules rules = command->rules;
  if (command->suppress) {
    rules.suppressed = suppressed_ids;
    rules.suppressed_count = (int32_t)suppressed;
  }
  int32_t *previous_ids = NULL;
  if (ok && command->previous_text) {
    if (tfm_seq2seq_previous_text(model, command->previous_text, &previous_ids,
                                  &rules.previous_count, &status) != TFM_OK) {
      fprintf(stderr, "%s: error: --previous-text: %s\n", argv0,
              status.message);
      ok = 0;
    }
    rules.previous = previous_ids;
  }
  FILE *step_logits = NULL;
  if (ok && command->step_logits_path &&
      !(step_logits = fopen(command->step_logits_path, "wb"))) {
    fprintf(stderr, "%s: error: cannot write '%s'\n", argv0,
            command->step_logits_path);
    ok = 0;
  }
  char *file = NULL;
  if (ok && command->text_file &&
      !(file = tfm_main_read_text_file(command->text_file))) {
    fprintf(stderr, "%s: error: cannot read '%s'\n", argv0, command->text_file);
    ok = 0;
  }
  if (ok && file && !*file) {
    fprintf(stderr, "%s: error: --text-file '%s' is empty: no sources\n",
            argv0, command->text_file);
    ok = 0;
  }
  const tfm_tokenizer *output = command->print_ids ? NULL : tokenizer;
  /* One source, or each line of --text-file in turn. */
  char *line = file, where[64];
  for (long number = 1; ok; ++number) {
    long n = 0;
    int32_t *source = NULL;
    if (command->features || command->audio_count) {
      ok = ok && transcribe(argv0, model, command, output, forced_ids, forced,
                            &rules, step_logits);
      break;
    }
    if (command->tokens) {
      source = tfm_main_parse_id_list(argv0, "--tokens", command->tokens, &n);
      if (source && n == 0) {
        fprintf(stderr, "%s: error: --tokens is empty: no source to translate\n",
                argv0);
        ok = 0;
      }
    } else {
      const char *text = command->text;
      snprintf(where, sizeof where, "--text");
      if (file) {
        char *end = strchr(line, '\n');
        if (end)
          *end = '\0';
        text = line;
        line = end ? end + 1 : line + strlen(line);
        snprintf(where, sizeof where, "line %ld of --text-file", number);
      }
      source = encode_source(argv0, tokenizer, text, where, &n);
    }
    tfm_tensor ids = {source, TFM_DTYPE_I32, 1, {n}, NULL};
    if (ok && source && command->tokenize)
      print_output(argv0, model, NULL, source, n);
    else
      ok = ok && source &&
           translate(argv0, model, command, output, &ids, forced_ids, forced,
                     &rules, step_logits);
    free(source);
    if (!file || !*line)
      break;
  }
  if (step_logits && fclose(step_logits) != 0 && ok) {
    fprintf(stderr, "%s: error: cannot write '%s'\n", argv0,
            command->step_logits_path);
    ok = 0;
  }
  free(file);
  free(forced_ids);
  free(suppressed_ids);
  free(previous_ids);
  return ok ? 0 : 1;
}
