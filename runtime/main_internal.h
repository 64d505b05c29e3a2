/*===- main_internal.h - what the executable's two modes share ----------===*/

#ifndef TFM_RUNTIME_MAIN_INTERNAL_H
#define TFM_RUNTIME_MAIN_INTERNAL_H

#include "runtime/tfm_runtime.h"

#include <stddef.h>
#include <stdint.h>

/* Parses "1 2 3" (spaces, tabs or commas between) into `ids` (at most
 * `capacity` stored); returns how many there were, or -1 after reporting
 * what is not an id (`flag` names the option). */
long tfm_main_parse_ids(const char *argv0, const char *flag, const char *text,
                        int32_t *ids, long capacity);

/* Writes `count` floats, little endian; 0 on failure. */
int tfm_main_write_floats(const char *path, const float *values, size_t count);

/* The generic mode (main_call.c): runs entry point `name` with token ids
 * and token types from the command line (types default to zeros), writes
 * its output to `output_path` (raw f32) or prints it. Returns the exit
 * status. */
int tfm_main_call(const char *argv0, tfm_model *model, const char *name,
                  const char *tokens, const char *token_types,
                  const char *output_path);

#endif /* TFM_RUNTIME_MAIN_INTERNAL_H */
