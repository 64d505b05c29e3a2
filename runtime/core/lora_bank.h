/*===- lora_bank.h - run-time LoRA adapters' slots and who uses them -----===*
 *
 * A model compiled with tfmc --lora-slots keeps a bank: `slots` slots, each
 * holding one adapter's matrices for every target (tfm_lora_desc), loaded
 * by tfm_lora_load (runtime/adapters reads the files) and named by an id
 * that is never reused. Sessions and the engine's sequences hold the
 * adapter they run with (acquire/release), so that a slot in use is not
 * freed under them. Around each generated call the runtime binds the rows'
 * slots (tfm_lora_bind), which the kernel of tfm.lora reads
 * (runtime/kernels/kernels_lora.c).
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_CORE_LORA_BANK_H
#define TFM_RUNTIME_CORE_LORA_BANK_H

#include "tfm/tfm_runtime.h"

typedef struct tfm_lora_bank tfm_lora_bank;

/* The bank of a model whose description has slots (NULL when it has none,
 * or *failed set when memory ran out); freed with the model. */
tfm_lora_bank *tfm_lora_bank_new(const tfm_lora_desc *desc, int *failed);
void tfm_lora_bank_free(tfm_lora_bank *bank);
/* The model's bank (model.c); NULL without slots. */
tfm_lora_bank *tfm_model_lora_bank(const tfm_model *model);

/* Floats of one slot, and where target `target`'s A [rank, in] starts in
 * it (its B [out, rank] follows). */
int64_t tfm_lora_slot_floats(const tfm_lora_bank *bank);
int64_t tfm_lora_target_offset(const tfm_lora_bank *bank, int64_t target);
const tfm_lora_desc *tfm_lora_bank_desc(const tfm_lora_bank *bank);

/* Takes `data` (tfm_lora_slot_floats floats, malloc'ed; freed here on
 * failure too) into a free slot and sets *adapter to its new id. */
tfm_status_code tfm_lora_bank_install(tfm_lora_bank *bank, float *data,
                                      const char *name, int32_t *adapter,
                                      tfm_status *status);

/* The slot of `adapter`, now held once more by its caller (released with
 * tfm_lora_release); -1 with the status set (naming `function` and model
 * `model_name`) for an id the bank does not hold (0, "none", is not an
 * adapter) or a model without a bank (NULL). */
int32_t tfm_lora_acquire(tfm_lora_bank *bank, int32_t adapter,
                         const char *function, const char *model_name,
                         tfm_status *status);
void tfm_lora_release(tfm_lora_bank *bank, int32_t adapter);
/* tfm_lora_unload's and tfm_model_lora_slots' work (model.c's). */
tfm_status_code tfm_lora_bank_unload(tfm_lora_bank *bank, int32_t adapter,
                                     tfm_status *status);
int32_t tfm_lora_bank_slots(const tfm_lora_bank *bank);

/* What the kernel of tfm.lora reads during a call: each row's slot (-1:
 * none), `count` of them, or one for every row when count is 1. */
typedef struct {
  const tfm_lora_bank *bank;
  const int32_t *slots;
  int64_t count;
} tfm_lora_rows;

/* Binds `rows` (NULL: no adapter) to this thread's calls until the next
 * bind; returns what was bound before, for the caller to bind back. */
const tfm_lora_rows *tfm_lora_bind(const tfm_lora_rows *rows);
const tfm_lora_rows *tfm_lora_bound(void);
/* Slot `slot`'s matrices. */
const float *tfm_lora_slot_data(const tfm_lora_bank *bank, int32_t slot);

#endif /* TFM_RUNTIME_CORE_LORA_BANK_H */
