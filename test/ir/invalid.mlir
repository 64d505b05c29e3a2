// One case per verifier message of the tfm ops.
// RUN: tfm-opt %s -split-input-file -verify-diagnostics

// expected-error @+1 {{'tfm.weight_decl' op expected a non-empty weight name}}
tfm.weight_decl @"" : tensor<4xf32>

// -----

// expected-error @+1 {{'tfm.weight_decl' op expected weight 'w' to have a static shape, got 'tensor<?x4xf32>'}}
tfm.weight_decl @w : tensor<?x4xf32>

// -----

// expected-error @+1 {{'tfm.weight_decl' op expected weight 'w' of 'i8' codes to have a #tfm.block_quant encoding}}
tfm.weight_decl @w : tensor<4x32xi8>

// -----

// expected-error @+1 {{'tfm.weight_decl' op expected weight 'w' in q8_0 to hold i8 codes, got 'i4'}}
tfm.weight_decl @w : tensor<4x32xi4, #tfm.block_quant<q8_0>>

// -----

// A format the table reads but keeps as int8, not in blocks of its own.
// expected-error @+1 {{expected a block format (q8_0, q4_0, q4_1, q4_k, q6_k, q5_k, mxfp4, q8_channel), got 'q5_0'}}
tfm.weight_decl @w : tensor<4x32xi8, #tfm.block_quant<q5_0>>

// -----

// expected-error @+1 {{expected a block format (q8_0, q4_0, q4_1, q4_k, q6_k, q5_k, mxfp4, q8_channel), got 'f16'}}
tfm.weight_decl @w : tensor<4x32xi8, #tfm.block_quant<f16>>

// -----

// expected-error @+1 {{'tfm.weight_decl' op expected weight 'w' in blocks to be a matrix, got rank 1}}
tfm.weight_decl @w : tensor<32xi4, #tfm.block_quant<q4_0>>

// -----

// expected-error @+1 {{'tfm.weight_decl' op expected weight 'w' of floats to have no encoding, got #tfm.block_quant<q8_0>}}
tfm.weight_decl @w : tensor<4x32xbf16, #tfm.block_quant<q8_0>>

// -----

// expected-error @+1 {{'tfm.weight_decl' op expected weight 'w' in q4_1 to hold i4 codes, got 'i8'}}
tfm.weight_decl @w : tensor<4x32xi8, #tfm.block_quant<q4_1>>

// -----

// q4_k's rows are whole super-blocks of 256, as GGUF's Q4_K stores them.
// expected-error @+1 {{'tfm.weight_decl' op expected weight 'w' in q4_k to have rows of whole super-blocks (a multiple of 256 elements), got 288}}
tfm.weight_decl @w : tensor<4x288xi4, #tfm.block_quant<q4_k>>

// -----

// expected-error @+1 {{'tfm.weight_decl' op expected weight 'w' in q6_k to hold i6 codes, got 'i8'}}
tfm.weight_decl @w : tensor<4x256xi8, #tfm.block_quant<q6_k>>

// -----

// expected-error @+1 {{'tfm.weight_decl' op expected weight 'w' in q6_k to have rows of whole super-blocks (a multiple of 256 elements), got 128}}
tfm.weight_decl @w : tensor<4x128xi6, #tfm.block_quant<q6_k>>

// -----

// expected-error @+1 {{'tfm.weight_decl' op expected weight 'w' in q5_k to hold i5 codes, got 'i4'}}
tfm.weight_decl @w : tensor<4x256xi4, #tfm.block_quant<q5_k>>

// -----

// expected-error @+1 {{'tfm.weight_decl' op expected weight 'w' in q5_k to have rows of whole super-blocks (a multiple of 256 elements), got 96}}
tfm.weight_decl @w : tensor<4x96xi5, #tfm.block_quant<q5_k>>

// -----

// mxfp4 is copied from a checkpoint's whole blocks of 32.
// expected-error @+1 {{'tfm.weight_decl' op expected weight 'w' in mxfp4 to have rows of whole blocks (a multiple of 32 elements), got 40}}
tfm.weight_decl @w : tensor<4x40xi4, #tfm.block_quant<mxfp4>>

// -----

// expected-error @+1 {{'tfm.weight_decl' op expected weight 'w' in mxfp4 to hold i4 codes, got 'i8'}}
tfm.weight_decl @w : tensor<4x64xi8, #tfm.block_quant<mxfp4>>

// -----

// The frontend's checkpoint dtype belongs on weight declarations only.
// expected-error @+1 {{'tfm.checkpoint_dtype' is not valid here}}
func.func @f() attributes {tfm.checkpoint_dtype = "int8"} {
  return
}

// -----

func.func @dequantize_f32(%w: tensor<4x32xf32>) -> tensor<4x32xf32> {
  // expected-error @+1 {{'tfm.dequantize' op expected the input to be stored narrower than f32}}
  %f = tfm.dequantize %w : tensor<4x32xf32> -> tensor<4x32xf32>
  return %f : tensor<4x32xf32>
}

// -----

func.func @dequantize_shape(%w: tensor<4x32xbf16>) -> tensor<4x16xf32> {
  // expected-error @+1 {{'tfm.dequantize' op expected the result's shape to be the input's, got 'tensor<4x16xf32>' for 'tensor<4x32xbf16>'}}
  %f = tfm.dequantize %w : tensor<4x32xbf16> -> tensor<4x16xf32>
  return %f : tensor<4x16xf32>
}

// -----

func.func @dequantize_result(%w: tensor<4x32xbf16>) -> tensor<4x32xf16> {
  // expected-error @+1 {{'tfm.dequantize' op expected result element type 'f16' to match 'f32'}}
  %f = tfm.dequantize %w : tensor<4x32xbf16> -> tensor<4x32xf16>
  return %f : tensor<4x32xf16>
}

// -----

func.func @concat_encodings(%a: tensor<32x16xi8, #tfm.block_quant<q8_0>>, %b: tensor<8x16xi8>) -> tensor<40x16xi8, #tfm.block_quant<q8_0>> {
  // expected-error @+1 {{'tfm.concat' op expected input 1's encoding (<<NULL ATTRIBUTE>>) to be the result's (#tfm.block_quant<q8_0>)}}
  %j = tfm.concat %a, %b : (tensor<32x16xi8, #tfm.block_quant<q8_0>>, tensor<8x16xi8>) -> tensor<40x16xi8, #tfm.block_quant<q8_0>>
  return %j : tensor<40x16xi8, #tfm.block_quant<q8_0>>
}

// -----

func.func @undeclared() {
  // expected-error @+1 {{'tfm.weight' op refers to 'w', which no tfm.weight_decl declares}}
  %w = tfm.weight @w : tensor<4xf32>
  return
}

// -----

tfm.weight_decl @w : tensor<4xf32>
func.func @clash() -> (tensor<4xf32>, tensor<8xf32>) {
  %a = tfm.weight @w : tensor<4xf32>
  // expected-error @+1 {{'tfm.weight' op reads weight 'w' as 'tensor<8xf32>', but it is declared as 'tensor<4xf32>'}}
  %b = tfm.weight @w : tensor<8xf32>
  return %a, %b : tensor<4xf32>, tensor<8xf32>
}

// -----

// expected-error @+1 {{'tfm.model' must be a #tfm.model, got "llama"}}
module attributes {tfm.model = "llama"} {
}

// -----

// expected-error @+1 {{expected a non-empty model family}}
module attributes {tfm.model = #tfm.model<family = "", vocab_size = 8, max_context = 8>} {
}

// -----

// expected-error @+1 {{expected eos_token in [-1, vocab_size = 8), got 8}}
module attributes {tfm.model = #tfm.model<family = "llama", vocab_size = 8, max_context = 8, eos_token = 8>} {
}

// -----

// expected-error @+1 {{add_bos needs a bos_token}}
module attributes {tfm.model = #tfm.model<family = "llama", vocab_size = 8, max_context = 8, add_bos = true>} {
}

// -----

// expected-error @+1 {{expected a chat_template without NUL bytes, found one at offset 3}}
module attributes {tfm.model = #tfm.model<family = "llama", vocab_size = 8, max_context = 8, chat_template = "{{ \00 }}">} {
}

// -----

module {
  // expected-error @+1 {{'tfm.model' belongs on the module}}
  func.func private @f() attributes {tfm.model = #tfm.model<family = "llama", vocab_size = 8, max_context = 8>}
}

// -----

// expected-error @+1 {{unknown tfm attribute 'tfm.modle'}}
module attributes {tfm.modle = 1} {
}

// -----

// expected-error @+1 {{argument 0 of @f: token ids are a tensor<?xi32>, got 'tensor<?xf32>'}}
func.func private @f(tensor<?xf32> {tfm.input = #tfm.input<token_ids>})

// -----

// expected-error @+1 {{argument 1 of @f: token ids are a tensor<?xi32>, got 'tensor<?x2xi32>'}}
func.func private @f(tensor<?xi32> {tfm.input = #tfm.input<token_ids>}, tensor<?x2xi32> {tfm.input = #tfm.input<decoder_token_ids>})

// -----

// expected-error @+1 {{argument 1 of @f: a position or slot is an index, got 'i64'}}
func.func private @f(tensor<?xi32>, i64 {tfm.input = #tfm.input<start_position>})

// -----

// expected-error @+1 {{argument 0 of @f: a key/value cache is [layers, 2, capacity, kv_heads, head_dim] (1 plane a layer for a latent cache), or [sequences, layers, 2, capacity, kv_heads, head_dim], got 'tensor<2x3x8x4x4xf32>'}}
func.func private @f(tensor<2x3x8x4x4xf32> {tfm.cache = #tfm.cache<self_attention>})

// -----

// expected-error @+1 {{argument 0 of @f: a cache is a float or i8 tensor of static shape (but for a batched cache's sequences), got 'tensor<2x2x?x4x4xf32>'}}
func.func private @f(tensor<2x2x?x4x4xf32> {tfm.cache = #tfm.cache<self_attention>})

// -----

// A batched cache has any number of sequences, each of static shape.
// expected-error @+1 {{argument 0 of @f: a cache is a float or i8 tensor of static shape (but for a batched cache's sequences), got 'tensor<?x2x2x?x4x4xf32>'}}
func.func private @f(tensor<?x2x2x?x4x4xf32> {tfm.cache = #tfm.cache<self_attention>})

// -----

// expected-error @+1 {{argument 0 of @f: sequence lengths, positions, cache sequences and chunk lengths are a tensor<?xi32>, got 'tensor<?xi64>'}}
func.func private @f(tensor<?xi64> {tfm.input = #tfm.input<positions>})

// -----

// expected-error @+1 {{argument 0 of @f: sequence lengths, positions, cache sequences and chunk lengths are a tensor<?xi32>, got 'tensor<2x3xi32>'}}
func.func private @f(tensor<2x3xi32> {tfm.input = #tfm.input<chunk_lengths>})

// -----

// expected-error @+1 {{only a self-attention cache and its rings have a window}}
func.func private @f(tensor<2x2x8x4x4xf32> {tfm.cache = #tfm.cache<cross_attention, window = 2>})

// -----

// Rings alike are as long as their rows: position p at row p mod window.
// expected-error @+1 {{argument 0 of @f: rings' window 3 is not their 4 rows}}
func.func private @f(tensor<?x2x2x4x4x4xf32> {tfm.cache = #tfm.cache<self_attention_rings, window = 3>})

// -----

// expected-error @+1 {{argument 0 of @f: a recurrent state cache is f32 [elements], or [sequences, elements] batched, got 'tensor<3x8x4xf32>'}}
func.func private @f(tensor<3x8x4xf32> {tfm.cache = #tfm.cache<recurrent_state>})

// -----

// expected-error @+1 {{argument 0 of @f: a recurrent state cache is f32 [elements], or [sequences, elements] batched, got 'tensor<96xbf16>'}}
func.func private @f(tensor<96xbf16> {tfm.cache = #tfm.cache<recurrent_state>})

// -----

// expected-error @+1 {{unknown tfm argument attribute 'tfm.kv_cache'}}
func.func private @f(tensor<2x2x8x4x4xf32> {tfm.kv_cache})

// -----

// expected-error @+1 {{result 0: 'tfm.output' must be a #tfm.output}}
func.func private @f() -> (tensor<4xf32> {tfm.output = 1})

// -----

func.func @weight_decl_not_in_module() {
  // expected-error @+1 {{'tfm.weight_decl' op expects parent op 'builtin.module'}}
  "tfm.weight_decl"() {sym_name = "w", type = tensor<4xf32>} : () -> ()
  return
}

// -----

func.func @f2(%t: tensor<2x3xi32>) {
  // expected-error @+1 {{'tfm.position_ids' op expected tokens to be rank 1, got rank 2}}
  %p = tfm.position_ids %t : tensor<2x3xi32> -> tensor<?xi32>
  return
}

// -----

func.func @padding_and_offset(%t: tensor<?xi32>, %start: index) {
  // expected-error @+1 {{'tfm.position_ids' op takes an offset or a padding_id, not both}}
  %p = tfm.position_ids %t offset %start {padding_id = 1 : i64} : tensor<?xi32> -> tensor<?xi32>
  return
}

// -----

func.func @position_ids_offset_and_lengths(%t: tensor<?xi32>, %start: index, %n: tensor<?xi32>) {
  // expected-error @+1 {{'tfm.position_ids' op takes an offset or sequence lengths, not both}}
  %p = tfm.position_ids %t offset %start lengths %n : tensor<?xi32> : tensor<?xi32> -> tensor<?xi32>
  return
}

// -----

func.func @f3(%t: tensor<?xi32>) {
  // expected-error @+1 {{'tfm.position_ids' op expected result to be rank 1, got rank 2}}
  %p = tfm.position_ids %t : tensor<?xi32> -> tensor<?x1xi32>
  return
}

// -----

func.func @f4(%t: tensor<4xi32>) {
  // expected-error @+1 {{'tfm.position_ids' op expected result length (5) to match tokens length (4)}}
  %p = tfm.position_ids %t : tensor<4xi32> -> tensor<5xi32>
  return
}

// -----

func.func @f5(%t: tensor<8xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'tfm.embedding' op expected table to be rank 2, got rank 1}}
  %x = tfm.embedding %t[%i] : tensor<8xf32>, tensor<?xi32> -> tensor<?x4xf32>
  return
}

// -----

func.func @f6(%t: tensor<8x4xf32>, %i: tensor<?x2xi32>) {
  // expected-error @+1 {{'tfm.embedding' op expected ids to be rank 1, got rank 2}}
  %x = tfm.embedding %t[%i] : tensor<8x4xf32>, tensor<?x2xi32> -> tensor<?x4xf32>
  return
}

// -----

func.func @f7(%t: tensor<8x4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'tfm.embedding' op expected result to be rank 2, got rank 3}}
  %x = tfm.embedding %t[%i] : tensor<8x4xf32>, tensor<?xi32> -> tensor<?x2x2xf32>
  return
}

// -----

func.func @f8(%t: tensor<8x4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'tfm.embedding' op expected result element type 'f16' to match 'f32'}}
  %x = tfm.embedding %t[%i] : tensor<8x4xf32>, tensor<?xi32> -> tensor<?x4xf16>
  return
}

// -----

func.func @f9(%t: tensor<8x4xf32>, %i: tensor<3xi32>) {
  // expected-error @+1 {{'tfm.embedding' op expected result rows (2) to match ids length (3)}}
  %x = tfm.embedding %t[%i] : tensor<8x4xf32>, tensor<3xi32> -> tensor<2x4xf32>
  return
}

// -----

func.func @f10(%t: tensor<8x4xf32>, %i: tensor<?xi32>) {
  // expected-error @+1 {{'tfm.embedding' op expected result width (5) to match table width (4)}}
  %x = tfm.embedding %t[%i] : tensor<8x4xf32>, tensor<?xi32> -> tensor<?x5xf32>
  return
}

// -----

func.func @f11(%x: tensor<?x4xf32>, %w: tensor<4xf32>) {
  // expected-error @+1 {{'tfm.linear' op expected weight to be rank 2, got rank 1}}
  %y = tfm.linear %x, %w : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @f12(%x: tensor<?x4xf32>, %w: tensor<8x4xf16>) {
  // expected-error @+1 {{'tfm.linear' op expected weight element type 'f16' to match 'f32'}}
  %y = tfm.linear %x, %w : (tensor<?x4xf32>, tensor<8x4xf16>) -> tensor<?x8xf32>
  return
}

// -----

func.func @f13(%x: tensor<?x4xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{'tfm.linear' op expected result element type 'bf16' to match 'f32'}}
  %y = tfm.linear %x, %w : (tensor<?x4xf32>, tensor<8x4xf32>) -> tensor<?x8xbf16>
  return
}

// -----

func.func @f14(%x: tensor<4xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{'tfm.linear' op expected input to be rank 2 [seq, features] or rank 3 [seq, heads, head_dim], got rank 1}}
  %y = tfm.linear %x, %w : (tensor<4xf32>, tensor<8x4xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @f15(%x: tensor<?x4xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{'tfm.linear' op expected result to be rank 2 [seq, features] or rank 3 [seq, heads, head_dim], got rank 4}}
  %y = tfm.linear %x, %w : (tensor<?x4xf32>, tensor<8x4xf32>) -> tensor<?x2x2x2xf32>
  return
}

// -----

func.func @f16(%x: tensor<?x2x3xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{'tfm.linear' op expected input features (6) to match weight in-features (4)}}
  %y = tfm.linear %x, %w : (tensor<?x2x3xf32>, tensor<8x4xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @f17(%x: tensor<?x4xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{'tfm.linear' op expected result features (6) to match weight out-features (8)}}
  %y = tfm.linear %x, %w : (tensor<?x4xf32>, tensor<8x4xf32>) -> tensor<?x3x2xf32>
  return
}

// -----

func.func @f18(%x: tensor<3x4xf32>, %w: tensor<8x4xf32>) {
  // expected-error @+1 {{'tfm.linear' op expected result sequence length (5) to match input sequence length (3)}}
  %y = tfm.linear %x, %w : (tensor<3x4xf32>, tensor<8x4xf32>) -> tensor<5x8xf32>
  return
}

// -----

func.func @f19(%x: tensor<?x4xf32>, %w: tensor<8x4xf32>, %b: tensor<1x8xf32>) {
  // expected-error @+1 {{'tfm.linear' op expected bias to be rank 1, got rank 2}}
  %y = tfm.linear %x, %w bias %b : (tensor<?x4xf32>, tensor<8x4xf32>, tensor<1x8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @f20(%x: tensor<?x4xf32>, %w: tensor<8x4xf32>, %b: tensor<8xf16>) {
  // expected-error @+1 {{'tfm.linear' op expected bias element type 'f16' to match 'f32'}}
  %y = tfm.linear %x, %w bias %b : (tensor<?x4xf32>, tensor<8x4xf32>, tensor<8xf16>) -> tensor<?x8xf32>
  return
}

// -----

func.func @f21(%x: tensor<?x4xf32>, %w: tensor<8x4xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{'tfm.linear' op expected bias size (4) to match weight out-features (8)}}
  %y = tfm.linear %x, %w bias %b : (tensor<?x4xf32>, tensor<8x4xf32>, tensor<4xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @f22(%x: tensor<?x2x2x4xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{'tfm.rms_norm' op expected input of rank 2 ([seq, d]) or 3 ([seq, heads, d]), got rank 4}}
  %y = tfm.rms_norm %x, %g {epsilon = 1.0e-5 : f32} : (tensor<?x2x2x4xf32>, tensor<4xf32>) -> tensor<?x2x2x4xf32>
  return
}

// -----

// Each head's norm: gamma is as long as a head.
func.func @head_norm(%x: tensor<?x2x4xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'tfm.rms_norm' op expected gamma}}
  %y = tfm.rms_norm %x, %g {epsilon = 1.0e-5 : f32} : (tensor<?x2x4xf32>, tensor<8xf32>) -> tensor<?x2x4xf32>
  return
}

// -----

func.func @f23(%x: tensor<?x4xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{'tfm.rms_norm' op expected result type 'tensor<3x4xf32>' to match input type 'tensor<?x4xf32>'}}
  %y = tfm.rms_norm %x, %g {epsilon = 1.0e-5 : f32} : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  return
}

// -----

func.func @f24(%x: tensor<?x4xf32>, %g: tensor<1x4xf32>) {
  // expected-error @+1 {{'tfm.rms_norm' op expected gamma to be rank 1, got rank 2}}
  %y = tfm.rms_norm %x, %g {epsilon = 1.0e-5 : f32} : (tensor<?x4xf32>, tensor<1x4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @f25(%x: tensor<?x4xf32>, %g: tensor<4xf16>) {
  // expected-error @+1 {{'tfm.rms_norm' op expected gamma element type 'f16' to match 'f32'}}
  %y = tfm.rms_norm %x, %g {epsilon = 1.0e-5 : f32} : (tensor<?x4xf32>, tensor<4xf16>) -> tensor<?x4xf32>
  return
}

// -----

func.func @f26(%x: tensor<?x4xf32>, %g: tensor<5xf32>) {
  // expected-error @+1 {{'tfm.rms_norm' op expected gamma size (5) to match input features (4)}}
  %y = tfm.rms_norm %x, %g {epsilon = 1.0e-5 : f32} : (tensor<?x4xf32>, tensor<5xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @f27(%x: tensor<?x4xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{'tfm.rms_norm' op expected a non-negative epsilon, got -1}}
  %y = tfm.rms_norm %x, %g {epsilon = -1.0 : f32} : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @f28(%x: tensor<?x4xf32>, %g: tensor<4xf32>, %b: tensor<3xf32>) {
  // expected-error @+1 {{'tfm.layer_norm' op expected beta size (3) to match input features (4)}}
  %y = tfm.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f32} : (tensor<?x4xf32>, tensor<4xf32>, tensor<3xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @f29(%x: tensor<?x4xf32>, %g: tensor<4xf32>) {
  // expected-error @+1 {{'tfm.layer_norm' op expected a non-negative epsilon, got -2}}
  %y = tfm.layer_norm %x, %g {epsilon = -2.0 : f32} : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @rope_ntk_alone(%x: tensor<?x4x8xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'tfm.rope' op expected ntk_factor and ntk_context together}}
  %y = tfm.rope rotate_half %x, %p {ntk_factor = 2.0 : f32, theta = 1.0e4 : f32} : tensor<?x4x8xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_ntk_factor(%x: tensor<?x4x8xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'tfm.rope' op expected a finite ntk_factor >= 1, got 5.000000e-01}}
  %y = tfm.rope rotate_half %x, %p {ntk_context = 32 : i64, ntk_factor = 0.5 : f32, theta = 1.0e4 : f32} : tensor<?x4x8xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_ntk_frequencies(%x: tensor<?x4x8xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'tfm.rope' op dynamic NTK scaling computes its frequencies: expected no frequencies}}
  %y = tfm.rope rotate_half %x, %p {frequencies = array<f32: 1.0, 0.5, 0.25, 0.125>, ntk_context = 32 : i64, ntk_factor = 2.0 : f32, theta = 1.0e4 : f32} : tensor<?x4x8xf32>, tensor<?xi32>
  return
}

// -----

func.func @f30(%x: tensor<?x4xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'tfm.rope' op expected input to be rank 3, got rank 2}}
  %y = tfm.rope interleaved %x, %p {theta = 1.0e4 : f32} : tensor<?x4xf32>, tensor<?xi32>
  return
}

// -----

func.func @f31(%x: tensor<?x2x4xf32>, %p: tensor<?x1xi32>) {
  // expected-error @+1 {{'tfm.rope' op expected positions to be rank 1, got rank 2}}
  %y = tfm.rope interleaved %x, %p {theta = 1.0e4 : f32} : tensor<?x2x4xf32>, tensor<?x1xi32>
  return
}

// -----

func.func @rope_sections_rank(%x: tensor<?x2x8xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'tfm.rope' op expected positions to be rank 2, got rank 1}}
  %y = tfm.rope rotate_half %x, %p {sections = array<i64: 2, 2>, theta = 1.0e4 : f32} : tensor<?x2x8xf32>, tensor<?xi32>
  return
}

// -----

func.func @rope_sections_sum(%x: tensor<?x2x8xf32>, %p: tensor<?x2xi32>) {
  // expected-error @+1 {{'tfm.rope' op expected sections summing to the 4 rotated pairs, got 3}}
  %y = tfm.rope rotate_half %x, %p {sections = array<i64: 2, 1>, theta = 1.0e4 : f32} : tensor<?x2x8xf32>, tensor<?x2xi32>
  return
}

// -----

func.func @rope_sections_columns(%x: tensor<?x2x8xf32>, %p: tensor<?x3xi32>) {
  // expected-error @+1 {{'tfm.rope' op expected positions columns (3) to match sections (2)}}
  %y = tfm.rope rotate_half %x, %p {sections = array<i64: 2, 2>, theta = 1.0e4 : f32} : tensor<?x2x8xf32>, tensor<?x3xi32>
  return
}

// -----

func.func @rope_sections_positive(%x: tensor<?x2x8xf32>, %p: tensor<?x3xi32>) {
  // expected-error @+1 {{'tfm.rope' op expected positive sections, got 0}}
  %y = tfm.rope rotate_half %x, %p {sections = array<i64: 2, 0, 2>, theta = 1.0e4 : f32} : tensor<?x2x8xf32>, tensor<?x3xi32>
  return
}

// -----

func.func @rope_sections_ntk(%x: tensor<?x2x8xf32>, %p: tensor<?x2xi32>) {
  // expected-error @+1 {{'tfm.rope' op expected sections without dynamic NTK scaling or long frequencies}}
  %y = tfm.rope rotate_half %x, %p {ntk_context = 32 : i64, ntk_factor = 2.0 : f32, sections = array<i64: 2, 2>, theta = 1.0e4 : f32} : tensor<?x2x8xf32>, tensor<?x2xi32>
  return
}

// -----

func.func @f32(%x: tensor<?x2x5xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'tfm.rope' op expected a static, even head_dim, got 5}}
  %y = tfm.rope interleaved %x, %p {theta = 1.0e4 : f32} : tensor<?x2x5xf32>, tensor<?xi32>
  return
}

// -----

func.func @f33(%x: tensor<3x2x4xf32>, %p: tensor<4xi32>) {
  // expected-error @+1 {{'tfm.rope' op expected positions length (4) to match input sequence length (3)}}
  %y = tfm.rope rotate_half %x, %p {theta = 1.0e4 : f32} : tensor<3x2x4xf32>, tensor<4xi32>
  return
}

// -----

func.func @f34(%x: tensor<?x2x4xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'tfm.rope' op expected a positive theta, got 0}}
  %y = tfm.rope rotate_half %x, %p {theta = 0.0 : f32} : tensor<?x2x4xf32>, tensor<?xi32>
  return
}

// -----

func.func @f35(%p: tensor<?x2xi32>) {
  // expected-error @+1 {{'tfm.sinusoidal_position' op expected positions to be rank 1, got rank 2}}
  %y = tfm.sinusoidal_position interleaved %p {base = 1.0e4 : f32} : tensor<?x2xi32> -> tensor<?x4xf32>
  return
}

// -----

func.func @f36(%p: tensor<?xi32>) {
  // expected-error @+1 {{'tfm.sinusoidal_position' op expected result to be rank 2, got rank 3}}
  %y = tfm.sinusoidal_position interleaved %p {base = 1.0e4 : f32} : tensor<?xi32> -> tensor<?x2x4xf32>
  return
}

// -----

func.func @f37(%p: tensor<?xi32>) {
  // expected-error @+1 {{'tfm.sinusoidal_position' op expected a static, even result width, got 7}}
  %y = tfm.sinusoidal_position concat %p {base = 1.0e4 : f32} : tensor<?xi32> -> tensor<?x7xf32>
  return
}

// -----

func.func @f38(%p: tensor<3xi32>) {
  // expected-error @+1 {{'tfm.sinusoidal_position' op expected result rows (2) to match positions length (3)}}
  %y = tfm.sinusoidal_position concat %p {base = 1.0e4 : f32} : tensor<3xi32> -> tensor<2x4xf32>
  return
}

// -----

func.func @f39(%p: tensor<?xi32>) {
  // expected-error @+1 {{'tfm.sinusoidal_position' op expected a base greater than 1, got 1}}
  %y = tfm.sinusoidal_position concat %p {base = 1.0 : f32} : tensor<?xi32> -> tensor<?x4xf32>
  return
}

// -----

func.func @attention_weights_head(%q: tensor<?x8x16xf32>, %k: tensor<9x2x16xf32>) {
  // expected-error @+1 {{'tfm.attention_weights' op head 8 is not one of the query's 8 heads}}
  %y = tfm.attention_weights %q, %k {heads = array<i64: 8>, scale = 1.0 : f32} : (tensor<?x8x16xf32>, tensor<9x2x16xf32>) -> tensor<?x1x9xf32>
  return
}

// -----

func.func @attention_weights_shape(%q: tensor<?x8x16xf32>, %k: tensor<9x2x16xf32>) {
  // expected-error @+1 {{'tfm.attention_weights' op expected result heads (1) to match listed heads (2)}}
  %y = tfm.attention_weights %q, %k {heads = array<i64: 1, 2>, scale = 1.0 : f32} : (tensor<?x8x16xf32>, tensor<9x2x16xf32>) -> tensor<?x1x9xf32>
  return
}

// -----

func.func @f40(%q: tensor<?x8xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>) {
  // expected-error @+1 {{'tfm.attention' op expected query to be rank 3, got rank 2}}
  %y = tfm.attention %q, %k, %v {scale = 1.0 : f32} : (tensor<?x8xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @f41(%q: tensor<?x8x16xf32>, %k: tensor<?x2x16xf16>, %v: tensor<?x2x16xf32>) {
  // expected-error @+1 {{'tfm.attention' op expected key element type 'f16' to match 'f32'}}
  %y = tfm.attention %q, %k, %v {scale = 1.0 : f32} : (tensor<?x8x16xf32>, tensor<?x2x16xf16>, tensor<?x2x16xf32>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @f42(%q: tensor<?x?x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>) {
  // expected-error @+1 {{'tfm.attention' op expected static head counts in query and key}}
  %y = tfm.attention %q, %k, %v {scale = 1.0 : f32} : (tensor<?x?x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @f43(%q: tensor<?x8x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x4x16xf32>) {
  // expected-error @+1 {{'tfm.attention' op expected value heads (4) to match key heads (2)}}
  %y = tfm.attention %q, %k, %v {scale = 1.0 : f32} : (tensor<?x8x16xf32>, tensor<?x2x16xf32>, tensor<?x4x16xf32>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @f44(%q: tensor<?x8x16xf32>, %k: tensor<?x3x16xf32>, %v: tensor<?x3x16xf32>) {
  // expected-error @+1 {{'tfm.attention' op expected kv_heads (3) to divide heads (8)}}
  %y = tfm.attention %q, %k, %v {scale = 1.0 : f32} : (tensor<?x8x16xf32>, tensor<?x3x16xf32>, tensor<?x3x16xf32>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @f45(%q: tensor<?x8x16xf32>, %k: tensor<?x2x8xf32>, %v: tensor<?x2x16xf32>) {
  // expected-error @+1 {{'tfm.attention' op expected key head_dim (8) to match query head_dim (16)}}
  %y = tfm.attention %q, %k, %v {scale = 1.0 : f32} : (tensor<?x8x16xf32>, tensor<?x2x8xf32>, tensor<?x2x16xf32>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @f46(%q: tensor<?x8x16xf32>, %k: tensor<5x2x16xf32>, %v: tensor<6x2x16xf32>) {
  // expected-error @+1 {{'tfm.attention' op expected value length (6) to match key length (5)}}
  %y = tfm.attention %q, %k, %v {scale = 1.0 : f32} : (tensor<?x8x16xf32>, tensor<5x2x16xf32>, tensor<6x2x16xf32>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @f47(%q: tensor<3x8x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>) {
  // expected-error @+1 {{'tfm.attention' op expected result sequence length (4) to match query sequence length (3)}}
  %y = tfm.attention %q, %k, %v {scale = 1.0 : f32} : (tensor<3x8x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>) -> tensor<4x8x16xf32>
  return
}

// -----

func.func @f48(%q: tensor<?x8x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>) {
  // expected-error @+1 {{'tfm.attention' op expected result heads (4) to match query heads (8)}}
  %y = tfm.attention %q, %k, %v {scale = 1.0 : f32} : (tensor<?x8x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>) -> tensor<?x4x16xf32>
  return
}

// -----

func.func @f49(%q: tensor<?x8x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x32xf32>) {
  // expected-error @+1 {{'tfm.attention' op expected result head_dim (16) to match value head_dim (32)}}
  %y = tfm.attention %q, %k, %v {scale = 1.0 : f32} : (tensor<?x8x16xf32>, tensor<?x2x16xf32>, tensor<?x2x32xf32>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @f50(%q: tensor<?x8x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>, %b: tensor<8x?xf32>) {
  // expected-error @+1 {{'tfm.attention' op expected bias to be rank 3, got rank 2}}
  %y = tfm.attention %q, %k, %v bias %b {scale = 1.0 : f32} : (tensor<?x8x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<8x?xf32>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @f51(%q: tensor<?x8x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>, %b: tensor<8x?x?xf16>) {
  // expected-error @+1 {{'tfm.attention' op expected bias element type 'f16' to match 'f32'}}
  %y = tfm.attention %q, %k, %v bias %b {scale = 1.0 : f32} : (tensor<?x8x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<8x?x?xf16>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @f52(%q: tensor<?x8x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>, %b: tensor<4x?x?xf32>) {
  // expected-error @+1 {{'tfm.attention' op expected bias heads (4) to match query heads (8)}}
  %y = tfm.attention %q, %k, %v bias %b {scale = 1.0 : f32} : (tensor<?x8x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<4x?x?xf32>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @f53(%q: tensor<3x8x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>, %b: tensor<8x2x?xf32>) {
  // expected-error @+1 {{'tfm.attention' op expected bias rows (2) to match query sequence length (3)}}
  %y = tfm.attention %q, %k, %v bias %b {scale = 1.0 : f32} : (tensor<3x8x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<8x2x?xf32>) -> tensor<3x8x16xf32>
  return
}

// -----

func.func @f54(%q: tensor<?x8x16xf32>, %k: tensor<5x2x16xf32>, %v: tensor<5x2x16xf32>, %b: tensor<8x?x6xf32>) {
  // expected-error @+1 {{'tfm.attention' op expected bias columns (6) to match key length (5)}}
  %y = tfm.attention %q, %k, %v bias %b {scale = 1.0 : f32} : (tensor<?x8x16xf32>, tensor<5x2x16xf32>, tensor<5x2x16xf32>, tensor<8x?x6xf32>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @f56(%q: tensor<?x8x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>) {
  // expected-error @+1 {{'tfm.attention' op expected a positive window, got 0}}
  %y = tfm.attention %q, %k, %v {causal, scale = 1.0 : f32, window = 0 : i64} : (tensor<?x8x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @f57(%q: tensor<?x8x16xf32>, %k: tensor<?x2x16xf32>, %v: tensor<?x2x16xf32>) {
  // expected-error @+1 {{'tfm.attention' op expected a finite, non-zero scale, got 0}}
  %y = tfm.attention %q, %k, %v {scale = 0.0 : f32} : (tensor<?x8x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @kv_dynamic_cache(%c: tensor<?x2x16x2x4xf32>, %k: tensor<?x2x4xf32>, %p: index) {
  // expected-error @+1 {{'tfm.kv_cache_append' op expected a static cache [layers, 2, capacity, kv_heads, head_dim], got 'tensor<?x2x16x2x4xf32>'}}
  %0 = tfm.kv_cache_append %c[0], %k, %k at %p : tensor<?x2x16x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>
  return
}

// -----

func.func @kv_not_two(%c: tensor<3x3x16x2x4xf32>, %k: tensor<?x2x4xf32>, %p: index) {
  // expected-error @+1 {{'tfm.kv_cache_append' op expected the cache's second dimension to be 2 (keys, values), got 3}}
  %0 = tfm.kv_cache_append %c[0], %k, %k at %p : tensor<3x3x16x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>
  return
}

// -----

func.func @kv_latent_with_value(%c: tensor<3x1x16x1x6xf32>, %k: tensor<?x1x6xf32>, %p: index) {
  // expected-error @+1 {{'tfm.kv_cache_append' op expected the cache's second dimension to be 2 (keys, values), got 1}}
  %0 = tfm.kv_cache_append %c[0], %k, %k at %p : tensor<3x1x16x1x6xf32>, tensor<?x1x6xf32>, tensor<?x1x6xf32>
  return
}

// -----

func.func @kv_two_planes_without_value(%c: tensor<3x2x16x1x6xf32>, %p: index) {
  // expected-error @+1 {{'tfm.kv_cache_read' op expected the cache's second dimension to be 1 (a latent cache: keys alone, without values), got 2}}
  %k = tfm.kv_cache_read %c[0] length %p : tensor<3x2x16x1x6xf32> -> tensor<?x1x6xf32>
  return
}

// -----

func.func @kv_ring_latent(%c: tensor<3x1x16x1x6xf32>, %k: tensor<?x1x6xf32>, %p: index) {
  // expected-error @+1 {{'tfm.kv_ring_append' op expected the cache's second dimension to be 2 (keys, values), got 1}}
  %0 = tfm.kv_ring_append %c[0] rows 0 ring 4, %k, %k at %p : tensor<3x1x16x1x6xf32>, tensor<?x1x6xf32>, tensor<?x1x6xf32>
  return
}

// -----

func.func @kv_layer(%c: tensor<3x2x16x2x4xf32>, %p: index) {
  // expected-error @+1 {{'tfm.kv_cache_read' op expected layer 3 to be in [0, 3)}}
  %k, %v = tfm.kv_cache_read %c[3] length %p : tensor<3x2x16x2x4xf32> -> tensor<?x2x4xf32>, tensor<?x2x4xf32>
  return
}

// -----

func.func @kv_ring_outside(%c: tensor<3x2x16x2x4xf32>, %k: tensor<?x2x4xf32>, %p: index) {
  // expected-error @+1 {{'tfm.kv_ring_append' op expected a ring of a positive window within the cache's 16 rows, got rows [14, 18)}}
  %0 = tfm.kv_ring_append %c[2] rows 14 ring 4, %k, %k at %p : tensor<3x2x16x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>
  return
}

// -----

func.func @kv_ring_new_rows(%c: tensor<3x2x16x2x4xf32>, %k: tensor<?x2x4xf32>, %v: tensor<?x4x4xf32>, %p: index) {
  // expected-error @+1 {{'tfm.kv_ring_read' op expected new value heads (4) to match cache kv_heads (2)}}
  %rk, %rv = tfm.kv_ring_read %c[2] rows 0 ring 4 positions %p to %p then %k, %v : tensor<3x2x16x2x4xf32>, tensor<?x2x4xf32>, tensor<?x4x4xf32> -> tensor<?x2x4xf32>, tensor<?x2x4xf32>
  return
}

// -----

func.func @kv_heads(%c: tensor<3x2x16x2x4xf32>, %k: tensor<?x4x4xf32>, %p: index) {
  // expected-error @+1 {{'tfm.kv_cache_append' op expected key heads (4) to match cache kv_heads (2)}}
  %0 = tfm.kv_cache_append %c[0], %k, %k at %p : tensor<3x2x16x2x4xf32>, tensor<?x4x4xf32>, tensor<?x4x4xf32>
  return
}

// -----

func.func @kv_head_dim(%c: tensor<3x2x16x2x4xf32>, %p: index) {
  // expected-error @+1 {{'tfm.kv_cache_read' op expected value head_dim (8) to match cache head_dim (4)}}
  %k, %v = tfm.kv_cache_read %c[0] length %p : tensor<3x2x16x2x4xf32> -> tensor<?x2x4xf32>, tensor<?x2x8xf32>
  return
}

// -----

func.func @kv_rank(%c: tensor<3x2x16x2x4xf32>, %k: tensor<?x8xf32>, %p: index) {
  // expected-error @+1 {{'tfm.kv_cache_append' op expected key to be rank 3, got rank 2}}
  %0 = tfm.kv_cache_append %c[0], %k, %k at %p : tensor<3x2x16x2x4xf32>, tensor<?x8xf32>, tensor<?x8xf32>
  return
}

// -----

func.func @kv_element(%c: tensor<3x2x16x2x4xf32>, %k: tensor<?x2x4xf16>, %p: index) {
  // expected-error @+1 {{'tfm.kv_cache_append' op expected key element type 'f16' to match 'f32'}}
  %0 = tfm.kv_cache_append %c[0], %k, %k at %p : tensor<3x2x16x2x4xf32>, tensor<?x2x4xf16>, tensor<?x2x4xf16>
  return
}

// -----

func.func @kv_lengths(%c: tensor<3x2x16x2x4xf32>, %k: tensor<3x2x4xf32>, %v: tensor<2x2x4xf32>, %p: index) {
  // expected-error @+1 {{'tfm.kv_cache_append' op expected value length (2) to match key length (3)}}
  %0 = tfm.kv_cache_append %c[0], %k, %v at %p : tensor<3x2x16x2x4xf32>, tensor<3x2x4xf32>, tensor<2x2x4xf32>
  return
}

// -----

func.func @concat_one_input(%a: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{expected at least 2 inputs, got 1}}
  %c = tfm.concat %a : (tensor<2x4xf32>) -> tensor<2x4xf32>
  return %c : tensor<2x4xf32>
}

// -----

func.func @concat_rows(%a: tensor<2x4xf32>, %b: tensor<3x4xf32>) -> tensor<6x4xf32> {
  // expected-error @+1 {{expected result rows (6) to match the inputs' rows together (5)}}
  %c = tfm.concat %a, %b : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<6x4xf32>
  return %c : tensor<6x4xf32>
}

// -----

func.func @concat_width(%a: tensor<2x4xf32>, %b: tensor<3x5xf32>) -> tensor<5x4xf32> {
  // expected-error @+1 {{expected input 1 dimension 1 (5) to match result dimension 1 (4)}}
  %c = tfm.concat %a, %b : (tensor<2x4xf32>, tensor<3x5xf32>) -> tensor<5x4xf32>
  return %c : tensor<5x4xf32>
}

// -----

func.func @gated_without_activation(%x: tensor<3x8xf32>, %w: tensor<12x8xf32>) -> tensor<3x6xf32> {
  // expected-error @+1 {{expected an activation with 'gated'}}
  %y = tfm.linear %x, %w gated : (tensor<3x8xf32>, tensor<12x8xf32>) -> tensor<3x6xf32>
  return %y : tensor<3x6xf32>
}

// -----

func.func @gated_with_bias(%x: tensor<3x8xf32>, %w: tensor<12x8xf32>, %b: tensor<6xf32>) -> tensor<3x6xf32> {
  // expected-error @+1 {{expected no bias with 'gated'}}
  %y = tfm.linear %x, %w bias %b activation silu gated : (tensor<3x8xf32>, tensor<12x8xf32>, tensor<6xf32>) -> tensor<3x6xf32>
  return %y : tensor<3x6xf32>
}

// -----

func.func @gated_odd_rows(%x: tensor<3x8xf32>, %w: tensor<13x8xf32>) -> tensor<3x6xf32> {
  // expected-error @+1 {{expected an even number of weight rows with 'gated' (gate, then up), got 13}}
  %y = tfm.linear %x, %w activation silu gated : (tensor<3x8xf32>, tensor<13x8xf32>) -> tensor<3x6xf32>
  return %y : tensor<3x6xf32>
}

// -----

func.func @add_norm_gamma(%x: tensor<3x8xf32>, %g: tensor<7xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{expected gamma size (7) to match input features (8)}}
  %s, %n = tfm.add_rms_norm %x, %x, %g {epsilon = 1.0e-5 : f32} : tensor<3x8xf32>, tensor<7xf32>
  return %n : tensor<3x8xf32>
}

// -----

func.func @add_layer_norm_rank(%x: tensor<3x2x8xf32>, %g: tensor<8xf32>) -> tensor<3x2x8xf32> {
  // expected-error @+1 {{'tfm.add_layer_norm' op expected lhs to be rank 2, got rank 3}}
  %s, %n = tfm.add_layer_norm %x, %x, %g {epsilon = 1.0e-5 : f32} : tensor<3x2x8xf32>, tensor<8xf32>
  return %n : tensor<3x2x8xf32>
}

// -----

func.func @add_layer_norm_gamma(%x: tensor<3x8xf32>, %g: tensor<7xf32>, %b: tensor<8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{'tfm.add_layer_norm' op expected gamma size (7) to match input features (8)}}
  %s, %n = tfm.add_layer_norm %x, %x, %g, %b {epsilon = 1.0e-5 : f32} : tensor<3x8xf32>, tensor<7xf32>, tensor<8xf32>
  return %n : tensor<3x8xf32>
}

// -----

func.func @add_layer_norm_beta(%x: tensor<3x8xf32>, %g: tensor<8xf32>, %b: tensor<9xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{'tfm.add_layer_norm' op expected beta size (9) to match input features (8)}}
  %s, %n = tfm.add_layer_norm %x, %x, %g, %b {epsilon = 1.0e-5 : f32} : tensor<3x8xf32>, tensor<8xf32>, tensor<9xf32>
  return %n : tensor<3x8xf32>
}

// -----

func.func @add_layer_norm_beta_type(%x: tensor<3x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf16>) -> tensor<3x8xf32> {
  // expected-error @+1 {{'tfm.add_layer_norm' op expected beta element type 'f16' to match 'f32'}}
  %s, %n = tfm.add_layer_norm %x, %x, %g, %b {epsilon = 1.0e-5 : f32} : tensor<3x8xf32>, tensor<8xf32>, tensor<8xf16>
  return %n : tensor<3x8xf32>
}

// -----

func.func @add_layer_norm_epsilon(%x: tensor<3x8xf32>, %g: tensor<8xf32>) -> tensor<3x8xf32> {
  // expected-error @+1 {{'tfm.add_layer_norm' op expected a non-negative epsilon, got -1}}
  %s, %n = tfm.add_layer_norm %x, %x, %g {epsilon = -1.0 : f32} : tensor<3x8xf32>, tensor<8xf32>
  return %n : tensor<3x8xf32>
}

// -----

func.func @add_rms_norm_rank(%x: tensor<8xf32>, %g: tensor<8xf32>) -> tensor<8xf32> {
  // expected-error @+1 {{'tfm.add_rms_norm' op expected lhs to be rank 2, got rank 1}}
  %s, %n = tfm.add_rms_norm %x, %x, %g {epsilon = 1.0e-5 : f32} : tensor<8xf32>, tensor<8xf32>
  return %n : tensor<8xf32>
}

// -----

func.func @rope_rotary_odd(%x: tensor<?x2x8xf32>, %p: tensor<?xi32>) -> tensor<?x2x8xf32> {
  // expected-error @+1 {{'tfm.rope' op expected rotary_dim to be even and in (0, 8], got 3}}
  %y = tfm.rope rotate_half %x, %p {theta = 1.0e4 : f32, rotary_dim = 3 : i64} : tensor<?x2x8xf32>, tensor<?xi32>
  return %y : tensor<?x2x8xf32>
}

// -----

func.func @rope_rotary_wide(%x: tensor<?x2x8xf32>, %p: tensor<?xi32>) -> tensor<?x2x8xf32> {
  // expected-error @+1 {{'tfm.rope' op expected rotary_dim to be even and in (0, 8], got 10}}
  %y = tfm.rope rotate_half %x, %p {theta = 1.0e4 : f32, rotary_dim = 10 : i64} : tensor<?x2x8xf32>, tensor<?xi32>
  return %y : tensor<?x2x8xf32>
}

// -----

func.func @rope_frequency_count(%x: tensor<?x2x8xf32>, %p: tensor<?xi32>) -> tensor<?x2x8xf32> {
  // expected-error @+1 {{'tfm.rope' op expected 2 frequencies (one per rotated pair), got 3}}
  %y = tfm.rope rotate_half %x, %p {theta = 1.0e4 : f32, rotary_dim = 4 : i64, frequencies = array<f32: 1.0, 0.5, 0.25>} : tensor<?x2x8xf32>, tensor<?xi32>
  return %y : tensor<?x2x8xf32>
}

// -----

func.func @rope_frequency_value(%x: tensor<?x2x4xf32>, %p: tensor<?xi32>) -> tensor<?x2x4xf32> {
  // expected-error @+1 {{'tfm.rope' op expected finite frequencies of at least 0, got -1.000000e+00 at 1}}
  %y = tfm.rope rotate_half %x, %p {theta = 1.0e4 : f32, frequencies = array<f32: 1.0, -1.0>} : tensor<?x2x4xf32>, tensor<?xi32>
  return %y : tensor<?x2x4xf32>
}

// -----

func.func @token_row_width(%h: tensor<?x16xf32>, %ids: tensor<?xi32>) {
  // expected-error @+1 {{'tfm.token_row' op expected result width (8) to match input width (16)}}
  %e = tfm.token_row %h at %ids : tensor<?x16xf32>, tensor<?xi32> -> tensor<8xf32>
  return
}

// -----

func.func @token_row_rows(%h: tensor<4x16xf32>, %ids: tensor<5xi32>) {
  // expected-error @+1 {{'tfm.token_row' op expected tokens length (5) to match input rows (4)}}
  %e = tfm.token_row %h at %ids : tensor<4x16xf32>, tensor<5xi32> -> tensor<16xf32>
  return
}

// -----

func.func @pool_width(%h: tensor<?x16xf32>) {
  // expected-error @+1 {{'tfm.pool' op expected result width (8) to match input width (16)}}
  %e = tfm.pool mean %h : tensor<?x16xf32> -> tensor<8xf32>
  return
}

// -----

func.func @pool_rank(%h: tensor<16xf32>) {
  // expected-error @+1 {{'tfm.pool' op expected input to be rank 2, got rank 1}}
  %e = tfm.pool mean %h : tensor<16xf32> -> tensor<16xf32>
  return
}

// -----

func.func @pool_packed_rank(%h: tensor<?x16xf32>, %n: tensor<?xi32>) {
  // expected-error @+1 {{'tfm.pool' op expected result to be rank 2, got rank 1}}
  %e = tfm.pool mean %h lengths %n : tensor<?xi32> : tensor<?x16xf32> -> tensor<16xf32>
  return
}

// -----

func.func @attention_packed_cross(%q: tensor<4x2x8xf32>, %k: tensor<6x2x8xf32>, %n: tensor<?xi32>) {
  // expected-error @+1 {{'tfm.attention' op expected key length (6) to match query sequence length (4)}}
  %a = tfm.attention %q, %k, %k lengths %n {scale = 0.5 : f32} : (tensor<4x2x8xf32>, tensor<6x2x8xf32>, tensor<6x2x8xf32>, tensor<?xi32>) -> tensor<4x2x8xf32>
  return
}

// -----

func.func @relative_heads(%q: tensor<?x8x16xf32>, %k: tensor<?x8x16xf32>, %t: tensor<32x4xf32>) {
  // expected-error @+1 {{'tfm.attention' op expected relative_bias heads (4) to match query heads (8)}}
  %y = tfm.attention %q, %k, %k relative_bias %t {max_distance = 128 : i64, scale = 1.0 : f32} : (tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<32x4xf32>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @relative_odd_buckets(%q: tensor<?x8x16xf32>, %k: tensor<?x8x16xf32>, %t: tensor<31x8xf32>) {
  // expected-error @+1 {{'tfm.attention' op expected a static relative_bias bucket count, even and at least 4, got 31}}
  %y = tfm.attention %q, %k, %k relative_bias %t {max_distance = 128 : i64, scale = 1.0 : f32} : (tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<31x8xf32>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @relative_no_distance(%q: tensor<?x8x16xf32>, %k: tensor<?x8x16xf32>, %t: tensor<32x8xf32>) {
  // expected-error @+1 {{'tfm.attention' op expected 'max_distance' above the 16 exactly bucketed distances with relative_bias}}
  %y = tfm.attention %q, %k, %k relative_bias %t {causal, scale = 1.0 : f32} : (tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<32x8xf32>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @max_distance_alone(%q: tensor<?x8x16xf32>, %k: tensor<?x8x16xf32>) {
  // expected-error @+1 {{'tfm.attention' op expected 'max_distance' only with relative_bias}}
  %y = tfm.attention %q, %k, %k {max_distance = 128 : i64, scale = 1.0 : f32} : (tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x16xf32>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @relative_packed(%q: tensor<?x8x16xf32>, %t: tensor<32x8xf32>, %n: tensor<?xi32>) {
  // expected-error @+1 {{'tfm.attention' op expected no relative_bias over packed sequences}}
  %y = tfm.attention %q, %q, %q lengths %n relative_bias %t {max_distance = 128 : i64, scale = 1.0 : f32} : (tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?x8x16xf32>, tensor<?xi32>, tensor<32x8xf32>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @clamp_bounds(%x: tensor<4xf32>) {
  // expected-error @+1 {{'tfm.clamp' op expected min <= max, got 1.000000e+00 and -1.000000e+00}}
  %y = tfm.clamp %x {max = -1.0 : f32, min = 1.0 : f32} : tensor<4xf32>
  return
}

// -----

func.func @patches_dynamic(%x: tensor<3x?x32xf32>) {
  // expected-error @+1 {{'tfm.patches' op needs an image of static size, got 'tensor<3x?x32xf32>'}}
  %y = tfm.patches %x {patch = 8 : i64} : tensor<3x?x32xf32> -> tensor<16x192xf32>
  return
}

// -----

func.func @patches_divide(%x: tensor<3x32x30xf32>) {
  // expected-error @+1 {{'tfm.patches' op patch 8 does not divide the image's 32x30}}
  %y = tfm.patches %x {patch = 8 : i64} : tensor<3x32x30xf32> -> tensor<16x192xf32>
  return
}

// -----

func.func @patches_strides(%x: tensor<1x16x64xf32>) {
  // expected-error @+1 {{'tfm.patches' op expected two positive strides}}
  %y = tfm.patches %x {patch = 8 : i64, strides = array<i64: 4, 0>} : tensor<1x16x64xf32> -> tensor<45x64xf32>
  return
}

// -----

func.func @patches_strided_rows(%x: tensor<1x16x64xf32>) {
  // expected-error @+1 {{'tfm.patches' op expected result rows (44) to match patches (45)}}
  %y = tfm.patches %x {patch = 8 : i64, strides = array<i64: 4, 4>} : tensor<1x16x64xf32> -> tensor<44x64xf32>
  return
}

// -----

func.func @patches_rows(%x: tensor<3x32x32xf32>) {
  // expected-error @+1 {{'tfm.patches' op expected result rows (15) to match patches (16)}}
  %y = tfm.patches %x {patch = 8 : i64} : tensor<3x32x32xf32> -> tensor<15x192xf32>
  return
}

// -----

func.func @patches_width(%x: tensor<3x32x32xf32>) {
  // expected-error @+1 {{'tfm.patches' op expected result width (190) to match patch size (192)}}
  %y = tfm.patches %x {patch = 8 : i64} : tensor<3x32x32xf32> -> tensor<16x190xf32>
  return
}

// -----

func.func @channel_norm_gamma(%x: tensor<?x4xf32>, %g: tensor<8xf32>) {
  // expected-error @+1 {{'tfm.channel_norm' op expected gamma size (8) to match input features (4)}}
  %y = tfm.channel_norm %x, %g {epsilon = 1.0e-5 : f32} : (tensor<?x4xf32>, tensor<8xf32>) -> tensor<?x4xf32>
  return
}

// -----

func.func @channel_norm_result(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{'tfm.channel_norm' op expected result type 'tensor<?x8xf32>' to match input type 'tensor<?x4xf32>'}}
  %y = tfm.channel_norm %x {epsilon = 1.0e-5 : f32} : (tensor<?x4xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @windows_padding(%x: tensor<80x100xf32>) {
  // expected-error @+1 {{'tfm.windows' op expected a positive kernel and stride and a padding below the kernel, got kernel 3, stride 1, padding 3}}
  %y = tfm.windows %x {channels_first, kernel = 3 : i64, padding = 3 : i64, stride = 1 : i64} : tensor<80x100xf32> -> tensor<104x240xf32>
  return
}

// -----

func.func @windows_rows(%x: tensor<100x32xf32>) {
  // expected-error @+1 {{'tfm.windows' op expected result rows (100) to match windows (50)}}
  %y = tfm.windows %x {kernel = 3 : i64, padding = 1 : i64, stride = 2 : i64} : tensor<100x32xf32> -> tensor<100x96xf32>
  return
}

// -----

func.func @quantize_rows_length(%x: tensor<?x2x4xf32>) {
  // expected-error @+1 {{'tfm.quantize_rows' op expected result row (4) to match input row + 4 (its scale) (8)}}
  %q = tfm.quantize_rows %x : tensor<?x2x4xf32> -> tensor<?x2x4xi8>
  return
}

// -----

func.func @quantize_rows_dynamic(%x: tensor<2x?xf32>) {
  // expected-error @+1 {{'tfm.quantize_rows' op expected static rows, got 'tensor<2x?xf32>' and 'tensor<2x?xi8>'}}
  %q = tfm.quantize_rows %x : tensor<2x?xf32> -> tensor<2x?xi8>
  return
}

// -----

func.func @quantize_rows_f16_length(%x: tensor<?x2x4xf32>) {
  // expected-error @+1 {{'tfm.quantize_rows' op expected result row (8) to match input row (4)}}
  %q = tfm.quantize_rows %x : tensor<?x2x4xf32> -> tensor<?x2x8xf16>
  return
}

// -----

func.func @quantize_rows_to_f32(%x: tensor<?x4xf32>) {
  // expected-error @+1 {{'tfm.quantize_rows' op result #0 must be ranked tensor of 8-bit signless integer or bfloat16 type or 16-bit float values}}
  %q = tfm.quantize_rows %x : tensor<?x4xf32> -> tensor<?x4xf32>
  return
}

// -----

func.func @dequantize_rows_heads(%q: tensor<?x2x8xi8>) {
  // expected-error @+1 {{'tfm.dequantize_rows' op expected input dimension 1 (2) to match result dimension 1 (3)}}
  %x = tfm.dequantize_rows %q : tensor<?x2x8xi8> -> tensor<?x3x4xf32>
  return
}

// -----

func.func @dequantize_rows_f16(%q: tensor<?x8xi8>) {
  // expected-error @+1 {{'tfm.dequantize_rows' op expected result element type 'f16' to match 'f32'}}
  %x = tfm.dequantize_rows %q : tensor<?x8xi8> -> tensor<?x4xf16>
  return
}

// -----

func.func @kv_cache_mixed(%c: tensor<3x2x16x2x8xi8>, %k: tensor<?x2x8xf32>, %p: index) {
  // expected-error @+1 {{'tfm.kv_cache_append' op expected key element type 'f32' to match 'i8'}}
  %0 = tfm.kv_cache_append %c[0], %k, %k at %p : tensor<3x2x16x2x8xi8>, tensor<?x2x8xf32>, tensor<?x2x8xf32>
  return
}

// -----

func.func @gather_rows_range(%x: tensor<4x8xf32>) {
  // expected-error @+1 {{'tfm.gather_rows' op row 4 is outside the input's 4}}
  %y = tfm.gather_rows %x {rows = array<i64: 0, 4>} : tensor<4x8xf32> -> tensor<2x8xf32>
  return
}

// -----

func.func @window_attention_tiles(%q: tensor<30x2x8xf32>, %bias: tensor<1x2x16x16xf32>) {
  // expected-error @+1 {{'tfm.window_attention' op expected windows of 16 rows to tile the 30 rows}}
  %a = tfm.window_attention %q, %q, %q, %bias {scale = 1.0 : f32, window = 16 : i64} : (tensor<30x2x8xf32>, tensor<30x2x8xf32>, tensor<30x2x8xf32>, tensor<1x2x16x16xf32>) -> tensor<30x2x8xf32>
  return
}

// -----

func.func @window_attention_bias(%q: tensor<48x2x8xf32>, %bias: tensor<2x2x16x16xf32>) {
  // expected-error @+1 {{'tfm.window_attention' op expected a bias [b, 2, 16, 16] with b dividing the 3 windows}}
  %a = tfm.window_attention %q, %q, %q, %bias {scale = 1.0 : f32, window = 16 : i64} : (tensor<48x2x8xf32>, tensor<48x2x8xf32>, tensor<48x2x8xf32>, tensor<2x2x16x16xf32>) -> tensor<48x2x8xf32>
  return
}

// -----

// expected-error @+1 {{argument 1 of @f: a global attention mask is a tensor<?xi32>, got 'tensor<?xf32>'}}
func.func private @f(tensor<?xi32> {tfm.input = #tfm.input<token_ids>}, tensor<?xf32> {tfm.input = #tfm.input<global_attention>})

// -----

func.func @sparse_attention_types(%q: tensor<?x2x8xf32>, %g: tensor<?x2x4xf32>) {
  // expected-error @+1 {{'tfm.sparse_attention' op expected global_key of the query's type 'tensor<?x2x8xf32>'}}
  %a = tfm.sparse_attention %q, %q, %q, %q, %g, %q {scale = 1.0 : f32, window = 2 : i64} : (tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x2x4xf32>, tensor<?x2x8xf32>) -> tensor<?x2x8xf32>
  return
}

// -----

func.func @sparse_attention_window(%q: tensor<?x2x8xf32>) {
  // expected-error @+1 {{'tfm.sparse_attention' op expected a positive window, got -2}}
  %a = tfm.sparse_attention %q, %q, %q, %q, %q, %q {scale = 1.0 : f32, window = -2 : i64} : (tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>) -> tensor<?x2x8xf32>
  return
}

// -----

func.func @sparse_attention_mask(%q: tensor<6x2x8xf32>, %mask: tensor<5xi32>) {
  // expected-error @+1 {{'tfm.sparse_attention' op expected global length (5) to match query rows (6)}}
  %a = tfm.sparse_attention %q, %q, %q, %q, %q, %q global %mask {scale = 1.0 : f32, window = 2 : i64} : (tensor<6x2x8xf32>, tensor<6x2x8xf32>, tensor<6x2x8xf32>, tensor<6x2x8xf32>, tensor<6x2x8xf32>, tensor<6x2x8xf32>, tensor<5xi32>) -> tensor<6x2x8xf32>
  return
}

// -----

func.func @sparse_attention_prefix(%q: tensor<?x2x8xf32>) {
  // expected-error @+1 {{'tfm.sparse_attention' op expected a non-negative global_prefix, got -1}}
  %a = tfm.sparse_attention %q, %q, %q, %q, %q, %q {global_prefix = -1 : i64, scale = 1.0 : f32, window = 2 : i64} : (tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>) -> tensor<?x2x8xf32>
  return
}

// -----

func.func @sinks_per_head(%q: tensor<?x8x16xf32>, %k: tensor<?x2x16xf32>, %sinks: tensor<2xf32>) {
  // expected-error @+1 {{'tfm.attention' op expected sinks (2) to match query heads (8)}}
  %y = tfm.attention %q, %k, %k sinks %sinks {causal, scale = 0.25 : f32} : (tensor<?x8x16xf32>, tensor<?x2x16xf32>, tensor<?x2x16xf32>, tensor<2xf32>) -> tensor<?x8x16xf32>
  return
}

// -----

func.func @moe_bias_rows(%x: tensor<?x8xf32>, %logits: tensor<?x1xf32>, %g: tensor<16x8xf32>, %d: tensor<8x16xf32>, %b: tensor<16xf32>) {
  // expected-error @+1 {{'tfm.moe' op expected expert 0's down bias to be [8], got 'tensor<16xf32>'}}
  %y = tfm.moe %x, %logits, [%g, %g, %d] biases [%b, %b, %b] {activation = #tfm<activation_kind silu>, top_k = 1 : i64} : (tensor<?x8xf32>, tensor<?x1xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @moe_swiglu_limit(%x: tensor<?x8xf32>, %logits: tensor<?x1xf32>, %g: tensor<16x8xf32>, %d: tensor<8x16xf32>) {
  // expected-error @+1 {{'tfm.moe' op expected a positive swiglu_limit, got -1}}
  %y = tfm.moe %x, %logits, [%g, %g, %d] {activation = #tfm<activation_kind silu>, swiglu_limit = -1.0 : f32, top_k = 1 : i64} : (tensor<?x8xf32>, tensor<?x1xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @moe_weights(%x: tensor<?x8xf32>, %logits: tensor<?x2xf32>, %g: tensor<16x8xf32>, %d: tensor<8x16xf32>) {
  // expected-error @+1 {{'tfm.moe' op expected 3 weights (gate, up, down) for each of 2 experts, got 3}}
  %y = tfm.moe %x, %logits, [%g, %g, %d] {activation = #tfm<activation_kind silu>, top_k = 1 : i64} : (tensor<?x8xf32>, tensor<?x2xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @moe_top_k(%x: tensor<?x8xf32>, %logits: tensor<?x1xf32>, %g: tensor<16x8xf32>, %d: tensor<8x16xf32>) {
  // expected-error @+1 {{'tfm.moe' op expected top_k in [1, 1], got 2}}
  %y = tfm.moe %x, %logits, [%g, %g, %d] {activation = #tfm<activation_kind silu>, top_k = 2 : i64} : (tensor<?x8xf32>, tensor<?x1xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @moe_down(%x: tensor<?x8xf32>, %logits: tensor<?x1xf32>, %g: tensor<16x8xf32>) {
  // expected-error @+1 {{'tfm.moe' op expected expert 0's down rows (16) to match input features (8)}}
  %y = tfm.moe %x, %logits, [%g, %g, %g] {activation = #tfm<activation_kind silu>, top_k = 1 : i64} : (tensor<?x8xf32>, tensor<?x1xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<16x8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @scatter_rows(%v: tensor<?x8xf32>, %s: tensor<?xf32>, %into: tensor<?x4xf32>, %rows: tensor<?xi32>) {
  // expected-error @+1 {{'tfm.scatter_add_rows' op expected value columns (8) to match columns (4)}}
  %y = tfm.scatter_add_rows %v, %s into %into[%rows] : tensor<?x8xf32>, tensor<?xf32>, tensor<?x4xf32>, tensor<?xi32>
  return
}

// -----

func.func @moe_shared(%x: tensor<?x8xf32>, %logits: tensor<?x1xf32>, %g: tensor<16x8xf32>, %d: tensor<8x16xf32>) {
  // expected-error @+1 {{'tfm.moe' op expected the shared expert's gate vector to be [1, 8], got 'tensor<16x8xf32>'}}
  %y = tfm.moe %x, %logits, [%g, %g, %d] shared [%g, %g, %d, %g] {activation = #tfm<activation_kind silu>, top_k = 1 : i64} : (tensor<?x8xf32>, tensor<?x1xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>, tensor<16x8xf32>, tensor<8x16xf32>, tensor<16x8xf32>) -> tensor<?x8xf32>
  return
}

// -----

func.func @route_groups(%logits: tensor<?x4xf32>) {
  // expected-error @+1 {{'tfm.route' op expected groups dividing the 4 experts, got 3}}
  %w, %e = tfm.route %logits {groups = 3 : i64, top_groups = 1 : i64, top_k = 1 : i64} : tensor<?x4xf32> -> tensor<?x1xf32>, tensor<?x1xi32>
  return
}

// -----

func.func @route_top_groups(%logits: tensor<?x4xf32>) {
  // expected-error @+1 {{'tfm.route' op expected top_groups in [1, 2] with at least top_k (3) experts in them, got 1}}
  %w, %e = tfm.route %logits {groups = 2 : i64, top_groups = 1 : i64, top_k = 3 : i64} : tensor<?x4xf32> -> tensor<?x3xf32>, tensor<?x3xi32>
  return
}

// -----

func.func @route_groups_alone(%logits: tensor<?x4xf32>) {
  // expected-error @+1 {{'tfm.route' op expected groups and top_groups together}}
  %w, %e = tfm.route %logits {groups = 2 : i64, top_k = 1 : i64} : tensor<?x4xf32> -> tensor<?x1xf32>, tensor<?x1xi32>
  return
}

// -----

func.func @route_bias(%logits: tensor<?x4xf32>, %bias: tensor<3xf32>) {
  // expected-error @+1 {{'tfm.route' op expected selection bias size (3) to match experts (4)}}
  %w, %e = tfm.route %logits selection_bias %bias {top_k = 1 : i64} : tensor<?x4xf32>, tensor<3xf32> -> tensor<?x1xf32>, tensor<?x1xi32>
  return
}

// -----

func.func @route_expert_scales(%logits: tensor<?x4xf32>, %scales: tensor<2xf32>) {
  // expected-error @+1 {{'tfm.route' op expected expert scales size (2) to match experts (4)}}
  %w, %e = tfm.route %logits expert_scales %scales {top_k = 1 : i64} : tensor<?x4xf32> expert_scales tensor<2xf32> -> tensor<?x1xf32>, tensor<?x1xi32>
  return
}

// -----

func.func @route_scale(%logits: tensor<?x4xf32>) {
  // expected-error @+1 {{'tfm.route' op expected a positive routed_scale, got -1}}
  %w, %e = tfm.route %logits {routed_scale = -1.0 : f32, top_k = 1 : i64} : tensor<?x4xf32> -> tensor<?x1xf32>, tensor<?x1xi32>
  return
}

// -----

func.func @head_linear_rows(%x: tensor<?x2x3xf32>, %w: tensor<9x3xf32>) {
  // expected-error @+1 {{'tfm.head_linear' op expected weight rows (9) to match heads times result width (10)}}
  %y = tfm.head_linear %x, %w : (tensor<?x2x3xf32>, tensor<9x3xf32>) -> tensor<?x2x5xf32>
  return
}

// -----

func.func @head_linear_width(%x: tensor<?x2x3xf32>, %w: tensor<10x4xf32>) {
  // expected-error @+1 {{'tfm.head_linear' op expected weight columns (4) to match input width (3)}}
  %y = tfm.head_linear %x, %w : (tensor<?x2x3xf32>, tensor<10x4xf32>) -> tensor<?x2x5xf32>
  return
}

// -----

func.func @softcap_negative(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'tfm.softcap' op expected a finite, positive cap, got -3}}
  %y = tfm.softcap %x {cap = -3.0 : f32} : tensor<?x8xf32>
  return
}

// -----

func.func @scale_infinite(%x: tensor<?x8xf32>) {
  // expected-error @+1 {{'tfm.scale' op expected a finite factor, got INF}}
  %y = tfm.scale %x {factor = 0x7F800000 : f32} : tensor<?x8xf32>
  return
}

// -----

func.func @attention_softcap_zero(%x: tensor<?x2x4xf32>) {
  // expected-error @+1 {{'tfm.attention' op expected a finite, positive softcap, got 0}}
  %y = tfm.attention %x, %x, %x {causal, scale = 0.5 : f32, softcap = 0.0 : f32} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x2x4xf32>
  return
}

// -----

func.func @long_rope_without_context(%x: tensor<?x2x4xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'tfm.rope' op expected long_frequencies and long_context together}}
  %y = tfm.rope rotate_half %x, %p {theta = 1.0e4 : f32, frequencies = array<f32: 1.0, 0.05>, long_frequencies = array<f32: 0.5, 0.025>} : tensor<?x2x4xf32>, tensor<?xi32>
  return
}

// -----

func.func @long_rope_without_short(%x: tensor<?x2x4xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'tfm.rope' op expected long_frequencies beside frequencies and without dynamic NTK scaling}}
  %y = tfm.rope rotate_half %x, %p {theta = 1.0e4 : f32, long_frequencies = array<f32: 0.5, 0.025>, long_context = 8 : i64} : tensor<?x2x4xf32>, tensor<?xi32>
  return
}

// -----

func.func @long_rope_count(%x: tensor<?x2x4xf32>, %p: tensor<?xi32>) {
  // expected-error @+1 {{'tfm.rope' op expected 2 frequencies (one per rotated pair), got 3}}
  %y = tfm.rope rotate_half %x, %p {theta = 1.0e4 : f32, frequencies = array<f32: 1.0, 0.05>, long_frequencies = array<f32: 0.5, 0.025, 0.1>, long_context = 8 : i64} : tensor<?x2x4xf32>, tensor<?xi32>
  return
}

// -----

func.func @conv2d_weight(%x: tensor<8x8x16xf32>, %w: tensor<32x100xf32>) {
  // expected-error @+1 {{'tfm.conv2d' op expected weight columns (100) to match channels * kernel * kernel (144)}}
  %y = tfm.conv2d %x, %w {kernel = 3 : i64, padding = array<i64: 1, 1, 1, 1>, stride = 1 : i64} : (tensor<8x8x16xf32>, tensor<32x100xf32>) -> tensor<8x8x32xf32>
  return
}

// -----

func.func @conv2d_size(%x: tensor<8x8x16xf32>, %w: tensor<32x144xf32>) {
  // expected-error @+1 {{'tfm.conv2d' op expected result rows (8) to match output rows (4)}}
  %y = tfm.conv2d %x, %w {kernel = 3 : i64, padding = array<i64: 1, 1, 1, 1>, stride = 2 : i64} : (tensor<8x8x16xf32>, tensor<32x144xf32>) -> tensor<8x8x32xf32>
  return
}

// -----

func.func @conv2d_padding(%x: tensor<8x8x16xf32>, %w: tensor<32x144xf32>) {
  // expected-error @+1 {{'tfm.conv2d' op expected padding [top, left, bottom, right], each at least 0 and below the kernel}}
  %y = tfm.conv2d %x, %w {kernel = 3 : i64, padding = array<i64: 1, 1>, stride = 1 : i64} : (tensor<8x8x16xf32>, tensor<32x144xf32>) -> tensor<8x8x32xf32>
  return
}

// -----

func.func @conv2d_dynamic(%x: tensor<?x8x16xf32>, %w: tensor<32x144xf32>) {
  // expected-error @+1 {{'tfm.conv2d' op needs a feature map of static size, got 'tensor<?x8x16xf32>'}}
  %y = tfm.conv2d %x, %w {kernel = 3 : i64, padding = array<i64: 1, 1, 1, 1>, stride = 1 : i64} : (tensor<?x8x16xf32>, tensor<32x144xf32>) -> tensor<8x8x32xf32>
  return
}

// -----

func.func @conv2d_bias(%x: tensor<8x8x16xf32>, %w: tensor<32x144xf32>, %b: tensor<16xf32>) {
  // expected-error @+1 {{'tfm.conv2d' op expected bias size (16) to match input features (32)}}
  %y = tfm.conv2d %x, %w bias %b {kernel = 3 : i64, padding = array<i64: 1, 1, 1, 1>, stride = 1 : i64} : (tensor<8x8x16xf32>, tensor<32x144xf32>, tensor<16xf32>) -> tensor<8x8x32xf32>
  return
}

// -----

func.func @conv2d_kernel(%x: tensor<2x2x16xf32>, %w: tensor<32x400xf32>) {
  // expected-error @+1 {{'tfm.conv2d' op kernel 5 does not fit the padded 2x2 input}}
  %y = tfm.conv2d %x, %w {kernel = 5 : i64, padding = array<i64: 0, 0, 0, 0>, stride = 1 : i64} : (tensor<2x2x16xf32>, tensor<32x400xf32>) -> tensor<1x1x32xf32>
  return
}

// -----

func.func @conv2d_batch(%x: tensor<2x8x8x16xf32>, %w: tensor<32x144xf32>) {
  // expected-error @+1 {{'tfm.conv2d' op expected result images (3) to match input images (2)}}
  %y = tfm.conv2d %x, %w {kernel = 3 : i64, padding = array<i64: 1, 1, 1, 1>, stride = 1 : i64} : (tensor<2x8x8x16xf32>, tensor<32x144xf32>) -> tensor<3x8x8x32xf32>
  return
}

// -----

func.func @conv2d_batch_rank(%x: tensor<2x8x8x16xf32>, %w: tensor<32x144xf32>) {
  // expected-error @+1 {{'tfm.conv2d' op expected the result's rank (3) to be the input's (4)}}
  %y = tfm.conv2d %x, %w {kernel = 3 : i64, padding = array<i64: 1, 1, 1, 1>, stride = 1 : i64} : (tensor<2x8x8x16xf32>, tensor<32x144xf32>) -> tensor<8x8x32xf32>
  return
}

// -----

func.func @conv2d_rank(%x: tensor<8x16xf32>, %w: tensor<32x144xf32>) {
  // expected-error @+1 {{'tfm.conv2d' op expected input to be a feature map [H, W, C] or a batch of them [N, H, W, C], got rank 2}}
  %y = tfm.conv2d %x, %w {kernel = 3 : i64, padding = array<i64: 1, 1, 1, 1>, stride = 1 : i64} : (tensor<8x16xf32>, tensor<32x144xf32>) -> tensor<8x8x32xf32>
  return
}

// -----

func.func @image_windows_batch_rows(%x: tensor<2x8x8x16xf32>) {
  // expected-error @+1 {{'tfm.image_windows' op expected result rows (64) to match images * output pixels (128)}}
  %y = tfm.image_windows %x {kernel = 3 : i64, padding = array<i64: 1, 1, 1, 1>, stride = 1 : i64} : tensor<2x8x8x16xf32> -> tensor<64x144xf32>
  return
}

// -----

func.func @upsample_batch(%x: tensor<2x8x8x16xf32>) {
  // expected-error @+1 {{'tfm.upsample_nearest' op expected result images (1) to match input images (2)}}
  %y = tfm.upsample_nearest %x : tensor<2x8x8x16xf32> -> tensor<1x16x16x16xf32>
  return
}

// -----

func.func @image_windows_rows(%x: tensor<8x8x16xf32>) {
  // expected-error @+1 {{'tfm.image_windows' op expected result rows (63) to match images * output pixels (64)}}
  %y = tfm.image_windows %x {kernel = 3 : i64, padding = array<i64: 1, 1, 1, 1>, stride = 1 : i64} : tensor<8x8x16xf32> -> tensor<63x144xf32>
  return
}

// -----

func.func @image_windows_width(%x: tensor<8x8x16xf32>) {
  // expected-error @+1 {{'tfm.image_windows' op expected result width (16) to match channels * kernel * kernel (144)}}
  %y = tfm.image_windows %x {kernel = 3 : i64, padding = array<i64: 1, 1, 1, 1>, stride = 1 : i64} : tensor<8x8x16xf32> -> tensor<64x16xf32>
  return
}

// -----

func.func @image_windows_stride(%x: tensor<8x8x16xf32>) {
  // expected-error @+1 {{'tfm.image_windows' op expected a positive kernel and stride, got 3 and 0}}
  %y = tfm.image_windows %x {kernel = 3 : i64, padding = array<i64: 1, 1, 1, 1>, stride = 0 : i64} : tensor<8x8x16xf32> -> tensor<64x144xf32>
  return
}

// -----

func.func @group_norm_groups(%x: tensor<8x8x16xf32>, %g: tensor<16xf32>) {
  // expected-error @+1 {{'tfm.group_norm' op 5 groups do not divide 16 channels}}
  %y = tfm.group_norm %x, %g, %g {epsilon = 1.0e-5 : f32, groups = 5 : i64} : (tensor<8x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<8x8x16xf32>
  return
}

// -----

func.func @group_norm_rank(%x: tensor<16xf32>, %g: tensor<16xf32>) {
  // expected-error @+1 {{'tfm.group_norm' op expected input of rank 2 ([positions, C]), 3 ([H, W, C]) or 4 ([N, H, W, C]), got rank 1}}
  %y = tfm.group_norm %x, %g, %g {epsilon = 1.0e-5 : f32, groups = 4 : i64} : (tensor<16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<16xf32>
  return
}

// -----

func.func @group_norm_result(%x: tensor<8x8x16xf32>, %g: tensor<16xf32>) {
  // expected-error @+1 {{'tfm.group_norm' op expected result type 'tensor<64x16xf32>' to match input type 'tensor<8x8x16xf32>'}}
  %y = tfm.group_norm %x, %g, %g {epsilon = 1.0e-5 : f32, groups = 4 : i64} : (tensor<8x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<64x16xf32>
  return
}

// -----

func.func @group_norm_gamma(%x: tensor<8x8x16xf32>, %g: tensor<8xf32>, %b: tensor<16xf32>) {
  // expected-error @+1 {{'tfm.group_norm' op expected gamma size (8) to match input features (16)}}
  %y = tfm.group_norm %x, %g, %b {epsilon = 1.0e-5 : f32, groups = 4 : i64} : (tensor<8x8x16xf32>, tensor<8xf32>, tensor<16xf32>) -> tensor<8x8x16xf32>
  return
}

// -----

func.func @group_norm_epsilon(%x: tensor<8x8x16xf32>, %g: tensor<16xf32>) {
  // expected-error @+1 {{'tfm.group_norm' op expected a non-negative epsilon, got -1}}
  %y = tfm.group_norm %x, %g, %g {epsilon = -1.0 : f32, groups = 4 : i64} : (tensor<8x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<8x8x16xf32>
  return
}

// -----

func.func @upsample_factor(%x: tensor<8x8x16xf32>) {
  // expected-error @+1 {{'tfm.upsample_nearest' op expected the result (16x24) to enlarge the input (8x8) by one integer factor}}
  %y = tfm.upsample_nearest %x : tensor<8x8x16xf32> -> tensor<16x24x16xf32>
  return
}

// -----

func.func @upsample_channels(%x: tensor<8x8x16xf32>) {
  // expected-error @+1 {{'tfm.upsample_nearest' op expected result channels (8) to match input channels (16)}}
  %y = tfm.upsample_nearest %x : tensor<8x8x16xf32> -> tensor<16x16x8xf32>
  return
}

// -----

func.func @upsample_dynamic(%x: tensor<?x8x16xf32>) {
  // expected-error @+1 {{'tfm.upsample_nearest' op needs a feature map of static size, got 'tensor<?x8x16xf32>'}}
  %y = tfm.upsample_nearest %x : tensor<?x8x16xf32> -> tensor<16x16x16xf32>
  return
}

// -----

func.func @timestep_width(%t: tensor<1xf32>) {
  // expected-error @+1 {{'tfm.timestep_embedding' op expected a static, even result width, got 7}}
  %y = tfm.timestep_embedding %t {downscale_freq_shift = 0.0 : f32, max_period = 1.0e4 : f32, scale = 1.0 : f32} : tensor<1xf32> -> tensor<1x7xf32>
  return
}

// -----

func.func @timestep_rows(%t: tensor<2xf32>) {
  // expected-error @+1 {{'tfm.timestep_embedding' op expected result rows (1) to match timesteps (2)}}
  %y = tfm.timestep_embedding %t {downscale_freq_shift = 0.0 : f32, max_period = 1.0e4 : f32, scale = 1.0 : f32} : tensor<2xf32> -> tensor<1x8xf32>
  return
}

// -----

func.func @timestep_period(%t: tensor<1xf32>) {
  // expected-error @+1 {{'tfm.timestep_embedding' op expected a max_period greater than 1, got 1}}
  %y = tfm.timestep_embedding %t {downscale_freq_shift = 0.0 : f32, max_period = 1.0 : f32, scale = 1.0 : f32} : tensor<1xf32> -> tensor<1x8xf32>
  return
}

// -----

func.func @timestep_shift(%t: tensor<1xf32>) {
  // expected-error @+1 {{'tfm.timestep_embedding' op expected downscale_freq_shift below 4, got 4}}
  %y = tfm.timestep_embedding %t {downscale_freq_shift = 4.0 : f32, max_period = 1.0e4 : f32, scale = 1.0 : f32} : tensor<1xf32> -> tensor<1x8xf32>
  return
}

// -----

func.func @conv_state_shape(%x: tensor<?x12xf32>, %w: tensor<12x4xf32>, %s: tensor<4x12xf32>) {
  // expected-error @+1 {{'tfm.causal_conv1d' op expected state of type 'tensor<3x12xf32>', got 'tensor<4x12xf32>'}}
  %y, %f = tfm.causal_conv1d %x, %w state %s : (tensor<?x12xf32>, tensor<12x4xf32>, tensor<4x12xf32>) -> (tensor<?x12xf32>, tensor<3x12xf32>)
  return
}

// -----

func.func @conv_channels(%x: tensor<?x12xf32>, %w: tensor<10x4xf32>) {
  // expected-error @+1 {{'tfm.causal_conv1d' op expected weight rows (10) to match input channels (12)}}
  %y, %f = tfm.causal_conv1d %x, %w : (tensor<?x12xf32>, tensor<10x4xf32>) -> (tensor<?x12xf32>, tensor<3x12xf32>)
  return
}

// -----

func.func @conv_reset_without_state(%x: tensor<?x12xf32>, %w: tensor<12x4xf32>, %r: i1) {
  // expected-error @+1 {{'tfm.causal_conv1d' op expected a state beside reset}}
  %y, %f = tfm.causal_conv1d %x, %w reset %r : (tensor<?x12xf32>, tensor<12x4xf32>, i1) -> (tensor<?x12xf32>, tensor<3x12xf32>)
  return
}

// -----

func.func @delta_rule_heads(%q: tensor<?x3x8xf32>, %v: tensor<?x4x12xf32>, %a: tensor<?x4xf32>, %d: tensor<4xf32>) {
  // expected-error @+1 {{'tfm.gated_delta_rule' op expected the key heads (3) to divide the value heads (4)}}
  %o, %S = tfm.gated_delta_rule %q, %q, %v, %a, %d, %a {scale = 1.0 : f32} : (tensor<?x3x8xf32>, tensor<?x3x8xf32>, tensor<?x4x12xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<?x4xf32>) -> (tensor<?x4x12xf32>, tensor<4x8x12xf32>)
  return
}

// -----

func.func @delta_rule_state(%q: tensor<?x2x8xf32>, %v: tensor<?x4x12xf32>, %a: tensor<?x4xf32>, %d: tensor<4xf32>) {
  // expected-error @+1 {{'tfm.gated_delta_rule' op expected final_state of type 'tensor<4x8x12xf32>', got 'tensor<4x12x8xf32>'}}
  %o, %S = tfm.gated_delta_rule %q, %q, %v, %a, %d, %a {scale = 1.0 : f32} : (tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x4x12xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<?x4xf32>) -> (tensor<?x4x12xf32>, tensor<4x12x8xf32>)
  return
}

// -----

func.func @delta_rule_decay(%q: tensor<?x2x8xf32>, %v: tensor<?x4x12xf32>, %a: tensor<?x4xf32>, %d: tensor<2xf32>) {
  // expected-error @+1 {{'tfm.gated_delta_rule' op expected decay size (2) to match value heads (4)}}
  %o, %S = tfm.gated_delta_rule %q, %q, %v, %a, %d, %a {scale = 1.0 : f32} : (tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x4x12xf32>, tensor<?x4xf32>, tensor<2xf32>, tensor<?x4xf32>) -> (tensor<?x4x12xf32>, tensor<4x8x12xf32>)
  return
}

// -----

func.func @lora_rows(%x: tensor<3x16xf32>, %y: tensor<4x8xf32>) {
  // expected-error @+1 {{'tfm.lora' op expected projected sequence length (4) to match input sequence length (3)}}
  %z = tfm.lora %x, %y {target = 0 : i64} : tensor<3x16xf32>, tensor<4x8xf32> -> tensor<4x8xf32>
  return
}

// -----

func.func @lora_target(%x: tensor<?x16xf32>, %y: tensor<?x8xf32>) {
  // expected-error @+1 {{'tfm.lora' op expected a target index >= 0, got -1}}
  %z = tfm.lora %x, %y {target = -1 : i64} : tensor<?x16xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  return
}

// -----

func.func @lora_rank(%x: tensor<16xf32>, %y: tensor<?x8xf32>) {
  // expected-error @+1 {{'tfm.lora' op expected input to be rank 2 [seq, features] or rank 3 [seq, heads, head_dim], got rank 1}}
  %z = tfm.lora %x, %y {target = 0 : i64} : tensor<16xf32>, tensor<?x8xf32> -> tensor<?x8xf32>
  return
}
