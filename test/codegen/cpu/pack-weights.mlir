// Weights stored as panels for the runtime's GEMM kernel (pack-weights, the
// default), and the weights that must keep the checkpoint layout.
// RUN: tfm-opt %s -split-input-file -tfm-lay-out-weights -tfm-select-cpu-kernels -tfm-lower-to-linalg | FileCheck %s
// RUN: tfm-opt %s -split-input-file -tfm-lay-out-weights=pack-weights=false -tfm-select-cpu-kernels -tfm-lower-to-linalg | FileCheck %s --check-prefix=UNPACKED
// Without the CPU's kernel selection, the target-independent lowering
// computes the same product from the panels: unpacked, then linalg.matmul.
// RUN: tfm-opt %s -split-input-file -tfm-lay-out-weights -tfm-lower-to-linalg | FileCheck %s --check-prefix=GENERIC

// A linear's weight: 40 rows make two panels of 32 (the second zero-padded),
// 2 x 8 x 32 floats; the kernel adds the bias and writes every output.
// CHECK-LABEL: module attributes
// CHECK-SAME: tfm.weight_bytes = 2208 : i64
// CHECK-SAME: tfm.weight_layout = {b = 2048 : i64, w = 0 : i64}
// CHECK-SAME: tfm.weight_panels = {w = array<i64: 40, 8>}
// CHECK-LABEL: func.func @linear
// CHECK: memref.view %{{.*}}[%{{.*}}][] : memref<?xi8> to memref<2x8x32xf32>
// CHECK: %[[OUT:.*]] = memref.alloc(%{{.*}}) : memref<?x40xf32>
// CHECK: call @tfm_rt_linear_panels_bias(
// CHECK: bufferization.to_tensor %[[OUT]] restrict writable
// CHECK-NOT: linalg.unpack
// CHECK-NOT: linalg.matmul
// CHECK: return
// UNPACKED-LABEL: module attributes
// UNPACKED-NOT: tfm.weight_panels
// UNPACKED-LABEL: func.func @linear
// UNPACKED: memref.view %{{.*}}[%{{.*}}][] : memref<?xi8> to memref<40x8xf32>
// UNPACKED: linalg.matmul
// UNPACKED-NOT: call @tfm_rt_linear_panels
// GENERIC-LABEL: func.func @linear
// GENERIC: %[[PANELS:.*]] = memref.view %{{.*}}[%{{.*}}][] : memref<?xi8> to memref<2x8x32xf32>
// GENERIC: %[[W:.*]] = linalg.unpack %{{.*}} inner_dims_pos = [0] inner_tiles = [32] into %{{.*}} : tensor<2x8x32xf32> -> tensor<40x8xf32>
// GENERIC: linalg.matmul {{.*}} ins(%{{.*}}, %[[W]] : tensor<?x8xf32>, tensor<40x8xf32>)
// GENERIC-NOT: call @tfm_rt
tfm.weight_decl @w : tensor<40x8xf32>
tfm.weight_decl @b : tensor<40xf32>
func.func @linear(%x: tensor<?x8xf32>) -> tensor<?x40xf32> {
  %w = tfm.weight @w : tensor<40x8xf32>
  %b = tfm.weight @b : tensor<40xf32>
  %y = tfm.linear %x, %w bias %b : (tensor<?x8xf32>, tensor<40x8xf32>, tensor<40xf32>) -> tensor<?x40xf32>
  return %y : tensor<?x40xf32>
}

// -----

// A join whose parts but the last fill their panels: the parts' panels
// follow each other, so the join is one view of 1 + 1 + 1 panels. With an
// activation the bias still goes to the kernel, and the epilogue applies
// the activation alone.
// CHECK-LABEL: module attributes
// CHECK-SAME: tfm.weight_layout = {b = 3072 : i64, k = 1024 : i64, q = 0 : i64, v = 2048 : i64}
// CHECK-SAME: tfm.weight_panels = {k = array<i64: 32, 8>, q = array<i64: 32, 8>, v = array<i64: 16, 8>}
// CHECK-LABEL: func.func @joined_with_activation
// CHECK: memref.view %{{.*}}[%{{.*}}][] : memref<?xi8> to memref<3x8x32xf32>
// CHECK: call @tfm_rt_linear_panels_bias(
// CHECK: linalg.generic
// CHECK-SAME: ins(%{{[^ ]*}} : tensor<?x80xf32>)
// CHECK: arith.negf
// CHECK-NOT: tensor.concat
tfm.weight_decl @q : tensor<32x8xf32>
tfm.weight_decl @k : tensor<32x8xf32>
tfm.weight_decl @v : tensor<16x8xf32>
tfm.weight_decl @b : tensor<80xf32>
func.func @joined_with_activation(%x: tensor<?x8xf32>) -> tensor<?x80xf32> {
  %q = tfm.weight @q : tensor<32x8xf32>
  %k = tfm.weight @k : tensor<32x8xf32>
  %v = tfm.weight @v : tensor<16x8xf32>
  %w = tfm.concat %q, %k, %v : (tensor<32x8xf32>, tensor<32x8xf32>, tensor<16x8xf32>) -> tensor<80x8xf32>
  %b = tfm.weight @b : tensor<80xf32>
  %y = tfm.linear %x, %w bias %b activation silu : (tensor<?x8xf32>, tensor<80x8xf32>, tensor<80xf32>) -> tensor<?x80xf32>
  return %y : tensor<?x80xf32>
}

// -----

// No match: a join whose first part ends inside a panel would leave a gap
// of padding in the middle of the joined matrix; it keeps its layout.
// CHECK-LABEL: module attributes
// CHECK-NOT: tfm.weight_panels
// CHECK-LABEL: func.func @join_with_partial_part
// CHECK: memref<24x8xf32>
// CHECK: linalg.matmul
tfm.weight_decl @a : tensor<8x8xf32>
tfm.weight_decl @b : tensor<16x8xf32>
func.func @join_with_partial_part(%x: tensor<?x8xf32>) -> tensor<?x24xf32> {
  %a = tfm.weight @a : tensor<8x8xf32>
  %b = tfm.weight @b : tensor<16x8xf32>
  %w = tfm.concat %a, %b : (tensor<8x8xf32>, tensor<16x8xf32>) -> tensor<24x8xf32>
  %y = tfm.linear %x, %w : (tensor<?x8xf32>, tensor<24x8xf32>) -> tensor<?x24xf32>
  return %y : tensor<?x24xf32>
}

// -----

// A table that is also an embedding (GPT-2's tied LM head) is stored as
// panels too: the head streams them, and the lookup reads each row's
// elements from its panel, table[r][c] = panels[r / 32][c][r % 32].
// CHECK-LABEL: module attributes
// CHECK-SAME: tfm.weight_panels = {proj = array<i64: 32, 8>, table = array<i64: 64, 8>}
// CHECK-LABEL: func.func @tied
// CHECK: %[[TABLE:.*]] = bufferization.to_tensor %{{.*}} : memref<2x8x32xf32> to tensor<2x8x32xf32>
// CHECK: linalg.generic
// CHECK: %[[ROW:.*]] = arith.index_cast
// CHECK: %[[COL:.*]] = linalg.index 1
// CHECK: %[[PANEL:.*]] = arith.divui %[[ROW]], %[[C32:.*]] : index
// CHECK: %[[LANE:.*]] = arith.remui %[[ROW]], %[[C32]] : index
// CHECK: tensor.extract %[[TABLE]][%[[PANEL]], %[[COL]], %[[LANE]]]
// CHECK: call @tfm_rt_linear_panels(
// CHECK: call @tfm_rt_linear_panels(
tfm.weight_decl @table : tensor<64x8xf32>
tfm.weight_decl @proj : tensor<32x8xf32>
func.func @tied(%ids: tensor<?xi32>) -> tensor<?x64xf32> {
  %table = tfm.weight @table : tensor<64x8xf32>
  %e = tfm.embedding %table[%ids] : tensor<64x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %proj = tfm.weight @proj : tensor<32x8xf32>
  %p = tfm.linear %e, %proj : (tensor<?x8xf32>, tensor<32x8xf32>) -> tensor<?x32xf32>
  %y = tfm.linear %e, %table : (tensor<?x8xf32>, tensor<64x8xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}

// -----

// No match: a table that is only looked up (an encoder's token embeddings)
// keeps the checkpoint layout, its rows contiguous.
// CHECK-LABEL: module attributes
// CHECK-SAME: tfm.weight_panels = {proj = array<i64: 32, 8>}
// CHECK-LABEL: func.func @lookup_only
// CHECK: memref<64x8xf32>
// CHECK: tensor.extract %{{.*}}[%{{.*}}, %{{.*}}] : tensor<64x8xf32>
tfm.weight_decl @table : tensor<64x8xf32>
tfm.weight_decl @proj : tensor<32x8xf32>
func.func @lookup_only(%ids: tensor<?xi32>) -> tensor<?x32xf32> {
  %table = tfm.weight @table : tensor<64x8xf32>
  %e = tfm.embedding %table[%ids] : tensor<64x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %proj = tfm.weight @proj : tensor<32x8xf32>
  %p = tfm.linear %e, %proj : (tensor<?x8xf32>, tensor<32x8xf32>) -> tensor<?x32xf32>
  return %p : tensor<?x32xf32>
}
