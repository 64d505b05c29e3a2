/*===- pipeline.c - rows between pipeline stages over MPI ----------------===*
 *
 * What the code of a model split into pipeline stages calls (tfmc
 * --pipeline-stages; runtime_kernels.h): stage s is rank s of
 * MPI_COMM_WORLD, and each stage's rows go to the next point-to-point. A
 * rank waiting for the stage before it polls with growing sleeps, as
 * ranks.c's followers wait for rank 0, so that on a shared host it leaves
 * its core to the stages that work.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/ranks.h"
#include "tfm/runtime_kernels.h"

#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum { TAG_STAGE_ROWS = 17, TAG_LOGITS = 18 };

/* Spin briefly (a decode step's rows arrive within microseconds when the
 * stages are on other hosts' cores), then sleep, at most 200 µs at a time:
 * the stage before may take milliseconds. */
/* One turn of a polled wait: nothing for the first 2000 spins, then a
 * sleep that doubles from 1 µs up to 200 µs. */
static void pause_after(int spins, long *nap) {
  if (spins < 2000)
    return;
  *nap = *nap ? (*nap * 2 > 200000 ? 200000 : *nap * 2) : 1000;
  struct timespec pause = {0, *nap};
  nanosleep(&pause, NULL);
}

static void wait_for(MPI_Request *request, MPI_Status *status) {
  double start = MPI_Wtime();
  int done = 0;
  long nap = 0;
  for (int spins = 0; !done; ++spins) {
    MPI_Test(request, &done, status);
    if (!done)
      pause_after(spins, &nap);
  }
  tfm_ranks_count_stage_transfer(MPI_Wtime() - start);
}

static int64_t elements(const tfm_memref2d_f32 *rows) {
  return rows->sizes[0] * rows->sizes[1];
}

static int contiguous(const tfm_memref2d_f32 *rows) {
  return rows->strides[1] == 1 &&
         (rows->sizes[0] <= 1 || rows->strides[0] == rows->sizes[1]);
}

static void copy_rows(const tfm_memref2d_f32 *from, tfm_memref2d_f32 *to) {
  for (int64_t r = 0; r < from->sizes[0]; ++r)
    for (int64_t c = 0; c < from->sizes[1]; ++c)
      to->aligned[to->offset + r * to->strides[0] + c * to->strides[1]] =
          from->aligned[from->offset + r * from->strides[0] +
                        c * from->strides[1]];
}

static void check_count(int64_t count) {
  if (count > 2147483647)
    tfm_ranks_abort("pipeline stage rows of more than 2^31 values");
}

static void send_rows(const tfm_memref2d_f32 *rows, int to, int tag) {
  int64_t count = elements(rows);
  check_count(count);
  float *packed = NULL;
  const float *data = rows->aligned + rows->offset;
  if (!contiguous(rows)) {
    packed = malloc((size_t)(count > 0 ? count : 1) * sizeof(float));
    if (!packed)
      tfm_ranks_abort("out of memory for a pipeline stage's rows");
    tfm_memref2d_f32 dense = {packed,
                              packed,
                              0,
                              {rows->sizes[0], rows->sizes[1]},
                              {rows->sizes[1], 1}};
    copy_rows(rows, &dense);
    data = packed;
  }
  MPI_Request request;
  MPI_Isend(data, (int)count, MPI_FLOAT, to, tag, MPI_COMM_WORLD, &request);
  wait_for(&request, MPI_STATUS_IGNORE);
  free(packed);
}

/* `out` is a fresh buffer (contiguous): the rows rank `from` sends, which
 * must be as many as `out` holds. */
static void receive_rows(tfm_memref2d_f32 *out, int from, int tag) {
  int64_t count = elements(out);
  check_count(count);
  MPI_Request request;
  MPI_Status status;
  MPI_Irecv(out->aligned + out->offset, (int)count, MPI_FLOAT, from, tag,
            MPI_COMM_WORLD, &request);
  wait_for(&request, &status);
  int received = 0;
  MPI_Get_count(&status, MPI_FLOAT, &received);
  if (received != count) {
    char message[160];
    snprintf(message, sizeof message,
             "pipeline stage rows from rank %d: %d values where %lld were "
             "expected (the ranks run different calls)",
             from, received, (long long)count);
    tfm_ranks_abort(message);
  }
}

static void world(int *rank, int *size) {
  MPI_Comm_rank(MPI_COMM_WORLD, rank);
  MPI_Comm_size(MPI_COMM_WORLD, size);
}

TFM_EXPORT void _mlir_ciface_tfm_rt_pipeline_receive(tfm_memref2d_f32 *in,
                                                     tfm_memref2d_f32 *out) {
  int rank, size;
  world(&rank, &size);
  if (rank == 0)
    copy_rows(in, out);
  else
    receive_rows(out, rank - 1, TAG_STAGE_ROWS);
}

TFM_EXPORT void _mlir_ciface_tfm_rt_pipeline_send(tfm_memref2d_f32 *in) {
  int rank, size;
  world(&rank, &size);
  if (rank + 1 < size)
    send_rows(in, rank + 1, TAG_STAGE_ROWS);
}

TFM_EXPORT int64_t tfm_rt_pipeline_last_stage(void) {
  int rank, size;
  world(&rank, &size);
  return rank == size - 1;
}

TFM_EXPORT int64_t tfm_rt_pipeline_collect_rows(int64_t own, int64_t columns) {
  int rank, size;
  world(&rank, &size);
  if (rank != 0 || size == 1)
    return own;
  /* Probed, polled as a receive is waited for. */
  int found = 0;
  long nap = 0;
  MPI_Status status;
  for (int spins = 0; !found; ++spins) {
    MPI_Iprobe(size - 1, TAG_LOGITS, MPI_COMM_WORLD, &found, &status);
    if (!found)
      pause_after(spins, &nap);
  }
  int count = 0;
  MPI_Get_count(&status, MPI_FLOAT, &count);
  return columns > 0 ? count / columns : 0;
}

TFM_EXPORT void _mlir_ciface_tfm_rt_pipeline_collect(tfm_memref2d_f32 *in,
                                                     tfm_memref2d_f32 *out) {
  int rank, size;
  world(&rank, &size);
  int last = size - 1;
  if (rank == 0 && last > 0) {
    receive_rows(out, last, TAG_LOGITS);
    return;
  }
  if (rank == last && last > 0)
    send_rows(in, 0, TAG_LOGITS);
  copy_rows(in, out);
}
