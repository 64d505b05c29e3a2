// tfm-lora-slots refuses, by name, what it cannot give adapter slots to.
// RUN: tfm-opt %s -split-input-file -verify-diagnostics -pass-pipeline='builtin.module(tfm-lora-slots{slots=2 rank=4})'

// A model without projections in numbered layers has nothing to adapt.
// expected-error @below {{--lora-slots: this model has no projection in numbered layers to adapt}}
module {
  tfm.weight_decl @"lm_head.weight" : tensor<8x8xf32>
  func.func @head(%x: tensor<?x8xf32>) -> tensor<?x8xf32> {
    %w = tfm.weight @"lm_head.weight" : tensor<8x8xf32>
    %y = tfm.linear %x, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
    return %y : tensor<?x8xf32>
  }
}

// -----

// An update goes before the activation, which an epilogue already applied.
module {
  tfm.weight_decl @"model.layers.0.mlp.up_proj.weight" : tensor<16x8xf32>
  func.func @epilogue(%x: tensor<?x8xf32>) -> tensor<?x16xf32> {
    %w = tfm.weight @"model.layers.0.mlp.up_proj.weight" : tensor<16x8xf32>
    // expected-error @below {{cannot take a LoRA update after an activation epilogue ('model.layers.0.mlp.up_proj.weight')}}
    %y = tfm.linear %x, %w activation silu : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
    return %y : tensor<?x16xf32>
  }
}
