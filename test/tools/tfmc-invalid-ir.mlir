// tfmc reports verifier errors with their location and exits non-zero.
// RUN: not tfmc %s 2>&1 | FileCheck %s

// CHECK: tfmc-invalid-ir.mlir:[[# @LINE + 2]]:8: error: 'tfm.attention' op expected kv_heads (3) to divide heads (8)
func.func @bad(%q: tensor<?x8x16xf32>, %k: tensor<?x3x16xf32>) -> tensor<?x8x16xf32> {
  %a = tfm.attention %q, %k, %k {scale = 1.0 : f32} : (tensor<?x8x16xf32>, tensor<?x3x16xf32>, tensor<?x3x16xf32>) -> tensor<?x8x16xf32>
  return %a : tensor<?x8x16xf32>
}
