// RUN: tfm-opt %s -tfm-expand-experts | FileCheck %s
// RUN: tfm-opt %s -tfm-expand-experts -tfm-lay-out-weights -tfm-select-cpu-kernels -tfm-lower-to-linalg | FileCheck %s --check-prefix=LINALG

// tfm.moe over 2 experts, top 1: the routing, then each expert's tokens
// through its projections under an scf.if (skipped when no token chose
// it; tfm.expert_share 1/2 says how often one is read), added back into
// zeros in expert order.
// CHECK-LABEL: func.func @moe(
// CHECK-SAME: %[[X:[^:]*]]: tensor<?x8xf32>, %[[L:[^:]*]]: tensor<?x2xf32>)
// CHECK: %[[W:.*]], %[[E:.*]] = tfm.route %[[L]] {normalize, top_k = 1 : i64} : tensor<?x2xf32> -> tensor<?x1xf32>, tensor<?x1xi32>
// CHECK: %[[ZERO:.*]] = linalg.fill
// CHECK: %[[R0:.*]], %[[S0:.*]] = tfm.expert_rows %[[E]], %[[W]] {expert = 0 : i64}
// CHECK: %[[N0:.*]] = tensor.dim %[[R0]]
// CHECK: %[[ANY0:.*]] = arith.cmpi ugt, %[[N0]]
// CHECK: %[[OUT0:.*]] = scf.if %[[ANY0]] -> (tensor<?x8xf32>) {
// CHECK: %[[T:.*]] = tfm.take_rows %[[X]][%[[R0]]]
// CHECK: %[[G:.*]] = tfm.linear %[[T]], %{{.*}} : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
// CHECK: %[[U:.*]] = tfm.linear %[[T]]
// CHECK: %[[A:.*]] = tfm.activation silu %[[G]]
// CHECK: %[[H:.*]] = tfm.mul %[[A]], %[[U]]
// CHECK: %[[D:.*]] = tfm.linear %[[H]], %{{.*}} : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
// CHECK: %[[ADDED:.*]] = tfm.scatter_add_rows %[[D]], %[[S0]] into %[[ZERO]][%[[R0]]]
// CHECK: scf.yield %[[ADDED]]
// CHECK: } else {
// CHECK: scf.yield %[[ZERO]]
// CHECK: } {tfm.expert_share = 5.000000e-01 : f64}
// CHECK: tfm.expert_rows %[[E]], %[[W]] {expert = 1 : i64}
// CHECK: tfm.scatter_add_rows %{{.*}}, %{{.*}} into %[[OUT0]]
// The routing and row moves as loops over tensors.
// LINALG-LABEL: func.func @moe(
// LINALG-NOT: tfm.
// LINALG: math.exp
// LINALG: scf.if
// LINALG: return
tfm.weight_decl @g0 : tensor<16x8xf32>
tfm.weight_decl @u0 : tensor<16x8xf32>
tfm.weight_decl @d0 : tensor<8x16xf32>
tfm.weight_decl @g1 : tensor<16x8xf32>
tfm.weight_decl @u1 : tensor<16x8xf32>
tfm.weight_decl @d1 : tensor<8x16xf32>
func.func @moe(%x: tensor<?x8xf32>, %logits: tensor<?x2xf32>) -> tensor<?x8xf32> {
  %g0 = tfm.weight @g0 : tensor<16x8xf32>
  %u0 = tfm.weight @u0 : tensor<16x8xf32>
  %d0 = tfm.weight @d0 : tensor<8x16xf32>
  %g1 = tfm.weight @g1 : tensor<16x8xf32>
  %u1 = tfm.weight @u1 : tensor<16x8xf32>
  %d1 = tfm.weight @d1 : tensor<8x16xf32>
  %y = tfm.moe %x, %logits, [%g0, %u0, %d0, %g1, %u1, %d1] {activation = #tfm<activation_kind silu>, normalize, top_k = 1 : i64} : (tensor<?x8xf32>, tensor<?x2xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// Gemma 4's per-expert scales go to tfm.route with the choice; the route's
// lowering multiplies each chosen weight by its expert's scale, read at
// the expert's index.
// CHECK-LABEL: func.func @scaled(
// CHECK-SAME: %[[X:[^:]*]]: tensor<?x8xf32>, %[[L:[^:]*]]: tensor<?x2xf32>, %[[S:[^:]*]]: tensor<2xf32>)
// CHECK: tfm.route %[[L]] expert_scales %[[S]] {normalize, top_k = 1 : i64} : tensor<?x2xf32> expert_scales tensor<2xf32> -> tensor<?x1xf32>, tensor<?x1xi32>
// LINALG-LABEL: func.func @scaled(
// LINALG-SAME: %{{[^:]*}}: tensor<?x8xf32>, %{{[^:]*}}: tensor<?x2xf32>, %[[S:[^:]*]]: tensor<2xf32>)
// LINALG: arith.divf
// LINALG: %[[ID:.*]] = arith.index_cast %{{.*}} : i32 to index
// LINALG: tensor.extract %[[S]][%[[ID]]]
// LINALG: arith.mulf
tfm.weight_decl @sg : tensor<16x8xf32>
tfm.weight_decl @sd : tensor<8x16xf32>
func.func @scaled(%x: tensor<?x8xf32>, %logits: tensor<?x2xf32>, %scales: tensor<2xf32>) -> tensor<?x8xf32> {
  %g = tfm.weight @sg : tensor<16x8xf32>
  %d = tfm.weight @sd : tensor<8x16xf32>
  %y = tfm.moe %x, %logits, [%g, %g, %d, %g, %g, %d] expert_scales %scales {activation = #tfm<activation_kind gelu_tanh>, normalize, top_k = 1 : i64} : (tensor<?x8xf32>, tensor<?x2xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<2xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}
