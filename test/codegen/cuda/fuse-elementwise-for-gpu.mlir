// RUN: tfm-opt %s -split-input-file -tfm-fuse-elementwise-for-gpu | FileCheck %s

// A decode step's RoPE: the inverse frequencies, the position as a tensor
// and its cosines and sines are each read by two rotations (q and k). They
// have no tensor inputs as large as their results, so both rotations
// recompute them per element: two kernels instead of six.
// CHECK-LABEL: func.func @rope
// CHECK-COUNT-2: linalg.generic
// CHECK-NOT: linalg.generic
// CHECK: math.powf
// CHECK: math.cos
// CHECK: math.sin
#id1 = affine_map<(d0) -> (d0)>
#pos = affine_map<(d0, d1) -> (d0)>
#freq = affine_map<(d0, d1) -> (d1)>
#id2 = affine_map<(d0, d1) -> (d0, d1)>
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#half = affine_map<(d0, d1, d2) -> (d0, d2 floordiv 2)>
func.func @rope(%position: index, %q: tensor<1x8x8xf32>, %k: tensor<1x4x8xf32>)
    -> (tensor<1x8x8xf32>, tensor<1x4x8xf32>) {
  %base = arith.constant 1.0e+04 : f32
  %e0 = tensor.empty() : tensor<1xi32>
  %pos = linalg.generic {indexing_maps = [#id1], iterator_types = ["parallel"]}
      outs(%e0 : tensor<1xi32>) {
  ^bb0(%out: i32):
    %p = arith.index_cast %position : index to i32
    linalg.yield %p : i32
  } -> tensor<1xi32>
  %e1 = tensor.empty() : tensor<4xf32>
  %inv = linalg.generic {indexing_maps = [#id1], iterator_types = ["parallel"]}
      outs(%e1 : tensor<4xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %ii = arith.index_cast %i : index to i64
    %f = arith.sitofp %ii : i64 to f32
    %p = math.powf %base, %f : f32
    linalg.yield %p : f32
  } -> tensor<4xf32>
  %e2 = tensor.empty() : tensor<1x4xf32>
  %cos = linalg.generic {indexing_maps = [#pos, #freq, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%pos, %inv : tensor<1xi32>, tensor<4xf32>) outs(%e2 : tensor<1x4xf32>) {
  ^bb0(%a: i32, %b: f32, %out: f32):
    %x = arith.sitofp %a : i32 to f32
    %y = arith.mulf %x, %b : f32
    %c = math.cos %y : f32
    linalg.yield %c : f32
  } -> tensor<1x4xf32>
  %sin = linalg.generic {indexing_maps = [#pos, #freq, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%pos, %inv : tensor<1xi32>, tensor<4xf32>) outs(%e2 : tensor<1x4xf32>) {
  ^bb0(%a: i32, %b: f32, %out: f32):
    %x = arith.sitofp %a : i32 to f32
    %y = arith.mulf %x, %b : f32
    %s = math.sin %y : f32
    linalg.yield %s : f32
  } -> tensor<1x4xf32>
  %eq = tensor.empty() : tensor<1x8x8xf32>
  %rq = linalg.generic {indexing_maps = [#id3, #half, #half, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%q, %cos, %sin : tensor<1x8x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>) outs(%eq : tensor<1x8x8xf32>) {
  ^bb0(%x: f32, %c: f32, %s: f32, %out: f32):
    %a = arith.mulf %x, %c : f32
    %b = arith.mulf %x, %s : f32
    %r = arith.addf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x8x8xf32>
  %ek = tensor.empty() : tensor<1x4x8xf32>
  %rk = linalg.generic {indexing_maps = [#id3, #half, #half, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%k, %cos, %sin : tensor<1x4x8xf32>, tensor<1x4xf32>, tensor<1x4xf32>) outs(%ek : tensor<1x4x8xf32>) {
  ^bb0(%x: f32, %c: f32, %s: f32, %out: f32):
    %a = arith.mulf %x, %c : f32
    %b = arith.mulf %x, %s : f32
    %r = arith.subf %a, %b : f32
    linalg.yield %r : f32
  } -> tensor<1x4x8xf32>
  return %rq, %rk : tensor<1x8x8xf32>, tensor<1x4x8xf32>
}

// -----

// A residual sum read by three consumers is as large as each input: it
// stays one kernel (recomputing it everywhere would chain every layer's
// sums); a single-use scaling fuses into its consumer; an embedding gather
// (tensor.extract) stays apart.
// CHECK-LABEL: func.func @residual
// CHECK: %[[SUM:.*]] = linalg.generic
// CHECK: arith.addf
// CHECK: %[[GATHER:.*]] = linalg.generic
// CHECK: tensor.extract
// CHECK: linalg.generic {{.*}} ins(%[[SUM]], %[[GATHER]]
// CHECK: arith.mulf
// CHECK: arith.subf
// CHECK-NOT: linalg.generic
#m = affine_map<(d0) -> (d0)>
func.func @residual(%a: tensor<64xf32>, %b: tensor<64xf32>, %table: tensor<16x64xf32>, %id: index)
    -> (tensor<64xf32>, tensor<64xf32>) {
  %e = tensor.empty() : tensor<64xf32>
  %sum = linalg.generic {indexing_maps = [#m, #m, #m], iterator_types = ["parallel"]}
      ins(%a, %b : tensor<64xf32>, tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%x: f32, %y: f32, %out: f32):
    %s = arith.addf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %gather = linalg.generic {indexing_maps = [#m], iterator_types = ["parallel"]}
      outs(%e : tensor<64xf32>) {
  ^bb0(%out: f32):
    %i = linalg.index 0 : index
    %v = tensor.extract %table[%id, %i] : tensor<16x64xf32>
    linalg.yield %v : f32
  } -> tensor<64xf32>
  %scaled = linalg.generic {indexing_maps = [#m, #m], iterator_types = ["parallel"]}
      ins(%sum : tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%x: f32, %out: f32):
    %s = arith.mulf %x, %x : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  %out = linalg.generic {indexing_maps = [#m, #m, #m], iterator_types = ["parallel"]}
      ins(%scaled, %gather : tensor<64xf32>, tensor<64xf32>) outs(%e : tensor<64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.subf %x, %y : f32
    linalg.yield %s : f32
  } -> tensor<64xf32>
  return %sum, %out : tensor<64xf32>, tensor<64xf32>
}
