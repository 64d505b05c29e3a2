// RUN: tfm-opt %s -split-input-file -tfm-lower-attention-to-gpu | FileCheck %s

// Decode's grouped-query attention (4 query heads over 2 KV heads, width
// 64) as one kernel: a block of 256 threads per (head, query), keys by
// chunks of 256 (one scored per thread), the chunk's maximum and sum of
// exponentials reduced across the block, the weights staged in shared
// memory, 16 threads per key row (4 columns each) in 16 groups weighing
// the chunk's keys, and the groups' partial outputs summed at the end.
// Rows are read 4 elements per load when q, k and v are aligned (the
// output is written a column per thread).
// CHECK-LABEL: func.func @decode_attention
// CHECK-SAME: (%[[Q:.*]]: memref<1x4x64xf32>, %[[K:.*]]: memref<?x2x64xf32, strided<[128, 64, 1], offset: ?>>, %[[V:.*]]: memref<?x2x64xf32, strided<[128, 64, 1], offset: ?>>, %[[OUT:.*]]: memref<1x4x64xf32>)
// CHECK-NOT: call @tfm_rt_attention
// CHECK: gpu.launch blocks(%[[H:.*]], %[[I:.*]], %{{.*}}) in (%{{.*}} = %c4{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %{{.*}}) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256
// CHECK-SAME: workgroup(%[[W:.*]] : memref<256xf32, #gpu.address_space<workgroup>>, %[[P:.*]] : memref<1024xf32, #gpu.address_space<workgroup>>)
// CHECK-COUNT-3: memref.extract_aligned_pointer_as_index
// CHECK-NOT: memref.extract_aligned_pointer_as_index %[[OUT]]
// CHECK: scf.if %{{.*}} {
// CHECK: %[[KVH:.*]] = arith.divui %[[H]], %c2
// CHECK: scf.for %[[START:.*]] = %{{.*}} to %{{.*}} step %c256{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32)
// CHECK: %[[KEY:.*]] = arith.addi %[[START]], %[[T]]
// CHECK: scf.for %[[D:.*]] = %c0{{.*}} to %c64{{.*}} step %c4
// CHECK: memref.load %[[Q]][%[[I]], %[[H]], %[[D]]] {alignment = 16 : i64}
// CHECK: memref.load %[[K]][%[[KEY]], %[[KVH]], %[[D]]] {alignment = 16 : i64}
// CHECK: gpu.all_reduce maximumf
// CHECK: math.exp
// CHECK: memref.store %{{.*}}, %[[W]][%[[T]]]
// CHECK: gpu.all_reduce add
// CHECK: gpu.barrier
// CHECK: scf.for {{.*}} step %c64{{.*}} iter_args
// CHECK: memref.load %[[W]]
// CHECK: memref.load %[[V]][%{{.*}}, %[[KVH]], %{{.*}}] {alignment = 16 : i64}
// CHECK: gpu.barrier
// CHECK: memref.store %{{.*}}, %[[P]]
// CHECK: gpu.barrier
// CHECK: arith.divf
// CHECK: memref.store %{{.*}}, %[[OUT]][%[[I]], %[[H]], %[[T]]]
// CHECK: } else {
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c64{{.*}} step %c1
// CHECK: scf.for {{.*}} step %c16{{.*}} iter_args
// CHECK-NOT: func.func private @tfm_rt_attention
func.func private @tfm_rt_attention(memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, f32, i64, i64) attributes {llvm.emit_c_interface}
func.func @decode_attention(%q: memref<1x4x64xf32>, %k: memref<?x2x64xf32, strided<[128, 64, 1], offset: ?>>, %v: memref<?x2x64xf32, strided<[128, 64, 1], offset: ?>>, %out: memref<1x4x64xf32>) {
  %scale = arith.constant 0.125 : f32
  %causal = arith.constant 1 : i64
  %window = arith.constant 0 : i64
  %q0 = memref.cast %q : memref<1x4x64xf32> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
  %k0 = memref.cast %k : memref<?x2x64xf32, strided<[128, 64, 1], offset: ?>> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
  %v0 = memref.cast %v : memref<?x2x64xf32, strided<[128, 64, 1], offset: ?>> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
  %o0 = memref.cast %out : memref<1x4x64xf32> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
  call @tfm_rt_attention(%q0, %k0, %v0, %o0, %scale, %causal, %window) : (memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, f32, i64, i64) -> ()
  return
}

// -----

// A head width that is not a multiple of 4: one element per load only,
// with no alignment test; 6 columns, one per thread, 42 groups, each
// weighing 4 keys per iteration.
// CHECK-LABEL: func.func @narrow_heads
// CHECK: gpu.launch
// CHECK-NOT: memref.extract_aligned_pointer_as_index
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c6{{.*}} step %c1
// CHECK: scf.for {{.*}} step %c168{{.*}} iter_args
// CHECK-NOT: alignment
func.func private @tfm_rt_attention(memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, f32, i64, i64) attributes {llvm.emit_c_interface}
func.func @narrow_heads(%q: memref<?x2x6xf32>, %k: memref<?x2x6xf32>, %v: memref<?x2x6xf32>, %out: memref<?x2x6xf32>) {
  %scale = arith.constant 0.4 : f32
  %causal = arith.constant 0 : i64
  %window = arith.constant 0 : i64
  %q0 = memref.cast %q : memref<?x2x6xf32> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
  %k0 = memref.cast %k : memref<?x2x6xf32> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
  %v0 = memref.cast %v : memref<?x2x6xf32> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
  %o0 = memref.cast %out : memref<?x2x6xf32> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
  call @tfm_rt_attention(%q0, %k0, %v0, %o0, %scale, %causal, %window) : (memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, f32, i64, i64) -> ()
  return
}
