// RUN: tfm-opt %s -split-input-file -tfm-export-entry-points | FileCheck %s
// RUN: tfm-opt %s -split-input-file -tfm-export-entry-points=prefix=story | FileCheck %s --check-prefix=PREFIX

// Public functions get MLIR's C interface; private ones and declarations are
// left alone. Without a prefix nothing is renamed.
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @decode(
// CHECK-SAME: attributes {llvm.emit_c_interface}
// CHECK: call @forward(
// CHECK-LABEL: func.func private @helper(
// CHECK-NOT: llvm.emit_c_interface
// CHECK-LABEL: func.func private @tfm_rt_kernel(
// CHECK-NOT: llvm.emit_c_interface
// With a prefix every public function is renamed, and so are its calls.
// PREFIX-LABEL: func.func @story_forward(
// PREFIX-SAME: attributes {llvm.emit_c_interface}
// PREFIX-LABEL: func.func @story_decode(
// PREFIX: call @story_forward(
// PREFIX: call @helper(
// PREFIX-LABEL: func.func private @helper(
// PREFIX-LABEL: func.func private @tfm_rt_kernel(
func.func @forward(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func @decode(%x: tensor<4xf32>) -> tensor<4xf32> {
  %y = call @forward(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %z = call @helper(%y) : (tensor<4xf32>) -> tensor<4xf32>
  return %z : tensor<4xf32>
}
func.func private @helper(%x: tensor<4xf32>) -> tensor<4xf32> {
  return %x : tensor<4xf32>
}
func.func private @tfm_rt_kernel(tensor<4xf32>) -> tensor<4xf32>
