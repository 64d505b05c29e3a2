/*===- model.c - loading compiled models and running them ---------------===//
 *
 * Weights are appended to the executable or library, in a side file, or
 * embedded (.rodata, static libraries); the files are mapped read-only, and
 * all are checked against the size and checksum the model
 * was compiled with, so a binary never runs with weights it was not built
 * for.
 *
 *===----------------------------------------------------------------------===*/

#define _GNU_SOURCE
#include "runtime/core/buffer_cache.h"
#include "runtime/core/lora_bank.h"
#include "runtime/core/model_internal.h"
#include "runtime/core/ranks.h"
#include "runtime/core/status.h"
#include "runtime/cuda/cuda_driver.h"
#include "tfm/tfm_format.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

struct tfm_model {
  const tfm_model_desc *desc;
  tfm_forward_fn forward;
  /* Called as tfm_prefill_fn, with the rings after the cache where
   * ring_cache is set and the states after them where recurrent_state is
   * (tfm_run_prefill). */
  void (*prefill)(void), (*decode)(void);
  /* @verify, with @prefill's signature (NULL unless compiled with
   * --speculative). */
  void (*verify)(void);
  /* A vision-language model's @prefill_embeddings: @prefill's signature
   * with rows in place of the tokens (NULL for other models). */
  void (*prefill_embeddings)(void);
  const tfm_cache_desc *kv_cache, *ring_cache, *recurrent_state;
  const uint8_t *weights;
  /* A GPU model's copy of the weights in GPU memory, made at load. */
  void *device_weights;
  void *mapping; /* non-NULL when the weights are a mapped side file */
  size_t mapping_size;
  tfm_tokenizer *tokenizer;
  /* This process's rank of a split model (ranks.h); 0 otherwise. */
  int32_t rank;
  /* Run-time LoRA adapters' slots (tfmc --lora-slots), or NULL. */
  tfm_lora_bank *lora;
};

tfm_lora_bank *tfm_model_lora_bank(const tfm_model *model) {
  return model->lora;
}

int32_t tfm_model_lora_slots(const tfm_model *model) {
  return model ? tfm_lora_bank_slots(model->lora) : 0;
}

tfm_status_code tfm_lora_unload(tfm_model *model, int32_t adapter,
                                tfm_status *status) {
  if (!model || !model->lora)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT, "tfm_lora_unload: %s",
                    model ? "the model has no adapter slots" : "NULL model");
  return tfm_lora_bank_unload(model->lora, adapter, status);
}

int32_t tfm_model_ranks(const tfm_model *model) {
  return model->desc->ranks > 1 ? model->desc->ranks : 1;
}

double tfm_model_code_begin(const tfm_model *model) {
  return tfm_model_ranks(model) > 1 ? tfm_ranks_call_begin() : 0;
}

void tfm_model_code_end(const tfm_model *model, double begun) {
  if (tfm_model_ranks(model) > 1)
    tfm_ranks_call_end(begun);
}

tfm_status_code tfm_model_rank_stats(const tfm_model *model,
                                     tfm_rank_stats *out, tfm_status *status) {
  if (!model || !out)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_model_rank_stats: NULL %s", !model ? "model" : "out");
  if (tfm_model_ranks(model) <= 1)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_model_rank_stats: model '%s' is not split over ranks",
                    model->desc->name);
  /* The other ranks follow rank 0 and answer its gather. */
  if (!tfm_model_leads(model) || !tfm_ranks_gather_stats)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_model_rank_stats: only rank 0 gathers the ranks' "
                    "figures");
  tfm_ranks_gather_stats(model, out);
  return tfm_ok(status);
}

int tfm_model_leads(const tfm_model *model) {
  return tfm_model_ranks(model) > 1 && model->rank == 0;
}

/* Resolves a relative side-file name against the executable's folder. */
static void resolve_beside_executable(const char *name, char *path,
                                      size_t size) {
  if (name[0] == '/') {
    snprintf(path, size, "%s", name);
    return;
  }
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) {
    snprintf(path, size, "%s", name);
    return;
  }
  exe[n] = '\0';
  char *slash = strrchr(exe, '/');
  if (slash)
    *slash = '\0';
  if ((size_t)snprintf(path, size, "%s/%s", exe, name) >= size)
    snprintf(path, size, "%s", name);
}

/* Maps `size` bytes of `fd` from `offset` (page-aligned) at an address
 * congruent to the offset modulo TFM_APPENDED_ALIGNMENT, so that the page
 * cache's large folios map as contiguous runs (see kHugeSegments in the
 * packager: a cold pass over misaligned weights ran 3-4x slower). */
static void *map_aligned(int fd, uint64_t offset, uint64_t size) {
  const uint64_t align = TFM_APPENDED_ALIGNMENT;
  uint8_t *reserved = mmap(NULL, size + align, PROT_NONE,
                           MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (reserved == MAP_FAILED)
    return MAP_FAILED;
  uintptr_t want = offset % align;
  uintptr_t address = (uintptr_t)reserved;
  uintptr_t start = address - address % align + want;
  if (start < address)
    start += align;
  void *mapping = mmap((void *)start, size, PROT_READ, MAP_PRIVATE | MAP_FIXED,
                       fd, (off_t)offset);
  if (mapping == MAP_FAILED) {
    munmap(reserved, size + align);
    return MAP_FAILED;
  }
  /* Give back the reservation around the mapping. */
  if (start > address)
    munmap(reserved, start - address);
  uintptr_t end = start + size, reserved_end = address + size + align;
  uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
  end = (end + page - 1) / page * page;
  if (reserved_end > end)
    munmap((void *)end, reserved_end - end);
  return mapping;
}

/* Maps `desc->weights_size` bytes of `path` from `offset`. */
static tfm_status_code map_weights_at(tfm_model *model, int fd,
                                      const char *path, uint64_t offset,
                                      tfm_status *status) {
  const tfm_model_desc *desc = model->desc;
  void *mapping = desc->weights_size
                      ? map_aligned(fd, offset, desc->weights_size)
                      : NULL;
  close(fd);
  if (desc->weights_size && mapping == MAP_FAILED)
    return tfm_fail(status, TFM_ERROR_WEIGHTS, "cannot map '%s': %s", path,
                    strerror(errno));
  model->mapping = mapping;
  model->mapping_size = desc->weights_size;
  model->weights = mapping;
  return TFM_OK;
}

/* Bytes of every rank's weights together: the file's (or what is
 * appended). */
static uint64_t weights_span(const tfm_model_desc *desc) {
  if (desc->ranks <= 1)
    return desc->weights_size;
  return desc->rank_stride * (uint64_t)(desc->ranks - 1) + desc->weights_size;
}

/* Where this rank's weights start among them. */
static uint64_t rank_offset(const tfm_model *model) {
  return model->desc->rank_stride * (uint64_t)model->rank;
}

static tfm_status_code map_side_file(tfm_model *model, const char *path,
                                     tfm_status *status) {
  const tfm_model_desc *desc = model->desc;
  int fd = open(path, O_RDONLY);
  if (fd < 0)
    return tfm_fail(status, TFM_ERROR_WEIGHTS,
                    "cannot open weights file '%s': %s", path,
                    strerror(errno));
  struct stat st;
  if (fstat(fd, &st) != 0 || (uint64_t)st.st_size != weights_span(desc)) {
    close(fd);
    return tfm_fail(status, TFM_ERROR_WEIGHTS,
                    "weights file '%s' has %lld bytes, model '%s' was "
                    "compiled for %llu",
                    path, (long long)st.st_size, desc->name,
                    (unsigned long long)weights_span(desc));
  }
  return map_weights_at(model, fd, path, rank_offset(model), status);
}

/* The file the weights were appended to: this executable, or the shared
 * library that holds the description. */
static int appended_weights_file(const tfm_model_desc *desc, char *path,
                                 size_t size) {
  if (desc->weights_appended == TFM_WEIGHTS_APPENDED_TO_EXECUTABLE) {
    snprintf(path, size, "/proc/self/exe");
    return 1;
  }
  /* Not dladdr(desc): an executable that links the library may hold a
   * copy of the description (a copy relocation), while the entry-point
   * table, hidden, stays in the library. */
  Dl_info info;
  if (!desc->entry_points || !dladdr(desc->entry_points, &info) ||
      !info.dli_fname || !info.dli_fname[0])
    return 0;
  snprintf(path, size, "%s", info.dli_fname);
  return 1;
}

static tfm_status_code map_appended(tfm_model *model, tfm_status *status) {
  const tfm_model_desc *desc = model->desc;
  char path[PATH_MAX];
  if (!appended_weights_file(desc, path, sizeof path))
    return tfm_fail(status, TFM_ERROR_WEIGHTS,
                    "cannot find the file that holds model '%s'", desc->name);
  int fd = open(path, O_RDONLY);
  if (fd < 0)
    return tfm_fail(status, TFM_ERROR_WEIGHTS, "cannot open '%s': %s", path,
                    strerror(errno));
  /* The trailer must say exactly what the description does, and lie
   * inside the file, before anything is mapped. */
  struct stat st;
  tfm_appended_trailer trailer;
  uint64_t file_size = 0;
  int found = fstat(fd, &st) == 0 &&
              (file_size = (uint64_t)st.st_size) >= sizeof trailer &&
              pread(fd, &trailer, sizeof trailer,
                    (off_t)(file_size - sizeof trailer)) ==
                  (ssize_t)sizeof trailer &&
              memcmp(trailer.magic, TFM_APPENDED_MAGIC,
                     sizeof trailer.magic) == 0;
  if (!found) {
    close(fd);
    return tfm_fail(status, TFM_ERROR_WEIGHTS,
                    "'%s' has no weights appended (was it stripped or "
                    "truncated?); compile model '%s' again",
                    path, desc->name);
  }
  if (trailer.size != weights_span(desc) ||
      trailer.checksum != desc->weights_checksum ||
      trailer.offset % TFM_APPENDED_ALIGNMENT != 0 ||
      trailer.offset > file_size - sizeof trailer ||
      trailer.size != file_size - sizeof trailer - trailer.offset) {
    close(fd);
    return tfm_fail(status, TFM_ERROR_WEIGHTS,
                    "the weights appended to '%s' (%llu bytes at offset "
                    "%llu of %llu) are not the %llu bytes model '%s' was "
                    "compiled with",
                    path, (unsigned long long)trailer.size,
                    (unsigned long long)trailer.offset,
                    (unsigned long long)file_size,
                    (unsigned long long)weights_span(desc), desc->name);
  }
  return map_weights_at(model, fd, path, trailer.offset + rank_offset(model),
                        status);
}

const tfm_entry_point *tfm_model_entry_point(const tfm_model *model,
                                             const char *name) {
  if (!model || !name)
    return NULL;
  const tfm_model_desc *desc = model->desc;
  for (int32_t i = 0; i < desc->num_entry_points; ++i)
    if (strcmp(desc->entry_points[i].name, name) == 0)
      return &desc->entry_points[i];
  return NULL;
}

/* The entry points sessions and tfm_forward call with their known
 * signatures, the cache @prefill appends to and, for a model with
 * recurrent layers, the states it updates beside it. */
static void find_language_model_entry_points(tfm_model *model) {
  const tfm_entry_point *forward = tfm_model_entry_point(model, "forward");
  const tfm_entry_point *prefill = tfm_model_entry_point(model, "prefill");
  const tfm_entry_point *decode = tfm_model_entry_point(model, "decode");
  const tfm_cache_desc *caches = model->desc->caches;
  model->forward = forward ? (tfm_forward_fn)forward->function : NULL;
  if (!prefill || !decode || prefill->num_caches < 1 ||
      caches[prefill->caches[0]].kind != TFM_CACHE_SELF_ATTENTION)
    return;
  /* After the cache: the rings of windowed layers whose keys differ, then
   * a hybrid's recurrent states. */
  const tfm_cache_desc *rings = NULL, *state = NULL;
  int32_t next = 1;
  if (next < prefill->num_caches &&
      caches[prefill->caches[next]].kind == TFM_CACHE_SELF_ATTENTION_RINGS)
    rings = &caches[prefill->caches[next++]];
  if (next < prefill->num_caches &&
      caches[prefill->caches[next]].kind == TFM_CACHE_RECURRENT_STATE)
    state = &caches[prefill->caches[next++]];
  if (next != prefill->num_caches)
    return;
  model->prefill = prefill->function;
  model->decode = decode->function;
  const tfm_entry_point *verify = tfm_model_entry_point(model, "verify");
  model->verify = verify ? verify->function : NULL;
  const tfm_entry_point *rows =
      tfm_model_entry_point(model, "prefill_embeddings");
  model->prefill_embeddings =
      rows && rows->num_caches == prefill->num_caches ? rows->function : NULL;
  model->kv_cache = &caches[prefill->caches[0]];
  model->ring_cache = rings;
  model->recurrent_state = state;
}

static tfm_status_code out_of_memory(const tfm_model *model,
                                     const char *entry, tfm_status *status) {
  /* The other ranks of a split model may wait in the call's all-reduces:
   * end them all rather than leave them hanging. */
  if (tfm_model_leads(model))
    tfm_ranks_abort("the model's code ran out of memory");
  /* A GPU's allocations fail after any GPU error: report that instead. */
  if (tfm_model_on_gpu(model) && tfm_cuda_error())
    return tfm_model_check_device(model, entry, status);
  return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                  "@%s of model '%s' ran out of memory", entry,
                  model->desc->name);
}

int tfm_model_on_gpu(const tfm_model *model) {
  return model->desc->target == TFM_TARGET_CUDA;
}

void *tfm_model_state_alloc(const tfm_model *model, size_t bytes) {
  if (tfm_model_on_gpu(model)) {
    void *device = tfm_cuda_alloc(bytes);
    if (device && !tfm_cuda_zero(device, bytes)) {
      tfm_cuda_free(device);
      return NULL;
    }
    return device;
  }
  void *host = aligned_alloc(64, (bytes + 63) / 64 * 64);
  if (host)
    memset(host, 0, bytes);
  if (host && tfm_model_leads(model))
    tfm_ranks_lead_alloc(host, bytes);
  return host;
}

void tfm_model_state_free(const tfm_model *model, void *state) {
  if (state && tfm_model_leads(model))
    tfm_ranks_lead_free(state);
  if (tfm_model_on_gpu(model))
    tfm_cuda_free(state);
  else
    free(state);
}

int tfm_model_state_move(const tfm_model *model, void *to, const void *from,
                         size_t bytes) {
  if (tfm_model_on_gpu(model))
    return tfm_cuda_move(to, from, bytes);
  if (tfm_model_leads(model))
    tfm_ranks_lead_move(to, from, bytes);
  memmove(to, from, bytes);
  return 1;
}

tfm_status_code tfm_model_check_device(const tfm_model *model,
                                       const char *entry, tfm_status *status) {
  if (!tfm_model_on_gpu(model) || tfm_cuda_synchronize())
    return TFM_OK;
  return tfm_fail(status, TFM_ERROR_DEVICE, "@%s of model '%s' on the GPU: %s",
                  entry, model->desc->name, tfm_cuda_error());
}

/* A GPU model's weights, copied to GPU memory once; the driver must work
 * (and have accepted the model's kernels, which loaded with the program). */
static tfm_status_code upload_weights(tfm_model *model, tfm_status *status) {
  const tfm_model_desc *desc = model->desc;
  if (tfm_cuda_ready() && desc->weights_size) {
    model->device_weights = tfm_cuda_alloc(desc->weights_size);
    if (model->device_weights)
      tfm_cuda_upload(model->device_weights, model->weights,
                      desc->weights_size);
  }
  if (!tfm_cuda_error())
    return TFM_OK;
  return tfm_fail(status, TFM_ERROR_DEVICE,
                  "model '%s' was compiled for an NVIDIA GPU (--target=cuda) "
                  "and cannot run: %s",
                  desc->name, tfm_cuda_error());
}

tfm_status_code tfm_run_forward(tfm_model *model, tfm_memref2d_f32 *logits,
                                tfm_memref1d *tokens, tfm_status *status) {
  if (!model->forward)
    return tfm_fail(status, TFM_ERROR_NOT_FOUND, "model '%s' has no @forward",
                    model->desc->name);
  tfm_memref1d weights = tfm_model_weights_descriptor(model);
  jmp_buf jump;
  if (setjmp(jump))
    return out_of_memory(model, "forward", status);
  tfm_call_frame *frame = tfm_call_begin(&jump);
  if (!frame)
    return out_of_memory(model, "forward", status);
  if (tfm_model_leads(model))
    tfm_ranks_lead_forward(tokens);
  double begun = tfm_model_code_begin(model);
  model->forward(logits, &weights, tokens);
  tfm_model_code_end(model, begun);
  tfm_call_end(frame);
  return tfm_model_check_device(model, "forward", status);
}

/* The cached entry points' four signatures (tfm_model_abi.h), their
 * first argument the tokens' or the rows' descriptor. */
typedef void (*cached_fn)(tfm_memref2d_f32 *, tfm_memref1d *, void *, int64_t,
                          int64_t, tfm_memref5d_f32 *);
typedef void (*cached_state_fn)(tfm_memref2d_f32 *, tfm_memref1d *, void *,
                                int64_t, int64_t, tfm_memref5d_f32 *,
                                tfm_memref1d *);
typedef void (*cached_rings_fn)(tfm_memref2d_f32 *, tfm_memref1d *, void *,
                                int64_t, int64_t, tfm_memref5d_f32 *,
                                tfm_memref5d_f32 *);
typedef void (*cached_rings_state_fn)(tfm_memref2d_f32 *, tfm_memref1d *,
                                      void *, int64_t, int64_t,
                                      tfm_memref5d_f32 *, tfm_memref5d_f32 *,
                                      tfm_memref1d *);

int tfm_model_takes_image_rows(const tfm_model *model) {
  return model && model->prefill_embeddings != NULL;
}

int64_t tfm_model_image_rows_per_call(const tfm_model *model) {
  const tfm_entry_point *encode = tfm_model_entry_point(model, "encode_image");
  if (!model->desc->image_rows_bidirectional || !encode ||
      encode->num_outputs < 1 || encode->outputs[0].rank != 2 ||
      encode->outputs[0].shape[0] <= 0)
    return INT64_MAX;
  return encode->outputs[0].shape[0];
}

tfm_status_code tfm_run_prefill(tfm_model *model, tfm_cached_entry entry,
                                tfm_memref2d_f32 *logits, void *input,
                                int64_t start, int64_t slot,
                                tfm_memref5d_f32 *cache,
                                tfm_memref5d_f32 *rings, tfm_memref1d *state,
                                tfm_status *status) {
  static const char *const names[] = {"prefill", "decode", "verify",
                                      "prefill_embeddings"};
  void (*run)(void) = entry == TFM_ENTRY_VERIFY   ? model->verify
                      : entry == TFM_ENTRY_DECODE ? model->decode
                      : entry == TFM_ENTRY_PREFILL_EMBEDDINGS
                          ? model->prefill_embeddings
                          : model->prefill;
  const char *name = names[entry];
  if (!run)
    return tfm_fail(status, TFM_ERROR_NOT_FOUND, "model '%s' has no @%s",
                    model->desc->name, name);
  tfm_memref1d weights = tfm_model_weights_descriptor(model);
  jmp_buf jump;
  if (setjmp(jump))
    return out_of_memory(model, name, status);
  tfm_call_frame *frame = tfm_call_begin(&jump);
  if (!frame)
    return out_of_memory(model, name, status);
  /* A split model has no @prefill_embeddings (tfmc refuses images with
   * --ranks), so its ranks follow token calls only. */
  if (tfm_model_leads(model))
    tfm_ranks_lead_prefill(entry == TFM_ENTRY_DECODE, input, start, slot, cache,
                           rings, state);
  double begun = tfm_model_code_begin(model);
  if (model->ring_cache && model->recurrent_state)
    ((cached_rings_state_fn)run)(logits, &weights, input, start, slot, cache,
                                 rings, state);
  else if (model->ring_cache)
    ((cached_rings_fn)run)(logits, &weights, input, start, slot, cache, rings);
  else if (model->recurrent_state)
    ((cached_state_fn)run)(logits, &weights, input, start, slot, cache, state);
  else
    ((cached_fn)run)(logits, &weights, input, start, slot, cache);
  tfm_model_code_end(model, begun);
  tfm_call_end(frame);
  return tfm_model_check_device(model, name, status);
}

const tfm_cache_desc *tfm_model_kv_cache(const tfm_model *model) {
  return model->kv_cache;
}

const tfm_cache_desc *tfm_model_ring_cache(const tfm_model *model) {
  return model->ring_cache;
}

const tfm_cache_desc *tfm_model_recurrent_state(const tfm_model *model) {
  return model->recurrent_state;
}

/* Maps (or finds) the model's weights, this rank's part of a split
 * model's, and checks them. */
static tfm_status_code load_weights(tfm_model *model, const char *weights_path,
                                    tfm_status *status) {
  const tfm_model_desc *desc = model->desc;
  if (desc->weights && !weights_path) {
    /* A split model's sections, embedded one after another. */
    model->weights = desc->weights + rank_offset(model);
  } else if (desc->weights_appended && !weights_path) {
    tfm_status_code code = map_appended(model, status);
    if (code != TFM_OK)
      return code;
  } else {
    char path[PATH_MAX];
    if (weights_path)
      snprintf(path, sizeof path, "%s", weights_path);
    else if (desc->weights_file)
      resolve_beside_executable(desc->weights_file, path, sizeof path);
    else
      path[0] = '\0';
    tfm_status_code code =
        path[0] ? map_side_file(model, path, status)
                : tfm_fail(status, TFM_ERROR_WEIGHTS,
                           "model '%s' has no weights", desc->name);
    if (code != TFM_OK)
      return code;
  }
  uint64_t expected = tfm_model_ranks(model) > 1
                          ? desc->rank_checksums[model->rank]
                          : desc->weights_checksum;
  uint64_t checksum = tfm_weights_checksum(model->weights, desc->weights_size);
  if (checksum != expected)
    return tfm_fail(status, TFM_ERROR_WEIGHTS,
                    "weights checksum %016llx does not match the %016llx "
                    "model '%s' was compiled with",
                    (unsigned long long)checksum,
                    (unsigned long long)expected, desc->name);
  if (tfm_model_on_gpu(model))
    return upload_weights(model, status);
  return TFM_OK;
}

tfm_status_code tfm_model_load(const tfm_model_desc *desc,
                               const char *weights_path, tfm_model **out,
                               tfm_status *status) {
  if (!desc || !out)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_model_load: NULL %s", desc ? "output" : "model");
  *out = NULL;
  if (desc->abi_version != TFM_ABI_VERSION)
    /* Nothing past the version can be trusted: not even the name. */
    return tfm_fail(status, TFM_ERROR_ABI,
                    "the model was generated for runtime ABI version %u, "
                    "this runtime has version %u: compile it again with "
                    "the tfmc of this runtime",
                    desc->abi_version, TFM_ABI_VERSION);
  tfm_model *model = calloc(1, sizeof *model);
  if (!model)
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  model->desc = desc;
  find_language_model_entry_points(model);
  int lora_failed;
  model->lora = tfm_lora_bank_new(desc->lora, &lora_failed);
  if (lora_failed) {
    free(model);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY, "out of memory");
  }
  if (tfm_model_ranks(model) > 1) {
    if (!tfm_ranks_join) {
      tfm_model_free(model);
      return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                      "model '%s' is split over %d MPI ranks (tfmc --ranks or "
                      "--pipeline-stages) "
                      "but was linked without libtfmrt_mpi",
                      desc->name, desc->ranks);
    }
    tfm_status joined;
    model->rank = tfm_ranks_join(desc, &joined);
    if (model->rank < 0) {
      tfm_model_free(model);
      return tfm_fail(status, joined.code, "%s", joined.message);
    }
  }
  tfm_status loaded;
  tfm_status_code code = load_weights(model, weights_path, &loaded);
  if (code != TFM_OK) {
    /* One rank that cannot start ends them all: never a hang. */
    if (tfm_model_ranks(model) > 1)
      tfm_ranks_abort(loaded.message);
    tfm_model_free(model);
    return tfm_fail(status, code, "%s", loaded.message);
  }
  /* The other ranks follow rank 0 from here, and end with it. */
  if (tfm_model_ranks(model) > 1 && model->rank != 0)
    tfm_ranks_follow(model);
  *out = model;
  return tfm_ok(status);
}

void tfm_model_free(tfm_model *model) {
  if (!model)
    return;
  if (model->device_weights)
    tfm_cuda_free(model->device_weights);
  if (model->mapping)
    munmap(model->mapping, model->mapping_size);
  tfm_tokenizer_free(model->tokenizer);
  tfm_lora_bank_free(model->lora);
  free(model);
}

const tfm_model_desc *tfm_model_get_desc(const tfm_model *model) {
  return model ? model->desc : NULL;
}

int tfm_ends_generation(const tfm_model_desc *desc, int32_t token) {
  if (!desc || token < 0)
    return 0;
  if (token == desc->eos_token)
    return 1;
  for (int32_t i = 0; i < desc->num_stop_tokens; ++i)
    if (desc->stop_tokens[i] == token)
      return 1;
  return 0;
}

tfm_tokenizer *tfm_model_tokenizer(tfm_model *model, tfm_status *status) {
  if (!model) {
    tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT, "tfm_model_tokenizer: NULL model");
    return NULL;
  }
  if (model->tokenizer)
    return model->tokenizer;
  const tfm_model_desc *desc = model->desc;
  if (!desc->tokenizer) {
    tfm_fail(status, TFM_ERROR_TOKENIZER,
             "model '%s' was compiled without a tokenizer (give token ids)",
             desc->name);
    return NULL;
  }
  if (tfm_tokenizer_new(desc->tokenizer, desc->tokenizer_size,
                        &model->tokenizer, status) != TFM_OK)
    return NULL;
  return model->tokenizer;
}

tfm_status_code tfm_forward(tfm_model *model, const int32_t *tokens, int64_t n,
                            float *logits, tfm_status *status) {
  if (!model || !tokens || !logits)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_forward: NULL %s",
                    !model ? "model" : !tokens ? "tokens" : "logits");
  const tfm_model_desc *desc = model->desc;
  if (n <= 0)
    return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                    "tfm_forward: expected at least one token, got %lld",
                    (long long)n);
  if (n > desc->max_context)
    return tfm_fail(status, TFM_ERROR_CONTEXT_OVERFLOW,
                    "%lld tokens exceed the maximum context of model '%s' "
                    "(%lld)",
                    (long long)n, desc->name, (long long)desc->max_context);
  tfm_status_code code = tfm_check_token_ids(desc, tokens, n, status);
  if (code != TFM_OK)
    return code;

  /* Descriptors are not const in MLIR's C interface; the code only reads
   * the tokens. */
  void *token_data = (void *)(uintptr_t)tokens;
  tfm_memref1d ids = {token_data, token_data, 0, {n}, {1}};
  tfm_memref2d_f32 result;
  memset(&result, 0, sizeof result);
  code = tfm_run_forward(model, &result, &ids, status);
  if (code != TFM_OK)
    return code;
  return tfm_take_logits(desc, &result, n, logits, status);
}

tfm_status_code tfm_take_logits(const tfm_model_desc *desc,
                                tfm_memref2d_f32 *result, int64_t rows,
                                float *out, tfm_status *status) {
  /* The generated code returns a fresh buffer with identity layout. */
  if (!result->aligned || result->sizes[0] != rows ||
      result->sizes[1] != desc->vocab_size) {
    tfm_buffer_release(result->allocated);
    return tfm_fail(status, TFM_ERROR_OUT_OF_MEMORY,
                    "model '%s' returned no logits", desc->name);
  }
  memcpy(out, result->aligned + result->offset,
         (size_t)(rows * desc->vocab_size) * sizeof(float));
  tfm_buffer_release(result->allocated);
  return tfm_ok(status);
}

tfm_status_code tfm_check_token_ids(const tfm_model_desc *desc,
                                    const int32_t *tokens, int64_t n,
                                    tfm_status *status) {
  for (int64_t i = 0; i < n; ++i)
    if (tokens[i] < 0 || tokens[i] >= desc->vocab_size)
      return tfm_fail(status, TFM_ERROR_OUT_OF_RANGE,
                      "token id %d at position %lld is out of range [0, "
                      "%lld)",
                      tokens[i], (long long)i, (long long)desc->vocab_size);
  return TFM_OK;
}

tfm_memref1d tfm_model_weights_descriptor(const tfm_model *model) {
  /* Not const in MLIR's C interface; the generated code only reads it. */
  void *data = model->device_weights ? model->device_weights
                                     : (void *)(uintptr_t)model->weights;
  tfm_memref1d weights = {data, data, 0,
                          {(int64_t)model->desc->weights_size}, {1}};
  return weights;
}

int32_t tfm_argmax(const float *values, int64_t n) {
  if (!values || n <= 0)
    return -1;
  /* The best value kept in a register: comparing against values[best]
   * reloads it every element, a dependent load (2-3% of a batched decode
   * step over a 32000-token vocabulary). */
  int32_t best = 0;
  float best_value = values[0];
  for (int64_t i = 1; i < n; ++i)
    if (values[i] > best_value) {
      best_value = values[i];
      best = (int32_t)i;
    }
  return best;
}
