// tfm-fuse-norm: a residual add followed by a norm becomes one op that
// returns the sum (for later residual adds) and the normalized rows.
// RUN: tfm-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(tfm-fuse-norm))' | FileCheck %s

// CHECK-LABEL: func.func @rms
// CHECK: %[[G:.*]] = tfm.weight @g
// CHECK: %[[SUM:.*]], %[[NORMED:.*]] = tfm.add_rms_norm %arg0, %arg1, %[[G]] {epsilon = 9.99999974E-6 : f32} : tensor<?x8xf32>, tensor<8xf32>
// CHECK-NOT: tfm.rms_norm
// CHECK: %[[NEXT:.*]] = tfm.add %[[SUM]], %[[NORMED]]
tfm.weight_decl @g : tensor<8xf32>
func.func @rms(%x: tensor<?x8xf32>, %attn: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %r = tfm.add %x, %attn : tensor<?x8xf32>
  %g = tfm.weight @g : tensor<8xf32>
  %h = tfm.rms_norm %r, %g {epsilon = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %next = tfm.add %r, %h : tensor<?x8xf32>
  return %next : tensor<?x8xf32>
}

// -----

// LayerNorm with its shift (GPT-2).
// CHECK-LABEL: func.func @layer
// CHECK: %{{.*}}, %[[NORMED:.*]] = tfm.add_layer_norm %arg0, %arg1, %{{.*}}, %{{.*}} {epsilon = 9.99999974E-6 : f32} : tensor<3x8xf32>, tensor<8xf32>, tensor<8xf32>
// CHECK-NOT: tfm.layer_norm
// CHECK: return %[[NORMED]]
tfm.weight_decl @g : tensor<8xf32>
tfm.weight_decl @b : tensor<8xf32>
func.func @layer(%x: tensor<3x8xf32>, %attn: tensor<3x8xf32>) -> tensor<3x8xf32> {
  %r = tfm.add %x, %attn : tensor<3x8xf32>
  %g = tfm.weight @g : tensor<8xf32>
  %b = tfm.weight @b : tensor<8xf32>
  %h = tfm.layer_norm %r, %g, %b {epsilon = 1.0e-5 : f32} : (tensor<3x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  return %h : tensor<3x8xf32>
}

// -----

// No match: a norm of something else than an add, and a norm whose scale is
// computed after the add (it cannot move up).
// CHECK-LABEL: func.func @no_match
// CHECK-NOT: add_rms_norm
// CHECK: tfm.rms_norm %arg0
// CHECK: tfm.add
// CHECK: tfm.rms_norm
func.func @no_match(%x: tensor<3x8xf32>, %g: tensor<8xf32>) -> (tensor<3x8xf32>, tensor<3x8xf32>) {
  %h = tfm.rms_norm %x, %g {epsilon = 1.0e-5 : f32} : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  %r = tfm.add %x, %h : tensor<3x8xf32>
  %late = tfm.add %g, %g : tensor<8xf32>
  %n = tfm.rms_norm %r, %late {epsilon = 1.0e-5 : f32} : (tensor<3x8xf32>, tensor<8xf32>) -> tensor<3x8xf32>
  return %h, %n : tensor<3x8xf32>, tensor<3x8xf32>
}
