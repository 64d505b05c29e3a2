// RUN: tfm-opt %s -tfm-place-kernel-reads | FileCheck %s
// RUN: tfm-opt %s -tfm-place-kernel-reads -one-shot-bufferize="bufferize-function-boundaries" | FileCheck %s --check-prefix=BUFFERS

// Two kernel calls read %h through one merged conversion (as CSE leaves
// them), and between the calls a generic writes a fresh tensor of %h's
// shape. Each call gets its own conversion, right before it.
// CHECK-LABEL: func.func @two_reads
// CHECK: %[[H:.*]] = linalg.generic
// CHECK: %[[R1:.*]] = bufferization.to_buffer %[[H]] read_only
// CHECK-NEXT: %[[C1:.*]] = memref.cast %[[R1]]
// CHECK-NEXT: call @kernel(%[[C1]])
// CHECK: linalg.generic
// CHECK: %[[R2:.*]] = bufferization.to_buffer %[[H]] read_only
// CHECK-NEXT: %[[C2:.*]] = memref.cast %[[R2]]
// CHECK-NEXT: call @kernel(%[[C2]])
// CHECK-NOT: to_buffer
//
// Bufferized, the second generic no longer writes over %h's buffer,
// which the second call still reads: it gets a buffer of its own.
// BUFFERS-LABEL: func.func @two_reads
// BUFFERS: linalg.generic {{.*}} outs(%[[A:[a-z_0-9]+]] : memref<4xf32>)
// BUFFERS: call @kernel
// BUFFERS-NOT: outs(%[[A]] :
// BUFFERS: linalg.generic
// BUFFERS: memref.cast %[[A]]
// BUFFERS-NEXT: call @kernel
#id = affine_map<(d0) -> (d0)>
func.func private @kernel(memref<?xf32, strided<[?], offset: ?>>)
func.func @two_reads(%x: tensor<4xf32>) -> tensor<4xf32> {
  %empty = tensor.empty() : tensor<4xf32>
  %h = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%empty : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %d = arith.addf %in, %in : f32
    linalg.yield %d : f32
  } -> tensor<4xf32>
  %read = bufferization.to_buffer %h read_only : tensor<4xf32> to memref<4xf32>
  %cast = memref.cast %read : memref<4xf32> to memref<?xf32, strided<[?], offset: ?>>
  func.call @kernel(%cast) : (memref<?xf32, strided<[?], offset: ?>>) -> ()
  %q = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel"]}
      ins(%x : tensor<4xf32>) outs(%empty : tensor<4xf32>) {
  ^bb0(%in: f32, %out: f32):
    %m = arith.mulf %in, %in : f32
    linalg.yield %m : f32
  } -> tensor<4xf32>
  func.call @kernel(%cast) : (memref<?xf32, strided<[?], offset: ?>>) -> ()
  return %q : tensor<4xf32>
}
