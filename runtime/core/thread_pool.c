/*===- thread_pool.c - the runtime's worker threads ---------------------===//
 *
 * See thread_pool.h. A job is published by bumping `generation`; workers
 * spin on it for a while (consecutive kernels follow each other within
 * microseconds) and then sleep on `wake`. Chunks are claimed from an atomic
 * counter, so a thread whose core is busier (other processes, a
 * hypervisor's other guests) simply takes fewer; the caller works too and
 * then waits for the rest by spinning on `pending`.
 *
 *===----------------------------------------------------------------------===*/

#define _GNU_SOURCE
#include "runtime/core/thread_pool.h"
#include "tfm/tfm_model_abi.h"

#include <cblas.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdlib.h>

enum { kMaxThreads = 64, kSpinsBeforeSleep = 200000, kSpinsBeforeYield = 1024 };

/* Thresholds of tfm_rt_parallel_loop, in the compiler's estimated
 * operations (before vectorization). Handing a job to spinning workers
 * costs about a microsecond, roughly what vectorized code does with 16K
 * operations. */
enum {
  kMinParallelWork = 1 << 15,
  kMinChunkWork = 1 << 13,
  kChunksPerThread = 4
};

static struct {
  int threads;
  pthread_mutex_t lock; /* guards sleeping on `wake` */
  pthread_cond_t wake;
  pthread_mutex_t busy; /* one job at a time, whoever calls */
  atomic_uint_fast64_t generation;
  atomic_int pending;
  atomic_int_fast64_t next_chunk;
  tfm_parallel_body body;
  void *context;
  int64_t n, grain;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER,
          .wake = PTHREAD_COND_INITIALIZER,
          .busy = PTHREAD_MUTEX_INITIALIZER};

static pthread_once_t pool_once = PTHREAD_ONCE_INIT;
static _Thread_local int inside_job;

/* One turn of a spin loop. Every kSpinsBeforeYield turns it yields: with
 * more runnable threads than cores (other processes, two tests at once)
 * the thread we wait for may need this very core, and without the yield
 * the spin would hold it for the rest of its time slice (milliseconds, so
 * a step of many small kernels took seconds). */
static void cpu_relax(int spin) {
  if (spin % kSpinsBeforeYield == kSpinsBeforeYield - 1) {
    sched_yield();
    return;
  }
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* Claims and runs chunks of the current job until none is left. */
static void run_chunks(int thread) {
  int64_t chunks = (pool.n + pool.grain - 1) / pool.grain;
  for (;;) {
    int64_t chunk = atomic_fetch_add_explicit(&pool.next_chunk, 1,
                                              memory_order_relaxed);
    if (chunk >= chunks)
      return;
    int64_t begin = chunk * pool.grain, end = begin + pool.grain;
    pool.body(pool.context, begin, end < pool.n ? end : pool.n, thread);
  }
}

static void *worker_main(void *argument) {
  int index = (int)(intptr_t)argument;
  uint64_t seen = 0;
  inside_job = 1;
  for (;;) {
    uint64_t now = atomic_load_explicit(&pool.generation, memory_order_acquire);
    for (int spin = 0; now == seen && spin < kSpinsBeforeSleep; ++spin) {
      cpu_relax(spin);
      now = atomic_load_explicit(&pool.generation, memory_order_acquire);
    }
    if (now == seen) {
      pthread_mutex_lock(&pool.lock);
      while ((now = atomic_load(&pool.generation)) == seen)
        pthread_cond_wait(&pool.wake, &pool.lock);
      pthread_mutex_unlock(&pool.lock);
    }
    seen = now;
    run_chunks(index);
    atomic_fetch_sub_explicit(&pool.pending, 1, memory_order_release);
  }
  return NULL;
}

static int available_cpus(void) {
  const char *env = getenv("TFM_NUM_THREADS");
  int count = env ? atoi(env) : 0;
  cpu_set_t set;
  if (count <= 0 && sched_getaffinity(0, sizeof set, &set) == 0)
    count = CPU_COUNT(&set);
  if (count <= 0)
    return 1;
  return count < kMaxThreads ? count : kMaxThreads;
}

static void start_pool(void) {
  /* Each chunk calls BLAS single-threaded: the parallelism is ours. */
  openblas_set_num_threads(1);
  pool.threads = available_cpus();
  for (int i = 1; i < pool.threads; ++i) {
    pthread_t thread;
    pthread_attr_t attributes;
    pthread_attr_init(&attributes);
    pthread_attr_setdetachstate(&attributes, PTHREAD_CREATE_DETACHED);
    if (pthread_create(&thread, &attributes, worker_main, (void *)(intptr_t)i))
      pool.threads = i; /* run with the threads we got */
    pthread_attr_destroy(&attributes);
    if (pool.threads == i)
      break;
  }
}

int tfm_thread_count(void) {
  pthread_once(&pool_once, start_pool);
  return pool.threads;
}

void tfm_parallel_for(int64_t n, int64_t grain, tfm_parallel_body body,
                      void *context) {
  if (n <= 0)
    return;
  if (grain < 1)
    grain = 1;
  int threads = tfm_thread_count();
  /* Serial when there is one chunk's worth of work, when nested, or when
   * another application thread holds the pool. */
  if (threads == 1 || n <= grain || inside_job ||
      pthread_mutex_trylock(&pool.busy) != 0) {
    body(context, 0, n, 0);
    return;
  }
  pool.body = body;
  pool.context = context;
  pool.n = n;
  pool.grain = grain;
  atomic_store(&pool.pending, threads - 1);
  atomic_store(&pool.next_chunk, 0);
  pthread_mutex_lock(&pool.lock);
  atomic_fetch_add_explicit(&pool.generation, 1, memory_order_release);
  pthread_cond_broadcast(&pool.wake);
  pthread_mutex_unlock(&pool.lock);
  inside_job = 1;
  run_chunks(0);
  inside_job = 0;
  for (int spin = 0;
       atomic_load_explicit(&pool.pending, memory_order_acquire) > 0; ++spin)
    cpu_relax(spin);
  pthread_mutex_unlock(&pool.busy);
}

TFM_EXPORT void tfm_rt_parallel_loop(int64_t n, int64_t iteration_cost,
                          tfm_parallel_body body, void *context) {
  if (iteration_cost < 1)
    iteration_cost = 1;
  /* Thresholds as iteration counts (n · iteration_cost would overflow). */
  int64_t min_iterations =
      (kMinParallelWork + iteration_cost - 1) / iteration_cost;
  int64_t min_grain = (kMinChunkWork + iteration_cost - 1) / iteration_cost;
  int64_t chunks = (int64_t)tfm_thread_count() * kChunksPerThread;
  int64_t grain = (n + chunks - 1) / chunks;
  /* One chunk, which tfm_parallel_for runs inline, for a loop too small to
   * share; it also handles n <= 0 and a single thread. */
  if (n < min_iterations)
    grain = n;
  tfm_parallel_for(n, grain > min_grain ? grain : min_grain, body, context);
}
