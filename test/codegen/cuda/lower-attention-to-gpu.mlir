// RUN: tfm-opt %s -split-input-file -tfm-lower-attention-to-gpu | FileCheck %s

// Decode's grouped-query attention (4 query heads over 2 KV heads, width
// 64), its keys split (flash-decoding): a block of 64 threads per (head,
// query, span of 64 keys), the span's keys scored one per thread, their
// maximum and sum of exponentials reduced across the block, the weights
// staged in shared memory, 16 threads per key row (4 columns each) in 4
// groups weighing the keys, the groups' partial outputs summed; each block
// writes its unnormalized outputs, maximum and sum, and a second kernel (a
// thread per column) rescales the spans to their common maximum and
// divides. Rows are read 4 elements per load when q, k and v are aligned.
// CHECK-LABEL: func.func @decode_attention
// CHECK-SAME: (%[[Q:.*]]: memref<1x4x64xf32>, %[[K:.*]]: memref<?x2x64xf32, strided<[128, 64, 1], offset: ?>>, %[[V:.*]]: memref<?x2x64xf32, strided<[128, 64, 1], offset: ?>>, %[[OUT:.*]]: memref<1x4x64xf32>)
// CHECK-NOT: call @tfm_rt_attention
// CHECK: %[[KEYS:.*]] = memref.dim %[[K]], %c0
// CHECK: %[[PADDED:.*]] = arith.addi %[[KEYS]], %c63
// CHECK: %[[SPANS:.*]] = arith.divui %[[PADDED]], %c64
// CHECK: %[[PARTS:.*]] = memref.alloc(%[[SPANS]]) : memref<4x1x?x66xf32>
// CHECK: gpu.launch blocks(%[[H:.*]], %[[I:.*]], %[[S:.*]]) in (%{{.*}} = %c4{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %[[SPANS]]) threads(%[[T:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c64
// CHECK-SAME: workgroup(%[[W:.*]] : memref<64xf32, #gpu.address_space<workgroup>>, %[[P:.*]] : memref<256xf32, #gpu.address_space<workgroup>>)
// CHECK-COUNT-3: memref.extract_aligned_pointer_as_index
// CHECK-NOT: memref.extract_aligned_pointer_as_index %[[OUT]]
// CHECK: scf.if %{{.*}} {
// CHECK: %[[KVH:.*]] = arith.divui %[[H]], %c2
// CHECK: %[[SPAN_FIRST:.*]] = arith.muli %[[S]], %c64
// CHECK: %[[FIRST:.*]] = arith.maxui %{{.*}}, %[[SPAN_FIRST]]
// CHECK: %[[SPAN_END:.*]] = arith.addi %[[SPAN_FIRST]], %c64
// CHECK: %[[END:.*]] = arith.minui %{{.*}}, %[[SPAN_END]]
// CHECK: scf.for %[[START:.*]] = %[[FIRST]] to %[[END]] step %c64{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32)
// CHECK: %[[KEY:.*]] = arith.addi %[[START]], %[[T]]
// CHECK: scf.for %[[D:.*]] = %c0{{.*}} to %c64{{.*}} step %c4
// CHECK: memref.load %[[Q]][%[[I]], %[[H]], %[[D]]] {alignment = 16 : i64}
// CHECK: memref.load %[[K]][%[[KEY]], %[[KVH]], %[[D]]] {alignment = 16 : i64}
// CHECK: gpu.all_reduce maximumf
// CHECK: math.exp
// CHECK: memref.store %{{.*}}, %[[W]][%[[T]]]
// CHECK: gpu.all_reduce add
// CHECK: gpu.barrier
// CHECK: scf.for {{.*}} step %c16{{.*}} iter_args
// CHECK: memref.load %[[W]]
// CHECK: memref.load %[[V]][%{{.*}}, %[[KVH]], %{{.*}}] {alignment = 16 : i64}
// CHECK: gpu.barrier
// CHECK: memref.store %{{.*}}, %[[P]]
// CHECK: gpu.barrier
// CHECK-NOT: arith.divf
// CHECK: memref.store %{{.*}}, %[[PARTS]][%[[H]], %[[I]], %[[S]], %[[T]]]
// CHECK: memref.store %{{.*}}, %[[PARTS]][%[[H]], %[[I]], %[[S]], %c64{{.*}}]
// CHECK: memref.store %{{.*}}, %[[PARTS]][%[[H]], %[[I]], %[[S]], %c65]
// CHECK: } else {
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c64{{.*}} step %c1
// CHECK: scf.for {{.*}} step %c4{{.*}} iter_args
// CHECK: gpu.launch blocks(%[[H2:.*]], %[[I2:.*]], %{{.*}}) in (%{{.*}} = %c4{{.*}}, %{{.*}} = %{{.*}}, %{{.*}} = %c1{{.*}}) threads(%[[C:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c64
// CHECK: scf.for %[[SPAN:.*]] = %c0{{.*}} to %[[SPANS]] step %c1{{.*}} iter_args({{.*}}) -> (f32)
// CHECK: arith.maximumf
// CHECK: scf.for %[[SPAN2:.*]] = %c0{{.*}} to %[[SPANS]] step %c1{{.*}} iter_args({{.*}}) -> (f32, f32)
// CHECK: %[[MAX:.*]] = memref.load %[[PARTS]][%[[H2]], %[[I2]], %[[SPAN2]], %c64
// CHECK: arith.cmpf oeq, %[[MAX]]
// CHECK: math.exp
// CHECK: memref.load %[[PARTS]][%[[H2]], %[[I2]], %[[SPAN2]], %[[C]]]
// CHECK: memref.load %[[PARTS]][%[[H2]], %[[I2]], %[[SPAN2]], %c65]
// CHECK: arith.divf
// CHECK: memref.store %{{.*}}, %[[OUT]][%[[I2]], %[[H2]], %[[C]]]
// CHECK: memref.dealloc %[[PARTS]]
// CHECK-NOT: func.func private @tfm_rt_attention
func.func private @tfm_rt_attention(memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, f32, i64, i64, f32) attributes {llvm.emit_c_interface}
func.func @decode_attention(%q: memref<1x4x64xf32>, %k: memref<?x2x64xf32, strided<[128, 64, 1], offset: ?>>, %v: memref<?x2x64xf32, strided<[128, 64, 1], offset: ?>>, %out: memref<1x4x64xf32>) {
  %scale = arith.constant 0.125 : f32
  %causal = arith.constant 1 : i64
  %window = arith.constant 0 : i64
  %nocap = arith.constant 0.0 : f32
  %q0 = memref.cast %q : memref<1x4x64xf32> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
  %k0 = memref.cast %k : memref<?x2x64xf32, strided<[128, 64, 1], offset: ?>> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
  %v0 = memref.cast %v : memref<?x2x64xf32, strided<[128, 64, 1], offset: ?>> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
  %o0 = memref.cast %out : memref<1x4x64xf32> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
  %nosinks = memref.alloca() : memref<0xf32>
  %s0 = memref.cast %nosinks : memref<0xf32> to memref<?xf32, strided<[?], offset: ?>>
  call @tfm_rt_attention(%q0, %k0, %v0, %s0, %o0, %scale, %causal, %window, %nocap) : (memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, f32, i64, i64, f32) -> ()
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
func.func private @tfm_rt_attention(memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, f32, i64, i64, f32) attributes {llvm.emit_c_interface}
func.func @narrow_heads(%q: memref<?x2x6xf32>, %k: memref<?x2x6xf32>, %v: memref<?x2x6xf32>, %out: memref<?x2x6xf32>) {
  %scale = arith.constant 0.4 : f32
  %causal = arith.constant 0 : i64
  %window = arith.constant 0 : i64
  %nocap = arith.constant 0.0 : f32
  %q0 = memref.cast %q : memref<?x2x6xf32> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
  %k0 = memref.cast %k : memref<?x2x6xf32> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
  %v0 = memref.cast %v : memref<?x2x6xf32> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
  %o0 = memref.cast %out : memref<?x2x6xf32> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
  %nosinks = memref.alloca() : memref<0xf32>
  %s0 = memref.cast %nosinks : memref<0xf32> to memref<?xf32, strided<[?], offset: ?>>
  call @tfm_rt_attention(%q0, %k0, %v0, %s0, %o0, %scale, %causal, %window, %nocap) : (memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, f32, i64, i64, f32) -> ()
  return
}
