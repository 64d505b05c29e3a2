//===- DecodeBatch.cpp - @decode_batch: one step of many sequences ------===//
//
// tfm-kv-cache's batched decode step. @decode reads every weight for one
// token; a beam search or a server steps several sequences at once, and
// reading the weights once for all of them turns the step's GEMVs into
// GEMMs. @decode_batch is @forward cloned over B rows, one token per
// sequence:
//
// - every op but attention acts on each row alone (the analysis proved
//   it), so it runs on the B rows as on B positions;
// - positions come from an argument, one per row, instead of counting the
//   tokens;
// - each self-attention becomes a loop over the rows: row b appends its key
//   and value to its own sequence of the cache at its position, and attends
//   over that sequence's positions [0, position];
// - cross-attention reads the one cross cache @encode filled (beams share
//   their source): B queries against the same keys;
// - a recurrent layer (Gated DeltaNet's) steps each row's own sequence's
//   state (RecurrentState.cpp).
//
//===----------------------------------------------------------------------===//

#include "passes/CachePlan.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// Replaces self-attention `attention` ([B, heads, head_dim] queries, keys
/// and values of B rows) by a loop over the rows, each appending to and
/// attending over its own sequence of `cache` (at the layer's `rows`);
/// returns the updated cache.
Value attendEachRow(AttentionOp attention, const LayerRows &rows, Value cache,
                    RankedTensorType cacheType, Value positions,
                    Value sequences) {
  OpBuilder b(attention);
  Location loc = attention.getLoc();
  RankedTensorType type = attention.getType();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value count = tensor::DimOp::create(b, loc, attention.getQuery(), 0);
  Value init = tensor::EmptyOp::create(
      b, loc, type.getShape(), type.getElementType(), ValueRange{count});
  auto loop = scf::ForOp::create(
      b, loc, zero, count, one, ValueRange{init, cache},
      [&](OpBuilder &nb, Location l, Value row, ValueRange carried) {
        Value position = indexAt(nb, l, positions, row);
        Value sequence = indexAt(nb, l, sequences, row);
        AttendedInSequence attended =
            attendInSequence(nb, l, attention, rows, cacheType, carried[0],
                             carried[1], sequence, row, one, position);
        scf::YieldOp::create(nb, l, ValueRange{attended.out, attended.cache});
      });
  attention.getResult().replaceAllUsesWith(loop.getResult(0));
  attention.erase();
  return loop.getResult(1);
}

} // namespace

void mlir::tfm::buildDecodeBatch(func::FuncOp forward, const CachePlan &plan,
                                 int64_t capacity) {
  MLIRContext *ctx = forward.getContext();
  Location loc = forward.getLoc();
  BatchedCaches caches{layOutBatchedCache(plan, capacity)};

  IRMapping mapping;
  func::FuncOp batch = cloneForBatch(forward, "decode_batch", mapping);
  Block &entry = batch.front();
  Value tokens = entry.getArgument(plan.tokensArg);
  Value positions = entry.addArgument(tokens.getType(), loc);
  Value sequences = entry.addArgument(tokens.getType(), loc);
  unsigned cacheArg = caches.addArguments(entry, loc, plan);

  replaceCountedPositions(batch, tokens, positions);
  for (auto [layer, original] : llvm::enumerate(plan.layers)) {
    Operation *originalOp = AttentionOp(original).getOperation();
    auto attention = cast<AttentionOp>(mapping.lookup(originalOp));
    caches.attend(layer, [&](const LayerRows &rows, RankedTensorType type,
                             Value cache) {
      return attendEachRow(attention, rows, cache, type, positions, sequences);
    });
  }
  // Each row is a chunk of one token.
  caches.recur(plan, mapping, positions, sequences, /*lengths=*/Value());
  if (plan.sourceArg)
    readCrossCache(batch, mapping, plan, capacity);

  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  caches.returnWith(batch, {ret.getOperand(0)});
  pruneDeadCode(batch, plan.sourceArg);
  if (plan.sourceArg && *plan.sourceArg < cacheArg)
    --cacheArg; // the source, before it, is gone

  // tokens, positions, sequences, caches (then cross cache, encoded length).
  auto input = [&](InputRole role) { return InputRoleAttr::get(ctx, role); };
  batch.setArgAttr(0, kInputArgAttrName, input(InputRole::token_ids));
  batch.setArgAttr(1, kInputArgAttrName, input(InputRole::positions));
  batch.setArgAttr(2, kInputArgAttrName, input(InputRole::cache_sequences));
  caches.describe(batch, plan, cacheArg);
  if (plan.sourceArg) {
    unsigned cross = batch.getNumArguments() - 2;
    batch.setArgAttr(cross, kCacheArgAttrName,
                     CacheAttr::get(ctx, CacheKind::cross_attention, 0));
    batch.setArgAttr(cross + 1, kInputArgAttrName,
                     input(InputRole::encoded_length));
  }
  batch.setResultAttr(0, kOutputResultAttrName,
                      OutputRoleAttr::get(ctx, OutputRole::logits));
}
