// RUN: tfm-opt %s -split-input-file -tfm-widen-in-matmuls | FileCheck %s

#id = affine_map<(d0, d1) -> (d0, d1)>
#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>

// A bf16 weight widened whole for a product: the product reads the bf16
// tensor itself (its body widens each element), and the widening goes.
// CHECK-LABEL: func.func @bf16_weight
// CHECK-SAME: (%[[X:.*]]: tensor<?x64xf32>, %[[W:.*]]: tensor<96x64xbf16>)
// CHECK-NOT: linalg.generic
// CHECK: linalg.matmul indexing_maps = [#{{.*}}, #{{.*}}, #{{.*}}] ins(%[[X]], %[[W]] : tensor<?x64xf32>, tensor<96x64xbf16>)
// CHECK-NOT: linalg.generic
func.func @bf16_weight(%x: tensor<?x64xf32>, %w: tensor<96x64xbf16>) -> tensor<?x96xf32> {
  %c0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<96x64xf32>
  %wide = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<96x64xbf16>) outs(%e : tensor<96x64xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %v = arith.extf %in : bf16 to f32
    linalg.yield %v : f32
  } -> tensor<96x64xf32>
  %rows = tensor.dim %x, %c0 : tensor<?x64xf32>
  %o = tensor.empty(%rows) : tensor<?x96xf32>
  %z = linalg.fill ins(%zero : f32) outs(%o : tensor<?x96xf32>) -> tensor<?x96xf32>
  %y = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%x, %wide : tensor<?x64xf32>, tensor<96x64xf32>) outs(%z : tensor<?x96xf32>) -> tensor<?x96xf32>
  return %y : tensor<?x96xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>

// An f16 widening that something else reads too stays for that reader.
// CHECK-LABEL: func.func @shared_widening
// CHECK-SAME: (%[[X:.*]]: tensor<1x64xf32>, %[[W:.*]]: tensor<96x64xf16>, %{{.*}}: tensor<1x96xf32>)
// CHECK: %[[WIDE:.*]] = linalg.generic
// CHECK: arith.extf
// CHECK: linalg.matmul {{.*}} ins(%[[X]], %[[W]] : tensor<1x64xf32>, tensor<96x64xf16>)
// CHECK: return {{.*}}, %[[WIDE]]
func.func @shared_widening(%x: tensor<1x64xf32>, %w: tensor<96x64xf16>, %y0: tensor<1x96xf32>) -> (tensor<1x96xf32>, tensor<96x64xf32>) {
  %e = tensor.empty() : tensor<96x64xf32>
  %wide = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<96x64xf16>) outs(%e : tensor<96x64xf32>) {
  ^bb0(%in: f16, %out: f32):
    %v = arith.extf %in : f16 to f32
    linalg.yield %v : f32
  } -> tensor<96x64xf32>
  %y = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%x, %wide : tensor<1x64xf32>, tensor<96x64xf32>) outs(%y0 : tensor<1x96xf32>) -> tensor<1x96xf32>
  return %y, %wide : tensor<1x96xf32>, tensor<96x64xf32>
}

// -----

#id = affine_map<(d0, d1) -> (d0, d1)>
#t = affine_map<(d0, d1) -> (d1, d0)>
#mk = affine_map<(m, n, k) -> (m, k)>
#nk = affine_map<(m, n, k) -> (n, k)>
#mn = affine_map<(m, n, k) -> (m, n)>

// What is more than an elementwise widening is left alone: a widening
// that also scales, and one that transposes.
// CHECK-LABEL: func.func @not_a_widening
// CHECK-COUNT-2: linalg.generic
// CHECK-COUNT-2: linalg.matmul {{.*}} tensor<96x64xf32>)
func.func @not_a_widening(%x: tensor<1x64xf32>, %w: tensor<96x64xbf16>, %t: tensor<64x96xbf16>, %y0: tensor<1x96xf32>) -> (tensor<1x96xf32>, tensor<1x96xf32>) {
  %two = arith.constant 2.0 : f32
  %e = tensor.empty() : tensor<96x64xf32>
  %scaled = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%w : tensor<96x64xbf16>) outs(%e : tensor<96x64xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %v = arith.extf %in : bf16 to f32
    %s = arith.mulf %v, %two : f32
    linalg.yield %s : f32
  } -> tensor<96x64xf32>
  %transposed = linalg.generic {indexing_maps = [#t, #id], iterator_types = ["parallel", "parallel"]}
      ins(%t : tensor<64x96xbf16>) outs(%e : tensor<96x64xf32>) {
  ^bb0(%in: bf16, %out: f32):
    %v = arith.extf %in : bf16 to f32
    linalg.yield %v : f32
  } -> tensor<96x64xf32>
  %y = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%x, %scaled : tensor<1x64xf32>, tensor<96x64xf32>) outs(%y0 : tensor<1x96xf32>) -> tensor<1x96xf32>
  %z = linalg.matmul indexing_maps = [#mk, #nk, #mn]
      ins(%x, %transposed : tensor<1x64xf32>, tensor<96x64xf32>) outs(%y0 : tensor<1x96xf32>) -> tensor<1x96xf32>
  return %y, %z : tensor<1x96xf32>, tensor<1x96xf32>
}
