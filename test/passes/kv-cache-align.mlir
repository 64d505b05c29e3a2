// RUN: tfm-opt %s -tfm-kv-cache | FileCheck %s
// RUN: sed -e 's/alignment_heads = \[0, 1, 0, 0\]/alignment_heads = [1, 0]/' %s | not tfm-opt -tfm-kv-cache 2>&1 | FileCheck %s --check-prefix=LAYER
// RUN: sed -e 's/alignment_heads = \[0, 1, 0, 0\]/alignment_heads = [0, 2]/' %s | not tfm-opt -tfm-kv-cache 2>&1 | FileCheck %s --check-prefix=HEAD

// Whisper's word timestamps: where the module's generation defaults list
// alignment heads ([layer, head] pairs), tfm-kv-cache also derives
// @align(tokens, cross cache, encoded length) -> [tokens, heads, source
// positions]: the decoder over the tokens from position 0 (whole-sequence
// causal self-attention, no self-attention cache), the cross-attention
// keys read from the cache @encode filled, and the listed heads'
// probabilities in place of the logits; the encoder, the layers after the
// last listed one and the head are pruned.
// CHECK-LABEL: func.func @align(
// CHECK-SAME: %[[TOK:[^:]*]]: tensor<?xi32> {tfm.input = #tfm.input<token_ids>}, %[[XC:[^:]*]]: tensor<1x2x16x2x4xf32> {tfm.cache = #tfm.cache<cross_attention>}, %[[ENC:[^:]*]]: index {tfm.input = #tfm.input<encoded_length>})
// CHECK-SAME: -> (tensor<?x2x?xf32> {tfm.output = #tfm.output<alignment_weights>})
// CHECK-NOT: tfm.kv_cache_append
// CHECK: tfm.position_ids %[[TOK]] :
// CHECK: tfm.attention {{.*}} {causal
// CHECK: %[[XK:.*]], %{{.*}} = tfm.kv_cache_read %[[XC]][0] length %[[ENC]]
// CHECK: %[[W:.*]] = tfm.attention_weights %[[Q:.*]], %[[XK]] {heads = array<i64: 1, 0>, scale = 5.000000e-01 : f32} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x2x?xf32>
// CHECK: %[[H1:.*]] = tensor.extract_slice %[[W]][0, 0, 0]
// CHECK: %[[FIRST:.*]] = tensor.insert_slice %[[H1]] into %{{.*}}[0, 0, 0]
// CHECK: %[[H0:.*]] = tensor.extract_slice %[[W]][0, 1, 0]
// CHECK: %[[ALL:.*]] = tensor.insert_slice %[[H0]] into %[[FIRST]][0, 1, 0]
// CHECK-NOT: tfm.linear %{{.*}} -> tensor<?x16xf32>
// CHECK: return %[[ALL]]
// LAYER: error: 'func.func' op tfm-kv-cache: alignment head [1, 0] names a layer outside the decoder's 1 cross-attention layers
// HEAD: error: 'func.func' op tfm-kv-cache: alignment head [0, 2] names a head outside the layer's 2
module attributes {tfm.model = #tfm.model<family = "toy", vocab_size = 16, max_context = 16, bos_token = 0, eos_token = 1, hidden_size = 8, num_layers = 1, num_heads = 2, num_kv_heads = 2, generation = #tfm.generation<alignment_heads = [0, 1, 0, 0]>>} {
func.func @forward(%src: tensor<?xi32> {tfm.input = #tfm.input<token_ids>}, %tgt: tensor<?xi32> {tfm.input = #tfm.input<decoder_token_ids>}) -> (tensor<?x16xf32> {tfm.output = #tfm.output<logits>}) {
  %table = arith.constant dense<0.5> : tensor<16x8xf32>
  %w = arith.constant dense<0.25> : tensor<8x8xf32>
  %g = arith.constant dense<1.0> : tensor<8xf32>
  // The encoder.
  %xs = tfm.embedding %table[%src] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %ps = tfm.position_ids %src : tensor<?xi32> -> tensor<?xi32>
  %es = tfm.sinusoidal_position concat %ps {base = 1.0e4 : f32} : tensor<?xi32> -> tensor<?x8xf32>
  %hs = tfm.add %xs, %es : tensor<?x8xf32>
  %q0 = tfm.linear %hs, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x2x4xf32>
  %a0 = tfm.attention %q0, %q0, %q0 {scale = 0.5 : f32} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x2x4xf32>
  %o0 = tfm.linear %a0, %w : (tensor<?x2x4xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %memory = tfm.layer_norm %o0, %g {epsilon = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  // The decoder.
  %xt = tfm.embedding %table[%tgt] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %pt = tfm.position_ids %tgt : tensor<?xi32> -> tensor<?xi32>
  %et = tfm.sinusoidal_position concat %pt {base = 1.0e4 : f32} : tensor<?xi32> -> tensor<?x8xf32>
  %ht = tfm.add %xt, %et : tensor<?x8xf32>
  %q1 = tfm.linear %ht, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x2x4xf32>
  %a1 = tfm.attention %q1, %q1, %q1 {causal, scale = 0.5 : f32} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x2x4xf32>
  %o1 = tfm.linear %a1, %w : (tensor<?x2x4xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %n1 = tfm.layer_norm %o1, %g {epsilon = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %q2 = tfm.linear %n1, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x2x4xf32>
  %k2 = tfm.linear %memory, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x2x4xf32>
  %v2 = tfm.linear %memory, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x2x4xf32>
  %a2 = tfm.attention %q2, %k2, %v2 {scale = 0.5 : f32} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x2x4xf32>
  %o2 = tfm.linear %a2, %w : (tensor<?x2x4xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %n2 = tfm.layer_norm %o2, %g {epsilon = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %logits = tfm.linear %n2, %table : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  return %logits : tensor<?x16xf32>
}
}
