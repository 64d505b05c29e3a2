/*===- ctc_internal.h - CTC labels to text, for chunked transcripts -----===//
 *
 * Greedy CTC decoding of labels already chosen (ctc.c), and the entry
 * point that gives the logits they are chosen from: what a transcript
 * made of several calls' frames (runtime/transcribe/ctc_chunks.c) decodes
 * once they are joined, so that a word cut between chunks reads whole.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_GENERATE_CTC_INTERNAL_H
#define TFM_RUNTIME_GENERATE_CTC_INTERNAL_H

#include "tfm/tfm_runtime.h"

/* tfm_ctc_decode of each frame's label (its logits' argmax) rather than
 * the logits: repeats merged, blanks dropped, the delimiter a space, the
 * ends trimmed, lowercasing and clean-up as the tokenizer says.
 * TFM_ERROR_OUT_OF_RANGE for a label past the model's. */
tfm_status_code tfm_ctc_decode_labels(const tfm_model *model,
                                      const int32_t *labels, int64_t frames,
                                      char **text, tfm_status *status);

/* The recognizer's entry point: the one that takes the samples
 * (@recognize), or NULL. */
const tfm_entry_point *tfm_ctc_recognizer(const tfm_model *model);

#endif /* TFM_RUNTIME_GENERATE_CTC_INTERNAL_H */
