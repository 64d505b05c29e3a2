// tfm-annotate-parallel-loops: scf.parallel (from linalg's parallel
// dimensions) becomes scf.for loops whose loop_annotation lists an access
// group as parallel accesses, and every LLVM load and store inside joins
// that group, so LLVM vectorizes without proving the accesses disjoint.
// RUN: tfm-opt %s -split-input-file -tfm-annotate-parallel-loops | FileCheck %s
// Through scf-to-cf and into LLVM IR: the back edge carries
// llvm.loop.parallel_accesses naming the accesses' group.
// RUN: tfm-opt %s -split-input-file -tfm-annotate-parallel-loops -convert-scf-to-cf \
// RUN:   -convert-cf-to-llvm -convert-arith-to-llvm -convert-func-to-llvm \
// RUN:   -reconcile-unrealized-casts \
// RUN:   | mlir-translate -split-input-file -mlir-to-llvmir | FileCheck %s --check-prefix=LLVMIR

// A 2-d elementwise nest (rows, columns): one group for both loops, on the
// load and the store.
// CHECK-DAG: #[[$GROUP:.*]] = #llvm.access_group<id = distinct
// CHECK-DAG: #[[$LOOP:.*]] = #llvm.loop_annotation<parallelAccesses = #[[$GROUP]]>
// CHECK-LABEL: func.func @scale_rows
// CHECK-NOT: scf.parallel
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %{{.*}} step
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %{{.*}} step
// CHECK: llvm.load {{.*}} {access_groups = [#[[$GROUP]]]}
// CHECK: llvm.store {{.*}} {access_groups = [#[[$GROUP]]]}
// CHECK: } {loop_annotation = #[[$LOOP]]}
// CHECK: } {loop_annotation = #[[$LOOP]]}
// LLVMIR-LABEL: define void @scale_rows
// LLVMIR: load float, ptr %{{.*}}, !llvm.access.group ![[G:[0-9]+]]
// LLVMIR: store float %{{.*}}, !llvm.access.group ![[G]]
// LLVMIR: br label %{{.*}}, !llvm.loop ![[L:[0-9]+]]
// LLVMIR: ![[L]] = distinct !{![[L]], ![[P:[0-9]+]]}
// LLVMIR: ![[P]] = !{!"llvm.loop.parallel_accesses", ![[G]]}
func.func @scale_rows(%x: !llvm.ptr, %y: !llvm.ptr, %rows: index, %cols: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
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

// A parallel loop around a sequential reduction (a norm's row sums): the
// accumulator, loaded and stored at one address in every iteration, is
// carried in a register instead (loaded before, stored after), its add may
// reassociate so that LLVM vectorizes it, and the accesses join the row
// loop's group; the inner loop keeps no annotation of its own.
// CHECK-LABEL: func.func @row_sums
// CHECK: scf.for
// CHECK: %[[OUT:.*]] = llvm.getelementptr
// CHECK: %[[INIT:.*]] = llvm.load %[[OUT]] {access_groups = [#[[GROUP:.*]]]}
// CHECK: %[[SUM:.*]] = scf.for {{.*}} iter_args(%[[ACC:.*]] = %[[INIT]]) -> (f32)
// CHECK: %[[V:.*]] = llvm.load {{.*}} {access_groups = [#[[GROUP]]]}
// CHECK: %[[NEXT:.*]] = arith.addf %[[ACC]], %[[V]] fastmath<reassoc> : f32
// CHECK: scf.yield %[[NEXT]]
// CHECK-NEXT: }
// CHECK-NOT: loop_annotation
// CHECK: llvm.store %[[SUM]], %[[OUT]] {access_groups = [#[[GROUP]]]}
// CHECK: } {loop_annotation =
func.func @row_sums(%x: !llvm.ptr, %sums: !llvm.ptr, %rows: index, %cols: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%c0) to (%rows) step (%c1) {
    %io = arith.index_cast %i : index to i64
    %out = llvm.getelementptr %sums[%io] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    scf.for %j = %c0 to %cols step %c1 {
      %row = arith.muli %i, %cols : index
      %index = arith.addi %row, %j : index
      %offset = arith.index_cast %index : index to i64
      %src = llvm.getelementptr %x[%offset] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      %v = llvm.load %src : !llvm.ptr -> f32
      %acc = llvm.load %out : !llvm.ptr -> f32
      %sum = arith.addf %acc, %v : f32
      llvm.store %sum, %out : f32, !llvm.ptr
    }
    scf.reduce
  }
  return
}

// -----

// No match for the accumulator: read twice in the loop (a second load
// could not see the register), it stays in memory.
// CHECK-LABEL: func.func @read_twice
// CHECK: scf.for
// CHECK: scf.for
// CHECK-NOT: iter_args
// CHECK: llvm.load
// CHECK: llvm.load
// CHECK: llvm.load
// CHECK: llvm.store
func.func @read_twice(%x: !llvm.ptr, %sums: !llvm.ptr, %rows: index, %cols: index) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  scf.parallel (%i) = (%c0) to (%rows) step (%c1) {
    %io = arith.index_cast %i : index to i64
    %out = llvm.getelementptr %sums[%io] : (!llvm.ptr, i64) -> !llvm.ptr, f32
    scf.for %j = %c0 to %cols step %c1 {
      %offset = arith.index_cast %j : index to i64
      %src = llvm.getelementptr %x[%offset] : (!llvm.ptr, i64) -> !llvm.ptr, f32
      %v = llvm.load %src : !llvm.ptr -> f32
      %acc = llvm.load %out : !llvm.ptr -> f32
      %again = llvm.load %out : !llvm.ptr -> f32
      %sum = arith.addf %acc, %v : f32
      %both = arith.addf %sum, %again : f32
      llvm.store %both, %out : f32, !llvm.ptr
    }
    scf.reduce
  }
  return
}

// -----

// No match: a parallel loop with a reduction of its own (scf.reduce
// operands) is left to upstream's lowering, unannotated.
// CHECK-LABEL: func.func @reducing
// CHECK: scf.parallel
// CHECK-NOT: access_groups
// CHECK-NOT: loop_annotation
func.func @reducing(%x: !llvm.ptr, %n: index) -> f32 {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %zero = arith.constant 0.0 : f32
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
  return %total : f32
}
