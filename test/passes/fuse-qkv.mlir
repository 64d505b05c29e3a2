// tfm-fuse-qkv: sibling head projections of one input become one GEMM over
// the joined weights; the heads are slices of its result.
// RUN: tfm-opt %s -split-input-file -pass-pipeline='builtin.module(func.func(tfm-fuse-qkv))' | FileCheck %s

// Grouped-query shapes: 4 query heads, 2 KV heads, no bias.
// CHECK-LABEL: func.func @gqa
// CHECK-DAG: %[[WQ:.*]] = tfm.weight @q
// CHECK-DAG: %[[WK:.*]] = tfm.weight @k
// CHECK-DAG: %[[WV:.*]] = tfm.weight @v
// CHECK: %[[W:.*]] = tfm.concat %[[WQ]], %[[WK]], %[[WV]] : (tensor<32x32xf32>, tensor<16x32xf32>, tensor<16x32xf32>) -> tensor<64x32xf32>
// CHECK: %[[QKV:.*]] = tfm.linear %arg0, %[[W]] : (tensor<?x32xf32>, tensor<64x32xf32>) -> tensor<?x8x8xf32>
// CHECK: %[[Q:.*]] = tensor.extract_slice %[[QKV]][0, 0, 0] [%{{.*}}, 4, 8] [1, 1, 1]
// CHECK: %[[K:.*]] = tensor.extract_slice %[[QKV]][0, 4, 0] [%{{.*}}, 2, 8] [1, 1, 1]
// CHECK: %[[V:.*]] = tensor.extract_slice %[[QKV]][0, 6, 0] [%{{.*}}, 2, 8] [1, 1, 1]
// CHECK-NOT: tfm.linear
// CHECK: tfm.attention %[[Q]], %[[K]], %[[V]]
tfm.weight_decl @q : tensor<32x32xf32>
tfm.weight_decl @k : tensor<16x32xf32>
tfm.weight_decl @v : tensor<16x32xf32>
func.func @gqa(%x: tensor<?x32xf32>) -> tensor<?x4x8xf32> {
  %wq = tfm.weight @q : tensor<32x32xf32>
  %q = tfm.linear %x, %wq : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x4x8xf32>
  %wk = tfm.weight @k : tensor<16x32xf32>
  %k = tfm.linear %x, %wk : (tensor<?x32xf32>, tensor<16x32xf32>) -> tensor<?x2x8xf32>
  %wv = tfm.weight @v : tensor<16x32xf32>
  %v = tfm.linear %x, %wv : (tensor<?x32xf32>, tensor<16x32xf32>) -> tensor<?x2x8xf32>
  %a = tfm.attention %q, %k, %v {causal, scale = 0.35 : f32} : (tensor<?x4x8xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>) -> tensor<?x4x8xf32>
  return %a : tensor<?x4x8xf32>
}

// -----

// Biases are joined too (GPT-2).
// CHECK-LABEL: func.func @biases
// CHECK: %[[B:.*]] = tfm.concat %{{.*}}, %{{.*}} : (tensor<8xf32>, tensor<8xf32>) -> tensor<16xf32>
// CHECK: tfm.linear %arg0, %{{.*}} bias %[[B]] : (tensor<3x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<3x4x4xf32>
tfm.weight_decl @q : tensor<8x8xf32>
tfm.weight_decl @bq : tensor<8xf32>
tfm.weight_decl @k : tensor<8x8xf32>
tfm.weight_decl @bk : tensor<8xf32>
func.func @biases(%x: tensor<3x8xf32>) -> (tensor<3x2x4xf32>, tensor<3x2x4xf32>) {
  %wq = tfm.weight @q : tensor<8x8xf32>
  %bq = tfm.weight @bq : tensor<8xf32>
  %q = tfm.linear %x, %wq bias %bq : (tensor<3x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<3x2x4xf32>
  %wk = tfm.weight @k : tensor<8x8xf32>
  %bk = tfm.weight @bk : tensor<8xf32>
  %k = tfm.linear %x, %wk bias %bk : (tensor<3x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<3x2x4xf32>
  return %q, %k : tensor<3x2x4xf32>, tensor<3x2x4xf32>
}

// -----

// No match: different inputs, different head sizes, one with a bias and one
// without, and projections that do not split into heads stay apart.
// CHECK-LABEL: func.func @no_match
// CHECK-NOT: tfm.concat
// CHECK-COUNT-6: tfm.linear
tfm.weight_decl @w : tensor<8x8xf32>
func.func @no_match(%x: tensor<3x8xf32>, %y: tensor<3x8xf32>, %b: tensor<8xf32>) -> (tensor<3x2x4xf32>, tensor<3x2x4xf32>, tensor<3x4x2xf32>, tensor<3x2x4xf32>, tensor<3x8xf32>, tensor<3x8xf32>) {
  %w = tfm.weight @w : tensor<8x8xf32>
  %a = tfm.linear %x, %w : (tensor<3x8xf32>, tensor<8x8xf32>) -> tensor<3x2x4xf32>
  %c = tfm.linear %y, %w : (tensor<3x8xf32>, tensor<8x8xf32>) -> tensor<3x2x4xf32>
  %d = tfm.linear %y, %w : (tensor<3x8xf32>, tensor<8x8xf32>) -> tensor<3x4x2xf32>
  %e = tfm.linear %x, %w bias %b : (tensor<3x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<3x2x4xf32>
  %f = tfm.linear %x, %w : (tensor<3x8xf32>, tensor<8x8xf32>) -> tensor<3x8xf32>
  %g = tfm.linear %x, %w : (tensor<3x8xf32>, tensor<8x8xf32>) -> tensor<3x8xf32>
  return %a, %c, %d, %e, %f, %g : tensor<3x2x4xf32>, tensor<3x2x4xf32>, tensor<3x4x2xf32>, tensor<3x2x4xf32>, tensor<3x8xf32>, tensor<3x8xf32>
}

// -----

// Projections a GGUF file stores in different K-quants (llama.cpp's Q4_K_M
// keeps some layers' V in Q6_K) stay apart: Q and K (Q4_K) join, V does
// not, so that each keeps its blocks instead of a join's int8.
// CHECK-LABEL: func.func @kquants
// CHECK-DAG: %[[WQ:.*]] = tfm.weight @kq
// CHECK-DAG: %[[WK:.*]] = tfm.weight @kk
// CHECK: %[[W:.*]] = tfm.concat %[[WQ]], %[[WK]] : (tensor<32x32xf32>, tensor<16x32xf32>) -> tensor<48x32xf32>
// CHECK: tfm.linear %arg0, %[[W]] : (tensor<?x32xf32>, tensor<48x32xf32>) -> tensor<?x6x8xf32>
// CHECK: %[[WV:.*]] = tfm.weight @kv
// CHECK: tfm.linear %arg0, %[[WV]] : (tensor<?x32xf32>, tensor<16x32xf32>) -> tensor<?x2x8xf32>
tfm.weight_decl @kq {tfm.checkpoint_dtype = "q4_k"} : tensor<32x32xf32>
tfm.weight_decl @kk {tfm.checkpoint_dtype = "q4_k"} : tensor<16x32xf32>
tfm.weight_decl @kv {tfm.checkpoint_dtype = "q6_k"} : tensor<16x32xf32>
func.func @kquants(%x: tensor<?x32xf32>) -> tensor<?x4x8xf32> {
  %wq = tfm.weight @kq : tensor<32x32xf32>
  %q = tfm.linear %x, %wq : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x4x8xf32>
  %wk = tfm.weight @kk : tensor<16x32xf32>
  %k = tfm.linear %x, %wk : (tensor<?x32xf32>, tensor<16x32xf32>) -> tensor<?x2x8xf32>
  %wv = tfm.weight @kv : tensor<16x32xf32>
  %v = tfm.linear %x, %wv : (tensor<?x32xf32>, tensor<16x32xf32>) -> tensor<?x2x8xf32>
  %a = tfm.attention %q, %k, %v {causal, scale = 0.35 : f32} : (tensor<?x4x8xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>) -> tensor<?x4x8xf32>
  return %a : tensor<?x4x8xf32>
}
