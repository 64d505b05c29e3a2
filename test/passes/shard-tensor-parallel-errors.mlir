// tfm-shard-tensor-parallel refuses what it cannot split, naming why.
// RUN: tfm-opt %s -split-input-file -tfm-shard-tensor-parallel='ranks=4' -verify-diagnostics

// More ranks than KV heads: refused, naming why.
// expected-error @+1 {{--ranks 4: the model's 2 KV heads do not divide among 4 ranks}}
module attributes {tfm.model = #tfm.model<family = "llama", vocab_size = 64, max_context = 32, hidden_size = 32, num_layers = 1, num_heads = 4, num_kv_heads = 2>} {
  func.func @f(%x: tensor<?x32xf32>) -> tensor<?x32xf32> {
    return %x : tensor<?x32xf32>
  }
}

// -----

// An attention whose heads are read by something other than a projection
// (here, returned): the ranks' parts would leave the program split.
module {
  tfm.weight_decl @q : tensor<32x32xf32>
  func.func @f(%x: tensor<?x32xf32>) -> tensor<?x4x8xf32> {
    %wq = tfm.weight @q : tensor<32x32xf32>
    %q = tfm.linear %x, %wq : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x4x8xf32>
    %a = tfm.attention %q, %q, %q {scale = 0.35 : f32} : (tensor<?x4x8xf32>, tensor<?x4x8xf32>, tensor<?x4x8xf32>) -> tensor<?x4x8xf32>
    // expected-error @+1 {{tensor parallelism: reads the heads of an attention, which only an output projection may}}
    return %a : tensor<?x4x8xf32>
  }
}
