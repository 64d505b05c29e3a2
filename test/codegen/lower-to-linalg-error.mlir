// What tfm-lower-to-linalg refuses, with a diagnostic naming the op.
// RUN: tfm-opt %s -split-input-file -tfm-lower-to-linalg -verify-diagnostics

func.func @f16(%x: tensor<?x4xf16>) -> tensor<?x4xf16> {
  // expected-error @+1 {{'tfm.activation' op codegen supports f32 tensors only, got 'f16'}}
  %0 = tfm.activation relu %x : tensor<?x4xf16>
  return %0 : tensor<?x4xf16>
}
