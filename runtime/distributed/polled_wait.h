/*===- polled_wait.h - waiting on MPI without holding a core ------------===*
 *
 * A rank that waits (a follower for rank 0's next call, a pipeline stage
 * for the rows of the one before it) tests its request in a loop: spinning
 * first, since a decode step's next message usually comes within
 * microseconds, then sleeping for doubling times, so that on a shared host
 * it leaves its core to the ranks that work. MPI_Wait would spin a core
 * for as long as rank 0 tokenizes, samples or serves nobody.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_DISTRIBUTED_POLLED_WAIT_H
#define TFM_RUNTIME_DISTRIBUTED_POLLED_WAIT_H

#include <mpi.h>

#include <time.h>

/* One turn of a polled wait: nothing for the first 2000 turns, then a
 * sleep that doubles from 1 µs up to `longest_nap_ns`. */
static inline void tfm_polled_pause(int turns, long *nap, long longest_nap_ns) {
  if (turns < 2000)
    return;
  *nap = *nap ? (*nap * 2 > longest_nap_ns ? longest_nap_ns : *nap * 2) : 1000;
  struct timespec pause = {0, *nap};
  nanosleep(&pause, NULL);
}

/* MPI_Wait, polled. */
static inline void tfm_polled_wait(MPI_Request *request, MPI_Status *status,
                                   long longest_nap_ns) {
  int done = 0;
  long nap = 0;
  for (int turns = 0; !done; ++turns) {
    MPI_Test(request, &done, status);
    if (!done)
      tfm_polled_pause(turns, &nap, longest_nap_ns);
  }
}

#endif /* TFM_RUNTIME_DISTRIBUTED_POLLED_WAIT_H */
