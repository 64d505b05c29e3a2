// RUN: tfm-opt %s -tfm-kv-cache | FileCheck %s

// A hybrid's recurrent layers (Gated DeltaNet's convolution and delta
// rule) keep their states in one f32 cache beside the KV cache, packed end
// to end in program order: the convolution's [3, 8] at elements [0, 24),
// the rule's [2, 4, 4] at [24, 56). @prefill reads each op's state, read
// as zeros at position 0 (`reset`), and writes its final state back.
// CHECK-LABEL: func.func @prefill(
// CHECK-SAME: %[[TOKENS:[^:]*]]: tensor<?xi32> {tfm.input = #tfm.input<token_ids>}, %[[START:[^:]*]]: index {tfm.input = #tfm.input<start_position>}
// CHECK-SAME: %{{[^:]*}}: tensor<1x2x32x2x4xf32> {tfm.cache = #tfm.cache<self_attention>}, %[[STATE:[^:]*]]: tensor<56xf32> {tfm.cache = #tfm.cache<recurrent_state>}
// CHECK-SAME: -> (tensor<1x16xf32> {tfm.output = #tfm.output<logits>}, tensor<1x2x32x2x4xf32>, tensor<56xf32>)
// CHECK: %[[RESET:.*]] = arith.cmpi eq, %[[START]], %{{.*}} : index
// CHECK: %[[CONVIN:.*]] = tensor.extract_slice %[[STATE]][0] [24] [1] : tensor<56xf32> to tensor<24xf32>
// CHECK: %[[CONVSTATE:.*]] = tensor.expand_shape %[[CONVIN]] {{\[\[}}0, 1]] output_shape [3, 8] : tensor<24xf32> into tensor<3x8xf32>
// CHECK: %{{.*}}, %[[CONVOUT:.*]] = tfm.causal_conv1d %{{.*}}, %{{.*}} state %[[CONVSTATE]] reset %[[RESET]]
// CHECK: %[[CONVFLAT:.*]] = tensor.collapse_shape %[[CONVOUT]] {{\[\[}}0, 1]] : tensor<3x8xf32> into tensor<24xf32>
// CHECK: %[[AFTERCONV:.*]] = tensor.insert_slice %[[CONVFLAT]] into %[[STATE]][0] [24] [1]
// CHECK: %[[RULEIN:.*]] = tensor.extract_slice %[[AFTERCONV]][24] [32] [1] : tensor<56xf32> to tensor<32xf32>
// CHECK: %[[RULESTATE:.*]] = tensor.expand_shape %[[RULEIN]] {{\[\[}}0, 1, 2]] output_shape [2, 4, 4]
// CHECK: %{{.*}}, %[[RULEOUT:.*]] = tfm.gated_delta_rule %{{.*}} state %[[RULESTATE]] reset %[[RESET]]
// CHECK: %[[RULEFLAT:.*]] = tensor.collapse_shape %[[RULEOUT]]
// CHECK: %[[AFTERRULE:.*]] = tensor.insert_slice %[[RULEFLAT]] into %[[AFTERCONV]][24] [32] [1]
// CHECK: tfm.kv_cache_append
// CHECK: return %{{.*}}, %{{.*}}, %[[AFTERRULE]] : tensor<1x16xf32>, tensor<1x2x32x2x4xf32>, tensor<56xf32>
// CHECK-LABEL: func.func @decode(
// CHECK-SAME: tensor<56xf32> {tfm.cache = #tfm.cache<recurrent_state>}
// CHECK: call @prefill
//
// @decode_batch: each row steps its own sequence's states, [?, 56], reset
// where its position is 0.
// CHECK-LABEL: func.func @decode_batch(
// CHECK-SAME: %[[POSITIONS:[^:]*]]: tensor<?xi32> {tfm.input = #tfm.input<positions>}, %[[SEQUENCES:[^:]*]]: tensor<?xi32> {tfm.input = #tfm.input<cache_sequences>}
// CHECK-SAME: tensor<?x56xf32> {tfm.cache = #tfm.cache<recurrent_state>}
// CHECK-SAME: -> (tensor<?x16xf32> {tfm.output = #tfm.output<logits>}, tensor<?x1x2x32x2x4xf32>, tensor<?x56xf32>)
// CHECK: scf.for %{{.*}} iter_args(%{{.*}} = %{{.*}}, %[[STATES:.*]] = %{{.*}}, %[[FIRST:.*]] = %{{.*}})
// CHECK: %[[AT:.*]] = tensor.extract %[[POSITIONS]][%[[FIRST]]]
// CHECK: %[[SEQ:.*]] = tensor.extract %[[SEQUENCES]]
// CHECK: arith.cmpi eq
// CHECK: %[[OWN:.*]] = tensor.extract_slice %[[STATES]][%{{.*}}, 0] [1, 24] [1, 1] : tensor<?x56xf32> to tensor<24xf32>
// CHECK-NOT: func.func
// CHECK: tfm.causal_conv1d %{{.*}}, %{{.*}} state
// CHECK: tensor.insert_slice %{{.*}} into %[[STATES]][%{{.*}}, 0] [1, 24] [1, 1]
// CHECK: scf.yield
// CHECK: tfm.gated_delta_rule {{.*}} state
// @prefill_batch: each chunk of its sequence's rows from its first
// position.
// CHECK-LABEL: func.func @prefill_batch(
// CHECK-SAME: tensor<?x56xf32> {tfm.cache = #tfm.cache<recurrent_state>}
// CHECK: scf.for
// CHECK: tfm.causal_conv1d %{{.*}}, %{{.*}} state
// CHECK: tfm.gated_delta_rule {{.*}} state
module attributes {tfm.model = #tfm.model<family = "test", vocab_size = 16, max_context = 32>} {
tfm.weight_decl @wte : tensor<16x8xf32>
tfm.weight_decl @wconv : tensor<8x4xf32>
tfm.weight_decl @wq : tensor<4x8xf32>
tfm.weight_decl @wv : tensor<8x8xf32>
tfm.weight_decl @wa : tensor<2x8xf32>
tfm.weight_decl @decay : tensor<2xf32>
tfm.weight_decl @wo : tensor<8x8xf32>
func.func @forward(%tokens: tensor<?xi32> {tfm.input = #tfm.input<token_ids>}) -> (tensor<?x16xf32> {tfm.output = #tfm.output<logits>}) {
  %wte = tfm.weight @wte : tensor<16x8xf32>
  %wconv = tfm.weight @wconv : tensor<8x4xf32>
  %wq = tfm.weight @wq : tensor<4x8xf32>
  %wv = tfm.weight @wv : tensor<8x8xf32>
  %wa = tfm.weight @wa : tensor<2x8xf32>
  %decay = tfm.weight @decay : tensor<2xf32>
  %wo = tfm.weight @wo : tensor<8x8xf32>
  %x = tfm.embedding %wte[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %y, %ys = tfm.causal_conv1d %x, %wconv : (tensor<?x8xf32>, tensor<8x4xf32>) -> (tensor<?x8xf32>, tensor<3x8xf32>)
  %q = tfm.linear %y, %wq : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x1x4xf32>
  %v = tfm.linear %y, %wv : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x2x4xf32>
  %a = tfm.linear %y, %wa : (tensor<?x8xf32>, tensor<2x8xf32>) -> tensor<?x2xf32>
  %o, %os = tfm.gated_delta_rule %q, %q, %v, %a, %decay, %a {scale = 5.000000e-01 : f32} : (tensor<?x1x4xf32>, tensor<?x1x4xf32>, tensor<?x2x4xf32>, tensor<?x2xf32>, tensor<2xf32>, tensor<?x2xf32>) -> (tensor<?x2x4xf32>, tensor<2x4x4xf32>)
  %h = tfm.linear %o, %wo : (tensor<?x2x4xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %qa = tfm.linear %h, %wv : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x2x4xf32>
  %ka = tfm.linear %h, %wo : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x2x4xf32>
  %att = tfm.attention %qa, %ka, %ka {causal, scale = 5.000000e-01 : f32} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x2x4xf32>
  %out = tfm.linear %att, %wo : (tensor<?x2x4xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %logits = tfm.linear %out, %wte : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  return %logits : tensor<?x16xf32>
}
}
