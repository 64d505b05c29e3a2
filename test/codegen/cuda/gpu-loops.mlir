// RUN: tfm-opt %s -split-input-file -tfm-copies-to-linalg | FileCheck %s --check-prefix=COPY
// RUN: tfm-opt %s -split-input-file -tfm-map-loops-to-gpu | FileCheck %s --check-prefix=TILE
// RUN: tfm-opt %s -split-input-file -tfm-map-loops-to-gpu="threads=64" | FileCheck %s --check-prefix=TILE64

// A host copy becomes linalg.copy, which becomes a kernel like the rest.
// COPY-LABEL: func.func @copy
// COPY-NOT: memref.copy
// COPY: linalg.copy ins(%{{.*}} : memref<?x8xf32>) outs(%{{.*}} : memref<?x8xf32>)
func.func @copy(%a: memref<?x8xf32>, %b: memref<?x8xf32>) {
  memref.copy %a, %b : memref<?x8xf32> to memref<?x8xf32>
  return
}

// -----

// The contiguous dimension (512) in tiles of 128 threads; the rows, whose
// number is known at run time only, one per block.
// TILE-LABEL: func.func @rows
// TILE-DAG: %[[C1:.*]] = arith.constant 1 : index
// TILE-DAG: %[[C128:.*]] = arith.constant 128 : index
// TILE: scf.parallel (%{{.*}}, %{{.*}}) = {{.*}} step (%[[C1]], %[[C128]])
// TILE: scf.parallel (%{{.*}}, %{{.*}}) = {{.*}} to (%{{.*}}, %{{.*}}) step
// TILE: mapping = [#gpu.loop_dim_map<processor = thread_y{{.*}}>, #gpu.loop_dim_map<processor = thread_x
// TILE: mapping = [#gpu.loop_dim_map<processor = block_y{{.*}}>, #gpu.loop_dim_map<processor = block_x
// TILE64-LABEL: func.func @rows
// TILE64: %[[C64:.*]] = arith.constant 64 : index
// TILE64: scf.parallel {{.*}} step (%{{.*}}, %[[C64]])
func.func @rows(%n: index, %out: memref<?x512xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c512 = arith.constant 512 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%n, %c512) step (%c1, %c1) {
    memref.store %zero, %out[%i, %j] : memref<?x512xf32>
  }
  return
}

// -----

// A short contiguous dimension (8: a head's width) leaves room for 16 of
// the dimension outside it in each block of 128.
// TILE-LABEL: func.func @heads
// TILE-DAG: %[[C8:.*]] = arith.constant 8 : index
// TILE-DAG: %[[C16:.*]] = arith.constant 16 : index
// TILE: scf.parallel {{.*}} step (%{{.*}}, %[[C16]], %[[C8]])
func.func @heads(%n: index, %out: memref<?x32x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c32 = arith.constant 32 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i, %h, %d) = (%c0, %c0, %c0) to (%n, %c32, %c8) step (%c1, %c1, %c1) {
    memref.store %zero, %out[%i, %h, %d] : memref<?x32x8xf32>
  }
  return
}

// -----

// A parallel loop inside a thread's work (linalg's, inside a reduction loop
// that is not innermost) runs in that thread as a plain loop.
// TILE-LABEL: func.func @inner
// TILE: scf.parallel
// TILE: scf.parallel
// TILE: scf.for
// TILE-NEXT: scf.for
// TILE-NOT: scf.parallel
// TILE: mapping = [#gpu.loop_dim_map<processor = thread_x
func.func @inner(%n: index, %out: memref<64x8xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%c64) step (%c1) {
    scf.for %k = %c0 to %n step %c1 {
      scf.parallel (%d) = (%c0) to (%c8) step (%c1) {
        memref.store %zero, %out[%i, %d] : memref<64x8xf32>
      }
    }
  }
  return
}
