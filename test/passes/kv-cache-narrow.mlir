// RUN: tfm-opt %s -tfm-kv-cache=kv-dtype=int8 | FileCheck %s
// RUN: tfm-opt %s -tfm-kv-cache=kv-dtype=bf16 | FileCheck %s --check-prefix=BF16
// RUN: not tfm-opt %s -tfm-kv-cache=kv-dtype=int3 2>&1 | FileCheck %s --check-prefix=UNKNOWN

// kv-dtype=int8: the self-attention cache holds int8 rows, head_dim 4 + 4
// bytes of scale, in every derived entry point. Keys and values are
// quantized before the append and widened after the read.
// CHECK-LABEL: func.func @prefill(
// CHECK-SAME: %[[CACHE:[^:]*]]: tensor<1x2x32x2x8xi8> {tfm.cache = #tfm.cache<self_attention>})
// CHECK-SAME: -> (tensor<1x16xf32> {tfm.output = #tfm.output<logits>}, tensor<1x2x32x2x8xi8>)
// CHECK: %[[QK:.*]] = tfm.quantize_rows %{{.*}} : tensor<?x2x4xf32> -> tensor<?x2x8xi8>
// CHECK: %[[QV:.*]] = tfm.quantize_rows %{{.*}} : tensor<?x2x4xf32> -> tensor<?x2x8xi8>
// CHECK: %[[C1:.*]] = tfm.kv_cache_append %[[CACHE]][0], %[[QK]], %[[QV]] at %{{.*}} : tensor<1x2x32x2x8xi8>, tensor<?x2x8xi8>, tensor<?x2x8xi8>
// CHECK: %[[K:.*]], %[[V:.*]] = tfm.kv_cache_read %[[C1]][0] length %{{.*}} : tensor<1x2x32x2x8xi8> -> tensor<?x2x8xi8>, tensor<?x2x8xi8>
// CHECK: %[[KF:.*]] = tfm.dequantize_rows %[[K]] : tensor<?x2x8xi8> -> tensor<?x2x4xf32>
// CHECK: %[[VF:.*]] = tfm.dequantize_rows %[[V]] : tensor<?x2x8xi8> -> tensor<?x2x4xf32>
// CHECK: tfm.attention %{{.*}}, %[[KF]], %[[VF]] {causal
// CHECK-LABEL: func.func @decode(
// CHECK-SAME: tensor<1x2x32x2x8xi8>
// CHECK-LABEL: func.func @decode_batch(
// CHECK-SAME: tensor<?x1x2x32x2x8xi8> {tfm.cache = #tfm.cache<self_attention>}
// CHECK: scf.for
// CHECK: tfm.quantize_rows
// CHECK: tfm.kv_cache_append %{{.*}} : tensor<1x2x32x2x8xi8>
// CHECK: tfm.dequantize_rows
// CHECK-LABEL: func.func @prefill_batch(
// CHECK-SAME: tensor<?x1x2x32x2x8xi8> {tfm.cache = #tfm.cache<self_attention>}
// CHECK: tfm.quantize_rows
// CHECK: tfm.dequantize_rows

// kv-dtype=bf16: the cache holds bf16 keys and values of head_dim 4, in
// every derived entry point, rounded before the append and widened after
// the read.
// BF16-LABEL: func.func @prefill(
// BF16-SAME: %[[CACHE:[^:]*]]: tensor<1x2x32x2x4xbf16> {tfm.cache = #tfm.cache<self_attention>})
// BF16: %[[QK:.*]] = tfm.quantize_rows %{{.*}} : tensor<?x2x4xf32> -> tensor<?x2x4xbf16>
// BF16: %[[QV:.*]] = tfm.quantize_rows %{{.*}} : tensor<?x2x4xf32> -> tensor<?x2x4xbf16>
// BF16: %[[C1:.*]] = tfm.kv_cache_append %[[CACHE]][0], %[[QK]], %[[QV]] at %{{.*}} : tensor<1x2x32x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x2x4xbf16>
// BF16: %[[K:.*]], %[[V:.*]] = tfm.kv_cache_read %[[C1]][0] length %{{.*}} : tensor<1x2x32x2x4xbf16> -> tensor<?x2x4xbf16>, tensor<?x2x4xbf16>
// BF16: %[[KF:.*]] = tfm.dequantize_rows %[[K]] : tensor<?x2x4xbf16> -> tensor<?x2x4xf32>
// BF16: %[[VF:.*]] = tfm.dequantize_rows %[[V]] : tensor<?x2x4xbf16> -> tensor<?x2x4xf32>
// BF16: tfm.attention %{{.*}}, %[[KF]], %[[VF]] {causal
// BF16-LABEL: func.func @decode_batch(
// BF16-SAME: tensor<?x1x2x32x2x4xbf16> {tfm.cache = #tfm.cache<self_attention>}
// BF16-LABEL: func.func @prefill_batch(
// BF16-SAME: tensor<?x1x2x32x2x4xbf16> {tfm.cache = #tfm.cache<self_attention>}

// UNKNOWN: error: tfm-kv-cache: unknown kv-dtype 'int3' (expected f32, bf16, f16 or int8)

module attributes {tfm.model = #tfm.model<family = "test", vocab_size = 0, max_context = 32>} {
tfm.weight_decl @wte : tensor<16x8xf32>
tfm.weight_decl @wpe : tensor<32x8xf32>
tfm.weight_decl @g : tensor<8xf32>
tfm.weight_decl @b : tensor<8xf32>
tfm.weight_decl @w : tensor<8x8xf32>
func.func @forward(%tokens: tensor<?xi32> {tfm.input = #tfm.input<token_ids>}) -> (tensor<?x16xf32> {tfm.output = #tfm.output<logits>}) {
  %wte = tfm.weight @wte : tensor<16x8xf32>
  %wpe = tfm.weight @wpe : tensor<32x8xf32>
  %g = tfm.weight @g : tensor<8xf32>
  %b = tfm.weight @b : tensor<8xf32>
  %wqkv = tfm.weight @w : tensor<8x8xf32>
  %x0 = tfm.embedding %wte[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %pos = tfm.position_ids %tokens : tensor<?xi32> -> tensor<?xi32>
  %pe = tfm.embedding %wpe[%pos] : tensor<32x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %x = tfm.add %x0, %pe : tensor<?x8xf32>
  %h = tfm.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %q = tfm.linear %h, %wqkv : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x2x4xf32>
  %k = tfm.linear %h, %wqkv : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x2x4xf32>
  %v = tfm.linear %h, %wqkv : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x2x4xf32>
  %a = tfm.attention %q, %k, %v {causal, scale = 0.5 : f32} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x2x4xf32>
  %o = tfm.linear %a, %wqkv : (tensor<?x2x4xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %x1 = tfm.add %x, %o : tensor<?x8xf32>
  %f = tfm.layer_norm %x1, %g, %b {epsilon = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %logits = tfm.linear %f, %wte : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  return %logits : tensor<?x16xf32>
}
}
