// The CPU's lowering of tfm.gated_delta_rule: a call of the runtime's
// kernel with the starting state (zeros without a state), the reset flag
// the kernel reads itself (a select of the state would make bufferization
// copy a cache it is sliced from), and two fresh buffers it fills, the
// reads and the final state.
// RUN: tfm-opt %s -split-input-file -tfm-lay-out-weights -tfm-select-cpu-kernels -tfm-lower-to-linalg | FileCheck %s

// CHECK-LABEL: func.func private @tfm_rt_gated_delta_rule(memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, f32, i64, i64) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @carried
// CHECK-SAME: %[[S:[a-z0-9]+]]: tensor<4x8x12xf32>, %[[R:[a-z0-9]+]]: i1)
// CHECK-NOT: arith.select
// CHECK: %[[RESET:.*]] = arith.extui %[[R]] : i1 to i64
// CHECK: %[[STARTB:.*]] = bufferization.to_buffer %[[S]] read_only
// CHECK: %[[STARTC:.*]] = memref.cast %[[STARTB]]
// CHECK: %[[OUT:.*]] = memref.alloc(%{{.*}}) : memref<?x4x12xf32>
// CHECK: %[[OUTC:.*]] = memref.cast %[[OUT]]
// CHECK: %[[STATE:.*]] = memref.alloc() : memref<4x8x12xf32>
// CHECK: %[[STATEC:.*]] = memref.cast %[[STATE]]
// CHECK: %[[SCALE:.*]] = arith.constant 3.535530e-01 : f32
// CHECK: %[[TILED:.*]] = arith.constant 1 : i64
// CHECK: call @tfm_rt_gated_delta_rule(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[STARTC]], %[[OUTC]], %[[STATEC]], %[[SCALE]], %[[TILED]], %[[RESET]])
// CHECK-DAG: %[[O:.*]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK-DAG: %[[F:.*]] = bufferization.to_tensor %[[STATE]] restrict writable
// CHECK: return %[[O]], %[[F]]
func.func @carried(%q: tensor<?x2x8xf32>, %v: tensor<?x4x12xf32>, %a: tensor<?x4xf32>, %d: tensor<4xf32>, %s: tensor<4x8x12xf32>, %r: i1) -> (tensor<?x4x12xf32>, tensor<4x8x12xf32>) {
  %o, %f = tfm.gated_delta_rule %q, %q, %v, %a, %d, %a state %s reset %r {scale = 0.353553 : f32, tiled} : (tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x4x12xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<?x4xf32>, tensor<4x8x12xf32>, i1) -> (tensor<?x4x12xf32>, tensor<4x8x12xf32>)
  return %o, %f : tensor<?x4x12xf32>, tensor<4x8x12xf32>
}

// -----

// Without a state the kernel starts from zeros, grouped (tiled 0).
// CHECK-LABEL: func.func @fresh
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: linalg.fill ins(%[[ZERO]] : f32) outs(%{{.*}} : tensor<4x8x12xf32>)
// CHECK: %[[NORESET:.*]] = arith.constant 0 : i64
// CHECK: %[[GROUPED:.*]] = arith.constant 0 : i64
// CHECK: call @tfm_rt_gated_delta_rule({{.*}}, %[[GROUPED]], %[[NORESET]])
func.func @fresh(%q: tensor<?x2x8xf32>, %v: tensor<?x4x12xf32>, %a: tensor<?x4xf32>, %d: tensor<4xf32>) -> tensor<?x4x12xf32> {
  %o, %f = tfm.gated_delta_rule %q, %q, %v, %a, %d, %a {scale = 0.353553 : f32} : (tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x4x12xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<?x4xf32>) -> (tensor<?x4x12xf32>, tensor<4x8x12xf32>)
  return %o : tensor<?x4x12xf32>
}
