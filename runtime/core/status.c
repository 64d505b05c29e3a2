/*===- status.c - filling tfm_status ------------------------------------===*/

#include "runtime/core/status.h"

#include <stdarg.h>
#include <stdio.h>

tfm_status_code tfm_fail(tfm_status *status, tfm_status_code code,
                         const char *format, ...) {
  if (status) {
    status->code = code;
    va_list args;
    va_start(args, format);
    vsnprintf(status->message, sizeof status->message, format, args);
    va_end(args);
  }
  return code;
}
