// tfm-quantize-weights dtype=checkpoint: each matrix keeps the storage its
// checkpoint records on the declaration (tfm.checkpoint_dtype, set by the
// frontend: a GGUF file's Q4_0 tensor is int4, its Q8_0 and K-quant tensors
// int8, a BF16 tensor bf16); a declaration without one stays f32. dtype-for
// still overrides.
// RUN: tfm-opt %s -tfm-quantize-weights="dtype=checkpoint" | FileCheck %s
// RUN: tfm-opt %s -tfm-quantize-weights="dtype=checkpoint dtype-for=^up$=int8" | FileCheck %s --check-prefix=FOR

// CHECK: tfm.weight_decl @embed {tfm.checkpoint_dtype = "int8"} : tensor<64x32xi8, #tfm.block_quant<q8_0>>
// CHECK: tfm.weight_decl @up {tfm.checkpoint_dtype = "int4"} : tensor<32x32xi4, #tfm.block_quant<q4_0>>
// CHECK: tfm.weight_decl @down {tfm.checkpoint_dtype = "bf16"} : tensor<32x32xbf16>
// CHECK: tfm.weight_decl @out : tensor<32x32xf32>
// CHECK-NOT: tfm.dequantize %{{.*}} : tensor<32x32xf32>
// FOR: tfm.weight_decl @up {tfm.checkpoint_dtype = "int4"} : tensor<32x32xi8, #tfm.block_quant<q8_0>>
tfm.weight_decl @embed {tfm.checkpoint_dtype = "int8"} : tensor<64x32xf32>
tfm.weight_decl @up {tfm.checkpoint_dtype = "int4"} : tensor<32x32xf32>
tfm.weight_decl @down {tfm.checkpoint_dtype = "bf16"} : tensor<32x32xf32>
tfm.weight_decl @out : tensor<32x32xf32>
func.func @forward(%ids: tensor<?xi32>) -> tensor<?x32xf32> {
  %e = tfm.weight @embed : tensor<64x32xf32>
  %x = tfm.embedding %e[%ids] : tensor<64x32xf32>, tensor<?xi32> -> tensor<?x32xf32>
  %u = tfm.weight @up : tensor<32x32xf32>
  %h = tfm.linear %x, %u : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x32xf32>
  %d = tfm.weight @down : tensor<32x32xf32>
  %y = tfm.linear %h, %d : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x32xf32>
  %o = tfm.weight @out : tensor<32x32xf32>
  %z = tfm.linear %y, %o : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x32xf32>
  return %z : tensor<?x32xf32>
}

// A join of parts stored in different formats takes the widest of them, so
// that it stays one narrow join: llama.cpp's Q4_K_M stores some value
// projections in Q6_K (int8) beside Q4_K queries and keys (int4-min). A
// part without a narrow checkpoint dtype makes the whole join f32.
// CHECK: tfm.weight_decl @q {tfm.checkpoint_dtype = "int4-min"} : tensor<32x32xi8, #tfm.block_quant<q8_0>>
// CHECK: tfm.weight_decl @k {tfm.checkpoint_dtype = "int4-min"} : tensor<32x32xi8, #tfm.block_quant<q8_0>>
// CHECK: tfm.weight_decl @v {tfm.checkpoint_dtype = "int8"} : tensor<32x32xi8, #tfm.block_quant<q8_0>>
// CHECK: tfm.weight_decl @gate {tfm.checkpoint_dtype = "int4"} : tensor<32x32xf32>
// CHECK: tfm.weight_decl @up32 : tensor<32x32xf32>
// CHECK-LABEL: func.func @mixed_joins
// CHECK: %[[QKV:.*]] = tfm.concat %{{.*}}, %{{.*}}, %{{.*}} : ({{.*}}) -> tensor<96x32xi8, #tfm.block_quant<q8_0>>
// CHECK: tfm.dequantize %[[QKV]] : tensor<96x32xi8, #tfm.block_quant<q8_0>> -> tensor<96x32xf32>
// CHECK: tfm.concat %{{.*}}, %{{.*}} : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<64x32xf32>
tfm.weight_decl @q {tfm.checkpoint_dtype = "int4-min"} : tensor<32x32xf32>
tfm.weight_decl @k {tfm.checkpoint_dtype = "int4-min"} : tensor<32x32xf32>
tfm.weight_decl @v {tfm.checkpoint_dtype = "int8"} : tensor<32x32xf32>
tfm.weight_decl @gate {tfm.checkpoint_dtype = "int4"} : tensor<32x32xf32>
tfm.weight_decl @up32 : tensor<32x32xf32>
func.func @mixed_joins(%x: tensor<?x32xf32>) -> (tensor<?x96xf32>, tensor<?x64xf32>) {
  %q = tfm.weight @q : tensor<32x32xf32>
  %k = tfm.weight @k : tensor<32x32xf32>
  %v = tfm.weight @v : tensor<32x32xf32>
  %qkv = tfm.concat %q, %k, %v : (tensor<32x32xf32>, tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<96x32xf32>
  %a = tfm.linear %x, %qkv : (tensor<?x32xf32>, tensor<96x32xf32>) -> tensor<?x96xf32>
  %g = tfm.weight @gate : tensor<32x32xf32>
  %u = tfm.weight @up32 : tensor<32x32xf32>
  %gu = tfm.concat %g, %u : (tensor<32x32xf32>, tensor<32x32xf32>) -> tensor<64x32xf32>
  %b = tfm.linear %x, %gu : (tensor<?x32xf32>, tensor<64x32xf32>) -> tensor<?x64xf32>
  return %a, %b : tensor<?x96xf32>, tensor<?x64xf32>
}

// A GGUF file's Q4_K tensors stay q4_k (tfm.checkpoint_dtype "q4_k"), and
// a join of Q4_K parts is one q4_k join. Beside a part in another format,
// q4_k joins as the int4-min that holds its blocks' grids (here beside
// int4, which int4-min also holds).
// CHECK: tfm.weight_decl @kq {tfm.checkpoint_dtype = "q4_k"} : tensor<32x256xi4, #tfm.block_quant<q4_k>>
// CHECK: tfm.weight_decl @kk {tfm.checkpoint_dtype = "q4_k"} : tensor<32x256xi4, #tfm.block_quant<q4_k>>
// CHECK: tfm.weight_decl @kg {tfm.checkpoint_dtype = "q4_k"} : tensor<32x256xi4, #tfm.block_quant<q4_1>>
// CHECK: tfm.weight_decl @ku {tfm.checkpoint_dtype = "int4"} : tensor<32x256xi4, #tfm.block_quant<q4_1>>
// CHECK-LABEL: func.func @q4k_joins
// CHECK: tfm.concat %{{.*}}, %{{.*}} : ({{.*}}) -> tensor<64x256xi4, #tfm.block_quant<q4_k>>
// CHECK: tfm.concat %{{.*}}, %{{.*}} : ({{.*}}) -> tensor<64x256xi4, #tfm.block_quant<q4_1>>
tfm.weight_decl @kq {tfm.checkpoint_dtype = "q4_k"} : tensor<32x256xf32>
tfm.weight_decl @kk {tfm.checkpoint_dtype = "q4_k"} : tensor<32x256xf32>
tfm.weight_decl @kg {tfm.checkpoint_dtype = "q4_k"} : tensor<32x256xf32>
tfm.weight_decl @ku {tfm.checkpoint_dtype = "int4"} : tensor<32x256xf32>
func.func @q4k_joins(%x: tensor<?x256xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %q = tfm.weight @kq : tensor<32x256xf32>
  %k = tfm.weight @kk : tensor<32x256xf32>
  %qk = tfm.concat %q, %k : (tensor<32x256xf32>, tensor<32x256xf32>) -> tensor<64x256xf32>
  %a = tfm.linear %x, %qk : (tensor<?x256xf32>, tensor<64x256xf32>) -> tensor<?x64xf32>
  %g = tfm.weight @kg : tensor<32x256xf32>
  %u = tfm.weight @ku : tensor<32x256xf32>
  %gu = tfm.concat %g, %u : (tensor<32x256xf32>, tensor<32x256xf32>) -> tensor<64x256xf32>
  %b = tfm.linear %x, %gu : (tensor<?x256xf32>, tensor<64x256xf32>) -> tensor<?x64xf32>
  return %a, %b : tensor<?x64xf32>, tensor<?x64xf32>
}
