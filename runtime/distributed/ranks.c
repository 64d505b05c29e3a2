/*===- ranks.c - a model split over MPI ranks: rank 0 leads, others follow -===*
 *
 * libtfmrt_mpi, linked into models compiled with tfmc --ranks N (see
 * runtime/core/ranks.h for the core's side). Rank 0 runs the program; before
 * each call of the model's code, and as it allocates, frees or moves cache
 * memory, it broadcasts a message; the other ranks wait for messages in
 * tfm_ranks_follow and do the same on their own parts. Token ids and every
 * other input travel with the calls; caches are named by rank 0's
 * addresses, which each follower maps to its own allocations.
 *
 * A message's header is broadcast non-blocking: a follower waiting for rank
 * 0 (tokenizing, sampling, or a server with nothing to do) polls it with
 * growing sleeps instead of spinning a core. MPI's default error handler
 * ends the job on any failure, and mpirun ends every rank when one dies.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/ranks.h"
#include "runtime/core/buffer_cache.h"
#include "runtime/core/model_internal.h"
#include "runtime/core/status.h"
#include "runtime/distributed/polled_wait.h"
#include "runtime/distributed/stage_groups.h"

#include <mpi.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

enum {
  MSG_STOP,    /* rank 0 ends: finalize and exit */
  MSG_FORWARD, /* tfm_run_forward(tokens) */
  MSG_PREFILL, /* tfm_run_prefill(decode, tokens, start, slot, cache,
                 rings, recurrent state) */
  MSG_CALL,    /* tfm_model_dispatch(entry, inputs, caches), for each of
                  `a` parts */
  MSG_ALLOC,   /* cache memory allocated */
  MSG_FREE,    /* cache memory freed */
  MSG_MOVE,    /* cache memory moved (a sliding window's slide) */
  MSG_STATS,   /* --stats: gather every rank's */
  MSG_POOL,    /* the batch engine's KV pool made (its layout follows) */
  MSG_MAP      /* a block of it mapped or unmapped */
};

/* The fixed part of a message; `payload` bytes follow in a second
 * broadcast. */
typedef struct {
  int32_t kind;
  int32_t entry;   /* MSG_CALL: index in the model's entry points;
                      MSG_PREFILL: whether @decode */
  int64_t a, b, c, d, e; /* addresses, sizes, positions: per kind */
  int64_t payload;
} message;

/* A tensor as it travels: its description, then its data (inputs) or rank
 * 0's address of it (caches). */
typedef struct {
  int32_t dtype, rank;
  int64_t shape[TFM_MAX_RANK];
  int64_t address;
} tensor_header;

static int world_rank = -1;
static int stopped;
/* The model's code's MPI_Allreduce calls (the profiling interface below). */
static int64_t all_reduces;
static double all_reduce_seconds;
/* Pipeline stages' transfers (pipeline.c, which only a model split into
 * stages links from the archive). */
static int64_t stage_transfers;
static double stage_seconds;
/* Time in the model's code, the waits above included. */
static double call_seconds;

void tfm_ranks_count_stage_transfer(double seconds) {
  ++stage_transfers;
  stage_seconds += seconds;
}

double tfm_ranks_call_begin(void) { return MPI_Wtime(); }

void tfm_ranks_call_end(double begun) { call_seconds += MPI_Wtime() - begun; }

int MPI_Allreduce(const void *send, void *receive, int count, MPI_Datatype type,
                  MPI_Op op, MPI_Comm comm) {
  double start = MPI_Wtime();
  int code = PMPI_Allreduce(send, receive, count, type, op, comm);
  all_reduce_seconds += MPI_Wtime() - start;
  ++all_reduces;
  return code;
}

void tfm_ranks_abort(const char *message) {
  fprintf(stderr, "error: rank %d: %s\n", world_rank, message);
  fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 1);
  exit(1);
}

/* Rank 0 sends `m`, then `payload` (m->payload bytes). */
static void send(message *m, const void *payload) {
  MPI_Request request;
  MPI_Ibcast(m, sizeof *m, MPI_BYTE, 0, MPI_COMM_WORLD, &request);
  MPI_Wait(&request, MPI_STATUS_IGNORE);
  if (m->payload > 0)
    MPI_Bcast((void *)(uintptr_t)payload, (int)m->payload, MPI_BYTE, 0,
              MPI_COMM_WORLD);
}

/* A follower's wait for the next message, polled: rank 0 may be busy for
 * long (sampling, serving nobody), so sleeps grow to a millisecond. */
static void receive(message *m) {
  MPI_Request request;
  MPI_Ibcast(m, sizeof *m, MPI_BYTE, 0, MPI_COMM_WORLD, &request);
  tfm_polled_wait(&request, MPI_STATUS_IGNORE, 1000000);
}

static void stop_followers(void) {
  if (stopped || world_rank != 0)
    return;
  stopped = 1;
  message m = {.kind = MSG_STOP};
  send(&m, NULL);
  MPI_Finalize();
}

/* What makes one split of one model: its name, every rank's weights
 * checksum and its pipeline stages (FNV-1a over them). */
static uint64_t split_identity(const tfm_model_desc *desc) {
  uint64_t h = 1469598103934665603ull;
  for (int32_t r = 0; r < desc->ranks; ++r)
    for (int b = 0; b < 8; ++b)
      h = (h ^ ((desc->rank_checksums[r] >> (8 * b)) & 0xff)) *
          1099511628211ull;
  for (const char *c = desc->name; *c; ++c)
    h = (h ^ (uint8_t)*c) * 1099511628211ull;
  return (h ^ (uint32_t)desc->pipeline_stages) * 1099511628211ull;
}

/* Every rank must run the split rank 0 runs (mpirun -np 1 a : -np 1 b
 * would otherwise have rank 1 follow calls of another program): rank 0's
 * identity and name against each rank's own, and every rank fails where
 * any differs, naming the first that does. */
static int check_same_split(const tfm_model_desc *desc, tfm_status *status) {
  uint64_t lead = split_identity(desc);
  char name[128] = {0};
  if (world_rank == 0)
    snprintf(name, sizeof name, "%s", desc->name);
  MPI_Bcast(&lead, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
  MPI_Bcast(name, (int)sizeof name, MPI_CHAR, 0, MPI_COMM_WORLD);
  int differs = lead != split_identity(desc) ? world_rank : INT32_MAX;
  int first = INT32_MAX;
  /* Not counted with the model's code's all-reduces (--stats). */
  PMPI_Allreduce(&differs, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first == INT32_MAX)
    return 1;
  if (first == world_rank)
    tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
             "rank %d runs model '%s', another model or split than rank 0's "
             "'%s': every rank runs the same executable or library",
             world_rank, desc->name, name);
  else
    tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
             "rank %d runs another model or split than rank 0's '%s': every "
             "rank runs the same executable or library",
             first, name);
  return 0;
}

int32_t tfm_ranks_join(const tfm_model_desc *desc, tfm_status *status) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided;
    /* The model's code calls MPI from the thread that calls it, one call
     * at a time, which need not be the thread that loaded it (tfm-serve
     * loads on its main thread and steps its engine on another). */
    if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SERIALIZED, &provided) !=
            MPI_SUCCESS ||
        provided < MPI_THREAD_SERIALIZED)
      return tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
                      "model '%s': MPI did not start", desc->name),
             -1;
  }
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  if (size != desc->ranks) {
    tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
             "model '%s' is split over %d ranks (tfmc --ranks or "
             "--pipeline-stages) and runs as %d MPI processes (mpirun -np "
             "%d ...); this run has %d",
             desc->name, desc->ranks, desc->ranks, desc->ranks, size);
    MPI_Finalize();
    return -1;
  }
  if (!check_same_split(desc, status)) {
    MPI_Finalize();
    return -1;
  }
  if (!tfm_stage_groups_join(desc)) {
    tfm_fail(status, TFM_ERROR_INVALID_ARGUMENT,
             "model '%s': MPI did not split its %d ranks into %d pipeline "
             "stages",
             desc->name, desc->ranks, desc->pipeline_stages);
    MPI_Finalize();
    return -1;
  }
  if (world_rank == 0)
    atexit(stop_followers);
  return world_rank;
}

/* Bytes of a tensor's data. */
static size_t tensor_bytes(int32_t dtype, int32_t rank, const int64_t *shape) {
  size_t n = tfm_dtype_bytes(dtype);
  for (int32_t d = 0; d < rank; ++d)
    n *= (size_t)shape[d];
  return n;
}

/*===- rank 0 ------------------------------------------------------------===*/

void tfm_ranks_lead_alloc(const void *state, size_t bytes) {
  message m = {
      .kind = MSG_ALLOC, .a = (int64_t)(intptr_t)state, .b = (int64_t)bytes};
  send(&m, NULL);
}

void tfm_ranks_lead_free(const void *state) {
  message m = {.kind = MSG_FREE, .a = (int64_t)(intptr_t)state};
  send(&m, NULL);
}

void tfm_ranks_lead_move(void *to, const void *from, size_t bytes) {
  message m = {.kind = MSG_MOVE,
               .a = (int64_t)(intptr_t)to,
               .b = (int64_t)(intptr_t)from,
               .c = (int64_t)bytes};
  send(&m, NULL);
}

void tfm_ranks_lead_pool_new(const void *base, size_t reserved,
                             const void *layout, size_t layout_bytes) {
  message m = {.kind = MSG_POOL,
               .a = (int64_t)(intptr_t)base,
               .b = (int64_t)reserved,
               .payload = (int64_t)layout_bytes};
  send(&m, layout);
}

void tfm_ranks_lead_pool_map(const void *base, int64_t slot, int64_t index,
                             int64_t block) {
  message m = {.kind = MSG_MAP,
               .a = (int64_t)(intptr_t)base,
               .b = slot,
               .c = index,
               .d = block};
  send(&m, NULL);
}

void tfm_ranks_lead_forward(const tfm_memref1d *tokens) {
  int64_t n = tokens->sizes[0];
  message m = {
      .kind = MSG_FORWARD, .a = n, .payload = n * (int64_t)sizeof(int32_t)};
  send(&m, (const int32_t *)tokens->aligned + tokens->offset);
}

void tfm_ranks_lead_prefill(int decode, const tfm_memref1d *tokens,
                            int64_t start, int64_t slot,
                            const tfm_memref5d_f32 *cache,
                            const tfm_memref5d_f32 *rings,
                            const tfm_memref1d *state) {
  int64_t n = tokens->sizes[0];
  message m = {.kind = MSG_PREFILL,
               .entry = decode,
               .a = start,
               .b = slot,
               .c = (int64_t)(intptr_t)(cache->aligned + cache->offset),
               .d = rings ? (int64_t)(intptr_t)(rings->aligned + rings->offset)
                          : 0,
               .e = state ? (int64_t)(intptr_t)((const float *)state->aligned +
                                                state->offset)
                          : 0,
               .payload = n * (int64_t)sizeof(int32_t)};
  send(&m, (const int32_t *)tokens->aligned + tokens->offset);
}

void tfm_ranks_lead_call(const tfm_model *model, const tfm_entry_point *entry,
                         int32_t parts, const tfm_tensor *inputs,
                         tfm_tensor *const *caches) {
  const tfm_model_desc *desc = tfm_model_get_desc(model);
  int32_t count = parts * entry->num_inputs;
  size_t size = 0;
  for (int32_t i = 0; i < count; ++i)
    size += sizeof(tensor_header) +
            tensor_bytes(inputs[i].dtype, inputs[i].rank, inputs[i].shape);
  size += (size_t)parts * (size_t)entry->num_caches * sizeof(tensor_header);
  char *payload = malloc(size ? size : 1), *at = payload;
  if (!payload)
    tfm_ranks_abort("out of memory for a call's inputs");
  /* Each part: its inputs (described, then their data), then its caches
   * (described, with rank 0's address). */
  for (int32_t p = 0; p < parts; ++p) {
    for (int32_t i = p * entry->num_inputs; i < (p + 1) * entry->num_inputs;
         ++i) {
      tensor_header h = {inputs[i].dtype, inputs[i].rank, {0}, 0};
      memcpy(h.shape, inputs[i].shape, sizeof h.shape);
      memcpy(at, &h, sizeof h);
      at += sizeof h;
      size_t bytes = tensor_bytes(h.dtype, h.rank, h.shape);
      memcpy(at, inputs[i].data, bytes);
      at += bytes;
    }
    for (int32_t i = 0; i < entry->num_caches; ++i) {
      tensor_header h = {caches[i]->dtype,
                         caches[i]->rank,
                         {0},
                         (int64_t)(intptr_t)caches[i]->data};
      memcpy(h.shape, caches[i]->shape, sizeof h.shape);
      memcpy(at, &h, sizeof h);
      at += sizeof h;
    }
  }
  message m = {.kind = MSG_CALL,
               .entry = (int32_t)(entry - desc->entry_points),
               .a = parts,
               .payload = (int64_t)size};
  send(&m, payload);
  free(payload);
}

void tfm_ranks_own_stats(const tfm_model *model, tfm_rank_stats *out) {
  struct rusage usage;
  getrusage(RUSAGE_SELF, &usage);
  out->weights_bytes = tfm_model_get_desc(model)->weights_size;
  out->peak_rss_bytes = (int64_t)usage.ru_maxrss * 1024;
  out->all_reduces = all_reduces;
  out->all_reduce_seconds = all_reduce_seconds;
  out->stage_transfers = stage_transfers;
  out->stage_seconds = stage_seconds;
  out->call_seconds = call_seconds;
}

void tfm_ranks_gather_stats(const tfm_model *model, tfm_rank_stats *out) {
  message m = {.kind = MSG_STATS};
  send(&m, NULL);
  tfm_rank_stats own;
  tfm_ranks_own_stats(model, &own);
  MPI_Gather(&own, sizeof own, MPI_BYTE, out, sizeof own, MPI_BYTE, 0,
             MPI_COMM_WORLD);
}

/*===- the other ranks ---------------------------------------------------===*/

/* Rank 0's cache memory and this rank's copy of it: model state, or the
 * batch engine's KV pool (`pool`), whose blocks it maps as rank 0 does. */
typedef struct {
  int64_t remote;
  size_t bytes;
  char *local;
  void *pool; /* pool_mirror->make's */
} mirror;

typedef struct {
  tfm_model *model;
  mirror *mirrors;
  size_t count, capacity;
} follower;

static mirror *find_mirror(follower *f, int64_t remote) {
  for (size_t i = 0; i < f->count; ++i)
    if (remote >= f->mirrors[i].remote &&
        remote < f->mirrors[i].remote + (int64_t)f->mirrors[i].bytes)
      return &f->mirrors[i];
  return NULL;
}

static void check(tfm_status_code code, const tfm_status *status) {
  if (code != TFM_OK)
    tfm_ranks_abort(status->message);
}

/* Room for one more mirror. */
static mirror *new_mirror(follower *f) {
  if (f->count == f->capacity) {
    size_t capacity = f->capacity ? 2 * f->capacity : 8;
    mirror *grown = realloc(f->mirrors, capacity * sizeof *grown);
    if (!grown)
      tfm_ranks_abort("out of memory for its caches");
    f->mirrors = grown;
    f->capacity = capacity;
  }
  return &f->mirrors[f->count++];
}

static mirror *add_mirror(follower *f, int64_t remote, size_t bytes) {
  char *local = tfm_model_state_alloc(f->model, bytes);
  if (!local)
    tfm_ranks_abort("out of memory for its part of a KV cache");
  mirror *m = new_mirror(f);
  *m = (mirror){remote, bytes, local, NULL};
  return m;
}

/* How this rank makes rank 0's KV pools: the engine's, registered as the
 * program starts (NULL where no engine is linked). */
static const tfm_ranks_pool_mirror *pool_mirror;

void tfm_ranks_set_pool_mirror(const tfm_ranks_pool_mirror *mirror) {
  pool_mirror = mirror;
}

/* Rank 0's engine made a KV pool at `remote`: one of the same layout. */
static void add_pool(follower *f, const message *m, const void *layout) {
  if (!pool_mirror)
    tfm_ranks_abort("rank 0 made a KV pool, and this rank has no batch "
                    "engine linked");
  tfm_status status;
  void *pool =
      pool_mirror->make(layout, (size_t)m->payload, (size_t)m->b, &status);
  if (!pool)
    tfm_ranks_abort(status.message);
  mirror *added = new_mirror(f);
  *added = (mirror){m->a, (size_t)m->b, (char *)pool_mirror->base(pool), pool};
}

static void map_in_pool(follower *f, const message *m) {
  mirror *pool = find_mirror(f, m->a);
  if (!pool || !pool->pool || pool->remote != m->a)
    tfm_ranks_abort("rank 0 maps a block of a KV pool it never made");
  if (!pool_mirror->map(pool->pool, m->b, m->c, m->d))
    tfm_ranks_abort("cannot map a block of its KV pool (mmap failed)");
}

static void remove_mirror(follower *f, int64_t remote) {
  for (size_t i = 0; i < f->count; ++i)
    if (f->mirrors[i].remote == remote) {
      if (f->mirrors[i].pool)
        pool_mirror->release(f->mirrors[i].pool);
      else
        tfm_model_state_free(f->model, f->mirrors[i].local);
      f->mirrors[i] = f->mirrors[--f->count];
      return;
    }
}

/* This rank's memory for rank 0's `bytes` at `remote`: inside an
 * allocation rank 0 announced, or (caches an application allocated itself)
 * made now. */
static char *local_memory(follower *f, int64_t remote, size_t bytes) {
  mirror *m = find_mirror(f, remote);
  if (m && remote + (int64_t)bytes > m->remote + (int64_t)m->bytes) {
    remove_mirror(f, m->remote); /* freed by the application, reused */
    m = NULL;
  }
  if (!m)
    m = add_mirror(f, remote, bytes);
  return m->local + (remote - m->remote);
}

/* This rank's part of the cache of `desc` rank 0 holds at `remote`. */
static tfm_memref5d_f32 local_cache(follower *f, const tfm_cache_desc *desc,
                                    int64_t remote) {
  tfm_memref5d_f32 cache = {0};
  size_t bytes = tensor_bytes(desc->dtype, 5, desc->shape);
  cache.allocated = cache.aligned =
      (float *)(void *)local_memory(f, remote, bytes);
  int64_t stride = 1;
  for (int d = 4; d >= 0; --d) {
    cache.sizes[d] = desc->shape[d];
    cache.strides[d] = stride;
    stride *= desc->shape[d];
  }
  return cache;
}

static void follow_prefill(follower *f, const message *m, int32_t *tokens) {
  const tfm_cache_desc *kv = tfm_model_kv_cache(f->model);
  const tfm_cache_desc *ring_desc = tfm_model_ring_cache(f->model);
  const tfm_cache_desc *state_desc = tfm_model_recurrent_state(f->model);
  if (!kv || (m->d != 0) != (ring_desc != NULL) ||
      (m->e != 0) != (state_desc != NULL))
    tfm_ranks_abort("rank 0 runs @prefill with caches this model lacks");
  tfm_memref5d_f32 cache = local_cache(f, kv, m->c), rings = {0};
  if (ring_desc)
    rings = local_cache(f, ring_desc, m->d);
  /* Recurrent layers are replicated: this rank's state is its own whole
   * copy, advanced by the same calls. */
  tfm_memref1d state = {0};
  if (state_desc) {
    int64_t elements = state_desc->shape[0];
    void *local = local_memory(f, m->e, (size_t)elements * sizeof(float));
    state = (tfm_memref1d){local, local, 0, {elements}, {1}};
  }
  int64_t n = m->payload / (int64_t)sizeof(int32_t);
  tfm_memref1d ids = {tokens, tokens, 0, {n}, {1}};
  tfm_memref2d_f32 logits = {0};
  tfm_status status;
  check(tfm_run_prefill(f->model, m->entry, &logits, &ids, m->a, m->b, &cache,
                        ring_desc ? &rings : NULL,
                        state_desc ? &state : NULL, &status),
        &status);
  tfm_buffer_release(logits.allocated);
}

static void follow_forward(follower *f, const message *m, int32_t *tokens) {
  tfm_memref1d ids = {tokens, tokens, 0, {m->a}, {1}};
  tfm_memref2d_f32 logits = {0};
  tfm_status status;
  check(tfm_run_forward(f->model, &logits, &ids, &status), &status);
  tfm_buffer_release(logits.allocated);
}

static void follow_call(follower *f, const message *m, char *payload) {
  const tfm_model_desc *desc = tfm_model_get_desc(f->model);
  if (m->entry < 0 || m->entry >= desc->num_entry_points)
    tfm_ranks_abort("rank 0 calls an entry point this model lacks");
  const tfm_entry_point *entry = &desc->entry_points[m->entry];
  tfm_tensor inputs[16], cache_tensors[16], *caches[16];
  tfm_tensor outputs[16];
  if (entry->num_inputs > 16 || entry->num_caches > 16 ||
      entry->num_outputs > 16)
    tfm_ranks_abort("an entry point with more than 16 tensors");
  char *at = payload;
  for (int64_t p = 0; p < m->a; ++p) {
    for (int32_t i = 0; i < entry->num_inputs; ++i) {
      tensor_header h;
      memcpy(&h, at, sizeof h);
      at += sizeof h;
      inputs[i] = (tfm_tensor){at, h.dtype, h.rank, {0}, NULL};
      memcpy(inputs[i].shape, h.shape, sizeof h.shape);
      at += tensor_bytes(h.dtype, h.rank, h.shape);
    }
    for (int32_t i = 0; i < entry->num_caches; ++i) {
      tensor_header h;
      memcpy(&h, at, sizeof h);
      at += sizeof h;
      size_t bytes = tensor_bytes(h.dtype, h.rank, h.shape);
      cache_tensors[i] = (tfm_tensor){
          local_memory(f, h.address, bytes), h.dtype, h.rank, {0}, NULL};
      memcpy(cache_tensors[i].shape, h.shape, sizeof h.shape);
      caches[i] = &cache_tensors[i];
    }
    memset(outputs, 0, sizeof outputs);
    tfm_status status;
    check(tfm_model_dispatch(f->model, entry, inputs, caches, outputs, &status),
          &status);
    for (int32_t i = 0; i < entry->num_outputs; ++i)
      tfm_tensor_release(&outputs[i]);
  }
}

void tfm_ranks_follow(tfm_model *model) {
  follower f = {model, NULL, 0, 0};
  char *payload = NULL;
  size_t payload_capacity = 0;
  for (;;) {
    message m;
    receive(&m);
    if (m.payload > 0) {
      if ((size_t)m.payload > payload_capacity) {
        free(payload);
        payload_capacity = (size_t)m.payload;
        payload = malloc(payload_capacity);
        if (!payload)
          tfm_ranks_abort("out of memory for a call's inputs");
      }
      MPI_Bcast(payload, (int)m.payload, MPI_BYTE, 0, MPI_COMM_WORLD);
    }
    switch (m.kind) {
    case MSG_STOP:
      MPI_Finalize();
      exit(0);
    case MSG_FORWARD:
      follow_forward(&f, &m, (int32_t *)(void *)payload);
      break;
    case MSG_PREFILL:
      follow_prefill(&f, &m, (int32_t *)(void *)payload);
      break;
    case MSG_CALL:
      follow_call(&f, &m, payload);
      break;
    case MSG_ALLOC:
      add_mirror(&f, m.a, (size_t)m.b);
      break;
    case MSG_FREE:
      remove_mirror(&f, m.a);
      break;
    case MSG_MOVE: {
      char *to = local_memory(&f, m.a, (size_t)m.c);
      const char *from = local_memory(&f, m.b, (size_t)m.c);
      tfm_model_state_move(model, to, from, (size_t)m.c);
      break;
    }
    case MSG_POOL:
      add_pool(&f, &m, payload);
      break;
    case MSG_MAP:
      map_in_pool(&f, &m);
      break;
    case MSG_STATS: {
      tfm_rank_stats own;
      tfm_ranks_own_stats(model, &own);
      MPI_Gather(&own, sizeof own, MPI_BYTE, NULL, 0, MPI_BYTE, 0,
                 MPI_COMM_WORLD);
      break;
    }
    default:
      tfm_ranks_abort("unknown message from rank 0");
    }
  }
}
