/*===- lora_load.c - adapters read into a model's slots ------------------===*
 *
 * tfm_lora_load: a PEFT folder (peft_adapter.c) or a llama.cpp GGUF LoRA
 * file (gguf_adapter.c), laid out (lora_layout.c) in a fresh slot that the
 * model's bank then takes (runtime/core/lora_bank.h).
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/adapters/lora_layout.h"
#include "runtime/core/status.h"

#include <math.h>
#include <stdlib.h>
#include <sys/stat.h>

tfm_status_code tfm_lora_load(tfm_model *model, const char *path, float scale,
                              int32_t *adapter, tfm_status *status) {
  if (!model || !path || !adapter)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_lora_load: NULL %s",
                    !model  ? "model"
                    : !path ? "path"
                            : "adapter");
  if (!isfinite(scale))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_lora_load: %s: the scale must be finite", path);
  tfm_lora_bank *bank = tfm_model_lora_bank(model);
  if (!bank)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_lora_load: model '%s' has no adapter slots (compile "
                    "it with tfmc --lora-slots)",
                    tfm_model_get_desc(model)->name);
  const tfm_lora_desc *desc = tfm_lora_bank_desc(bank);
  lora_layout layout = {
      .path = path, .bank = bank, .scale = scale, .status = status};
  layout.slot = calloc((size_t)tfm_lora_slot_floats(bank), sizeof(float));
  layout.ranks_a = calloc((size_t)desc->num_targets, sizeof(int32_t));
  layout.ranks_b = calloc((size_t)desc->num_targets, sizeof(int32_t));
  struct stat info;
  tfm_status_code code;
  if (!layout.slot || !layout.ranks_a || !layout.ranks_b)
    code = tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  else if (stat(path, &info) == 0 && S_ISREG(info.st_mode))
    code = tfm_lora_read_gguf(&layout); /* a file: llama.cpp's */
  else
    code = tfm_lora_read_peft(&layout);
  if (code == TFM_OK) {
    code = tfm_lora_bank_install(bank, layout.slot, path, adapter, status);
    layout.slot = NULL; /* the bank's now, or freed by it */
  }
  free(layout.slot);
  free(layout.ranks_a);
  free(layout.ranks_b);
  return code;
}
