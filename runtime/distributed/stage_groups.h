/*===- stage_groups.h - the ranks of a model's pipeline stages -----------===*
 *
 * A model compiled with --pipeline-stages P and --ranks N runs as P·N MPI
 * processes: P groups of N consecutive ranks, one group a stage, whose
 * tensor-parallel all-reduces run on the group's own communicator
 * (pipeline.c).
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_DISTRIBUTED_STAGE_GROUPS_H
#define TFM_RUNTIME_DISTRIBUTED_STAGE_GROUPS_H

#include "tfm/tfm_model_abi.h"

/* Called by every rank at load (tfm_ranks_join), after the ranks agree on
 * the split: records it and splits the groups' communicators (collective
 * over MPI_COMM_WORLD). 0 where MPI fails to. */
int tfm_stage_groups_join(const tfm_model_desc *desc);

#endif /* TFM_RUNTIME_DISTRIBUTED_STAGE_GROUPS_H */
