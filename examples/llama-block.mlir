// One LLaMA block at the tfm level, written by hand: RMSNorm, Q/K/V
// projections with grouped-query heads, rotary positions, causal attention,
// output projection and residual, then the SwiGLU MLP.
tfm.weight_decl @layers.0.attention_norm.weight : tensor<64xf32>
tfm.weight_decl @layers.0.attention.wq.weight : tensor<64x64xf32>
tfm.weight_decl @layers.0.attention.wk.weight : tensor<32x64xf32>
tfm.weight_decl @layers.0.attention.wv.weight : tensor<32x64xf32>
tfm.weight_decl @layers.0.attention.wo.weight : tensor<64x64xf32>
tfm.weight_decl @layers.0.ffn_norm.weight : tensor<64xf32>
tfm.weight_decl @layers.0.feed_forward.w1.weight : tensor<172x64xf32>
tfm.weight_decl @layers.0.feed_forward.w2.weight : tensor<64x172xf32>
tfm.weight_decl @layers.0.feed_forward.w3.weight : tensor<172x64xf32>
func.func @block(%x: tensor<?x64xf32>, %tokens: tensor<?xi32>) -> tensor<?x64xf32> {
  %g0 = tfm.weight @layers.0.attention_norm.weight : tensor<64xf32>
  %wq = tfm.weight @layers.0.attention.wq.weight : tensor<64x64xf32>
  %wk = tfm.weight @layers.0.attention.wk.weight : tensor<32x64xf32>
  %wv = tfm.weight @layers.0.attention.wv.weight : tensor<32x64xf32>
  %wo = tfm.weight @layers.0.attention.wo.weight : tensor<64x64xf32>
  %pos = tfm.position_ids %tokens : tensor<?xi32> -> tensor<?xi32>
  %h = tfm.rms_norm %x, %g0 {epsilon = 1.0e-5 : f32} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %q = tfm.linear %h, %wq : (tensor<?x64xf32>, tensor<64x64xf32>) -> tensor<?x8x8xf32>
  %k = tfm.linear %h, %wk : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x4x8xf32>
  %v = tfm.linear %h, %wv : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x4x8xf32>
  %qr = tfm.rope interleaved %q, %pos {theta = 1.0e4 : f32} : tensor<?x8x8xf32>, tensor<?xi32>
  %kr = tfm.rope interleaved %k, %pos {theta = 1.0e4 : f32} : tensor<?x4x8xf32>, tensor<?xi32>
  %a = tfm.attention %qr, %kr, %v {causal, scale = 0.353553385 : f32} : (tensor<?x8x8xf32>, tensor<?x4x8xf32>, tensor<?x4x8xf32>) -> tensor<?x8x8xf32>
  %o = tfm.linear %a, %wo : (tensor<?x8x8xf32>, tensor<64x64xf32>) -> tensor<?x64xf32>
  %x1 = tfm.add %x, %o : tensor<?x64xf32>

  %g1 = tfm.weight @layers.0.ffn_norm.weight : tensor<64xf32>
  %w1 = tfm.weight @layers.0.feed_forward.w1.weight : tensor<172x64xf32>
  %w2 = tfm.weight @layers.0.feed_forward.w2.weight : tensor<64x172xf32>
  %w3 = tfm.weight @layers.0.feed_forward.w3.weight : tensor<172x64xf32>
  %h2 = tfm.rms_norm %x1, %g1 {epsilon = 1.0e-5 : f32} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %gate = tfm.linear %h2, %w1 : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  %up = tfm.linear %h2, %w3 : (tensor<?x64xf32>, tensor<172x64xf32>) -> tensor<?x172xf32>
  %act = tfm.activation silu %gate : tensor<?x172xf32>
  %prod = tfm.mul %act, %up : tensor<?x172xf32>
  %down = tfm.linear %prod, %w2 : (tensor<?x172xf32>, tensor<64x172xf32>) -> tensor<?x64xf32>
  %x2 = tfm.add %x1, %down : tensor<?x64xf32>
  return %x2 : tensor<?x64xf32>
}
