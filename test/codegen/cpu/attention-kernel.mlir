// The fused lowering of tfm.attention: a call of the runtime's flash-style
// kernel on the operands' buffers and the sinks' (an empty [0]: none), with
// scale, causal, window and softcap (0: none) as scalars; attention with a [heads, s, t] bias keeps the reference
// lowering, a relative-position bias does not.
// RUN: tfm-opt %s -split-input-file -tfm-lay-out-weights -tfm-select-cpu-kernels -tfm-lower-to-linalg | FileCheck %s

// CHECK-LABEL: func.func private @tfm_rt_attention(memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, f32, i64, i64, f32) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @gqa_window
// CHECK-SAME: (%[[Q:.*]]: tensor<?x8x4xf32>, %[[K:.*]]: tensor<?x2x4xf32>, %[[V:.*]]: tensor<?x2x4xf32>)
// CHECK-DAG: %[[QB:.*]] = bufferization.to_buffer %[[Q]] read_only
// CHECK-DAG: %[[KB:.*]] = bufferization.to_buffer %[[K]] read_only
// CHECK-DAG: %[[VB:.*]] = bufferization.to_buffer %[[V]] read_only
// CHECK-DAG: %[[ROWS:.*]] = tensor.dim %[[Q]], %c0
// CHECK-DAG: %[[SCALE:.*]] = arith.constant 5.000000e-01 : f32
// CHECK-DAG: %[[CAUSAL:.*]] = arith.constant 1 : i64
// CHECK-DAG: %[[WINDOW:.*]] = arith.constant 3 : i64
// CHECK-DAG: %[[NOCAP:.*]] = arith.constant 0.000000e+00 : f32
// CHECK-DAG: arith.constant dense<> : tensor<0xf32>
// CHECK: %[[OUT:.*]] = memref.alloc(%[[ROWS]]) : memref<?x8x4xf32>
// CHECK: %[[OUTB:.*]] = memref.cast %[[OUT]]
// CHECK: call @tfm_rt_attention(%{{.*}}, %{{.*}}, %{{.*}}, %[[NOSINKS:.*]], %[[OUTB]], %[[SCALE]], %[[CAUSAL]], %[[WINDOW]], %[[NOCAP]])
// CHECK: %[[RESULT:.*]] = bufferization.to_tensor %[[OUT]] restrict writable
// CHECK: return %[[RESULT]]
func.func @gqa_window(%q: tensor<?x8x4xf32>, %k: tensor<?x2x4xf32>, %v: tensor<?x2x4xf32>) -> tensor<?x8x4xf32> {
  %0 = tfm.attention %q, %k, %v {causal, scale = 0.5 : f32, window = 3 : i64} : (tensor<?x8x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x8x4xf32>
  return %0 : tensor<?x8x4xf32>
}

// -----

// Bidirectional (cross-attention shapes): causal 0, window 0 (none).
// CHECK-LABEL: func.func @cross
// CHECK-COUNT-2: arith.constant 0 : i64
// CHECK: memref.alloc() : memref<3x2x4xf32>
// CHECK: call @tfm_rt_attention
func.func @cross(%q: tensor<3x2x4xf32>, %k: tensor<5x2x4xf32>) -> tensor<3x2x4xf32> {
  %0 = tfm.attention %q, %k, %k {scale = 0.5 : f32} : (tensor<3x2x4xf32>, tensor<5x2x4xf32>, tensor<5x2x4xf32>) -> tensor<3x2x4xf32>
  return %0 : tensor<3x2x4xf32>
}

// -----

// A bias is not the kernel's: the reference lowering materializes scores.
// CHECK-LABEL: func.func @bias
// CHECK-NOT: tfm_rt_attention
// CHECK: linalg.generic
func.func @bias(%q: tensor<3x2x4xf32>, %k: tensor<5x2x4xf32>, %b: tensor<2x3x5xf32>) -> tensor<3x2x4xf32> {
  %0 = tfm.attention %q, %k, %k bias %b {scale = 0.5 : f32} : (tensor<3x2x4xf32>, tensor<5x2x4xf32>, tensor<5x2x4xf32>, tensor<2x3x5xf32>) -> tensor<3x2x4xf32>
  return %0 : tensor<3x2x4xf32>
}

// -----

// Packed sequences: tfm_rt_attention_packed, with the lengths' buffer
// after the values'.
// CHECK-LABEL: func.func private @tfm_rt_attention_packed(memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?xi32, strided<[?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, f32, i64, i64, f32) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @packed
// CHECK-SAME: (%[[Q:.*]]: tensor<?x2x4xf32>, %[[N:.*]]: tensor<?xi32>)
// CHECK: %[[NB:.*]] = bufferization.to_buffer %[[N]] read_only : tensor<?xi32> to memref<?xi32, strided<[?], offset: ?>>
// CHECK: %[[NC:.*]] = memref.cast %[[NB]] : memref<?xi32, strided<[?], offset: ?>> to memref<?xi32, strided<[?], offset: ?>>
// CHECK: call @tfm_rt_attention_packed(%{{.*}}, %{{.*}}, %{{.*}}, %[[NC]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
func.func @packed(%q: tensor<?x2x4xf32>, %lengths: tensor<?xi32>) -> tensor<?x2x4xf32> {
  %0 = tfm.attention %q, %q, %q lengths %lengths {scale = 0.5 : f32} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?xi32>) -> tensor<?x2x4xf32>
  return %0 : tensor<?x2x4xf32>
}

// -----

// T5's relative-position bias stays in the kernel: the terms by distance
// ([heads, s + t - 1], column c for query - key = c - (s - 1)) are gathered
// from the table through the buckets of distances -12..12 (8 bidirectional
// buckets: exact below 2, logarithmic up to max_distance 12, keys after the
// query in the upper half), computed at compile time.
// CHECK-LABEL: func.func private @tfm_rt_attention_biased(memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, f32, i64, i64, f32) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @relative
// CHECK-SAME: %[[TABLE:[^:]*]]: tensor<8x2xf32>
// CHECK: %[[BUCKETS:.*]] = arith.constant dense<[7, 7, 7, 7, 7, 7, 7, 7, 6, 6, 6, 5, 0, 1, 2, 2, 2, 3, 3, 3, 3, 3, 3, 3, 3]> : tensor<25xi32>
// CHECK: %[[TERMS:.*]] = linalg.generic
// CHECK: tensor.extract %[[BUCKETS]]
// CHECK: tensor.extract %[[TABLE]]
// CHECK: %[[TB:.*]] = bufferization.to_buffer %[[TERMS]]
// CHECK: %[[TC:.*]] = memref.cast %[[TB]]
// CHECK: call @tfm_rt_attention_biased(%{{.*}}, %{{.*}}, %{{.*}}, %[[TC]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
func.func @relative(%q: tensor<?x2x4xf32>, %k: tensor<?x2x4xf32>, %table: tensor<8x2xf32>) -> tensor<?x2x4xf32> {
  %0 = tfm.attention %q, %k, %k relative_bias %table {max_distance = 12 : i64, scale = 1.0 : f32} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<8x2xf32>) -> tensor<?x2x4xf32>
  return %0 : tensor<?x2x4xf32>
}

// -----

// Causal: 8 buckets all for keys at or before the query (exact below 4);
// keys after it, which the mask hides, read bucket 0.
// CHECK-LABEL: func.func @relative_causal
// CHECK: arith.constant dense<[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 4, 4, 5, 6, 6, 6, 7, 7, 7]> : tensor<25xi32>
// CHECK: call @tfm_rt_attention_biased
func.func @relative_causal(%q: tensor<?x2x4xf32>, %k: tensor<?x2x4xf32>, %table: tensor<8x2xf32>) -> tensor<?x2x4xf32> {
  %0 = tfm.attention %q, %k, %k relative_bias %table {causal, max_distance = 12 : i64, scale = 1.0 : f32} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<8x2xf32>) -> tensor<?x2x4xf32>
  return %0 : tensor<?x2x4xf32>
}

// -----

// Keys and values read from an int8 cache: the kernel's _rows_i8 variant
// takes the rows as stored (codes and scale), and their widening is gone.
// CHECK-LABEL: func.func private @tfm_rt_attention_rows_i8(memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xi8, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xi8, strided<[?, ?, ?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, f32, i64, i64, f32)
// CHECK-LABEL: func.func @int8_rows
// CHECK-SAME: (%[[Q:.*]]: tensor<?x8x4xf32>, %[[K:.*]]: tensor<?x2x8xi8>, %[[V:.*]]: tensor<?x2x8xi8>)
// CHECK-DAG: bufferization.to_buffer %[[K]] read_only : tensor<?x2x8xi8>
// CHECK-DAG: bufferization.to_buffer %[[V]] read_only : tensor<?x2x8xi8>
// CHECK-NOT: linalg.generic
// CHECK: call @tfm_rt_attention_rows_i8
// CHECK-NOT: linalg.generic
func.func @int8_rows(%q: tensor<?x8x4xf32>, %k: tensor<?x2x8xi8>, %v: tensor<?x2x8xi8>) -> tensor<?x8x4xf32> {
  %kf = tfm.dequantize_rows %k : tensor<?x2x8xi8> -> tensor<?x2x4xf32>
  %vf = tfm.dequantize_rows %v : tensor<?x2x8xi8> -> tensor<?x2x4xf32>
  %0 = tfm.attention %q, %kf, %vf {causal, scale = 0.5 : f32} : (tensor<?x8x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x8x4xf32>
  return %0 : tensor<?x8x4xf32>
}

// -----

// Keys and values read from a bf16 cache: the kernel's _rows_bf16 variant
// takes them as stored; f16's _rows_f16.
// CHECK-LABEL: func.func private @tfm_rt_attention_rows_bf16(memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xbf16, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xbf16, strided<[?, ?, ?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, f32, i64, i64, f32)
// CHECK-LABEL: func.func @bf16_rows
// CHECK-NOT: linalg.generic
// CHECK: call @tfm_rt_attention_rows_bf16
// CHECK-NOT: linalg.generic
func.func @bf16_rows(%q: tensor<?x8x4xf32>, %k: tensor<?x2x4xbf16>, %v: tensor<?x2x4xbf16>) -> tensor<?x8x4xf32> {
  %kf = tfm.dequantize_rows %k : tensor<?x2x4xbf16> -> tensor<?x2x4xf32>
  %vf = tfm.dequantize_rows %v : tensor<?x2x4xbf16> -> tensor<?x2x4xf32>
  %0 = tfm.attention %q, %kf, %vf {causal, scale = 0.5 : f32} : (tensor<?x8x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x8x4xf32>
  return %0 : tensor<?x8x4xf32>
}

// -----

// CHECK-LABEL: func.func private @tfm_rt_attention_biased_rows_f16(
// CHECK-LABEL: func.func @f16_rows_relative
// CHECK: call @tfm_rt_attention_biased_rows_f16
func.func @f16_rows_relative(%q: tensor<?x2x4xf32>, %k: tensor<?x2x4xf16>, %table: tensor<8x2xf32>) -> tensor<?x2x4xf32> {
  %kf = tfm.dequantize_rows %k : tensor<?x2x4xf16> -> tensor<?x2x4xf32>
  %0 = tfm.attention %q, %kf, %kf relative_bias %table {causal, max_distance = 12 : i64, scale = 1.0 : f32} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<8x2xf32>) -> tensor<?x2x4xf32>
  return %0 : tensor<?x2x4xf32>
}

// -----

// Gemma 2's soft-capped scores: the cap as the kernel's last scalar.
// CHECK-LABEL: func.func @softcap
// CHECK: %[[CAP:.*]] = arith.constant 5.000000e+01 : f32
// CHECK: call @tfm_rt_attention(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[CAP]])
func.func @softcap(%q: tensor<?x2x4xf32>, %k: tensor<?x2x4xf32>) -> tensor<?x2x4xf32> {
  %0 = tfm.attention %q, %k, %k {causal, scale = 0.5 : f32, softcap = 50.0 : f32} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x2x4xf32>
  return %0 : tensor<?x2x4xf32>
}

// -----

// gpt-oss's sinks: their buffer where none was.
// CHECK-LABEL: func.func @sinks
// CHECK-SAME: (%[[Q:.*]]: tensor<?x4x8xf32>, %[[K:.*]]: tensor<?x2x8xf32>, %[[S:.*]]: tensor<4xf32>)
// CHECK: %[[SB:.*]] = bufferization.to_buffer %[[S]] read_only
// CHECK: %[[SC:.*]] = memref.cast %[[SB]] : memref<4xf32{{.*}}> to memref<?xf32, strided<[?], offset: ?>>
// CHECK: call @tfm_rt_attention(%{{.*}}, %{{.*}}, %{{.*}}, %[[SC]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
func.func @sinks(%q: tensor<?x4x8xf32>, %k: tensor<?x2x8xf32>, %s: tensor<4xf32>) -> tensor<?x4x8xf32> {
  %0 = tfm.attention %q, %k, %k sinks %s {causal, scale = 0.25 : f32, window = 128 : i64} : (tensor<?x4x8xf32>, tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<4xf32>) -> tensor<?x4x8xf32>
  return %0 : tensor<?x4x8xf32>
}
