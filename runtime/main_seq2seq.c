/*===- main_seq2seq.c - the executable's encoder-decoder mode ------------===//
 *
 * `./translate --tokens "source ids" [-n N] [--step-logits FILE]`: encodes
 * the source once and generates the decoder's ids through
 * tfm_seq2seq_generate (greedy by default, the sampler options apply),
 * printing them, or the best of a beam search (--beams N, length penalty
 * 1, no early stopping: generate()'s defaults); --force-tokens feeds given
 * ids instead (through the caches, e.g. to check them against @forward).
 *Teacher forcing (--decoder-tokens) runs @forward through the generic mode
 *instead (main_call.c).
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/main_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* on_logits: each step's logits, appended to --step-logits. */
static void write_step_logits(void *user, const float *logits, int64_t vocab) {
  fwrite(logits, sizeof *logits, (size_t)vocab, (FILE *)user);
}

int tfm_main_seq2seq(const char *argv0, tfm_model *model,
                     const tfm_seq2seq_command *command) {
  if (!command->tokens) {
    fprintf(stderr,
            "%s: error: an encoder-decoder needs the source as --tokens "
            "\"ids\" (or --decoder-tokens for teacher forcing)\n",
            argv0);
    return 1;
  }
  long n = 0, forced = 0, suppressed = 0;
  int32_t *source =
      tfm_main_parse_id_list(argv0, "--tokens", command->tokens, &n);
  int32_t *forced_ids =
      source && command->forced_tokens
          ? tfm_main_parse_id_list(argv0, "--force-tokens",
                                   command->forced_tokens, &forced)
          : NULL;
  int32_t *suppressed_ids =
      source && command->suppress
          ? tfm_main_parse_id_list(argv0, "--suppress", command->suppress,
                                   &suppressed)
          : NULL;
  int ok = source && (forced_ids || !command->forced_tokens) &&
           (suppressed_ids || !command->suppress);
  if (ok && n == 0) {
    fprintf(stderr, "%s: error: --tokens is empty: no source to translate\n",
            argv0);
    ok = 0;
  }
  long steps = command->forced_tokens ? forced : command->new_tokens;
  tfm_generation_rules rules = command->rules;
  if (command->suppress) {
    rules.suppressed = suppressed_ids;
    rules.suppressed_count = (int32_t)suppressed;
  }
  int32_t *generated =
      ok ? malloc((size_t)(steps + 1) * sizeof *generated) : NULL;
  FILE *step_logits = NULL;
  if (ok && !generated) {
    fprintf(stderr, "%s: error: out of memory\n", argv0);
    ok = 0;
  }
  if (ok && command->step_logits_path &&
      !(step_logits = fopen(command->step_logits_path, "wb"))) {
    fprintf(stderr, "%s: error: cannot write '%s'\n", argv0,
            command->step_logits_path);
    ok = 0;
  }
  if (ok) {
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
    tfm_beam_options beam = {command->beams, steps, command->length_penalty,
                             command->early_stopping, &rules};
    tfm_status_code code =
        command->beams > 1 && !command->forced_tokens
            ? tfm_seq2seq_beam_search(model, source, n, &beam, generated,
                                      steps + 1, &count, &status)
            : tfm_seq2seq_generate_with_rules(model, source, n, &options,
                                              &rules, generated, steps + 1,
                                              &count, &status);
    if (code != TFM_OK) {
      fprintf(stderr, "%s: error: %s\n", argv0, status.message);
      ok = 0;
    }
    for (int64_t i = 0; ok && i < count; ++i)
      printf("%s%d", i ? " " : "", generated[i]);
    if (ok)
      printf("\n");
  }
  if (step_logits && fclose(step_logits) != 0 && ok) {
    fprintf(stderr, "%s: error: cannot write '%s'\n", argv0,
            command->step_logits_path);
    ok = 0;
  }
  free(source);
  free(forced_ids);
  free(suppressed_ids);
  free(generated);
  return ok ? 0 : 1;
}
