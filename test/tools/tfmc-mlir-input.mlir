// tfmc reads a tfm module, verifies it and prints it; MLIR's own options work.
// RUN: tfmc %s | FileCheck %s
// RUN: tfmc %s -o %t.mlir && FileCheck %s < %t.mlir
// RUN: tfmc %s --mlir-timing 2>&1 | FileCheck %s --check-prefix=TIMING
// RUN: not tfmc %s.missing 2>&1 | FileCheck %s --check-prefix=MISSING

// CHECK-LABEL: func.func @block
// CHECK: tfm.rms_norm
// TIMING: Execution time report
// MISSING: tfmc: error: model '{{.*}}.missing' does not exist
tfm.weight_decl @norm.weight : tensor<64xf32>
func.func @block(%x: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %g = tfm.weight @norm.weight : tensor<64xf32>
  %h = tfm.rms_norm %x, %g {epsilon = 1.0e-5 : f32} : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  return %h : tensor<?x64xf32>
}
