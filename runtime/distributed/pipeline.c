/*===- pipeline.c - rows between pipeline stages over MPI ----------------===*
 *
 * What the code of a model split into pipeline stages calls (tfmc
 * --pipeline-stages; runtime_kernels.h). Stage s runs on group (s + 1) mod
 * P of MPI_COMM_WORLD's ranks (a group: the stage's N tensor-parallel ranks,
 * tfmc --ranks N, whose all-reduces run on the group's communicator,
 * tfm_rt_stage_comm; one rank where there are none): the last on rank 0's
 * group. Rank 0 answers, so the logits stay where they are sampled, and
 * rank 0 can send the other ranks every micro-batch's call before it runs
 * its own part of the first (the engine's micro-batches). Each rank's rows
 * go point-to-point to the rank in its place in the next stage's group (a
 * group's ranks hold the same rows after their all-reduce, so the N
 * transfers run side by side, as vLLM's do); a rank waiting for the stage
 * before it polls (polled_wait.h), as ranks.c's followers wait for rank 0.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/core/ranks.h"
#include "runtime/distributed/polled_wait.h"
#include "runtime/distributed/stage_groups.h"
#include "tfm/runtime_kernels.h"

#include <mpi.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { TAG_STAGE_ROWS = 17 };

/* Longest sleep of a stage's polled wait: the stage before may take
 * milliseconds, and a decode step's rows should not wait a whole one. */
enum { LONGEST_NAP_NS = 200000 };

static void wait_for(MPI_Request *request, MPI_Status *status) {
  double start = MPI_Wtime();
  tfm_polled_wait(request, status, LONGEST_NAP_NS);
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

/* The split, as the model was compiled (tfm_stage_groups_join): `stages`
 * groups of `group_size` consecutive ranks, the tensor-parallel ranks of a
 * stage; group g runs stage (g + P - 1) mod P, and each rank's rows go to
 * the rank in its place in the next stage's group. */
static int stages = 1, group_size = 1, own_rank = 0;
static MPI_Comm stage_comm = MPI_COMM_NULL;

int tfm_stage_groups_join(const tfm_model_desc *desc) {
  MPI_Comm_rank(MPI_COMM_WORLD, &own_rank);
  if (desc->pipeline_stages <= 1)
    return 1;
  stages = desc->pipeline_stages;
  group_size = desc->ranks / stages;
  if (group_size <= 1)
    return 1;
  return MPI_Comm_split(MPI_COMM_WORLD, own_rank / group_size,
                        own_rank % group_size, &stage_comm) == MPI_SUCCESS;
}

static int stage(void) { return (own_rank / group_size + stages - 1) % stages; }

static int rank_of_stage(int s) {
  return (s + 1) % stages * group_size + own_rank % group_size;
}

TFM_EXPORT int64_t tfm_rt_stage_comm(void) {
  MPI_Comm comm = stage_comm != MPI_COMM_NULL ? stage_comm : MPI_COMM_WORLD;
  return (int64_t)(intptr_t)comm;
}

TFM_EXPORT void _mlir_ciface_tfm_rt_pipeline_receive(tfm_memref2d_f32 *in,
                                                     tfm_memref2d_f32 *out) {
  int own = stage();
  if (own == 0)
    copy_rows(in, out);
  else
    receive_rows(out, rank_of_stage(own - 1), TAG_STAGE_ROWS);
}

TFM_EXPORT void _mlir_ciface_tfm_rt_pipeline_send(tfm_memref2d_f32 *in) {
  int own = stage();
  if (own + 1 < stages)
    send_rows(in, rank_of_stage(own + 1), TAG_STAGE_ROWS);
}

TFM_EXPORT int64_t tfm_rt_pipeline_stage(void) { return stage(); }

TFM_EXPORT int64_t tfm_rt_pipeline_last_stage(void) {
  return stage() == stages - 1;
}
