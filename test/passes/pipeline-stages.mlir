// RUN: tfm-opt %s -tfm-pipeline-stages=stages=2 | FileCheck %s
// RUN: not tfm-opt %s -tfm-pipeline-stages=stages=3 2>&1 | FileCheck %s --check-prefix=THREE
// RUN: tfm-opt %s -tfm-pipeline-stages=stages=2 -tfm-pipeline-last-stage | FileCheck %s --check-prefix=LAST

// Two layers in two stages: every rank runs layer 0's ops, the last stage
// (rank 0) over layer 1's weights and the first (rank 1) over layer 0's
// (tfm.rank_weight_sources, by rank); layer 1's ops and weight
// declarations go. The embedding's rows enter through pipeline_receive
// (the norm's and the residual's reads of them both), the stage's output
// leaves through pipeline_send, and the final norm and head read it, their
// logits rank 0's.

// CHECK: tfm.rank_weight_sources = {{{.*}}model.layers.0.self_attn.q_proj.weight = ["model.layers.1.self_attn.q_proj.weight", "model.layers.0.self_attn.q_proj.weight"]
// CHECK-NOT: weight_decl @model.layers.1.
// CHECK: func.func @forward
// CHECK: %[[EMBEDDED:.*]] = tfm.embedding
// CHECK: %[[ROWS:.*]] = tfm.pipeline_receive %[[EMBEDDED]]
// CHECK: tfm.rms_norm %[[ROWS]]
// CHECK: tfm.add %[[ROWS]],
// CHECK: %[[OUT:.*]] = tfm.add
// CHECK-NEXT: tfm.pipeline_send %[[OUT]]
// CHECK-NOT: model.layers.1.
// CHECK: %[[NORMED:.*]] = tfm.rms_norm %[[OUT]]
// CHECK: %[[LOGITS:.*]] = tfm.linear %[[NORMED]]
// CHECK: %[[COLLECTED:.*]] = tfm.pipeline_collect %[[LOGITS]]
// CHECK: return %[[COLLECTED]]

// Then the final norm and the head run on the last stage alone; the other
// stages give an empty tensor, and rank 0 the rows the last one sends.
// LAST: tfm.pipeline_send %[[OUT:.*]] :
// LAST: %[[LAST:.*]] = tfm.pipeline_last_stage
// LAST-NEXT: %[[LOGITS:.*]] = scf.if %[[LAST]] -> (tensor<?x64xf32>) {
// LAST-NEXT: tfm.rms_norm %[[OUT]]
// LAST-NEXT: %[[HEAD:.*]] = tfm.linear
// LAST-NEXT: scf.yield %[[HEAD]]
// LAST-NEXT: } else {
// LAST-NEXT: %[[NONE:.*]] = arith.constant 0 : index
// LAST-NEXT: %[[EMPTY:.*]] = tensor.empty(%[[NONE]]) : tensor<?x64xf32>
// LAST-NEXT: scf.yield %[[EMPTY]]
// LAST: tfm.pipeline_collect %[[LOGITS]]

// THREE: --pipeline-stages 3: the model has 2 layers, fewer than its stages

module attributes {tfm.model = #tfm.model<family = "llama", vocab_size = 64, max_context = 32, bos_token = 1, eos_token = 2, add_bos = true, hidden_size = 32, num_layers = 2, num_heads = 8, num_kv_heads = 4>} {
  tfm.weight_decl @model.embed_tokens.weight : tensor<64x32xf32>
  tfm.weight_decl @model.layers.0.input_layernorm.weight : tensor<32xf32>
  tfm.weight_decl @model.layers.0.self_attn.q_proj.weight : tensor<32x32xf32>
  tfm.weight_decl @model.layers.0.self_attn.k_proj.weight : tensor<16x32xf32>
  tfm.weight_decl @model.layers.0.self_attn.v_proj.weight : tensor<16x32xf32>
  tfm.weight_decl @model.layers.0.self_attn.o_proj.weight : tensor<32x32xf32>
  tfm.weight_decl @model.layers.0.post_attention_layernorm.weight : tensor<32xf32>
  tfm.weight_decl @model.layers.0.mlp.up_proj.weight : tensor<48x32xf32>
  tfm.weight_decl @model.layers.0.mlp.gate_proj.weight : tensor<48x32xf32>
  tfm.weight_decl @model.layers.0.mlp.down_proj.weight : tensor<32x48xf32>
  tfm.weight_decl @model.layers.1.input_layernorm.weight : tensor<32xf32>
  tfm.weight_decl @model.layers.1.self_attn.q_proj.weight : tensor<32x32xf32>
  tfm.weight_decl @model.layers.1.self_attn.k_proj.weight : tensor<16x32xf32>
  tfm.weight_decl @model.layers.1.self_attn.v_proj.weight : tensor<16x32xf32>
  tfm.weight_decl @model.layers.1.self_attn.o_proj.weight : tensor<32x32xf32>
  tfm.weight_decl @model.layers.1.post_attention_layernorm.weight : tensor<32xf32>
  tfm.weight_decl @model.layers.1.mlp.up_proj.weight : tensor<48x32xf32>
  tfm.weight_decl @model.layers.1.mlp.gate_proj.weight : tensor<48x32xf32>
  tfm.weight_decl @model.layers.1.mlp.down_proj.weight : tensor<32x48xf32>
  tfm.weight_decl @model.norm.weight : tensor<32xf32>
  func.func @forward(%arg0: tensor<?xi32> {tfm.input = #tfm.input<token_ids>}) -> (tensor<?x64xf32> {tfm.output = #tfm.output<logits>}) {
    %0 = tfm.weight @model.embed_tokens.weight : tensor<64x32xf32>
    %1 = tfm.embedding %0[%arg0] : tensor<64x32xf32>, tensor<?xi32> -> tensor<?x32xf32>
    %2 = tfm.position_ids %arg0 : tensor<?xi32> -> tensor<?xi32>
    %3 = tfm.weight @model.layers.0.input_layernorm.weight : tensor<32xf32>
    %4 = tfm.rms_norm %1, %3 {epsilon = 9.99999974E-6 : f32} : (tensor<?x32xf32>, tensor<32xf32>) -> tensor<?x32xf32>
    %5 = tfm.weight @model.layers.0.self_attn.q_proj.weight : tensor<32x32xf32>
    %6 = tfm.linear %4, %5 : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x8x4xf32>
    %7 = tfm.weight @model.layers.0.self_attn.k_proj.weight : tensor<16x32xf32>
    %8 = tfm.linear %4, %7 : (tensor<?x32xf32>, tensor<16x32xf32>) -> tensor<?x4x4xf32>
    %9 = tfm.weight @model.layers.0.self_attn.v_proj.weight : tensor<16x32xf32>
    %10 = tfm.linear %4, %9 : (tensor<?x32xf32>, tensor<16x32xf32>) -> tensor<?x4x4xf32>
    %11 = tfm.rope rotate_half %6, %2 {theta = 1.000000e+04 : f32} : tensor<?x8x4xf32>, tensor<?xi32>
    %12 = tfm.rope rotate_half %8, %2 {theta = 1.000000e+04 : f32} : tensor<?x4x4xf32>, tensor<?xi32>
    %13 = tfm.attention %11, %12, %10 {causal, scale = 5.000000e-01 : f32} : (tensor<?x8x4xf32>, tensor<?x4x4xf32>, tensor<?x4x4xf32>) -> tensor<?x8x4xf32>
    %14 = tfm.weight @model.layers.0.self_attn.o_proj.weight : tensor<32x32xf32>
    %15 = tfm.linear %13, %14 : (tensor<?x8x4xf32>, tensor<32x32xf32>) -> tensor<?x32xf32>
    %16 = tfm.add %1, %15 : tensor<?x32xf32>
    %17 = tfm.weight @model.layers.0.post_attention_layernorm.weight : tensor<32xf32>
    %18 = tfm.rms_norm %16, %17 {epsilon = 9.99999974E-6 : f32} : (tensor<?x32xf32>, tensor<32xf32>) -> tensor<?x32xf32>
    %19 = tfm.weight @model.layers.0.mlp.up_proj.weight : tensor<48x32xf32>
    %20 = tfm.linear %18, %19 : (tensor<?x32xf32>, tensor<48x32xf32>) -> tensor<?x48xf32>
    %21 = tfm.weight @model.layers.0.mlp.gate_proj.weight : tensor<48x32xf32>
    %22 = tfm.linear %18, %21 : (tensor<?x32xf32>, tensor<48x32xf32>) -> tensor<?x48xf32>
    %23 = tfm.activation silu %22 : tensor<?x48xf32>
    %24 = tfm.mul %23, %20 : tensor<?x48xf32>
    %25 = tfm.weight @model.layers.0.mlp.down_proj.weight : tensor<32x48xf32>
    %26 = tfm.linear %24, %25 : (tensor<?x48xf32>, tensor<32x48xf32>) -> tensor<?x32xf32>
    %27 = tfm.add %16, %26 : tensor<?x32xf32>
    %28 = tfm.weight @model.layers.1.input_layernorm.weight : tensor<32xf32>
    %29 = tfm.rms_norm %27, %28 {epsilon = 9.99999974E-6 : f32} : (tensor<?x32xf32>, tensor<32xf32>) -> tensor<?x32xf32>
    %30 = tfm.weight @model.layers.1.self_attn.q_proj.weight : tensor<32x32xf32>
    %31 = tfm.linear %29, %30 : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x8x4xf32>
    %32 = tfm.weight @model.layers.1.self_attn.k_proj.weight : tensor<16x32xf32>
    %33 = tfm.linear %29, %32 : (tensor<?x32xf32>, tensor<16x32xf32>) -> tensor<?x4x4xf32>
    %34 = tfm.weight @model.layers.1.self_attn.v_proj.weight : tensor<16x32xf32>
    %35 = tfm.linear %29, %34 : (tensor<?x32xf32>, tensor<16x32xf32>) -> tensor<?x4x4xf32>
    %36 = tfm.rope rotate_half %31, %2 {theta = 1.000000e+04 : f32} : tensor<?x8x4xf32>, tensor<?xi32>
    %37 = tfm.rope rotate_half %33, %2 {theta = 1.000000e+04 : f32} : tensor<?x4x4xf32>, tensor<?xi32>
    %38 = tfm.attention %36, %37, %35 {causal, scale = 5.000000e-01 : f32} : (tensor<?x8x4xf32>, tensor<?x4x4xf32>, tensor<?x4x4xf32>) -> tensor<?x8x4xf32>
    %39 = tfm.weight @model.layers.1.self_attn.o_proj.weight : tensor<32x32xf32>
    %40 = tfm.linear %38, %39 : (tensor<?x8x4xf32>, tensor<32x32xf32>) -> tensor<?x32xf32>
    %41 = tfm.add %27, %40 : tensor<?x32xf32>
    %42 = tfm.weight @model.layers.1.post_attention_layernorm.weight : tensor<32xf32>
    %43 = tfm.rms_norm %41, %42 {epsilon = 9.99999974E-6 : f32} : (tensor<?x32xf32>, tensor<32xf32>) -> tensor<?x32xf32>
    %44 = tfm.weight @model.layers.1.mlp.up_proj.weight : tensor<48x32xf32>
    %45 = tfm.linear %43, %44 : (tensor<?x32xf32>, tensor<48x32xf32>) -> tensor<?x48xf32>
    %46 = tfm.weight @model.layers.1.mlp.gate_proj.weight : tensor<48x32xf32>
    %47 = tfm.linear %43, %46 : (tensor<?x32xf32>, tensor<48x32xf32>) -> tensor<?x48xf32>
    %48 = tfm.activation silu %47 : tensor<?x48xf32>
    %49 = tfm.mul %48, %45 : tensor<?x48xf32>
    %50 = tfm.weight @model.layers.1.mlp.down_proj.weight : tensor<32x48xf32>
    %51 = tfm.linear %49, %50 : (tensor<?x48xf32>, tensor<32x48xf32>) -> tensor<?x32xf32>
    %52 = tfm.add %41, %51 : tensor<?x32xf32>
    %53 = tfm.weight @model.norm.weight : tensor<32xf32>
    %54 = tfm.rms_norm %52, %53 {epsilon = 9.99999974E-6 : f32} : (tensor<?x32xf32>, tensor<32xf32>) -> tensor<?x32xf32>
    %55 = tfm.linear %54, %0 : (tensor<?x32xf32>, tensor<64x32xf32>) -> tensor<?x64xf32>
    return %55 : tensor<?x64xf32>
  }
}


