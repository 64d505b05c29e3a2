//===- RecurrentState.cpp - tfm-kv-cache's recurrent state cache --------===//
//
// Gated DeltaNet's layers (tfm.causal_conv1d, tfm.gated_delta_rule) carry
// a fixed-size state from position to position instead of keys and values.
// tfm-kv-cache keeps every such op's state in one f32 cache (CacheKind
// recurrent_state), the ops' states packed end to end: @prefill and
// @decode read a sequence's state and write the op's final state back,
// the batched entry points do so for each chunk's own sequence. A call at
// position 0 reads zeros (the op's `reset`), so a session's reset and an
// engine slot's reuse need no clearing.
//
//===----------------------------------------------------------------------===//

#include "passes/CachePlan.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "llvm/ADT/Sequence.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// The operands of a recurrent op that hold one row per position (the
/// others are weights).
SmallVector<OpOperand *> rowOperands(Operation *op) {
  if (auto conv = dyn_cast<CausalConv1dOp>(op))
    return {&conv.getInputMutable()};
  auto rule = cast<GatedDeltaRuleOp>(op);
  return {&rule.getQueryMutable(), &rule.getKeyMutable(),
          &rule.getValueMutable(), &rule.getAlphaMutable(),
          &rule.getBetaMutable()};
}

/// Points recurrent `op` at `state` (of its state type), read as zeros
/// where `reset`.
void setState(Operation *op, Value state, Value reset) {
  if (auto conv = dyn_cast<CausalConv1dOp>(op)) {
    conv.getStateMutable().assign(state);
    conv.getResetMutable().assign(reset);
    return;
  }
  auto rule = cast<GatedDeltaRuleOp>(op);
  rule.getStateMutable().assign(state);
  rule.getResetMutable().assign(reset);
}

/// One reassociation group: a flat [elements] from or to `type`.
SmallVector<ReassociationIndices> allDimensions(RankedTensorType type) {
  return {llvm::to_vector(llvm::seq<int64_t>(0, type.getRank()))};
}

} // namespace

bool mlir::tfm::isRecurrent(Operation *op) {
  return isa<CausalConv1dOp, GatedDeltaRuleOp>(op);
}

RankedTensorType mlir::tfm::recurrentStateTypeOf(const CachePlan &plan) {
  Builder b(plan.recurrent.front().op->getContext());
  return RankedTensorType::get({plan.recurrentElements}, b.getF32Type());
}

namespace {

/// Where a recurrent op's state lies in a cache: offsets, sizes and
/// strides of its elements (of a sequence's [elements], or of a row of the
/// batched [sequences, elements]).
struct StateSlice {
  SmallVector<OpFoldResult> offsets, sizes, strides;
};

/// Points recurrent `op` at its state, `at` in `states` (read as zeros
/// where `reset`), and returns `states` with the op's final state written
/// back there, built after `op`.
Value carryThrough(OpBuilder &b, Operation *op, RankedTensorType type,
                   Value states, const StateSlice &at, Value reset) {
  Location loc = op->getLoc();
  auto flat =
      RankedTensorType::get({type.getNumElements()}, type.getElementType());
  b.setInsertionPoint(op);
  Value own = tensor::ExtractSliceOp::create(b, loc, flat, states, at.offsets,
                                             at.sizes, at.strides);
  Value shaped =
      tensor::ExpandShapeOp::create(b, loc, type, own, allDimensions(type));
  setState(op, shaped, reset);
  b.setInsertionPointAfter(op);
  Value final = tensor::CollapseShapeOp::create(b, loc, flat, op->getResult(1),
                                                allDimensions(type));
  return tensor::InsertSliceOp::create(b, loc, final, states, at.offsets,
                                       at.sizes, at.strides);
}

} // namespace

Value mlir::tfm::carryRecurrentState(OpBuilder &b, Operation *op,
                                     const RecurrentSlot &slot, Value state,
                                     Value reset) {
  StateSlice at{{b.getIndexAttr(slot.offset)},
                {b.getIndexAttr(slot.stateType.getNumElements())},
                {b.getIndexAttr(1)}};
  return carryThrough(b, op, slot.stateType, state, at, reset);
}

Value mlir::tfm::recurInEachChunk(Operation *op, const RecurrentSlot &slot,
                                  Value states, Value positions,
                                  Value sequences, Value lengths) {
  OpBuilder b(op);
  Location loc = op->getLoc();
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value tokens =
      tensor::DimOp::create(b, loc, rowOperands(op).front()->get(), 0);
  Value count = lengths ? chunksOfRows(b, loc, lengths, tokens) : tokens;
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  Value init =
      tensor::EmptyOp::create(b, loc, resultType.getShape(),
                              resultType.getElementType(), ValueRange{tokens});
  // Carried: the op's rows, the states, the chunk's first token.
  auto loop = scf::ForOp::create(
      b, loc, zero, count, one, ValueRange{init, states, zero},
      [&](OpBuilder &nb, Location l, Value chunk, ValueRange carried) {
        Value first = carried[2];
        Value length = lengths ? indexAt(nb, l, lengths, chunk) : one;
        Value start = indexAt(nb, l, positions, first);
        Value sequence = indexAt(nb, l, sequences, chunk);
        Value reset =
            arith::CmpIOp::create(nb, l, arith::CmpIPredicate::eq, start, zero);
        IRMapping mapping;
        for (OpOperand *operand : rowOperands(op))
          mapping.map(operand->get(),
                      sliceRows(nb, l, operand->get(), first, length));
        Operation *clone = nb.clone(*op, mapping);
        StateSlice at{{sequence, nb.getIndexAttr(slot.offset)},
                      {nb.getIndexAttr(1),
                       nb.getIndexAttr(slot.stateType.getNumElements())},
                      {nb.getIndexAttr(1), nb.getIndexAttr(1)}};
        Value written =
            carryThrough(nb, clone, slot.stateType, carried[1], at, reset);
        Value out = insertRows(nb, l, clone->getResult(0), carried[0], first);
        Value next = arith::AddIOp::create(nb, l, first, length);
        scf::YieldOp::create(nb, l, ValueRange{out, written, next});
      });
  op->getResult(0).replaceAllUsesWith(loop.getResult(0));
  op->erase(); // @forward's final state is unused
  return loop.getResult(1);
}

void BatchedCaches::recur(const CachePlan &plan, const IRMapping &mapping,
                          Value positions, Value sequences, Value lengths) {
  for (const RecurrentSlot &slot : plan.recurrent)
    recurrent = recurInEachChunk(mapping.lookup(slot.op), slot, recurrent,
                                 positions, sequences, lengths);
}
