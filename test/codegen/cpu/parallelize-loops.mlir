// tfm-parallelize-loops: each top-level scf.parallel moves into a function
// of its own, (context, begin, end, thread), that runs iterations
// [begin, end) of one dimension; the loop becomes a call of the runtime's
// tfm_rt_parallel_loop with the iteration count, the estimated operations
// per iteration and a context holding the values the loop captured.
// RUN: tfm-opt %s -split-input-file -tfm-parallelize-loops | FileCheck %s
// All the way to LLVM IR: the body is an internal function whose address
// the runtime gets.
// RUN: tfm-opt %s -split-input-file -tfm-parallelize-loops -convert-scf-to-cf -finalize-memref-to-llvm \
// RUN:   -convert-cf-to-llvm -convert-arith-to-llvm -convert-func-to-llvm \
// RUN:   -reconcile-unrealized-casts \
// RUN:   | mlir-translate -split-input-file -mlir-to-llvmir | FileCheck %s --check-prefix=LLVMIR

// Rows (dynamic) by 768 columns: the rows are split. The two pointers and
// the row count travel through the context (index as i64); the constants
// are recomputed in the body, so its inner trip count stays 768. Cost: 768
// columns times 8 operations.
// CHECK-LABEL: func.func private @tfm_rt_parallel_loop(i64, i64, (!llvm.ptr, i64, i64, i32) -> (), !llvm.ptr)
// CHECK-LABEL: func.func @scale_rows(
// CHECK-SAME: %[[X:.*]]: !llvm.ptr, %[[Y:.*]]: !llvm.ptr, %[[ROWS:.*]]: index)
// CHECK: %[[WORDS:.*]] = llvm.mlir.constant(3 : i64) : i64
// CHECK: %[[CTX:.*]] = llvm.alloca %[[WORDS]] x i64 {alignment = 16 : i64}
// CHECK: %[[ROWS64:.*]] = arith.index_cast %[[ROWS]] : index to i64
// CHECK: %[[F0:.*]] = llvm.getelementptr %[[CTX]][0, 0] : (!llvm.ptr) -> !llvm.ptr, !llvm.struct<(i64, ptr, ptr)>
// CHECK: llvm.store %[[ROWS64]], %[[F0]]
// CHECK: %[[F1:.*]] = llvm.getelementptr %[[CTX]][0, 1]
// CHECK: llvm.store %[[X]], %[[F1]]
// CHECK: %[[F2:.*]] = llvm.getelementptr %[[CTX]][0, 2]
// CHECK: llvm.store %[[Y]], %[[F2]]
// CHECK: arith.divsi
// CHECK-NEXT: %[[N:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK-NEXT: %[[COST:.*]] = arith.constant 6144 : i64
// CHECK: %[[BODY:.*]] = constant @scale_rows_loop
// CHECK: call @tfm_rt_parallel_loop(%[[N]], %[[COST]], %[[BODY]], %[[CTX]])
// CHECK-NOT: scf.parallel
// CHECK: return
// CHECK: func.func private @scale_rows_loop(%[[C:.*]]: !llvm.ptr, %[[BEGIN:.*]]: i64, %[[END:.*]]: i64, %{{.*}}: i32)
// CHECK-SAME: attributes {llvm.linkage = #llvm.linkage<internal>}
// CHECK: %[[R64:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i64
// CHECK: %[[R:.*]] = arith.index_cast %[[R64]] : i64 to index
// CHECK: %[[XP:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK: %[[YP:.*]] = llvm.load %{{.*}} : !llvm.ptr -> !llvm.ptr
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C768:.*]] = arith.constant 768 : index
// CHECK-DAG: %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK: %[[B:.*]] = arith.index_cast %[[BEGIN]] : i64 to index
// CHECK: %[[E:.*]] = arith.index_cast %[[END]] : i64 to index
// CHECK: %[[LO:.*]] = arith.addi %[[C0]], %{{.*}} : index
// CHECK: %[[HI:.*]] = arith.minsi %[[R]], %{{.*}} : index
// CHECK: scf.parallel (%[[I:.*]], %[[J:.*]]) = (%[[LO]], %[[C0]]) to (%[[HI]], %[[C768]])
// CHECK: llvm.getelementptr %[[XP]]
// CHECK: llvm.getelementptr %[[YP]]
// CHECK: arith.mulf %{{.*}}, %[[TWO]]
// LLVMIR-LABEL: define void @scale_rows(
// LLVMIR: call void @tfm_rt_parallel_loop(i64 %{{.*}}, i64 6144, ptr @scale_rows_loop, ptr %{{.*}})
// LLVMIR: define internal void @scale_rows_loop(ptr %{{.*}}, i64 %{{.*}}, i64 %{{.*}}, i32 %{{.*}})
func.func @scale_rows(%x: !llvm.ptr, %y: !llvm.ptr, %rows: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cols = arith.constant 768 : index
  %two = arith.constant 2.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%rows, %cols) step (%c1, %c1) {
    %row = arith.muli %i, %cols : index
    %index = arith.addi %row, %j : index
    %offset = arith.index_cast %index : index to i64
    %src = llvm.getelementptr %x[%offset] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %dst = llvm.getelementptr %y[%offset] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %v = llvm.load %src : !llvm.ptr -> f32
    %s = arith.mulf %v, %two : f32
    llvm.store %s, %dst : f32, !llvm.ptr
    scf.reduce
  }
  return
}

// -----

// A decode step's single row: the first dimension runs once, so the split
// one is the columns (dynamic here, so the cost is the body's 4
// operations), and the row stays whole in the body.
// CHECK-LABEL: func.func @one_row(
// CHECK: arith.divsi
// CHECK-NEXT: %[[N:.*]] = arith.index_cast %{{.*}} : index to i64
// CHECK-NEXT: %[[COST:.*]] = arith.constant 4 : i64
// CHECK: call @tfm_rt_parallel_loop(%[[N]], %[[COST]]
// CHECK: func.func private @one_row_loop(
// CHECK-DAG: %[[C0:.*]] = arith.constant 0 : index
// CHECK-DAG: %[[C1:.*]] = arith.constant 1 : index
// CHECK: %[[HI:.*]] = arith.minsi
// CHECK: scf.parallel (%{{.*}}, %{{.*}}) = (%[[C0]], %{{.*}}) to (%[[C1]], %[[HI]])
func.func @one_row(%x: !llvm.ptr, %cols: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i, %j) = (%c0, %c0) to (%c1, %cols) step (%c1, %c1) {
    %index = arith.addi %i, %j : index
    %offset = arith.index_cast %index : index to i64
    %dst = llvm.getelementptr %x[%offset] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    llvm.store %zero, %dst : f32, !llvm.ptr
    scf.reduce
  }
  return
}

// -----

// Only the outermost loop of a nest is outlined; the inner one runs in its
// chunks, and its trip count multiplies the cost: 16 x 4 operations.
// CHECK-LABEL: func.func @nest(
// CHECK: %[[COST:.*]] = arith.constant 64 : i64
// CHECK: call @tfm_rt_parallel_loop(%{{.*}}, %[[COST]]
// CHECK-NOT: scf.parallel
// CHECK: func.func private @nest_loop(
// CHECK: scf.parallel
// CHECK: scf.parallel
// CHECK-NOT: call
func.func @nest(%x: !llvm.ptr, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    scf.parallel (%j) = (%c0) to (%c16) step (%c1) {
      %index = arith.addi %i, %j : index
      %offset = arith.index_cast %index : index to i64
      %dst = llvm.getelementptr %x[%offset] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      llvm.store %zero, %dst : f32, !llvm.ptr
      scf.reduce
    }
    scf.reduce
  }
  return
}

// -----

// No match: a loop that calls a function (the runtime's allocator or a
// kernel), one with a reduction of its own, and one that uses a memref
// (no LLVM type to store in the context) stay where they are.
// CHECK-LABEL: func.func @left_alone(
// CHECK-NOT: tfm_rt_parallel_loop
// CHECK: scf.parallel
// CHECK: call @kernel
// CHECK: scf.parallel
// CHECK: scf.reduce(
// CHECK: scf.parallel
// CHECK: memref.store
// CHECK-NOT: tfm_rt_parallel_loop
func.func private @kernel(index)
func.func @left_alone(%x: !llvm.ptr, %m: memref<?xf32>, %n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    func.call @kernel(%i) : (index) -> ()
    scf.reduce
  }
  %total = scf.parallel (%i) = (%c0) to (%n) step (%c1) init (%zero) -> f32 {
    %offset = arith.index_cast %i : index to i64
    %src = llvm.getelementptr %x[%offset] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %v = llvm.load %src : !llvm.ptr -> f32
    scf.reduce(%v : f32) {
    ^bb0(%a: f32, %b: f32):
      %s = arith.addf %a, %b : f32
      scf.reduce.return %s : f32
    }
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    memref.store %zero, %m[%i] : memref<?xf32>
    scf.reduce
  }
  return %total : f32
}

// -----

// Equal bodies share one function, within an entry point (a layer's loop
// and the next layer's) and across entry points (prefill's and decode's):
// a model outlines the same few loops once per layer and entry point, and
// LLVM would otherwise optimize and emit each copy. A body that differs
// (a constant: 3.0 instead of 2.0) keeps its own.
// CHECK-LABEL: func.func private @tfm_rt_parallel_loop(
// CHECK-LABEL: func.func @layers(
// CHECK: %[[FIRST:.*]] = constant @layers_loop :
// CHECK: call @tfm_rt_parallel_loop(%{{.*}}, %{{.*}}, %[[FIRST]],
// CHECK: %[[AGAIN:.*]] = constant @layers_loop :
// CHECK: call @tfm_rt_parallel_loop(%{{.*}}, %{{.*}}, %[[AGAIN]],
// CHECK: %[[OTHER:.*]] = constant @[[OTHER_BODY:layers_loop_[0-9]+]] :
// CHECK: call @tfm_rt_parallel_loop(%{{.*}}, %{{.*}}, %[[OTHER]],
// CHECK: func.func private @layers_loop(
// CHECK: arith.constant 2.000000e+00 : f32
// CHECK: func.func private @[[OTHER_BODY]](
// CHECK: arith.constant 3.000000e+00 : f32
// CHECK-LABEL: func.func @decode(
// CHECK: %[[SHARED:.*]] = constant @layers_loop :
// CHECK: call @tfm_rt_parallel_loop(%{{.*}}, %{{.*}}, %[[SHARED]],
// CHECK-NOT: func.func private @decode_loop
// LLVMIR-LABEL: define void @layers(
// LLVMIR-COUNT-2: call void @tfm_rt_parallel_loop(i64 %{{.*}}, i64 {{[0-9]+}}, ptr @layers_loop,
// LLVMIR: call void @tfm_rt_parallel_loop(i64 %{{.*}}, i64 {{[0-9]+}}, ptr @layers_loop_{{[0-9]+}},
// LLVMIR-LABEL: define void @decode(
// LLVMIR: call void @tfm_rt_parallel_loop(i64 %{{.*}}, i64 {{[0-9]+}}, ptr @layers_loop,
// LLVMIR-NOT: define internal void @decode_loop
func.func @layers(%x: !llvm.ptr, %y: !llvm.ptr, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %two = arith.constant 2.0 : f32
  %three = arith.constant 3.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %offset = arith.index_cast %i : index to i64
    %p = llvm.getelementptr %x[%offset] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %v = llvm.load %p : !llvm.ptr -> f32
    %s = arith.mulf %v, %two : f32
    llvm.store %s, %p : f32, !llvm.ptr
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %offset = arith.index_cast %i : index to i64
    %p = llvm.getelementptr %y[%offset] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %v = llvm.load %p : !llvm.ptr -> f32
    %s = arith.mulf %v, %two : f32
    llvm.store %s, %p : f32, !llvm.ptr
    scf.reduce
  }
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %offset = arith.index_cast %i : index to i64
    %p = llvm.getelementptr %x[%offset] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %v = llvm.load %p : !llvm.ptr -> f32
    %s = arith.mulf %v, %three : f32
    llvm.store %s, %p : f32, !llvm.ptr
    scf.reduce
  }
  return
}
func.func @decode(%x: !llvm.ptr, %n: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %two = arith.constant 2.0 : f32
  scf.parallel (%i) = (%c0) to (%n) step (%c1) {
    %offset = arith.index_cast %i : index to i64
    %p = llvm.getelementptr %x[%offset] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    %v = llvm.load %p : !llvm.ptr -> f32
    %s = arith.mulf %v, %two : f32
    llvm.store %s, %p : f32, !llvm.ptr
    scf.reduce
  }
  return
}
