// RUN: tfm-opt %s -tfm-expand-experts=share-functions | FileCheck %s
// RUN: tfm-opt %s -tfm-expand-experts | FileCheck %s --check-prefix=INLINE

// The same mixture (the same expert weights and attributes) in two entry
// points, one of them with one row (as @decode has): its routed experts are
// expanded once, in a private function both call with their rows (cast to
// any number) and their routing; each keeps its routing and its shared
// expert. A mixture of other weights is expanded where it is.
// CHECK-LABEL: func.func @prefill(
// CHECK-SAME: %[[X:[^:]*]]: tensor<?x8xf32>, %[[L:[^:]*]]: tensor<?x2xf32>)
// CHECK: %[[W:.*]], %[[E:.*]] = tfm.route %[[L]]
// CHECK: %[[SUM:.*]] = call @[[$EXPERTS:routed_experts]](%[[X]], %[[E]], %[[W]]) : (tensor<?x8xf32>, tensor<?x1xi32>, tensor<?x1xf32>) -> tensor<?x8xf32>
// CHECK: tfm.linear %[[X]]
// CHECK: tfm.add %[[SUM]]
// CHECK-LABEL: func.func @decode(
// CHECK-SAME: %[[X1:[^:]*]]: tensor<1x8xf32>, %[[L1:[^:]*]]: tensor<1x2xf32>)
// CHECK: %[[W1:.*]], %[[E1:.*]] = tfm.route %[[L1]]
// CHECK: %[[ROWS:.*]] = tensor.cast %[[X1]] : tensor<1x8xf32> to tensor<?x8xf32>
// CHECK: %[[SUM1:.*]] = call @[[$EXPERTS]](%[[ROWS]], %[[E1]], %[[W1]])
// CHECK: tensor.cast %[[SUM1]] : tensor<?x8xf32> to tensor<1x8xf32>
// CHECK-LABEL: func.func @other(
// CHECK-NOT: call
// CHECK: tfm.expert_rows
// CHECK: func.func private @[[$EXPERTS]](%[[R:[^:]*]]: tensor<?x8xf32>, %[[RE:[^:]*]]: tensor<?x1xi32>, %[[RW:[^:]*]]: tensor<?x1xf32>) -> tensor<?x8xf32>
// CHECK: tfm.weight @g0
// CHECK: tfm.expert_rows %[[RE]], %[[RW]] {expert = 0 : i64}
// CHECK: tfm.take_rows %[[R]]
// CHECK: } {tfm.expert_share = 5.000000e-01 : f64}
// CHECK: tfm.expert_rows %[[RE]], %[[RW]] {expert = 1 : i64}
// CHECK-NOT: func.func
// Without the option every mixture is expanded in place.
// INLINE-NOT: call
// INLINE-NOT: func.func private
tfm.weight_decl @g0 : tensor<16x8xf32>
tfm.weight_decl @u0 : tensor<16x8xf32>
tfm.weight_decl @d0 : tensor<8x16xf32>
tfm.weight_decl @g1 : tensor<16x8xf32>
tfm.weight_decl @u1 : tensor<16x8xf32>
tfm.weight_decl @d1 : tensor<8x16xf32>
tfm.weight_decl @sg : tensor<16x8xf32>
tfm.weight_decl @su : tensor<16x8xf32>
tfm.weight_decl @sd : tensor<8x16xf32>
func.func @prefill(%x: tensor<?x8xf32>, %logits: tensor<?x2xf32>) -> tensor<?x8xf32> {
  %g0 = tfm.weight @g0 : tensor<16x8xf32>
  %u0 = tfm.weight @u0 : tensor<16x8xf32>
  %d0 = tfm.weight @d0 : tensor<8x16xf32>
  %g1 = tfm.weight @g1 : tensor<16x8xf32>
  %u1 = tfm.weight @u1 : tensor<16x8xf32>
  %d1 = tfm.weight @d1 : tensor<8x16xf32>
  %sg = tfm.weight @sg : tensor<16x8xf32>
  %su = tfm.weight @su : tensor<16x8xf32>
  %sd = tfm.weight @sd : tensor<8x16xf32>
  %y = tfm.moe %x, %logits, [%g0, %u0, %d0, %g1, %u1, %d1] shared [%sg, %su, %sd] {activation = #tfm<activation_kind silu>, normalize, top_k = 1 : i64} : (tensor<?x8xf32>, tensor<?x2xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}
func.func @decode(%x: tensor<1x8xf32>, %logits: tensor<1x2xf32>) -> tensor<1x8xf32> {
  %g0 = tfm.weight @g0 : tensor<16x8xf32>
  %u0 = tfm.weight @u0 : tensor<16x8xf32>
  %d0 = tfm.weight @d0 : tensor<8x16xf32>
  %g1 = tfm.weight @g1 : tensor<16x8xf32>
  %u1 = tfm.weight @u1 : tensor<16x8xf32>
  %d1 = tfm.weight @d1 : tensor<8x16xf32>
  %sg = tfm.weight @sg : tensor<16x8xf32>
  %su = tfm.weight @su : tensor<16x8xf32>
  %sd = tfm.weight @sd : tensor<8x16xf32>
  %y = tfm.moe %x, %logits, [%g0, %u0, %d0, %g1, %u1, %d1] shared [%sg, %su, %sd] {activation = #tfm<activation_kind silu>, normalize, top_k = 1 : i64} : (tensor<1x8xf32>, tensor<1x2xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<1x8xf32>
  return %y : tensor<1x8xf32>
}
// The experts in another order: another function.
func.func @other(%x: tensor<?x8xf32>, %logits: tensor<?x2xf32>) -> tensor<?x8xf32> {
  %g0 = tfm.weight @g0 : tensor<16x8xf32>
  %u0 = tfm.weight @u0 : tensor<16x8xf32>
  %d0 = tfm.weight @d0 : tensor<8x16xf32>
  %g1 = tfm.weight @g1 : tensor<16x8xf32>
  %u1 = tfm.weight @u1 : tensor<16x8xf32>
  %d1 = tfm.weight @d1 : tensor<8x16xf32>
  %y = tfm.moe %x, %logits, [%g1, %u1, %d1, %g0, %u0, %d0] {activation = #tfm<activation_kind silu>, normalize, top_k = 1 : i64} : (tensor<?x8xf32>, tensor<?x2xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}
