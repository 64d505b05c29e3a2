/* Every heap allocation of the runtime, failed one at a time: linked with
 * -Wl,--wrap for malloc, calloc, realloc, posix_memalign and aligned_alloc,
 * so that each call from the runtime and the compiled model comes here.
 * A whole application's work (load the model, its tokenizer, encode a
 * prompt, open a session, generate with a stop string, free everything)
 * runs once to count its allocations, then once per allocation with that
 * one failing, then once per allocation with it and every later one
 * failing (memory that ran out). Each run must end in an error status
 * with a message, or succeed with the same text as the first: never a
 * crash. Prints what it saw. */
#include "model.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void *__real_malloc(size_t size);
void *__real_calloc(size_t count, size_t size);
void *__real_realloc(void *pointer, size_t size);
int __real_posix_memalign(void **pointer, size_t alignment, size_t size);
void *__real_aligned_alloc(size_t alignment, size_t size);

/* Allocation calls so far; the one numbered `fail_from` fails, and so do
 * all after it while `fail_onward`. Negative: none fails. */
static long long calls, fail_from = -1;
static int fail_onward;

static int should_fail(void) {
  long long call = calls++;
  if (fail_from < 0 || call < fail_from || (call > fail_from && !fail_onward))
    return 0;
  errno = ENOMEM;
  return 1;
}

void *__wrap_malloc(size_t size) {
  return should_fail() ? NULL : __real_malloc(size);
}
void *__wrap_calloc(size_t count, size_t size) {
  return should_fail() ? NULL : __real_calloc(count, size);
}
void *__wrap_realloc(void *pointer, size_t size) {
  return should_fail() ? NULL : __real_realloc(pointer, size);
}
int __wrap_posix_memalign(void **pointer, size_t alignment, size_t size) {
  return should_fail() ? ENOMEM
                       : __real_posix_memalign(pointer, alignment, size);
}
void *__wrap_aligned_alloc(size_t alignment, size_t size) {
  return should_fail() ? NULL : __real_aligned_alloc(alignment, size);
}

typedef struct {
  char text[4096];
  size_t size;
} collected_text;

static int collect(void *user, int32_t token, const char *text, size_t size) {
  (void)token;
  collected_text *out = user;
  if (out->size + size < sizeof out->text) {
    memcpy(out->text + out->size, text, size);
    out->size += size;
  }
  return 0;
}

/* The application: its status, and its text in `out`. */
static tfm_status_code run(collected_text *out, tfm_status *status) {
  memset(out, 0, sizeof *out);
  tfm_model *model = NULL;
  tfm_session *session = NULL;
  tfm_status_code code = tfm_model_load(&model_model, NULL, &model, status);
  tfm_tokenizer *tokenizer =
      code == TFM_OK ? tfm_model_tokenizer(model, status) : NULL;
  if (code == TFM_OK && !tokenizer)
    code = status->code;
  int32_t prompt[64];
  int64_t length = 0;
  if (code == TFM_OK)
    code = tfm_tokenizer_encode(tokenizer, "Once upon a time", 1, prompt, 64,
                                &length, status);
  if (code == TFM_OK)
    code = tfm_session_new(model, &session, status);
  if (code == TFM_OK) {
    static const char *const stops[] = {"unicorn"};
    tfm_generate_options options = {0};
    options.max_new_tokens = 12;
    options.sampler = tfm_sampler_default_options();
    options.stop_strings = stops;
    options.stop_string_count = 1;
    options.on_token = collect;
    options.user = out;
    code = tfm_generate(session, prompt, length, &options, NULL, status);
  }
  tfm_session_free(session);
  tfm_model_free(model);
  return code;
}

/* Runs the application with allocation `from` failing (and every later
 * one, when `onward`) for each allocation it makes; counts the outcomes.
 * Returns 0 when every run failed cleanly or matched `reference`. */
static int sweep(long long allocations, int onward,
                 const collected_text *reference) {
  long long refused = 0, recovered = 0, wrong = 0;
  for (long long from = 0; from < allocations; ++from) {
    collected_text text;
    tfm_status status = {TFM_OK, ""};
    calls = 0;
    fail_onward = onward;
    fail_from = from;
    tfm_status_code code = run(&text, &status);
    fail_from = -1;
    if (code != TFM_OK && status.code == code && status.message[0]) {
      ++refused;
    } else if (code == TFM_OK && text.size == reference->size &&
               !memcmp(text.text, reference->text, text.size)) {
      ++recovered;
    } else {
      ++wrong;
      printf("allocation %lld%s failing: status %d '%s', text '%.*s'\n", from,
             onward ? " onward" : "", code, status.message, (int)text.size,
             text.text);
    }
  }
  printf("%s: %lld runs, %lld refused with a status, %lld recovered, %lld "
         "wrong\n",
         onward ? "every allocation from the Nth" : "the Nth allocation",
         allocations, refused, recovered, wrong);
  return wrong ? 1 : 0;
}

int main(void) {
  collected_text reference;
  tfm_status status;
  calls = 0;
  if (run(&reference, &status) != TFM_OK) {
    printf("error: %s\n", status.message);
    return 1;
  }
  long long allocations = calls;
  printf("reference: %lld allocations, text '%.*s'\n", allocations,
         (int)reference.size, reference.text);
  int failed = sweep(allocations, 0, &reference);
  failed |= sweep(allocations, 1, &reference);
  return failed;
}
