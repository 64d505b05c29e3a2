/*===- ctc.c - a speech recognizer's frames to text (greedy CTC) ---------===//
 *
 * tfm_transcribe runs a Wav2Vec2-style recognizer (a CTC head:
 * desc->waveform with a blank label) on a clip
 * and tfm_ctc_decode turns its [frames, labels] logits into text as
 * Wav2Vec2CTCTokenizer.decode does after an argmax: repeats merged, the
 * blank (pad) label dropped, the word delimiter spelled as a space, the
 * ends trimmed, then lowercasing and transformers' clean_up_tokenization
 * where the tokenizer's config asks for them.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/status.h"
#include "runtime/generate/ctc_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

/* A growing NUL-terminated string. */
typedef struct {
  char *bytes;
  size_t length, capacity;
} text_buffer;

static int append(text_buffer *t, const char *bytes, size_t n) {
  if (t->length + n + 1 > t->capacity) {
    size_t capacity = (t->length + n + 1) * 2;
    char *grown = realloc(t->bytes, capacity);
    if (!grown)
      return 0;
    t->bytes = grown;
    t->capacity = capacity;
  }
  memcpy(t->bytes + t->length, bytes, n);
  t->length += n;
  t->bytes[t->length] = '\0';
  return 1;
}

/* Python's str.strip(): ASCII whitespace is all a CTC vocabulary's
 * delimiter produces. */
static void strip(text_buffer *t) {
  size_t begin = 0, end = t->length;
  while (begin < end && strchr(" \t\n\r\f\v", t->bytes[begin]))
    ++begin;
  while (end > begin && strchr(" \t\n\r\f\v", t->bytes[end - 1]))
    --end;
  memmove(t->bytes, t->bytes + begin, end - begin);
  t->length = end - begin;
  t->bytes[t->length] = '\0';
}

/* Each code point lowercased (utf8proc's simple mapping, as str.lower()
 * does outside a few special cases); invalid UTF-8 is kept as it is. */
static void lowercase(text_buffer *t) {
  size_t in = 0, out = 0;
  while (in < t->length) {
    utf8proc_int32_t cp;
    utf8proc_ssize_t n = utf8proc_iterate((const utf8proc_uint8_t *)t->bytes + in,
                                          (utf8proc_ssize_t)(t->length - in), &cp);
    if (n <= 0) {
      t->bytes[out++] = t->bytes[in++];
      continue;
    }
    utf8proc_uint8_t encoded[4];
    utf8proc_ssize_t m = utf8proc_encode_char(utf8proc_tolower(cp), encoded);
    if (m <= 0 || m > n) { /* a longer lowercase form: keep the original */
      memmove(t->bytes + out, t->bytes + in, (size_t)n);
      m = n;
    } else {
      memcpy(t->bytes + out, encoded, (size_t)m);
    }
    in += (size_t)n;
    out += (size_t)m;
  }
  t->length = out;
  t->bytes[out] = '\0';
}

/* Every occurrence of `from` replaced by the shorter `to`, left to right
 * (str.replace). */
static void replace_all(text_buffer *t, const char *from, const char *to) {
  size_t n = strlen(from), m = strlen(to), in = 0, out = 0;
  while (in < t->length) {
    if (in + n <= t->length && memcmp(t->bytes + in, from, n) == 0) {
      memcpy(t->bytes + out, to, m);
      in += n;
      out += m;
    } else {
      t->bytes[out++] = t->bytes[in++];
    }
  }
  t->length = out;
  t->bytes[out] = '\0';
}

/* transformers' clean_up_tokenization, in its order. */
static void clean_up(text_buffer *t) {
  static const char *const pairs[][2] = {
      {" .", "."},     {" ?", "?"},     {" !", "!"},     {" ,", ","},
      {" ' ", "'"},    {" n't", "n't"}, {" 'm", "'m"},   {" 's", "'s"},
      {" 've", "'ve"}, {" 're", "'re"}};
  for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; ++i)
    replace_all(t, pairs[i][0], pairs[i][1]);
}

/* Why `model` decodes no CTC labels, or TFM_OK. */
static tfm_status_code check_ctc(const tfm_model *model, tfm_status *status) {
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  const tfm_waveform_input *ctc = desc->waveform;
  if (!ctc || ctc->blank < 0 || desc->num_labels <= 0)
    return tfm_fail(status, TFM_ERROR_NOT_FOUND,
                    "model '%s' is not a speech recognizer (no CTC labels)",
                    desc->name);
  return TFM_OK;
}

tfm_status_code tfm_ctc_decode(const tfm_model *model, const float *logits,
                               int64_t frames, char **text,
                               tfm_status *status) {
  if (!model || !text || (!logits && frames > 0) || frames < 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_ctc_decode: NULL argument or negative frames");
  tfm_status_code code = check_ctc(model, status);
  if (code != TFM_OK)
    return code;
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  int32_t *labels = malloc((size_t)(frames ? frames : 1) * sizeof *labels);
  if (!labels)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  for (int64_t f = 0; f < frames; ++f)
    labels[f] = tfm_argmax(logits + f * desc->num_labels, desc->num_labels);
  code = tfm_ctc_decode_labels(model, labels, frames, text, status);
  free(labels);
  return code;
}

tfm_status_code tfm_ctc_decode_labels(const tfm_model *model,
                                      const int32_t *labels, int64_t frames,
                                      char **text, tfm_status *status) {
  tfm_status_code code = check_ctc(model, status);
  if (code != TFM_OK)
    return code;
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  const tfm_waveform_input *ctc = desc->waveform;
  text_buffer t = {0};
  int ok = append(&t, "", 0);
  int32_t previous = -1;
  for (int64_t f = 0; ok && f < frames; ++f) {
    int32_t label = labels[f];
    if (label < 0 || label >= desc->num_labels) {
      free(t.bytes);
      return tfm_fail(status, TFM_ERROR_OUT_OF_RANGE,
                      "CTC label %d at frame %lld: model '%s' has %d labels",
                      label, (long long)f, desc->name, desc->num_labels);
    }
    if (label == previous)
      continue;
    previous = label;
    if (label == ctc->blank)
      continue;
    const char *spelled = label == ctc->word_delimiter ? " " : desc->labels[label];
    ok = append(&t, spelled, strlen(spelled));
  }
  if (!ok) {
    free(t.bytes);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  strip(&t);
  if (ctc->lowercase)
    lowercase(&t);
  if (ctc->clean_up)
    clean_up(&t);
  *text = t.bytes;
  return TFM_OK;
}

const tfm_entry_point *tfm_ctc_recognizer(const tfm_model *model) {
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  for (int32_t i = 0; i < desc->num_entry_points; ++i) {
    const tfm_entry_point *entry = &desc->entry_points[i];
    if (entry->num_inputs == 1 && entry->inputs[0].role == TFM_ROLE_FEATURES &&
        entry->inputs[0].rank == 1 && entry->num_outputs == 1)
      return entry;
  }
  return NULL;
}

tfm_status_code tfm_transcribe(tfm_model *model, const float *samples,
                               int64_t n, char **text, tfm_status *status) {
  if (!model || !samples || !text)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_transcribe: NULL argument");
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  const tfm_entry_point *entry = tfm_ctc_recognizer(model);
  if (!desc->waveform || desc->waveform->blank < 0 || !entry)
    return tfm_fail(status, TFM_ERROR_NOT_FOUND,
                    "model '%s' is not a speech recognizer", desc->name);
  /* tfm_model_call checks the clip's length against the model's bounds;
   * it only reads the samples. */
  tfm_tensor input = {(void *)(uintptr_t)samples, TFM_DTYPE_F32, 1, {n}, NULL};
  tfm_tensor logits;
  memset(&logits, 0, sizeof logits);
  tfm_status_code code =
      tfm_model_call(model, entry->name, &input, 1, NULL, &logits, 1, status);
  if (code != TFM_OK)
    return code;
  code = tfm_ctc_decode(model, logits.data, logits.shape[0], text, status);
  tfm_tensor_release(&logits);
  return code;
}
