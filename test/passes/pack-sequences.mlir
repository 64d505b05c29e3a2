// RUN: tfm-opt %s -split-input-file -tfm-pack-sequences -verify-diagnostics | FileCheck %s

// An embedder: @embed_batch is @embed over sequences packed end to end,
// their lengths a last argument, which the position ids, the attention and
// the pooling take; the pooled [d] becomes [sequences, d]. Position-wise
// ops are unchanged.
// CHECK-LABEL: func.func @embed(
// CHECK: tfm.pool mean %{{.*}} {normalize} : tensor<?x8xf32> -> tensor<8xf32>
// CHECK-LABEL: func.func @embed_batch(
// CHECK-SAME: %[[TOK:[^:]*]]: tensor<?xi32> {tfm.input = #tfm.input<token_ids>}, %[[N:[^:]*]]: tensor<?xi32> {tfm.input = #tfm.input<sequence_lengths>})
// CHECK-SAME: -> (tensor<?x8xf32> {tfm.output = #tfm.output<embedding>})
// CHECK: %[[POS:.*]] = tfm.position_ids %[[TOK]] lengths %[[N]] : tensor<?xi32> {padding_id = 1 : i64}
// CHECK: tfm.embedding %{{.*}}[%[[POS]]]
// CHECK: tfm.attention %{{.*}}, %{{.*}}, %{{.*}} lengths %[[N]] {scale
// CHECK: tfm.layer_norm
// CHECK: %[[E:.*]] = tfm.pool mean %{{.*}} lengths %[[N]] : tensor<?xi32> {normalize} : tensor<?x8xf32> -> tensor<?x8xf32>
// CHECK: return %[[E]] : tensor<?x8xf32>
module {
func.func @embed(%tokens: tensor<?xi32> {tfm.input = #tfm.input<token_ids>}) -> (tensor<8xf32> {tfm.output = #tfm.output<embedding>}) {
  %wte = arith.constant dense<1.0> : tensor<16x8xf32>
  %wpe = arith.constant dense<2.0> : tensor<32x8xf32>
  %w = arith.constant dense<0.5> : tensor<8x8xf32>
  %g = arith.constant dense<1.0> : tensor<8xf32>
  %x = tfm.embedding %wte[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %pos = tfm.position_ids %tokens {padding_id = 1 : i64} : tensor<?xi32> -> tensor<?xi32>
  %p = tfm.embedding %wpe[%pos] : tensor<32x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %h = tfm.add %x, %p : tensor<?x8xf32>
  %q = tfm.linear %h, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x2x4xf32>
  %a = tfm.attention %q, %q, %q {scale = 0.5 : f32} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x2x4xf32>
  %o = tfm.linear %a, %w : (tensor<?x2x4xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %n = tfm.layer_norm %o, %g {epsilon = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %e = tfm.pool mean %n {normalize} : tensor<?x8xf32> -> tensor<8xf32>
  return %e : tensor<8xf32>
}
}

// -----

// Per-token results (hidden states, logits) stay rows, of every sequence
// in turn; token types are per token too.
// CHECK-LABEL: func.func @encode_batch(
// CHECK-SAME: %{{[^:]*}}: tensor<?xi32> {tfm.input = #tfm.input<token_ids>}, %{{[^:]*}}: tensor<?xi32> {tfm.input = #tfm.input<token_type_ids>}, %{{[^:]*}}: tensor<?xi32> {tfm.input = #tfm.input<sequence_lengths>})
// CHECK-SAME: -> (tensor<?x8xf32> {tfm.output = #tfm.output<hidden_states>})
func.func @encode(%tokens: tensor<?xi32> {tfm.input = #tfm.input<token_ids>}, %types: tensor<?xi32> {tfm.input = #tfm.input<token_type_ids>}) -> (tensor<?x8xf32> {tfm.output = #tfm.output<hidden_states>}) {
  %wte = arith.constant dense<1.0> : tensor<16x8xf32>
  %x = tfm.embedding %wte[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %t = tfm.embedding %wte[%types] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %h = tfm.add %x, %t : tensor<?x8xf32>
  return %h : tensor<?x8xf32>
}

// -----

// A causal decoder gets no batched form here (its batches come with its
// caches), nor does a function without token ids, nor one whose batch
// exists.
// CHECK-LABEL: func.func @forward(
// CHECK-NOT: func.func @forward_batch
// CHECK-LABEL: func.func @image(
// CHECK-NOT: func.func @image_batch
// CHECK-LABEL: func.func @encode(
// CHECK-LABEL: func.func @encode_batch(
// CHECK-NOT: func.func
func.func @forward(%tokens: tensor<?xi32> {tfm.input = #tfm.input<token_ids>}) -> (tensor<?x2x4xf32> {tfm.output = #tfm.output<logits>}) {
  %wte = arith.constant dense<1.0> : tensor<16x8xf32>
  %w = arith.constant dense<0.5> : tensor<8x8xf32>
  %x = tfm.embedding %wte[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %q = tfm.linear %x, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x2x4xf32>
  %a = tfm.attention %q, %q, %q {causal, scale = 0.5 : f32} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x2x4xf32>
  return %a : tensor<?x2x4xf32>
}
func.func @image(%pixels: tensor<3x8x8xf32> {tfm.input = #tfm.input<features>}) -> (tensor<4x48xf32> {tfm.output = #tfm.output<hidden_states>}) {
  %p = tfm.patches %pixels {patch = 4 : i64} : tensor<3x8x8xf32> -> tensor<4x48xf32>
  return %p : tensor<4x48xf32>
}
func.func @encode(%tokens: tensor<?xi32> {tfm.input = #tfm.input<token_ids>}) -> (tensor<?xi32> {tfm.output = #tfm.output<hidden_states>}) {
  return %tokens : tensor<?xi32>
}
func.func @encode_batch(%tokens: tensor<?xi32> {tfm.input = #tfm.input<token_ids>}) -> (tensor<?xi32> {tfm.output = #tfm.output<hidden_states>}) {
  return %tokens : tensor<?xi32>
}

// -----

// An op that mixes positions otherwise (here: concatenating rows) would
// see the whole batch as one sequence: no batched form, and a remark.
// CHECK-LABEL: func.func @encode(
// CHECK-NOT: func.func @encode_batch
func.func @encode(%tokens: tensor<?xi32> {tfm.input = #tfm.input<token_ids>}) -> (tensor<?x8xf32> {tfm.output = #tfm.output<hidden_states>}) {
  %wte = arith.constant dense<1.0> : tensor<16x8xf32>
  %cls = arith.constant dense<1.0> : tensor<1x8xf32>
  %x = tfm.embedding %wte[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  // expected-remark @+1 {{tfm-pack-sequences: @encode gets no batched form: an op that mixes positions}}
  %c = tfm.concat %cls, %x : (tensor<1x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  return %c : tensor<?x8xf32>
}
