//===- PackSequences.cpp - derive @<name>_batch over packed sequences ---===//
//
// The tfm-pack-sequences pass (see Passes.td). The analysis checks that the
// only ops that see more than one position at a time are the three that
// can be told where sequences end: position ids, attention and pooling.
// The rewrite clones the function, adds the lengths argument and hands it
// to those ops.
//
//===----------------------------------------------------------------------===//

#include "ir/TfmOps.h"
#include "passes/Passes.h"
#include "passes/PositionAnalysis.h"

#include "mlir/IR/Builders.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_PACKSEQUENCESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// The function's arguments that hold one value per token (token ids and
/// token types); empty when it has a cache or takes no token ids.
SmallVector<Value> perTokenArguments(func::FuncOp func) {
  SmallVector<Value> perToken;
  bool tokens = false;
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    if (func.getArgAttr(i, kCacheArgAttrName))
      return {};
    auto role = func.getArgAttrOfType<InputRoleAttr>(i, kInputArgAttrName);
    if (!role)
      return {};
    tokens |= role.getValue() == InputRole::token_ids;
    if (role.getValue() == InputRole::token_ids ||
        role.getValue() == InputRole::token_type_ids)
      perToken.push_back(func.getArgument(i));
    else
      return {}; // positions, slots, features: not a sequence encoder
  }
  return tokens ? perToken : SmallVector<Value>();
}

/// Why packing `func` would change what it computes, or nullptr when it
/// would not: every op that reads the tokens treats each position alone or
/// is one the lengths can be given to.
Operation *firstUnpackableOp(func::FuncOp func, ValueRange perToken,
                             std::string &why) {
  llvm::DenseSet<Value> varying = valuesComputedFrom(func, perToken);
  Operation *culprit = nullptr;
  func.walk([&](Operation *op) {
    bool readsTokens = llvm::any_of(
        op->getOperands(), [&](Value v) { return varying.contains(v); });
    if (op == func || !readsTokens || actsOnEachPosition(op) ||
        isa<func::ReturnOp>(op))
      return WalkResult::advance();
    if (auto positions = dyn_cast<PositionIdsOp>(op);
        positions && !positions.getOffset() && !positions.getLengths())
      return WalkResult::advance();
    if (auto attention = dyn_cast<AttentionOp>(op)) {
      if (attention.getCausal())
        why = "causal attention (a decoder: its batches come with caches)";
      else if (!varying.contains(attention.getKey()) ||
               !varying.contains(attention.getValue()))
        why = "attention to keys that are not the tokens' own";
      else if (attention.getRelativeBias())
        why = "attention with a relative-position bias";
      else if (!attention.getLengths())
        return WalkResult::advance();
      else
        why = "attention already over packed sequences";
    } else if (isa<SparseAttentionOp>(op)) {
      why = "Longformer's sparse attention (windows and global tokens would "
            "cross sequences)";
    } else if (auto pool = dyn_cast<PoolOp>(op)) {
      bool returned = llvm::all_of(pool->getUsers(), [](Operation *user) {
        return isa<func::ReturnOp>(user);
      });
      if (returned && !pool.getLengths())
        return WalkResult::advance();
      why = "a pooled vector that is not the result";
    } else {
      why = "an op that mixes positions";
    }
    culprit = op;
    return WalkResult::interrupt();
  });
  return culprit;
}

/// @<name>_batch: `func` with the sequence lengths as a last argument.
void buildBatch(func::FuncOp func) {
  MLIRContext *ctx = func.getContext();
  auto batch = cast<func::FuncOp>(func->clone());
  batch.setName(batchTwinName(func));
  func->getBlock()->getOperations().insertAfter(func->getIterator(), batch);
  Block &entry = batch.front();
  auto lengthsType =
      RankedTensorType::get({ShapedType::kDynamic}, IntegerType::get(ctx, 32));
  Value lengths = entry.addArgument(lengthsType, batch.getLoc());

  batch.walk([&](Operation *op) {
    if (auto positions = dyn_cast<PositionIdsOp>(op))
      positions.getLengthsMutable().assign(lengths);
    if (auto attention = dyn_cast<AttentionOp>(op))
      attention.getLengthsMutable().assign(lengths);
    if (auto pool = dyn_cast<PoolOp>(op)) {
      pool.getLengthsMutable().assign(lengths);
      // One pooled row per sequence.
      auto type = pool.getType();
      pool.getResult().setType(RankedTensorType::get(
          {ShapedType::kDynamic, type.getDimSize(0)}, type.getElementType()));
    }
  });
  SmallVector<Type> inputs(batch.getArgumentTypes());
  inputs.push_back(lengthsType);
  batch.setType(FunctionType::get(
      ctx, inputs, entry.getTerminator()->getOperandTypes()));
  batch.setArgAttr(inputs.size() - 1, kInputArgAttrName,
                   InputRoleAttr::get(ctx, InputRole::sequence_lengths));
}

struct PackSequencesPass
    : mlir::tfm::impl::PackSequencesPassBase<PackSequencesPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> packable;
    for (auto func : module.getOps<func::FuncOp>()) {
      if (!mayGetBatchTwin(module, func))
        continue;
      SmallVector<Value> perToken = perTokenArguments(func);
      if (perToken.empty())
        continue;
      std::string why;
      if (Operation *op = firstUnpackableOp(func, perToken, why)) {
        // Decoders (causal attention, recurrent layers) and Longformer's
        // classifiers are expected here; anything else is worth a word.
        bool expected =
            isa<SparseAttentionOp, CausalConv1dOp, GatedDeltaRuleOp>(op) ||
            (isa<AttentionOp>(op) && cast<AttentionOp>(op).getCausal());
        if (!expected)
          op->emitRemark() << "tfm-pack-sequences: @" << func.getSymName()
                           << " gets no batched form: " << why;
        continue;
      }
      packable.push_back(func);
    }
    for (func::FuncOp func : packable)
      buildBatch(func);
  }
};

} // namespace
