// tfm-lower-collectives-to-mpi: each all-reduce of a split model, on
// tensors, becomes an in-place mpi.allreduce of a buffer on the world
// communicator (no communicator split per call); the module names the MPI
// implementation for the MPI lowering (DLTI) and loses the grid. Then
// tfm-convert-mpi-to-llvm: MPI_Allreduce with MPI_IN_PLACE on Open MPI's
// handles, the sum as libmpi exports it (ompi_mpi_op_sum).
// RUN: tfm-opt %s -split-input-file -tfm-lower-collectives-to-mpi | FileCheck %s
// RUN: tfm-opt %s -split-input-file -tfm-lower-collectives-to-mpi='implementation=MPICH' | FileCheck %s --check-prefix=MPICH
// RUN: tfm-opt %s -split-input-file -tfm-lower-collectives-to-mpi -one-shot-bufferize='bufferize-function-boundaries' -tfm-convert-mpi-to-llvm | FileCheck %s --check-prefix=LLVM

// CHECK: module attributes {dlti.map = #dlti.map<"MPI:Implementation" = "OpenMPI">}
// CHECK-NOT: shard.grid
// CHECK-LABEL: func.func @sum
// CHECK: %[[ROWS:.*]] = tensor.dim %arg0, %c0
// CHECK: %[[BUFFER:.*]] = memref.alloc(%[[ROWS]]) : memref<?x32xf32>
// CHECK: bufferization.materialize_in_destination %arg0 in restrict writable %[[BUFFER]]
// CHECK: %[[WORLD:.*]] = mpi.comm_world : !mpi.comm
// CHECK: %[[FLAT:.*]] = memref.collapse_shape %[[BUFFER]] {{\[\[0, 1\]\]}} : memref<?x32xf32> into memref<?xf32>
// CHECK: mpi.allreduce(%[[FLAT]], %[[FLAT]], MPI_SUM, %[[WORLD]]) : memref<?xf32>, memref<?xf32>
// CHECK: %[[SUM:.*]] = bufferization.to_tensor %[[BUFFER]] restrict writable
// CHECK: return %[[SUM]]
// MPICH: dlti.map = #dlti.map<"MPI:Implementation" = "MPICH">
// LLVM-DAG: llvm.func @MPI_Allreduce(!llvm.ptr, !llvm.ptr, i32, !llvm.ptr, !llvm.ptr, !llvm.ptr) -> i32
// LLVM-DAG: llvm.mlir.global external @ompi_mpi_op_sum()
// LLVM-DAG: llvm.mlir.global external @ompi_mpi_float()
// LLVM-DAG: llvm.mlir.global external @ompi_mpi_comm_world()
// LLVM: %[[IN_PLACE:.*]] = llvm.inttoptr %{{.*}} : i64 to !llvm.ptr
// LLVM: llvm.call @MPI_Allreduce(%[[IN_PLACE]],
module {
  shard.grid @ranks(shape = 2)
  func.func @sum(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
    %s = shard.all_reduce %x on @ranks grid_axes = [0] : tensor<?x32xf32> -> tensor<?x32xf32>
    return %s : tensor<?x32xf32>
  }
}

// -----

// The vocabulary-parallel head's logits: each rank's part written at its
// offset (its rank times the part) into a zeroed buffer of the whole, then
// summed over the ranks (the mpi dialect has no all-gather).
// CHECK-LABEL: func.func @gather
// CHECK: %[[BUFFER:.*]] = memref.alloc(%{{.*}}) : memref<?x64xf32>
// CHECK: linalg.fill ins(%{{.*}} : f32) outs(%[[BUFFER]] : memref<?x64xf32>)
// CHECK: %[[WORLD:.*]] = mpi.comm_world
// CHECK: %{{.*}} = mpi.comm_rank(%[[WORLD]]) : i32
// CHECK: %[[OFFSET:.*]] = arith.muli %{{.*}}, %c32
// CHECK: %[[SLOT:.*]] = memref.subview %[[BUFFER]][0, %[[OFFSET]]] [%{{.*}}, 32] [1, 1]
// CHECK: bufferization.materialize_in_destination %arg0 in restrict writable %[[SLOT]]
// CHECK: mpi.allreduce
module {
  shard.grid @ranks(shape = 2)
  func.func @gather(%x: tensor<?x32xf32>) -> tensor<?x64xf32> {
    %g = shard.all_gather %x on @ranks grid_axes = [0] gather_axis = 1 : tensor<?x32xf32> -> tensor<?x64xf32>
    return %g : tensor<?x64xf32>
  }
}
