/*===- session_file.c - copying, truncating, saving and loading sessions -===//
 *
 * What a session holds (its tokens, the KV rows of the positions its cache
 * keeps, a hybrid model's recurrent states) copied into another session of
 * the same model, cut back to a prefix, or written to a file and read back.
 *
 * A session file is for the machine and the model that wrote it: native
 * byte order, a header that names the model and the shape of what follows
 * (checked on load, so that a file of another model is refused rather
 * than read as rows of this one), then the tokens, each cache plane's
 * first `cache_used` rows, the rings whole and the states.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/model_internal.h"
#include "runtime/core/ranks.h"
#include "runtime/core/session_internal.h"
#include "runtime/core/status.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

enum { kSessionFileVersion = 2, kNameBytes = 64 };
static const char kMagic[8] = {'T', 'F', 'M', 'S', 'E', 'S', 'S', '\n'};

/* Everything that must agree between the model that saved a session and
 * the one that loads it, then the session's own counts. */
typedef struct {
  char magic[8];
  int64_t version;
  char model[kNameBytes]; /* the model's name, NUL-padded */
  int64_t vocab_size, capacity, cache_shape[5], cache_dtype, ring_shape[5],
      state_elements;
  int64_t length, cache_used, stale;
} session_header;

static void describe(const tfm_session *s, session_header *h) {
  memset(h, 0, sizeof *h);
  memcpy(h->magic, kMagic, sizeof kMagic);
  h->version = kSessionFileVersion;
  const tfm_model_desc *desc = tfm_model_get_desc(s->model);
  strncpy(h->model, desc->name ? desc->name : "", kNameBytes - 1);
  h->vocab_size = desc->vocab_size;
  h->capacity = s->capacity;
  const tfm_cache_desc *kv = tfm_model_kv_cache(s->model);
  if (kv) {
    memcpy(h->cache_shape, kv->shape, sizeof h->cache_shape);
    h->cache_dtype = kv->dtype;
  }
  const tfm_cache_desc *rings = tfm_model_ring_cache(s->model);
  if (rings)
    memcpy(h->ring_shape, rings->shape, sizeof h->ring_shape);
  const tfm_cache_desc *recurrent = tfm_model_recurrent_state(s->model);
  h->state_elements = recurrent ? recurrent->shape[0] : 0;
  h->length = s->length;
  h->cache_used = s->cache_used;
  h->stale = s->stale;
}

/* Bytes of one position's row in one cache plane, and the planes
 * (layers x {K, V}). */
static size_t row_bytes(const tfm_session *s) {
  return (size_t)(s->cache_descriptor.strides[2] * s->element_bytes);
}
static int64_t planes(const tfm_session *s) {
  return s->cache_descriptor.sizes[0] * s->cache_descriptor.sizes[1];
}
static char *plane(const tfm_session *s, int64_t p) {
  return s->cache + p * s->cache_descriptor.strides[1] * s->element_bytes;
}
/* Bytes of the rings, every row of every ring (they are addressed by
 * position, not by slot); 0 without them. */
static size_t ring_bytes(const tfm_session *s) {
  if (!s->rings)
    return 0;
  const tfm_memref5d_f32 *d = &s->rings_descriptor;
  return (size_t)(d->sizes[0] * d->strides[0] * s->element_bytes);
}
static size_t state_bytes(const tfm_session *s) {
  return (size_t)s->state_descriptor.sizes[0] * sizeof(float);
}

tfm_status_code tfm_session_copy(tfm_session *to, const tfm_session *from,
                                 tfm_status *status) {
  if (!to || !from)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_session_copy: NULL %s session",
                    to ? "source" : "destination");
  if (to->model != from->model)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_session_copy: the sessions belong to different "
                    "models ('%s' and '%s')",
                    tfm_model_get_desc(to->model)->name,
                    tfm_model_get_desc(from->model)->name);
  if (to == from)
    return tfm_ok(status);
  /* The rows are the source's adapter's. */
  tfm_status_code code = tfm_session_set_lora(to, from->lora_adapter, status);
  if (code != TFM_OK)
    return code;
  /* Through the model's own moves: GPU memory for a GPU model, mirrored on
   * every rank for a split one. */
  int moved = 1;
  for (int64_t p = 0; from->cache && p < planes(from); ++p)
    moved &= tfm_model_state_move(to->model, plane(to, p), plane(from, p),
                                  (size_t)from->cache_used * row_bytes(from));
  if (from->rings)
    moved &= tfm_model_state_move(to->model, to->rings, from->rings,
                                  ring_bytes(from));
  if (from->state)
    moved &= tfm_model_state_move(to->model, to->state, from->state,
                                  state_bytes(from));
  memcpy(to->tokens, from->tokens, (size_t)from->length * sizeof *to->tokens);
  tfm_status_code images = tfm_session_copy_image_rows(to, from, status);
  if (images != TFM_OK) {
    tfm_session_reset(to);
    return images;
  }
  to->length = from->length;
  to->cache_used = from->cache_used;
  to->stale = from->stale;
  to->stale_from = from->stale_from;
  to->ring_keep.count = to->state_kept_count = 0;
  if (!moved) {
    tfm_session_reset(to);
    return tfm_model_check_device(to->model, "tfm_session_copy", status);
  }
  return tfm_ok(status);
}

tfm_status_code tfm_session_truncate(tfm_session *s, int64_t length,
                                     tfm_status *status) {
  if (!s)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_session_truncate: NULL session");
  if (length < 0 || length > s->length)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_session_truncate: %lld positions asked for, the "
                    "session holds %lld",
                    (long long)length, (long long)s->length);
  if (length == s->length)
    return tfm_ok(status);
  if (length == 0) {
    tfm_session_reset(s);
    return tfm_ok(status);
  }
  /* Slot i holds position i until a sliding window first slides: the
   * first `length` rows are then the prefix's. A recurrent state has
   * folded in every position, and a slid window lost the first ones, so
   * those are recomputed from the kept tokens by the next prefill. So are
   * rings cut back by more than a position (the positions after the
   * prefix may have overwritten rows its next query sees: that of
   * position p - 1 + window, for p the first of them, once written),
   * unless the last call was a @verify whose overwritten rows were kept:
   * those are put back. */
  int rings_overwritten = s->rings && s->length - length >= 2;
  if (rings_overwritten &&
      tfm_ring_keep_covers(&s->ring_keep, length, s->length))
    rings_overwritten =
        !tfm_ring_keep_restore(s->model, &s->ring_geometry, &s->ring_keep,
                               s->rings, length, s->length);
  int64_t states_right = tfm_session_go_back_in_states(s, length);
  /* The positions still right: recomputed from the first that is not
   * (a slid window lost its first positions: from 0). */
  int64_t right = rings_overwritten || s->cache_used != s->length ? 0
                  : states_right < length                         ? states_right
                                                                  : length;
  if (s->stale && s->stale_from < right)
    right = s->stale_from;
  tfm_session_keep_image_rows(s, length);
  if (right == length && !s->stale) {
    s->cache_used = length;
  } else if (s->cache) {
    s->stale = 1;
    s->stale_from = right;
  }
  s->length = length;
  return tfm_ok(status);
}

int64_t tfm_session_cached(const tfm_session *s) {
  return !s ? 0 : s->stale ? s->stale_from : s->length;
}

/* Save and load read the cache and states with the host's memcpy. */
static tfm_status_code check_host_state(const tfm_session *s, const char *what,
                                        tfm_status *status) {
  const char *name = tfm_model_get_desc(s->model)->name;
  if (tfm_model_on_gpu(s->model))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "%s: model '%s' keeps its cache in GPU memory; sessions "
                    "of --target=cuda models are not saved or loaded yet",
                    what, name);
  if (tfm_model_ranks(s->model) > 1)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "%s: model '%s' is split over %d ranks, each holding its "
                    "part of the cache; its sessions are not saved or loaded "
                    "yet",
                    what, name, tfm_model_ranks(s->model));
  /* Nor does it hold an image's rows, which a run again would need. */
  if (tfm_session_holds_image_rows(s))
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "%s: the session holds an image's rows, which a session "
                    "file does not keep; sessions of text alone are saved "
                    "and loaded",
                    what);
  /* A file does not say which adapter computed its rows. */
  if (s->lora_adapter)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "%s: the session runs with LoRA adapter %d, whose rows a "
                    "session file cannot name; sessions without an adapter "
                    "are saved and loaded",
                    what, s->lora_adapter);
  return TFM_OK;
}

tfm_status_code tfm_session_save(const tfm_session *s, const char *path,
                                 tfm_status *status) {
  if (!s || !path)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_session_save: NULL %s", s ? "path" : "session");
  tfm_status_code code = check_host_state(s, "tfm_session_save", status);
  if (code != TFM_OK)
    return code;
  FILE *file = fopen(path, "wb");
  if (!file)
    return tfm_fail(status, TFM_ERROR_IO, "cannot write session file '%s': %s",
                    path, strerror(errno));
  session_header header;
  describe(s, &header);
  int ok = fwrite(&header, sizeof header, 1, file) == 1;
  if (s->length)
    ok &= fwrite(s->tokens, sizeof *s->tokens, (size_t)s->length, file) ==
          (size_t)s->length;
  for (int64_t p = 0; ok && s->cache && p < planes(s); ++p)
    ok &= s->cache_used == 0 ||
          fwrite(plane(s, p), row_bytes(s), (size_t)s->cache_used, file) ==
              (size_t)s->cache_used;
  if (ok && s->rings)
    ok &= fwrite(s->rings, ring_bytes(s), 1, file) == 1;
  if (ok && s->state)
    ok &= fwrite(s->state, state_bytes(s), 1, file) == 1;
  ok &= fclose(file) == 0;
  if (!ok)
    return tfm_fail(status, TFM_ERROR_IO, "cannot write session file '%s': %s",
                    path, strerror(errno));
  return tfm_ok(status);
}

/* The first field in which a file's header and this session's differ, or
 * NULL; `theirs`/`ours` receive the two values of a numeric one. */
static const char *mismatch(const session_header *file,
                            const session_header *self, int64_t *theirs,
                            int64_t *ours) {
  static const struct {
    const char *name;
    size_t offset;
  } fields[] = {
      {"vocabulary size", offsetof(session_header, vocab_size)},
      {"capacity in positions", offsetof(session_header, capacity)},
      {"cache layers", offsetof(session_header, cache_shape[0])},
      {"cache planes", offsetof(session_header, cache_shape[1])},
      {"cache positions", offsetof(session_header, cache_shape[2])},
      {"cache heads", offsetof(session_header, cache_shape[3])},
      {"cache head size", offsetof(session_header, cache_shape[4])},
      {"cache dtype", offsetof(session_header, cache_dtype)},
      {"ring layers", offsetof(session_header, ring_shape[0])},
      {"ring rows", offsetof(session_header, ring_shape[2])},
      {"ring heads", offsetof(session_header, ring_shape[3])},
      {"ring head size", offsetof(session_header, ring_shape[4])},
      {"recurrent state elements", offsetof(session_header, state_elements)},
  };
  for (size_t i = 0; i < sizeof fields / sizeof *fields; ++i) {
    memcpy(theirs, (const char *)file + fields[i].offset, sizeof *theirs);
    memcpy(ours, (const char *)self + fields[i].offset, sizeof *ours);
    if (*theirs != *ours)
      return fields[i].name;
  }
  return NULL;
}

static tfm_status_code read_header(tfm_session *s, FILE *file, const char *path,
                                   session_header *header, tfm_status *status) {
  if (fread(header, sizeof *header, 1, file) != 1 ||
      memcmp(header->magic, kMagic, sizeof kMagic) != 0)
    return tfm_fail(status, TFM_ERROR_IO,
                    "'%s' is not a tfmc session file (no session header)",
                    path);
  if (header->version != kSessionFileVersion)
    return tfm_fail(status, TFM_ERROR_IO,
                    "session file '%s' has version %lld; this runtime reads "
                    "version %d",
                    path, (long long)header->version, kSessionFileVersion);
  session_header self;
  describe(s, &self);
  header->model[kNameBytes - 1] = '\0';
  if (strcmp(header->model, self.model) != 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "session file '%s' was saved from model '%s', not '%s'",
                    path, header->model, self.model);
  int64_t theirs, ours;
  const char *field = mismatch(header, &self, &theirs, &ours);
  if (field)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "session file '%s': its %s is %lld, model '%s' has %lld "
                    "(saved from another model or another build of it)",
                    path, field, (long long)theirs, self.model,
                    (long long)ours);
  int64_t rows = s->cache ? s->cache_capacity : 0;
  if (header->length < 0 || header->length > s->capacity ||
      header->cache_used < 0 || header->cache_used > rows ||
      header->cache_used > header->length ||
      (!s->window && s->cache && header->cache_used != header->length) ||
      (header->stale != 0 && header->stale != 1))
    return tfm_fail(status, TFM_ERROR_IO,
                    "session file '%s' is corrupt: %lld positions with %lld "
                    "cached, in a session of %lld (cache of %lld)",
                    path, (long long)header->length,
                    (long long)header->cache_used, (long long)s->capacity,
                    (long long)rows);
  return TFM_OK;
}

static tfm_status_code read_body(tfm_session *s, FILE *file, const char *path,
                                 const session_header *header,
                                 tfm_status *status) {
  size_t length = (size_t)header->length, used = (size_t)header->cache_used;
  int ok = fread(s->tokens, sizeof *s->tokens, length, file) == length;
  for (int64_t p = 0; ok && s->cache && p < planes(s); ++p)
    ok &= used == 0 || fread(plane(s, p), row_bytes(s), used, file) == used;
  if (ok && s->rings)
    ok &= fread(s->rings, ring_bytes(s), 1, file) == 1;
  if (ok && s->state)
    ok &= fread(s->state, state_bytes(s), 1, file) == 1;
  if (!ok)
    return tfm_fail(status, TFM_ERROR_IO,
                    "session file '%s' is truncated: its header promises "
                    "%lld tokens, %lld cached rows, the rings and %lld "
                    "state floats",
                    path, (long long)header->length,
                    (long long)header->cache_used,
                    (long long)header->state_elements);
  if (fgetc(file) != EOF)
    return tfm_fail(status, TFM_ERROR_IO,
                    "session file '%s' has bytes past what its header "
                    "promises",
                    path);
  tfm_status_code code = tfm_check_token_ids(tfm_model_get_desc(s->model),
                                             s->tokens, header->length, status);
  if (code != TFM_OK)
    return code;
  s->length = header->length;
  s->ring_keep.count = s->state_kept_count = 0;
  s->stale_from = 0;
  s->cache_used = header->cache_used;
  s->stale = (int)header->stale;
  return TFM_OK;
}

tfm_status_code tfm_session_load(tfm_session *s, const char *path,
                                 tfm_status *status) {
  if (!s || !path)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_session_load: NULL %s", s ? "path" : "session");
  tfm_status_code code = check_host_state(s, "tfm_session_load", status);
  if (code != TFM_OK)
    return code;
  tfm_session_reset(s);
  FILE *file = fopen(path, "rb");
  if (!file)
    return tfm_fail(status, TFM_ERROR_IO, "cannot read session file '%s': %s",
                    path, strerror(errno));
  session_header header;
  code = read_header(s, file, path, &header, status);
  if (code == TFM_OK)
    code = read_body(s, file, path, &header, status);
  fclose(file);
  if (code != TFM_OK) {
    /* Whatever was read in part is forgotten. */
    tfm_session_reset(s);
    return code;
  }
  return tfm_ok(status);
}
