// tfm-lora-slots: each projection of a numbered layer whose module is a
// target is followed by a tfm.lora of its input and output, which its
// users read; the module lists the targets (sorted by weight name) with
// their features. The LM head (no layer number) is never a target.
// RUN: tfm-opt %s -pass-pipeline='builtin.module(tfm-lora-slots{slots=3 rank=4})' | FileCheck %s
// RUN: tfm-opt %s -pass-pipeline='builtin.module(tfm-lora-slots{slots=2 rank=8 targets=v_proj})' | FileCheck %s --check-prefix=VONLY

// CHECK: module attributes {tfm.lora = {features = array<i64: 32, 16, 32, 32, 32, 16>, rank = 4 : i64, slots = 3 : i64, targets = ["model.layers.0.self_attn.k_proj.weight", "model.layers.0.self_attn.q_proj.weight", "model.layers.0.self_attn.v_proj.weight"]}}
// CHECK-LABEL: func.func @layer
// CHECK: %[[Q:.*]] = tfm.linear %arg0, %{{.*}} : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x4x8xf32>
// CHECK: %[[Q1:.*]] = tfm.lora %arg0, %[[Q]] {target = 1 : i64} : tensor<?x32xf32>, tensor<?x4x8xf32> -> tensor<?x4x8xf32>
// CHECK: %[[K:.*]] = tfm.linear %arg0, %{{.*}} : (tensor<?x32xf32>, tensor<16x32xf32>) -> tensor<?x2x8xf32>
// CHECK: %[[K1:.*]] = tfm.lora %arg0, %[[K]] {target = 0 : i64}
// CHECK: %[[V:.*]] = tfm.linear %arg0, %{{.*}} : (tensor<?x32xf32>, tensor<16x32xf32>) -> tensor<?x2x8xf32>
// CHECK: %[[V1:.*]] = tfm.lora %arg0, %[[V]] {target = 2 : i64}
// CHECK: %[[A:.*]] = tfm.attention %[[Q1]], %[[K1]], %[[V1]]
// CHECK: %[[H:.*]] = tfm.linear %[[A]], %{{.*}} : (tensor<?x4x8xf32>, tensor<64x32xf32>) -> tensor<?x64xf32>
// CHECK-NOT: tfm.lora
// CHECK: return %[[H]]
// VONLY: module attributes {tfm.lora = {features = array<i64: 32, 16>, rank = 8 : i64, slots = 2 : i64, targets = ["model.layers.0.self_attn.v_proj.weight"]}}
// VONLY-COUNT-1: tfm.lora %arg0
// VONLY-NOT: tfm.lora
tfm.weight_decl @"model.layers.0.self_attn.q_proj.weight" : tensor<32x32xf32>
tfm.weight_decl @"model.layers.0.self_attn.k_proj.weight" : tensor<16x32xf32>
tfm.weight_decl @"model.layers.0.self_attn.v_proj.weight" : tensor<16x32xf32>
tfm.weight_decl @"lm_head.weight" : tensor<64x32xf32>
func.func @layer(%x: tensor<?x32xf32>) -> tensor<?x64xf32> {
  %wq = tfm.weight @"model.layers.0.self_attn.q_proj.weight" : tensor<32x32xf32>
  %q = tfm.linear %x, %wq : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x4x8xf32>
  %wk = tfm.weight @"model.layers.0.self_attn.k_proj.weight" : tensor<16x32xf32>
  %k = tfm.linear %x, %wk : (tensor<?x32xf32>, tensor<16x32xf32>) -> tensor<?x2x8xf32>
  %wv = tfm.weight @"model.layers.0.self_attn.v_proj.weight" : tensor<16x32xf32>
  %v = tfm.linear %x, %wv : (tensor<?x32xf32>, tensor<16x32xf32>) -> tensor<?x2x8xf32>
  %a = tfm.attention %q, %k, %v {causal, scale = 0.35 : f32} : (tensor<?x4x8xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>) -> tensor<?x4x8xf32>
  %wh = tfm.weight @"lm_head.weight" : tensor<64x32xf32>
  %h = tfm.linear %a, %wh : (tensor<?x4x8xf32>, tensor<64x32xf32>) -> tensor<?x64xf32>
  return %h : tensor<?x64xf32>
}

