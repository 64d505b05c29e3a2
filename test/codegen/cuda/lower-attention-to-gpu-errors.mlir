// RUN: tfm-opt %s -tfm-lower-attention-to-gpu -split-input-file -verify-diagnostics

// The GPU has no kernel for the runtime's other attention calls (packed
// sequences, relative bias, int8 rows): tfm-call-attention-kernel does not
// choose them for --target=cuda, and one that got there is an error.
func.func private @tfm_rt_attention_packed(memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?xi32>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, f32, i64, i64, f32)
func.func @packed(%q: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, %lengths: memref<?xi32>) {
  %scale = arith.constant 0.125 : f32
  %zero = arith.constant 0 : i64
  // expected-error @+1 {{--target=cuda has no kernel for tfm_rt_attention_packed}}
  call @tfm_rt_attention_packed(%q, %q, %q, %lengths, %q, %scale, %zero, %zero, %scale) : (memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?xi32>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, f32, i64, i64, f32) -> ()
  return
}

// -----

// gpt-oss's sinks have no place in the GPU kernel yet.
func.func private @tfm_rt_attention(memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, f32, i64, i64, f32)
func.func @sinks(%q: memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, %sinks: memref<4xf32>) {
  %scale = arith.constant 0.125 : f32
  %zero = arith.constant 0 : i64
  %s = memref.cast %sinks : memref<4xf32> to memref<?xf32, strided<[?], offset: ?>>
  // expected-error @+1 {{attention sinks (gpt-oss) are not supported on the GPU yet}}
  call @tfm_rt_attention(%q, %q, %q, %s, %q, %scale, %zero, %zero, %scale) : (memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, memref<?xf32, strided<[?], offset: ?>>, memref<?x?x?xf32, strided<[?, ?, ?], offset: ?>>, f32, i64, i64, f32) -> ()
  return
}
