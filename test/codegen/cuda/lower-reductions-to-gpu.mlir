// RUN: tfm-opt %s -split-input-file -tfm-lower-reductions-to-gpu | FileCheck %s

// A fused residual add and RMSNorm's sum of squares over a decode step's
// row: one block (768 threads: one row leaves the GPU idle), its threads striding the row; the sum (an elementwise
// output) written as it goes, the squares reduced across the block and
// added to the output by thread 0.
// CHECK-LABEL: func.func @add_sum_of_squares
// CHECK-SAME: (%[[A:.*]]: memref<1x768xf32>, %[[B:.*]]: memref<1x768xf32>, %[[SUM:.*]]: memref<1x768xf32>, %[[SQ:.*]]: memref<1xf32>)
// CHECK: gpu.launch blocks(%[[ROW:.*]], %{{.*}}, %{{.*}}) in {{.*}} threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{[a-z0-9_]+}} = %[[STEP:[a-z0-9_]+]],
// CHECK: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK: %[[PART:.*]] = scf.for %[[R:.*]] = %[[T]] to %{{.*}} step %[[STEP]] iter_args(%[[ACC:.*]] = %[[ZERO]]) -> (f32)
// CHECK: %[[X:.*]] = arith.addf
// CHECK: %[[NEXT:.*]] = arith.addf %{{.*}}, %[[ACC]]
// CHECK: memref.store %[[X]], %[[SUM]]
// CHECK: scf.yield %[[NEXT]]
// CHECK: %[[TOTAL:.*]] = gpu.all_reduce add %[[PART]] uniform
// CHECK: scf.if
// CHECK: %[[OLD:.*]] = memref.load %[[SQ]]
// CHECK: %[[NEW:.*]] = arith.addf %[[TOTAL]], %[[OLD]]
// CHECK: memref.store %[[NEW]], %[[SQ]]
// CHECK-NOT: linalg.generic
func.func @add_sum_of_squares(%a: memref<1x768xf32>, %b: memref<1x768xf32>, %sum: memref<1x768xf32>, %sq: memref<1xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%a, %b : memref<1x768xf32>, memref<1x768xf32>) outs(%sum, %sq : memref<1x768xf32>, memref<1xf32>) {
  ^bb0(%x: f32, %y: f32, %s: f32, %acc: f32):
    %0 = arith.addf %x, %y : f32
    %1 = arith.mulf %0, %0 : f32
    %2 = arith.addf %1, %acc : f32
    linalg.yield %0, %2 : f32, f32
  }
  return
}

// -----

// Softmax's maximum over a head's scores (rows of unknown length): a block
// per (head, query), starting from -inf.
// CHECK-LABEL: func.func @row_max
// CHECK: gpu.launch blocks(%{{.*}}, %{{.*}}, %{{.*}}) in (%{{.*}} = %c1{{.*}}, %{{.*}} = %c8{{.*}}, %{{.*}} = %c1{{.*}})
// CHECK: %[[NEGINF:.*]] = arith.constant 0xFF800000 : f32
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %[[NEGINF]])
// CHECK: arith.maximumf
// CHECK: gpu.all_reduce maximumf
func.func @row_max(%scores: memref<8x1x?xf32>, %max: memref<8x1xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%scores : memref<8x1x?xf32>) outs(%max : memref<8x1xf32>) {
  ^bb0(%in: f32, %out: f32):
    %0 = arith.maximumf %in, %out : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// Many short rows (a prefill's scores over one head's width) stay loops.
// CHECK-LABEL: func.func @short_rows
// CHECK: linalg.generic
func.func @short_rows(%q: memref<?x64xf32>, %out: memref<?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%q : memref<?x64xf32>) outs(%out : memref<?xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.addf %in, %acc : f32
    linalg.yield %0 : f32
  }
  return
}

// -----

// Attention's weighted sum of values reduces positions between heads and
// the head's width: moved innermost, it is a block reduction per (query,
// head, width) element rather than a loop around the width in each of a
// handful of threads.
// CHECK-LABEL: func.func @weighted_values
// CHECK: gpu.launch blocks(%[[D:.*]], %[[H:.*]], %[[Q:.*]]) in (%{{.*}} = %c64{{.*}}, %{{.*}} = %c12{{.*}}, %{{.*}} = %c1{{.*}})
// CHECK: scf.for %[[T:.*]] = %{{.*}} to %{{.*}} step
// CHECK: memref.load %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : memref<12x1x?xf32>
// CHECK: gpu.all_reduce add
// CHECK-NOT: linalg.generic
func.func @weighted_values(%p: memref<12x1x?xf32>, %v: memref<?x4x64xf32>, %out: memref<1x12x64xf32>) {
  linalg.generic {indexing_maps = [affine_map<(q, h, t, d) -> (h, q, t)>, affine_map<(q, h, t, d) -> (t, h floordiv 3, d)>, affine_map<(q, h, t, d) -> (q, h, d)>], iterator_types = ["parallel", "parallel", "reduction", "parallel"]}
      ins(%p, %v : memref<12x1x?xf32>, memref<?x4x64xf32>) outs(%out : memref<1x12x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %0 = arith.mulf %a, %b : f32
    %1 = arith.addf %0, %acc : f32
    linalg.yield %1 : f32
  }
  return
}

// -----

// The norm's scaling right after its sum of squares joins the kernel: after
// the total, every thread folds it as thread 0 stores it (the old value
// read before a barrier, the store before another), then strides through
// the row again, scaling the sum it wrote by rsqrt(total / 768 + eps) and
// the weight; one launch.
// CHECK-LABEL: func.func @add_rms_norm
// CHECK-SAME: (%[[A:.*]]: memref<1x768xf32>, %[[B:.*]]: memref<1x768xf32>, %[[G:.*]]: memref<768xf32>, %[[SUM:.*]]: memref<1x768xf32>, %[[SQ:.*]]: memref<1xf32>, %[[OUT:.*]]: memref<1x768xf32>)
// CHECK: gpu.launch blocks(%[[ROW:.*]], %{{.*}}, %{{.*}}) in {{.*}} threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %[[C128:.*]],
// CHECK: scf.for %{{.*}} = %[[T]] to %{{.*}} step %{{.*}} iter_args
// CHECK: memref.store %{{.*}}, %[[SUM]]
// CHECK: %[[TOTAL:.*]] = gpu.all_reduce add
// CHECK: %[[OLD:.*]] = memref.load %[[SQ]]
// CHECK: %[[FOLDED:.*]] = arith.addf %[[TOTAL]], %[[OLD]]
// CHECK: gpu.barrier
// CHECK: scf.if
// CHECK: memref.store %[[FOLDED]], %[[SQ]]
// CHECK: gpu.barrier
// CHECK: scf.for %[[C:.*]] = %[[T]] to %{{.*}} step %{{.*}} {
// CHECK: %[[X:.*]] = memref.load %[[SUM]]
// CHECK-NOT: memref.load %[[SQ]]
// CHECK: %[[W:.*]] = memref.load %[[G]]
// CHECK: arith.divf %[[FOLDED]]
// CHECK: math.rsqrt
// CHECK: memref.store %{{.*}}, %[[OUT]]
// CHECK: gpu.terminator
// CHECK-NOT: gpu.launch
// CHECK-NOT: linalg.generic
func.func @add_rms_norm(%a: memref<1x768xf32>, %b: memref<1x768xf32>, %g: memref<768xf32>, %sum: memref<1x768xf32>, %sq: memref<1xf32>, %out: memref<1x768xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%a, %b : memref<1x768xf32>, memref<1x768xf32>) outs(%sum, %sq : memref<1x768xf32>, memref<1xf32>) {
  ^bb0(%x: f32, %y: f32, %s: f32, %acc: f32):
    %0 = arith.addf %x, %y : f32
    %1 = arith.mulf %0, %0 : f32
    %2 = arith.addf %1, %acc : f32
    linalg.yield %0, %2 : f32, f32
  }
  %n = arith.constant 768.0 : f32
  %eps = arith.constant 1.0e-5 : f32
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%sum, %sq, %g : memref<1x768xf32>, memref<1xf32>, memref<768xf32>) outs(%out : memref<1x768xf32>) {
  ^bb0(%x: f32, %ss: f32, %w: f32, %o: f32):
    %mean = arith.divf %ss, %n : f32
    %v = arith.addf %mean, %eps : f32
    %r = math.rsqrt %v : f32
    %y = arith.mulf %x, %r : f32
    %z = arith.mulf %y, %w : f32
    linalg.yield %z : f32
  }
  return
}

// -----

// Not fused: a store between them (moving the reduction after it would
// change what the reduction reads).
// CHECK-LABEL: func.func @not_fused
// CHECK: gpu.launch
// CHECK-NOT: gpu.barrier
// CHECK: gpu.terminator
// CHECK: memref.store
// CHECK: linalg.generic
func.func @not_fused(%x: memref<1x768xf32>, %sq: memref<1xf32>, %out: memref<1x768xf32>) {
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<1x768xf32>) outs(%sq : memref<1xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %1 = arith.mulf %in, %in : f32
    %2 = arith.addf %1, %acc : f32
    linalg.yield %2 : f32
  }
  %c0 = arith.constant 0 : index
  %one = arith.constant 1.0 : f32
  memref.store %one, %x[%c0, %c0] : memref<1x768xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %sq : memref<1x768xf32>, memref<1xf32>) outs(%out : memref<1x768xf32>) {
  ^bb0(%in: f32, %ss: f32, %o: f32):
    %y = arith.mulf %in, %ss : f32
    linalg.yield %y : f32
  }
  return
}

// -----

// The zero fill right before the sum of squares (a one-thread kernel of
// its own) folds into the reduction: thread 0 stores the fill's value
// plus the total, and the fill goes. One row: a block as wide as the row
// allows (up to 1024 threads), its loads in flight at once.
// CHECK-LABEL: func.func @filled_sum
// CHECK-SAME: (%[[X:.*]]: memref<1x2048xf32>, %[[SQ:.*]]: memref<1xf32>)
// CHECK-DAG: %[[ZERO:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: %[[C1024:.*]] = arith.constant 1024 : index
// CHECK-NOT: linalg.fill
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %[[C1024]],
// CHECK: %[[TOTAL:.*]] = gpu.all_reduce add
// CHECK-NOT: memref.load %[[SQ]]
// CHECK: %[[NEW:.*]] = arith.addf %[[TOTAL]], %[[ZERO]]
// CHECK: memref.store %[[NEW]], %[[SQ]]
func.func @filled_sum(%x: memref<1x2048xf32>, %sq: memref<1xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%sq : memref<1xf32>)
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<1x2048xf32>) outs(%sq : memref<1xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.mulf %in, %in : f32
    %1 = arith.addf %0, %acc : f32
    linalg.yield %1 : f32
  }
  return
}

// -----

// A copy out of the filled buffer between the fill and the reduction reads
// the fill's value: the fill stays, and the reduction folds into the
// buffer's old value. Rows of unknown number: blocks of 128.
// CHECK-LABEL: func.func @fill_read_between
// CHECK-SAME: (%[[X:.*]]: memref<?x2048xf32>, %[[SQ:.*]]: memref<?xf32>, %[[COPY:.*]]: memref<?xf32>)
// CHECK: linalg.fill
// CHECK: memref.copy %[[SQ]], %[[COPY]]
// CHECK: %[[C128:.*]] = arith.constant 128 : index
// CHECK: gpu.launch {{.*}} threads({{.*}}) in (%{{.*}} = %[[C128]],
// CHECK: %[[OLD:.*]] = memref.load %[[SQ]]
// CHECK: arith.addf %{{.*}}, %[[OLD]]
func.func @fill_read_between(%x: memref<?x2048xf32>, %sq: memref<?xf32>, %copy: memref<?xf32>) {
  %zero = arith.constant 0.0 : f32
  linalg.fill ins(%zero : f32) outs(%sq : memref<?xf32>)
  memref.copy %sq, %copy : memref<?xf32> to memref<?xf32>
  linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x : memref<?x2048xf32>) outs(%sq : memref<?xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %0 = arith.mulf %in, %in : f32
    %1 = arith.addf %0, %acc : f32
    linalg.yield %1 : f32
  }
  return
}
