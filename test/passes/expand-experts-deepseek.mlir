// RUN: tfm-opt %s -tfm-expand-experts | FileCheck %s
// RUN: tfm-opt %s -tfm-expand-experts -tfm-lay-out-weights -tfm-select-cpu-kernels -tfm-lower-to-linalg | FileCheck %s --check-prefix=LINALG

// DeepSeek-V3's router: the choice (sigmoid scores, a selection bias, 2
// groups of which the best is kept, a routed scale) goes to tfm.route as
// it is; the shared expert has no gate vector, so its output is added to
// the routed experts' as it is.
// CHECK-LABEL: func.func @deepseek(
// CHECK: %[[W:.*]], %[[E:.*]] = tfm.route %{{.*}} selection_bias %{{.*}} {groups = 2 : i64, normalize, routed_scale = 2.500000e+00 : f32, scoring = #tfm<router_scoring sigmoid>, top_groups = 1 : i64, top_k = 2 : i64} : tensor<?x4xf32>, tensor<4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
// CHECK: tfm.expert_rows %[[E]], %[[W]] {expert = 3 : i64}
// CHECK: %[[ROUTED:.*]] = scf.if
// CHECK: } {tfm.expert_share
// CHECK: %[[SHARED:.*]] = tfm.linear %{{.*}}, %{{.*}} : (tensor<?x16xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
// CHECK-NOT: tfm.scatter_add_rows
// CHECK: %[[SUM:.*]] = tfm.add %[[ROUTED]], %[[SHARED]] : tensor<?x8xf32>
// CHECK: return %[[SUM]]
// Each token's scores, choice values and groups' scores in one scratch
// row [2 * 4 + 2] that the loop over tokens carries.
// LINALG-LABEL: func.func @deepseek(
// LINALG-NOT: tfm.
// LINALG: tensor.empty() : tensor<10xf32>
// LINALG: scf.for
// LINALG: math.exp
// LINALG: arith.minimumf
// LINALG: arith.select
// LINALG: return
tfm.weight_decl @g : tensor<16x8xf32>
tfm.weight_decl @u : tensor<16x8xf32>
tfm.weight_decl @d : tensor<8x16xf32>
tfm.weight_decl @bias : tensor<4xf32>
func.func @deepseek(%x: tensor<?x8xf32>, %logits: tensor<?x4xf32>) -> tensor<?x8xf32> {
  %g = tfm.weight @g : tensor<16x8xf32>
  %u = tfm.weight @u : tensor<16x8xf32>
  %d = tfm.weight @d : tensor<8x16xf32>
  %bias = tfm.weight @bias : tensor<4xf32>
  %y = tfm.moe %x, %logits, [%g, %u, %d, %g, %u, %d, %g, %u, %d, %g, %u, %d] shared [%g, %u, %d] selection_bias %bias {activation = #tfm<activation_kind silu>, groups = 2 : i64, normalize, routed_scale = 2.5 : f32, scoring = #tfm<router_scoring sigmoid>, top_groups = 1 : i64, top_k = 2 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<4xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}
