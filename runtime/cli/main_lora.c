/*===- main_lora.c - --lora: a run-time LoRA adapter for generation -----===//
 *
 * `./model --lora adapter[:0.5] --prompt ...`: a PEFT adapter folder loaded
 * into a slot of a model compiled with tfmc --lora-slots, which the
 * generation (and --logits) then runs with.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/cli/main_internal.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tfm_main_load_lora(const char *argv0, tfm_model *model,
                       const char *argument, int32_t *adapter) {
  /* DIR:SCALE where what follows the last colon is a number; otherwise the
   * whole argument is the folder. */
  char directory[4096];
  snprintf(directory, sizeof directory, "%s", argument);
  float scale = 1.0f;
  char *colon = strrchr(directory, ':');
  if (colon && colon[1]) {
    char *end;
    errno = 0;
    double value = strtod(colon + 1, &end);
    if (*end == '\0' && errno == 0) {
      if (!isfinite(value)) {
        fprintf(stderr, "%s: error: --lora %s: the scale must be finite\n",
                argv0, argument);
        return 1;
      }
      scale = (float)value;
      *colon = '\0';
    }
  }
  tfm_status status;
  if (tfm_lora_load(model, directory, scale, adapter, &status))
    return tfm_main_fail(argv0, status.message);
  return 0;
}
