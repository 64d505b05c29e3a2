// tfm-call-attention-kernel, for a target without the CPU runtime's
// kernels: plain attention becomes the call tfm_rt_attention (which CUDA's
// tfm-lower-attention-to-gpu makes a kernel of); packed sequences, keys and
// values read as a narrow cache stores them, and a [heads, s, t] bias keep
// the reference lowering. Nothing else is taken: no GEMM call.
// RUN: tfm-opt %s -split-input-file -tfm-call-attention-kernel | FileCheck %s

// CHECK-LABEL: func.func private @tfm_rt_attention
// CHECK-LABEL: func.func @plain
// CHECK: call @tfm_rt_attention(
// CHECK-NOT: tfm.attention
// CHECK: tfm.linear
func.func @plain(%q: tensor<?x8x4xf32>, %k: tensor<?x2x4xf32>, %v: tensor<?x2x4xf32>, %w: tensor<4x32xf32>) -> tensor<?x8x4xf32> {
  %0 = tfm.attention %q, %k, %v {causal, scale = 0.5 : f32, window = 3 : i64} : (tensor<?x8x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x8x4xf32>
  %x = tensor.collapse_shape %0 [[0], [1, 2]] : tensor<?x8x4xf32> into tensor<?x32xf32>
  %y = tfm.linear %x, %w : (tensor<?x32xf32>, tensor<4x32xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x8x4xf32>
}

// -----

// CHECK-LABEL: func.func @packed
// CHECK-NOT: call
// CHECK: tfm.attention
func.func @packed(%q: tensor<?x2x4xf32>, %lengths: tensor<?xi32>) -> tensor<?x2x4xf32> {
  %0 = tfm.attention %q, %q, %q lengths %lengths {scale = 0.5 : f32} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?xi32>) -> tensor<?x2x4xf32>
  return %0 : tensor<?x2x4xf32>
}

// -----

// CHECK-LABEL: func.func @int8_rows
// CHECK-NOT: call
// CHECK: tfm.attention
func.func @int8_rows(%q: tensor<?x8x4xf32>, %k: tensor<?x2x8xi8>, %v: tensor<?x2x8xi8>) -> tensor<?x8x4xf32> {
  %kf = tfm.dequantize_rows %k : tensor<?x2x8xi8> -> tensor<?x2x4xf32>
  %vf = tfm.dequantize_rows %v : tensor<?x2x8xi8> -> tensor<?x2x4xf32>
  %0 = tfm.attention %q, %kf, %vf {causal, scale = 0.5 : f32} : (tensor<?x8x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x8x4xf32>
  return %0 : tensor<?x8x4xf32>
}

// -----

// CHECK-LABEL: func.func @bias
// CHECK-NOT: call
// CHECK: tfm.attention
func.func @bias(%q: tensor<3x2x4xf32>, %k: tensor<5x2x4xf32>, %b: tensor<2x3x5xf32>) -> tensor<3x2x4xf32> {
  %0 = tfm.attention %q, %k, %k bias %b {scale = 0.5 : f32} : (tensor<3x2x4xf32>, tensor<5x2x4xf32>, tensor<5x2x4xf32>, tensor<2x3x5xf32>) -> tensor<3x2x4xf32>
  return %0 : tensor<3x2x4xf32>
}
