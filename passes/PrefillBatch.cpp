//===- PrefillBatch.cpp - @prefill_batch: chunks of many sequences ------===//
//
// tfm-kv-cache's batched prefill. A server's step advances many sequences
// at once: some by one generated token, some by a chunk of their prompt.
// @prefill_batch runs them all in one call, so each weight is read once
// per step and every projection is one GEMM over all the step's tokens.
// It is @forward cloned over chunks packed end to end:
//
// - every op but attention acts on each token alone (the analysis proved
//   it), so it runs on all chunks' tokens as on one sequence's;
// - positions come from an argument, one per token, instead of counting;
// - each self-attention becomes a loop over the chunks: chunk b appends its
//   keys and values to its own sequence of the cache from its first
//   position on, and its queries attend causally over that sequence's
//   positions up to its last, as @prefill's do;
// - each recurrent layer (Gated DeltaNet's) runs chunk by chunk from its
//   sequence's state (RecurrentState.cpp);
// - the final norm and LM head run on each chunk's last token only.
//
// A generating sequence is a chunk of one token, so @decode_batch's step
// is the special case of chunks of length 1. @verify_batch is the same
// function with every row's logits: a server's speculative step, each
// generating sequence's chosen token and its drafts checked at once.
//
//===----------------------------------------------------------------------===//

#include "passes/CachePlan.h"
#include "passes/PositionAnalysis.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// The batch's chunks: the tokens' positions, and each chunk's sequence of
/// the batched cache and token count.
struct Chunks {
  Value positions, sequences, lengths;
};

/// Replaces self-attention `attention` (queries, keys and values of all
/// chunks' tokens) by a loop over the chunks, each appending to and
/// attending over its own sequence of `cache` (at the layer's `rows`);
/// returns the updated cache.
Value attendEachChunk(AttentionOp attention, const LayerRows &rows, Value cache,
                      RankedTensorType cacheType, const Chunks &chunks) {
  OpBuilder b(attention);
  Location loc = attention.getLoc();
  RankedTensorType type = attention.getType();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value tokens = tensor::DimOp::create(b, loc, attention.getQuery(), 0);
  Value count = chunksOfRows(b, loc, chunks.lengths, tokens);
  Value init = tensor::EmptyOp::create(
      b, loc, type.getShape(), type.getElementType(), ValueRange{tokens});
  // Carried: the attended rows, the cache, the chunk's first token.
  auto loop = scf::ForOp::create(
      b, loc, zero, count, one, ValueRange{init, cache, zero},
      [&](OpBuilder &nb, Location l, Value chunk, ValueRange carried) {
        Value first = carried[2];
        Value length = indexAt(nb, l, chunks.lengths, chunk);
        Value start = indexAt(nb, l, chunks.positions, first);
        Value sequence = indexAt(nb, l, chunks.sequences, chunk);
        AttendedInSequence attended =
            attendInSequence(nb, l, attention, rows, cacheType, carried[0],
                             carried[1], sequence, first, length, start);
        Value next = arith::AddIOp::create(nb, l, first, length);
        scf::YieldOp::create(nb, l,
                             ValueRange{attended.out, attended.cache, next});
      });
  attention.getResult().replaceAllUsesWith(loop.getResult(0));
  attention.erase();
  return loop.getResult(1);
}

/// The last row of each chunk of `rows` ([tokens, features] -> [chunks,
/// features]).
Value lastRowOfEachChunk(OpBuilder &b, Location loc, Value rows,
                         Value lengths) {
  auto type = cast<RankedTensorType>(rows.getType());
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value count = tensor::DimOp::create(b, loc, lengths, 0);
  Value init = tensor::EmptyOp::create(
      b, loc, ArrayRef<int64_t>{ShapedType::kDynamic, type.getDimSize(1)},
      type.getElementType(), ValueRange{count});
  // Carried: the picked rows, the chunk's first token.
  auto loop = scf::ForOp::create(
      b, loc, zero, count, one, ValueRange{init, zero},
      [&](OpBuilder &nb, Location l, Value chunk, ValueRange carried) {
        Value next = arith::AddIOp::create(
            nb, l, carried[1], indexAt(nb, l, lengths, chunk));
        Value last = arith::SubIOp::create(nb, l, next, one);
        Value row = sliceRows(nb, l, rows, last, nb.getIndexAttr(1));
        Value picked = insertRows(nb, l, row, carried[0], chunk);
        scf::YieldOp::create(nb, l, ValueRange{picked, next});
      });
  return loop.getResult(0);
}

} // namespace

void mlir::tfm::buildPrefillBatch(func::FuncOp forward, const CachePlan &plan,
                                  int64_t capacity, bool everyRow) {
  MLIRContext *ctx = forward.getContext();
  Location loc = forward.getLoc();
  BatchedCaches caches{layOutBatchedCache(plan, capacity)};

  IRMapping mapping;
  func::FuncOp batch = cloneForBatch(
      forward, everyRow ? "verify_batch" : "prefill_batch", mapping);
  Block &entry = batch.front();
  Value tokens = entry.getArgument(plan.tokensArg);
  Chunks chunks;
  chunks.positions = entry.addArgument(tokens.getType(), loc);
  chunks.sequences = entry.addArgument(tokens.getType(), loc);
  chunks.lengths = entry.addArgument(tokens.getType(), loc);
  unsigned cacheArg = caches.addArguments(entry, loc, plan);

  replaceCountedPositions(batch, tokens, chunks.positions);
  for (auto [layer, original] : llvm::enumerate(plan.layers)) {
    Operation *originalOp = AttentionOp(original).getOperation();
    auto attention = cast<AttentionOp>(mapping.lookup(originalOp));
    caches.attend(
        layer, [&](const LayerRows &rows, RankedTensorType type, Value cache) {
          return attendEachChunk(attention, rows, cache, type, chunks);
        });
  }
  caches.recur(plan, mapping, chunks.positions, chunks.sequences,
               chunks.lengths);

  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  OpBuilder b(ret);
  auto lastRows = [&](OpBuilder &nb, Location l, Value rows) {
    return lastRowOfEachChunk(nb, l, rows, chunks.lengths);
  };
  Value logits = everyRow
                     ? ret.getOperand(0)
                     : pickRows(b, loc, ret.getOperand(0), ShapedType::kDynamic,
                                lastRows, valuesComputedFrom(batch, tokens));
  caches.returnWith(batch, {logits});
  pruneDeadCode(batch, std::nullopt);

  auto input = [&](InputRole role) { return InputRoleAttr::get(ctx, role); };
  batch.setArgAttr(0, kInputArgAttrName, input(InputRole::token_ids));
  batch.setArgAttr(1, kInputArgAttrName, input(InputRole::positions));
  batch.setArgAttr(2, kInputArgAttrName, input(InputRole::cache_sequences));
  batch.setArgAttr(3, kInputArgAttrName, input(InputRole::chunk_lengths));
  caches.describe(batch, plan, cacheArg);
  batch.setResultAttr(0, kOutputResultAttrName,
                      OutputRoleAttr::get(ctx, OutputRole::logits));
}
