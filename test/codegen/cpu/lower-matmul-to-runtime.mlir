// RUN: tfm-opt %s -split-input-file -tfm-lower-matmul-to-runtime | FileCheck %s

// x·Wᵀ on memrefs becomes a call of the runtime's BLAS kernel, operands cast
// to the one fully dynamic strided type it takes; the kernel is declared
// once, private, with a C interface.
// CHECK: func.func private @tfm_rt_matmul_nt(memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>, memref<?x?xf32, strided<[?, ?], offset: ?>>) attributes {llvm.emit_c_interface}
// CHECK-LABEL: func.func @linear
// CHECK-SAME: (%[[X:.*]]: memref<?x8xf32>, %[[W:.*]]: memref<16x8xf32>, %[[Y:.*]]: memref<?x16xf32>)
// CHECK: %[[CX:.*]] = memref.cast %[[X]] : memref<?x8xf32> to memref<?x?xf32, strided<[?, ?], offset: ?>>
// CHECK: %[[CW:.*]] = memref.cast %[[W]]
// CHECK: %[[CY:.*]] = memref.cast %[[Y]]
// CHECK: call @tfm_rt_matmul_nt(%[[CX]], %[[CW]], %[[CY]])
// CHECK-NOT: linalg.matmul
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (n, k)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @linear(%x: memref<?x8xf32>, %w: memref<16x8xf32>, %y: memref<?x16xf32>) {
  linalg.matmul indexing_maps = [#a, #b, #c] ins(%x, %w : memref<?x8xf32>, memref<16x8xf32>) outs(%y : memref<?x16xf32>)
  linalg.matmul indexing_maps = [#a, #b, #c] ins(%x, %w : memref<?x8xf32>, memref<16x8xf32>) outs(%y : memref<?x16xf32>)
  return
}

// -----

// Not x·Wᵀ (plain A·B), not f32, or still on tensors: left alone.
// CHECK-LABEL: func.func @others
// CHECK-NOT: call
// CHECK: linalg.matmul ins
// CHECK: linalg.matmul indexing_maps
// CHECK: linalg.matmul indexing_maps
func.func @others(%a: memref<4x8xf32>, %b: memref<8x16xf32>, %c: memref<4x16xf32>,
                  %h: memref<4x8xf16>, %w: memref<16x8xf16>, %o: memref<4x16xf16>,
                  %t: tensor<4x8xf32>, %tw: tensor<16x8xf32>, %to: tensor<4x16xf32>) -> tensor<4x16xf32> {
  linalg.matmul ins(%a, %b : memref<4x8xf32>, memref<8x16xf32>) outs(%c : memref<4x16xf32>)
  linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%h, %w : memref<4x8xf16>, memref<16x8xf16>) outs(%o : memref<4x16xf16>)
  %r = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, affine_map<(m, n, k) -> (m, n)>]
      ins(%t, %tw : tensor<4x8xf32>, tensor<16x8xf32>) outs(%to : tensor<4x16xf32>) -> tensor<4x16xf32>
  return %r : tensor<4x16xf32>
}
