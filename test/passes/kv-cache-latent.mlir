// RUN: tfm-opt %s -split-input-file -tfm-kv-cache=decode-batch | FileCheck %s

// Multi-head latent attention (DeepSeek's, absorbed): every head reads one
// latent row [?, 1, 6] as its key and the row's first 4 columns as its
// value. The cache holds the row alone, one plane a layer ([1 layer, 1,
// 32, 1, 6]): appended without a value and read back as keys, whose
// leading columns the attention reads as its value in place (no copy).
// CHECK-LABEL: func.func @prefill(
// CHECK-SAME: %{{[^:]*}}: tensor<1x1x32x1x6xf32> {tfm.cache = #tfm.cache<self_attention>}
// CHECK: %[[ROW:.*]] = tensor.concat dim(2) %{{.*}}, %{{.*}} : (tensor<?x1x4xf32>, tensor<?x1x2xf32>) -> tensor<?x1x6xf32>
// CHECK: %[[CACHE:.*]] = tfm.kv_cache_append %{{.*}}[0], %[[ROW]] at %{{.*}} : tensor<1x1x32x1x6xf32>, tensor<?x1x6xf32>
// CHECK: %[[SEEN:.*]] = tfm.kv_cache_read %[[CACHE]][0] length %{{.*}} : tensor<1x1x32x1x6xf32> -> tensor<?x1x6xf32>
// CHECK-NOT: tensor.concat
// CHECK: %[[VALUE:.*]] = tensor.extract_slice %[[SEEN]][0, 0, 0] [%{{.*}}, 1, 4] [1, 1, 1]
// CHECK: tfm.attention %{{.*}}, %[[SEEN]], %[[VALUE]] {causal
// @decode_batch: the same rows in each sequence's plane.
// CHECK-LABEL: func.func @decode_batch(
// CHECK-SAME: tensor<?x1x1x32x1x6xf32> {tfm.cache = #tfm.cache<self_attention>}
// CHECK: scf.for
// CHECK: tfm.kv_cache_append %{{.*}}[0], %{{.*}} at %{{.*}} : tensor<1x1x32x1x6xf32>, tensor<?x1x6xf32>
// CHECK: %[[BSEEN:.*]] = tfm.kv_cache_read %{{.*}}[0] length %{{.*}} : tensor<1x1x32x1x6xf32> -> tensor<?x1x6xf32>
// CHECK: %[[BVALUE:.*]] = tensor.extract_slice %[[BSEEN]][0, 0, 0]
// CHECK: tfm.attention %{{.*}}, %[[BSEEN]], %[[BVALUE]] {causal
module attributes {tfm.model = #tfm.model<family = "test", vocab_size = 0, max_context = 32>} {
tfm.weight_decl @wte : tensor<16x8xf32>
tfm.weight_decl @wq : tensor<12x8xf32>
tfm.weight_decl @wkv : tensor<6x8xf32>
tfm.weight_decl @wk : tensor<8x2xf32>
tfm.weight_decl @wv : tensor<8x4xf32>
tfm.weight_decl @wo : tensor<8x8xf32>
func.func @forward(%tokens: tensor<?xi32> {tfm.input = #tfm.input<token_ids>}) -> (tensor<?x16xf32> {tfm.output = #tfm.output<logits>}) {
  %c0 = arith.constant 0 : index
  %wte = tfm.weight @wte : tensor<16x8xf32>
  %wq = tfm.weight @wq : tensor<12x8xf32>
  %wkv = tfm.weight @wkv : tensor<6x8xf32>
  %wk = tfm.weight @wk : tensor<8x2xf32>
  %wv = tfm.weight @wv : tensor<8x4xf32>
  %wo = tfm.weight @wo : tensor<8x8xf32>
  %x = tfm.embedding %wte[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %pos = tfm.position_ids %tokens : tensor<?xi32> -> tensor<?xi32>
  %q = tfm.linear %x, %wq : (tensor<?x8xf32>, tensor<12x8xf32>) -> tensor<?x2x6xf32>
  %n = tensor.dim %q, %c0 : tensor<?x2x6xf32>
  %qn = tensor.extract_slice %q[0, 0, 0] [%n, 2, 2] [1, 1, 1] : tensor<?x2x6xf32> to tensor<?x2x2xf32>
  %qp = tensor.extract_slice %q[0, 0, 2] [%n, 2, 2] [1, 1, 1] : tensor<?x2x6xf32> to tensor<?x2x2xf32>
  %qa = tfm.head_linear %qn, %wk : (tensor<?x2x2xf32>, tensor<8x2xf32>) -> tensor<?x2x4xf32>
  %qr = tfm.rope interleaved %qp, %pos {theta = 1.0e4 : f32} : tensor<?x2x2xf32>, tensor<?xi32>
  %query = tensor.concat dim(2) %qa, %qr : (tensor<?x2x4xf32>, tensor<?x2x2xf32>) -> tensor<?x2x6xf32>
  %kv = tfm.linear %x, %wkv : (tensor<?x8xf32>, tensor<6x8xf32>) -> tensor<?x1x6xf32>
  %m = tensor.dim %kv, %c0 : tensor<?x1x6xf32>
  %c = tensor.extract_slice %kv[0, 0, 0] [%m, 1, 4] [1, 1, 1] : tensor<?x1x6xf32> to tensor<?x1x4xf32>
  %kp = tensor.extract_slice %kv[0, 0, 4] [%m, 1, 2] [1, 1, 1] : tensor<?x1x6xf32> to tensor<?x1x2xf32>
  %kr = tfm.rope interleaved %kp, %pos {theta = 1.0e4 : f32} : tensor<?x1x2xf32>, tensor<?xi32>
  %row = tensor.concat dim(2) %c, %kr : (tensor<?x1x4xf32>, tensor<?x1x2xf32>) -> tensor<?x1x6xf32>
  %r = tensor.dim %row, %c0 : tensor<?x1x6xf32>
  %value = tensor.extract_slice %row[0, 0, 0] [%r, 1, 4] [1, 1, 1] : tensor<?x1x6xf32> to tensor<?x1x4xf32>
  %a = tfm.attention %query, %row, %value {causal, scale = 0.5 : f32} : (tensor<?x2x6xf32>, tensor<?x1x6xf32>, tensor<?x1x4xf32>) -> tensor<?x2x4xf32>
  %o = tfm.head_linear %a, %wv : (tensor<?x2x4xf32>, tensor<8x4xf32>) -> tensor<?x2x4xf32>
  %y = tfm.linear %o, %wo : (tensor<?x2x4xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %logits = tfm.linear %y, %wte : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  return %logits : tensor<?x16xf32>
}
}
