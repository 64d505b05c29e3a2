// tfm-fuse-mlp: activations become projection epilogues; a gated MLP
// becomes one gated projection over [W_gate; W_up].
// RUN: tfm-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(tfm-fuse-mlp))' | FileCheck %s

// GPT-2's MLP: bias and GELU in the epilogue of the first projection.
// CHECK-LABEL: func.func @bias_gelu
// CHECK: %[[H:.*]] = tfm.linear %arg0, %{{.*}} bias %{{.*}} activation gelu_tanh : (tensor<?x8xf32>, tensor<32x8xf32>, tensor<32xf32>) -> tensor<?x32xf32>
// CHECK-NOT: tfm.activation
// CHECK: tfm.linear %[[H]]
tfm.weight_decl @fc : tensor<32x8xf32>
tfm.weight_decl @fc.bias : tensor<32xf32>
tfm.weight_decl @proj : tensor<8x32xf32>
func.func @bias_gelu(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %w1 = tfm.weight @fc : tensor<32x8xf32>
  %b1 = tfm.weight @fc.bias : tensor<32xf32>
  %h = tfm.linear %x, %w1 bias %b1 : (tensor<?x8xf32>, tensor<32x8xf32>, tensor<32xf32>) -> tensor<?x32xf32>
  %a = tfm.activation gelu_tanh %h : tensor<?x32xf32>
  %w2 = tfm.weight @proj : tensor<8x32xf32>
  %y = tfm.linear %a, %w2 : (tensor<?x32xf32>, tensor<8x32xf32>) -> tensor<?x8xf32>
  return %y : tensor<?x8xf32>
}

// -----

// LLaMA's SwiGLU, the product in either order.
// CHECK-LABEL: func.func @swiglu
// CHECK-DAG: %[[WG:.*]] = tfm.weight @gate
// CHECK-DAG: %[[WU:.*]] = tfm.weight @up
// CHECK: %[[W:.*]] = tfm.concat %[[WG]], %[[WU]] : (tensor<12x8xf32>, tensor<12x8xf32>) -> tensor<24x8xf32>
// CHECK: %[[G:.*]] = tfm.linear %arg0, %[[W]] activation silu gated : (tensor<?x8xf32>, tensor<24x8xf32>) -> tensor<?x12xf32>
// CHECK-NOT: tfm.mul
// CHECK: return %[[G]]
tfm.weight_decl @up : tensor<12x8xf32>
tfm.weight_decl @gate : tensor<12x8xf32>
func.func @swiglu(%x: tensor<?x8xf32>) -> tensor<?x12xf32> {
  %wu = tfm.weight @up : tensor<12x8xf32>
  %u = tfm.linear %x, %wu : (tensor<?x8xf32>, tensor<12x8xf32>) -> tensor<?x12xf32>
  %wg = tfm.weight @gate : tensor<12x8xf32>
  %g = tfm.linear %x, %wg : (tensor<?x8xf32>, tensor<12x8xf32>) -> tensor<?x12xf32>
  %s = tfm.activation silu %g : tensor<?x12xf32>
  %m = tfm.mul %u, %s : tensor<?x12xf32>
  return %m : tensor<?x12xf32>
}

// -----

// No match: an activation of a projection used twice, a product of
// projections of different inputs (the gate still takes its epilogue), an
// activation of something else.
// CHECK-LABEL: func.func @no_match
// CHECK-NOT: gated
// CHECK: tfm.activation relu
// CHECK: tfm.linear %arg0, %{{.*}} activation silu :
// CHECK: tfm.mul
// CHECK: tfm.activation gelu
tfm.weight_decl @w : tensor<8x8xf32>
func.func @no_match(%x: tensor<4x8xf32>, %y: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %w = tfm.weight @w : tensor<8x8xf32>
  %h = tfm.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %r = tfm.activation relu %h : tensor<4x8xf32>
  %sum = tfm.add %r, %h : tensor<4x8xf32>
  %g = tfm.linear %x, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %s = tfm.activation silu %g : tensor<4x8xf32>
  %u = tfm.linear %y, %w : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %m = tfm.mul %s, %u : tensor<4x8xf32>
  %e = tfm.activation gelu %x : tensor<4x8xf32>
  return %sum, %m, %e : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
