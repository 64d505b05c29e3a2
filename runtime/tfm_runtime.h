/*===- tfm_runtime.h - the tfmc runtime C API --------------------*- C -*-===//
 *
 * Loading a compiled model (its weights verified against the checksum it was
 * compiled with), running it over token sequences, and tokenizing text. No
 * function aborts on bad input: each returns a tfm_status_code and fills a
 * tfm_status with a message that says what and where.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_TFM_RUNTIME_H
#define TFM_RUNTIME_TFM_RUNTIME_H

#include "runtime/tfm_model_abi.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum {
  TFM_OK = 0,
  TFM_ERROR_INVALID_ARGUMENT = 1, /* NULL handle, bad option value */
  TFM_ERROR_OUT_OF_RANGE = 2,     /* token id outside the vocabulary */
  TFM_ERROR_CONTEXT_OVERFLOW = 3, /* sequence longer than the max context */
  TFM_ERROR_WEIGHTS = 4,          /* missing or mismatched weights file */
  TFM_ERROR_TOKENIZER = 5,        /* no tokenizer, or a malformed one */
  TFM_ERROR_OUT_OF_MEMORY = 6,
  TFM_ERROR_IO = 7
} tfm_status_code;

typedef struct {
  tfm_status_code code;
  char message[512];
} tfm_status;

typedef struct tfm_model tfm_model;
typedef struct tfm_tokenizer tfm_tokenizer;

/* Loads `desc`'s weights: the embedded blob, or the side file (from
 * `weights_path` when not NULL, else desc->weights_file beside the
 * executable), mapped read-only. Checks size and checksum. */
tfm_status_code tfm_model_load(const tfm_model_desc *desc,
                               const char *weights_path, tfm_model **model,
                               tfm_status *status);
void tfm_model_free(tfm_model *model);
const tfm_model_desc *tfm_model_get_desc(const tfm_model *model);

/* Runs the model over `tokens[0..n)` and writes the logits of every position
 * to `logits` ([n, vocab], caller-allocated). Checks ids and length first. */
tfm_status_code tfm_forward(tfm_model *model, const int32_t *tokens, int64_t n,
                            float *logits, tfm_status *status);

/* Index of the largest of `n` values (the first on ties), as greedy decoding
 * picks the next token. */
int32_t tfm_argmax(const float *values, int64_t n);

/* The model's tokenizer (owned by the model), or NULL with a status when it
 * was compiled without one. */
tfm_tokenizer *tfm_model_tokenizer(tfm_model *model, tfm_status *status);

/* Parses a tokenizer blob (tfm_format.h). */
tfm_status_code tfm_tokenizer_new(const uint8_t *blob, uint64_t size,
                                  tfm_tokenizer **tokenizer,
                                  tfm_status *status);
void tfm_tokenizer_free(tfm_tokenizer *tokenizer);

/* Encodes UTF-8 `text` as llama2.c/SentencePiece BPE does (a leading dummy
 * space, byte fallback, merges by score), prefixed by `bos` when >= 0. At
 * most `capacity` ids are written; `*count` receives the number needed. */
tfm_status_code tfm_tokenizer_encode(const tfm_tokenizer *tokenizer,
                                     const char *text, int32_t bos,
                                     int32_t *ids, int64_t capacity,
                                     int64_t *count, tfm_status *status);

/* The bytes token `id` stands for after `previous` (a leading space after
 * BOS is dropped; "<0xAB>" becomes the byte 0xAB). Sets *size. Returns NULL
 * for an id out of range. */
const char *tfm_tokenizer_decode(const tfm_tokenizer *tokenizer,
                                 int32_t previous, int32_t id, int32_t bos,
                                 size_t *size);

#ifdef __cplusplus
}
#endif

#endif /* TFM_RUNTIME_TFM_RUNTIME_H */
