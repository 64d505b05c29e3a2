// RUN: tfm-opt %s -split-input-file -tfm-lower-attention-to-gpu | FileCheck %s

// Decode's grouped-query attention (4 query heads over 2 KV heads, width
// 64), its keys split (flash-decoding): a block of 64 threads per (head,
// query, span of 64 keys), the span's keys scored one per thread, their
// maximum and sum of exponentials reduced across the block, the weights
// staged in shared memory, 16 threads per key row (4 columns each) in 4
// groups weighing the keys (each thread's 16 value rows loaded as the
// chunk starts, in flight while the keys are scored and the block
// reduces), the groups' partial outputs summed; each block
// writes its unnormalized outputs, maximum and sum, and a second kernel (a
// thread per column) rescales the spans to their common maximum and
// divides. Rows are read 4 elements per load when q, k and v are aligned,
// a key row's loads four at a time (16 elements) before their products.
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
// CHECK-COUNT-16: memref.load %[[V]][%{{.*}}, %[[KVH]], %{{.*}}] {alignment = 16 : i64}
// CHECK: %[[KEY:.*]] = arith.addi %[[START]], %[[T]]
// CHECK: scf.for %[[D:.*]] = %c0{{.*}} to %c64{{.*}} step %c16
// CHECK: memref.load %[[Q]][%[[I]], %[[H]], %[[D]]] {alignment = 16 : i64}
// CHECK: memref.load %[[K]][%[[KEY]], %[[KVH]], %[[D]]] {alignment = 16 : i64}
// CHECK-COUNT-3: memref.load %[[K]][%[[KEY]], %[[KVH]], %{{.*}}] :
// CHECK: %[[D4:.*]] = arith.addi %[[D]], %c4
// CHECK: memref.load %[[K]][%[[KEY]], %[[KVH]], %[[D4]]] {alignment = 16 : i64}
// CHECK: arith.mulf
// CHECK: gpu.all_reduce maximumf
// CHECK: math.exp
// CHECK: memref.store %{{.*}}, %[[W]][%[[T]]]
// CHECK: gpu.all_reduce add
// CHECK: gpu.barrier
// CHECK-NOT: memref.load %[[V]]
// CHECK-COUNT-16: memref.load %[[W]]
// CHECK-NOT: memref.load %[[V]]
// CHECK: gpu.barrier
// CHECK: memref.store %{{.*}}, %[[P]]
// CHECK: gpu.barrier
// CHECK-NOT: arith.divf
// CHECK: memref.store %{{.*}}, %[[PARTS]][%[[H]], %[[I]], %[[S]], %[[T]]]
// CHECK: memref.store %{{.*}}, %[[PARTS]][%[[H]], %[[I]], %[[S]], %c64{{.*}}]
// CHECK: memref.store %{{.*}}, %[[PARTS]][%[[H]], %[[I]], %[[S]], %c65]
// CHECK: } else {
// CHECK-COUNT-64: memref.load %[[V]]
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c64{{.*}} step %c4
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
// with no alignment test (nor the tiled prefill, whose heads are a
// multiple of 8 wide); 6 columns, one per thread, 42 groups, each thread
// loading the value rows of its 7 keys of a chunk (share, share + 42, ...)
// as the chunk starts.
// CHECK-LABEL: func.func @narrow_heads
// CHECK: gpu.launch
// CHECK-NOT: memref.extract_aligned_pointer_as_index
// CHECK: scf.for {{.*}} step %c256{{.*}} iter_args
// CHECK: %[[SLOT6:.*]] = arith.addi %{{.*}}, %c252
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c6{{.*}} step %c1
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

// -----

// A prefill (queries known at run time only) of grouped-query attention
// with a sliding window goes by tiles: a block of 256 threads per (head,
// 64 queries), the queries staged scaled, then the keys from the first
// query's window start to the last query's end by tiles of 32, K and V
// staged once per tile for all 64 queries. Each thread holds 2 query rows
// by 4 keys of scores (lane c of 8: keys c, c + 8, ...), shuffles within
// its 8 lanes give each row's maximum and sum, the weights go through
// workgroup memory, and 2 x 8 output columns stay in registers until the
// end, divided by their row's sum.
// CHECK-LABEL: func.func @tiled_prefill
// CHECK-SAME: (%[[Q:.*]]: memref<?x4x64xf32>, %[[K:.*]]: memref<?x2x64xf32>, %[[V:.*]]: memref<?x2x64xf32>, %[[OUT:.*]]: memref<?x4x64xf32>)
// CHECK-NOT: call @tfm_rt_attention
// CHECK: %[[S:.*]] = memref.dim %[[Q]], %c0
// CHECK: %[[T:.*]] = memref.dim %[[K]], %c0
// CHECK: %[[PADDED:.*]] = arith.addi %[[S]], %c63
// CHECK: %[[TILES:.*]] = arith.divui %[[PADDED]], %c64
// CHECK: gpu.launch blocks(%[[H:.*]], %[[B:.*]], %{{.*}}) in (%{{.*}} = %c4{{.*}}, %{{.*}} = %[[TILES]], %{{.*}} = %c1{{.*}}) threads(%[[TH:.*]], %{{.*}}, %{{.*}}) in (%{{.*}} = %c256
// CHECK-SAME: workgroup(%[[QT:.*]] : memref<64x65xf32, #gpu.address_space<workgroup>>, %[[KT:.*]] : memref<32x65xf32, #gpu.address_space<workgroup>>, %[[VT:.*]] : memref<32x64xf32, #gpu.address_space<workgroup>>, %[[PT:.*]] : memref<64x36xf32, #gpu.address_space<workgroup>>)
// CHECK: %[[Q0:.*]] = arith.muli %[[B]], %c64
// CHECK: %[[KVH:.*]] = arith.divui %[[H]], %c2
// CHECK: %[[LANE:.*]] = arith.remui %[[TH]], %c8
// The queries, scaled by 0.125, zero past the prompt: a thread's 16
// loads (rows clamped to the last query) issued before its 16 stores.
// CHECK: %[[LASTQ:.*]] = arith.subi %[[S]], %c1
// CHECK: %[[ROW0:.*]] = arith.divui %[[TH]], %c64
// CHECK: %[[COL0:.*]] = arith.remui %[[TH]], %c64
// CHECK: %[[POS0:.*]] = arith.addi %[[Q0]], %[[ROW0]]
// CHECK: %[[CLAMPED0:.*]] = arith.minui %[[POS0]], %[[LASTQ]]
// CHECK: memref.load %[[Q]][%[[CLAMPED0]], %[[H]], %[[COL0]]]
// CHECK-COUNT-15: memref.load %[[Q]]
// CHECK-NOT: memref.store
// CHECK: arith.mulf %{{.*}}, %cst
// CHECK: memref.store %{{.*}}, %[[QT]][%[[ROW0]], %[[COL0]]]
// CHECK-COUNT-15: memref.store %{{.*}}, %[[QT]]
// CHECK: gpu.barrier
// The window: the first query sees keys from its position among the t
// keys, plus 1, - 16 (causal or not: a window hides the keys behind).
// CHECK: %[[OFFSET:.*]] = arith.subi %[[T]], %[[S]]
// CHECK: %[[QEND:.*]] = arith.addi %{{.*}}, %[[OFFSET]]
// CHECK: arith.minui %[[T]], %[[QEND]]
// CHECK: arith.cmpi ugt, %[[QEND]], %c16
// CHECK: %[[BEGIN:.*]] = arith.select
// CHECK: scf.for %[[START:.*]] = %[[BEGIN]] to %{{.*}} step %c32{{.*}} iter_args({{.*}}) -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK-COUNT-8: memref.load %[[K]][%{{.*}}, %[[KVH]], %{{.*}}]
// CHECK-COUNT-8: memref.store %{{.*}}, %[[KT]]
// CHECK-COUNT-8: memref.load %[[V]][%{{.*}}, %[[KVH]], %{{.*}}]
// CHECK-COUNT-8: memref.store %{{.*}}, %[[VT]]
// CHECK: gpu.barrier
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c64{{.*}} step %c1{{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK-COUNT-8: math.fma
// CHECK-COUNT-3: gpu.shuffle  xor
// CHECK: math.exp
// CHECK: memref.store %{{.*}}, %[[PT]]
// CHECK-COUNT-3: gpu.shuffle  xor
// CHECK: gpu.barrier
// CHECK: scf.for %{{.*}} = %c0{{.*}} to %c32{{.*}} step %c1{{.*}} -> (f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32, f32)
// CHECK-COUNT-16: math.fma
// CHECK: gpu.barrier
// CHECK: arith.divf
// CHECK: memref.store %{{.*}}, %[[OUT]][%{{.*}}, %[[H]], %[[LANE]]]
// CHECK-NOT: func.func private @tfm_rt_attention
func.func private @tfm_rt_attention(memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, f32, i64, i64, f32) attributes {llvm.emit_c_interface}
func.func @tiled_prefill(%q: memref<?x4x64xf32>, %k: memref<?x2x64xf32>, %v: memref<?x2x64xf32>, %out: memref<?x4x64xf32>) {
  %scale = arith.constant 0.125 : f32
  %causal = arith.constant 1 : i64
  %window = arith.constant 16 : i64
  %nocap = arith.constant 0.0 : f32
  %q0 = memref.cast %q : memref<?x4x64xf32> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
  %k0 = memref.cast %k : memref<?x2x64xf32> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
  %v0 = memref.cast %v : memref<?x2x64xf32> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
  %o0 = memref.cast %out : memref<?x4x64xf32> to memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>
  %nosinks = memref.alloca() : memref<0xf32>
  %s0 = memref.cast %nosinks : memref<0xf32> to memref<?xf32, strided<[?], offset: ?>>
  call @tfm_rt_attention(%q0, %k0, %v0, %s0, %o0, %scale, %causal, %window, %nocap) : (memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, f32, i64, i64, f32) -> ()
  return
}
