// RUN: tfm-opt %s -tfm-expand-latent-attention | FileCheck %s

// Multi-head latent attention absorbed (latent 8, nope 2, rope 2, value 2,
// 2 heads): the absorbed form spends 2·8 + 2 = 18 multiply-adds a head on a
// query-key pair, the expanded one 2 + 2 + 2 = 6, counted twice (a saving
// of 6), and either form's projections cost 8 · (2 + 2) = 32 a row. For s
// queries over t keys the expanded form is taken when
// 6 · (s·t − s·(s−1)/2) ≥ 32 · (t − s).
module {
tfm.weight_decl @k_absorb : tensor<16x2xf32>
tfm.weight_decl @k_up : tensor<4x8xf32>
tfm.weight_decl @v_up : tensor<4x8xf32>
tfm.weight_decl @k_up_split : tensor<8x8xf32>

// CHECK-LABEL: func.func @prompt(
// CHECK-SAME: %[[QN:[^:]*]]: tensor<?x2x2xf32>, %[[QR:[^:]*]]: tensor<?x2x2xf32>, %[[ROWS:[^:]*]]: tensor<?x1x10xf32>
// CHECK: %[[S:.*]] = tensor.dim %[[QN]], %c0
// CHECK: %[[T:.*]] = tensor.dim %[[ROWS]], %c0
// CHECK: %[[ALL:.*]] = arith.muli %[[S]], %[[T]]
// CHECK: %[[EARLIER:.*]] = arith.subi %[[S]], %c1
// CHECK: %[[SQ:.*]] = arith.muli %[[S]], %[[EARLIER]]
// CHECK: %[[HIDDEN:.*]] = arith.divui %[[SQ]], %c2
// CHECK: %[[PAIRS:.*]] = arith.subi %[[ALL]], %[[HIDDEN]]
// CHECK: %[[SAVED:.*]] = arith.muli %[[PAIRS]], %c6
// CHECK: %[[EXTRA:.*]] = arith.subi %[[T]], %[[S]]
// CHECK: %[[SPENT:.*]] = arith.muli %[[EXTRA]], %c32
// CHECK: %[[CHEAPER:.*]] = arith.cmpi sge, %[[SAVED]], %[[SPENT]]
// CHECK: %[[O:.*]] = scf.if %[[CHEAPER]] -> (tensor<?x2x2xf32>) {
// The expanded form: keys and values up-projected from the latent columns,
// the rotated columns beside every head's key.
// CHECK: %[[LATENT:.*]] = tensor.extract_slice %[[ROWS]][0, 0, 0] [%{{.*}}, 1, 8] [1, 1, 1] : tensor<?x1x10xf32> to tensor<?x8xf32>
// CHECK: %[[KUP:.*]] = tfm.weight @k_up
// CHECK: %[[KN:.*]] = tfm.linear %[[LATENT]], %[[KUP]] : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x2x2xf32>
// CHECK: %[[V:.*]] = tfm.linear %[[LATENT]], %[[VUP:.*]] : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x2x2xf32>
// CHECK: %[[KR:.*]] = tensor.extract_slice %[[ROWS]][0, 0, 8] [%{{.*}}, 1, 2] [1, 1, 1] : tensor<?x1x10xf32> to tensor<?x2xf32>
// CHECK: %[[B:.*]] = linalg.broadcast ins(%[[KR]] : tensor<?x2xf32>) outs(%{{.*}} : tensor<?x2x2xf32>) dimensions = [1]
// CHECK: %[[K:.*]] = tensor.concat dim(2) %[[KN]], %[[B]]
// CHECK: %[[Q:.*]] = tensor.concat dim(2) %[[QN]], %[[QR]]
// CHECK: %[[E:.*]] = tfm.attention %[[Q]], %[[K]], %[[V]] {causal, scale = 5.000000e-01 : f32} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x2xf32>) -> tensor<?x2x2xf32>
// CHECK: scf.yield %[[E]]
// CHECK: } else {
// The absorbed form as it was.
// CHECK: tfm.head_linear %[[QN]]
// CHECK: tfm.attention
// CHECK: %[[A:.*]] = tfm.head_linear
// CHECK: scf.yield %[[A]]
// CHECK: }
// CHECK: return %[[O]]
func.func @prompt(%qn: tensor<?x2x2xf32>, %qr: tensor<?x2x2xf32>, %rows: tensor<?x1x10xf32>) -> tensor<?x2x2xf32> {
  %c0 = arith.constant 0 : index
  %wk = tfm.weight @k_absorb : tensor<16x2xf32>
  %wv = tfm.weight @v_up : tensor<4x8xf32>
  %qa = tfm.head_linear %qn, %wk : (tensor<?x2x2xf32>, tensor<16x2xf32>) -> tensor<?x2x8xf32>
  %query = tensor.concat dim(2) %qa, %qr : (tensor<?x2x8xf32>, tensor<?x2x2xf32>) -> tensor<?x2x10xf32>
  %t = tensor.dim %rows, %c0 : tensor<?x1x10xf32>
  %value = tensor.extract_slice %rows[0, 0, 0] [%t, 1, 8] [1, 1, 1] : tensor<?x1x10xf32> to tensor<?x1x8xf32>
  %a = tfm.attention %query, %rows, %value {causal, scale = 0.5 : f32, tfm.expanded_key = @k_up} : (tensor<?x2x10xf32>, tensor<?x1x10xf32>, tensor<?x1x8xf32>) -> tensor<?x2x8xf32>
  %o = tfm.head_linear %a, %wv : (tensor<?x2x8xf32>, tensor<4x8xf32>) -> tensor<?x2x2xf32>
  return %o : tensor<?x2x2xf32>
}

// One query: 6 · t against 32 · (t − 1), which the expanded form loses
// for any t past 1: left absorbed, with no choice to make.
// CHECK-LABEL: func.func @one_query(
// CHECK-NOT: scf.if
// CHECK-NOT: tfm.linear
// CHECK: return
func.func @one_query(%qn: tensor<1x2x2xf32>, %qr: tensor<1x2x2xf32>, %rows: tensor<?x1x10xf32>) -> tensor<1x2x2xf32> {
  %c0 = arith.constant 0 : index
  %wk = tfm.weight @k_absorb : tensor<16x2xf32>
  %wv = tfm.weight @v_up : tensor<4x8xf32>
  %qa = tfm.head_linear %qn, %wk : (tensor<1x2x2xf32>, tensor<16x2xf32>) -> tensor<1x2x8xf32>
  %query = tensor.concat dim(2) %qa, %qr : (tensor<1x2x8xf32>, tensor<1x2x2xf32>) -> tensor<1x2x10xf32>
  %t = tensor.dim %rows, %c0 : tensor<?x1x10xf32>
  %value = tensor.extract_slice %rows[0, 0, 0] [%t, 1, 8] [1, 1, 1] : tensor<?x1x10xf32> to tensor<?x1x8xf32>
  %a = tfm.attention %query, %rows, %value {causal, scale = 0.5 : f32, tfm.expanded_key = @k_up} : (tensor<1x2x10xf32>, tensor<?x1x10xf32>, tensor<?x1x8xf32>) -> tensor<1x2x8xf32>
  %o = tfm.head_linear %a, %wv : (tensor<1x2x8xf32>, tensor<4x8xf32>) -> tensor<1x2x2xf32>
  return %o : tensor<1x2x2xf32>
}

// Six queries (36 ≥ 32 a key in the limit): the choice is made at run
// time.
// CHECK-LABEL: func.func @six_queries(
// CHECK: scf.if
func.func @six_queries(%qn: tensor<6x2x2xf32>, %qr: tensor<6x2x2xf32>, %rows: tensor<?x1x10xf32>) -> tensor<6x2x2xf32> {
  %c0 = arith.constant 0 : index
  %wk = tfm.weight @k_absorb : tensor<16x2xf32>
  %wv = tfm.weight @v_up : tensor<4x8xf32>
  %qa = tfm.head_linear %qn, %wk : (tensor<6x2x2xf32>, tensor<16x2xf32>) -> tensor<6x2x8xf32>
  %query = tensor.concat dim(2) %qa, %qr : (tensor<6x2x8xf32>, tensor<6x2x2xf32>) -> tensor<6x2x10xf32>
  %t = tensor.dim %rows, %c0 : tensor<?x1x10xf32>
  %value = tensor.extract_slice %rows[0, 0, 0] [%t, 1, 8] [1, 1, 1] : tensor<?x1x10xf32> to tensor<?x1x8xf32>
  %a = tfm.attention %query, %rows, %value {causal, scale = 0.5 : f32, tfm.expanded_key = @k_up} : (tensor<6x2x10xf32>, tensor<?x1x10xf32>, tensor<?x1x8xf32>) -> tensor<6x2x8xf32>
  %o = tfm.head_linear %a, %wv : (tensor<6x2x8xf32>, tensor<4x8xf32>) -> tensor<6x2x2xf32>
  return %o : tensor<6x2x2xf32>
}

// Unmarked (no stored key up-projection), or marked with one whose rows are
// not these heads' (a rank's two heads of a model's four): left absorbed.
// CHECK-LABEL: func.func @unmarked(
// CHECK-NOT: scf.if
// CHECK: return
func.func @unmarked(%qn: tensor<?x2x2xf32>, %qr: tensor<?x2x2xf32>, %rows: tensor<?x1x10xf32>) -> tensor<?x2x2xf32> {
  %c0 = arith.constant 0 : index
  %wk = tfm.weight @k_absorb : tensor<16x2xf32>
  %wv = tfm.weight @v_up : tensor<4x8xf32>
  %qa = tfm.head_linear %qn, %wk : (tensor<?x2x2xf32>, tensor<16x2xf32>) -> tensor<?x2x8xf32>
  %query = tensor.concat dim(2) %qa, %qr : (tensor<?x2x8xf32>, tensor<?x2x2xf32>) -> tensor<?x2x10xf32>
  %t = tensor.dim %rows, %c0 : tensor<?x1x10xf32>
  %value = tensor.extract_slice %rows[0, 0, 0] [%t, 1, 8] [1, 1, 1] : tensor<?x1x10xf32> to tensor<?x1x8xf32>
  %a = tfm.attention %query, %rows, %value {causal, scale = 0.5 : f32} : (tensor<?x2x10xf32>, tensor<?x1x10xf32>, tensor<?x1x8xf32>) -> tensor<?x2x8xf32>
  %o = tfm.head_linear %a, %wv : (tensor<?x2x8xf32>, tensor<4x8xf32>) -> tensor<?x2x2xf32>
  return %o : tensor<?x2x2xf32>
}

// CHECK-LABEL: func.func @split_heads(
// CHECK-NOT: scf.if
// CHECK: return
func.func @split_heads(%qn: tensor<?x2x2xf32>, %qr: tensor<?x2x2xf32>, %rows: tensor<?x1x10xf32>) -> tensor<?x2x2xf32> {
  %c0 = arith.constant 0 : index
  %wk = tfm.weight @k_absorb : tensor<16x2xf32>
  %wv = tfm.weight @v_up : tensor<4x8xf32>
  %qa = tfm.head_linear %qn, %wk : (tensor<?x2x2xf32>, tensor<16x2xf32>) -> tensor<?x2x8xf32>
  %query = tensor.concat dim(2) %qa, %qr : (tensor<?x2x8xf32>, tensor<?x2x2xf32>) -> tensor<?x2x10xf32>
  %t = tensor.dim %rows, %c0 : tensor<?x1x10xf32>
  %value = tensor.extract_slice %rows[0, 0, 0] [%t, 1, 8] [1, 1, 1] : tensor<?x1x10xf32> to tensor<?x1x8xf32>
  %a = tfm.attention %query, %rows, %value {causal, scale = 0.5 : f32, tfm.expanded_key = @k_up_split} : (tensor<?x2x10xf32>, tensor<?x1x10xf32>, tensor<?x1x8xf32>) -> tensor<?x2x8xf32>
  %o = tfm.head_linear %a, %wv : (tensor<?x2x8xf32>, tensor<4x8xf32>) -> tensor<?x2x2xf32>
  return %o : tensor<?x2x2xf32>
}
}
