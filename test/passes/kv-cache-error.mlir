// What tfm-kv-cache refuses, naming the op.
// RUN: tfm-opt %s -split-input-file -tfm-kv-cache -verify-diagnostics

// expected-error @+1 {{tfm-kv-cache: no @forward function to derive @prefill and @decode from}}
module {
  func.func @main() {
    return
  }
}

// -----

tfm.weight_decl @w : tensor<8x4xf32>
// expected-error @+1 {{'func.func' op tfm-kv-cache needs a positive capacity: set max-context or the module's tfm.model}}
func.func @forward(%t: tensor<?xi32>) -> tensor<?x4xf32> {
  %w = tfm.weight @w : tensor<8x4xf32>
  %x = tfm.embedding %w[%t] : tensor<8x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
  return %x : tensor<?x4xf32>
}

// -----

module attributes {tfm.model = #tfm.model<family = "test", vocab_size = 0, max_context = 8>} {
tfm.weight_decl @w : tensor<8x4xf32>
tfm.weight_decl @wo : tensor<4x8xf32>
func.func @forward(%t: tensor<?xi32>) -> tensor<?x4xf32> {
  %w = tfm.weight @w : tensor<8x4xf32>
  %x = tfm.embedding %w[%t] : tensor<8x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
  %q = tfm.linear %x, %w : (tensor<?x4xf32>, tensor<8x4xf32>) -> tensor<?x2x4xf32>
  // expected-error @+1 {{'tfm.attention' op cannot cache bidirectional attention: a new token would change the past positions' outputs}}
  %a = tfm.attention %q, %q, %q {scale = 0.5 : f32} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x2x4xf32>
  %wo = tfm.weight @wo : tensor<4x8xf32>
  %o = tfm.linear %a, %wo : (tensor<?x2x4xf32>, tensor<4x8xf32>) -> tensor<?x4xf32>
  return %o : tensor<?x4xf32>
}
}

// -----

module attributes {tfm.model = #tfm.model<family = "test", vocab_size = 0, max_context = 8>} {
tfm.weight_decl @w : tensor<8x4xf32>
// expected-error @+1 {{'func.func' op expected @forward(tokens: tensor<?xiN>) -> logits, or an encoder-decoder's @forward(source ids or features, decoder ids), for a KV cache}}
func.func @forward(%t: tensor<?xi32>, %bias: tensor<2x?x?xf32>) -> tensor<?x2x4xf32> {
  %w = tfm.weight @w : tensor<8x4xf32>
  %x = tfm.embedding %w[%t] : tensor<8x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
  %q = tfm.linear %x, %w : (tensor<?x4xf32>, tensor<8x4xf32>) -> tensor<?x2x4xf32>
  %a = tfm.attention %q, %q, %q bias %bias {causal, scale = 0.5 : f32} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<2x?x?xf32>) -> tensor<?x2x4xf32>
  return %a : tensor<?x2x4xf32>
}
}

// -----

module attributes {tfm.model = #tfm.model<family = "test", vocab_size = 0, max_context = 8>} {
tfm.weight_decl @w : tensor<8x4xf32>
tfm.weight_decl @bias : tensor<2x4x4xf32>
func.func @forward(%t: tensor<?xi32>) -> tensor<?x2x4xf32> {
  %w = tfm.weight @w : tensor<8x4xf32>
  %x = tfm.embedding %w[%t] : tensor<8x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
  %q = tfm.linear %x, %w : (tensor<?x4xf32>, tensor<8x4xf32>) -> tensor<?x2x4xf32>
  %bias = tfm.weight @bias : tensor<2x4x4xf32>
  %qs = tensor.cast %q : tensor<?x2x4xf32> to tensor<4x2x4xf32>
  // expected-error @-1 {{'tensor.cast' op cannot cache through an op that is not position-wise (Tfm_PositionWise, or a slice keeping every row)}}
  %a = tfm.attention %qs, %qs, %qs bias %bias {causal, scale = 0.5 : f32} : (tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<4x2x4xf32>, tensor<2x4x4xf32>) -> tensor<4x2x4xf32>
  %r = tensor.cast %a : tensor<4x2x4xf32> to tensor<?x2x4xf32>
  return %r : tensor<?x2x4xf32>
}
}

// -----

module attributes {tfm.model = #tfm.model<family = "test", vocab_size = 0, max_context = 8>} {
tfm.weight_decl @w : tensor<8x4xf32>
tfm.weight_decl @bias : tensor<2x4x4xf32>
func.func @forward(%t: tensor<?xi32>) -> tensor<?x2x4xf32> {
  %w = tfm.weight @w : tensor<8x4xf32>
  %bias = tfm.weight @bias : tensor<2x4x4xf32>
  %x = tfm.embedding %w[%t] : tensor<8x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
  %q = tfm.linear %x, %w : (tensor<?x4xf32>, tensor<8x4xf32>) -> tensor<?x2x4xf32>
  // expected-error @+1 {{'tfm.attention' op cannot cache attention with an additive bias}}
  %a = tfm.attention %q, %q, %q bias %bias {causal, scale = 0.5 : f32} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<2x4x4xf32>) -> tensor<?x2x4xf32>
  return %a : tensor<?x2x4xf32>
}
}

// -----

module attributes {tfm.model = #tfm.model<family = "test", vocab_size = 0, max_context = 8>} {
tfm.weight_decl @w : tensor<8x4xf32>
func.func @forward(%t: tensor<?xi32>) -> tensor<?x4xf32> {
  %c2 = arith.constant 2 : index
  %w = tfm.weight @w : tensor<8x4xf32>
  // expected-error @+1 {{'tfm.position_ids' op cannot cache: positions that do not count the tokens of @forward from 0}}
  %p = tfm.position_ids %t offset %c2 : tensor<?xi32> -> tensor<?xi32>
  %x = tfm.embedding %w[%p] : tensor<8x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
  return %x : tensor<?x4xf32>
}
}

// -----

module attributes {tfm.model = #tfm.model<family = "test", vocab_size = 0, max_context = 8>} {
tfm.weight_decl @w : tensor<8x4xf32>
tfm.weight_decl @wv : tensor<16x4xf32>
tfm.weight_decl @wo : tensor<4x16xf32>
func.func @forward(%t: tensor<?xi32>) -> tensor<?x4xf32> {
  %w = tfm.weight @w : tensor<8x4xf32>
  %x = tfm.embedding %w[%t] : tensor<8x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
  %q = tfm.linear %x, %w : (tensor<?x4xf32>, tensor<8x4xf32>) -> tensor<?x2x4xf32>
  %wv = tfm.weight @wv : tensor<16x4xf32>
  %v = tfm.linear %x, %wv : (tensor<?x4xf32>, tensor<16x4xf32>) -> tensor<?x2x8xf32>
  // expected-error @+1 {{'tfm.attention' op cannot cache values of type 'tensor<?x2x8xf32>' beside keys of type 'tensor<?x2x4xf32>'}}
  %a = tfm.attention %q, %q, %v {causal, scale = 0.5 : f32} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x8xf32>) -> tensor<?x2x8xf32>
  %wo = tfm.weight @wo : tensor<4x16xf32>
  %o = tfm.linear %a, %wo : (tensor<?x2x8xf32>, tensor<4x16xf32>) -> tensor<?x4xf32>
  return %o : tensor<?x4xf32>
}
}

// -----

module attributes {tfm.model = #tfm.model<family = "test", vocab_size = 0, max_context = 8>} {
tfm.weight_decl @w : tensor<8x4xf32>
// expected-error @+1 {{'func.func' op has no attention to cache}}
func.func @forward(%t: tensor<?xi32>) -> tensor<?x4xf32> {
  %w = tfm.weight @w : tensor<8x4xf32>
  %x = tfm.embedding %w[%t] : tensor<8x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
  return %x : tensor<?x4xf32>
}
}

// -----

// A decoder's attention to keys that do not come from its tokens (here a
// weight): only an encoder-decoder's cross-attention, whose keys come from
// its source, can be cached once.
module attributes {tfm.model = #tfm.model<family = "test", vocab_size = 0, max_context = 8>} {
tfm.weight_decl @w : tensor<8x4xf32>
tfm.weight_decl @memory : tensor<3x2x4xf32>
func.func @forward(%t: tensor<?xi32>) -> tensor<?x2x4xf32> {
  %w = tfm.weight @w : tensor<8x4xf32>
  %x = tfm.embedding %w[%t] : tensor<8x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
  %q = tfm.linear %x, %w : (tensor<?x4xf32>, tensor<8x4xf32>) -> tensor<?x2x4xf32>
  %m = tfm.weight @memory : tensor<3x2x4xf32>
  %k = tensor.cast %m : tensor<3x2x4xf32> to tensor<?x2x4xf32>
  // expected-error @+1 {{'tfm.attention' op cannot cache attention to keys that are not the tokens' own}}
  %a = tfm.attention %q, %k, %k {scale = 0.5 : f32} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x2x4xf32>
  return %a : tensor<?x2x4xf32>
}
}

// -----

// A latent layer (its value the leading columns of its key) beside one
// with keys and values of its own: a latent cache keeps one plane a layer.
module attributes {tfm.model = #tfm.model<family = "test", vocab_size = 0, max_context = 32>} {
tfm.weight_decl @wte : tensor<16x8xf32>
tfm.weight_decl @wkv : tensor<6x8xf32>
tfm.weight_decl @wo : tensor<8x8xf32>
tfm.weight_decl @wo2 : tensor<8x16xf32>
func.func @forward(%tokens: tensor<?xi32> {tfm.input = #tfm.input<token_ids>}) -> (tensor<?x16xf32> {tfm.output = #tfm.output<logits>}) {
  %c0 = arith.constant 0 : index
  %wte = tfm.weight @wte : tensor<16x8xf32>
  %wkv = tfm.weight @wkv : tensor<6x8xf32>
  %wo = tfm.weight @wo : tensor<8x8xf32>
  %wo2 = tfm.weight @wo2 : tensor<8x16xf32>
  %x = tfm.embedding %wte[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %q = tfm.linear %x, %wte : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x2x8xf32>
  %row = tfm.linear %x, %wkv : (tensor<?x8xf32>, tensor<6x8xf32>) -> tensor<?x1x6xf32>
  %n = tensor.dim %q, %c0 : tensor<?x2x8xf32>
  %qs = tensor.extract_slice %q[0, 0, 0] [%n, 2, 6] [1, 1, 1] : tensor<?x2x8xf32> to tensor<?x2x6xf32>
  %r = tensor.dim %row, %c0 : tensor<?x1x6xf32>
  %value = tensor.extract_slice %row[0, 0, 0] [%r, 1, 4] [1, 1, 1] : tensor<?x1x6xf32> to tensor<?x1x4xf32>
  %a = tfm.attention %qs, %row, %value {causal, scale = 0.5 : f32} : (tensor<?x2x6xf32>, tensor<?x1x6xf32>, tensor<?x1x4xf32>) -> tensor<?x2x4xf32>
  %h = tfm.linear %a, %wo : (tensor<?x2x4xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %q2 = tfm.linear %h, %wte : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x2x8xf32>
  // expected-error @+1 {{'tfm.attention' op cannot cache latent attention beside attention with keys and values of its own (a latent cache keeps one plane a layer)}}
  %a2 = tfm.attention %q2, %q2, %q2 {causal, scale = 0.5 : f32} : (tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>) -> tensor<?x2x8xf32>
  %h2 = tfm.linear %a2, %wo2 : (tensor<?x2x8xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  %logits = tfm.linear %h2, %wte : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  return %logits : tensor<?x16xf32>
}
}

// -----

// A windowed latent layer: a ring keeps keys and values of their own.
module attributes {tfm.model = #tfm.model<family = "test", vocab_size = 0, max_context = 32>} {
tfm.weight_decl @wte : tensor<16x8xf32>
tfm.weight_decl @wkv : tensor<6x8xf32>
tfm.weight_decl @wo : tensor<8x8xf32>
tfm.weight_decl @wo2 : tensor<8x16xf32>
func.func @forward(%tokens: tensor<?xi32> {tfm.input = #tfm.input<token_ids>}) -> (tensor<?x16xf32> {tfm.output = #tfm.output<logits>}) {
  %c0 = arith.constant 0 : index
  %wte = tfm.weight @wte : tensor<16x8xf32>
  %wkv = tfm.weight @wkv : tensor<6x8xf32>
  %wo = tfm.weight @wo : tensor<8x8xf32>
  %wo2 = tfm.weight @wo2 : tensor<8x16xf32>
  %x = tfm.embedding %wte[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %q = tfm.linear %x, %wte : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x2x8xf32>
  %row = tfm.linear %x, %wkv : (tensor<?x8xf32>, tensor<6x8xf32>) -> tensor<?x1x6xf32>
  %n = tensor.dim %q, %c0 : tensor<?x2x8xf32>
  %qs = tensor.extract_slice %q[0, 0, 0] [%n, 2, 6] [1, 1, 1] : tensor<?x2x8xf32> to tensor<?x2x6xf32>
  %r = tensor.dim %row, %c0 : tensor<?x1x6xf32>
  %value = tensor.extract_slice %row[0, 0, 0] [%r, 1, 4] [1, 1, 1] : tensor<?x1x6xf32> to tensor<?x1x4xf32>
  // expected-error @+1 {{'tfm.attention' op cannot cache windowed latent attention (a ring keeps keys and values of their own)}}
  %a = tfm.attention %qs, %row, %value {causal, scale = 0.5 : f32, window = 4 : i64} : (tensor<?x2x6xf32>, tensor<?x1x6xf32>, tensor<?x1x4xf32>) -> tensor<?x2x4xf32>
  %h = tfm.linear %a, %wo : (tensor<?x2x4xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %logits = tfm.linear %h, %wte : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  return %logits : tensor<?x16xf32>
}
}

// -----

// A recurrent op given a state already (the cache would overwrite it).
module attributes {tfm.model = #tfm.model<family = "test", vocab_size = 0, max_context = 8>} {
tfm.weight_decl @w : tensor<8x4xf32>
tfm.weight_decl @wc : tensor<4x2xf32>
tfm.weight_decl @s : tensor<1x4xf32>
tfm.weight_decl @wo : tensor<4x8xf32>
func.func @forward(%t: tensor<?xi32>) -> tensor<?x4xf32> {
  %w = tfm.weight @w : tensor<8x4xf32>
  %wc = tfm.weight @wc : tensor<4x2xf32>
  %s = tfm.weight @s : tensor<1x4xf32>
  %wo = tfm.weight @wo : tensor<4x8xf32>
  %x = tfm.embedding %w[%t] : tensor<8x4xf32>, tensor<?xi32> -> tensor<?x4xf32>
  // expected-error @+1 {{'tfm.causal_conv1d' op cannot cache a recurrent op that is given a state already}}
  %y, %f = tfm.causal_conv1d %x, %wc state %s : (tensor<?x4xf32>, tensor<4x2xf32>, tensor<1x4xf32>) -> (tensor<?x4xf32>, tensor<1x4xf32>)
  %q = tfm.linear %y, %w : (tensor<?x4xf32>, tensor<8x4xf32>) -> tensor<?x2x4xf32>
  %a = tfm.attention %q, %q, %q {causal, scale = 5.000000e-01 : f32} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x2x4xf32>
  %o = tfm.linear %a, %wo : (tensor<?x2x4xf32>, tensor<4x8xf32>) -> tensor<?x4xf32>
  return %o : tensor<?x4xf32>
}
}
