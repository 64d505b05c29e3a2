/*===- main_draft.c - --draft: a draft model's library for speculation --===//
 *
 * `./model --draft libsmall.so`: the draft model of speculative decoding
 * is a library tfmc built (--emit=lib), loaded beside the executable's own
 * model. Its description is read from the library and loaded through this
 * executable's runtime, as tfm-serve loads a model, so both models' sessions
 * are of one runtime.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/cli/main_internal.h"

#include <ctype.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

/* NAME_model for .../libNAME.so[.x], as tfmc names a library's symbol
 * (LibraryNames.h: other characters become '_', a leading digit gets
 * "m_"). */
static void model_symbol(const char *path, char *symbol, size_t size) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  if (!strncmp(base, "lib", 3))
    base += 3;
  size_t length = strcspn(base, ".");
  size_t at = 0;
  if (length == 0 || isdigit((unsigned char)base[0]))
    at = (size_t)snprintf(symbol, size, "m_");
  for (size_t i = 0; i < length && at + 1 < size; ++i)
    symbol[at++] = isalnum((unsigned char)base[i]) ? base[i] : '_';
  symbol[at < size ? at : size - 1] = '\0';
  strncat(symbol, "_model", size - strlen(symbol) - 1);
}

int tfm_main_load_draft(const char *argv0, const char *path, void **library,
                        tfm_model **model) {
  tfm_status status;
  /* dlopen maps a library cut short and dies of SIGBUS touching what is
   * not there. */
  if (tfm_model_library_check(path, &status))
    return tfm_main_fail(argv0, status.message);
  /* A name without a '/' is a file here, not one for dlopen to search
   * the library path for. */
  char local[4096];
  if (!strchr(path, '/') &&
      (size_t)snprintf(local, sizeof local, "./%s", path) < sizeof local)
    path = local;
  *library = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!*library) {
    fprintf(stderr, "%s: error: --draft: cannot load '%s': %s\n", argv0, path,
            dlerror());
    return 1;
  }
  char symbol[256];
  model_symbol(path, symbol, sizeof symbol);
  const tfm_model_desc *desc = dlsym(*library, symbol);
  if (!desc) {
    fprintf(stderr,
            "%s: error: --draft: '%s' exports no '%s' (tfmc --emit=lib -o "
            "libNAME.so exports NAME_model)\n",
            argv0, path, symbol);
    return 1;
  }
  if (tfm_model_load(desc, NULL, model, &status)) {
    fprintf(stderr, "%s: error: --draft '%s': %s\n", argv0, path,
            status.message);
    return 1;
  }
  return 0;
}
