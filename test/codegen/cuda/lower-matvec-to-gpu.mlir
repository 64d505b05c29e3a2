// RUN: tfm-opt %s -split-input-file -tfm-lower-matvec-to-gpu | FileCheck %s
// RUN: tfm-opt %s -split-input-file -tfm-lower-matvec-to-gpu="target-warps=256" | FileCheck %s --check-prefix=SPLIT

// A decode step's x·Wᵀ: a warp per output element (8 per block of 256
// threads), its lanes striding through k together, 4 elements per load
// where both rows are 16-byte aligned at run time (four such loads in
// flight a lane while whole runs of 512 fit, then one at a time), their
// partial sums summed by butterfly shuffles, lane 0 adding the total to y.
// CHECK-LABEL: func.func @decode_projection
// CHECK-SAME: (%[[X:.*]]: memref<1x64xf32>, %[[W:.*]]: memref<96x64xf32>, %[[Y:.*]]: memref<1x96xf32>)
// CHECK-DAG: %[[K:.*]] = memref.dim %[[X]], %c1
// CHECK-DAG: %[[N:.*]] = memref.dim %[[W]], %c0
// CHECK: %[[N7:.*]] = arith.addi %[[N]], %c7
// CHECK: %[[GROUPS:.*]] = arith.divui %[[N7]], %c8
// CHECK: %[[C256:.*]] = arith.constant 256 : index
// CHECK: gpu.launch blocks(%[[G:.*]], %[[ROW:.*]], %{{.*}}) in (%{{.*}} = %[[GROUPS]], %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C256]],
// CHECK: %[[LANE:.*]] = arith.remui %[[T]], %c32
// CHECK: %[[WARP:.*]] = arith.divui %[[T]], %c32
// CHECK: %[[FIRSTCOL:.*]] = arith.muli %[[G]], %c8
// CHECK: %[[COL:.*]] = arith.addi %[[FIRSTCOL]], %[[WARP]]
// CHECK: %[[INSIDE:.*]] = arith.cmpi ult, %[[COL]], %[[N]]
// CHECK: scf.if %[[INSIDE]] {
// CHECK-DAG: memref.extract_aligned_pointer_as_index %[[X]]
// CHECK-DAG: memref.extract_aligned_pointer_as_index %[[W]]
// CHECK: %[[PART:.*]] = scf.if %{{.*}} -> (f32) {
// CHECK: %[[START:.*]] = arith.muli %[[LANE]], %c4
// CHECK: %[[TAIL:.*]] = arith.remui %[[K]], %[[C512:.*]] :
// CHECK: %[[MAIN:.*]] = arith.subi %[[K]], %[[TAIL]]
// CHECK: %[[HEAD:.*]] = scf.for %[[KK:.*]] = %[[START]] to %[[MAIN]] step %[[C512]] iter_args
// CHECK: memref.load %[[X]][%[[ROW]], %[[KK]]] {alignment = 16 : i64}
// CHECK: memref.load %[[W]][%[[COL]], %[[KK]]] {alignment = 16 : i64}
// CHECK: %[[K1:.*]] = arith.addi %[[KK]], %c128
// CHECK: memref.load %[[W]][%[[COL]], %[[K1]]] {alignment = 16 : i64}
// CHECK: %[[K2:.*]] = arith.addi %[[KK]], %c256
// CHECK: memref.load %[[W]][%[[COL]], %[[K2]]] {alignment = 16 : i64}
// CHECK: %[[K3:.*]] = arith.addi %[[KK]], %c384
// CHECK: memref.load %[[W]][%[[COL]], %[[K3]]] {alignment = 16 : i64}
// CHECK: %[[REST:.*]] = arith.addi %[[START]], %[[MAIN]]
// CHECK: scf.for %[[KR:.*]] = %[[REST]] to %[[K]] step %c128{{.*}} iter_args(%{{.*}} = %[[HEAD]])
// CHECK: memref.load %[[W]][%[[COL]], %[[KR]]] {alignment = 16 : i64}
// CHECK: } else {
// CHECK: scf.for %[[KS:.*]] = %[[LANE]] to %[[K]] step %c32{{.*}} iter_args
// CHECK: memref.load %[[W]][%[[COL]], %[[KS]]] :
// CHECK-COUNT-5: gpu.shuffle  xor
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
// CHECK: gpu.shuffle
// CHECK-NOT: memref.load %{{.*}} : memref<1x96xf32>
// CHECK: memref.store %{{.*}} : memref<1x96xf32>
func.func @over_zero_fill(%x: memref<1x64xf32>, %w: memref<96x64xf32>, %y: memref<1x96xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<1x96xf32>)
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : memref<1x64xf32>, memref<96x64xf32>) outs(%y : memref<1x96xf32>)
  return
}

// -----

// bf16 weights (tfm-widen-in-matmuls): a lane's aligned step is 16 bytes
// of the weight row, eight elements (two 16-byte runs of x), each widened
// as it loads; the other path widens one at a time.
// CHECK-LABEL: func.func @bf16_weights
// CHECK-SAME: (%[[X:.*]]: memref<1x64xf32>, %[[W:.*]]: memref<96x64xbf16>, %{{.*}}: memref<1x96xf32>)
// CHECK: scf.if %{{.*}} -> (f32) {
// CHECK: %[[START:.*]] = arith.muli %{{.*}}, %c8
// CHECK: scf.for %[[KK:.*]] = %[[START]] to %{{.*}} step %c1024{{.*}} iter_args
// CHECK: memref.load %[[X]][%{{.*}}, %[[KK]]] {alignment = 16 : i64}
// CHECK: %[[W0:.*]] = memref.load %[[W]][%{{.*}}, %[[KK]]] {alignment = 16 : i64}
// CHECK: arith.extf %[[W0]] : bf16 to f32
// CHECK-COUNT-3: memref.load %[[X]]{{.*}} : memref<1x64xf32>
// CHECK: memref.load %[[X]]{{.*}} {alignment = 16 : i64}
// CHECK: } else {
// CHECK: %[[W1:.*]] = memref.load %[[W]]
// CHECK: arith.extf %[[W1]] : bf16 to f32
func.func @bf16_weights(%x: memref<1x64xf32>, %w: memref<96x64xbf16>, %y: memref<1x96xf32>) {
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : memref<1x64xf32>, memref<96x64xbf16>) outs(%y : memref<1x96xf32>)
  return
}

// -----

// Few outputs (96, where the launch aims for 256 warps): four warps share
// each output's k, two outputs a block of eight warps. Warp w of a block
// takes output 2g + w / 4 and, of its k, the 16-byte runs w % 4, w % 4 + 4,
// ... (two of them in flight a lane: 2048 bf16 are eight runs of 256); lane
// 0 leaves the warp's sum in workgroup memory, and after a barrier threads
// 0 and 1 add up their output's four sums and write it.
// SPLIT-LABEL: func.func @few_outputs
// SPLIT-SAME: (%[[X:.*]]: memref<1x2048xf32>, %[[W:.*]]: memref<96x2048xbf16>, %[[Y:.*]]: memref<1x96xf32>)
// SPLIT: %[[GROUPS:.*]] = arith.divui %{{.*}}, %c2
// SPLIT: gpu.launch blocks(%[[G:.*]], %[[ROW:.*]], %{{.*}}) in (%{{.*}} = %[[GROUPS]], {{.*}} workgroup(%[[PARTS:.*]] : memref<8xf32, #gpu.address_space<workgroup>>)
// SPLIT: %[[LANE:.*]] = arith.remui %[[T:.*]], %c32
// SPLIT: %[[WARP:.*]] = arith.divui %[[T]], %c32
// SPLIT: %[[FIRST:.*]] = arith.muli %[[G]], %c2
// SPLIT: %[[OUTPUT:.*]] = arith.divui %[[WARP]], %c4
// SPLIT: %[[COL:.*]] = arith.addi %[[FIRST]], %[[OUTPUT]]
// SPLIT: %[[SHARE:.*]] = arith.remui %[[WARP]], %c4
// SPLIT: %[[PART:.*]] = scf.if %{{.*}} -> (f32) {
// SPLIT: %[[LANEK:.*]] = arith.muli %[[LANE]], %c8
// SPLIT: %[[SKIP:.*]] = arith.muli %[[SHARE]], %c256
// SPLIT: %[[START:.*]] = arith.addi %[[LANEK]], %[[SKIP]]
// SPLIT: scf.for %[[KK:.*]] = %[[START]] to %{{.*}} step %c2048{{.*}} iter_args
// SPLIT: memref.load %[[W]][%[[COL]], %[[KK]]] {alignment = 16 : i64}
// SPLIT: %[[K1:.*]] = arith.addi %[[KK]], %c1024
// SPLIT: memref.load %[[W]][%[[COL]], %[[K1]]] {alignment = 16 : i64}
// SPLIT: scf.for %{{.*}} step %c1024
// SPLIT: } else {
// SPLIT: %[[SCALARSKIP:.*]] = arith.muli %[[SHARE]], %c32
// SPLIT: %[[SCALARSTART:.*]] = arith.addi %[[LANE]], %[[SCALARSKIP]]
// SPLIT: scf.for %{{.*}} = %[[SCALARSTART]] to %{{.*}} step %c128
// SPLIT-COUNT-5: gpu.shuffle  xor
// SPLIT: } else {
// SPLIT: scf.yield %cst
// SPLIT: memref.store %[[PART]], %[[PARTS]][%[[WARP]]]
// SPLIT: gpu.barrier
// SPLIT: %[[OWN:.*]] = arith.addi %[[FIRST]], %[[T]]
// SPLIT: %[[SLOT:.*]] = arith.muli %[[T]], %c4
// SPLIT: memref.load %[[PARTS]][%[[SLOT]]]
// SPLIT-COUNT-3: memref.load %[[PARTS]]
// SPLIT: memref.store %{{.*}}, %[[Y]][%[[ROW]], %[[OWN]]]
func.func @few_outputs(%x: memref<1x2048xf32>, %w: memref<96x2048xbf16>, %y: memref<1x96xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%y : memref<1x96xf32>)
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %w : memref<1x2048xf32>, memref<96x2048xbf16>) outs(%y : memref<1x96xf32>)
  return
}
