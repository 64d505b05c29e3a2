// Weights stored narrower than f32 (tfm-quantize-weights): where
// tfm-lay-out-weights puts them and what reads them. bf16 panels go to
// the panel GEMM's bf16 entry, which widens in registers; block formats
// are block panels (runtime/include/tfm/weight_formats.h) that the block kernels read
// as bytes, for products and for table lookups alike.
// RUN: tfm-opt %s -split-input-file -tfm-lay-out-weights -tfm-select-cpu-kernels -tfm-lower-to-linalg | FileCheck %s
// Without the CPU's kernel selection the f32 values are materialized:
// bf16 widened elementwise. Block panels only a target's kernels read
// (tfm-select-cpu-kernels's block lookups and widenings): the
// target-independent lowering refuses them.
// RUN: not tfm-opt %s -split-input-file -tfm-lay-out-weights -tfm-lower-to-linalg 2>/dev/null | FileCheck %s --check-prefix=GENERIC
// RUN: not tfm-opt %s -split-input-file -tfm-lay-out-weights -tfm-lower-to-linalg 2>&1 >/dev/null | FileCheck %s --check-prefix=BLOCKS
// BLOCKS: error: failed to legalize operation 'tfm.dequantize'
// BLOCKS: error: failed to legalize operation 'tfm.dequantize'
// BLOCKS: error: failed to legalize operation 'tfm.embedding'

// bf16: two panels of 32 rows at two bytes an element.
// CHECK-LABEL: module attributes
// CHECK-SAME: tfm.weight_bytes = 4096 : i64
// CHECK-SAME: tfm.weight_formats = {w = "bf16"}
// CHECK-SAME: tfm.weight_panels = {w = array<i64: 40, 32>}
// CHECK-LABEL: func.func @linear_bf16
// CHECK: memref.view %{{.*}}[%{{.*}}][] : memref<?xi8> to memref<2x32x32xbf16>
// CHECK: call @tfm_rt_linear_panels_bf16(
// CHECK-NOT: tfm.dequantize
// CHECK-NOT: linalg.unpack
// GENERIC-LABEL: func.func @linear_bf16
// GENERIC: %[[W:.*]] = linalg.unpack %{{.*}} : tensor<2x32x32xbf16> -> tensor<40x32xbf16>
// GENERIC: linalg.generic {{.*}} ins(%[[W]] : tensor<40x32xbf16>) outs(%{{.*}} : tensor<40x32xf32>)
// GENERIC: arith.extf %{{.*}} : bf16 to f32
// GENERIC: linalg.matmul
tfm.weight_decl @w : tensor<40x32xbf16>
func.func @linear_bf16(%x: tensor<?x32xf32>) -> tensor<?x40xf32> {
  %w = tfm.weight @w : tensor<40x32xbf16>
  %f = tfm.dequantize %w : tensor<40x32xbf16> -> tensor<40x32xf32>
  %y = tfm.linear %x, %f : (tensor<?x32xf32>, tensor<40x32xf32>) -> tensor<?x40xf32>
  return %y : tensor<?x40xf32>
}

// -----

// int8 with a bias: 3 block panels of 16 rows, each one block's 16 f16
// scales (32 bytes) and codes (512 bytes); the kernel takes the bytes, the
// format (q8_0 = TFM_FORMAT_Q8_0 = 3) and adds the bias.
// CHECK-LABEL: module attributes
// CHECK-SAME: tfm.weight_formats = {w = "q8_0"}
// CHECK-SAME: tfm.weight_layout = {b = 1664 : i64, w = 0 : i64}
// CHECK-LABEL: func.func @linear_int8
// CHECK: memref.view %{{.*}}[%{{.*}}][] : memref<?xi8> to memref<1632xi8>
// CHECK: %[[Q8:.*]] = arith.constant 3 : i64
// CHECK: call @tfm_rt_linear_blocks_bias(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[Q8]])
// CHECK-NOT: unrealized_conversion_cast
// GENERIC-NOT: func.func @linear_int8
tfm.weight_decl @w : tensor<40x32xi8, #tfm.block_quant<q8_0>>
tfm.weight_decl @b : tensor<40xf32>
func.func @linear_int8(%x: tensor<?x32xf32>) -> tensor<?x40xf32> {
  %w = tfm.weight @w : tensor<40x32xi8, #tfm.block_quant<q8_0>>
  %f = tfm.dequantize %w : tensor<40x32xi8, #tfm.block_quant<q8_0>> -> tensor<40x32xf32>
  %b = tfm.weight @b : tensor<40xf32>
  %y = tfm.linear %x, %f bias %b : (tensor<?x32xf32>, tensor<40x32xf32>, tensor<40xf32>) -> tensor<?x40xf32>
  return %y : tensor<?x40xf32>
}

// -----

// An int4 table tied to the LM head, in @decode: the lookup widens only the
// rows of its ids (scaled, as Gemma's embeddings are); the head streams the
// blocks. A decode step reads the whole table once (the head's product).
// CHECK-LABEL: module attributes
// CHECK-SAME: tfm.decode_weight_bytes = 1152 : i64
// CHECK-SAME: tfm.weight_bytes = 1152 : i64
// CHECK-LABEL: func.func @decode
// CHECK: %[[Q4:.*]] = arith.constant 4 : i64
// CHECK: %[[SCALE:.*]] = arith.constant 8.000000e+00 : f32
// CHECK: call @tfm_rt_embedding_blocks(%{{.*}}, %{{.*}}, %{{.*}}, %[[Q4]], %[[SCALE]])
// CHECK: call @tfm_rt_linear_blocks(%{{.*}}, %{{.*}}, %{{.*}}, %{{.*}})
tfm.weight_decl @table : tensor<64x32xi4, #tfm.block_quant<q4_0>>
func.func @decode(%ids: tensor<1xi32>) -> tensor<1x64xf32> {
  %t = tfm.weight @table : tensor<64x32xi4, #tfm.block_quant<q4_0>>
  %f = tfm.dequantize %t : tensor<64x32xi4, #tfm.block_quant<q4_0>> -> tensor<64x32xf32>
  %x = tfm.embedding %f[%ids] {scale = 8.0 : f32} : tensor<64x32xf32>, tensor<1xi32> -> tensor<1x32xf32>
  %y = tfm.linear %x, %f : (tensor<1x32xf32>, tensor<64x32xf32>) -> tensor<1x64xf32>
  return %y : tensor<1x64xf32>
}

// -----

// A table in blocks that is only looked up: a decode step reads one row of
// it (18 bytes of the 1152: 32 codes of 4 bits and a 2-byte scale).
// CHECK-LABEL: module attributes
// CHECK-SAME: tfm.decode_weight_bytes = 18 : i64
// CHECK-LABEL: func.func @decode
// CHECK: call @tfm_rt_embedding_blocks(
// CHECK-NOT: call @tfm_rt_linear_blocks
tfm.weight_decl @table : tensor<64x32xi4, #tfm.block_quant<q4_0>>
func.func @decode(%ids: tensor<1xi32>) -> tensor<1x32xf32> {
  %t = tfm.weight @table : tensor<64x32xi4, #tfm.block_quant<q4_0>>
  %f = tfm.dequantize %t : tensor<64x32xi4, #tfm.block_quant<q4_0>> -> tensor<64x32xf32>
  %x = tfm.embedding %f[%ids] : tensor<64x32xf32>, tensor<1xi32> -> tensor<1x32xf32>
  return %x : tensor<1x32xf32>
}

// -----

// A bf16 table tied to the head: the lookup reads the panels and widens.
// CHECK-LABEL: func.func @tied_bf16
// CHECK: linalg.generic
// CHECK: tensor.extract %{{.*}}[%{{.*}}, %{{.*}}, %{{.*}}] : tensor<2x32x32xbf16>
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: call @tfm_rt_linear_panels_bf16(
tfm.weight_decl @table : tensor<64x32xbf16>
func.func @tied_bf16(%ids: tensor<?xi32>) -> tensor<?x64xf32> {
  %t = tfm.weight @table : tensor<64x32xbf16>
  %f = tfm.dequantize %t : tensor<64x32xbf16> -> tensor<64x32xf32>
  %x = tfm.embedding %f[%ids] : tensor<64x32xf32>, tensor<?xi32> -> tensor<?x32xf32>
  %y = tfm.linear %x, %f : (tensor<?x32xf32>, tensor<64x32xf32>) -> tensor<?x64xf32>
  return %y : tensor<?x64xf32>
}
