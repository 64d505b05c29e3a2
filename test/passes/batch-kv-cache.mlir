// RUN: tfm-opt %s -split-input-file -tfm-kv-cache="decode-batch=0 prefill-batch=0" -tfm-batch-kv-cache | FileCheck %s

// One rank's program of a model split over 2 (what shard-partition leaves
// of one layer with 2 heads and a vocabulary-parallel head): its head of
// the attention, the all-reduce of the output projection's partial sums,
// the gather of its 8 of the 16 logits. tfm-kv-cache made @prefill with
// the rank's cache [1, 2, 32, 1 head, 4]; @decode_batch and @prefill_batch
// follow from the same @forward, with batched caches of the same parts.
// The collectives act on each row: in @decode_batch they run on the B
// rows; in @prefill_batch the all-reduce, norm, head and gather run on
// each chunk's last row only.
// CHECK-LABEL: func.func @prefill(
// CHECK-SAME: tensor<1x2x32x1x4xf32>
// CHECK-LABEL: func.func @decode_batch(
// CHECK-SAME: %{{[^:]*}}: tensor<?xi32> {tfm.input = #tfm.input<token_ids>}, %{{[^:]*}}: tensor<?xi32> {tfm.input = #tfm.input<positions>}, %{{[^:]*}}: tensor<?xi32> {tfm.input = #tfm.input<cache_sequences>}, %{{[^:]*}}: tensor<?x1x2x32x1x4xf32> {tfm.cache = #tfm.cache<self_attention>})
// CHECK: scf.for
// CHECK: tfm.attention
// CHECK: scf.yield
// CHECK: %[[SUM:.*]] = shard.all_reduce %{{.*}} on @ranks grid_axes = [0] : tensor<?x8xf32> -> tensor<?x8xf32>
// CHECK: %[[PART:.*]] = tfm.linear %{{.*}} -> tensor<?x8xf32>
// CHECK: %[[ALL:.*]] = shard.all_gather %[[PART]] on @ranks grid_axes = [0] gather_axis = 1 : tensor<?x8xf32> -> tensor<?x16xf32>
// CHECK: return %[[ALL]], %{{.*}} : tensor<?x16xf32>, tensor<?x1x2x32x1x4xf32>
// CHECK-LABEL: func.func @prefill_batch(
// CHECK-SAME: tensor<?x1x2x32x1x4xf32> {tfm.cache = #tfm.cache<self_attention>})
// CHECK: scf.for
// CHECK: tfm.attention
// CHECK: %[[RESIDUAL:.*]]:2 = scf.for
// CHECK: %[[PICKED:.*]]:2 = scf.for
// CHECK: shard.all_reduce %[[PICKED]]#0 on @ranks grid_axes = [0] : tensor<?x8xf32> -> tensor<?x8xf32>
// CHECK: %[[LASTS:.*]] = tfm.linear %{{.*}} -> tensor<?x8xf32>
// CHECK: %[[GATHERED:.*]] = shard.all_gather %[[LASTS]] {{.*}} : tensor<?x8xf32> -> tensor<?x16xf32>
// CHECK: return %[[GATHERED]]
module attributes {tfm.model = #tfm.model<family = "test", vocab_size = 16, max_context = 32>} {
shard.grid @ranks(shape = 2)
tfm.weight_decl @wte : tensor<16x8xf32>
tfm.weight_decl @head : tensor<8x8xf32>
tfm.weight_decl @g : tensor<8xf32>
tfm.weight_decl @wq : tensor<4x8xf32>
tfm.weight_decl @wo : tensor<8x4xf32>
func.func @forward(%tokens: tensor<?xi32> {tfm.input = #tfm.input<token_ids>}) -> (tensor<?x16xf32> {tfm.output = #tfm.output<logits>}) {
  %wte = tfm.weight @wte : tensor<16x8xf32>
  %head = tfm.weight @head : tensor<8x8xf32>
  %g = tfm.weight @g : tensor<8xf32>
  %wq = tfm.weight @wq : tensor<4x8xf32>
  %wo = tfm.weight @wo : tensor<8x4xf32>
  %x = tfm.embedding %wte[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %pos = tfm.position_ids %tokens : tensor<?xi32> -> tensor<?xi32>
  %h = tfm.rms_norm %x, %g {epsilon = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %q0 = tfm.linear %h, %wq : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x1x4xf32>
  %k0 = tfm.linear %h, %wq : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x1x4xf32>
  %v = tfm.linear %h, %wq : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x1x4xf32>
  %q = tfm.rope rotate_half %q0, %pos {theta = 1.0e4 : f32} : tensor<?x1x4xf32>, tensor<?xi32>
  %k = tfm.rope rotate_half %k0, %pos {theta = 1.0e4 : f32} : tensor<?x1x4xf32>, tensor<?xi32>
  %a = tfm.attention %q, %k, %v {causal, scale = 0.5 : f32} : (tensor<?x1x4xf32>, tensor<?x1x4xf32>, tensor<?x1x4xf32>) -> tensor<?x1x4xf32>
  %o = tfm.linear %a, %wo : (tensor<?x1x4xf32>, tensor<8x4xf32>) -> tensor<?x8xf32>
  %summed = shard.all_reduce %o on @ranks grid_axes = [0] : tensor<?x8xf32> -> tensor<?x8xf32>
  %x1 = tfm.add %x, %summed : tensor<?x8xf32>
  %f = tfm.rms_norm %x1, %g {epsilon = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %part = tfm.linear %f, %head : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %logits = shard.all_gather %part on @ranks grid_axes = [0] gather_axis = 1 : tensor<?x8xf32> -> tensor<?x16xf32>
  return %logits : tensor<?x16xf32>
}
}
