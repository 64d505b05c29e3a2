// RUN: tfm-opt %s -split-input-file -tfm-drop-returned-arguments | FileCheck %s

// The cache argument, updated in place and returned, is no longer returned.
// CHECK-LABEL: func.func @decode
// CHECK-SAME: (%{{.*}}: memref<4xf32>, %[[CACHE:.*]]: memref<8xf32>) -> memref<4xf32>
// CHECK: return %{{.*}} : memref<4xf32>
func.func @decode(%x: memref<4xf32>, %cache: memref<8xf32>) -> (memref<4xf32>, memref<8xf32>) {
  %r = memref.alloc() : memref<4xf32>
  memref.copy %x, %r : memref<4xf32> to memref<4xf32>
  return %r, %cache : memref<4xf32>, memref<8xf32>
}

// -----

// A call inside the module (a @decode that calls @prefill) sees a dropped
// result as the operand it passed: the caller then returns its own
// argument, and drops it in turn.
// CHECK-LABEL: func.func @callee
// CHECK-SAME: (%{{.*}}: memref<8xf32>) {
// CHECK-NEXT: return{{$}}
// CHECK-LABEL: func.func @caller
// CHECK-SAME: (%[[C:.*]]: memref<8xf32>) {
// CHECK-NEXT: call @callee(%[[C]]) : (memref<8xf32>) -> ()
// CHECK-NEXT: return{{$}}
func.func @callee(%cache: memref<8xf32>) -> memref<8xf32> {
  return %cache : memref<8xf32>
}
func.func @caller(%cache: memref<8xf32>) -> memref<8xf32> {
  %0 = func.call @callee(%cache) : (memref<8xf32>) -> memref<8xf32>
  return %0 : memref<8xf32>
}
