/* main.c - semantic search with a sentence embedder compiled by tfmc: embeds
 * a handful of sentences and a query through the runtime API and ranks the
 * sentences by cosine similarity to the query.
 *
 *   tfmc all-MiniLM-L6-v2/ --emit=staticlib --prefix embedder -o libembedder.a
 *   cc main.c -I. -I<tfmc>/include libembedder.a -ltfmrt -lopenblas \
 *      -lutf8proc -lm -o search
 *   ./search "how do I cook pasta?" "Boil water, add spaghetti." "The sky is blue."
 *
 * The model's @embed takes token ids (and token types, where the model has
 * them) and returns one vector; with a Normalize module the vectors have unit
 * length and the cosine is a dot product, but this divides by the norms
 * anyway so that any pooling works.
 */
#include "embedder.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Embeds `text` into `vector` (EMBEDDER_HIDDEN_SIZE floats). */
static tfm_status_code embed(tfm_model *model, tfm_tokenizer *tokenizer,
                             const char *text, float *vector,
                             tfm_status *status) {
  int32_t ids[EMBEDDER_MAX_CONTEXT], types[EMBEDDER_MAX_CONTEXT];
  int64_t count = 0;
  tfm_status_code code =
      tfm_tokenizer_encode_text(tokenizer, text, NULL, ids, types,
                                EMBEDDER_MAX_CONTEXT, &count, status);
  if (code != TFM_OK)
    return code;
  if (count > EMBEDDER_MAX_CONTEXT) { /* keep [CLS] ... and the last [SEP] */
    ids[EMBEDDER_MAX_CONTEXT - 1] = ids[count - 1];
    count = EMBEDDER_MAX_CONTEXT;
  }
  /* Inputs by the roles @embed declares (token ids, maybe token types). */
  const tfm_entry_point *entry = tfm_model_entry_point(model, "embed");
  tfm_tensor inputs[2];
  for (int32_t i = 0; i < entry->num_inputs && i < 2; ++i)
    inputs[i] = (tfm_tensor){
        entry->inputs[i].role == TFM_ROLE_TOKEN_IDS ? ids : types,
        TFM_DTYPE_I32, 1, {count}, NULL};
  tfm_tensor output;
  code = tfm_model_call(model, "embed", inputs, entry->num_inputs, NULL,
                        &output, 1, status);
  if (code != TFM_OK)
    return code;
  memcpy(vector, output.data, EMBEDDER_HIDDEN_SIZE * sizeof *vector);
  tfm_tensor_release(&output);
  return TFM_OK;
}

static double cosine(const float *a, const float *b, int n) {
  double dot = 0, na = 0, nb = 0;
  for (int i = 0; i < n; ++i) {
    dot += (double)a[i] * b[i];
    na += (double)a[i] * a[i];
    nb += (double)b[i] * b[i];
  }
  return dot / (sqrt(na) * sqrt(nb) + 1e-12);
}

int main(int argc, char **argv) {
  if (argc < 3) {
    fprintf(stderr, "usage: %s QUERY SENTENCE...\n", argv[0]);
    return 2;
  }
  int sentences = argc - 2;
  tfm_status status;
  tfm_model *model = NULL;
  float *vectors = malloc((size_t)(sentences + 1) * EMBEDDER_HIDDEN_SIZE *
                          sizeof *vectors);
  double *scores = malloc((size_t)sentences * sizeof *scores);
  int exit_code = 1;
  if (!vectors || !scores) {
    fprintf(stderr, "error: out of memory\n");
    goto done;
  }
  if (tfm_model_load(&embedder_model, NULL, &model, &status) != TFM_OK)
    goto fail;
  tfm_tokenizer *tokenizer = tfm_model_tokenizer(model, &status);
  if (!tokenizer)
    goto fail;
  /* vectors[0] is the query's. */
  for (int i = 0; i <= sentences; ++i)
    if (embed(model, tokenizer, argv[i + 1],
              vectors + (size_t)i * EMBEDDER_HIDDEN_SIZE, &status) != TFM_OK)
      goto fail;
  for (int i = 0; i < sentences; ++i)
    scores[i] = cosine(vectors, vectors + (size_t)(i + 1) * EMBEDDER_HIDDEN_SIZE,
                       EMBEDDER_HIDDEN_SIZE);
  /* Best first (selection: a handful of sentences). */
  for (int shown = 0; shown < sentences; ++shown) {
    int best = -1;
    for (int i = 0; i < sentences; ++i)
      if (scores[i] > -2 && (best < 0 || scores[i] > scores[best]))
        best = i;
    printf("%.4f\t%s\n", scores[best], argv[best + 2]);
    scores[best] = -3;
  }
  exit_code = 0;
  goto done;
fail:
  fprintf(stderr, "error: %s\n", status.message);
done:
  tfm_model_free(model);
  free(vectors);
  free(scores);
  return exit_code;
}
