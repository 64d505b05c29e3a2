// Lowering of what the fusion passes make: joined weights as one view of the
// blob, GEMM epilogues, and residual adds that share a pass with the norm's
// first statistic.
// RUN: tfm-opt %s -split-input-file -tfm-lay-out-weights -tfm-select-cpu-kernels -tfm-lower-to-linalg | FileCheck %s

// Weights joined by tfm.concat sit back to back: one view, no copy.
// CHECK: tfm.weight_layout = {a = 0 : i64, b = 128 : i64}
// CHECK-LABEL: func.func @joined
// CHECK: memref.view %{{.*}}[%c0{{.*}}][] : memref<?xi8> to memref<12x8xf32>
// CHECK-NOT: tensor.concat
// CHECK: linalg.matmul
module {
tfm.weight_decl @a : tensor<4x8xf32>
tfm.weight_decl @b : tensor<8x8xf32>
func.func @joined(%x: tensor<?x8xf32>) -> tensor<?x12xf32> {
  %a = tfm.weight @a : tensor<4x8xf32>
  %b = tfm.weight @b : tensor<8x8xf32>
  %w = tfm.concat %a, %b : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<12x8xf32>
  %y = tfm.linear %x, %w : (tensor<?x8xf32>, tensor<12x8xf32>) -> tensor<?x12xf32>
  return %y : tensor<?x12xf32>
}
}

// -----

// The same join in two functions (@forward and @prefill) shares one
// placement: both are views, nothing is copied.
// CHECK: tfm.weight_layout = {a = 0 : i64, b = 128 : i64}
// CHECK-LABEL: func.func @first
// CHECK-NOT: tensor.concat
// CHECK-LABEL: func.func @second
// CHECK-NOT: tensor.concat
// CHECK: return
module {
tfm.weight_decl @a : tensor<4x8xf32>
tfm.weight_decl @b : tensor<8x8xf32>
func.func @first() -> tensor<12x8xf32> {
  %a = tfm.weight @a : tensor<4x8xf32>
  %b = tfm.weight @b : tensor<8x8xf32>
  %w = tfm.concat %a, %b : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<12x8xf32>
  return %w : tensor<12x8xf32>
}
func.func @second() -> tensor<12x8xf32> {
  %a = tfm.weight @a : tensor<4x8xf32>
  %b = tfm.weight @b : tensor<8x8xf32>
  %w = tfm.concat %a, %b : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<12x8xf32>
  return %w : tensor<12x8xf32>
}
}

// -----

// Anything else is copied.
// CHECK-LABEL: func.func @copied
// CHECK: tensor.concat dim(0)
func.func @copied(%a: tensor<2x4xf32>, %b: tensor<3x4xf32>) -> tensor<5x4xf32> {
  %c = tfm.concat %a, %b : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<5x4xf32>
  return %c : tensor<5x4xf32>
}

// -----

// Bias and activation in one pass after a zero-initialized GEMM.
// CHECK-LABEL: func.func @epilogue
// CHECK: linalg.fill
// CHECK: %[[P:.*]] = linalg.matmul
// CHECK: linalg.generic {{.*}} ins(%[[P]], %{{.*}} : tensor<3x16xf32>, tensor<16xf32>)
// CHECK: arith.addf
// CHECK: math.tanh
func.func @epilogue(%x: tensor<3x8xf32>, %w: tensor<16x8xf32>, %b: tensor<16xf32>) -> tensor<3x16xf32> {
  %y = tfm.linear %x, %w bias %b activation gelu_tanh : (tensor<3x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<3x16xf32>
  return %y : tensor<3x16xf32>
}

// -----

// Gated: one GEMM into [rows, 2·out], then act(gate) * up over its halves.
// CHECK-LABEL: func.func @gated
// CHECK: %[[P:.*]] = linalg.matmul {{.*}} -> tensor<3x12xf32>
// CHECK-DAG: %[[GATE:.*]] = tensor.extract_slice %[[P]][0, 0] [3, 6] [1, 1]
// CHECK-DAG: %[[UP:.*]] = tensor.extract_slice %[[P]][0, 6] [3, 6] [1, 1]
// CHECK: linalg.generic {{.*}} ins(%[[GATE]], %[[UP]] : tensor<3x6xf32>, tensor<3x6xf32>)
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: arith.mulf
func.func @gated(%x: tensor<3x8xf32>, %w: tensor<12x8xf32>) -> tensor<3x6xf32> {
  %y = tfm.linear %x, %w activation silu gated : (tensor<3x8xf32>, tensor<12x8xf32>) -> tensor<3x6xf32>
  return %y : tensor<3x6xf32>
}

// -----

// The sum and Σ sum² in one generic with two results, then the scaling.
// CHECK-LABEL: func.func @add_rms
// CHECK: %[[FUSED:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]} ins(%arg0, %arg1 : tensor<?x8xf32>, tensor<?x8xf32>)
// CHECK: arith.addf
// CHECK: arith.mulf
// CHECK: linalg.yield
// CHECK: linalg.generic {{.*}} ins(%[[FUSED]]#0, %[[FUSED]]#1, %arg2
// CHECK: return %[[FUSED]]#0
func.func @add_rms(%x: tensor<?x8xf32>, %y: tensor<?x8xf32>, %g: tensor<8xf32>) -> (tensor<?x8xf32>, tensor<?x8xf32>) {
  %s, %n = tfm.add_rms_norm %x, %y, %g {epsilon = 1.0e-5 : f32} : tensor<?x8xf32>, tensor<8xf32>
  return %s, %n : tensor<?x8xf32>, tensor<?x8xf32>
}

// -----

// LayerNorm: the sum and Σ sum together, then the centred pass.
// CHECK-LABEL: func.func @add_layer
// CHECK: %[[FUSED:.*]]:2 = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]}
// CHECK: linalg.generic {{.*}} ins(%[[FUSED]]#0, %[[FUSED]]#1 : tensor<3x8xf32>, tensor<3xf32>)
// CHECK: arith.subf
func.func @add_layer(%x: tensor<3x8xf32>, %y: tensor<3x8xf32>, %g: tensor<8xf32>, %b: tensor<8xf32>) -> (tensor<3x8xf32>, tensor<3x8xf32>) {
  %s, %n = tfm.add_layer_norm %x, %y, %g, %b {epsilon = 1.0e-5 : f32} : tensor<3x8xf32>, tensor<8xf32>, tensor<8xf32>
  return %s, %n : tensor<3x8xf32>, tensor<3x8xf32>
}
