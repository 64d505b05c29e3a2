// The folds and canonicalization patterns of the tfm ops (ir/TfmFolds.cpp).
// RUN: tfm-opt %s -split-input-file -canonicalize | FileCheck %s

// relu is idempotent.
// CHECK-LABEL: func.func @relu_of_relu
// CHECK-SAME: (%[[X:.*]]: tensor<?x4xf32>)
// CHECK: %[[R:.*]] = tfm.activation relu %[[X]]
// CHECK-NOT: tfm.activation
// CHECK: return %[[R]]
func.func @relu_of_relu(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = tfm.activation relu %x : tensor<?x4xf32>
  %1 = tfm.activation relu %0 : tensor<?x4xf32>
  return %1 : tensor<?x4xf32>
}

// -----

// Only relu folds this way: gelu(gelu(x)) stays.
// CHECK-LABEL: func.func @gelu_of_gelu
// CHECK: tfm.activation gelu
// CHECK: tfm.activation gelu
func.func @gelu_of_gelu(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = tfm.activation gelu %x : tensor<?x4xf32>
  %1 = tfm.activation gelu %0 : tensor<?x4xf32>
  return %1 : tensor<?x4xf32>
}

// -----

// A window covering every key (static length 8) is no window at all.
// CHECK-LABEL: func.func @window_covers_all_keys
// CHECK: tfm.attention
// CHECK-SAME: {causal, scale = 1.000000e+00 : f32}
func.func @window_covers_all_keys(%q: tensor<8x2x4xf32>, %k: tensor<8x2x4xf32>) -> tensor<8x2x4xf32> {
  %0 = tfm.attention %q, %k, %k {causal, scale = 1.0 : f32, window = 8 : i64} : (tensor<8x2x4xf32>, tensor<8x2x4xf32>, tensor<8x2x4xf32>) -> tensor<8x2x4xf32>
  return %0 : tensor<8x2x4xf32>
}

// -----

// A shorter window, or one over a dynamic key length, stays.
// CHECK-LABEL: func.func @window_kept
// CHECK: window = 7 : i64
// CHECK: window = 64 : i64
func.func @window_kept(%q: tensor<8x2x4xf32>, %k: tensor<8x2x4xf32>, %kd: tensor<?x2x4xf32>) -> (tensor<8x2x4xf32>, tensor<8x2x4xf32>) {
  %0 = tfm.attention %q, %k, %k {causal, scale = 1.0 : f32, window = 7 : i64} : (tensor<8x2x4xf32>, tensor<8x2x4xf32>, tensor<8x2x4xf32>) -> tensor<8x2x4xf32>
  %1 = tfm.attention %q, %kd, %kd {causal, scale = 1.0 : f32, window = 64 : i64} : (tensor<8x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<8x2x4xf32>
  return %0, %1 : tensor<8x2x4xf32>, tensor<8x2x4xf32>
}
