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

#include "runtime/cli/main_internal.h"

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
  case TFM_ROLE_DECODER_TOKEN_IDS:
    return "decoder token ids (--decoder-tokens)";
  case TFM_ROLE_FEATURES:
    return "pixels or features (--pixels)";
  case TFM_ROLE_START_POSITION:
    return "a start position";
  case TFM_ROLE_CACHE_SLOT:
    return "a cache slot";
  case TFM_ROLE_GLOBAL_ATTENTION:
    return "a global attention mask (--global-attention)";
  case TFM_ROLE_SEQUENCE_LENGTHS:
    return "sequence lengths (run @NAME with --text-file: its lines are "
           "packed)";
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

/* One input of the call: ids and token types (zeros by default), and an
 * encoder-decoder's decoder ids. */
typedef struct {
  int32_t *ids, *types, *decoder_ids;
  /* --global-attention's mask; NULL: no global token. */
  int32_t *globals;
  long count, decoder_count;
  float *features; /* --pixels: the features input, of its static shape */
  /* IMAGE...: the file and its number from 1, for the heading of its
   * output when there are several. */
  const char *image;
  long number;
} call_input;

static void free_input(call_input *in) {
  free(in->ids);
  free(in->types);
  free(in->decoder_ids);
  free(in->globals);
  free(in->features);
  in->ids = in->types = in->decoder_ids = in->globals = NULL;
  in->features = NULL;
}

/* The entry point's features input (an image model's pixels), or NULL. */
static const tfm_tensor_desc *features_input(const tfm_entry_point *entry) {
  for (int32_t i = 0; i < entry->num_inputs; ++i)
    if (entry->inputs[i].role == TFM_ROLE_FEATURES)
      return &entry->inputs[i];
  return NULL;
}

static int64_t element_count(const int64_t *shape, int32_t rank) {
  int64_t count = 1;
  for (int32_t d = 0; d < rank; ++d)
    count *= shape[d];
  return count;
}

/* Writes `tensor`'s floats to `raw` (--output, --format f32). */
static int write_raw(const char *argv0, const tfm_tensor *tensor, FILE *raw) {
  size_t values = (size_t)element_count(tensor->shape, tensor->rank);
  if (fwrite(tensor->data, sizeof(float), values, raw) == values)
    return 1;
  fprintf(stderr, "%s: error: cannot write the output\n", argv0);
  return 0;
}

float *tfm_main_read_f32_file(const char *argv0, const char *path,
                              const int64_t *shape, int32_t rank,
                              const char *what) {
  size_t count = (size_t)element_count(shape, rank);
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "%s: error: cannot read '%s'\n", argv0, path);
    return NULL;
  }
  float *features = malloc(count * sizeof *features + 1);
  size_t got = features ? fread(features, 1, count * 4 + 1, f) : 0;
  fclose(f);
  if (got != count * 4) {
    fprintf(stderr, "%s: error: '%s' has %s%zu bytes; %s f32 [", argv0, path,
            got > count * 4 ? "more than " : "",
            got > count * 4 ? count * 4 : got, what);
    for (int32_t d = 0; d < rank; ++d)
      fprintf(stderr, "%s%lld", d ? ", " : "", (long long)shape[d]);
    fprintf(stderr, "] (%zu bytes)\n", count * 4);
    free(features);
    return NULL;
  }
  return features;
}

/* --pixels FILE: raw little-endian f32 of exactly the features input's
 * static shape (vision: [channels, height, width], preprocessed). */
float *tfm_main_read_features(const char *argv0, const tfm_entry_point *entry,
                              const char *path) {
  const tfm_tensor_desc *desc = features_input(entry);
  if (!desc) {
    fprintf(stderr, "%s: error: @%s takes no features\n", argv0, entry->name);
    return NULL;
  }
  char what[160];
  snprintf(what, sizeof what, "@%s takes", entry->name);
  return tfm_main_read_f32_file(argv0, path, desc->shape, desc->rank, what);
}

static int input_from_pixels(const char *argv0, const tfm_entry_point *entry,
                             const char *path, call_input *in) {
  in->features = tfm_main_read_features(argv0, entry, path);
  return in->features != NULL;
}

/* An image file through the model's preprocessing (tfm_image_load), or
 * an audio classifier's audio file through its filterbank
 * (tfm_audio_load). */
static int input_from_image(const char *argv0, tfm_model *model,
                            const tfm_entry_point *entry, const char *path,
                            call_input *in) {
  const tfm_tensor_desc *desc = features_input(entry);
  int64_t count = element_count(desc->shape, desc->rank);
  in->features = malloc((size_t)count * sizeof *in->features);
  tfm_status status;
  if (!in->features) {
    fprintf(stderr, "%s: error: out of memory\n", argv0);
    return 0;
  }
  if (tfm_model_get_desc(model)->audio_preprocessing) {
    if (!tfm_audio_load) {
      fprintf(stderr, "%s: error: %s: " TFM_NO_AUDIO_PREPROCESSING "\n",
              argv0, path, tfm_model_get_desc(model)->name);
      return 0;
    }
    if (tfm_audio_load(model, path, in->features, count, &status) != TFM_OK) {
      fprintf(stderr, "%s: error: %s\n", argv0, status.message);
      return 0;
    }
    return 1;
  }
  if (!tfm_image_load) {
    /* tfmc links image decoding into every model with image preprocessing
     * (main_internal.h); this one has none, as tfm_image_load would say. */
    fprintf(stderr, "%s: error: %s: " TFM_NO_IMAGE_PREPROCESSING "\n", argv0,
            path, tfm_model_get_desc(model)->name);
    return 0;
  }
  if (tfm_image_load(model, path, in->features, count, &status) != TFM_OK) {
    fprintf(stderr, "%s: error: %s\n", argv0, status.message);
    return 0;
  }
  return 1;
}

/* Whether the features input is a waveform (a speech model's samples, of
 * any count) rather than an image of a fixed shape. */
static int takes_waveform(const tfm_tensor_desc *features) {
  return features && features->rank == 1 && features->shape[0] < 0;
}

/* An audio file, read whole at the model's rate (tfm_audio_read). */
static int input_from_audio(const char *argv0, tfm_model *model,
                            const char *path, call_input *in) {
  if (!tfm_audio_read) {
    fprintf(stderr, "%s: error: %s: " TFM_NO_AUDIO_PREPROCESSING "\n", argv0,
            path, tfm_model_get_desc(model)->name);
    return 0;
  }
  tfm_status status;
  int64_t n = 0;
  if (tfm_audio_read(model, path, &in->features, &n, &status) != TFM_OK) {
    fprintf(stderr, "%s: error: %s\n", argv0, status.message);
    return 0;
  }
  in->count = (long)n;
  return 1;
}

/* `option`'s list, one value for each of the `count` tokens, into
 * `values`; 0 after reporting an error. */
static int per_token_values(const char *argv0, const char *option,
                            const char *list, int32_t *values, long count) {
  long n = tfm_main_parse_ids(argv0, option, list, values, count);
  if (n < 0)
    return 0;
  if (n != count) {
    fprintf(stderr, "%s: error: %s has %ld values for %ld tokens\n", argv0,
            option, n, count);
    return 0;
  }
  return 1;
}

/* --tokens, --token-types, --global-attention. */
static int input_from_ids(const char *argv0, const tfm_call_options *o,
                          call_input *in) {
  long count = tfm_main_parse_ids(argv0, "--tokens", o->tokens, NULL, 0);
  if (count < 0)
    return 0;
  in->ids = calloc((size_t)count + 1, sizeof *in->ids);
  in->types = calloc((size_t)count + 1, sizeof *in->types);
  if (!in->ids || !in->types) {
    fprintf(stderr, "%s: error: out of memory\n", argv0);
    return 0;
  }
  in->count = tfm_main_parse_ids(argv0, "--tokens", o->tokens, in->ids, count);
  if (o->token_types &&
      !per_token_values(argv0, "--token-types", o->token_types, in->types,
                        count))
    return 0;
  if (o->global_attention) {
    in->globals = calloc((size_t)count + 1, sizeof *in->globals);
    if (!in->globals) {
      fprintf(stderr, "%s: error: out of memory\n", argv0);
      return 0;
    }
    if (!per_token_values(argv0, "--global-attention", o->global_attention,
                          in->globals, count))
      return 0;
  }
  return 1;
}

/* --decoder-tokens, for an encoder-decoder. */
static int decoder_input_from_ids(const char *argv0,
                                  const tfm_call_options *o, call_input *in) {
  in->decoder_ids = tfm_main_parse_id_list(argv0, "--decoder-tokens",
                                           o->decoder_tokens,
                                           &in->decoder_count);
  return in->decoder_ids != NULL;
}

/* Text through the model's tokenizer, framed as the encoder expects; past
 * the context it is an error, or with --truncate cut at the end (the last
 * separator kept; for a pair, the longer segment first, as transformers'
 * "longest_first"). */
static int input_from_text(const char *argv0, const tfm_call_options *o,
                           tfm_tokenizer *tokenizer, int64_t context,
                           const char *text, const char *where,
                           call_input *in) {
  tfm_status status;
  int64_t count = 0;
  if (tfm_tokenizer_encode_text(tokenizer, text, o->text_pair, NULL, NULL, 0,
                                &count, &status) != TFM_OK) {
    fprintf(stderr, "%s: error: %s: %s\n", argv0, where, status.message);
    return 0;
  }
  in->ids = malloc((size_t)count * sizeof *in->ids);
  in->types = malloc((size_t)count * sizeof *in->types);
  if (!in->ids || !in->types) {
    fprintf(stderr, "%s: error: out of memory\n", argv0);
    return 0;
  }
  tfm_tokenizer_encode_text(tokenizer, text, o->text_pair, in->ids, in->types,
                            count, &count, &status);
  in->count = (long)count;
  if (context <= 0 || count <= context)
    return 1;
  if (!o->truncate) {
    fprintf(stderr,
            "%s: error: %s is %lld tokens, more than the model's %lld "
            "positions (--truncate cuts it to fit)\n",
            argv0, where, (long long)count, (long long)context);
    return 0;
  }
  /* The segments' lengths: [CLS] A [SEP] (separators) B [SEP]. */
  int64_t first_alone = 0, second_alone = 2;
  tfm_tokenizer_encode_text(tokenizer, text, NULL, NULL, NULL, 0, &first_alone,
                            &status);
  if (o->text_pair)
    tfm_tokenizer_encode_text(tokenizer, o->text_pair, NULL, NULL, NULL, 0,
                              &second_alone, &status);
  /* [CLS] A, then T1 = [SEP] (and a pair's extra separators), B, then T2
   * = a pair's last [SEP]. */
  long a0 = (long)first_alone - 2, b0 = (long)second_alone - 2;
  long t2 = o->text_pair ? 1 : 0, t1 = (long)count - 1 - a0 - b0 - t2;
  long a = a0, b = b0;
  if (1 + t1 + t2 > context) {
    fprintf(stderr, "%s: error: %s: the framing alone exceeds the context\n",
            argv0, where);
    return 0;
  }
  /* transformers' longest_first: one token at a time from the longer
   * segment, the second on ties. */
  while (1 + a + t1 + b + t2 > context) {
    if (a > b)
      --a;
    else
      --b;
  }
  long n = 1 + a;
  memmove(in->ids + n, in->ids + 1 + a0, (size_t)(t1 + b) * sizeof(int32_t));
  memmove(in->types + n, in->types + 1 + a0,
          (size_t)(t1 + b) * sizeof(int32_t));
  n += t1 + b;
  if (t2) {
    in->ids[n] = in->ids[count - 1];
    in->types[n] = in->types[count - 1];
    ++n;
  }
  in->count = n;
  return 1;
}

/* A tokenized text padded to the context where the model's texts are
 * (tfm_main_pad_text). */
static int pad_text_input(const char *argv0, const tfm_model_desc *desc,
                          call_input *in) {
  if (!desc->pad_texts || in->count >= desc->max_context)
    return 1;
  int32_t *ids = realloc(in->ids, (size_t)desc->max_context * sizeof *ids);
  if (ids)
    in->ids = ids;
  int32_t *types =
      realloc(in->types, (size_t)desc->max_context * sizeof *types);
  if (types)
    in->types = types;
  if (!ids || !types) {
    fprintf(stderr, "%s: error: out of memory\n", argv0);
    return 0;
  }
  for (long i = in->count; i < desc->max_context; ++i)
    types[i] = 0;
  in->count = (long)tfm_main_pad_text(desc, ids, in->count);
  return 1;
}

static void print_ids(const int32_t *ids, long count) {
  for (long i = 0; i < count; ++i)
    printf("%s%d", i ? " " : "", ids[i]);
  printf("\n");
}

static void print_json(const tfm_tensor *out) {
  int64_t columns = out->rank ? out->shape[out->rank - 1] : 1;
  int64_t rows = out->rank == 2 ? out->shape[0] : 1;
  const float *values = out->data;
  printf(out->rank == 2 ? "[" : "");
  for (int64_t r = 0; r < rows; ++r) {
    printf("%s[", r ? "," : "");
    for (int64_t c = 0; c < columns; ++c)
      printf("%s%.9g", c ? "," : "", values[r * columns + c]);
    printf("]");
  }
  printf(out->rank == 2 ? "]\n" : "\n");
}

/* Writes or prints one input's output (`out` may be a view into a batch's). */
static int emit_output(const char *argv0, tfm_model *model,
                       const tfm_entry_point *entry, const tfm_call_options *o,
                       const tfm_tensor *out, FILE *raw) {
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  int labelled = entry->outputs[0].role == TFM_ROLE_LOGITS &&
                 desc->num_labels > 0 && out->rank >= 1 && out->rank <= 2 &&
                 out->shape[out->rank - 1] == desc->num_labels;
  if (raw)
    return write_raw(argv0, out, raw);
  if (o->format && !strcmp(o->format, "json"))
    print_json(out);
  else if (!labelled || !print_labels(o->name, desc, out))
    print_output(o->name, out);
  return 1;
}

/* "==> FILE <==" above each image's output when there are several (as
 * head(1) does), printed with the output since images run in batches; not
 * into raw f32 on stdout. */
static void print_heading(const tfm_call_options *o, const call_input *in,
                          FILE *raw) {
  if (o->image_count > 1 && in->image && raw != stdout)
    printf("%s==> %s <==\n", in->number > 1 ? "\n" : "", in->image);
}

/* --preprocess: an image input as the model would see it. */
static int emit_features(const char *argv0, const tfm_entry_point *entry,
                         const tfm_call_options *o, const call_input *in,
                         FILE *raw) {
  print_heading(o, in, raw);
  const tfm_tensor_desc *desc = features_input(entry);
  tfm_tensor view = {in->features, TFM_DTYPE_F32, desc->rank, {0}, NULL};
  memcpy(view.shape, desc->shape, sizeof view.shape);
  if (raw)
    return write_raw(argv0, &view, raw);
  print_output("preprocessed", &view);
  return 1;
}

/* The inputs of a batch call for inputs [0, n): token ids and types end to
 * end with their lengths (tfm-pack-sequences), or the images stacked
 * (tfm-batch-images). Sets *buffers to what to free. */
static int batch_inputs(const char *argv0, const tfm_entry_point *entry,
                        const tfm_entry_point *packed, const call_input *in,
                        int n, tfm_tensor *inputs, void *buffers[3]) {
  const tfm_tensor_desc *image = features_input(entry);
  if (image) {
    int64_t count = element_count(image->shape, image->rank);
    float *stack = malloc((size_t)(n * count) * sizeof *stack);
    buffers[0] = stack;
    if (!stack) {
      fprintf(stderr, "%s: error: out of memory\n", argv0);
      return 0;
    }
    for (int k = 0; k < n; ++k)
      memcpy(stack + k * count, in[k].features, (size_t)count * sizeof *stack);
    inputs[0] = (tfm_tensor){stack, TFM_DTYPE_F32, image->rank + 1, {n}, NULL};
    memcpy(inputs[0].shape + 1, image->shape,
           (size_t)image->rank * sizeof *image->shape);
    return 1;
  }
  long total = 0;
  for (int k = 0; k < n; ++k)
    total += in[k].count;
  int32_t *ids = malloc((size_t)total * sizeof *ids);
  int32_t *types = malloc((size_t)total * sizeof *types);
  int32_t *lengths = malloc((size_t)n * sizeof *lengths);
  buffers[0] = ids;
  buffers[1] = types;
  buffers[2] = lengths;
  if (!ids || !types || !lengths) {
    fprintf(stderr, "%s: error: out of memory\n", argv0);
    return 0;
  }
  for (long k = 0, at = 0; k < n; at += in[k].count, ++k) {
    memcpy(ids + at, in[k].ids, (size_t)in[k].count * sizeof *ids);
    memcpy(types + at, in[k].types, (size_t)in[k].count * sizeof *types);
    lengths[k] = (int32_t)in[k].count;
  }
  for (int32_t i = 0; i < packed->num_inputs; ++i) {
    int32_t role = packed->inputs[i].role;
    inputs[i] = (tfm_tensor){role == TFM_ROLE_TOKEN_IDS          ? ids
                             : role == TFM_ROLE_SEQUENCE_LENGTHS ? lengths
                                                                 : types,
                             TFM_DTYPE_I32,
                             1,
                             {role == TFM_ROLE_SEQUENCE_LENGTHS ? n : total},
                             NULL};
  }
  return 1;
}

/* Runs the entry point on inputs [0, n): one call each, or one call of its
 * batch twin @<name>_batch (tfm-pack-sequences, tfm-batch-images) for all
 * of them, and emits each input's output in order, the same either way. */
static int run_inputs(const char *argv0, tfm_model *model,
                      const tfm_entry_point *entry,
                      const tfm_entry_point *packed,
                      const tfm_call_options *o, const call_input *in, int n,
                      FILE *raw) {
  tfm_tensor inputs[8], output;
  tfm_status status;
  if (!packed || n == 1) {
    for (int k = 0; k < n; ++k) {
      int32_t *no_globals = NULL; /* without --global-attention: zeros */
      for (int32_t i = 0; i < entry->num_inputs; ++i) {
        const tfm_tensor_desc *desc = &entry->inputs[i];
        if (desc->role == TFM_ROLE_FEATURES) {
          inputs[i] = (tfm_tensor){in[k].features, TFM_DTYPE_F32, desc->rank,
                                   {0}, NULL};
          memcpy(inputs[i].shape, desc->shape, sizeof inputs[i].shape);
          if (takes_waveform(desc))
            inputs[i].shape[0] = in[k].count;
        } else if (desc->role == TFM_ROLE_DECODER_TOKEN_IDS) {
          inputs[i] = (tfm_tensor){in[k].decoder_ids, TFM_DTYPE_I32, 1,
                                   {in[k].decoder_count}, NULL};
        } else if (desc->role == TFM_ROLE_GLOBAL_ATTENTION) {
          int32_t *mask = in[k].globals;
          if (!mask && !(mask = no_globals =
                             calloc((size_t)in[k].count + 1, sizeof *mask))) {
            fprintf(stderr, "%s: error: out of memory\n", argv0);
            return 0;
          }
          inputs[i] = (tfm_tensor){mask, TFM_DTYPE_I32, 1, {in[k].count}, NULL};
        } else {
          inputs[i] =
              (tfm_tensor){desc->role == TFM_ROLE_TOKEN_IDS ? in[k].ids
                                                            : in[k].types,
                           TFM_DTYPE_I32, 1, {in[k].count}, NULL};
        }
      }
      int called = tfm_model_call(model, entry->name, inputs, entry->num_inputs,
                                  NULL, &output, 1, &status) == TFM_OK;
      free(no_globals);
      if (!called) {
        fprintf(stderr, "%s: error: %s\n", argv0, status.message);
        return 0;
      }
      print_heading(o, &in[k], raw);
      int ok = emit_output(argv0, model, entry, o, &output, raw);
      tfm_tensor_release(&output);
      if (!ok)
        return 0;
    }
    return 1;
  }
  void *buffers[3] = {NULL, NULL, NULL};
  int ok = batch_inputs(argv0, entry, packed, in, n, inputs, buffers);
  if (ok && tfm_model_call(model, packed->name, inputs, packed->num_inputs,
                           NULL, &output, 1, &status) != TFM_OK) {
    fprintf(stderr, "%s: error: %s\n", argv0, status.message);
    ok = 0;
  } else if (ok) {
    /* Input k's output: row k of a pooled [n, ...] result, or its own
     * rows of a per-token one. */
    int pooled = entry->outputs[0].rank == output.rank - 1;
    int64_t row = 1;
    for (int32_t d = 1; d < output.rank; ++d)
      row *= output.shape[d];
    for (long k = 0, at = 0; ok && k < n; at += in[k].count, ++k) {
      tfm_tensor view = output;
      view.data = (float *)output.data + (pooled ? k : at) * row;
      if (pooled) {
        view.rank = output.rank - 1;
        memmove(view.shape, output.shape + 1,
                (size_t)view.rank * sizeof *view.shape);
      } else {
        view.shape[0] = in[k].count;
      }
      print_heading(o, &in[k], raw);
      ok = emit_output(argv0, model, entry, o, &view, raw);
    }
    tfm_tensor_release(&output);
  }
  for (int i = 0; i < 3; ++i)
    free(buffers[i]);
  return ok;
}

/* Checks that the command line can give every input of the entry point. */
static int check_inputs(const char *argv0, const tfm_entry_point *entry,
                        const tfm_call_options *o) {
  int takes_types = 0, takes_decoder_ids = 0, takes_globals = 0;
  if (entry->num_inputs > 8) {
    fprintf(stderr, "%s: error: @%s has %d inputs\n", argv0, o->name,
            entry->num_inputs);
    return 0;
  }
  for (int32_t i = 0; i < entry->num_inputs; ++i) {
    int32_t role = entry->inputs[i].role;
    takes_types |= role == TFM_ROLE_TOKEN_TYPE_IDS;
    takes_decoder_ids |= role == TFM_ROLE_DECODER_TOKEN_IDS;
    takes_globals |= role == TFM_ROLE_GLOBAL_ATTENTION;
    int batched = 0; /* a batch of images: @NAME_batch */
    for (int32_t d = 0; role == TFM_ROLE_FEATURES &&
                        !takes_waveform(&entry->inputs[i]) &&
                        d < entry->inputs[i].rank;
         ++d)
      batched |= entry->inputs[i].shape[d] < 0;
    if (batched) {
      fprintf(stderr,
              "%s: error: @%s takes a batch of images: give the images to "
              "the one-image entry point, which batches them\n",
              argv0, o->name);
      return 0;
    }
    if (role != TFM_ROLE_TOKEN_IDS && role != TFM_ROLE_TOKEN_TYPE_IDS &&
        role != TFM_ROLE_FEATURES && role != TFM_ROLE_DECODER_TOKEN_IDS &&
        role != TFM_ROLE_GLOBAL_ATTENTION) {
      fprintf(stderr,
              "%s: error: input %d of @%s is %s, which the command line "
              "cannot give\n",
              argv0, i, o->name, role_name(role));
      return 0;
    }
  }
  if (o->token_types && !takes_types) {
    fprintf(stderr, "%s: error: @%s takes no token types\n", argv0, o->name);
    return 0;
  }
  if (o->global_attention && !takes_globals) {
    fprintf(stderr, "%s: error: @%s takes no global attention mask\n", argv0,
            o->name);
    return 0;
  }
  if (o->global_attention && !o->tokens) {
    fprintf(stderr, "%s: error: --global-attention goes with --tokens\n",
            argv0);
    return 0;
  }
  if (!o->decoder_tokens != !takes_decoder_ids) {
    fprintf(stderr,
            takes_decoder_ids
                ? "%s: error: @%s is an encoder-decoder's: give the decoder's "
                  "ids with --decoder-tokens\n"
                : "%s: error: @%s takes no decoder ids (--decoder-tokens)\n",
            argv0, o->name);
    return 0;
  }
  return 1;
}

/* Whether `entry` can run from the command line with what `o` gives (an
 * input of the kind it takes, one output, no cache); says why not. */
static int call_request_is_valid(const char *argv0,
                                 const tfm_entry_point *entry,
                                 const tfm_call_options *o) {
  if (entry->num_caches > 0 || entry->num_outputs != 1) {
    fprintf(stderr,
            "%s: error: @%s keeps a cache or has several outputs: run it "
            "through the library (tfm_model_call)\n",
            argv0, o->name);
    return 0;
  }
  if (!check_inputs(argv0, entry, o))
    return 0;
  if (o->format && strcmp(o->format, "text") && strcmp(o->format, "json") &&
      strcmp(o->format, "f32")) {
    fprintf(stderr, "%s: error: --format is text, json or f32, not '%s'\n",
            argv0, o->format);
    return 0;
  }
  int texts = !!o->text + !!o->text_file;
  int takes_pixels = features_input(entry) != NULL;
  int waveform = takes_waveform(features_input(entry));
  if (waveform) {
    if (!o->image_count || o->pixels || o->preprocess || texts || o->tokens) {
      fprintf(stderr,
              "%s: error: @%s takes audio: AUDIO... (WAV, FLAC, Ogg, ... "
              "files)\n",
              argv0, o->name);
      return 0;
    }
  } else if (takes_pixels) {
    if (!o->pixels == !o->image_count || texts || o->tokens) {
      fprintf(stderr,
              "%s: error: @%s takes images: IMAGE... (PNG or JPEG files) or "
              "--pixels FILE\n",
              argv0, o->name);
      return 0;
    }
  } else if (o->pixels || o->image_count) {
    fprintf(stderr, "%s: error: @%s takes no images\n", argv0, o->name);
    return 0;
  } else if (o->preprocess) {
    fprintf(stderr, "%s: error: --preprocess is for image models\n", argv0);
    return 0;
  } else if (texts + !!o->tokens != 1) {
    fprintf(stderr,
            "%s: error: @%s needs one of --tokens, --text and --text-file\n",
            argv0, o->name);
    return 0;
  }
  if (o->text_pair && !texts) {
    fprintf(stderr, "%s: error: --text-pair goes with --text\n", argv0);
    return 0;
  }
  return 1;
}

/* Input `in` of a call: from an audio or image file, --pixels, text
 * (through `tokenizer`; `where` names it in errors) or --tokens, with
 * --decoder-tokens where given. */
static int read_call_input(const char *argv0, tfm_model *model,
                           const tfm_entry_point *entry,
                           const tfm_call_options *o, tfm_tokenizer *tokenizer,
                           int64_t context, const char *text, const char *image,
                           const char *where, call_input *in) {
  int takes_pixels = features_input(entry) != NULL;
  int waveform = takes_waveform(features_input(entry));
  int ok;
  if (image && waveform)
    ok = input_from_audio(argv0, model, image, in);
  else if (image)
    ok = input_from_image(argv0, model, entry, image, in);
  else if (takes_pixels)
    ok = input_from_pixels(argv0, entry, o->pixels, in);
  else
    ok = text ? input_from_text(argv0, o, tokenizer, context, text, where, in)
              : input_from_ids(argv0, o, in);
  if (ok && text)
    ok = pad_text_input(argv0, tfm_model_get_desc(model), in);
  if (ok && o->decoder_tokens)
    ok = decoder_input_from_ids(argv0, o, in);
  if (ok && !takes_pixels && in->count == 0) {
    fprintf(stderr, "%s: error: @%s needs token ids (--tokens)\n", argv0,
            o->name);
    ok = 0;
  }
  return ok;
}

int tfm_main_call(const char *argv0, tfm_model *model,
                  const tfm_call_options *o) {
  const tfm_entry_point *entry = tfm_model_entry_point(model, o->name);
  if (!entry) {
    fprintf(stderr, "%s: error: the model has no entry point @%s\n", argv0,
            o->name);
    return 1;
  }
  if (!call_request_is_valid(argv0, entry, o))
    return 1;
  int texts = !!o->text + !!o->text_file;
  tfm_status status;
  tfm_tokenizer *tokenizer = NULL;
  if (texts && !(tokenizer = tfm_model_tokenizer(model, &status))) {
    fprintf(stderr, "%s: error: %s\n", argv0, status.message);
    return 1;
  }
  /* Raw f32 goes to --output, or to stdout with --format f32. */
  FILE *raw = NULL;
  if (o->output_path && !(raw = fopen(o->output_path, "wb"))) {
    fprintf(stderr, "%s: error: cannot write '%s'\n", argv0, o->output_path);
    return 1;
  }
  if (!raw && o->format && !strcmp(o->format, "f32"))
    raw = stdout;
  char *file = NULL;
  if (o->text_file && !(file = tfm_main_read_text_file(o->text_file))) {
    fprintf(stderr, "%s: error: cannot read '%s'\n", argv0, o->text_file);
    if (raw && raw != stdout)
      fclose(raw);
    return 1;
  }
  if (file && !*file) {
    fprintf(stderr, "%s: error: --text-file '%s' is empty: no texts to run\n",
            argv0, o->text_file);
    free(file);
    if (raw && raw != stdout)
      fclose(raw);
    return 1;
  }
  int64_t context = tfm_model_get_desc(model)->max_context;
  /* --text-file's lines and several images go through the batch twin, if
   * any, at most --batch inputs a call (which runs packed text in groups
   * that stay in cache: packed_call.c). */
  char packed_name[256];
  snprintf(packed_name, sizeof packed_name, "%s_batch", o->name);
  const tfm_entry_point *packed = tfm_model_entry_point(model, packed_name);
  int batch = packed && (file || o->image_count > 1)
                  ? (o->batch > 0 ? o->batch : 32)
                  : 1;
  call_input *ins = calloc((size_t)batch, sizeof *ins);
  int ok = ins != NULL, n = 0;
  if (!ins)
    fprintf(stderr, "%s: error: out of memory\n", argv0);
  /* Each line of --text-file is an input; otherwise the one input given. */
  char *line = file, where[64];
  for (long number = 1; ok; ++number) {
    const char *text = o->text, *image = NULL;
    int last = !file && !o->image_count;
    if (o->image_count) {
      image = o->images[number - 1];
      last = number == o->image_count;
    } else if (file) {
      if (!*line)
        break;
      char *end = strchr(line, '\n');
      if (end)
        *end = '\0';
      text = line;
      line = end ? end + 1 : line + strlen(line);
      last = !*line;
      snprintf(where, sizeof where, "line %ld of --text-file", number);
    } else {
      snprintf(where, sizeof where, "the text");
    }
    call_input *in = &ins[n++];
    in->image = image;
    in->number = number;
    ok = read_call_input(argv0, model, entry, o, tokenizer, context, text,
                         image, where, in);
    if (ok && o->tokenize) {
      print_ids(in->ids, in->count);
      print_ids(in->types, in->count);
    } else if (ok && o->preprocess) {
      ok = emit_features(argv0, entry, o, in, raw);
    }
    int runs = !o->tokenize && !o->preprocess;
    if (ok && runs && n < batch && !last)
      continue; /* the pack is not full yet */
    if (ok && runs)
      ok = run_inputs(argv0, model, entry, packed, o, ins, n, raw);
    for (int k = 0; k < n; ++k)
      free_input(&ins[k]);
    n = 0;
    if (last)
      break;
  }
  for (int k = 0; k < n; ++k)
    free_input(&ins[k]);
  free(ins);
  free(file);
  if (raw && raw != stdout && fclose(raw) != 0 && ok) {
    fprintf(stderr, "%s: error: cannot write '%s'\n", argv0, o->output_path);
    ok = 0;
  }
  return ok ? 0 : 1;
}
