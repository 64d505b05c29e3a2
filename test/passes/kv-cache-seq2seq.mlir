// RUN: tfm-opt %s -tfm-kv-cache | FileCheck %s

// An encoder-decoder's whole-sequence @forward(source, decoder ids): one
// encoder layer, one decoder layer with causal self-attention and then
// cross-attention to the encoder's output. tfm-kv-cache derives
// - @encode(source, cross cache) -> (encoder output, cross cache): the
//   encoder, then the cross-attention keys and values of every decoder
//   layer written at position 0;
// - @prefill / @decode over the decoder's tokens with the self-attention
//   cache as for a decoder, plus the read-only cross cache and how many
//   source positions it holds: the encoder does not run again.
// CHECK-LABEL: func.func @forward(
// CHECK-LABEL: func.func @prefill(
// CHECK-SAME: %[[TOK:[^:]*]]: tensor<?xi32> {tfm.input = #tfm.input<token_ids>}, %[[START:[^:]*]]: index {tfm.input = #tfm.input<start_position>}, %[[SLOT:[^:]*]]: index {tfm.input = #tfm.input<cache_slot>}, %[[SELF:[^:]*]]: tensor<1x2x16x2x4xf32> {tfm.cache = #tfm.cache<self_attention>}, %[[XC:[^:]*]]: tensor<1x2x16x2x4xf32> {tfm.cache = #tfm.cache<cross_attention>}, %[[ENC:[^:]*]]: index {tfm.input = #tfm.input<encoded_length>})
// CHECK-SAME: -> (tensor<1x16xf32> {tfm.output = #tfm.output<logits>}, tensor<1x2x16x2x4xf32>)
// CHECK-NOT: tfm.attention {{.*}} {scale
// CHECK: tfm.position_ids %[[TOK]] offset %[[START]]
// CHECK: tfm.kv_cache_append %[[SELF]][0]
// CHECK: tfm.attention {{.*}} {causal
// CHECK: %[[XK:.*]], %[[XV:.*]] = tfm.kv_cache_read %[[XC]][0] length %[[ENC]]
// CHECK: tfm.attention %{{.*}}, %[[XK]], %[[XV]] {scale
// CHECK-LABEL: func.func @decode(
// CHECK-SAME: tensor<1xi32>
// CHECK-SAME: #tfm.cache<cross_attention>
// CHECK: call @prefill
// CHECK-LABEL: func.func @encode(
// CHECK-SAME: %[[SRC:[^:]*]]: tensor<?xi32> {tfm.input = #tfm.input<token_ids>}, %[[CROSS:[^:]*]]: tensor<1x2x16x2x4xf32> {tfm.cache = #tfm.cache<cross_attention>})
// CHECK-SAME: -> (tensor<?x8xf32> {tfm.output = #tfm.output<hidden_states>}, tensor<1x2x16x2x4xf32>)
// CHECK: tfm.embedding %{{.*}}[%[[SRC]]]
// CHECK: tfm.attention
// CHECK-NOT: causal
// CHECK: %[[MEMORY:.*]] = tfm.layer_norm
// CHECK: %[[K:.*]] = tfm.linear %[[MEMORY]], %{{.*}} : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x2x4xf32>
// CHECK: %[[V:.*]] = tfm.linear %[[MEMORY]], %{{.*}} : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x2x4xf32>
// CHECK: %[[FILLED:.*]] = tfm.kv_cache_append %[[CROSS]][0], %[[K]], %[[V]] at %{{.*}} : tensor<1x2x16x2x4xf32>
// CHECK: return %[[MEMORY]], %[[FILLED]]
// @decode_batch (several beams of one source): self-attention loops over
// the rows, each in its own sequence of the batched cache; cross-attention
// is the B queries against the one cross cache.
// CHECK-LABEL: func.func @decode_batch(
// CHECK-SAME: %[[BSELF:[^:]*]]: tensor<?x1x2x16x2x4xf32> {tfm.cache = #tfm.cache<self_attention>}, %[[BXC:[^:]*]]: tensor<1x2x16x2x4xf32> {tfm.cache = #tfm.cache<cross_attention>}, %[[BENC:[^:]*]]: index {tfm.input = #tfm.input<encoded_length>})
// CHECK-SAME: -> (tensor<?x16xf32> {tfm.output = #tfm.output<logits>}, tensor<?x1x2x16x2x4xf32>)
// CHECK: scf.for {{.*}} iter_args({{.*}}, %{{.*}} = %[[BSELF]])
// CHECK: tfm.attention {{.*}} {causal
// CHECK: scf.yield
// CHECK: %[[BXK:.*]], %[[BXV:.*]] = tfm.kv_cache_read %[[BXC]][0] length %[[BENC]]
// CHECK: tfm.attention %{{.*}}, %[[BXK]], %[[BXV]] {scale = 5.000000e-01 : f32} : (tensor<?x2x4xf32>
// Sequences of a batch would share one source: no @prefill_batch.
// CHECK-NOT: func.func @prefill_batch
module attributes {tfm.model = #tfm.model<family = "toy", vocab_size = 16, max_context = 16, bos_token = 0, eos_token = 1, hidden_size = 8, num_layers = 1, num_heads = 2, num_kv_heads = 2>} {
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
