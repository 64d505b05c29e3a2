// One case per tfm op lowered by tfm-lower-to-linalg.
// RUN: tfm-opt %s -split-input-file -tfm-lay-out-weights -tfm-select-cpu-kernels=fused-attention=false -tfm-lower-to-linalg | FileCheck %s

// Weights: laid out 64-byte aligned in order of first use, read through a
// leading weights argument; a repeated name reuses its offset.
// CHECK-LABEL: module attributes
// CHECK-SAME: tfm.weight_bytes = 192 : i64
// CHECK-SAME: tfm.weight_layout = {a = 0 : i64, b = 64 : i64}
// CHECK-LABEL: func.func @weights
// CHECK-SAME: (%[[BLOB:.*]]: memref<?xi8>)
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[VA:.*]] = memref.view %[[BLOB]][%[[C0]]][] : memref<?xi8> to memref<3xf32>
// CHECK: bufferization.to_tensor %[[VA]] restrict : memref<3xf32> to tensor<3xf32>
// CHECK: %[[C64:.*]] = arith.constant 64 : index
// CHECK: memref.view %[[BLOB]][%[[C64]]][] : memref<?xi8> to memref<4x8xf32>
// CHECK: memref.view %[[BLOB]][%{{.*}}][] : memref<?xi8> to memref<3xf32>
tfm.weight_decl @a : tensor<3xf32>
tfm.weight_decl @b : tensor<4x8xf32>
func.func @weights() -> (tensor<3xf32>, tensor<4x8xf32>, tensor<3xf32>) {
  %a = tfm.weight @a : tensor<3xf32>
  %b = tfm.weight @b : tensor<4x8xf32>
  %c = tfm.weight @a : tensor<3xf32>
  return %a, %b, %c : tensor<3xf32>, tensor<4x8xf32>, tensor<3xf32>
}

// -----

// tfm.head_linear: the weight seen as [heads, out, in], one contraction
// over `in` per head.
// CHECK-LABEL: func.func @head_linear
// CHECK: %[[W:.*]] = tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2]] output_shape [2, 5, 3] : tensor<10x3xf32> into tensor<2x5x3xf32>
// CHECK: linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%{{.*}}, %[[W]] : tensor<?x2x3xf32>, tensor<2x5x3xf32>) outs(%{{.*}} : tensor<?x2x5xf32>)
// CHECK: arith.mulf
// CHECK: arith.addf
tfm.weight_decl @wk : tensor<10x3xf32>
func.func @head_linear(%x: tensor<?x2x3xf32>) -> tensor<?x2x5xf32> {
  %w = tfm.weight @wk : tensor<10x3xf32>
  %y = tfm.head_linear %x, %w : (tensor<?x2x3xf32>, tensor<10x3xf32>) -> tensor<?x2x5xf32>
  return %y : tensor<?x2x5xf32>
}

// -----

// tfm.causal_conv1d: the carried inputs (zeros on a reset) joined before
// the new ones, one generic with the taps as a reduction, and the last 3
// rows as the next state.
// CHECK-LABEL: func.func @causal_conv1d
// CHECK-SAME: (%[[X:.*]]: tensor<?x12xf32>, %[[W:.*]]: tensor<12x4xf32>, %[[S:.*]]: tensor<3x12xf32>, %[[R:.*]]: i1)
// The reset selects element by element into a new tensor (a tensor-level
// select would make bufferization copy the cached state).
// CHECK: %[[PAST:.*]] = linalg.generic {{.*}} ins(%[[S]] : tensor<3x12xf32>)
// CHECK: arith.select %[[R]], %{{.*}}, %{{.*}} : f32
// CHECK: %[[ALL:.*]] = tensor.concat dim(0) %[[PAST]], %[[X]]
// CHECK: linalg.generic {indexing_maps = [#[[SHIFTED:.*]], #{{.*}}, #{{.*}}], iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[ALL]], %[[W]] : tensor<?x12xf32>, tensor<12x4xf32>)
// CHECK: tensor.extract_slice %[[ALL]][%{{.*}}, 0] [3, 12] [1, 1]
func.func @causal_conv1d(%x: tensor<?x12xf32>, %w: tensor<12x4xf32>, %s: tensor<3x12xf32>, %r: i1) -> (tensor<?x12xf32>, tensor<3x12xf32>) {
  %y, %f = tfm.causal_conv1d %x, %w state %s reset %r : (tensor<?x12xf32>, tensor<12x4xf32>, tensor<3x12xf32>, i1) -> (tensor<?x12xf32>, tensor<3x12xf32>)
  return %y, %f : tensor<?x12xf32>, tensor<3x12xf32>
}

// -----

// tfm.gated_delta_rule: each position's decay factors first, then a loop
// over the positions carrying the state: what the decayed state recalls of
// k, the update written over the state, and the read of q. Tiled: value
// head h reads key head h mod 2.
// CHECK: affine_map<(d0, d1, d2) -> (d0 mod 2, d1)>
// CHECK-LABEL: func.func @gated_delta_rule
// CHECK: linalg.generic
// CHECK: math.log1p
// CHECK: math.exp
// CHECK: scf.for %{{.*}} iter_args(%[[STATE:.*]] = %{{.*}}, %[[OUT:.*]] = %{{.*}}) -> (tensor<4x8x12xf32>, tensor<?x4x12xf32>)
// CHECK: %[[RECALLED:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "reduction", "parallel"]} ins(%[[STATE]],
// CHECK: %[[UPDATED:.*]] = linalg.generic {{.*}}iterator_types = ["parallel", "parallel", "parallel"]} ins({{.*}}%[[RECALLED]] : {{.*}}) outs(%[[STATE]] : tensor<4x8x12xf32>)
// CHECK: math.fma
// CHECK: linalg.generic {{.*}}ins(%[[UPDATED]],
// CHECK: tensor.insert_slice %{{.*}} into %[[OUT]]
// CHECK: scf.yield %[[UPDATED]]
func.func @gated_delta_rule(%q: tensor<?x2x8xf32>, %v: tensor<?x4x12xf32>, %a: tensor<?x4xf32>, %d: tensor<4xf32>, %s: tensor<4x8x12xf32>, %r: i1) -> (tensor<?x4x12xf32>, tensor<4x8x12xf32>) {
  %o, %f = tfm.gated_delta_rule %q, %q, %v, %a, %d, %a state %s reset %r {scale = 0.353553 : f32, tiled} : (tensor<?x2x8xf32>, tensor<?x2x8xf32>, tensor<?x4x12xf32>, tensor<?x4xf32>, tensor<4xf32>, tensor<?x4xf32>, tensor<4x8x12xf32>, i1) -> (tensor<?x4x12xf32>, tensor<4x8x12xf32>)
  return %o, %f : tensor<?x4x12xf32>, tensor<4x8x12xf32>
}

// -----

// CHECK-LABEL: func.func @position_ids
// CHECK-SAME: (%[[T:.*]]: tensor<?xi32>, %[[OFF:.*]]: index)
// CHECK: linalg.generic
// CHECK: %[[I:.*]] = linalg.index 0 : index
// CHECK: %[[P:.*]] = arith.addi %[[I]], %[[OFF]] : index
// CHECK: arith.index_cast %[[P]] : index to i32
func.func @position_ids(%t: tensor<?xi32>, %off: index) -> tensor<?xi32> {
  %p = tfm.position_ids %t offset %off : tensor<?xi32> -> tensor<?xi32>
  return %p : tensor<?xi32>
}

// -----

// CHECK-LABEL: func.func @embedding
// CHECK-SAME: (%[[TABLE:.*]]: tensor<16x8xf32>, %[[IDS:.*]]: tensor<?xi32>)
// CHECK: linalg.generic {{.*}} ins(%[[IDS]] : tensor<?xi32>)
// CHECK: ^bb0(%[[ID:.*]]: i32, %{{.*}}: f32):
// CHECK: %[[ROW:.*]] = arith.index_cast %[[ID]] : i32 to index
// CHECK: %[[COL:.*]] = linalg.index 1 : index
// CHECK: tensor.extract %[[TABLE]][%[[ROW]], %[[COL]]] : tensor<16x8xf32>
func.func @embedding(%table: tensor<16x8xf32>, %ids: tensor<?xi32>) -> tensor<?x8xf32> {
  %x = tfm.embedding %table[%ids] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  return %x : tensor<?x8xf32>
}

// -----

// The [out, in] weight is read transposed by the matmul's maps; the bias is
// broadcast into the accumulator.
// CHECK-DAG: #[[$A:.*]] = affine_map<(d0, d1, d2) -> (d0, d2)>
// CHECK-DAG: #[[$W:.*]] = affine_map<(d0, d1, d2) -> (d1, d2)>
// CHECK-DAG: #[[$C:.*]] = affine_map<(d0, d1, d2) -> (d0, d1)>
// CHECK-LABEL: func.func @linear_bias
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xf32>, %[[WT:.*]]: tensor<12x8xf32>, %[[B:.*]]: tensor<12xf32>)
// CHECK: %[[INIT:.*]] = linalg.generic {{.*}} ins(%[[B]] : tensor<12xf32>)
// CHECK: linalg.matmul indexing_maps = [#[[$A]], #[[$W]], #[[$C]]] ins(%[[X]], %[[WT]] : tensor<?x8xf32>, tensor<12x8xf32>) outs(%[[INIT]] : tensor<?x12xf32>)
func.func @linear_bias(%x: tensor<?x8xf32>, %w: tensor<12x8xf32>, %b: tensor<12xf32>) -> tensor<?x12xf32> {
  %y = tfm.linear %x, %w bias %b : (tensor<?x8xf32>, tensor<12x8xf32>, tensor<12xf32>) -> tensor<?x12xf32>
  return %y : tensor<?x12xf32>
}

// -----

// Heads in: collapsed to rows. Heads out: the product expanded.
// CHECK-LABEL: func.func @linear_heads
// CHECK: %[[ROWS:.*]] = tensor.collapse_shape %{{.*}} {{\[}}[0], [1, 2]] : tensor<?x2x4xf32> into tensor<?x8xf32>
// CHECK: %[[ZERO:.*]] = linalg.fill
// CHECK: %[[MM:.*]] = linalg.matmul {{.*}} ins(%[[ROWS]], %{{.*}} : tensor<?x8xf32>, tensor<8x8xf32>) outs(%[[ZERO]] : tensor<?x8xf32>)
// CHECK: tensor.expand_shape %[[MM]] {{\[}}[0], [1, 2]] output_shape [%{{.*}}, 4, 2] : tensor<?x8xf32> into tensor<?x4x2xf32>
func.func @linear_heads(%x: tensor<?x2x4xf32>, %w: tensor<8x8xf32>) -> tensor<?x4x2xf32> {
  %y = tfm.linear %x, %w : (tensor<?x2x4xf32>, tensor<8x8xf32>) -> tensor<?x4x2xf32>
  return %y : tensor<?x4x2xf32>
}

// -----

// CHECK-LABEL: func.func @activations
// CHECK: linalg.generic
// CHECK: math.erf
// CHECK: linalg.generic
// CHECK: math.tanh
// CHECK: linalg.generic
// CHECK: arith.maximumf
// CHECK: linalg.generic
// CHECK: %[[NEG:.*]] = arith.negf
// CHECK: %[[EXP:.*]] = math.exp %[[NEG]]
// CHECK: %[[DEN:.*]] = arith.addf %{{.*}}, %[[EXP]]
// CHECK: arith.divf %{{.*}}, %[[DEN]]
func.func @activations(%x: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = tfm.activation gelu %x : tensor<?x4xf32>
  %1 = tfm.activation gelu_tanh %0 : tensor<?x4xf32>
  %2 = tfm.activation relu %1 : tensor<?x4xf32>
  %3 = tfm.activation silu %2 : tensor<?x4xf32>
  return %3 : tensor<?x4xf32>
}

// -----

// CHECK-LABEL: func.func @clamp
// CHECK: linalg.generic
// CHECK-DAG: %[[LO:.*]] = arith.constant -8.000000e+00 : f32
// CHECK-DAG: %[[HI:.*]] = arith.constant 8.000000e+00 : f32
// CHECK: %[[ABOVE:.*]] = arith.maximumf %{{.*}}, %[[LO]] : f32
// CHECK: arith.minimumf %[[ABOVE]], %[[HI]] : f32
func.func @clamp(%x: tensor<?x4x16xf32>) -> tensor<?x4x16xf32> {
  %0 = tfm.clamp %x {max = 8.0 : f32, min = -8.0 : f32} : tensor<?x4x16xf32>
  return %0 : tensor<?x4x16xf32>
}

// -----

// CHECK-LABEL: func.func @add_mul
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<?x4xf32>, tensor<?x4xf32>)
// CHECK: arith.addf
// CHECK: linalg.generic
// CHECK: arith.mulf
func.func @add_mul(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = tfm.add %a, %b : tensor<?x4xf32>
  %1 = tfm.mul %0, %b : tensor<?x4xf32>
  return %1 : tensor<?x4xf32>
}

// -----

// Sum of squares per row, then x * 1/sqrt(sum/d + eps) * gamma.
// CHECK-LABEL: func.func @rms_norm
// CHECK: %[[SS:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[SS]], %{{.*}} : tensor<?x4xf32>, tensor<?xf32>, tensor<4xf32>)
// CHECK: %[[MEAN:.*]] = arith.divf
// CHECK: %[[SHIFTED:.*]] = arith.addf %[[MEAN]]
// CHECK: %[[ROOT:.*]] = math.sqrt %[[SHIFTED]] : f32
// CHECK: arith.divf %{{.*}}, %[[ROOT]] : f32
func.func @rms_norm(%x: tensor<?x4xf32>, %g: tensor<4xf32>) -> tensor<?x4xf32> {
  %0 = tfm.rms_norm %x, %g {epsilon = 1.0e-5 : f32} : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// Each head's RMSNorm (Qwen3's Q and K): the rows of [seq * heads, d].
// CHECK-LABEL: func.func @head_rms_norm
// CHECK: %[[ROWS:.*]] = tensor.collapse_shape %{{.*}} {{\[\[}}0, 1], [2]] : tensor<?x2x4xf32> into tensor<?x4xf32>
// CHECK: linalg.generic {{.*}} ins(%[[ROWS]], %{{.*}}, %{{.*}} : tensor<?x4xf32>, tensor<?xf32>, tensor<4xf32>)
// CHECK: tensor.expand_shape %{{.*}} {{\[\[}}0, 1], [2]] output_shape [%{{.*}}, 2, 4] : tensor<?x4xf32> into tensor<?x2x4xf32>
func.func @head_rms_norm(%x: tensor<?x2x4xf32>, %g: tensor<4xf32>) -> tensor<?x2x4xf32> {
  %0 = tfm.rms_norm %x, %g {epsilon = 1.0e-5 : f32} : (tensor<?x2x4xf32>, tensor<4xf32>) -> tensor<?x2x4xf32>
  return %0 : tensor<?x2x4xf32>
}

// -----

// Mean, centred values, their variance, then scale and shift.
// CHECK-LABEL: func.func @layer_norm
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK: %[[CENTRED:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[SUM]] :
// CHECK: arith.subf
// CHECK: %[[VAR:.*]] = linalg.generic {{.*}} ins(%[[CENTRED]] :
// CHECK: linalg.generic {{.*}} ins(%[[CENTRED]], %[[VAR]], %{{.*}}, %{{.*}} : tensor<?x4xf32>, tensor<?xf32>, tensor<4xf32>, tensor<4xf32>)
func.func @layer_norm(%x: tensor<?x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<?x4xf32> {
  %0 = tfm.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f32} : (tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// Each column's mean over the rows (a reduction over the first dimension),
// the centred values, their squares' column sums, then scale and shift by
// column.
// CHECK-LABEL: func.func @channel_norm
// CHECK: %[[SUM:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]
// CHECK: %[[CENTRED:.*]] = linalg.generic {{.*}} ins(%{{.*}}, %[[SUM]] : tensor<?x4xf32>, tensor<4xf32>)
// CHECK: arith.subf
// CHECK: %[[SQUARES:.*]] = linalg.generic {{.*}} ins(%[[CENTRED]] :
// CHECK: %[[VAR:.*]] = linalg.generic {{.*}} iterator_types = ["reduction", "parallel"]{{.*}} ins(%[[SQUARES]] :
// CHECK: linalg.generic {{.*}} ins(%[[CENTRED]], %[[VAR]], %{{.*}}, %{{.*}} : tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>)
// CHECK: math.sqrt
func.func @channel_norm(%x: tensor<?x4xf32>, %g: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<?x4xf32> {
  %0 = tfm.channel_norm %x, %g, %b {epsilon = 1.0e-5 : f32} : (tensor<?x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// Interleaved pairs: the partner is d xor 1 and the pair d floordiv 2;
// rotate-half: d ± head_dim/2 and d mod head_dim/2. The angles' cos and sin
// come from [s, head_dim/2] tables over the inverse frequencies (powf per
// pair, not per element), which CSE shares between the two ropes.
// RUN: tfm-opt %s -split-input-file -tfm-lay-out-weights -tfm-select-cpu-kernels -tfm-lower-to-linalg -cse | FileCheck %s --check-prefix=ROPE
// ROPE-DAG: #[[$PAIR:.*]] = affine_map<(d0, d1, d2) -> (d0, d2 floordiv 2)>
// ROPE-DAG: #[[$HALF:.*]] = affine_map<(d0, d1, d2) -> (d0, d2 mod 2)>
// ROPE-LABEL: func.func @rope
// ROPE: outs(%{{.*}} : tensor<2xf32>)
// ROPE: math.powf
// ROPE: %[[COS:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<?x2xf32>)
// ROPE: math.cos
// ROPE: %[[SIN:.*]] = linalg.generic {{.*}} outs(%{{.*}} : tensor<?x2xf32>)
// ROPE: math.sin
// ROPE: linalg.generic {indexing_maps = [#{{.*}}, #[[$PAIR]], #[[$PAIR]], #{{.*}}], {{.*}} ins(%{{.*}}, %[[COS]], %[[SIN]] :
// ROPE: %[[D:.*]] = linalg.index 2 : index
// ROPE: arith.xori %[[D]], %{{.*}} : index
// ROPE: tensor.extract
// ROPE: linalg.generic {indexing_maps = [#{{.*}}, #[[$HALF]], #[[$HALF]], #{{.*}}], {{.*}} ins(%{{.*}}, %[[COS]], %[[SIN]] :
// ROPE: %[[D2:.*]] = linalg.index 2 : index
// ROPE: %[[HALFC:.*]] = arith.constant 2 : index
// ROPE: arith.cmpi uge, %[[D2]], %[[HALFC]] : index
// ROPE: arith.subi %[[D2]], %[[HALFC]]
// ROPE: arith.addi %[[D2]], %[[HALFC]]
// ROPE-NOT: math.powf
// ROPE: return
func.func @rope(%x: tensor<?x2x4xf32>, %p: tensor<?xi32>) -> (tensor<?x2x4xf32>, tensor<?x2x4xf32>) {
  %0 = tfm.rope interleaved %x, %p {theta = 1.0e4 : f32} : tensor<?x2x4xf32>, tensor<?xi32>
  %1 = tfm.rope rotate_half %x, %p {theta = 1.0e4 : f32} : tensor<?x2x4xf32>, tensor<?xi32>
  return %0, %1 : tensor<?x2x4xf32>, tensor<?x2x4xf32>
}

// -----

// Sections: the table's pair j reads its section's column of the row's
// positions (sections 1, 2, 1: pair 0 column 0, pairs 1-2 column 1, pair 3
// column 2).
// ROPE-LABEL: func.func @rope_sections
// ROPE: %[[J:.*]] = linalg.index 1 : index
// ROPE: %[[PAST1:.*]] = arith.cmpi uge, %[[J]], %c1 : index
// ROPE: %[[S1:.*]] = arith.select %[[PAST1]], %c1, %c0 : index
// ROPE: %[[PAST3:.*]] = arith.cmpi uge, %[[J]], %c3 : index
// ROPE: %[[S2:.*]] = arith.select %[[PAST3]], %c2, %[[S1]] : index
// ROPE: tensor.extract %{{.*}}[%{{.*}}, %[[S2]]] : tensor<?x3xi32>
// ROPE: math.cos
func.func @rope_sections(%x: tensor<?x2x8xf32>, %p: tensor<?x3xi32>) -> tensor<?x2x8xf32> {
  %0 = tfm.rope rotate_half %x, %p {theta = 1.0e4 : f32, sections = array<i64: 1, 2, 1>} : tensor<?x2x8xf32>, tensor<?x3xi32>
  return %0 : tensor<?x2x8xf32>
}

// -----

// Sinusoids in double, rounded once (the reference's tables are numpy's):
// p / base^(2i/dim).
// CHECK-LABEL: func.func @sinusoidal
// CHECK: linalg.generic
// CHECK: %[[POW:.*]] = math.powf %{{.*}}, %{{.*}} : f64
// CHECK: %[[ANGLE:.*]] = arith.divf %{{.*}}, %[[POW]] : f64
// CHECK: %[[COS:.*]] = math.cos %[[ANGLE]] : f64
// CHECK: %[[SIN:.*]] = math.sin %[[ANGLE]] : f64
// CHECK: %[[SELECTED:.*]] = arith.select %{{.*}}, %[[COS]], %[[SIN]] : f64
// CHECK: arith.truncf %[[SELECTED]] : f64 to f32
func.func @sinusoidal(%p: tensor<?xi32>) -> tensor<?x8xf32> {
  %0 = tfm.sinusoidal_position interleaved %p {base = 1.0e4 : f32} : tensor<?xi32> -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// GQA: query head h reads KV head h floordiv 4 (8 heads, 2 KV heads). The
// causal mask keeps key j <= i + (t - s); the window keeps the last 3.
// CHECK-DAG: #[[$KMAP:.*]] = affine_map<(d0, d1, d2, d3) -> (d2, d0 floordiv 4, d3)>
// CHECK-DAG: #[[$VMAP:.*]] = affine_map<(d0, d1, d2, d3) -> (d2, d1 floordiv 4, d3)>
// CHECK-LABEL: func.func @attention
// CHECK: %[[DOTS:.*]] = linalg.generic {indexing_maps = [#{{.*}}, #[[$KMAP]], #{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
// CHECK: %[[MASKED:.*]] = linalg.generic {{.*}} ins(%[[DOTS]] :
// CHECK: %[[LAST:.*]] = arith.addi
// CHECK: %[[SEEN:.*]] = arith.cmpi ule, %{{.*}}, %[[LAST]] : index
// CHECK: %[[RECENT:.*]] = arith.cmpi ult, %[[LAST]], %{{.*}} : index
// CHECK: %[[VISIBLE:.*]] = arith.andi %[[SEEN]], %[[RECENT]] : i1
// CHECK: arith.select %[[VISIBLE]], %{{.*}}, %{{.*}} : f32
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: linalg.generic {indexing_maps = [#{{.*}}, #[[$VMAP]], #{{.*}}]
func.func @attention(%q: tensor<?x8x4xf32>, %k: tensor<?x2x4xf32>, %v: tensor<?x2x4xf32>) -> tensor<?x8x4xf32> {
  %0 = tfm.attention %q, %k, %v {causal, scale = 0.5 : f32, window = 3 : i64} : (tensor<?x8x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x8x4xf32>
  return %0 : tensor<?x8x4xf32>
}

// -----

// Bidirectional attention with a bias (cross-attention shapes): no mask, the
// bias added to the scaled scores.
// CHECK-LABEL: func.func @attention_bias
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %{{.*}} : tensor<2x3x5xf32>, tensor<2x3x5xf32>)
// CHECK: arith.mulf
// CHECK-NEXT: arith.addf
// CHECK-NEXT: linalg.yield
func.func @attention_bias(%q: tensor<3x2x4xf32>, %k: tensor<5x2x4xf32>, %b: tensor<2x3x5xf32>) -> tensor<3x2x4xf32> {
  %0 = tfm.attention %q, %k, %k bias %b {scale = 0.5 : f32} : (tensor<3x2x4xf32>, tensor<5x2x4xf32>, tensor<5x2x4xf32>, tensor<2x3x5xf32>) -> tensor<3x2x4xf32>
  return %0 : tensor<3x2x4xf32>
}

// -----

// The probabilities of chosen heads (Whisper's alignment heads): query
// heads 3 and 0 (KV heads 1 and 0 of 2) copied side by side, their scores
// [s, 2, t] scaled and soft-maxed along the keys; no values.
// CHECK-LABEL: func.func @attention_weights
// CHECK: %[[Q3:.*]] = tensor.extract_slice %{{.*}}[0, 3, 0] [%{{.*}}, 1, 4] [1, 1, 1]
// CHECK: %[[QS:.*]] = tensor.insert_slice %[[Q3]] into %{{.*}}[0, 0, 0]
// CHECK: tensor.extract_slice %{{.*}}[0, 0, 0]
// CHECK: %[[K1:.*]] = tensor.extract_slice %{{.*}}[0, 1, 0] [5, 1, 4] [1, 1, 1]
// CHECK: tensor.insert_slice %[[K1]] into %{{.*}}[0, 0, 0]
// CHECK: %[[DOTS:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "reduction"]
// CHECK: arith.mulf
// CHECK: arith.maximumf
// CHECK: math.exp
// CHECK: arith.divf
// CHECK-NOT: linalg.generic
// CHECK: return %{{.*}} : tensor<?x2x5xf32>
func.func @attention_weights(%q: tensor<?x4x4xf32>, %k: tensor<5x2x4xf32>) -> tensor<?x2x5xf32> {
  %0 = tfm.attention_weights %q, %k {heads = array<i64: 3, 0>, scale = 0.5 : f32} : (tensor<?x4x4xf32>, tensor<5x2x4xf32>) -> tensor<?x2x5xf32>
  return %0 : tensor<?x2x5xf32>
}

// -----

// The cache planes are rank-reducing slices [layer, K or V, positions]; the
// cache argument becomes writable so that bufferization updates it in place.
// CHECK-LABEL: func.func @kv_cache
// CHECK-SAME: (%[[C:[^:]*]]: tensor<2x2x8x1x4xf32> {bufferization.writable = true}, %[[K:[^:]*]]: tensor<?x1x4xf32>, %[[P:[^:]*]]: index)
// CHECK: %[[N:.*]] = tensor.dim %[[K]], %{{.*}} : tensor<?x1x4xf32>
// CHECK: %[[CK:.*]] = tensor.insert_slice %[[K]] into %[[C]][1, 0, %[[P]], 0, 0] [1, 1, %[[N]], 1, 4] [1, 1, 1, 1, 1] : tensor<?x1x4xf32> into tensor<2x2x8x1x4xf32>
// CHECK: %[[CV:.*]] = tensor.insert_slice %[[K]] into %[[CK]][1, 1, %[[P]], 0, 0] [1, 1, %[[N]], 1, 4]
// CHECK: tensor.extract_slice %[[CV]][1, 0, 0, 0, 0] [1, 1, %[[P]], 1, 4] [1, 1, 1, 1, 1] : tensor<2x2x8x1x4xf32> to tensor<?x1x4xf32>
// CHECK: tensor.extract_slice %[[CV]][1, 1, 0, 0, 0] [1, 1, %[[P]], 1, 4]
func.func @kv_cache(%cache: tensor<2x2x8x1x4xf32> {tfm.cache = #tfm.cache<self_attention>}, %k: tensor<?x1x4xf32>, %pos: index)
    -> (tensor<2x2x8x1x4xf32>, tensor<?x1x4xf32>, tensor<?x1x4xf32>) {
  %c = tfm.kv_cache_append %cache[1], %k, %k at %pos : tensor<2x2x8x1x4xf32>, tensor<?x1x4xf32>, tensor<?x1x4xf32>
  %rk, %rv = tfm.kv_cache_read %c[1] length %pos : tensor<2x2x8x1x4xf32> -> tensor<?x1x4xf32>, tensor<?x1x4xf32>
  return %c, %rk, %rv : tensor<2x2x8x1x4xf32>, tensor<?x1x4xf32>, tensor<?x1x4xf32>
}

// -----

// A windowed layer's ring (rows [8, 12) of plane 1): a read's two runs of
// rows and then the new rows; the appended rows' last 4 in two runs, the
// second from the ring's first row.
// CHECK-LABEL: func.func @kv_ring
// CHECK: %[[RING:.*]] = arith.constant 4 : index
// CHECK: %[[BASE:.*]] = arith.constant 8 : index
// CHECK: %[[AT:.*]] = arith.remui %{{.*}}, %[[RING]]
// CHECK: %[[ROW:.*]] = arith.addi %[[BASE]], %[[AT]]
// CHECK: tensor.extract_slice %{{.*}}[1, 0, %[[ROW]], 0, 0] [1, 1, %{{.*}}, 1, 4]
// CHECK: tensor.extract_slice %{{.*}}[1, 0, %[[BASE]], 0, 0] [1, 1, %{{.*}}, 1, 4]
// CHECK: arith.maxsi
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[1, 0, %{{.*}}, 0, 0] [1, 1, %{{.*}}, 1, 4]
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[1, 0, %{{.*}}, 0, 0] [1, 1, %{{.*}}, 1, 4]
func.func @kv_ring(%cache: tensor<2x2x16x1x4xf32> {tfm.cache = #tfm.cache<self_attention>}, %k: tensor<?x1x4xf32>, %first: index, %pos: index)
    -> (tensor<2x2x16x1x4xf32>, tensor<?x1x4xf32>, tensor<?x1x4xf32>) {
  %rk, %rv = tfm.kv_ring_read %cache[1] rows 8 ring 4 positions %first to %pos then %k, %k : tensor<2x2x16x1x4xf32>, tensor<?x1x4xf32>, tensor<?x1x4xf32> -> tensor<?x1x4xf32>, tensor<?x1x4xf32>
  %c = tfm.kv_ring_append %cache[1] rows 8 ring 4, %k, %k at %pos : tensor<2x2x16x1x4xf32>, tensor<?x1x4xf32>, tensor<?x1x4xf32>
  return %c, %rk, %rv : tensor<2x2x16x1x4xf32>, tensor<?x1x4xf32>, tensor<?x1x4xf32>
}

// -----

// A function calling one that reads weights passes its own weights along.
// CHECK-LABEL: func.func @reads
// CHECK-SAME: (%[[W1:.*]]: memref<?xi8>)
// CHECK-LABEL: func.func @calls
// CHECK-SAME: (%[[W2:.*]]: memref<?xi8>)
// CHECK: call @reads(%[[W2]])
tfm.weight_decl @w : tensor<4xf32>
func.func @reads() -> tensor<4xf32> {
  %w = tfm.weight @w : tensor<4xf32>
  return %w : tensor<4xf32>
}
func.func @calls() -> tensor<4xf32> {
  %0 = func.call @reads() : () -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// Packed sequences: a loop over the sequences, carrying the first row of
// each; its rows are sliced out, lowered as a sequence of their own and
// inserted back (the pooled vector as row `sequence`). The attention's
// scores are [heads, length, length] per sequence.
// CHECK-LABEL: func.func @packed
// CHECK-SAME: (%[[TOK:[^:]*]]: tensor<?xi32>, %[[N:[^:]*]]: tensor<?xi32>, %[[H:[^:]*]]: tensor<?x8xf32>, %[[Q:[^:]*]]: tensor<?x2x4xf32>)
// CHECK: %[[B:.*]] = tensor.dim %[[N]], %{{.*}} : tensor<?xi32>
// CHECK: scf.for %[[S:[^ ]*]] = %{{.*}} to %[[B]] step %{{.*}} iter_args(%[[START:.*]] = %{{.*}}, %[[POS:.*]] = %{{.*}}) -> (index, tensor<?xi32>)
// CHECK: %[[LEN32:.*]] = tensor.extract %[[N]][%[[S]]] : tensor<?xi32>
// CHECK: %[[LEN:.*]] = arith.index_cast %[[LEN32]] : i32 to index
// CHECK: tensor.extract_slice %[[TOK]][%[[START]]] [%[[LEN]]] [1] : tensor<?xi32> to tensor<?xi32>
// CHECK: linalg.generic
// CHECK: tensor.insert_slice %{{.*}} into %[[POS]][%[[START]]]
// CHECK: scf.yield
// CHECK: scf.for %[[S2:[^ ]*]] = {{.*}} -> (index, tensor<?x8xf32>)
// CHECK: tensor.extract_slice %[[H]][%{{.*}}, 0] [%{{.*}}, 8] [1, 1] : tensor<?x8xf32> to tensor<?x8xf32>
// CHECK: tensor.insert_slice %{{.*}} into %{{.*}}[%[[S2]], 0] [1, 8] [1, 1] : tensor<8xf32> into tensor<?x8xf32>
// CHECK: scf.for {{.*}} -> (index, tensor<?x2x4xf32>)
// CHECK-COUNT-3: tensor.extract_slice %[[Q]][%{{.*}}, 0, 0] [%{{.*}}, 2, 4] [1, 1, 1] : tensor<?x2x4xf32> to tensor<?x2x4xf32>
// CHECK: tensor.empty(%{{.*}}, %{{.*}}) : tensor<2x?x?xf32>
// CHECK: tensor.insert_slice
func.func @packed(%tokens: tensor<?xi32>, %lengths: tensor<?xi32>, %h: tensor<?x8xf32>, %q: tensor<?x2x4xf32>) -> (tensor<?xi32>, tensor<?x8xf32>, tensor<?x2x4xf32>) {
  %p = tfm.position_ids %tokens lengths %lengths : tensor<?xi32> : tensor<?xi32> -> tensor<?xi32>
  %e = tfm.pool mean %h lengths %lengths : tensor<?xi32> : tensor<?x8xf32> -> tensor<?x8xf32>
  %a = tfm.attention %q, %q, %q lengths %lengths {scale = 0.5 : f32} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?xi32>) -> tensor<?x2x4xf32>
  return %p, %e, %a : tensor<?xi32>, tensor<?x8xf32>, tensor<?x2x4xf32>
}

// -----

// tfm.token_row: one reduction over the ids keeps the best key and its
// first position (a strictly greater key replaces it): with token_id the
// key is whether the id is it (initial best -1: no match is position 0),
// without it the id itself; then that row of the hidden states.
// quick_gelu: x / (1 + e^(-1.702 x)).
// CHECK-LABEL: func.func @token_row
// CHECK: %[[MATCHES:.*]]:2 = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%arg1 : tensor<?xi32>)
// CHECK: arith.cmpi eq
// CHECK: arith.cmpi sgt
// CHECK: %[[AT:.*]] = tensor.extract %[[MATCHES]]#1[]
// CHECK: %[[ROW:.*]] = arith.index_cast %[[AT]] : i64 to index
// CHECK: tensor.extract_slice %arg0[%[[ROW]], 0] [1, 8] [1, 1] : tensor<?x8xf32> to tensor<8xf32>
// CHECK: %[[LARGEST:.*]]:2 = linalg.generic {{.*}} iterator_types = ["reduction"]} ins(%arg1 : tensor<?xi32>)
// CHECK-NOT: arith.cmpi eq
// CHECK: arith.cmpi sgt
// CHECK: tensor.extract %[[LARGEST]]#1[]
// CHECK: arith.constant -1.702
// CHECK: math.exp
func.func @token_row(%h: tensor<?x8xf32>, %ids: tensor<?xi32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>) {
  %a = tfm.token_row %h at %ids {token_id = 7} : tensor<?x8xf32>, tensor<?xi32> -> tensor<8xf32>
  %b = tfm.token_row %h at %ids : tensor<?x8xf32>, tensor<?xi32> -> tensor<8xf32>
  %c = tfm.activation quick_gelu %h : tensor<?x8xf32>
  return %a, %b, %c : tensor<8xf32>, tensor<8xf32>, tensor<?x8xf32>
}

// -----

// Overlapping patches: one generic gathering patch (py, px)'s pixel (c, ky,
// kx) from (c, py * 4 + ky, px * 4 + kx), columns = (64 - 8) / 4 + 1 = 15.
// CHECK-LABEL: func.func @strided_patches
// CHECK: linalg.generic
// CHECK: %[[ROW:.*]] = linalg.index 0
// CHECK: %[[PY:.*]] = arith.divui %[[ROW]], %c15
// CHECK: %[[PX:.*]] = arith.remui %[[ROW]], %c15
// CHECK: tensor.extract %arg0[
// CHECK-SAME: tensor<1x16x64xf32>
func.func @strided_patches(%x: tensor<1x16x64xf32>) -> tensor<45x64xf32> {
  %0 = tfm.patches %x {patch = 8 : i64, strides = array<i64: 4, 4>} : tensor<1x16x64xf32> -> tensor<45x64xf32>
  return %0 : tensor<45x64xf32>
}

// -----

// A 1-D convolution's windows: one generic gathering tap j of channel c
// from position row * stride + j - padding, zero outside the input; rows
// (length + 2 * padding - kernel) / stride + 1, none for an input shorter
// than the kernel.
// CHECK-LABEL: func.func @windows
// CHECK: %[[LEN:.*]] = tensor.dim %arg0, %c0
// CHECK: %[[SPAN:.*]] = arith.addi %[[LEN]], %c-1
// CHECK: %[[HALF:.*]] = arith.divsi %[[SPAN]], %c2
// CHECK: %[[COUNT:.*]] = arith.addi %[[HALF]], %c1
// CHECK: %[[ROWS:.*]] = arith.maxsi %[[COUNT]], %c0
// CHECK: tensor.empty(%[[ROWS]]) : tensor<?x12xf32>
// CHECK: linalg.generic
// CHECK: %[[CHANNEL:.*]] = arith.divui
// CHECK: %[[TAP:.*]] = arith.remui
// CHECK: %[[INSIDE:.*]] = arith.andi
// CHECK: %[[AT:.*]] = arith.select %[[INSIDE]]
// CHECK: %[[X:.*]] = tensor.extract %arg0[%[[AT]], %[[CHANNEL]]]
// CHECK: arith.select %[[INSIDE]], %[[X]], %{{.*}} : f32
func.func @windows(%x: tensor<?x4xf32>) -> tensor<?x12xf32> {
  %0 = tfm.windows %x {kernel = 3 : i64, padding = 1 : i64, stride = 2 : i64} : tensor<?x4xf32> -> tensor<?x12xf32>
  return %0 : tensor<?x12xf32>
}

// -----

// An int8 cache's rows: codes round(x * 127 / max|x|) from a row reduction,
// the scale max|x| / 127 taken apart into four bytes after them; read back,
// the bytes or-ed into the scale's bits and each code times it.
// CHECK-LABEL: func.func @quantized_rows
// CHECK-SAME: (%[[X:.*]]: tensor<?x2x4xf32>)
// CHECK: %[[MAX:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[X]] : tensor<?x2x4xf32>)
// CHECK: math.absf
// CHECK: arith.maximumf
// CHECK: %[[CODES:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[MAX]] : tensor<?x2x4xf32>, tensor<?x2xf32>)
// CHECK: math.roundeven
// CHECK: arith.fptosi %{{.*}} : f32 to i8
// CHECK: %[[SCALE:.*]] = linalg.generic {{.*}} ins(%[[MAX]] : tensor<?x2xf32>) outs(%{{.*}} : tensor<?x2x4xi8>)
// CHECK: arith.bitcast %{{.*}} : f32 to i32
// CHECK: arith.shrui
// CHECK: %[[WITH_CODES:.*]] = tensor.insert_slice %[[CODES]] into %{{.*}}[0, 0, 0] [%{{.*}}, 2, 4] [1, 1, 1] : tensor<?x2x4xi8> into tensor<?x2x8xi8>
// CHECK: %[[ROWS:.*]] = tensor.insert_slice %[[SCALE]] into %[[WITH_CODES]][0, 0, 4] [%{{.*}}, 2, 4] [1, 1, 1] : tensor<?x2x4xi8> into tensor<?x2x8xi8>
// CHECK: %[[READ_CODES:.*]] = tensor.extract_slice %[[ROWS]][0, 0, 0] [%{{.*}}, 2, 4] [1, 1, 1] : tensor<?x2x8xi8> to tensor<?x2x4xi8>
// CHECK: %[[BYTES:.*]] = tensor.extract_slice %[[ROWS]][0, 0, 4] [%{{.*}}, 2, 4] [1, 1, 1] : tensor<?x2x8xi8> to tensor<?x2x4xi8>
// CHECK: %[[BITS:.*]] = linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "reduction"]} ins(%[[BYTES]] : tensor<?x2x4xi8>) outs(%{{.*}} : tensor<?x2xi32>)
// CHECK: arith.shli
// CHECK: arith.ori
// CHECK: %[[VALUES:.*]] = linalg.generic {{.*}} ins(%[[READ_CODES]], %[[BITS]] : tensor<?x2x4xi8>, tensor<?x2xi32>)
// CHECK: arith.sitofp %{{.*}} : i8 to f32
// CHECK: arith.bitcast %{{.*}} : i32 to f32
// CHECK: return %[[VALUES]]
func.func @quantized_rows(%k: tensor<?x2x4xf32>) -> tensor<?x2x4xf32> {
  %q = tfm.quantize_rows %k : tensor<?x2x4xf32> -> tensor<?x2x8xi8>
  %d = tfm.dequantize_rows %q : tensor<?x2x8xi8> -> tensor<?x2x4xf32>
  return %d : tensor<?x2x4xf32>
}

// -----

// bf16 rows: rounded to nearest even in integer arithmetic (the lowest
// kept bit plus 0x7fff added, the top half kept; a NaN quieted), widened
// back by extension.
// CHECK-LABEL: func.func @bf16_rows
// CHECK-SAME: (%[[X:.*]]: tensor<?x2x4xf32>)
// CHECK: %[[STORED:.*]] = linalg.generic {{.*}} ins(%[[X]] : tensor<?x2x4xf32>) outs(%{{.*}} : tensor<?x2x4xbf16>)
// CHECK: arith.bitcast %{{.*}} : f32 to i32
// CHECK: arith.shrui
// CHECK: arith.andi
// CHECK: arith.addi
// CHECK: arith.cmpf uno
// CHECK: arith.select
// CHECK: arith.trunci %{{.*}} : i32 to i16
// CHECK: arith.bitcast %{{.*}} : i16 to bf16
// CHECK: %[[WIDE:.*]] = linalg.generic {{.*}} ins(%[[STORED]] : tensor<?x2x4xbf16>) outs(%{{.*}} : tensor<?x2x4xf32>)
// CHECK: arith.extf %{{.*}} : bf16 to f32
// CHECK: return %[[WIDE]]
func.func @bf16_rows(%k: tensor<?x2x4xf32>) -> tensor<?x2x4xf32> {
  %q = tfm.quantize_rows %k : tensor<?x2x4xf32> -> tensor<?x2x4xbf16>
  %d = tfm.dequantize_rows %q : tensor<?x2x4xbf16> -> tensor<?x2x4xf32>
  return %d : tensor<?x2x4xf32>
}

// -----

// f16 rows: arith's truncation (to nearest even) and extension.
// CHECK-LABEL: func.func @f16_rows
// CHECK: arith.truncf %{{.*}} : f32 to f16
// CHECK: arith.extf %{{.*}} : f16 to f32
func.func @f16_rows(%k: tensor<?x2x4xf32>) -> tensor<?x2x4xf32> {
  %q = tfm.quantize_rows %k : tensor<?x2x4xf32> -> tensor<?x2x4xf16>
  %d = tfm.dequantize_rows %q : tensor<?x2x4xf16> -> tensor<?x2x4xf32>
  return %d : tensor<?x2x4xf32>
}

// -----

// Rows in a constant order: a generic reading each row's number from a
// table.
// CHECK-LABEL: func.func @gather_rows
// CHECK: %[[ROWS:.*]] = arith.constant dense<[2, 0]> : tensor<2xi32>
// CHECK: linalg.generic {{.*}} ins(%[[ROWS]] : tensor<2xi32>)
// CHECK: arith.index_cast
// CHECK: tensor.extract %arg0
func.func @gather_rows(%x: tensor<4x8xf32>) -> tensor<2x8xf32> {
  %0 = tfm.gather_rows %x {rows = array<i64: 2, 0>} : tensor<4x8xf32> -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}

// -----

// Windows of 16 rows: scores [windows, heads, 16, 16], the bias of window w
// read at w mod 1, soft-maxed, times the values.
// CHECK-LABEL: func.func @window_attention
// CHECK: tensor.expand_shape %arg0 {{.*}} into tensor<2x16x2x8xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]{{.*}} outs(%{{.*}} : tensor<2x2x16x16xf32>)
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %arg1 : tensor<2x2x16x16xf32>, tensor<1x2x16x16xf32>)
// CHECK: math.exp
// CHECK: tensor.collapse_shape {{.*}} into tensor<32x2x8xf32>
func.func @window_attention(%q: tensor<32x2x8xf32>, %bias: tensor<1x2x16x16xf32>) -> tensor<32x2x8xf32> {
  %0 = tfm.window_attention %q, %q, %q, %bias {scale = 0.35 : f32, window = 16 : i64} : (tensor<32x2x8xf32>, tensor<32x2x8xf32>, tensor<32x2x8xf32>, tensor<1x2x16x16xf32>) -> tensor<32x2x8xf32>
  return %0 : tensor<32x2x8xf32>
}

// -----

// A convolution left to linalg (--no-convolutions-as-gemm): the padded
// input and one generic over (n, y, x, out, c, ky, kx) reading the input
// at (n, y * 2 + ky, x * 2 + kx, c) and the weight at
// (out, c * 9 + ky * 3 + kx), accumulating into the broadcast bias. An
// unbatched map is the batch of one: [1, H, W, C] through the loops, then
// [H, W, out] again.
// CHECK: affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d0, d1 * 2 + d5, d2 * 2 + d6, d4)>
// CHECK-NEXT: affine_map<(d0, d1, d2, d3, d4, d5, d6) -> (d3, d4 * 9 + d5 * 3 + d6)>
// CHECK-LABEL: func.func @conv2d
// CHECK: %[[ONE:.*]] = tensor.expand_shape %arg0 {{\[\[}}0, 1], [2], [3]] output_shape [1, 8, 8, 16]
// CHECK: tensor.pad %[[ONE]] low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK: linalg.broadcast ins(%arg2 : tensor<32xf32>) outs({{.*}} : tensor<1x4x4x32xf32>) dimensions = [0, 1, 2]
// CHECK: linalg.generic {indexing_maps = [{{.*}}], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction", "reduction", "reduction"]}
// CHECK: arith.mulf
// CHECK: arith.addf
// CHECK: tensor.collapse_shape {{.*}} into tensor<4x4x32xf32>
func.func @conv2d(%x: tensor<8x8x16xf32>, %w: tensor<32x144xf32>, %b: tensor<32xf32>) -> tensor<4x4x32xf32> {
  %y = tfm.conv2d %x, %w bias %b {kernel = 3 : i64, padding = array<i64: 1, 1, 1, 1>, stride = 2 : i64} : (tensor<8x8x16xf32>, tensor<32x144xf32>, tensor<32xf32>) -> tensor<4x4x32xf32>
  return %y : tensor<4x4x32xf32>
}

// -----

// A convolution's windows: each (pixel, column) from input row
// oy * stride + ky - top, column ox * stride + kx - left, channel
// column / 9, zero outside.
// CHECK-LABEL: func.func @image_windows
// CHECK: linalg.generic
// CHECK: %[[ROW:.*]] = linalg.index 0
// CHECK: %[[COL:.*]] = linalg.index 1
// CHECK: arith.divui %[[ROW]], %c4
// CHECK: arith.remui %[[ROW]], %c4
// CHECK: arith.divui %[[COL]], %c9
// CHECK: tensor.extract %arg0
// CHECK: arith.select
func.func @image_windows(%x: tensor<8x8x16xf32>) -> tensor<16x144xf32> {
  %y = tfm.image_windows %x {kernel = 3 : i64, padding = array<i64: 1, 1, 1, 1>, stride = 2 : i64} : tensor<8x8x16xf32> -> tensor<16x144xf32>
  return %y : tensor<16x144xf32>
}

// -----

// GroupNorm: the map viewed as [images, positions, groups, C / groups]
// (one image here); each group's sum and squared deviations accumulated
// in f64, then one generic normalizing, scaling, shifting and applying
// SiLU.
// CHECK-LABEL: func.func @group_norm
// CHECK: tensor.expand_shape {{.*}} into tensor<1x64x4x4xf32>
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel", "reduction"]
// CHECK: arith.extf {{.*}} : f32 to f64
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "reduction", "parallel", "reduction"]
// CHECK: math.sqrt
// CHECK: linalg.generic {{.*}} iterator_types = ["parallel", "parallel", "parallel", "parallel"]
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: tensor.expand_shape {{.*}} into tensor<8x8x16xf32>
func.func @group_norm(%x: tensor<8x8x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<8x8x16xf32> {
  %y = tfm.group_norm %x, %g, %b {epsilon = 1.0e-5 : f32, groups = 4 : i64, silu} : (tensor<8x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<8x8x16xf32>
  return %y : tensor<8x8x16xf32>
}

// -----

// Nearest upsampling: each result pixel reads (y / 2, x / 2).
// CHECK-LABEL: func.func @upsample_nearest
// CHECK: %[[Y:.*]] = linalg.index 0
// CHECK: %[[X:.*]] = linalg.index 1
// CHECK: %[[C:.*]] = linalg.index 2
// CHECK: %[[SY:.*]] = arith.divui %[[Y]], %c2
// CHECK: %[[SX:.*]] = arith.divui %[[X]], %c2
// CHECK: tensor.extract %arg0[%[[SY]], %[[SX]], %[[C]]]
func.func @upsample_nearest(%x: tensor<4x4x8xf32>) -> tensor<8x8x8xf32> {
  %y = tfm.upsample_nearest %x : tensor<4x4x8xf32> -> tensor<8x8x8xf32>
  return %y : tensor<8x8x8xf32>
}

// -----

// A batch [N, H, W, C]: each image its own statistics ([images, groups]).
// CHECK-LABEL: func.func @group_norm_batch
// CHECK: tensor.collapse_shape %arg0 {{\[\[}}0], [1, 2], [3]] : tensor<2x8x8x16xf32> into tensor<2x64x16xf32>
// CHECK: tensor.expand_shape {{.*}} into tensor<2x64x4x4xf32>
// CHECK: linalg.fill {{.*}} -> tensor<2x4xf64>
// CHECK: tensor.expand_shape {{.*}} into tensor<2x8x8x16xf32>
func.func @group_norm_batch(%x: tensor<2x8x8x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<2x8x8x16xf32> {
  %y = tfm.group_norm %x, %g, %b {epsilon = 1.0e-5 : f32, groups = 4 : i64} : (tensor<2x8x8x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x8x8x16xf32>
  return %y : tensor<2x8x8x16xf32>
}

// -----

// A batch's windows: row r is image r / 16's pixel r % 16.
// CHECK-LABEL: func.func @image_windows_batch
// CHECK: %[[ROW:.*]] = linalg.index 0
// CHECK: %[[PIXEL:.*]] = arith.remui %[[ROW]], %c16
// CHECK: arith.divui %[[PIXEL]], %c4
// CHECK: %[[IMAGE:.*]] = arith.divui %[[ROW]], %c16
// CHECK: tensor.extract %arg0[%[[IMAGE]],
func.func @image_windows_batch(%x: tensor<2x8x8x16xf32>) -> tensor<32x144xf32> {
  %y = tfm.image_windows %x {kernel = 3 : i64, padding = array<i64: 1, 1, 1, 1>, stride = 2 : i64} : tensor<2x8x8x16xf32> -> tensor<32x144xf32>
  return %y : tensor<32x144xf32>
}

// -----

// CHECK-LABEL: func.func @conv2d_batch
// CHECK: tensor.pad %arg0 low[0, 1, 1, 0] high[0, 1, 1, 0]
// CHECK: linalg.generic {{.*}} outs({{.*}} : tensor<2x4x4x32xf32>)
// CHECK-NOT: tensor.collapse_shape
func.func @conv2d_batch(%x: tensor<2x8x8x16xf32>, %w: tensor<32x144xf32>) -> tensor<2x4x4x32xf32> {
  %y = tfm.conv2d %x, %w {kernel = 3 : i64, padding = array<i64: 1, 1, 1, 1>, stride = 2 : i64} : (tensor<2x8x8x16xf32>, tensor<32x144xf32>) -> tensor<2x4x4x32xf32>
  return %y : tensor<2x4x4x32xf32>
}

// -----

// CHECK-LABEL: func.func @upsample_nearest_batch
// CHECK: %[[N:.*]] = linalg.index 0
// CHECK: %[[Y:.*]] = linalg.index 1
// CHECK: %[[X:.*]] = linalg.index 2
// CHECK: %[[C:.*]] = linalg.index 3
// CHECK: %[[SY:.*]] = arith.divui %[[Y]], %c2
// CHECK: %[[SX:.*]] = arith.divui %[[X]], %c2
// CHECK: tensor.extract %arg0[%[[N]], %[[SY]], %[[SX]], %[[C]]]
func.func @upsample_nearest_batch(%x: tensor<2x4x4x8xf32>) -> tensor<2x8x8x8xf32> {
  %y = tfm.upsample_nearest %x : tensor<2x4x4x8xf32> -> tensor<2x8x8x8xf32>
  return %y : tensor<2x8x8x8xf32>
}

// -----

// A timestep's sinusoids: the frequencies exp(-ln(10000) i / 4) as a
// constant table, t * f in f32, cos for the first half (flip_sin_to_cos).
// CHECK-LABEL: func.func @timestep_embedding
// CHECK: arith.constant dense<[1.000000e+00, 0.099999994, 0.00999999977, 9.99999931E-4]> : tensor<4xf32>
// CHECK: linalg.generic
// CHECK: arith.mulf {{.*}} : f32
// CHECK: math.sin {{.*}} : f64
// CHECK: math.cos {{.*}} : f64
// CHECK: arith.select
// CHECK: arith.truncf
func.func @timestep_embedding(%t: tensor<1xf32>) -> tensor<1x8xf32> {
  %y = tfm.timestep_embedding %t {downscale_freq_shift = 0.0 : f32, flip_sin_to_cos, max_period = 1.0e4 : f32, scale = 1.0 : f32} : tensor<1xf32> -> tensor<1x8xf32>
  return %y : tensor<1x8xf32>
}
