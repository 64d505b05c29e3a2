// tfm-shard-tensor-parallel: Megatron's split as upstream shard
// annotations, which shard-partition (with the tfm ops' ShardingInterface)
// turns into each rank's program; tfm-localize-sharded-weights then
// declares each rank's part.
// RUN: tfm-opt %s -tfm-shard-tensor-parallel='ranks=2' | FileCheck %s --check-prefix=PLAN
// RUN: tfm-opt %s -pass-pipeline='builtin.module(tfm-shard-tensor-parallel{ranks=2},func.func(shard-partition),tfm-localize-sharded-weights)' | FileCheck %s --check-prefix=PART

// An attention block and a GPT-2 MLP: Q, K, V split by heads (weight rows
// and biases), the output projection and the MLP's second projection by
// columns, their biases held by rank 0; one all-reduce after each.
// PLAN: shard.grid @ranks(shape = 2)
// PLAN-DAG: tfm.weight_decl @q {tfm.split_over_ranks = array<i64: 0, 2>} : tensor<32x32xf32>
// PLAN-DAG: tfm.weight_decl @q.bias {tfm.split_over_ranks = array<i64: 0, 2>} : tensor<32xf32>
// PLAN-DAG: tfm.weight_decl @o {tfm.split_over_ranks = array<i64: 1, 2>} : tensor<32x32xf32>
// PLAN-DAG: tfm.weight_decl @o.bias {tfm.partial_over_ranks = 2 : i64} : tensor<32xf32>
// PLAN-DAG: tfm.weight_decl @fc {tfm.split_over_ranks = array<i64: 0, 2>} : tensor<64x32xf32>
// PLAN-DAG: tfm.weight_decl @proj {tfm.split_over_ranks = array<i64: 1, 2>} : tensor<32x64xf32>
// PLAN-DAG: tfm.weight_decl @norm : tensor<32xf32>
// PLAN-LABEL: func.func @block
// PLAN-DAG: %[[HEADS:.*]] = shard.sharding @ranks split_axes = {{\[\[\], \[0\]\]}} : !shard.sharding
// PLAN-DAG: %[[WHOLE:.*]] = shard.sharding @ranks split_axes = {{\[\[\]\]}} : !shard.sharding
// PLAN: %[[Q:.*]] = tfm.linear
// PLAN-NEXT: shard.shard %[[Q]] to %[[HEADS]] : tensor<?x4x8xf32>
// PLAN: %[[A:.*]] = tfm.attention
// PLAN-NEXT: shard.shard %[[A]] to %[[HEADS]] : tensor<?x4x8xf32>
// PLAN: %[[O:.*]] = tfm.linear
// PLAN-NEXT: shard.shard %[[O]] to %[[WHOLE]] : tensor<?x32xf32>

// What the packager writes each rank's weights from, as the declarations
// are lowered away: axis and ranks, -1 for a bias held by rank 0.
// PART: tfm.rank_weights = {fc = array<i64: 0, 2>, k = array<i64: 0, 2>, o = array<i64: 1, 2>, o.bias = array<i64: -1, 2>, proj = array<i64: 1, 2>
// PART: tfm.weight_decl @q {tfm.split_over_ranks = array<i64: 0, 2>} : tensor<16x32xf32>
// PART: tfm.weight_decl @o {tfm.split_over_ranks = array<i64: 1, 2>} : tensor<32x16xf32>
// PART-LABEL: func.func @block
// PART: tfm.linear %{{.*}}, %{{.*}} bias %{{.*}} : (tensor<?x32xf32>, tensor<16x32xf32>, tensor<16xf32>) -> tensor<?x2x8xf32>
// PART: tfm.attention %{{.*}} : (tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>) -> tensor<?x2x8xf32>
// PART: %[[PARTIAL:.*]] = tfm.linear %{{.*}}, %{{.*}} bias %{{.*}} : (tensor<?x2x8xf32>, tensor<32x16xf32>, tensor<32xf32>) -> tensor<?x32xf32>
// PART-NEXT: %[[SUM:.*]] = shard.all_reduce %[[PARTIAL]] on @ranks grid_axes = [0] : tensor<?x32xf32> -> tensor<?x32xf32>
// PART: tfm.add %{{.*}}, %[[SUM]]
// PART: tfm.linear %{{.*}} : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x32xf32>
// PART: tfm.activation gelu_tanh %{{.*}} : tensor<?x32xf32>
// PART: %[[MLP:.*]] = tfm.linear %{{.*}} : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x32xf32>
// PART-NEXT: shard.all_reduce %[[MLP]]
module attributes {tfm.model = #tfm.model<family = "gpt2", vocab_size = 64, max_context = 32, hidden_size = 32, num_layers = 1, num_heads = 4, num_kv_heads = 4>} {
  tfm.weight_decl @q : tensor<32x32xf32>
  tfm.weight_decl @q.bias : tensor<32xf32>
  tfm.weight_decl @k : tensor<32x32xf32>
  tfm.weight_decl @v : tensor<32x32xf32>
  tfm.weight_decl @o : tensor<32x32xf32>
  tfm.weight_decl @o.bias : tensor<32xf32>
  tfm.weight_decl @norm : tensor<32xf32>
  tfm.weight_decl @fc : tensor<64x32xf32>
  tfm.weight_decl @proj : tensor<32x64xf32>
  func.func @block(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
    %wq = tfm.weight @q : tensor<32x32xf32>
    %bq = tfm.weight @q.bias : tensor<32xf32>
    %q = tfm.linear %x, %wq bias %bq : (tensor<?x32xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x4x8xf32>
    %wk = tfm.weight @k : tensor<32x32xf32>
    %k = tfm.linear %x, %wk : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x4x8xf32>
    %wv = tfm.weight @v : tensor<32x32xf32>
    %v = tfm.linear %x, %wv : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x4x8xf32>
    %a = tfm.attention %q, %k, %v {causal, scale = 0.35 : f32} : (tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<?x4x8xf32>) -> tensor<?x4x8xf32>
    %wo = tfm.weight @o : tensor<32x32xf32>
    %bo = tfm.weight @o.bias : tensor<32xf32>
    %o = tfm.linear %a, %wo bias %bo : (tensor<?x4x8xf32>, tensor<32x32xf32>, tensor<32xf32>) -> tensor<?x32xf32>
    %h = tfm.add %x, %o : tensor<?x32xf32>
    %g = tfm.weight @norm : tensor<32xf32>
    %n = tfm.rms_norm %h, %g {epsilon = 1.0e-5 : f32} : (tensor<?x32xf32>, tensor<32xf32>) -> tensor<?x32xf32>
    %wfc = tfm.weight @fc : tensor<64x32xf32>
    %f = tfm.linear %n, %wfc : (tensor<?x32xf32>, tensor<64x32xf32>) -> tensor<?x64xf32>
    %act = tfm.activation gelu_tanh %f : tensor<?x64xf32>
    %wp = tfm.weight @proj : tensor<32x64xf32>
    %p = tfm.linear %act, %wp : (tensor<?x64xf32>, tensor<32x64xf32>) -> tensor<?x32xf32>
    %y = tfm.add %h, %p : tensor<?x32xf32>
    return %y : tensor<?x32xf32>
  }
}
