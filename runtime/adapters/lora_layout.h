/*===- lora_layout.h - an adapter's matrices laid out in a slot ----------===*
 *
 * What tfm_lora_load's readers share (PEFT folders: peft_adapter.c;
 * llama.cpp's GGUF LoRA files: gguf_adapter.c): the slot being filled,
 * each target's A and B placed as the reader finds them (checked against
 * the model's targets and rank), and the checks once the file is read.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_ADAPTERS_LORA_LAYOUT_H
#define TFM_RUNTIME_ADAPTERS_LORA_LAYOUT_H

#include "runtime/core/lora_bank.h"

#include <stddef.h>
#include <stdint.h>

typedef struct {
  const char *path; /* the folder or file, for messages */
  const tfm_lora_bank *bank;
  float scale; /* the caller's */
  tfm_status *status;
  float *slot;                /* tfm_lora_slot_floats, zeroed */
  int32_t *ranks_a, *ranks_b; /* each target's r as A and B gave it; 0 */
} lora_layout;

/* Sets the status to "tfm_lora_load: PATH[/FILE]: WHAT" and returns its
 * code; `file` NULL for the path itself. */
tfm_status_code tfm_lora_fail(lora_layout *layout, tfm_status_code code,
                              const char *file, const char *what);

/* A stored matrix: `rows` x `cols` values of 4 bytes (f32) or 2 (f16, or
 * bf16 where `bf16`), row-major. */
typedef struct {
  const uint8_t *data;
  int64_t rows, cols;
  int bytes, bf16;
} lora_matrix;

/* Places `m` as the A (`is_a`: [r, in]) or the B ([out, r], each value
 * times `factor`: the caller's scale and the adapter's alpha over r) of
 * the target whose weight is `weight`; `name` is the tensor's, `file` the
 * file's, for messages. Refuses a weight the model does not adapt,
 * features other than the target's, a rank above the slots'. */
tfm_status_code tfm_lora_place(lora_layout *layout, const char *file,
                               const char *name, const char *weight, int is_a,
                               const lora_matrix *m, double factor);

/* After the file: every target has both matrices or neither, of one rank,
 * and some target has them. */
tfm_status_code tfm_lora_check_pairs(lora_layout *layout, const char *file);

/* The readers: fill `layout` from a PEFT folder or a GGUF LoRA file. */
tfm_status_code tfm_lora_read_peft(lora_layout *layout);
tfm_status_code tfm_lora_read_gguf(lora_layout *layout);

#endif /* TFM_RUNTIME_ADAPTERS_LORA_LAYOUT_H */
