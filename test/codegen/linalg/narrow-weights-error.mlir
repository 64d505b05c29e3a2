// A join of weights in blocks must be block panels whole: every part but
// the last fills its panels of 16 rows (tfm-quantize-weights joins only
// parts of whole 32-row panels; a hand-written module may not).
// RUN: tfm-opt %s -tfm-lay-out-weights -verify-diagnostics -o /dev/null

tfm.weight_decl @gate : tensor<12x32xi8, #tfm.block_quant<q8_0>>
tfm.weight_decl @up : tensor<12x32xi8, #tfm.block_quant<q8_0>>
func.func @misaligned(%x: tensor<?x32xf32>) -> tensor<?x12xf32> {
  // expected-error @+1 {{'tfm.weight' op is joined in blocks with weights that do not fill whole panels of 16 rows}}
  %g = tfm.weight @gate : tensor<12x32xi8, #tfm.block_quant<q8_0>>
  %u = tfm.weight @up : tensor<12x32xi8, #tfm.block_quant<q8_0>>
  %j = tfm.concat %g, %u : (tensor<12x32xi8, #tfm.block_quant<q8_0>>, tensor<12x32xi8, #tfm.block_quant<q8_0>>) -> tensor<24x32xi8, #tfm.block_quant<q8_0>>
  %f = tfm.dequantize %j : tensor<24x32xi8, #tfm.block_quant<q8_0>> -> tensor<24x32xf32>
  %y = tfm.linear %x, %f activation silu gated : (tensor<?x32xf32>, tensor<24x32xf32>) -> tensor<?x12xf32>
  return %y : tensor<?x12xf32>
}
