// RUN: tfm-opt %s -split-input-file -tfm-lower-matvec-to-gpu | FileCheck %s

// A decode step's x·Wᵀ: a block per output element, its threads striding
// through k together, their partial sums reduced across the block.
// CHECK-LABEL: func.func @decode_projection
// CHECK-SAME: (%[[X:.*]]: memref<1x64xf32>, %[[W:.*]]: memref<96x64xf32>, %[[Y:.*]]: memref<1x96xf32>)
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK-DAG: %[[K:.*]] = memref.dim %[[X]], %c1
// CHECK-DAG: %[[N:.*]] = memref.dim %[[W]], %c0
// CHECK: gpu.launch blocks(%[[COL:.*]], %[[ROW:.*]], %{{.*}}) in (%{{.*}} = %[[N]], %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C128]],
// CHECK: %[[PART:.*]] = scf.for %[[KK:.*]] = %[[T]] to %[[K]] step %[[C128]] iter_args
// CHECK: memref.load %[[X]][%[[ROW]], %[[KK]]]
// CHECK: memref.load %[[W]][%[[COL]], %[[KK]]]
// CHECK: %[[SUM:.*]] = gpu.all_reduce add %[[PART]] uniform
// CHECK: scf.if
// CHECK: memref.store %{{.*}}, %[[Y]][%[[ROW]], %[[COL]]]
// CHECK-NOT: linalg.matmul
func.func @decode_projection(%x: memref<1x64xf32>, %w: memref<96x64xf32>, %y: memref<1x96xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : memref<1x64xf32>, memref<96x64xf32>) outs(%y : memref<1x96xf32>)
  return
}

// -----

// A prefill's (rows known at run time only) stays a matmul.
// CHECK-LABEL: func.func @prefill_projection
// CHECK: linalg.matmul
// CHECK-NOT: gpu.launch
func.func @prefill_projection(%x: memref<?x64xf32>, %w: memref<96x64xf32>, %y: memref<?x96xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : memref<?x64xf32>, memref<96x64xf32>) outs(%y : memref<?x96xf32>)
  return
}

// -----

// Over a zero fill made just for it, the kernel writes its sums: the fill
// goes, and the output is never read.
// CHECK-LABEL: func.func @over_zero_fill
// CHECK-NOT: linalg.fill
// CHECK: gpu.all_reduce add
// CHECK-NOT: memref.load %{{.*}} : memref<1x96xf32>
// CHECK: memref.store %{{.*}} : memref<1x96xf32>
func.func @over_zero_fill(%x: memref<1x64xf32>, %w: memref<96x64xf32>, %y: memref<1x96xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<1x96xf32>)
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : memref<1x64xf32>, memref<96x64xf32>) outs(%y : memref<1x96xf32>)
  return
}
