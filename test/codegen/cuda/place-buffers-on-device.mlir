// RUN: tfm-opt %s -split-input-file -verify-diagnostics -tfm-place-buffers-on-device | FileCheck %s

// Buffers become device memory; the token ids are copied in at entry and
// the logits out into a host buffer the caller owns; the weights blob
// (bytes) and the cache (f32) are the runtime's device memory already.
// CHECK-LABEL: func.func @decode
// CHECK-SAME: (%[[W:.*]]: memref<?xi8>, %[[IDS:.*]]: memref<1xi32>, %[[CACHE:.*]]: memref<2x8xf32>)
// CHECK: %[[DIDS:.*]] = gpu.alloc () : memref<1xi32>
// CHECK: gpu.memcpy %[[DIDS]], %[[IDS]] : memref<1xi32>, memref<1xi32>
// CHECK: %[[TMP:.*]] = gpu.alloc () : memref<8xf32>
// CHECK: gpu.launch
// CHECK: memref.load %[[DIDS]]
// CHECK: memref.load %[[CACHE]]
// CHECK: gpu.dealloc %[[DIDS]] : memref<1xi32>
// CHECK: %[[HOST:.*]] = memref.alloc() : memref<8xf32>
// CHECK: gpu.memcpy %[[HOST]], %[[TMP]] : memref<8xf32>, memref<8xf32>
// CHECK: gpu.dealloc %[[TMP]] : memref<8xf32>
// CHECK: return %[[HOST]] : memref<8xf32>
func.func @decode(%w: memref<?xi8>, %ids: memref<1xi32>, %cache: memref<2x8xf32>) -> memref<8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c8 = arith.constant 8 : index
  %out = memref.alloc() : memref<8xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c8, %sy = %c1, %sz = %c1) {
    %id = memref.load %ids[%c0] : memref<1xi32>
    %row = arith.index_cast %id : i32 to index
    %v = memref.load %cache[%row, %tx] : memref<2x8xf32>
    memref.store %v, %out[%tx] : memref<8xf32>
    gpu.terminator
  }
  return %out : memref<8xf32>
}

// -----

// An op outside a kernel that reads a buffer would read device memory on
// the host.
func.func @host_read(%ids: memref<4xi32>) -> i32 {
  %c0 = arith.constant 0 : index
  // expected-error @below {{'memref.load' op reads or writes a buffer on the host, outside a GPU kernel (tfm-place-buffers-on-device): the GPU target has no kernel for it}}
  %v = memref.load %ids[%c0] : memref<4xi32>
  return %v : i32
}

// -----

// A constant global (a RoPE scaling's frequencies) read by a kernel moves
// into it, views and all: outlining then copies the global into the
// kernel's module, device memory, instead of passing the host's address.
memref.global "private" constant @freqs : memref<4xf32> = dense<[1.0, 0.5, 0.25, 0.125]>
// CHECK-LABEL: func.func @constant_global
// CHECK-NOT: memref.get_global
// CHECK: gpu.launch
// CHECK: %[[G:.*]] = memref.get_global @freqs : memref<4xf32>
// CHECK: %[[V:.*]] = memref.subview %[[G]][1] [2] [1]
// CHECK: memref.load %[[V]]
func.func @constant_global() -> memref<2xf32> {
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %g = memref.get_global @freqs : memref<4xf32>
  %v = memref.subview %g[1] [2] [1] : memref<4xf32> to memref<2xf32, strided<[1], offset: 1>>
  %out = memref.alloc() : memref<2xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c2, %sy = %c1, %sz = %c1) {
    %x = memref.load %v[%tx] : memref<2xf32, strided<[1], offset: 1>>
    memref.store %x, %out[%tx] : memref<2xf32>
    gpu.terminator
  }
  return %out : memref<2xf32>
}

// -----

// A global that is not constant stays host memory: a kernel must not
// read it.
memref.global "private" @state : memref<4xf32> = dense<0.0>
func.func @mutable_global() {
  %c1 = arith.constant 1 : index
  %c4 = arith.constant 4 : index
  // expected-error @below {{'memref.get_global' op global @state would be read by a GPU kernel in host memory (tfm-place-buffers-on-device): only constant globals move into kernels}}
  %g = memref.get_global @state : memref<4xf32>
  gpu.launch blocks(%bx, %by, %bz) in (%gx = %c1, %gy = %c1, %gz = %c1)
             threads(%tx, %ty, %tz) in (%sx = %c4, %sy = %c1, %sz = %c1) {
    %x = memref.load %g[%tx] : memref<4xf32>
    memref.store %x, %g[%tx] : memref<4xf32>
    gpu.terminator
  }
  return
}
