/*===- lora_bank.c - run-time LoRA adapters' slots -----------------------===*
 *
 * See lora_bank.h. Loading, unloading and acquiring take the bank's lock;
 * a call reads a slot it holds (acquired), which no unload can free.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/lora_bank.h"

#include "runtime/core/status.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  float *data;     /* NULL: free */
  int32_t adapter; /* its id */
  int64_t users;   /* sessions and engine sequences running with it */
  char name[256];  /* where it came from, for messages */
} lora_slot;

struct tfm_lora_bank {
  const tfm_lora_desc *desc;
  int64_t slot_floats;
  int64_t *offsets; /* each target's A within a slot */
  lora_slot *slots;
  int32_t next_adapter;
  pthread_mutex_t lock;
};

static _Thread_local const tfm_lora_rows *bound_rows;

tfm_lora_bank *tfm_lora_bank_new(const tfm_lora_desc *desc, int *failed) {
  *failed = 0;
  if (!desc || desc->slots <= 0)
    return NULL;
  tfm_lora_bank *bank = calloc(1, sizeof *bank);
  int64_t *offsets = calloc((size_t)desc->num_targets, sizeof *offsets);
  lora_slot *slots = calloc((size_t)desc->slots, sizeof *slots);
  if (!bank || !offsets || !slots) {
    free(bank);
    free(offsets);
    free(slots);
    *failed = 1;
    return NULL;
  }
  bank->desc = desc;
  bank->offsets = offsets;
  bank->slots = slots;
  for (int32_t t = 0; t < desc->num_targets; ++t) {
    const tfm_lora_target *target = &desc->targets[t];
    bank->offsets[t] = bank->slot_floats;
    bank->slot_floats +=
        desc->rank * (target->in_features + target->out_features);
  }
  bank->next_adapter = 1;
  pthread_mutex_init(&bank->lock, NULL);
  return bank;
}

void tfm_lora_bank_free(tfm_lora_bank *bank) {
  if (!bank)
    return;
  for (int32_t i = 0; i < bank->desc->slots; ++i)
    free(bank->slots[i].data);
  pthread_mutex_destroy(&bank->lock);
  free(bank->slots);
  free(bank->offsets);
  free(bank);
}

int64_t tfm_lora_slot_floats(const tfm_lora_bank *bank) {
  return bank->slot_floats;
}

int64_t tfm_lora_target_offset(const tfm_lora_bank *bank, int64_t target) {
  return bank->offsets[target];
}

const tfm_lora_desc *tfm_lora_bank_desc(const tfm_lora_bank *bank) {
  return bank->desc;
}

const float *tfm_lora_slot_data(const tfm_lora_bank *bank, int32_t slot) {
  return bank->slots[slot].data;
}

int32_t tfm_lora_bank_slots(const tfm_lora_bank *bank) {
  return bank ? bank->desc->slots : 0;
}

tfm_status_code tfm_lora_bank_install(tfm_lora_bank *bank, float *data,
                                      const char *name, int32_t *adapter,
                                      tfm_status *status) {
  pthread_mutex_lock(&bank->lock);
  int32_t free_slot = -1;
  for (int32_t i = 0; i < bank->desc->slots && free_slot < 0; ++i)
    if (!bank->slots[i].data)
      free_slot = i;
  if (free_slot < 0) {
    pthread_mutex_unlock(&bank->lock);
    free(data);
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_lora_load: %s: the model's %d adapter slots are all "
                    "taken (tfm_lora_unload one, or compile with a larger "
                    "--lora-slots)",
                    name, bank->desc->slots);
  }
  lora_slot *slot = &bank->slots[free_slot];
  slot->data = data;
  slot->adapter = bank->next_adapter++;
  slot->users = 0;
  snprintf(slot->name, sizeof slot->name, "%s", name);
  *adapter = slot->adapter;
  pthread_mutex_unlock(&bank->lock);
  return tfm_ok(status);
}

/* The slot holding `adapter`, with the lock held; -1 when none does. */
static int32_t slot_of(const tfm_lora_bank *bank, int32_t adapter) {
  for (int32_t i = 0; i < bank->desc->slots; ++i)
    if (bank->slots[i].data && bank->slots[i].adapter == adapter)
      return i;
  return -1;
}

int32_t tfm_lora_acquire(tfm_lora_bank *bank, int32_t adapter,
                         const char *function, const char *model_name,
                         tfm_status *status) {
  if (!bank) {
    tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
             "%s: LoRA adapter %d asked for, but model '%s' has no adapter "
             "slots (compile it with tfmc --lora-slots)",
             function, adapter, model_name);
    return -1;
  }
  pthread_mutex_lock(&bank->lock);
  int32_t slot = slot_of(bank, adapter);
  if (slot >= 0)
    ++bank->slots[slot].users;
  pthread_mutex_unlock(&bank->lock);
  if (slot < 0)
    tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
             "%s: no LoRA adapter %d is loaded in model '%s'", function,
             adapter, model_name);
  return slot;
}

void tfm_lora_release(tfm_lora_bank *bank, int32_t adapter) {
  if (!bank || adapter <= 0)
    return;
  pthread_mutex_lock(&bank->lock);
  int32_t slot = slot_of(bank, adapter);
  if (slot >= 0 && bank->slots[slot].users > 0)
    --bank->slots[slot].users;
  pthread_mutex_unlock(&bank->lock);
}

tfm_status_code tfm_lora_bank_unload(tfm_lora_bank *bank, int32_t adapter,
                                     tfm_status *status) {
  pthread_mutex_lock(&bank->lock);
  int32_t slot = slot_of(bank, adapter);
  tfm_status_code code = TFM_OK;
  if (slot < 0)
    code = tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_lora_unload: no LoRA adapter %d is loaded", adapter);
  else if (bank->slots[slot].users > 0)
    code = tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_lora_unload: adapter %d (%s) is in use by %lld "
                    "session(s) or request(s)",
                    adapter, bank->slots[slot].name,
                    (long long)bank->slots[slot].users);
  else {
    free(bank->slots[slot].data);
    bank->slots[slot].data = NULL;
    tfm_ok(status);
  }
  pthread_mutex_unlock(&bank->lock);
  return code;
}

const tfm_lora_rows *tfm_lora_bind(const tfm_lora_rows *rows) {
  const tfm_lora_rows *before = bound_rows;
  bound_rows = rows;
  return before;
}

const tfm_lora_rows *tfm_lora_bound(void) { return bound_rows; }
