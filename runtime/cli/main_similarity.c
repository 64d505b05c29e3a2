/*===- main_similarity.c - CLIP's and SigLIP's text-image scores --------===//
 *
 * A model with both towers (@embed_text and @embed_image: CLIPModel,
 * SiglipModel) run with texts (--text, repeatable, or --text-file's lines)
 * and images: every image against every text, as the model's
 * logits_per_image (the embeddings' cosine times the model's logit scale,
 * plus SigLIP's bias), with CLIP's softmax over the texts, as zero-shot
 * classification reads them, or SigLIP's sigmoid of each pair alone.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/cli/main_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tfm_main_is_similarity(const tfm_model *model) {
  return tfm_model_entry_point(model, "embed_text") &&
         tfm_model_entry_point(model, "embed_image");
}

int64_t tfm_main_pad_text(const tfm_model_desc *desc, int32_t *ids,
                          int64_t count) {
  if (!desc->pad_texts)
    return count;
  for (; count < desc->max_context; ++count)
    ids[count] = desc->text_pad_token;
  return count;
}

/* `entry`'s one output for `input`, L2-normalized into `out` ([dim]). */
static int embed(const char *argv0, tfm_model *model, const char *entry,
                 const tfm_tensor *input, float *out, int64_t dim) {
  tfm_tensor output;
  tfm_status status;
  if (tfm_model_call(model, entry, input, 1, NULL, &output, 1, &status) !=
      TFM_OK)
    return tfm_main_fail(argv0, status.message), 0;
  double norm = 0;
  const float *values = output.data;
  for (int64_t i = 0; i < dim; ++i)
    norm += (double)values[i] * values[i];
  norm = sqrt(norm);
  if (norm < 1e-12)
    norm = 1e-12;
  for (int64_t i = 0; i < dim; ++i)
    out[i] = (float)(values[i] / norm);
  tfm_tensor_release(&output);
  return 1;
}

/* The texts: every --text, then --text-file's lines (the file's buffer in
 * *file, the list in *texts). Returns their count, or -1 after an error. */
static int collect_texts(const char *argv0, const tfm_similarity_options *o,
                         char **file, const char ***texts) {
  int count = o->text_count;
  if (o->text_file) {
    *file = tfm_main_read_text_file(o->text_file);
    if (!*file) {
      fprintf(stderr, "%s: error: cannot read --text-file '%s'\n", argv0,
              o->text_file);
      return -1;
    }
    for (char *c = *file; *c; ++c)
      count += *c == '\n';
    count += 1;
  }
  *texts = calloc((size_t)count + 1, sizeof **texts);
  if (!*texts)
    return tfm_main_fail(argv0, "out of memory"), -1;
  int n = 0;
  for (int i = 0; i < o->text_count; ++i)
    (*texts)[n++] = o->texts[i];
  for (char *line = *file; line && *line;) {
    char *end = strchr(line, '\n');
    if (end)
      *end = '\0';
    if (*line)
      (*texts)[n++] = line;
    line = end ? end + 1 : NULL;
  }
  if (n == 0)
    return tfm_main_fail(argv0, "no texts to compare the images with "
                                "(--text TEXT, --text-file FILE)"),
           -1;
  return n;
}

int tfm_main_similarity(const char *argv0, tfm_model *model,
                        const tfm_similarity_options *o) {
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  const tfm_entry_point *text_entry =
      tfm_model_entry_point(model, "embed_text");
  const tfm_entry_point *image_entry =
      tfm_model_entry_point(model, "embed_image");
  if (o->image_count == 0)
    return tfm_main_fail(argv0, "comparing texts with images needs image "
                                "files after the options");
  if (!tfm_image_load)
    return tfm_main_fail(argv0, "this executable reads no images");
  int64_t dim = text_entry->outputs[0].shape[0];
  if (image_entry->outputs[0].shape[0] != dim)
    return tfm_main_fail(argv0, "@embed_text and @embed_image give "
                                "embeddings of different sizes");
  tfm_status status;
  tfm_tokenizer *tokenizer = tfm_model_tokenizer(model, &status);
  if (!tokenizer)
    return tfm_main_fail(argv0, status.message);
  char *file = NULL;
  const char **texts = NULL;
  int text_count = collect_texts(argv0, o, &file, &texts);
  const tfm_tensor_desc *pixels_desc = &image_entry->inputs[0];
  int64_t pixel_count = 1;
  for (int32_t d = 0; d < pixels_desc->rank; ++d)
    pixel_count *= pixels_desc->shape[d];
  float *text_embeddings =
      text_count > 0 ? malloc((size_t)(text_count * dim) * sizeof(float))
                     : NULL;
  float *image_embedding = malloc((size_t)dim * sizeof(float));
  float *pixels = malloc((size_t)pixel_count * sizeof(float));
  double *logits =
      malloc((size_t)(text_count > 0 ? text_count : 1) * sizeof(double));
  int32_t *ids = malloc((size_t)(desc->max_context + 1) * sizeof(int32_t));
  int ok = text_count > 0;
  if (ok &&
      (!text_embeddings || !image_embedding || !pixels || !logits || !ids))
    ok = !tfm_main_fail(argv0, "out of memory");
  for (int t = 0; ok && t < text_count; ++t) {
    /* Room for one id past the context: a longer text is refused below. */
    int64_t count = 0;
    if (tfm_tokenizer_encode_text(tokenizer, texts[t], NULL, ids, NULL,
                                  desc->max_context + 1, &count,
                                  &status) != TFM_OK) {
      fprintf(stderr, "%s: error: text %d: %s\n", argv0, t + 1, status.message);
      ok = 0;
      break;
    }
    if (count > desc->max_context) {
      fprintf(stderr,
              "%s: error: text %d is %lld tokens, more than the model's "
              "%lld positions\n",
              argv0, t + 1, (long long)count, (long long)desc->max_context);
      ok = 0;
      break;
    }
    count = tfm_main_pad_text(desc, ids, count);
    tfm_tensor input = {ids, TFM_DTYPE_I32, 1, {count}, NULL};
    ok = embed(argv0, model, "embed_text", &input, text_embeddings + t * dim,
               dim);
  }
  /* The model's scale (exp(logit_scale)); 1 without one. */
  double scale = desc->logit_scale > 0 ? desc->logit_scale : 1.0;
  double bias = desc->sigmoid_scores ? desc->logit_bias : 0.0;
  for (int i = 0; ok && i < o->image_count; ++i) {
    if (tfm_image_load(model, o->images[i], pixels, pixel_count, &status) !=
        TFM_OK) {
      ok = !tfm_main_fail(argv0, status.message);
      break;
    }
    tfm_tensor input = {pixels, TFM_DTYPE_F32, pixels_desc->rank, {0}, NULL};
    memcpy(input.shape, pixels_desc->shape,
           (size_t)pixels_desc->rank * sizeof *input.shape);
    if (!(ok =
              embed(argv0, model, "embed_image", &input, image_embedding, dim)))
      break;
    double largest = -INFINITY, sum = 0;
    for (int t = 0; t < text_count; ++t) {
      double cosine = 0;
      for (int64_t k = 0; k < dim; ++k)
        cosine += (double)text_embeddings[t * dim + k] * image_embedding[k];
      logits[t] = scale * cosine + bias;
      if (logits[t] > largest)
        largest = logits[t];
    }
    for (int t = 0; t < text_count; ++t)
      sum += exp(logits[t] - largest);
    printf("%s:\n", o->images[i]);
    for (int t = 0; t < text_count; ++t)
      printf("  %.4f  logit %.4f  %s\n",
             desc->sigmoid_scores ? 1.0 / (1.0 + exp(-logits[t]))
                                  : exp(logits[t] - largest) / sum,
             logits[t], texts[t]);
  }
  free(ids);
  free(logits);
  free(pixels);
  free(image_embedding);
  free(text_embeddings);
  free(texts);
  free(file);
  return ok ? 0 : 1;
}
