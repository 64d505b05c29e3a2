/*===- status.h - filling tfm_status (runtime-internal) ----------*- C -*-===*/

#ifndef TFM_RUNTIME_CORE_STATUS_H
#define TFM_RUNTIME_CORE_STATUS_H

#include "tfm/tfm_runtime.h"

/* Sets `status` (may be NULL) to `code` and a printf-style message; returns
 * `code` so that callers can `return tfm_fail(...)`. */
tfm_status_code tfm_fail(tfm_status *status, tfm_status_code code,
                         const char *format, ...)
    __attribute__((format(printf, 3, 4)));

static inline tfm_status_code tfm_ok(tfm_status *status) {
  if (status) {
    status->code = TFM_OK;
    status->message[0] = '\0';
  }
  return TFM_OK;
}

#endif /* TFM_RUNTIME_CORE_STATUS_H */
