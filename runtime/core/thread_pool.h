/*===- thread_pool.h - the runtime's worker threads --------------*- C -*-===//
 *
 * One process-wide pool that the kernels called by generated code (GEMM,
 * attention) split their work over. Why not OpenBLAS's own threads: they
 * spin in sched_yield between calls, which cost up to a third of the
 * machine in profiles; ours spin briefly, then sleep on a condition
 * variable, and OpenBLAS is kept single-threaded inside each chunk.
 *
 * Threads: TFM_NUM_THREADS if set, else the CPUs this process may run on.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_CORE_THREAD_POOL_H
#define TFM_RUNTIME_CORE_THREAD_POOL_H

#include <stdint.h>

#include "tfm/runtime_kernels.h"

/* A chunk of work: items [begin, end) of `n`, on thread `thread`
 * (tfm_parallel_body, runtime_kernels.h). */

/* Number of threads parallel_for uses (the caller included); >= 1. */
int tfm_thread_count(void);

/* Runs body over [0, n) in chunks of `grain` items (the last may be
 * shorter), handed out in order to whichever thread is free, the calling
 * thread included. Returns when every chunk is done. Not reentrant: a body
 * that calls it again runs the inner loop serially. */
void tfm_parallel_for(int64_t n, int64_t grain, tfm_parallel_body body,
                      void *context);

/* tfm_rt_parallel_loop (runtime_kernels.h), what generated code calls for
 * a parallel loop: loops too small to repay waking another thread run
 * inline on the caller; the others run in chunks of at least kMinChunkWork
 * operations, a few per thread so that a thread slowed by the host takes
 * fewer. */

#endif /* TFM_RUNTIME_CORE_THREAD_POOL_H */
