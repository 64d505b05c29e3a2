// RUN: tfm-opt %s -tfm-fill-per-use | FileCheck %s

// Two products accumulating into one CSE'd fill: the second gets a fill
// (and an empty tensor) of its own, made right before it.
// CHECK-LABEL: func.func @two_products
// CHECK: %[[E0:.*]] = tensor.empty() : tensor<1x8xf32>
// CHECK: %[[Z0:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E0]] : tensor<1x8xf32>)
// CHECK: linalg.matmul {{.*}} outs(%[[Z0]] : tensor<1x8xf32>)
// CHECK: %[[E1:.*]] = tensor.empty() : tensor<1x8xf32>
// CHECK: %[[Z1:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E1]] : tensor<1x8xf32>)
// CHECK: linalg.matmul {{.*}} outs(%[[Z1]] : tensor<1x8xf32>)
func.func @two_products(%x: tensor<1x4xf32>, %a: tensor<8x4xf32>, %b: tensor<8x4xf32>) -> (tensor<1x8xf32>, tensor<1x8xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x8xf32>) -> tensor<1x8xf32>
  %p = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %a : tensor<1x4xf32>, tensor<8x4xf32>) outs(%z : tensor<1x8xf32>) -> tensor<1x8xf32>
  %q = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%x, %b : tensor<1x4xf32>, tensor<8x4xf32>) outs(%z : tensor<1x8xf32>) -> tensor<1x8xf32>
  return %p, %q : tensor<1x8xf32>, tensor<1x8xf32>
}
