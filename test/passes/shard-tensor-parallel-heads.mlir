// tfm-shard-tensor-parallel splits an LM head by its vocabulary rows, each
// rank computing its logits, which shard-partition gathers
// (shard.all_gather: the logits' readers read them whole). A head tied to
// the embedding table stays replicated: the lookup reads the whole table.
// RUN: tfm-opt %s -split-input-file -tfm-shard-tensor-parallel='ranks=2' | FileCheck %s --check-prefix=PLAN
// RUN: tfm-opt %s -split-input-file -pass-pipeline='builtin.module(tfm-shard-tensor-parallel{ranks=2},func.func(shard-partition),tfm-localize-sharded-weights)' | FileCheck %s --check-prefix=PART

// PLAN-LABEL: module
// PLAN: tfm.weight_decl @head {tfm.split_over_ranks = array<i64: 0, 2>} : tensor<64x32xf32>
// PLAN-DAG: %[[VOCAB:.*]] = shard.sharding @ranks split_axes = {{\[\[\], \[0\]\]}}
// PLAN-DAG: %[[WHOLE:.*]] = shard.sharding @ranks split_axes = {{\[\[\]\]}}
// PLAN: %[[LOGITS:.*]] = tfm.linear
// PLAN-NEXT: %[[PARTS:.*]] = shard.shard %[[LOGITS]] to %[[VOCAB]] : tensor<?x64xf32>
// PLAN-NEXT: shard.shard %[[PARTS]] to %[[WHOLE]] annotate_for_users : tensor<?x64xf32>
// PART-LABEL: module
// PART: tfm.weight_decl @head {tfm.split_over_ranks = array<i64: 0, 2>} : tensor<32x32xf32>
// PART: %[[PART:.*]] = tfm.linear %{{.*}} : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x32xf32>
// PART: shard.all_gather %[[PART]] on @ranks grid_axes = [0] gather_axis = 1 : tensor<?x32xf32> -> tensor<?x64xf32>
module attributes {tfm.model = #tfm.model<family = "llama", vocab_size = 64, max_context = 32, hidden_size = 32, num_layers = 1, num_heads = 4, num_kv_heads = 4>} {
  tfm.weight_decl @embed : tensor<64x32xf32>
  tfm.weight_decl @head : tensor<64x32xf32>
  func.func @forward(%ids: tensor<?xi32>) -> tensor<?x64xf32> {
    %e = tfm.weight @embed : tensor<64x32xf32>
    %x = tfm.embedding %e[%ids] : tensor<64x32xf32>, tensor<?xi32> -> tensor<?x32xf32>
    %w = tfm.weight @head : tensor<64x32xf32>
    %logits = tfm.linear %x, %w : (tensor<?x32xf32>, tensor<64x32xf32>) -> tensor<?x64xf32>
    return %logits : tensor<?x64xf32>
  }
}

// -----

// PLAN-LABEL: module
// PLAN: tfm.weight_decl @embed : tensor<64x32xf32>
// PLAN-NOT: shard.all_gather
// PART-LABEL: module
// PART: tfm.weight_decl @embed : tensor<64x32xf32>
// PART-NOT: shard.all_gather
module attributes {tfm.model = #tfm.model<family = "gpt2", vocab_size = 64, max_context = 32, hidden_size = 32, num_layers = 1, num_heads = 4, num_kv_heads = 4>} {
  tfm.weight_decl @embed : tensor<64x32xf32>
  func.func @forward(%ids: tensor<?xi32>) -> tensor<?x64xf32> {
    %e = tfm.weight @embed : tensor<64x32xf32>
    %x = tfm.embedding %e[%ids] : tensor<64x32xf32>, tensor<?xi32> -> tensor<?x32xf32>
    %logits = tfm.linear %x, %e : (tensor<?x32xf32>, tensor<64x32xf32>) -> tensor<?x64xf32>
    return %logits : tensor<?x64xf32>
  }
}
