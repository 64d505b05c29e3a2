// RUN: tfm-opt %s -split-input-file -tfm-lower-matmul-to-gpu-tiles | FileCheck %s

// A prefill's x·Wᵀ: 32 x 32 tiles of the output, one per block of 32 x 8
// threads, the tiles of x and W staged in workgroup memory between
// barriers, each thread adding four outputs of its column.
// CHECK-LABEL: func.func @prefill_projection
// CHECK-SAME: (%[[X:.*]]: memref<?x64xf32>, %[[W:.*]]: memref<96x64xf32>, %[[Y:.*]]: memref<?x96xf32>)
// CHECK: gpu.launch blocks({{.*}}) in ({{.*}}) threads(%[[TX:[a-z0-9_]+]], %[[TY:[a-z0-9_]+]], %{{.*}}) in (%{{[a-z0-9_]+}} = %c32, %{{[a-z0-9_]+}} = %c8, %{{[a-z0-9_]+}} = %c1)
// CHECK-SAME: workgroup(%[[XS:[a-z0-9_]+]] : memref<32x33xf32, #gpu.address_space<workgroup>>, %[[WS:[a-z0-9_]+]] : memref<32x33xf32, #gpu.address_space<workgroup>>)
// CHECK: scf.for {{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32)
// CHECK: memref.load %[[X]]
// CHECK: memref.store %{{.*}}, %[[XS]][%{{.*}}, %[[TX]]]
// CHECK: memref.load %[[W]]
// CHECK: memref.store %{{.*}}, %[[WS]][%{{.*}}, %[[TX]]]
// CHECK: gpu.barrier
// CHECK: scf.for
// CHECK: memref.load %[[WS]][%[[TX]], %{{.*}}]
// CHECK: gpu.barrier
// CHECK-COUNT-4: memref.store %{{.*}}, %[[Y]]
// CHECK-NOT: linalg.matmul
func.func @prefill_projection(%x: memref<?x64xf32>, %w: memref<96x64xf32>, %y: memref<?x96xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : memref<?x64xf32>, memref<96x64xf32>) outs(%y : memref<?x96xf32>)
  return
}

// -----

// f16 weights (tfm-widen-in-matmuls) are staged widened: the tiles and
// the sums stay f32.
// CHECK-LABEL: func.func @f16_weights
// CHECK-SAME: (%{{.*}}: memref<?x64xf32>, %[[W:.*]]: memref<96x64xf16>, %{{.*}}: memref<?x96xf32>)
// CHECK: workgroup(%{{.*}} : memref<32x33xf32, #gpu.address_space<workgroup>>, %[[WS:[a-z0-9_]+]] : memref<32x33xf32, #gpu.address_space<workgroup>>)
// CHECK: %[[H:.*]] = memref.load %[[W]]
// CHECK: %[[F:.*]] = arith.extf %[[H]] : f16 to f32
// CHECK: scf.yield %[[F]] : f32
// CHECK: memref.store %{{.*}}, %[[WS]]
func.func @f16_weights(%x: memref<?x64xf32>, %w: memref<96x64xf16>, %y: memref<?x96xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : memref<?x64xf32>, memref<96x64xf16>) outs(%y : memref<?x96xf32>)
  return
}
