// RUN: tfm-opt %s -split-input-file -tfm-kv-cache | FileCheck %s
// RUN: tfm-opt %s -split-input-file -tfm-kv-cache=max-context=8 | FileCheck %s --check-prefix=CAPACITY

// One layer, learned positions, multi-head attention: the cache is
// [1 layer, K/V, 32 positions (max_context of tfm.model), 2 heads, 4].
// CHECK-LABEL: func.func @forward(
// CHECK-SAME: %{{.*}}: tensor<?xi32> {tfm.input = #tfm.input<token_ids>}) -> (tensor<?x16xf32> {tfm.output = #tfm.output<logits>})
// CHECK-LABEL: func.func @prefill(
// CHECK-SAME: %[[TOK:[^:]*]]: tensor<?xi32> {tfm.input = #tfm.input<token_ids>}, %[[START:[^:]*]]: index {tfm.input = #tfm.input<start_position>}, %[[SLOT:[^:]*]]: index {tfm.input = #tfm.input<cache_slot>}, %[[CACHE:[^:]*]]: tensor<1x2x32x2x4xf32> {tfm.cache = #tfm.cache<self_attention>})
// CHECK-SAME: -> (tensor<1x16xf32> {tfm.output = #tfm.output<logits>}, tensor<1x2x32x2x4xf32>)
// CHECK: %[[N:.*]] = tensor.dim %[[TOK]], %{{.*}} : tensor<?xi32>
// CHECK: %[[END:.*]] = arith.addi %[[SLOT]], %[[N]] : index
// Positions continue from where the sequence is; keys go to the slot.
// CHECK: %[[POS:.*]] = tfm.position_ids %[[TOK]] offset %[[START]]
// CHECK: tfm.embedding %{{.*}}[%[[POS]]]
// CHECK: %[[C1:.*]] = tfm.kv_cache_append %[[CACHE]][0], %[[K:.*]], %[[V:.*]] at %[[SLOT]] : tensor<1x2x32x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>
// CHECK: %[[KEYS:.*]], %[[VALUES:.*]] = tfm.kv_cache_read %[[C1]][0] length %[[END]]
// CHECK: tfm.attention %{{.*}}, %[[KEYS]], %[[VALUES]] {causal
// Only the last position reaches what follows the last attention and is
// position-wise (Tfm_PositionWise): the residual add, the final norm and
// the LM head. Rows are sliced where a value has other uses.
// CHECK: %[[LAST:.*]] = arith.subi %[[N]], %{{.*}} : index
// CHECK: %[[XROW:.*]] = tensor.extract_slice %{{.*}}[%[[LAST]], 0] [1, 8] [1, 1] : tensor<?x8xf32> to tensor<1x8xf32>
// CHECK: %[[OROW:.*]] = tensor.extract_slice %{{.*}}[%[[LAST]], 0] [1, 8] [1, 1] : tensor<?x8xf32> to tensor<1x8xf32>
// CHECK: %[[SUM:.*]] = tfm.add %[[XROW]], %[[OROW]] : tensor<1x8xf32>
// CHECK: %[[NORMED:.*]] = tfm.layer_norm %[[SUM]]
// CHECK: %[[LOGITS:.*]] = tfm.linear %[[NORMED]], %{{.*}} : (tensor<1x8xf32>, tensor<16x8xf32>) -> tensor<1x16xf32>
// CHECK: return %[[LOGITS]], %[[C1]]
// CHECK-LABEL: func.func @decode(
// CHECK-SAME: %[[T:[^:]*]]: tensor<1xi32> {{.*}}, %[[P:[^:]*]]: index {{.*}}, %[[S:[^:]*]]: index {{.*}}, %[[C:[^:]*]]: tensor<1x2x32x2x4xf32> {tfm.cache = #tfm.cache<self_attention>})
// CHECK: %[[CAST:.*]] = tensor.cast %[[T]] : tensor<1xi32> to tensor<?xi32>
// CHECK: %[[R:.*]]:2 = call @prefill(%[[CAST]], %[[P]], %[[S]], %[[C]])
// CHECK: return %[[R]]#0, %[[R]]#1
// @decode_batch: one token of each of B sequences, row b at positions[b]
// in sequence sequences[b] of a batched cache [?, 1, 2, 32, 2, 4]. Every
// op but attention runs on the B rows as on B positions (the projections
// are [B, 8] x [8, 8] products: each weight read once); positions are the
// argument; attention is a loop over the rows, each appending to and
// reading its own sequence, up to its own position.
// CHECK-LABEL: func.func @decode_batch(
// CHECK-SAME: %[[BT:[^:]*]]: tensor<?xi32> {tfm.input = #tfm.input<token_ids>}, %[[BP:[^:]*]]: tensor<?xi32> {tfm.input = #tfm.input<positions>}, %[[BS:[^:]*]]: tensor<?xi32> {tfm.input = #tfm.input<cache_sequences>}, %[[BC:[^:]*]]: tensor<?x1x2x32x2x4xf32> {tfm.cache = #tfm.cache<self_attention>})
// CHECK-SAME: -> (tensor<?x16xf32> {tfm.output = #tfm.output<logits>}, tensor<?x1x2x32x2x4xf32>)
// CHECK-NOT: tfm.position_ids
// CHECK: tfm.embedding %{{.*}}[%[[BP]]]
// CHECK: %[[BQ:.*]] = tfm.linear %{{.*}} : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x2x4xf32>
// CHECK: %[[ROWS:.*]] = tensor.dim %[[BQ]]
// CHECK: %[[LOOP:.*]]:2 = scf.for %[[ROW:.*]] = %{{.*}} to %[[ROWS]] step %{{.*}} iter_args(%[[OUT:.*]] = %{{.*}}, %[[CARRIED:.*]] = %[[BC]])
// CHECK: %[[PI:.*]] = tensor.extract %[[BP]][%[[ROW]]]
// CHECK: %[[POS:.*]] = arith.index_cast %[[PI]]
// CHECK: %[[SI:.*]] = tensor.extract %[[BS]][%[[ROW]]]
// CHECK: %[[SEQ:.*]] = arith.index_cast %[[SI]]
// CHECK: %[[OWN:.*]] = tensor.extract_slice %[[CARRIED]][%[[SEQ]], 0, 0, 0, 0, 0] [1, 1, 2, 32, 2, 4]
// CHECK: %[[LEN:.*]] = arith.addi %[[POS]]
// CHECK: %[[APPENDED:.*]] = tfm.kv_cache_append %[[OWN]][0], %{{.*}}, %{{.*}} at %[[POS]]
// CHECK: %[[RK:.*]], %[[RV:.*]] = tfm.kv_cache_read %[[APPENDED]][0] length %[[LEN]]
// CHECK: %[[QROW:.*]] = tensor.extract_slice %[[BQ]][%[[ROW]], 0, 0]
// CHECK: %[[ATT:.*]] = tfm.attention %[[QROW]], %[[RK]], %[[RV]] {causal
// CHECK: %[[NEXT:.*]] = tensor.insert_slice %[[ATT]] into %[[OUT]][%[[ROW]], 0, 0]
// CHECK: %[[BACK:.*]] = tensor.insert_slice %[[APPENDED]] into %[[CARRIED]][%[[SEQ]], 0, 0, 0, 0, 0]
// CHECK: scf.yield %[[NEXT]], %[[BACK]]
// CHECK: %[[BL:.*]] = tfm.linear %{{.*}} : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
// CHECK: return %[[BL]], %[[LOOP]]#1
// @prefill_batch: chunks of several sequences packed end to end, chunk c
// the next lengths[c] tokens of sequence sequences[c] at positions given
// per token. Projections run over all chunks' tokens at once; attention
// is a loop over the chunks (none for no rows: a layer a shorter pipeline
// stage does not run), each appending its keys at its first position
// and attending over its own sequence up to its last; the residual add,
// final norm and LM head see each chunk's last row only ([chunks, 8]).
// CHECK-LABEL: func.func @prefill_batch(
// CHECK-SAME: %[[PT:[^:]*]]: tensor<?xi32> {tfm.input = #tfm.input<token_ids>}, %[[PP:[^:]*]]: tensor<?xi32> {tfm.input = #tfm.input<positions>}, %[[PS:[^:]*]]: tensor<?xi32> {tfm.input = #tfm.input<cache_sequences>}, %[[PL:[^:]*]]: tensor<?xi32> {tfm.input = #tfm.input<chunk_lengths>}, %[[PC:[^:]*]]: tensor<?x1x2x32x2x4xf32> {tfm.cache = #tfm.cache<self_attention>})
// CHECK-SAME: -> (tensor<?x16xf32> {tfm.output = #tfm.output<logits>}, tensor<?x1x2x32x2x4xf32>)
// CHECK-NOT: tfm.position_ids
// CHECK: tfm.embedding %{{.*}}[%[[PP]]]
// CHECK: %[[PQ:.*]] = tfm.linear %{{.*}} : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x2x4xf32>
// CHECK: %[[ROWS:.*]] = tensor.dim %[[PQ]]
// CHECK: %[[NONE:.*]] = arith.cmpi eq, %[[ROWS]]
// CHECK: %[[ALL:.*]] = tensor.dim %[[PL]]
// CHECK: %[[CHUNKS:.*]] = arith.select %[[NONE]], %{{.*}}, %[[ALL]]
// CHECK: %[[PLOOP:.*]]:3 = scf.for %[[CHUNK:.*]] = %{{.*}} to %[[CHUNKS]] step %{{.*}} iter_args(%[[POUT:.*]] = %{{.*}}, %[[PCARRIED:.*]] = %[[PC]], %[[FIRST:.*]] = %{{.*}})
// CHECK: %[[NI:.*]] = tensor.extract %[[PL]][%[[CHUNK]]]
// CHECK: %[[N:.*]] = arith.index_cast %[[NI]]
// CHECK: %[[STARTI:.*]] = tensor.extract %[[PP]][%[[FIRST]]]
// CHECK: %[[START:.*]] = arith.index_cast %[[STARTI]]
// CHECK: %[[PSI:.*]] = tensor.extract %[[PS]][%[[CHUNK]]]
// CHECK: %[[PSEQ:.*]] = arith.index_cast %[[PSI]]
// CHECK: %[[POWN:.*]] = tensor.extract_slice %[[PCARRIED]][%[[PSEQ]], 0, 0, 0, 0, 0] [1, 1, 2, 32, 2, 4]
// CHECK: %[[PEND:.*]] = arith.addi %[[START]], %[[N]]
// CHECK: %[[PAPPENDED:.*]] = tfm.kv_cache_append %[[POWN]][0], %{{.*}}, %{{.*}} at %[[START]]
// CHECK: %[[PK:.*]], %[[PV:.*]] = tfm.kv_cache_read %[[PAPPENDED]][0] length %[[PEND]]
// CHECK: %[[PQC:.*]] = tensor.extract_slice %[[PQ]][%[[FIRST]], 0, 0] [%[[N]], 2, 4]
// CHECK: %[[PATT:.*]] = tfm.attention %[[PQC]], %[[PK]], %[[PV]] {causal
// CHECK: %[[PNEXT:.*]] = tensor.insert_slice %[[PATT]] into %[[POUT]][%[[FIRST]], 0, 0]
// CHECK: %[[PBACK:.*]] = tensor.insert_slice %[[PAPPENDED]] into %[[PCARRIED]][%[[PSEQ]], 0, 0, 0, 0, 0]
// CHECK: %[[AFTER:.*]] = arith.addi %[[FIRST]], %[[N]]
// CHECK: scf.yield %[[PNEXT]], %[[PBACK]], %[[AFTER]]
// CHECK: %[[PICKED:.*]]:2 = scf.for
// CHECK: %[[LASTEND:.*]] = arith.addi
// CHECK: %[[LASTROW:.*]] = arith.subi %[[LASTEND]]
// CHECK: tensor.extract_slice %{{.*}}[%[[LASTROW]], 0] [1, 8] [1, 1] : tensor<?x8xf32> to tensor<1x8xf32>
// CHECK: %[[PSUM:.*]] = tfm.add %{{.*}}#0, %{{.*}}#0 : tensor<?x8xf32>
// CHECK: %[[PNORM:.*]] = tfm.layer_norm %[[PSUM]]
// CHECK: %[[PLOGITS:.*]] = tfm.linear %[[PNORM]], %{{.*}} : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
// CHECK: return %[[PLOGITS]], %[[PLOOP]]#1
// CAPACITY-LABEL: func.func @prefill(
// CAPACITY-SAME: tensor<1x2x8x2x4xf32>
module attributes {tfm.model = #tfm.model<family = "test", vocab_size = 0, max_context = 32>} {
tfm.weight_decl @wte : tensor<16x8xf32>
tfm.weight_decl @wpe : tensor<32x8xf32>
tfm.weight_decl @g : tensor<8xf32>
tfm.weight_decl @b : tensor<8xf32>
tfm.weight_decl @w : tensor<8x8xf32>
func.func @forward(%tokens: tensor<?xi32> {tfm.input = #tfm.input<token_ids>}) -> (tensor<?x16xf32> {tfm.output = #tfm.output<logits>}) {
  %wte = tfm.weight @wte : tensor<16x8xf32>
  %wpe = tfm.weight @wpe : tensor<32x8xf32>
  %g = tfm.weight @g : tensor<8xf32>
  %b = tfm.weight @b : tensor<8xf32>
  %wqkv = tfm.weight @w : tensor<8x8xf32>
  %x0 = tfm.embedding %wte[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %pos = tfm.position_ids %tokens : tensor<?xi32> -> tensor<?xi32>
  %pe = tfm.embedding %wpe[%pos] : tensor<32x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %x = tfm.add %x0, %pe : tensor<?x8xf32>
  %h = tfm.layer_norm %x, %g, %b {epsilon = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %q = tfm.linear %h, %wqkv : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x2x4xf32>
  %k = tfm.linear %h, %wqkv : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x2x4xf32>
  %v = tfm.linear %h, %wqkv : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x2x4xf32>
  %a = tfm.attention %q, %k, %v {causal, scale = 0.5 : f32} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x2x4xf32>
  %o = tfm.linear %a, %wqkv : (tensor<?x2x4xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %x1 = tfm.add %x, %o : tensor<?x8xf32>
  %f = tfm.layer_norm %x1, %g, %b {epsilon = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %logits = tfm.linear %f, %wte : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  return %logits : tensor<?x16xf32>
}
}

// -----

// Two layers, RoPE, grouped-query attention (4 query heads, 1 KV head): the
// cache holds the KV heads only, [2 layers, K/V, 32, 1, 4]; each layer
// appends to the cache the previous layer returned.
// CHECK-LABEL: func.func @prefill(
// CHECK-SAME: %[[TOK:[^:]*]]: tensor<?xi32> {{.*}}, %[[START:[^:]*]]: index {{.*}}, %[[SLOT:[^:]*]]: index {{.*}}, %[[CACHE:[^:]*]]: tensor<2x2x32x1x4xf32> {tfm.cache = #tfm.cache<self_attention>})
// CHECK: %[[END:.*]] = arith.addi %[[SLOT]], %{{.*}} : index
// CHECK: %[[POS:.*]] = tfm.position_ids %[[TOK]] offset %[[START]]
// CHECK: tfm.rope rotate_half %{{.*}}, %[[POS]]
// CHECK: %[[KR0:.*]] = tfm.rope rotate_half %{{.*}}, %[[POS]] {{.*}} : tensor<?x1x4xf32>
// CHECK: %[[C1:.*]] = tfm.kv_cache_append %[[CACHE]][0], %[[KR0]], %{{.*}} at %[[SLOT]]
// CHECK: tfm.kv_cache_read %[[C1]][0] length %[[END]] : tensor<2x2x32x1x4xf32> -> tensor<?x1x4xf32>, tensor<?x1x4xf32>
// CHECK: %[[C2:.*]] = tfm.kv_cache_append %[[C1]][1]
// CHECK: tfm.kv_cache_read %[[C2]][1] length %[[END]]
// CHECK: return %{{.*}}, %[[C2]] : tensor<1x16xf32>, tensor<2x2x32x1x4xf32>
module attributes {tfm.model = #tfm.model<family = "test", vocab_size = 0, max_context = 32>} {
tfm.weight_decl @wte : tensor<16x8xf32>
tfm.weight_decl @g : tensor<8xf32>
tfm.weight_decl @wq : tensor<16x8xf32>
tfm.weight_decl @wkv : tensor<4x8xf32>
tfm.weight_decl @wo : tensor<8x16xf32>
func.func @forward(%tokens: tensor<?xi32>) -> tensor<?x16xf32> {
  %wte = tfm.weight @wte : tensor<16x8xf32>
  %g = tfm.weight @g : tensor<8xf32>
  %wq = tfm.weight @wq : tensor<16x8xf32>
  %wkv = tfm.weight @wkv : tensor<4x8xf32>
  %wo = tfm.weight @wo : tensor<8x16xf32>
  %x = tfm.embedding %wte[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %pos = tfm.position_ids %tokens : tensor<?xi32> -> tensor<?xi32>
  %h0 = tfm.rms_norm %x, %g {epsilon = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %q0 = tfm.linear %h0, %wq : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x4x4xf32>
  %k0 = tfm.linear %h0, %wkv : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x1x4xf32>
  %v0 = tfm.linear %h0, %wkv : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x1x4xf32>
  %qr0 = tfm.rope rotate_half %q0, %pos {theta = 1.0e4 : f32} : tensor<?x4x4xf32>, tensor<?xi32>
  %kr0 = tfm.rope rotate_half %k0, %pos {theta = 1.0e4 : f32} : tensor<?x1x4xf32>, tensor<?xi32>
  %a0 = tfm.attention %qr0, %kr0, %v0 {causal, scale = 0.5 : f32} : (tensor<?x4x4xf32>, tensor<?x1x4xf32>, tensor<?x1x4xf32>) -> tensor<?x4x4xf32>
  %o0 = tfm.linear %a0, %wo : (tensor<?x4x4xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  %x1 = tfm.add %x, %o0 : tensor<?x8xf32>
  %h1 = tfm.rms_norm %x1, %g {epsilon = 1.0e-5 : f32} : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %q1 = tfm.linear %h1, %wq : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x4x4xf32>
  %k1 = tfm.linear %h1, %wkv : (tensor<?x8xf32>, tensor<4x8xf32>) -> tensor<?x1x4xf32>
  %a1 = tfm.attention %q1, %k1, %k1 {causal, scale = 0.5 : f32} : (tensor<?x4x4xf32>, tensor<?x1x4xf32>, tensor<?x1x4xf32>) -> tensor<?x4x4xf32>
  %o1 = tfm.linear %a1, %wo : (tensor<?x4x4xf32>, tensor<8x16xf32>) -> tensor<?x8xf32>
  %x2 = tfm.add %x1, %o1 : tensor<?x8xf32>
  %logits = tfm.linear %x2, %wte : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  return %logits : tensor<?x16xf32>
}
}

// -----

// Layers of different windows (a global layer, then two of window 4, as
// GPT-Neo's): @prefill's cache has a plane for the global layer, and a
// cache of rings beside it a plane of 4 rows for each windowed layer
// (self_attention_rings: their rows are at positions mod 4, not at the
// cache's slots). A ring is read from max(start - 3, 0) up to the new rows
// before they are appended. The batched entry points page the global
// layer's plane and keep each windowed layer's ring in a second cache
// likewise, a plane of 4 rows each per sequence.
// CHECK-LABEL: func.func @prefill(
// CHECK-SAME: %[[START:[^:]*]]: index {tfm.input = #tfm.input<start_position>}, %[[SLOT:[^:]*]]: index {tfm.input = #tfm.input<cache_slot>}, %[[CACHE:[^:]*]]: tensor<1x2x32x2x4xf32> {tfm.cache = #tfm.cache<self_attention>}, %[[RINGS:[^:]*]]: tensor<2x2x4x2x4xf32> {tfm.cache = #tfm.cache<self_attention_rings, window = 4>})
// CHECK: %[[C1:.*]] = tfm.kv_cache_append %[[CACHE]][0], %{{.*}}, %{{.*}} at %[[SLOT]]
// CHECK: %[[SEEN:.*]] = arith.subi %[[START]], %c3
// CHECK: %[[FIRST:.*]] = arith.maxsi %[[SEEN]], %c0
// CHECK: %[[K1:.*]], %[[V1:.*]] = tfm.kv_ring_read %[[RINGS]][0] rows 0 ring 4 positions %[[FIRST]] to %[[START]] then
// CHECK: %[[R1:.*]] = tfm.kv_ring_append %[[RINGS]][0] rows 0 ring 4, %{{.*}}, %{{.*}} at %[[START]]
// CHECK: tfm.attention %{{.*}}, %[[K1]], %[[V1]] {causal, scale = 5.000000e-01 : f32, window = 4 : i64}
// CHECK: tfm.kv_ring_read %[[R1]][1] rows 0 ring 4 positions
// CHECK: %[[R2:.*]] = tfm.kv_ring_append %[[R1]][1] rows 0 ring 4,
// CHECK: return %{{.*}}, %[[C1]], %[[R2]]
// CHECK-LABEL: func.func @decode_batch(
// CHECK-SAME: %[[PAGED:[^:]*]]: tensor<?x1x2x32x2x4xf32> {tfm.cache = #tfm.cache<self_attention>}, %[[RINGS:[^:]*]]: tensor<?x2x2x4x2x4xf32> {tfm.cache = #tfm.cache<self_attention_rings, window = 4>})
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %[[PAGED]])
// CHECK: tfm.kv_cache_append %{{.*}}[0]
// CHECK: scf.for {{.*}} iter_args(%{{.*}} = %{{.*}}, %{{.*}} = %[[RINGS]])
// CHECK: tfm.kv_ring_read %{{.*}}[0] rows 0 ring 4
// CHECK: tfm.kv_ring_append %{{.*}}[0] rows 0 ring 4
// CHECK: tfm.kv_ring_read %{{.*}}[1] rows 0 ring 4
// CHECK: return %{{.*}}, %{{.*}}, %{{.*}} : tensor<?x16xf32>, tensor<?x1x2x32x2x4xf32>, tensor<?x2x2x4x2x4xf32>
// CHECK-LABEL: func.func @prefill_batch(
// CHECK-SAME: tensor<?x1x2x32x2x4xf32> {tfm.cache = #tfm.cache<self_attention>}, %{{[^:]*}}: tensor<?x2x2x4x2x4xf32> {tfm.cache = #tfm.cache<self_attention_rings, window = 4>})
// CHECK: tfm.kv_ring_append %{{.*}}[1] rows 0 ring 4
module attributes {tfm.model = #tfm.model<family = "test", vocab_size = 0, max_context = 32>} {
tfm.weight_decl @wte : tensor<16x8xf32>
tfm.weight_decl @w : tensor<8x8xf32>
func.func @forward(%tokens: tensor<?xi32> {tfm.input = #tfm.input<token_ids>}) -> (tensor<?x16xf32> {tfm.output = #tfm.output<logits>}) {
  %wte = tfm.weight @wte : tensor<16x8xf32>
  %w = tfm.weight @w : tensor<8x8xf32>
  %x = tfm.embedding %wte[%tokens] : tensor<16x8xf32>, tensor<?xi32> -> tensor<?x8xf32>
  %q0 = tfm.linear %x, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x2x4xf32>
  %a0 = tfm.attention %q0, %q0, %q0 {causal, scale = 0.5 : f32} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x2x4xf32>
  %x1 = tfm.linear %a0, %w : (tensor<?x2x4xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %q1 = tfm.linear %x1, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x2x4xf32>
  %a1 = tfm.attention %q1, %q1, %q1 {causal, scale = 0.5 : f32, window = 4 : i64} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x2x4xf32>
  %x2 = tfm.linear %a1, %w : (tensor<?x2x4xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %q2 = tfm.linear %x2, %w : (tensor<?x8xf32>, tensor<8x8xf32>) -> tensor<?x2x4xf32>
  %a2 = tfm.attention %q2, %q2, %q2 {causal, scale = 0.5 : f32, window = 4 : i64} : (tensor<?x2x4xf32>, tensor<?x2x4xf32>, tensor<?x2x4xf32>) -> tensor<?x2x4xf32>
  %x3 = tfm.linear %a2, %w : (tensor<?x2x4xf32>, tensor<8x8xf32>) -> tensor<?x8xf32>
  %logits = tfm.linear %x3, %wte : (tensor<?x8xf32>, tensor<16x8xf32>) -> tensor<?x16xf32>
  return %logits : tensor<?x16xf32>
}
}
