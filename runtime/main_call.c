/*===- main_call.c - the executable's generic mode: any entry point -------===//
 *
 * `./model --call encode --tokens "101 7592 102" [--token-types "0 0 0"]
 * [--output FILE]`: the inputs an entry point describes come from the
 * command line by their role, the call goes through tfm_model_call (which
 * checks shapes, ranges and the context), and the f32 output is written
 * raw (little endian, row-major) or printed one row per line after its
 * shape; a classifier's logits are printed as class names and
 * probabilities. Models without a language-model entry point (encoders) run this
 * mode with their first entry point when no --call is given.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/main_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *role_name(int32_t role) {
  switch (role) {
  case TFM_ROLE_TOKEN_IDS:
    return "token ids (--tokens)";
  case TFM_ROLE_TOKEN_TYPE_IDS:
    return "token types (--token-types)";
  case TFM_ROLE_FEATURES:
    return "features";
  case TFM_ROLE_START_POSITION:
    return "a start position";
  case TFM_ROLE_CACHE_SLOT:
    return "a cache slot";
  default:
    return "an input";
  }
}

/* Softmax of `n` logits into `p`. */
static void softmax(const float *logits, int64_t n, double *p) {
  double max = logits[0], sum = 0;
  for (int64_t i = 1; i < n; ++i)
    if (logits[i] > max)
      max = logits[i];
  for (int64_t i = 0; i < n; ++i)
    sum += p[i] = exp(logits[i] - max);
  for (int64_t i = 0; i < n; ++i)
    p[i] /= sum;
}

/* A classifier's logits by class name: per sequence, the five most likely
 * classes with their probabilities; per token, each token's best class. */
static int print_labels(const char *name, const tfm_model_desc *desc,
                        const tfm_tensor *out) {
  int64_t n = desc->num_labels, rows = out->rank == 2 ? out->shape[0] : 1;
  double *p = malloc((size_t)n * sizeof *p);
  if (!p)
    return 0;
  printf("@%s: %s\n", name, out->rank == 2 ? "class of each token"
                                           : "most likely classes");
  const float *logits = out->data;
  for (int64_t r = 0; r < rows; ++r) {
    softmax(logits + r * n, n, p);
    for (int shown = 0; shown < (out->rank == 2 ? 1 : 5) && shown < n;
         ++shown) {
      int64_t best = 0;
      for (int64_t i = 1; i < n; ++i)
        if (p[i] > p[best])
          best = i;
      if (out->rank == 2)
        printf("%lld\t%s\t%.4f\n", (long long)r, desc->labels[best], p[best]);
      else
        printf("%s\t%.4f\n", desc->labels[best], p[best]);
      p[best] = -1;
    }
  }
  free(p);
  return 1;
}

static void print_output(const char *name, const tfm_tensor *out) {
  int64_t columns = out->rank ? out->shape[out->rank - 1] : 1, count = 1;
  printf("@%s: [", name);
  for (int32_t d = 0; d < out->rank; ++d) {
    printf("%s%lld", d ? ", " : "", (long long)out->shape[d]);
    count *= out->shape[d];
  }
  printf("]\n");
  const float *values = out->data;
  for (int64_t i = 0; i < count; ++i)
    printf("%.6g%c", values[i], (i + 1) % columns == 0 ? '\n' : ' ');
}

int tfm_main_call(const char *argv0, tfm_model *model, const char *name,
                  const char *tokens, const char *token_types,
                  const char *output_path) {
  const tfm_entry_point *entry = tfm_model_entry_point(model, name);
  if (!entry) {
    fprintf(stderr, "%s: error: the model has no entry point @%s\n", argv0,
            name);
    return 1;
  }
  if (entry->num_caches > 0 || entry->num_outputs != 1) {
    fprintf(stderr,
            "%s: error: @%s keeps a cache or has several outputs: run it "
            "through the library (tfm_model_call)\n",
            argv0, name);
    return 1;
  }
  /* Ids and types: as many as given, the types zeros by default. */
  long count = tokens ? tfm_main_parse_ids(argv0, "--tokens", tokens, NULL, 0)
                      : 0;
  if (count < 0)
    return 1;
  if (count == 0) {
    fprintf(stderr, "%s: error: @%s needs token ids (--tokens)\n", argv0,
            name);
    return 1;
  }
  int32_t *ids = calloc((size_t)count, sizeof *ids);
  int32_t *types = calloc((size_t)count, sizeof *types);
  if (!ids || !types) {
    fprintf(stderr, "%s: error: out of memory\n", argv0);
    return 1;
  }
  tfm_main_parse_ids(argv0, "--tokens", tokens, ids, count);
  if (token_types) {
    long n = tfm_main_parse_ids(argv0, "--token-types", token_types, types,
                                count);
    if (n < 0)
      return 1;
    if (n != count) {
      fprintf(stderr,
              "%s: error: --token-types has %ld values for %ld tokens\n",
              argv0, n, count);
      return 1;
    }
  }
  tfm_tensor inputs[8];
  if (entry->num_inputs > 8) {
    fprintf(stderr, "%s: error: @%s has %d inputs\n", argv0, name,
            entry->num_inputs);
    return 1;
  }
  int takes_types = 0;
  for (int32_t i = 0; i < entry->num_inputs; ++i) {
    int32_t role = entry->inputs[i].role;
    takes_types |= role == TFM_ROLE_TOKEN_TYPE_IDS;
    if (role != TFM_ROLE_TOKEN_IDS && role != TFM_ROLE_TOKEN_TYPE_IDS) {
      fprintf(stderr,
              "%s: error: input %d of @%s is %s, which the command line "
              "cannot give\n",
              argv0, i, name, role_name(role));
      return 1;
    }
    inputs[i] = (tfm_tensor){role == TFM_ROLE_TOKEN_IDS ? ids : types,
                             TFM_DTYPE_I32, 1, {count}, NULL};
  }
  if (token_types && !takes_types) {
    fprintf(stderr, "%s: error: @%s takes no token types\n", argv0, name);
    return 1;
  }
  tfm_tensor output;
  tfm_status status;
  if (tfm_model_call(model, name, inputs, entry->num_inputs, NULL, &output, 1,
                     &status) != TFM_OK) {
    fprintf(stderr, "%s: error: %s\n", argv0, status.message);
    return 1;
  }
  int64_t values = 1;
  for (int32_t d = 0; d < output.rank; ++d)
    values *= output.shape[d];
  int ok = 1;
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  int labelled = entry->outputs[0].role == TFM_ROLE_LOGITS &&
                 desc->num_labels > 0 && output.rank >= 1 &&
                 output.rank <= 2 &&
                 output.shape[output.rank - 1] == desc->num_labels;
  if (output_path)
    ok = tfm_main_write_floats(output_path, output.data, (size_t)values);
  else if (!labelled || !print_labels(name, desc, &output))
    print_output(name, &output);
  tfm_tensor_release(&output);
  free(ids);
  free(types);
  if (!ok) {
    fprintf(stderr, "%s: error: cannot write '%s'\n", argv0, output_path);
    return 1;
  }
  return 0;
}
