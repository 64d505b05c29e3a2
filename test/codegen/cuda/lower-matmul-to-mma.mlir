// RUN: tfm-opt %s -split-input-file -tfm-lower-matmul-to-mma | FileCheck %s

// A prefill's x·Wᵀ with bf16 weights on tensor cores: 64 x 64 tiles of the
// output, one per block of 4 warps (128 threads); per stage of 32 k, both
// tiles staged in workgroup memory as words of two bf16 (x rounded to
// bf16, zeros outside), then 2 steps of 16 k, each 2 x 4 mma.sync blocks a
// warp; the fill the sums overwrite goes.
// CHECK-LABEL: func.func @bf16_weights
// CHECK-SAME: (%[[X:.*]]: memref<?x64xf32>, %[[W:.*]]: memref<96x64xbf16>, %[[Y:.*]]: memref<?x96xf32>)
// CHECK-NOT: linalg.fill
// CHECK: gpu.launch blocks({{.*}}) threads(%[[T:[a-z0-9_]+]], %{{.*}}, %{{.*}}) in (%{{[a-z0-9_]+}} = %c128, %{{[a-z0-9_]+}} = %c1{{[_0-9]*}}, %{{[a-z0-9_]+}} = %c1{{[_0-9]*}})
// CHECK-SAME: workgroup(%[[XS:[a-z0-9_]+]] : memref<64x20xi32, #gpu.address_space<workgroup>>, %[[WS:[a-z0-9_]+]] : memref<64x20xi32, #gpu.address_space<workgroup>>)
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %c32{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// Tiles wholly inside, rows aligned: runs of 16 bytes (4 f32 of x, 8 bf16
// of W) loaded together, stored as consecutive words.
// CHECK: scf.if %{{.*}} {
// CHECK: %[[XR:.*]] = memref.load %[[X]][%{{.*}}, %{{.*}}] {alignment = 16 : i64}
// CHECK: arith.truncf %[[XR]] : f32 to bf16
// CHECK-COUNT-3: memref.load %[[X]][%{{.*}}, %{{.*}}] : memref<?x64xf32>
// CHECK: memref.store %{{.*}}, %[[XS]]
// CHECK: memref.load %[[W]][%{{.*}}, %{{.*}}] {alignment = 16 : i64}
// CHECK-COUNT-7: memref.load %[[W]][%{{.*}}, %{{.*}}] : memref<96x64xbf16>
// CHECK-COUNT-4: memref.store %{{.*}}, %[[WS]]
// At the edges: element by element, zeros outside.
// CHECK: } else {
// CHECK: %[[XV:.*]] = memref.load %[[X]]
// CHECK: %[[XH:.*]] = arith.truncf %[[XV]] : f32 to bf16
// CHECK: arith.select %{{.*}}, %[[XH]], %{{.*}} : bf16
// CHECK: arith.shli
// CHECK: %[[PAIR:.*]] = arith.ori
// CHECK: memref.store %[[PAIR]], %[[XS]]
// CHECK: memref.load %[[W]]
// CHECK-NOT: arith.truncf
// CHECK: memref.store %{{.*}}, %[[WS]]
// CHECK-COUNT-7: memref.store %{{.*}}, %[[XS]]
// CHECK: gpu.barrier
// CHECK-COUNT-2: nvvm.mma.sync A[{{.*}}] B[{{.*}}] C[{{.*}}] {layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, multiplicandAPtxType = #nvvm.mma_type<bf16>, multiplicandBPtxType = #nvvm.mma_type<bf16>, shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (i32, i32, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK-COUNT-14: nvvm.mma.sync
// CHECK-NOT: nvvm.mma.sync
// CHECK: gpu.barrier
// CHECK: scf.yield
// CHECK-COUNT-32: memref.store %{{.*}}, %[[Y]]
// CHECK-NOT: memref.store
// CHECK-NOT: linalg.matmul
func.func @bf16_weights(%x: memref<?x64xf32>, %w: memref<96x64xbf16>, %y: memref<?x96xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<?x96xf32>)
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : memref<?x64xf32>, memref<96x64xbf16>) outs(%y : memref<?x96xf32>)
  return
}

// -----

// f16 weights: x rounded to f16, the fragments' words as pairs of f16,
// and without a zero fill before it the sums are added to the output.
// CHECK-LABEL: func.func @f16_weights_accumulating
// CHECK-SAME: (%{{.*}}: memref<?x48xf32>, %{{.*}}: memref<32x48xf16>, %[[Y:.*]]: memref<?x32xf32>)
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: %[[WORD:.*]] = memref.load %{{.*}} : memref<64x20xi32, #gpu.address_space<workgroup>>
// CHECK: llvm.bitcast %[[WORD]] : i32 to vector<2xf16>
// CHECK: nvvm.mma.sync {{.*}} shape = #nvvm.shape<m = 16, n = 8, k = 16>} : (vector<2xf16>, vector<2xf16>, f32) -> !llvm.struct<(f32, f32, f32, f32)>
// CHECK: %[[OLD:.*]] = memref.load %[[Y]]
// CHECK: %[[NEW:.*]] = arith.addf %[[OLD]], %{{.*}} : f32
// CHECK: memref.store %[[NEW]], %[[Y]]
func.func @f16_weights_accumulating(%x: memref<?x48xf32>, %w: memref<32x48xf16>, %y: memref<?x32xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : memref<?x48xf32>, memref<32x48xf16>) outs(%y : memref<?x32xf32>)
  return
}

// -----

// f32 weights stay for tfm-lower-matmul-to-gpu-tiles (f32 on CUDA cores).
// CHECK-LABEL: func.func @f32_weights
// CHECK-NOT: gpu.launch
// CHECK: linalg.matmul
func.func @f32_weights(%x: memref<?x64xf32>, %w: memref<96x64xf32>, %y: memref<?x96xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : memref<?x64xf32>, memref<96x64xf32>) outs(%y : memref<?x96xf32>)
  return
}
