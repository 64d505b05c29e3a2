// What tfm-lower-to-linalg refuses, with a diagnostic naming the op.
// RUN: tfm-opt %s -split-input-file -tfm-lower-to-linalg -verify-diagnostics

func.func @f16(%x: tensor<?x4xf16>) -> tensor<?x4xf16> {
  // expected-error @+1 {{'tfm.activation' op codegen supports f32 tensors only, got 'f16'}}
  %0 = tfm.activation relu %x : tensor<?x4xf16>
  return %0 : tensor<?x4xf16>
}

// -----

// Weights are placed by tfm-lay-out-weights first.
module {
  tfm.weight_decl @w : tensor<4x4xf32>
  func.func @unplaced(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
    // expected-error @+1 {{'tfm.weight' op has no place in the weight blob: run tfm-lay-out-weights before tfm-lower-to-linalg}}
    %w = tfm.weight @w : tensor<4x4xf32>
    %0 = tfm.linear %x, %w : (tensor<?x4xf32>, tensor<4x4xf32>) -> tensor<?x4xf32>
    return %0 : tensor<?x4xf32>
  }
}
