// tfm-lower-collectives-to-mpi names the MPI implementations it knows.
// RUN: tfm-opt %s -tfm-lower-collectives-to-mpi='implementation=LAM' -verify-diagnostics

// expected-error @+1 {{tfm-lower-collectives-to-mpi: unknown MPI implementation 'LAM' (OpenMPI or MPICH)}}
module {
  shard.grid @ranks(shape = 2)
  func.func @sum(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
    %s = shard.all_reduce %x on @ranks grid_axes = [0] : tensor<?x32xf32> -> tensor<?x32xf32>
    return %s : tensor<?x32xf32>
  }
}
