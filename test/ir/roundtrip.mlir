// Every tfm op printed and parsed back, in the custom and the generic form.
// RUN: tfm-opt %s -split-input-file | tfm-opt -split-input-file | FileCheck %s
// RUN: tfm-opt %s -split-input-file -mlir-print-op-generic | tfm-opt -split-input-file | FileCheck %s
// Keywords (enum attributes) follow the op with one space, as written.
// RUN: tfm-opt %s -split-input-file | FileCheck %s --strict-whitespace --check-prefix=SPACING
// SPACING: tfm.activation gelu %
// SPACING: tfm.rope interleaved %

// CHECK: tfm.weight_decl @tok_embeddings.weight : tensor<512x64xf32>
// CHECK: tfm.weight_decl @"0.weight" : tensor<64xf32>
// CHECK-LABEL: func.func @weight
tfm.weight_decl @tok_embeddings.weight : tensor<512x64xf32>
tfm.weight_decl @"0.weight" : tensor<64xf32>
func.func @weight() -> (tensor<512x64xf32>, tensor<64xf32>) {
  // CHECK: tfm.weight @tok_embeddings.weight : tensor<512x64xf32>
  %w = tfm.weight @tok_embeddings.weight : tensor<512x64xf32>
  // CHECK: tfm.weight @"0.weight" : tensor<64xf32>
  %g = tfm.weight @"0.weight" : tensor<64xf32>
  return %w, %g : tensor<512x64xf32>, tensor<64xf32>
}

// -----

// Weights stored narrower: bf16, and int8/int4 codes in blocks, widened by
// tfm.dequantize (also joined as stored).
// CHECK: tfm.weight_decl @up : tensor<64x32xbf16>
// CHECK: tfm.weight_decl @q : tensor<32x32xi8, #tfm.block_quant<q8_0>>
// CHECK: tfm.weight_decl @k : tensor<16x32xi4, #tfm.block_quant<q4_0>>
// CHECK: tfm.weight_decl @v {tfm.checkpoint_dtype = "int4-min"} : tensor<16x32xi4, #tfm.block_quant<q4_1>>
// CHECK: tfm.weight_decl @gate {tfm.checkpoint_dtype = "q4_k"} : tensor<16x512xi4, #tfm.block_quant<q4_k>>
// CHECK: tfm.weight_decl @down {tfm.checkpoint_dtype = "q6_k"} : tensor<16x256xi6, #tfm.block_quant<q6_k>>
// CHECK: tfm.weight_decl @up5 {tfm.checkpoint_dtype = "q5_k"} : tensor<16x256xi5, #tfm.block_quant<q5_k>>
// CHECK: tfm.weight_decl @expert {tfm.checkpoint_dtype = "mxfp4"} : tensor<16x64xi4, #tfm.block_quant<mxfp4>>
// CHECK-LABEL: func.func @narrow_weights
tfm.weight_decl @up : tensor<64x32xbf16>
tfm.weight_decl @q : tensor<32x32xi8, #tfm.block_quant<q8_0>>
tfm.weight_decl @k : tensor<16x32xi4, #tfm.block_quant<q4_0>>
tfm.weight_decl @v {tfm.checkpoint_dtype = "int4-min"} : tensor<16x32xi4, #tfm.block_quant<q4_1>>
tfm.weight_decl @gate {tfm.checkpoint_dtype = "q4_k"} : tensor<16x512xi4, #tfm.block_quant<q4_k>>
tfm.weight_decl @down {tfm.checkpoint_dtype = "q6_k"} : tensor<16x256xi6, #tfm.block_quant<q6_k>>
tfm.weight_decl @up5 {tfm.checkpoint_dtype = "q5_k"} : tensor<16x256xi5, #tfm.block_quant<q5_k>>
tfm.weight_decl @expert {tfm.checkpoint_dtype = "mxfp4"} : tensor<16x64xi4, #tfm.block_quant<mxfp4>>
func.func @narrow_weights() -> (tensor<64x32xf32>, tensor<32x32xf32>, tensor<16x32xf32>) {
  // CHECK: %[[U:.*]] = tfm.weight @up : tensor<64x32xbf16>
  // CHECK: tfm.dequantize %[[U]] : tensor<64x32xbf16> -> tensor<64x32xf32>
  %u = tfm.weight @up : tensor<64x32xbf16>
  %uf = tfm.dequantize %u : tensor<64x32xbf16> -> tensor<64x32xf32>
  // CHECK: %[[Q:.*]] = tfm.weight @q : tensor<32x32xi8, #tfm.block_quant<q8_0>>
  // CHECK: tfm.dequantize %[[Q]] : tensor<32x32xi8, #tfm.block_quant<q8_0>> -> tensor<32x32xf32>
  %q = tfm.weight @q : tensor<32x32xi8, #tfm.block_quant<q8_0>>
  %qf = tfm.dequantize %q : tensor<32x32xi8, #tfm.block_quant<q8_0>> -> tensor<32x32xf32>
  // CHECK: tfm.dequantize %{{.*}} : tensor<16x32xi4, #tfm.block_quant<q4_0>> -> tensor<16x32xf32>
  %k = tfm.weight @k : tensor<16x32xi4, #tfm.block_quant<q4_0>>
  %kf = tfm.dequantize %k : tensor<16x32xi4, #tfm.block_quant<q4_0>> -> tensor<16x32xf32>
  return %uf, %qf, %kf : tensor<64x32xf32>, tensor<32x32xf32>, tensor<16x32xf32>
}

// -----

// What a module says about itself: the model, and each entry point's
// arguments and results.
// CHECK: module attributes {tfm.model = #tfm.model<family = "llama", vocab_size = 512, max_context = 256, bos_token = 1, eos_token = 2, add_bos = true, tokenizer = "/m/tokenizer.model", hidden_size = 64, num_layers = 5, num_heads = 8, num_kv_heads = 4>}
// CHECK-LABEL: func.func private @decode
// CHECK-SAME: tensor<1xi32> {tfm.input = #tfm.input<token_ids>}
// CHECK-SAME: index {tfm.input = #tfm.input<start_position>}
// CHECK-SAME: index {tfm.input = #tfm.input<cache_slot>}
// CHECK-SAME: tensor<5x2x256x4x8xf32> {tfm.cache = #tfm.cache<self_attention, window = 4>}
// CHECK-SAME: -> (tensor<1x512xf32> {tfm.output = #tfm.output<logits>})
// CHECK-LABEL: func.func private @encode
// CHECK-SAME: tensor<?x80xf32> {tfm.input = #tfm.input<features>}
// CHECK-SAME: tensor<2x2x16x4x8xf32> {tfm.cache = #tfm.cache<cross_attention>}
// CHECK-SAME: -> (tensor<?x64xf32> {tfm.output = #tfm.output<hidden_states>}, tensor<64xf32> {tfm.output = #tfm.output<embedding>})
// CHECK-LABEL: func.func private @decode_batch
// CHECK-SAME: tensor<?x3x2x256x4x8xf32> {tfm.cache = #tfm.cache<self_attention>}
// CHECK-SAME: tensor<?x2x2x4x4x8xf32> {tfm.cache = #tfm.cache<self_attention_rings, window = 4>}
// CHECK-SAME: tensor<?x1200xf32> {tfm.cache = #tfm.cache<recurrent_state>}
// CHECK-LABEL: func.func private @prefill
// CHECK-SAME: tensor<1200xf32> {tfm.cache = #tfm.cache<recurrent_state>}
module attributes {tfm.model = #tfm.model<family = "llama", vocab_size = 512, max_context = 256, bos_token = 1, eos_token = 2, add_bos = true, tokenizer = "/m/tokenizer.model", hidden_size = 64, num_layers = 5, num_heads = 8, num_kv_heads = 4>} {
  func.func private @decode(tensor<1xi32> {tfm.input = #tfm.input<token_ids>}, index {tfm.input = #tfm.input<start_position>}, index {tfm.input = #tfm.input<cache_slot>}, tensor<5x2x256x4x8xf32> {tfm.cache = #tfm.cache<self_attention, window = 4>}) -> (tensor<1x512xf32> {tfm.output = #tfm.output<logits>})
  func.func private @encode(tensor<?x80xf32> {tfm.input = #tfm.input<features>}, tensor<2x2x16x4x8xf32> {tfm.cache = #tfm.cache<cross_attention>}) -> (tensor<?x64xf32> {tfm.output = #tfm.output<hidden_states>}, tensor<64xf32> {tfm.output = #tfm.output<embedding>})
  func.func private @decode_batch(tensor<?xi32> {tfm.input = #tfm.input<token_ids>}, tensor<?xi32> {tfm.input = #tfm.input<positions>}, tensor<?xi32> {tfm.input = #tfm.input<cache_sequences>}, tensor<?x3x2x256x4x8xf32> {tfm.cache = #tfm.cache<self_attention>}, tensor<?x2x2x4x4x8xf32> {tfm.cache = #tfm.cache<self_attention_rings, window = 4>}, tensor<?x1200xf32> {tfm.cache = #tfm.cache<recurrent_state>}) -> (tensor<?x512xf32> {tfm.output = #tfm.output<logits>})
  func.func private @prefill(tensor<?xi32> {tfm.input = #tfm.input<token_ids>}, index {tfm.input = #tfm.input<start_position>}, index {tfm.input = #tfm.input<cache_slot>}, tensor<5x2x256x4x8xf32> {tfm.cache = #tfm.cache<self_attention>}, tensor<1200xf32> {tfm.cache = #tfm.cache<recurrent_state>}) -> (tensor<1x512xf32> {tfm.output = #tfm.output<logits>})
}

// -----

// Defaults are left out.
// CHECK: module attributes {tfm.model = #tfm.model<family = "gpt2", vocab_size = 50257, max_context = 1024>}
module attributes {tfm.model = #tfm.model<family = "gpt2", vocab_size = 50257, max_context = 1024>} {
}

// -----

// CHECK-LABEL: func.func @position_ids
// CHECK-SAME: (%[[TOK:.*]]: tensor<?xi32>, %[[START:.*]]: index)
func.func @position_ids(%tokens: tensor<?xi32>, %start: index) -> (tensor<?xi32>, tensor<?xi32>, tensor<?xi32>) {
  // CHECK: tfm.position_ids %[[TOK]] : tensor<?xi32> -> tensor<?xi32>
  %p = tfm.position_ids %tokens : tensor<?xi32> -> tensor<?xi32>
  // CHECK: tfm.position_ids %[[TOK]] offset %[[START]] : tensor<?xi32> -> tensor<?xi32>
  %q = tfm.position_ids %tokens offset %start : tensor<?xi32> -> tensor<?xi32>
  // CHECK: tfm.position_ids %[[TOK]] {padding_id = 1 : i64} : tensor<?xi32> -> tensor<?xi32>
  %r = tfm.position_ids %tokens {padding_id = 1 : i64} : tensor<?xi32> -> tensor<?xi32>
  return %p, %q, %r : tensor<?xi32>, tensor<?xi32>, tensor<?xi32>
}

// -----

// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[T:.*]]: tensor<512x64xf32>, %[[IDS:.*]]: tensor<?xi32>)
func.func @embedding(%table: tensor<512x64xf32>, %ids: tensor<?xi32>) -> tensor<?x64xf32> {
  // CHECK: tfm.embedding %[[T]][%[[IDS]]] : tensor<512x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  %x = tfm.embedding %table[%ids] : tensor<512x64xf32>, tensor<?xi32> -> tensor<?x64xf32>
  return %x : tensor<?x64xf32>
}

// -----

// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[X:.*]]: tensor<?x64xf32>, %[[W:.*]]: tensor<128x64xf32>, %[[B:.*]]: tensor<128xf32>, %[[H:.*]]: tensor<?x8x16xf32>)
tfm.weight_decl @wo : tensor<128x128xf32>
func.func @linear(%x: tensor<?x64xf32>, %w: tensor<128x64xf32>, %b: tensor<128xf32>, %heads: tensor<?x8x16xf32>)
    -> (tensor<?x128xf32>, tensor<?x8x16xf32>, tensor<?x128xf32>) {
  // CHECK: tfm.linear %[[X]], %[[W]] bias %[[B]] : (tensor<?x64xf32>, tensor<128x64xf32>, tensor<128xf32>) -> tensor<?x128xf32>
  %y = tfm.linear %x, %w bias %b : (tensor<?x64xf32>, tensor<128x64xf32>, tensor<128xf32>) -> tensor<?x128xf32>
  // CHECK: tfm.linear %[[X]], %[[W]] : (tensor<?x64xf32>, tensor<128x64xf32>) -> tensor<?x8x16xf32>
  %split = tfm.linear %x, %w : (tensor<?x64xf32>, tensor<128x64xf32>) -> tensor<?x8x16xf32>
  %wo = tfm.weight @wo : tensor<128x128xf32>
  // CHECK: tfm.linear %[[H]], %{{.*}} : (tensor<?x8x16xf32>, tensor<128x128xf32>) -> tensor<?x128xf32>
  %merged = tfm.linear %heads, %wo : (tensor<?x8x16xf32>, tensor<128x128xf32>) -> tensor<?x128xf32>
  return %y, %split, %merged : tensor<?x128xf32>, tensor<?x8x16xf32>, tensor<?x128xf32>
}

// -----

// CHECK-LABEL: func.func @norms
// CHECK-SAME: (%[[X:.*]]: tensor<?x64xf32>, %[[G:.*]]: tensor<64xf32>, %[[B:.*]]: tensor<64xf32>)
func.func @norms(%x: tensor<?x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>)
    -> (tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) {
  // CHECK: tfm.layer_norm %[[X]], %[[G]], %[[B]] {epsilon = 9.99999974E-6 : f32} : (tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %ln = tfm.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f32} : (tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  // CHECK: tfm.layer_norm %[[X]], %[[G]] {epsilon = 9.99999974E-6 : f32} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %ln2 = tfm.layer_norm %x, %g {epsilon = 1.0e-5 : f32} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  // CHECK: tfm.channel_norm %[[X]], %[[G]], %[[B]] {epsilon = 9.99999974E-6 : f32} : (tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %cn = tfm.channel_norm %x, %g, %b {epsilon = 1.0e-5 : f32} : (tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  // CHECK: tfm.channel_norm %[[X]] {epsilon = 1.000000e-07 : f32} : (tensor<?x64xf32>) -> tensor<?x64xf32>
  %cn2 = tfm.channel_norm %x {epsilon = 1.0e-7 : f32} : (tensor<?x64xf32>) -> tensor<?x64xf32>
  // CHECK: tfm.rms_norm %[[X]], %[[G]] {epsilon = 9.99999974E-6 : f32} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %rms = tfm.rms_norm %x, %g {epsilon = 1.0e-5 : f32} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  return %ln, %ln2, %rms : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// The fused residual add + norm ops of tfm-fuse-norm: two results, the sum
// (for the next residual) and its norm.
// CHECK-LABEL: func.func @add_norms
// CHECK-SAME: (%[[X:.*]]: tensor<?x64xf32>, %[[Y:.*]]: tensor<?x64xf32>, %[[G:.*]]: tensor<64xf32>, %[[B:.*]]: tensor<64xf32>)
func.func @add_norms(%x: tensor<?x64xf32>, %y: tensor<?x64xf32>, %g: tensor<64xf32>, %b: tensor<64xf32>)
    -> (tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>) {
  // CHECK: %[[S1:.*]], %[[N1:.*]] = tfm.add_layer_norm %[[X]], %[[Y]], %[[G]], %[[B]] {epsilon = 9.99999974E-6 : f32} : tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>
  %s1, %n1 = tfm.add_layer_norm %x, %y, %g, %b {epsilon = 1.0e-5 : f32} : tensor<?x64xf32>, tensor<64xf32>, tensor<64xf32>
  // CHECK: %[[S2:.*]], %[[N2:.*]] = tfm.add_layer_norm %[[S1]], %[[Y]], %[[G]] {epsilon = 0.000000e+00 : f32} : tensor<?x64xf32>, tensor<64xf32>
  %s2, %n2 = tfm.add_layer_norm %s1, %y, %g {epsilon = 0.0 : f32} : tensor<?x64xf32>, tensor<64xf32>
  // CHECK: %[[S3:.*]], %[[N3:.*]] = tfm.add_rms_norm %[[S2]], %[[N1]], %[[G]] {epsilon = 9.99999997E-7 : f32} : tensor<?x64xf32>, tensor<64xf32>
  %s3, %n3 = tfm.add_rms_norm %s2, %n1, %g {epsilon = 1.0e-6 : f32} : tensor<?x64xf32>, tensor<64xf32>
  // CHECK: return %[[S1]], %[[N1]], %[[S2]], %[[N2]], %[[S3]], %[[N3]]
  return %s1, %n1, %s2, %n2, %s3, %n3 : tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// CHECK-LABEL: func.func @elementwise
// CHECK-SAME: (%[[A:.*]]: tensor<?x64xf32>, %[[B:.*]]: tensor<?x64xf32>)
func.func @elementwise(%a: tensor<?x64xf32>, %b: tensor<?x64xf32>) -> tensor<?x64xf32> {
  // CHECK: %[[G:.*]] = tfm.activation gelu %[[A]] : tensor<?x64xf32>
  // CHECK: %[[GT:.*]] = tfm.activation gelu_tanh %[[G]] : tensor<?x64xf32>
  // CHECK: %[[R:.*]] = tfm.activation relu %[[GT]] : tensor<?x64xf32>
  // CHECK: %[[S:.*]] = tfm.activation silu %[[R]] : tensor<?x64xf32>
  // CHECK: %[[SUM:.*]] = tfm.add %[[S]], %[[B]] : tensor<?x64xf32>
  // CHECK: tfm.mul %[[SUM]], %[[B]] : tensor<?x64xf32>
  %0 = tfm.activation gelu %a : tensor<?x64xf32>
  %1 = tfm.activation gelu_tanh %0 : tensor<?x64xf32>
  %2 = tfm.activation relu %1 : tensor<?x64xf32>
  %3 = tfm.activation silu %2 : tensor<?x64xf32>
  %4 = tfm.add %3, %b : tensor<?x64xf32>
  %5 = tfm.mul %4, %b : tensor<?x64xf32>
  return %5 : tensor<?x64xf32>
}

// -----

// CHECK-LABEL: func.func @positions
// CHECK-SAME: (%[[Q:.*]]: tensor<?x8x16xf32>, %[[P:.*]]: tensor<?xi32>)
func.func @positions(%q: tensor<?x8x16xf32>, %pos: tensor<?xi32>)
    -> (tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x64xf32>, tensor<?x64xf32>) {
  // CHECK: tfm.rope interleaved %[[Q]], %[[P]] {theta = 1.000000e+04 : f32} : tensor<?x8x16xf32>, tensor<?xi32>
  %a = tfm.rope interleaved %q, %pos {theta = 1.0e4 : f32} : tensor<?x8x16xf32>, tensor<?xi32>
  // CHECK: tfm.rope rotate_half %[[Q]], %[[P]] {theta = 5.000000e+05 : f32} : tensor<?x8x16xf32>, tensor<?xi32>
  %b = tfm.rope rotate_half %q, %pos {theta = 5.0e5 : f32} : tensor<?x8x16xf32>, tensor<?xi32>
  // CHECK: tfm.sinusoidal_position interleaved %[[P]] {base = 1.000000e+04 : f32} : tensor<?xi32> -> tensor<?x64xf32>
  %c = tfm.sinusoidal_position interleaved %pos {base = 1.0e4 : f32} : tensor<?xi32> -> tensor<?x64xf32>
  // CHECK: tfm.sinusoidal_position concat %[[P]] {base = 1.000000e+04 : f32} : tensor<?xi32> -> tensor<?x64xf32>
  %d = tfm.sinusoidal_position concat %pos {base = 1.0e4 : f32} : tensor<?xi32> -> tensor<?x64xf32>
  return %a, %b, %c, %d : tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// CHECK-LABEL: func.func @attention
// CHECK-SAME: (%[[Q:.*]]: tensor<?x8x16xf32>, %[[K:.*]]: tensor<?x2x16xf32>, %[[V:.*]]: tensor<?x2x16xf32>, %[[B:.*]]: tensor<8x?x?xf32>)
func.func @attention(%q: tensor<?x8x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>, %bias: tensor<8x?x?xf32>)
    -> (tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x16xf32>) {
  // CHECK: tfm.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 2.500000e-01 : f32} : (tensor<?x8x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>) -> tensor<?x8x16xf32>
  %a = tfm.attention %q, %k, %v {causal, scale = 0.25 : f32} : (tensor<?x8x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>) -> tensor<?x8x16xf32>
  // CHECK: tfm.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 2.500000e-01 : f32, window = 4 : i64}
  %b = tfm.attention %q, %k, %v {causal, scale = 0.25 : f32, window = 4 : i64} : (tensor<?x8x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>) -> tensor<?x8x16xf32>
  // CHECK: tfm.attention %[[Q]], %[[K]], %[[V]] bias %[[B]] {scale = 1.000000e+00 : f32} : (tensor<?x8x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<8x?x?xf32>) -> tensor<?x8x16xf32>
  %c = tfm.attention %q, %k, %v bias %bias {scale = 1.0 : f32} : (tensor<?x8x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<8x?x?xf32>) -> tensor<?x8x16xf32>
  return %a, %b, %c : tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x16xf32>
}

// -----

// CHECK-LABEL: func.func @attention_weights
// CHECK: tfm.attention_weights %{{.*}}, %{{.*}} {heads = array<i64: 2, 0>, scale = 2.500000e-01 : f32} : (tensor<?x8x16xf32>, tensor<1500x2x16xf32>) -> tensor<?x2x1500xf32>
func.func @attention_weights(%q: tensor<?x8x16xf32>, %k: tensor<1500x2x16xf32>) -> tensor<?x2x1500xf32> {
  %w = tfm.attention_weights %q, %k {heads = array<i64: 2, 0>, scale = 0.25 : f32} : (tensor<?x8x16xf32>, tensor<1500x2x16xf32>) -> tensor<?x2x1500xf32>
  return %w : tensor<?x2x1500xf32>
}

// -----

// CHECK-LABEL: func.func @relative_attention
// CHECK-SAME: (%[[Q:.*]]: tensor<?x8x16xf32>, %[[T:.*]]: tensor<32x8xf32>)
func.func @relative_attention(%q: tensor<?x8x16xf32>, %table: tensor<32x8xf32>) -> tensor<?x8x16xf32> {
  // CHECK: tfm.attention %[[Q]], %[[Q]], %[[Q]] relative_bias %[[T]] {causal, max_distance = 128 : i64, scale = 1.000000e+00 : f32} : (tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<32x8xf32>) -> tensor<?x8x16xf32>
  %a = tfm.attention %q, %q, %q relative_bias %table {causal, max_distance = 128 : i64, scale = 1.0 : f32} : (tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<32x8xf32>) -> tensor<?x8x16xf32>
  return %a : tensor<?x8x16xf32>
}

// -----

// CHECK-LABEL: func.func @kv_cache
// CHECK-SAME: (%[[C:.*]]: tensor<3x2x16x2x4xf32>, %[[K:.*]]: tensor<?x2x4xf32>, %[[V:.*]]: tensor<?x2x4xf32>, %[[P:.*]]: index)
func.func @kv_cache(%cache: tensor<3x2x16x2x4xf32>, %k: tensor<?x2x4xf32>, %v: tensor<?x2x4xf32>, %pos: index)
    -> (tensor<3x2x16x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>) {
  // CHECK: %[[C1:.*]] = tfm.kv_cache_append %[[C]][1], %[[K]], %[[V]] at %[[P]] : tensor<3x2x16x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>
  %c1 = tfm.kv_cache_append %cache[1], %k, %v at %pos : tensor<3x2x16x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>
  // CHECK: tfm.kv_cache_read %[[C1]][1] length %[[P]] : tensor<3x2x16x2x4xf32> -> tensor<?x2x4xf32>, tensor<?x2x4xf32>
  %rk, %rv = tfm.kv_cache_read %c1[1] length %pos : tensor<3x2x16x2x4xf32> -> tensor<?x2x4xf32>, tensor<?x2x4xf32>
  return %c1, %rk, %rv : tensor<3x2x16x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>
}

// -----

// A latent cache (MLA): one plane a layer, its rows appended and read
// without values.
// CHECK-LABEL: func.func @latent_cache
func.func @latent_cache(%cache: tensor<3x1x16x1x6xf32>, %rows: tensor<?x1x6xf32>, %pos: index)
    -> (tensor<3x1x16x1x6xf32>, tensor<?x1x6xf32>) {
  // CHECK: %[[C1:.*]] = tfm.kv_cache_append %{{.*}}[2], %{{.*}} at %{{.*}} : tensor<3x1x16x1x6xf32>, tensor<?x1x6xf32>
  %c1 = tfm.kv_cache_append %cache[2], %rows at %pos : tensor<3x1x16x1x6xf32>, tensor<?x1x6xf32>
  // CHECK: tfm.kv_cache_read %[[C1]][2] length %{{.*}} : tensor<3x1x16x1x6xf32> -> tensor<?x1x6xf32>
  %seen = tfm.kv_cache_read %c1[2] length %pos : tensor<3x1x16x1x6xf32> -> tensor<?x1x6xf32>
  return %c1, %seen : tensor<3x1x16x1x6xf32>, tensor<?x1x6xf32>
}

// -----

// A windowed layer's ring: rows [8, 12) of plane 2, then what its new
// positions see.
// CHECK-LABEL: func.func @kv_ring
func.func @kv_ring(%cache: tensor<3x2x16x2x4xf32>, %k: tensor<?x2x4xf32>, %first: index, %pos: index)
    -> (tensor<3x2x16x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>) {
  // CHECK: tfm.kv_ring_read %{{.*}}[2] rows 8 ring 4 positions %{{.*}} to %{{.*}} then %{{.*}}, %{{.*}} : tensor<3x2x16x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32> -> tensor<?x2x4xf32>, tensor<?x2x4xf32>
  %rk, %rv = tfm.kv_ring_read %cache[2] rows 8 ring 4 positions %first to %pos then %k, %k : tensor<3x2x16x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32> -> tensor<?x2x4xf32>, tensor<?x2x4xf32>
  // CHECK: tfm.kv_ring_append %{{.*}}[2] rows 8 ring 4, %{{.*}}, %{{.*}} at %{{.*}} : tensor<3x2x16x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>
  %c1 = tfm.kv_ring_append %cache[2] rows 8 ring 4, %k, %k at %pos : tensor<3x2x16x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>
  return %c1, %rk, %rv : tensor<3x2x16x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>
}

// -----

// An int8 cache: rows of 4 codes and their scale's 4 bytes.
// CHECK-LABEL: func.func @kv_cache_int8
func.func @kv_cache_int8(%cache: tensor<3x2x16x2x8xi8>, %k: tensor<?x2x4xf32>, %v: tensor<?x2x4xf32>, %pos: index)
    -> (tensor<3x2x16x2x8xi8>, tensor<?x2x4xf32>) {
  // CHECK: %[[QK:.*]] = tfm.quantize_rows %{{.*}} : tensor<?x2x4xf32> -> tensor<?x2x8xi8>
  %qk = tfm.quantize_rows %k : tensor<?x2x4xf32> -> tensor<?x2x8xi8>
  %qv = tfm.quantize_rows %v : tensor<?x2x4xf32> -> tensor<?x2x8xi8>
  // CHECK: tfm.kv_cache_append %{{.*}}[1], %[[QK]], %{{.*}} at %{{.*}} : tensor<3x2x16x2x8xi8>, tensor<?x2x8xi8>, tensor<?x2x8xi8>
  %c1 = tfm.kv_cache_append %cache[1], %qk, %qv at %pos : tensor<3x2x16x2x8xi8>, tensor<?x2x8xi8>, tensor<?x2x8xi8>
  %rk, %rv = tfm.kv_cache_read %c1[1] length %pos : tensor<3x2x16x2x8xi8> -> tensor<?x2x8xi8>, tensor<?x2x8xi8>
  // CHECK: tfm.dequantize_rows %{{.*}} : tensor<?x2x8xi8> -> tensor<?x2x4xf32>
  %k1 = tfm.dequantize_rows %rk : tensor<?x2x8xi8> -> tensor<?x2x4xf32>
  return %c1, %k1 : tensor<3x2x16x2x8xi8>, tensor<?x2x4xf32>
}

// -----

// A bf16 cache: rows rounded to bf16 on the way in, widened on the way out.
// CHECK-LABEL: func.func @kv_cache_bf16
func.func @kv_cache_bf16(%cache: tensor<3x2x16x2x4xbf16>, %k: tensor<?x2x4xf32>, %pos: index)
    -> (tensor<3x2x16x2x4xbf16>, tensor<?x2x4xf32>) {
  // CHECK: tfm.quantize_rows %{{.*}} : tensor<?x2x4xf32> -> tensor<?x2x4xbf16>
  %qk = tfm.quantize_rows %k : tensor<?x2x4xf32> -> tensor<?x2x4xbf16>
  %c1 = tfm.kv_cache_append %cache[2], %qk, %qk at %pos : tensor<3x2x16x2x4xbf16>, tensor<?x2x4xbf16>, tensor<?x2x4xbf16>
  %rk, %rv = tfm.kv_cache_read %c1[2] length %pos : tensor<3x2x16x2x4xbf16> -> tensor<?x2x4xbf16>, tensor<?x2x4xbf16>
  // CHECK: tfm.dequantize_rows %{{.*}} : tensor<?x2x4xbf16> -> tensor<?x2x4xf32>
  %k1 = tfm.dequantize_rows %rk : tensor<?x2x4xbf16> -> tensor<?x2x4xf32>
  return %c1, %k1 : tensor<3x2x16x2x4xbf16>, tensor<?x2x4xf32>
}

// -----

// Partial rotary, explicit (scaled) frequencies, scaled embeddings.
// CHECK-LABEL: func.func @rope_variants
func.func @rope_variants(%x: tensor<?x2x8xf32>, %p: tensor<?xi32>, %t: tensor<16x8xf32>) -> (tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x8xf32>) {
  // CHECK: tfm.rope rotate_half %{{.*}}, %{{.*}} {rotary_dim = 4 : i64, theta = 1.000000e+04 : f32}
  %a = tfm.rope rotate_half %x, %p {theta = 1.0e4 : f32, rotary_dim = 4 : i64} : tensor<?x2x8xf32>, tensor<?xi32>
  // CHECK: tfm.rope interleaved %{{.*}}, %{{.*}} {frequencies = array<f32: 1.000000e+00, 2.500000e-01, 1.250000e-01, 6.250000e-02>, theta = 1.000000e+04 : f32}
  %b = tfm.rope interleaved %x, %p {theta = 1.0e4 : f32, frequencies = array<f32: 1.0, 0.25, 0.125, 0.0625>} : tensor<?x2x8xf32>, tensor<?xi32>
  // CHECK: tfm.embedding %{{.*}}[%{{.*}}] {scale = 2.000000e+00 : f32}
  %e = tfm.embedding %t[%p] {scale = 2.0 : f32} : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  return %a, %b, %e : tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x8xf32>
}

// -----

// Sections: a (t, h, w) position per row, each over its rotated pairs.
// CHECK-LABEL: func.func @rope_sections
// CHECK: tfm.rope rotate_half %{{.*}}, %{{.*}} {sections = array<i64: 1, 2, 1>, theta = 1.000000e+04 : f32} : tensor<?x2x8xf32>, tensor<?x3xi32>
func.func @rope_sections(%x: tensor<?x2x8xf32>, %thw: tensor<?x3xi32>) -> tensor<?x2x8xf32> {
  %a = tfm.rope rotate_half %x, %thw {theta = 1.0e4 : f32, sections = array<i64: 1, 2, 1>} : tensor<?x2x8xf32>, tensor<?x3xi32>
  return %a : tensor<?x2x8xf32>
}

// -----

// CHECK-LABEL: func.func @pool
func.func @pool(%h: tensor<?x16xf32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) {
  // CHECK: tfm.pool mean %{{.*}} {normalize} : tensor<?x16xf32> -> tensor<16xf32>
  %a = tfm.pool mean %h {normalize} : tensor<?x16xf32> -> tensor<16xf32>
  // CHECK: tfm.pool cls %{{.*}} : tensor<?x16xf32> -> tensor<16xf32>
  %b = tfm.pool cls %h : tensor<?x16xf32> -> tensor<16xf32>
  // CHECK: tfm.pool max %{{.*}} : tensor<?x16xf32> -> tensor<16xf32>
  %c = tfm.pool max %h : tensor<?x16xf32> -> tensor<16xf32>
  return %a, %b, %c : tensor<16xf32>, tensor<16xf32>, tensor<16xf32>
}

// -----

// CLIP's end-of-text pooling: at a token id's first position, or (no
// token_id) at the largest id's; quick_gelu.
// CHECK-LABEL: func.func @token_row
func.func @token_row(%h: tensor<?x16xf32>, %ids: tensor<?xi32>) -> (tensor<16xf32>, tensor<16xf32>, tensor<?x16xf32>) {
  // CHECK: tfm.token_row %{{.*}} at %{{.*}} {token_id = 49407 : i64} : tensor<?x16xf32>, tensor<?xi32> -> tensor<16xf32>
  %a = tfm.token_row %h at %ids {token_id = 49407} : tensor<?x16xf32>, tensor<?xi32> -> tensor<16xf32>
  // CHECK: tfm.token_row %{{.*}} at %{{.*}} : tensor<?x16xf32>, tensor<?xi32> -> tensor<16xf32>
  %b = tfm.token_row %h at %ids : tensor<?x16xf32>, tensor<?xi32> -> tensor<16xf32>
  // CHECK: tfm.activation quick_gelu
  %c = tfm.activation quick_gelu %h : tensor<?x16xf32>
  return %a, %b, %c : tensor<16xf32>, tensor<16xf32>, tensor<?x16xf32>
}

// -----

// Packed sequences (tfm-pack-sequences): the ops that see sequence
// boundaries take the lengths.
// CHECK-LABEL: func.func @packed
// CHECK-SAME: (%[[TOK:.*]]: tensor<?xi32>, %[[N:.*]]: tensor<?xi32>, %[[H:.*]]: tensor<?x16xf32>, %[[Q:.*]]: tensor<?x2x8xf32>)
func.func @packed(%tokens: tensor<?xi32>, %lengths: tensor<?xi32>, %h: tensor<?x16xf32>, %q: tensor<?x2x8xf32>) -> (tensor<?xi32>, tensor<?x16xf32>, tensor<?x2x8xf32>) {
  // CHECK: tfm.position_ids %[[TOK]] lengths %[[N]] : tensor<?xi32> {padding_id = 1 : i64} : tensor<?xi32> -> tensor<?xi32>
  %p = tfm.position_ids %tokens lengths %lengths : tensor<?xi32> {padding_id = 1 : i64} : tensor<?xi32> -> tensor<?xi32>
  // CHECK: tfm.pool mean %[[H]] lengths %[[N]] : tensor<?xi32> {normalize} : tensor<?x16xf32> -> tensor<?x16xf32>
  %e = tfm.pool mean %h lengths %lengths : tensor<?xi32> {normalize} : tensor<?x16xf32> -> tensor<?x16xf32>
  // CHECK: tfm.attention %[[Q]], %[[Q]], %[[Q]] lengths %[[N]] {scale = 5.000000e-01 : f32} : (tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?xi32>) -> tensor<?x2x8xf32>
  %a = tfm.attention %q, %q, %q lengths %lengths {scale = 0.5 : f32} : (tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?xi32>) -> tensor<?x2x8xf32>
  return %p, %e, %a : tensor<?xi32>, tensor<?x16xf32>, tensor<?x2x8xf32>
}

// -----

// CHECK-LABEL: func.func @clamp
func.func @clamp(%x: tensor<?x4x16xf32>) -> tensor<?x4x16xf32> {
  // CHECK: tfm.clamp %{{.*}} {max = 8.000000e+00 : f32, min = -8.000000e+00 : f32} : tensor<?x4x16xf32>
  %y = tfm.clamp %x {max = 8.0 : f32, min = -8.0 : f32} : tensor<?x4x16xf32>
  return %y : tensor<?x4x16xf32>
}

// CHECK-LABEL: func.func @patches
func.func @patches(%image: tensor<3x32x48xf32>) -> tensor<24x192xf32> {
  // CHECK: tfm.patches %{{.*}} {patch = 8 : i64} : tensor<3x32x48xf32> -> tensor<24x192xf32>
  %p = tfm.patches %image {patch = 8 : i64} : tensor<3x32x48xf32> -> tensor<24x192xf32>
  // CHECK: tfm.patches %{{.*}} {patch = 8 : i64, strides = array<i64: 4, 6>} : tensor<3x32x48xf32> -> tensor<49x192xf32>
  %s = tfm.patches %image {patch = 8 : i64, strides = array<i64: 4, 6>} : tensor<3x32x48xf32> -> tensor<49x192xf32>
  // CHECK: tfm.gather_rows %{{.*}} {rows = array<i64: 3, 0, 1>} : tensor<24x192xf32> -> tensor<3x192xf32>
  %g = tfm.gather_rows %p {rows = array<i64: 3, 0, 1>} : tensor<24x192xf32> -> tensor<3x192xf32>
  return %p : tensor<24x192xf32>
}

// CHECK-LABEL: func.func @windows
func.func @windows(%mel: tensor<80x?xf32>, %x: tensor<?x32xf32>) -> (tensor<?x240xf32>, tensor<?x96xf32>) {
  // CHECK: tfm.windows %{{.*}} {channels_first, kernel = 3 : i64, padding = 1 : i64, stride = 1 : i64} : tensor<80x?xf32> -> tensor<?x240xf32>
  %a = tfm.windows %mel {channels_first, kernel = 3 : i64, padding = 1 : i64, stride = 1 : i64} : tensor<80x?xf32> -> tensor<?x240xf32>
  // CHECK: tfm.windows %{{.*}} {kernel = 3 : i64, padding = 1 : i64, stride = 2 : i64} : tensor<?x32xf32> -> tensor<?x96xf32>
  %b = tfm.windows %x {kernel = 3 : i64, padding = 1 : i64, stride = 2 : i64} : tensor<?x32xf32> -> tensor<?x96xf32>
  return %a, %b : tensor<?x240xf32>, tensor<?x96xf32>
}

// -----

// CHECK-LABEL: func.func @window_attention
func.func @window_attention(%q: tensor<32x2x8xf32>, %bias: tensor<2x2x16x16xf32>) -> tensor<32x2x8xf32> {
  // CHECK: tfm.window_attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {scale = 3.535530e-01 : f32, window = 16 : i64} : (tensor<32x2x8xf32>, tensor<32x2x8xf32>, tensor<32x2x8xf32>, tensor<2x2x16x16xf32>) -> tensor<32x2x8xf32>
  %a = tfm.window_attention %q, %q, %q, %bias {scale = 0.353553 : f32, window = 16 : i64} : (tensor<32x2x8xf32>, tensor<32x2x8xf32>, tensor<32x2x8xf32>, tensor<2x2x16x16xf32>) -> tensor<32x2x8xf32>
  return %a : tensor<32x2x8xf32>
}

// -----

// gpt-oss's sinks and experts: a logit per head, the experts' biases and
// the clamped SwiGLU.
// CHECK-LABEL: func.func @gpt_oss
func.func @gpt_oss(%q: tensor<?x8x16xf32>, %k: tensor<?x2x16xf32>, %sinks: tensor<8xf32>, %x: tensor<?x8xf32>, %logits: tensor<?x2xf32>, %g: tensor<16x8xf32>, %d: tensor<8x16xf32>, %bg: tensor<16xf32>, %bd: tensor<8xf32>) -> (tensor<?x8x16xf32>, tensor<?x8xf32>) {
  // CHECK: tfm.attention %{{.*}}, %{{.*}}, %{{.*}} sinks %{{.*}} {causal, scale = 2.500000e-01 : f32, window = 128 : i64} : (tensor<?x8x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<8xf32>) -> tensor<?x8x16xf32>
  %a = tfm.attention %q, %k, %k sinks %sinks {causal, scale = 0.25 : f32, window = 128 : i64} : (tensor<?x8x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<8xf32>) -> tensor<?x8x16xf32>
  // CHECK: tfm.moe %{{.*}}, %{{.*}}, [%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] biases[%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] {activation = #tfm<activation_kind quick_gelu>, normalize, swiglu_limit = 7.000000e+00 : f32, top_k = 2 : i64}
  %y = tfm.moe %x, %logits, [%g, %g, %d, %g, %g, %d] biases [%bg, %bg, %bd, %bg, %bg, %bd] {activation = #tfm<activation_kind quick_gelu>, normalize, swiglu_limit = 7.0 : f32, top_k = 2 : i64} : (tensor<?x8xf32>, tensor<?x2xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<8xf32>, tensor<16xf32>, tensor<16xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  return %a, %y : tensor<?x8x16xf32>, tensor<?x8xf32>
}

// -----

// A mixture of experts and what tfm-expand-experts makes of it.
// CHECK-LABEL: func.func @experts
func.func @experts(%x: tensor<?x8xf32>, %logits: tensor<?x2xf32>, %g: tensor<16x8xf32>, %d: tensor<8x16xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  // CHECK: tfm.moe %{{.*}}, %{{.*}}, [%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] {activation = #tfm<activation_kind silu>, normalize, top_k = 2 : i64}
  %y = tfm.moe %x, %logits, [%g, %g, %d, %g, %g, %d] {activation = #tfm<activation_kind silu>, normalize, top_k = 2 : i64} : (tensor<?x8xf32>, tensor<?x2xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  // CHECK: tfm.route %{{.*}} {top_k = 2 : i64} : tensor<?x2xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  %w, %e = tfm.route %logits {top_k = 2 : i64} : tensor<?x2xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  // CHECK: tfm.expert_rows %{{.*}}, %{{.*}} {expert = 1 : i64} : tensor<?x2xi32>, tensor<?x2xf32> -> tensor<?xi32>, tensor<?xf32>
  %rows, %scales = tfm.expert_rows %e, %w {expert = 1 : i64} : tensor<?x2xi32>, tensor<?x2xf32> -> tensor<?xi32>, tensor<?xf32>
  // CHECK: tfm.take_rows %{{.*}}[%{{.*}}] : tensor<?x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %t = tfm.take_rows %x[%rows] : tensor<?x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  // CHECK: tfm.scatter_add_rows %{{.*}}, %{{.*}} into %{{.*}}[%{{.*}}] : tensor<?x8xf32>, tensor<?xf32>, tensor<?x8xf32>, tensor<?xi32>
  %s = tfm.scatter_add_rows %t, %scales into %x[%rows] : tensor<?x8xf32>, tensor<?xf32>, tensor<?x8xf32>, tensor<?xi32>
  return %y, %s : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// DeepSeek-V3's routing (sigmoid scores, a selection bias, groups, a routed
// scale, an ungated shared expert) and MLA's per-head projections.
// CHECK-LABEL: func.func @deepseek_experts
func.func @deepseek_experts(%x: tensor<?x8xf32>, %logits: tensor<?x4xf32>, %bias: tensor<4xf32>, %g: tensor<16x8xf32>, %d: tensor<8x16xf32>, %q: tensor<?x2x3xf32>, %wk: tensor<10x3xf32>) -> (tensor<?x8xf32>, tensor<?x2xf32>, tensor<?x2x5xf32>) {
  // CHECK: tfm.moe %{{.*}}, %{{.*}}, [%{{.*}}] shared[%{{.*}}, %{{.*}}, %{{.*}}] selection_bias %{{.*}} {activation = #tfm<activation_kind silu>, groups = 2 : i64, normalize, routed_scale = 2.500000e+00 : f32, scoring = #tfm<router_scoring sigmoid>, top_groups = 1 : i64, top_k = 2 : i64}
  %y = tfm.moe %x, %logits, [%g, %g, %d, %g, %g, %d, %g, %g, %d, %g, %g, %d] shared [%g, %g, %d] selection_bias %bias {activation = #tfm<activation_kind silu>, groups = 2 : i64, normalize, routed_scale = 2.5 : f32, scoring = #tfm<router_scoring sigmoid>, top_groups = 1 : i64, top_k = 2 : i64} : (tensor<?x8xf32>, tensor<?x4xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<4xf32>) -> tensor<?x8xf32>
  // CHECK: tfm.route %{{.*}} selection_bias %{{.*}} {groups = 2 : i64, scoring = #tfm<router_scoring sigmoid>, top_groups = 1 : i64, top_k = 2 : i64} : tensor<?x4xf32>, tensor<4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  %w, %e = tfm.route %logits selection_bias %bias {groups = 2 : i64, scoring = #tfm<router_scoring sigmoid>, top_groups = 1 : i64, top_k = 2 : i64} : tensor<?x4xf32>, tensor<4xf32> -> tensor<?x2xf32>, tensor<?x2xi32>
  // CHECK: tfm.head_linear %{{.*}}, %{{.*}} : (tensor<?x2x3xf32>, tensor<10x3xf32>) -> tensor<?x2x5xf32>
  %h = tfm.head_linear %q, %wk : (tensor<?x2x3xf32>, tensor<10x3xf32>) -> tensor<?x2x5xf32>
  return %y, %w, %h : tensor<?x8xf32>, tensor<?x2xf32>, tensor<?x2x5xf32>
}

// -----

// Gemma 4's per-expert scales on the routed weights, beside a selection
// bias.
// CHECK-LABEL: func.func @expert_scales
func.func @expert_scales(%x: tensor<?x8xf32>, %logits: tensor<?x2xf32>, %bias: tensor<2xf32>, %scales: tensor<2xf32>, %g: tensor<16x8xf32>, %d: tensor<8x16xf32>) -> (tensor<?x8xf32>, tensor<?x1xf32>) {
  // CHECK: tfm.moe %{{.*}}, %{{.*}}, [%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}] expert_scales %{{.*}} {activation = #tfm<activation_kind gelu_tanh>, normalize, top_k = 1 : i64}
  %y = tfm.moe %x, %logits, [%g, %g, %d, %g, %g, %d] expert_scales %scales {activation = #tfm<activation_kind gelu_tanh>, normalize, top_k = 1 : i64} : (tensor<?x8xf32>, tensor<?x2xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<2xf32>) -> tensor<?x8xf32>
  // CHECK: tfm.route %{{.*}} selection_bias %{{.*}} expert_scales %{{.*}} {top_k = 1 : i64} : tensor<?x2xf32>, tensor<2xf32> expert_scales tensor<2xf32> -> tensor<?x1xf32>, tensor<?x1xi32>
  %w, %e = tfm.route %logits selection_bias %bias expert_scales %scales {top_k = 1 : i64} : tensor<?x2xf32>, tensor<2xf32> expert_scales tensor<2xf32> -> tensor<?x1xf32>, tensor<?x1xi32>
  return %y, %w : tensor<?x8xf32>, tensor<?x1xf32>
}

// -----

// Gemma 2's soft-caps (attention scores, final logits) and Phi-3's
// LongRoPE frequencies.
// CHECK-LABEL: func.func @softcap_and_long_rope
func.func @softcap_and_long_rope(%x: tensor<?x2x4xf32>, %p: tensor<?xi32>, %l: tensor<?x8xf32>) -> (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x8xf32>) {
  // CHECK: tfm.attention %{{.*}}, %{{.*}}, %{{.*}} {causal, scale = 5.000000e-01 : f32, softcap = 5.000000e+01 : f32}
  %a = tfm.attention %x, %x, %x {causal, scale = 0.5 : f32, softcap = 50.0 : f32} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x2x4xf32>
  // CHECK: tfm.rope rotate_half %{{.*}}, %{{.*}} {frequencies = array<f32: 1.000000e+00, 5.000000e-02>, long_context = 8 : i64, long_frequencies = array<f32: 5.000000e-01, 2.500000e-02>, theta = 1.000000e+04 : f32}
  %r = tfm.rope rotate_half %x, %p {theta = 1.0e4 : f32, frequencies = array<f32: 1.0, 0.05>, long_frequencies = array<f32: 0.5, 0.025>, long_context = 8 : i64} : tensor<?x2x4xf32>, tensor<?xi32>
  // CHECK: tfm.softcap %{{.*}} {cap = 3.000000e+01 : f32} : tensor<?x8xf32>
  %s = tfm.softcap %l {cap = 30.0 : f32} : tensor<?x8xf32>
  return %a, %r, %s : tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x8xf32>
}

// -----

// Gemma 4: the residual stream scaled after a layer (layer_scalar), and
// proportional RoPE, whose pairs past the first quarter do not turn
// (frequency 0).
// CHECK-LABEL: func.func @scale_and_proportional_rope
func.func @scale_and_proportional_rope(%x: tensor<?x8xf32>, %q: tensor<?x2x8xf32>, %p: tensor<?xi32>) -> (tensor<?x8xf32>, tensor<?x2x8xf32>) {
  // CHECK: tfm.scale %{{.*}} {factor = 7.500000e-01 : f32} : tensor<?x8xf32>
  %s = tfm.scale %x {factor = 0.75 : f32} : tensor<?x8xf32>
  // CHECK: tfm.rope rotate_half %{{.*}}, %{{.*}} {frequencies = array<f32: 1.000000e+00, 0.000000e+00, 0.000000e+00, 0.000000e+00>, theta = 1.000000e+06 : f32}
  %r = tfm.rope rotate_half %q, %p {theta = 1.0e6 : f32, frequencies = array<f32: 1.0, 0.0, 0.0, 0.0>} : tensor<?x2x8xf32>, tensor<?xi32>
  return %s, %r : tensor<?x8xf32>, tensor<?x2x8xf32>
}

// -----

// A diffusion UNet's and VAE's feature-map ops ([H, W, C]).
// CHECK-LABEL: func.func @images
func.func @images(%x: tensor<8x8x16xf32>, %w: tensor<32x144xf32>, %b: tensor<32xf32>, %g: tensor<16xf32>, %t: tensor<1xf32>) -> (tensor<4x4x32xf32>, tensor<64x144xf32>, tensor<8x8x16xf32>, tensor<16x16x16xf32>, tensor<1x320xf32>) {
  // CHECK: tfm.conv2d %{{.*}}, %{{.*}} bias %{{.*}} {kernel = 3 : i64, padding = array<i64: 1, 1, 1, 1>, stride = 2 : i64} : (tensor<8x8x16xf32>, tensor<32x144xf32>, tensor<32xf32>) -> tensor<4x4x32xf32>
  %c = tfm.conv2d %x, %w bias %b {kernel = 3 : i64, padding = array<i64: 1, 1, 1, 1>, stride = 2 : i64} : (tensor<8x8x16xf32>, tensor<32x144xf32>, tensor<32xf32>) -> tensor<4x4x32xf32>
  // CHECK: tfm.conv2d %{{.*}}, %{{.*}} {kernel = 3 : i64, padding = array<i64: 0, 0, 1, 1>, stride = 2 : i64} : (tensor<8x8x16xf32>, tensor<32x144xf32>) -> tensor<4x4x32xf32>
  %e = tfm.conv2d %x, %w {kernel = 3 : i64, padding = array<i64: 0, 0, 1, 1>, stride = 2 : i64} : (tensor<8x8x16xf32>, tensor<32x144xf32>) -> tensor<4x4x32xf32>
  // CHECK: tfm.image_windows %{{.*}} {kernel = 3 : i64, padding = array<i64: 1, 1, 1, 1>, stride = 1 : i64} : tensor<8x8x16xf32> -> tensor<64x144xf32>
  %win = tfm.image_windows %x {kernel = 3 : i64, padding = array<i64: 1, 1, 1, 1>, stride = 1 : i64} : tensor<8x8x16xf32> -> tensor<64x144xf32>
  // CHECK: tfm.group_norm %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 9.99999974E-6 : f32, groups = 4 : i64, silu} : (tensor<8x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<8x8x16xf32>
  %n = tfm.group_norm %x, %g, %g {epsilon = 1.0e-5 : f32, groups = 4 : i64, silu} : (tensor<8x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<8x8x16xf32>
  // CHECK: tfm.upsample_nearest %{{.*}} : tensor<8x8x16xf32> -> tensor<16x16x16xf32>
  %u = tfm.upsample_nearest %x : tensor<8x8x16xf32> -> tensor<16x16x16xf32>
  // CHECK: tfm.timestep_embedding %{{.*}} {downscale_freq_shift = 0.000000e+00 : f32, flip_sin_to_cos, max_period = 1.000000e+04 : f32, scale = 1.000000e+00 : f32} : tensor<1xf32> -> tensor<1x320xf32>
  %s = tfm.timestep_embedding %t {downscale_freq_shift = 0.0 : f32, flip_sin_to_cos, max_period = 1.0e4 : f32, scale = 1.0 : f32} : tensor<1xf32> -> tensor<1x320xf32>
  return %c, %win, %n, %u, %s : tensor<4x4x32xf32>, tensor<64x144xf32>, tensor<8x8x16xf32>, tensor<16x16x16xf32>, tensor<1x320xf32>
}

// -----

// The same ops on a batch of feature maps ([N, H, W, C]): a UNet's two
// halves of classifier-free guidance.
// CHECK-LABEL: func.func @image_batch
func.func @image_batch(%x: tensor<2x8x8x16xf32>, %w: tensor<32x144xf32>, %g: tensor<16xf32>) -> (tensor<2x4x4x32xf32>, tensor<128x144xf32>, tensor<2x8x8x16xf32>, tensor<2x16x16x16xf32>) {
  // CHECK: tfm.conv2d %{{.*}}, %{{.*}} {kernel = 3 : i64, padding = array<i64: 1, 1, 1, 1>, stride = 2 : i64} : (tensor<2x8x8x16xf32>, tensor<32x144xf32>) -> tensor<2x4x4x32xf32>
  %c = tfm.conv2d %x, %w {kernel = 3 : i64, padding = array<i64: 1, 1, 1, 1>, stride = 2 : i64} : (tensor<2x8x8x16xf32>, tensor<32x144xf32>) -> tensor<2x4x4x32xf32>
  // CHECK: tfm.image_windows %{{.*}} {kernel = 3 : i64, padding = array<i64: 1, 1, 1, 1>, stride = 1 : i64} : tensor<2x8x8x16xf32> -> tensor<128x144xf32>
  %win = tfm.image_windows %x {kernel = 3 : i64, padding = array<i64: 1, 1, 1, 1>, stride = 1 : i64} : tensor<2x8x8x16xf32> -> tensor<128x144xf32>
  // CHECK: tfm.group_norm %{{.*}}, %{{.*}}, %{{.*}} {epsilon = 9.99999974E-6 : f32, groups = 4 : i64} : (tensor<2x8x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x8x8x16xf32>
  %n = tfm.group_norm %x, %g, %g {epsilon = 1.0e-5 : f32, groups = 4 : i64} : (tensor<2x8x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x8x8x16xf32>
  // CHECK: tfm.upsample_nearest %{{.*}} : tensor<2x8x8x16xf32> -> tensor<2x16x16x16xf32>
  %u = tfm.upsample_nearest %x : tensor<2x8x8x16xf32> -> tensor<2x16x16x16xf32>
  return %c, %win, %n, %u : tensor<2x4x4x32xf32>, tensor<128x144xf32>, tensor<2x8x8x16xf32>, tensor<2x16x16x16xf32>
}

// -----

// Gated DeltaNet's recurrent ops: without a state (@forward), and with a
// carried state and a reset flag; the tiled key-head order.
// CHECK-LABEL: func.func @recurrent_layers
func.func @recurrent_layers(%mix: tensor<?x12xf32>, %w: tensor<12x4xf32>, %s0: tensor<3x12xf32>, %first: i1, %q: tensor<?x2x8xf32>, %v: tensor<?x4x12xf32>, %a: tensor<?x4xf32>, %decay: tensor<4xf32>, %beta: tensor<?x4xf32>, %S0: tensor<4x8x12xf32>) -> (tensor<?x12xf32>, tensor<3x12xf32>, tensor<?x4x12xf32>, tensor<4x8x12xf32>) {
  // CHECK: tfm.causal_conv1d %{{.*}}, %{{.*}} : (tensor<?x12xf32>, tensor<12x4xf32>) -> (tensor<?x12xf32>, tensor<3x12xf32>)
  %y, %s = tfm.causal_conv1d %mix, %w : (tensor<?x12xf32>, tensor<12x4xf32>) -> (tensor<?x12xf32>, tensor<3x12xf32>)
  // CHECK: tfm.causal_conv1d %{{.*}}, %{{.*}} state %{{.*}} reset %{{.*}} : (tensor<?x12xf32>, tensor<12x4xf32>, tensor<3x12xf32>, i1)
  %y2, %s2 = tfm.causal_conv1d %mix, %w state %s0 reset %first : (tensor<?x12xf32>, tensor<12x4xf32>, tensor<3x12xf32>, i1) -> (tensor<?x12xf32>, tensor<3x12xf32>)
  // CHECK: tfm.gated_delta_rule %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {scale = 3.535530e-01 : f32}
  %o, %S = tfm.gated_delta_rule %q, %q, %v, %a, %decay, %beta {scale = 0.353553 : f32} : (tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x4x12xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<?x4xf32>) -> (tensor<?x4x12xf32>, tensor<4x8x12xf32>)
  // CHECK: tfm.gated_delta_rule {{.*}} state %{{.*}} reset %{{.*}} {scale = 3.535530e-01 : f32, tiled}
  %o2, %S2 = tfm.gated_delta_rule %q, %q, %v, %a, %decay, %beta state %S0 reset %first {scale = 0.353553 : f32, tiled} : (tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x4x12xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<?x4xf32>, tensor<4x8x12xf32>, i1) -> (tensor<?x4x12xf32>, tensor<4x8x12xf32>)
  return %y2, %s2, %o2, %S2 : tensor<?x12xf32>, tensor<3x12xf32>, tensor<?x4x12xf32>, tensor<4x8x12xf32>
}

// -----

// CHECK-LABEL: func.func @lora
func.func @lora(%x: tensor<?x16xf32>, %q: tensor<?x2x8xf32>, %o: tensor<?x32xf32>) -> (tensor<?x2x8xf32>, tensor<?x32xf32>) {
  // CHECK: tfm.lora %{{.*}}, %{{.*}} {target = 0 : i64} : tensor<?x16xf32>, tensor<?x2x8xf32> -> tensor<?x2x8xf32>
  %q1 = tfm.lora %x, %q {target = 0 : i64} : tensor<?x16xf32>, tensor<?x2x8xf32> -> tensor<?x2x8xf32>
  // CHECK: tfm.lora %{{.*}}, %{{.*}} {target = 3 : i64} : tensor<?x2x8xf32>, tensor<?x32xf32> -> tensor<?x32xf32>
  %o1 = tfm.lora %q1, %o {target = 3 : i64} : tensor<?x2x8xf32>, tensor<?x32xf32> -> tensor<?x32xf32>
  return %q1, %o1 : tensor<?x2x8xf32>, tensor<?x32xf32>
}
