// tfm-quantize-weights: the matrices a model multiplies by and looks rows
// up in get a narrower storage type and are read through tfm.dequantize.
// RUN: tfm-opt %s -split-input-file -tfm-quantize-weights="dtype=int4" | FileCheck %s --check-prefix=INT4
// RUN: tfm-opt %s -split-input-file -tfm-quantize-weights="dtype=bf16" | FileCheck %s --check-prefix=BF16
// RUN: tfm-opt %s -split-input-file -tfm-quantize-weights="dtype=int8 edge-dtype=f32 keep=^proj$" | FileCheck %s --check-prefix=KEEP
// RUN: tfm-opt %s -split-input-file -tfm-quantize-weights="dtype=int4 dtype-for=^pro=bf16" | FileCheck %s --check-prefix=FOR
// RUN: tfm-opt %s -split-input-file -tfm-quantize-weights="dtype=int8-channel dtype-for=^k$=int8" | FileCheck %s --check-prefix=CHANNEL
// RUN: not tfm-opt %s -split-input-file -tfm-quantize-weights="dtype=int4 dtype-for=proj" 2>&1 | FileCheck %s --check-prefix=BAD-FOR
// RUN: not tfm-opt %s -split-input-file -tfm-quantize-weights="dtype=int3" 2>&1 | FileCheck %s --check-prefix=BAD-DTYPE
// RUN: not tfm-opt %s -split-input-file -tfm-quantize-weights="dtype=int8 keep=(" 2>&1 | FileCheck %s --check-prefix=BAD-REGEX
// RUN: not tfm-opt %s -split-input-file -tfm-quantize-weights="dtype=q4_k" 2>&1 | FileCheck %s --check-prefix=BAD-Q4K

// A decoder in miniature: the table tied to the LM head (an edge weight:
// int8 under int4), a projection, a norm gain that stays f32.
// INT4-LABEL: tfm.weight_decl @embed : tensor<64x32xi8, #tfm.block_quant<q8_0>>
// INT4: tfm.weight_decl @norm : tensor<32xf32>
// INT4: tfm.weight_decl @proj : tensor<32x32xi4, #tfm.block_quant<q4_0>>
// INT4: func.func @tied
// INT4: %[[E:.*]] = tfm.weight @embed : tensor<64x32xi8, #tfm.block_quant<q8_0>>
// INT4: %[[EF:.*]] = tfm.dequantize %[[E]] : tensor<64x32xi8, #tfm.block_quant<q8_0>> -> tensor<64x32xf32>
// INT4: tfm.embedding %[[EF]][%arg0]
// INT4: %[[P:.*]] = tfm.weight @proj : tensor<32x32xi4, #tfm.block_quant<q4_0>>
// INT4: %[[PF:.*]] = tfm.dequantize %[[P]] : tensor<32x32xi4, #tfm.block_quant<q4_0>> -> tensor<32x32xf32>
// INT4: tfm.linear %{{.*}}, %[[PF]]
// INT4: %[[G:.*]] = tfm.weight @norm : tensor<32xf32>
// INT4: tfm.rms_norm %{{.*}}, %[[G]]
// INT4: tfm.linear %{{.*}}, %[[EF]]
// BF16-LABEL: tfm.weight_decl @embed : tensor<64x32xbf16>
// BF16: tfm.weight_decl @norm : tensor<32xf32>
// BF16: tfm.weight_decl @proj : tensor<32x32xbf16>
// BF16: tfm.dequantize %{{.*}} : tensor<32x32xbf16> -> tensor<32x32xf32>
// KEEP-LABEL: tfm.weight_decl @embed : tensor<64x32xf32>
// KEEP: tfm.weight_decl @proj : tensor<32x32xf32>
// KEEP-NOT: tfm.dequantize
// dtype-for overrides the weights it matches, and only those.
// FOR-LABEL: tfm.weight_decl @embed : tensor<64x32xi8, #tfm.block_quant<q8_0>>
// FOR: tfm.weight_decl @proj : tensor<32x32xbf16>
// BAD-FOR: error: invalid dtype-for 'proj' (expected REGEX=DTYPE with a valid regex and one of f32, bf16, f16, int8, int8-channel, int4, int4-min or checkpoint)
tfm.weight_decl @embed : tensor<64x32xf32>
tfm.weight_decl @norm : tensor<32xf32>
tfm.weight_decl @proj : tensor<32x32xf32>
func.func @tied(%ids: tensor<?xi32>) -> tensor<?x64xf32> {
  %e = tfm.weight @embed : tensor<64x32xf32>
  %x = tfm.embedding %e[%ids] : tensor<64x32xf32>, tensor<?xi32> -> tensor<?x32xf32>
  %p = tfm.weight @proj : tensor<32x32xf32>
  %h = tfm.linear %x, %p : (tensor<?x32xf32>, tensor<32x32xf32>) -> tensor<?x32xf32>
  %g = tfm.weight @norm : tensor<32xf32>
  %n = tfm.rms_norm %h, %g {epsilon = 1.0e-5 : f32} : (tensor<?x32xf32>, tensor<32xf32>) -> tensor<?x32xf32>
  %logits = tfm.linear %n, %e : (tensor<?x32xf32>, tensor<64x32xf32>) -> tensor<?x64xf32>
  return %logits : tensor<?x64xf32>
}

// -----

// Joins: rows in whole panels stay one join, in blocks; a join whose first
// part ends mid-panel has each part dequantized alone and the f32 parts
// joined.
// KEEP-LABEL: func.func @joins
// KEEP: tfm.concat %{{.*}}, %{{.*}} : (tensor<32x16xi8, #tfm.block_quant<q8_0>>, tensor<8x16xi8, #tfm.block_quant<q8_0>>)
// int8 per channel joins int8 blocks as int8 (which holds its values
// within a step), not as f32; weights outside it stay per channel.
// CHANNEL-LABEL: func.func @joins
// CHANNEL: tfm.concat %{{.*}}, %{{.*}} : (tensor<32x16xi8, #tfm.block_quant<q8_0>>, tensor<8x16xi8, #tfm.block_quant<q8_0>>)
// CHANNEL: tfm.dequantize %{{.*}} : tensor<12x16xi8, #tfm.block_quant<q8_channel>> -> tensor<12x16xf32>
// INT4-LABEL: func.func @joins
// INT4: %[[J:.*]] = tfm.concat %{{.*}}, %{{.*}} : (tensor<32x16xi4, #tfm.block_quant<q4_0>>, tensor<8x16xi4, #tfm.block_quant<q4_0>>) -> tensor<40x16xi4, #tfm.block_quant<q4_0>>
// INT4: %[[JF:.*]] = tfm.dequantize %[[J]] : tensor<40x16xi4, #tfm.block_quant<q4_0>> -> tensor<40x16xf32>
// INT4: tfm.linear %arg0, %[[JF]]
// INT4: %[[A:.*]] = tfm.dequantize %{{.*}} : tensor<12x16xi4, #tfm.block_quant<q4_0>> -> tensor<12x16xf32>
// INT4: %[[B:.*]] = tfm.dequantize %{{.*}} : tensor<12x16xi4, #tfm.block_quant<q4_0>> -> tensor<12x16xf32>
// INT4: tfm.concat %[[A]], %[[B]] : (tensor<12x16xf32>, tensor<12x16xf32>) -> tensor<24x16xf32>
tfm.weight_decl @q : tensor<32x16xf32>
tfm.weight_decl @k : tensor<8x16xf32>
tfm.weight_decl @gate : tensor<12x16xf32>
tfm.weight_decl @up : tensor<12x16xf32>
func.func @joins(%x: tensor<?x16xf32>) -> (tensor<?x40xf32>, tensor<?x12xf32>) {
  %q = tfm.weight @q : tensor<32x16xf32>
  %k = tfm.weight @k : tensor<8x16xf32>
  %qk = tfm.concat %q, %k : (tensor<32x16xf32>, tensor<8x16xf32>) -> tensor<40x16xf32>
  %a = tfm.linear %x, %qk : (tensor<?x16xf32>, tensor<40x16xf32>) -> tensor<?x40xf32>
  %g = tfm.weight @gate : tensor<12x16xf32>
  %u = tfm.weight @up : tensor<12x16xf32>
  %gu = tfm.concat %g, %u : (tensor<12x16xf32>, tensor<12x16xf32>) -> tensor<24x16xf32>
  %m = tfm.linear %x, %gu activation silu gated : (tensor<?x16xf32>, tensor<24x16xf32>) -> tensor<?x12xf32>
  return %a, %m : tensor<?x40xf32>, tensor<?x12xf32>
}

// BAD-DTYPE: error: unknown weight dtype 'int3' (expected f32, bf16, f16, int8, int8-channel, int4, int4-min or checkpoint)
// BAD-REGEX: error: invalid regex '(' for the weights to keep
// BAD-Q4K: error: weight dtype 'q4_k' is kept from a checkpoint's Q4_K tensors only (dtype=checkpoint), not made from others
