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
