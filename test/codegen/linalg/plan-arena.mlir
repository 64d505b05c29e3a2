// tfm-plan-arena: temporary buffers become views of one arena; buffers
// whose lifetimes (first to last use, views included) overlap never share
// bytes, the others do.
// RUN: tfm-opt %s -split-input-file -tfm-plan-arena -canonicalize | FileCheck %s
// RUN: tfm-opt %s -split-input-file -tfm-plan-arena | FileCheck %s --check-prefix=DYNAMIC

// %c (256 bytes) is placed first, at 0. %a is dead before %c is first
// written: it shares offset 0. %b is live with both (copied from %a, read
// after %c is written): it goes on top of the larger, at 256. 384 bytes in
// all instead of 512.
// CHECK-LABEL: func.func @lifetimes
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C256:.*]] = arith.constant 256 : index
// CHECK: %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64} : memref<384xi8>
// CHECK-DAG: %[[A:.*]] = memref.view %[[ARENA]][%[[C0]]][] : memref<384xi8> to memref<4x8xf32>
// CHECK-DAG: %[[B:.*]] = memref.view %[[ARENA]][%[[C256]]][] : memref<384xi8> to memref<4x8xf32>
// CHECK-DAG: %[[C:.*]] = memref.view %[[ARENA]][%[[C0]]][] : memref<384xi8> to memref<4x16xf32>
// CHECK: linalg.fill {{.*}} outs(%[[A]] :
// CHECK: memref.copy %[[A]], %[[B]]
// CHECK: linalg.fill {{.*}} outs(%[[C]] :
// CHECK: memref.copy %[[B]], %{{.*}}
// CHECK: memref.subview %[[C]]
// CHECK: memref.dealloc %[[ARENA]]
// CHECK-NOT: memref.dealloc
// CHECK: return
func.func @lifetimes(%out: memref<4x8xf32>) {
  %a = memref.alloc() : memref<4x8xf32>
  %b = memref.alloc() : memref<4x8xf32>
  %c = memref.alloc() : memref<4x16xf32>
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%a : memref<4x8xf32>)
  memref.copy %a, %b : memref<4x8xf32> to memref<4x8xf32>
  linalg.fill ins(%one : f32) outs(%c : memref<4x16xf32>)
  memref.copy %b, %out : memref<4x8xf32> to memref<4x8xf32>
  %left = memref.subview %c[0, 0] [4, 8] [1, 1] : memref<4x16xf32> to memref<4x8xf32, strided<[16, 1]>>
  memref.copy %left, %out : memref<4x8xf32, strided<[16, 1]>> to memref<4x8xf32>
  memref.dealloc %a : memref<4x8xf32>
  memref.dealloc %b : memref<4x8xf32>
  memref.dealloc %c : memref<4x16xf32>
  return
}

// -----

// A chain of same-size buffers, each live with the next only, beside one
// live throughout (as a residual stream beside each layer's temporaries):
// the chain alternates between two slots instead of stacking up, and the
// long-lived buffer sits on top of both. 320 bytes instead of 576.
// CHECK-LABEL: func.func @chain
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C128:.*]] = arith.constant 128 : index
// CHECK-DAG: %[[C256:.*]] = arith.constant 256 : index
// CHECK: %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64} : memref<320xi8>
// CHECK-DAG: %[[A:.*]] = memref.view %[[ARENA]][%[[C0]]][] : memref<320xi8> to memref<4x8xf32>
// CHECK-DAG: %[[B:.*]] = memref.view %[[ARENA]][%[[C128]]][] : memref<320xi8> to memref<4x8xf32>
// CHECK-DAG: %[[C:.*]] = memref.view %[[ARENA]][%[[C0]]][] : memref<320xi8> to memref<4x8xf32>
// CHECK-DAG: %[[D:.*]] = memref.view %[[ARENA]][%[[C128]]][] : memref<320xi8> to memref<4x8xf32>
// CHECK-DAG: %[[KEEP:.*]] = memref.view %[[ARENA]][%[[C256]]][] : memref<320xi8> to memref<4x4xf32>
// CHECK: linalg.fill {{.*}} outs(%[[KEEP]] :
// CHECK: linalg.fill {{.*}} outs(%[[A]] :
// CHECK: memref.copy %[[A]], %[[B]]
// CHECK: memref.copy %[[B]], %[[C]]
// CHECK: memref.copy %[[C]], %[[D]]
func.func @chain(%out: memref<4x8xf32>, %kept: memref<4x4xf32>) {
  %keep = memref.alloc() : memref<4x4xf32>
  %a = memref.alloc() : memref<4x8xf32>
  %b = memref.alloc() : memref<4x8xf32>
  %c = memref.alloc() : memref<4x8xf32>
  %d = memref.alloc() : memref<4x8xf32>
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%keep : memref<4x4xf32>)
  linalg.fill ins(%one : f32) outs(%a : memref<4x8xf32>)
  memref.copy %a, %b : memref<4x8xf32> to memref<4x8xf32>
  memref.copy %b, %c : memref<4x8xf32> to memref<4x8xf32>
  memref.copy %c, %d : memref<4x8xf32> to memref<4x8xf32>
  memref.copy %d, %out : memref<4x8xf32> to memref<4x8xf32>
  memref.copy %keep, %kept : memref<4x4xf32> to memref<4x4xf32>
  memref.dealloc %keep : memref<4x4xf32>
  memref.dealloc %a : memref<4x8xf32>
  memref.dealloc %b : memref<4x8xf32>
  memref.dealloc %c : memref<4x8xf32>
  memref.dealloc %d : memref<4x8xf32>
  return
}

// -----

// Sizes that grow with the sequence: offsets and the arena's size are
// computed at run time from the same plan (%b on top of %a, 64-byte
// aligned).
// DYNAMIC-LABEL: func.func @dynamic
// DYNAMIC: arith.muli %{{.*}}, %[[N:[^ ]*]] : index
// DYNAMIC: arith.maxui
// DYNAMIC: %[[ARENA:.*]] = memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<?xi8>
// DYNAMIC: memref.view %[[ARENA]][%{{.*}}][%[[N]]] : memref<?xi8> to memref<?x8xf32>
// DYNAMIC: memref.view %[[ARENA]][%{{.*}}][%[[N]]] : memref<?xi8> to memref<?x8xf32>
// DYNAMIC-NOT: memref.alloc(%[[N]])
// DYNAMIC: memref.dealloc %[[ARENA]]
func.func @dynamic(%n: index, %out: memref<?x8xf32>) {
  %a = memref.alloc(%n) : memref<?x8xf32>
  %b = memref.alloc(%n) : memref<?x8xf32>
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%a : memref<?x8xf32>)
  memref.copy %a, %b : memref<?x8xf32> to memref<?x8xf32>
  memref.copy %b, %out : memref<?x8xf32> to memref<?x8xf32>
  memref.dealloc %a : memref<?x8xf32>
  memref.dealloc %b : memref<?x8xf32>
  return
}

// -----

// No match: a returned buffer outlives the call, and one the function
// never frees is not its to place; one buffer left needs no arena.
// CHECK-LABEL: func.func @escaping
// CHECK-NOT: memref<{{[0-9]+}}xi8>
// CHECK: memref.alloc() : memref<4xf32>
// CHECK: memref.alloc() : memref<8xf32>
// CHECK: memref.alloc() : memref<2xf32>
func.func @escaping(%x: memref<4xf32>) -> memref<4xf32> {
  %r = memref.alloc() : memref<4xf32>
  %kept = memref.alloc() : memref<8xf32>
  %t = memref.alloc() : memref<2xf32>
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%t : memref<2xf32>)
  linalg.fill ins(%one : f32) outs(%kept : memref<8xf32>)
  memref.copy %x, %r : memref<4xf32> to memref<4xf32>
  memref.dealloc %t : memref<2xf32>
  return %r : memref<4xf32>
}

// -----

// A size computed after the first buffer is used (as a pipeline stage
// sizes a layer it may skip: select(runs, rows, 0)) by pure arithmetic
// moves up to the arena's arithmetic, and its buffer joins the arena. A
// size a call returns cannot move: its buffer keeps its own allocation.
// DYNAMIC-LABEL: func.func @late_sizes
// DYNAMIC: %[[COUNT:.*]] = call @stage_layers() : () -> index
// DYNAMIC: %[[RUNS:.*]] = arith.cmpi ugt, %[[COUNT]]
// DYNAMIC: %[[ROWS:.*]] = arith.select %[[RUNS]], %[[N:[^ ]*]], %{{.*}} : index
// DYNAMIC: %[[ARENA:.*]] = memref.alloc(%{{.*}}) {alignment = 64 : i64} : memref<?xi8>
// DYNAMIC-DAG: memref.view %[[ARENA]][%{{.*}}][%[[N]]] : memref<?xi8> to memref<?x8xf32>
// DYNAMIC-DAG: memref.view %[[ARENA]][%{{.*}}][%[[ROWS]]] : memref<?xi8> to memref<?x8xf32>
// DYNAMIC: linalg.fill
// DYNAMIC: %[[LATE:.*]] = call @late_rows() : () -> index
// DYNAMIC: memref.alloc(%[[LATE]]) : memref<?x8xf32>
func.func private @stage_layers() -> index
func.func private @late_rows() -> index
func.func @late_sizes(%n: index, %out: memref<?x8xf32>) {
  %count = call @stage_layers() : () -> index
  %a = memref.alloc(%n) : memref<?x8xf32>
  %one = arith.constant 1.0 : f32
  linalg.fill ins(%one : f32) outs(%a : memref<?x8xf32>)
  %c1 = arith.constant 1 : index
  %c0 = arith.constant 0 : index
  %runs = arith.cmpi ugt, %count, %c1 : index
  %rows = arith.select %runs, %n, %c0 : index
  %b = memref.alloc(%rows) : memref<?x8xf32>
  %skipped = memref.subview %a[0, 0] [%rows, 8] [1, 1] : memref<?x8xf32> to memref<?x8xf32, strided<[8, 1]>>
  memref.copy %skipped, %b : memref<?x8xf32, strided<[8, 1]>> to memref<?x8xf32>
  %late = call @late_rows() : () -> index
  %c = memref.alloc(%late) : memref<?x8xf32>
  linalg.fill ins(%one : f32) outs(%c : memref<?x8xf32>)
  memref.copy %a, %out : memref<?x8xf32> to memref<?x8xf32>
  memref.dealloc %a : memref<?x8xf32>
  memref.dealloc %b : memref<?x8xf32>
  memref.dealloc %c : memref<?x8xf32>
  return
}
