//===- ShardTensorParallel.cpp - Megatron's split as shard annotations ---===//
//
// The tfm-shard-tensor-parallel pass (see Passes.td). It plans which values
// are split over the ranks, by which axis, from the transformer's
// structure, then writes the plan as upstream `shard.shard` annotations on
// every tensor, the fully annotated form `shard-partition` takes.
//
// The plan starts from two kinds of seed and propagates backwards:
// - every tfm.attention's query, key and value are split by heads (axis 1),
//   and so is what computes them: rotary embeddings, KV cache reads and the
//   appends and cache arguments behind them, the projections (their weight
//   rows and bias); its result feeds projections whose input features are
//   split (row-parallel);
// - a projection fed by an activation or a gate product is the MLP's down
//   projection: row-parallel, its input split along the features, which
//   splits the activation, the product and the projections feeding them.
// Gated DeltaNet's recurrent layers (Qwen3.5, Qwen3-Next) are replicated:
// every rank runs them whole on its own copy of their state, as it runs the
// embeddings and norms, and only their attention layers and MLPs split.
// Then every op that reads a split value must be one whose parts compute
// the same thing (TfmSharding.cpp); anything else is refused, naming it.
//
//===----------------------------------------------------------------------===//

#include "ir/TfmOps.h"
#include "ir/TfmSharding.h"
#include "passes/Passes.h"
#include "passes/Returned.h"

#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/Dialect/Utils/StaticValueUtils.h"
#include "mlir/IR/Builders.h"

#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/MapVector.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_SHARDTENSORPARALLELPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

constexpr llvm::StringLiteral kGridName = "ranks";

/// Which values are split (by which axis) over the ranks; the rest are
/// replicated.
class SplitPlan {
public:
  SplitPlan(int64_t ranks) : ranks(ranks) {}

  /// Plans `func`; fails with a diagnostic naming what cannot be split.
  LogicalResult planFunction(func::FuncOp func);

  std::optional<int64_t> axisOf(Value v) const {
    auto it = split.find(v);
    return it == split.end() ? std::nullopt : std::optional(it->second);
  }
  /// Weight name -> the axis its declaration is split along.
  const llvm::MapVector<StringAttr, int64_t> &splitWeights() const {
    return weightAxis;
  }
  const llvm::SetVector<StringAttr> &partialWeights() const { return partial; }
  /// Whether the readers of `v` read it whole though it is split: the
  /// vocabulary-parallel LM head's logits, which shard-partition gathers.
  bool isGathered(Value v) const { return gathered.contains(v); }
  /// Whether `v` is computed whole on every rank though its readers read
  /// it split: each rank takes its part (shard-partition's all_slice, no
  /// communication). OLMoE's queries and keys, normed across all heads
  /// before they are split into heads.
  bool isResliced(Value v) const { return resliced.contains(v); }

  /// Picks the LM heads of `module` to split by vocabulary: projections to
  /// `vocab` logits from a whole input, whose weight nothing else reads (a
  /// head tied to the embeddings stays replicated: the embedding lookup
  /// reads the whole table).
  void chooseVocabularyHeads(ModuleOp module, int64_t vocab);

private:
  LogicalResult requireSplit(Value v, int64_t axis, Operation *reader);
  LogicalResult makeRowParallel(LinearOp linear);
  LogicalResult checkReaders(func::FuncOp func);

  int64_t ranks;
  DenseMap<Value, int64_t> split;
  DenseSet<Operation *> rowParallel;
  llvm::MapVector<StringAttr, int64_t> weightAxis;
  llvm::SetVector<StringAttr> partial;
  DenseSet<Operation *> vocabularyHeads;
  DenseSet<Value> gathered;
  DenseSet<Value> resliced;
};

/// The weight `v` is read from (through a dequantize), if it is one.
WeightOp weightBehind(Value v) {
  if (auto dequantize = v.getDefiningOp<DequantizeOp>())
    v = dequantize.getInput();
  return v.getDefiningOp<WeightOp>();
}

/// The weight a projection reads, if it reads one.
WeightOp weightOf(LinearOp linear) { return weightBehind(linear.getWeight()); }

void SplitPlan::chooseVocabularyHeads(ModuleOp module, int64_t vocab) {
  if (vocab <= 0 || vocab % ranks != 0)
    return;
  // Weight name -> whether every read of it is a head's.
  llvm::DenseMap<StringAttr, bool> onlyHeads;
  SmallVector<LinearOp> heads;
  module.walk([&](WeightOp weight) {
    StringAttr name = weight.getNameAttr().getAttr();
    bool head = !weight->use_empty();
    for (Operation *user : weight->getUsers()) {
      Operation *reader = user;
      if (isa<DequantizeOp>(user) && user->hasOneUse())
        reader = *user->getUsers().begin();
      auto linear = dyn_cast<LinearOp>(reader);
      auto type = linear ? dyn_cast<RankedTensorType>(linear.getType())
                         : RankedTensorType();
      head = linear && weightOf(linear) == weight && type &&
             type.getRank() == 2 && type.getDimSize(1) == vocab &&
             !linear.getBias() && !linear.getActivation() &&
             !linear.getGated() && isReturned(linear.getResult());
      if (!head)
        break;
      heads.push_back(linear);
    }
    auto [it, fresh] = onlyHeads.try_emplace(name, head);
    if (!fresh)
      it->second = it->second && head;
  });
  for (LinearOp head : heads)
    if (onlyHeads.lookup(weightOf(head).getNameAttr().getAttr()))
      vocabularyHeads.insert(head);
}

/// Whether keys [..., kv_heads, head_dim] (a KV cache, or an attention's
/// key operand) hold one KV head: it is replicated, each rank holding it
/// whole.
bool holdsOneHead(RankedTensorType cache) {
  return cache.getDimSize(cache.getRank() - 2) == 1;
}

/// Whether `slice` keeps all of its source's `axis`, unstrided and of
/// the same rank.
bool keepsWholeAxis(tensor::ExtractSliceOp slice, int64_t axis) {
  RankedTensorType source = slice.getSourceType();
  if (slice.getType().getRank() != source.getRank())
    return false;
  std::optional<int64_t> offset = getConstantIntValue(slice.getMixedOffsets()[axis]);
  std::optional<int64_t> size = getConstantIntValue(slice.getMixedSizes()[axis]);
  std::optional<int64_t> stride = getConstantIntValue(slice.getMixedStrides()[axis]);
  return offset == 0 && stride == 1 && size &&
         *size == source.getDimSize(axis);
}

/// Whether `linear` is an MLP's down projection, to split row-parallel:
/// its input an activation or a gate product. Two such products stay
/// replicated, and so does their projection: a Gated DeltaNet layer's
/// gated norm of the delta rule's heads (recurrent layers are replicated:
/// every rank runs them whole, on its own copy of their state), and Gemma
/// 4's gated per-layer input, whose product reads one layer's columns of
/// all layers' inputs (a slice no rank's contiguous part holds).
bool isMlpDownProjection(LinearOp linear) {
  Value input = linear.getInput();
  if (input.getDefiningOp<ActivationOp>())
    return true;
  auto product = input.getDefiningOp<MulOp>();
  if (!product)
    return false;
  return llvm::none_of(product->getOperands(), [](Value v) {
    if (auto norm = v.getDefiningOp<RmsNormOp>())
      return bool(norm.getInput().getDefiningOp<GatedDeltaRuleOp>());
    // Through the slices of rows @prefill takes of the last position.
    while (auto slice = v.getDefiningOp<tensor::ExtractSliceOp>()) {
      if (!keepsWholeAxis(slice, 1))
        return true;
      v = slice.getSource();
    }
    return false;
  });
}

/// "what" for a diagnostic: the op's name.
std::string describe(Value v) {
  if (Operation *op = v.getDefiningOp())
    return "'" + op->getName().getStringRef().str() + "'";
  return "argument " + std::to_string(cast<BlockArgument>(v).getArgNumber());
}

LogicalResult SplitPlan::requireSplit(Value v, int64_t axis,
                                      Operation *reader) {
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type || axis >= type.getRank())
    return reader->emitOpError("tensor parallelism: cannot split ")
           << describe(v) << " along axis " << axis;
  auto [it, inserted] = split.try_emplace(v, axis);
  if (!inserted) {
    if (it->second == axis)
      return success();
    return reader->emitOpError("tensor parallelism: ")
           << describe(v) << " would be split along axes " << it->second
           << " and " << axis;
  }
  int64_t size = type.getDimSize(axis);
  if (ShapedType::isDynamic(size) || size % ranks != 0)
    return reader->emitOpError("tensor parallelism over ")
           << ranks << " ranks splits " << describe(v) << " (" << type
           << ") along axis " << axis << " into equal parts, but "
           << (ShapedType::isDynamic(size)
                   ? std::string("its size is dynamic")
                   : std::to_string(size) + " is not a multiple of " +
                         std::to_string(ranks));

  if (auto arg = dyn_cast<BlockArgument>(v)) {
    auto func = dyn_cast<func::FuncOp>(arg.getOwner()->getParentOp());
    if (func && func.getArgAttr(arg.getArgNumber(), kCacheArgAttrName))
      return success(); // a cache: each rank's holds its heads
    return reader->emitOpError("tensor parallelism: argument ")
           << arg.getArgNumber() << " would be split, but only caches are";
  }
  Operation *def = v.getDefiningOp();
  if (isa<tensor::ExpandShapeOp>(def)) {
    // Rows split into heads (OLMoE's queries and keys after their norm over
    // all heads, which no rank's part can compute): computed whole, each
    // rank taking its heads.
    resliced.insert(v);
    return success();
  }
  if (auto rope = dyn_cast<RopeOp>(def))
    return requireSplit(rope.getInput(), axis, def);
  if (isa<DequantizeOp, ActivationOp, ClampOp, QuantizeRowsOp,
          DequantizeRowsOp, tensor::CastOp>(def))
    return requireSplit(def->getOperand(0), axis, def);
  if (isa<AddOp, MulOp>(def)) {
    if (failed(requireSplit(def->getOperand(0), axis, def)))
      return failure();
    return requireSplit(def->getOperand(1), axis, def);
  }
  if (auto weight = dyn_cast<WeightOp>(def)) {
    auto [entry, fresh] =
        weightAxis.insert({weight.getNameAttr().getAttr(), axis});
    if (!fresh && entry->second != axis)
      return def->emitOpError("tensor parallelism: weight '")
             << weight.getName() << "' would be split along axes "
             << entry->second << " and " << axis;
    if (partial.contains(weight.getNameAttr().getAttr()))
      return def->emitOpError("tensor parallelism: weight '")
             << weight.getName() << "' is both split and a summed bias";
    return success();
  }
  if (isa<KVCacheReadOp, KVRingReadOp>(def)) {
    // [layers, 2, capacity, kv_heads, head_dim]: heads are the next to last.
    if (axis != 1)
      return def->emitOpError("tensor parallelism splits cached keys and "
                              "values by heads only");
    Value cache = def->getOperand(0);
    if (failed(requireSplit(
            cache, cast<RankedTensorType>(cache.getType()).getRank() - 2, def)))
      return failure();
    // A ring's read also returns the new rows after the cached ones.
    if (auto ring = dyn_cast<KVRingReadOp>(def))
      if (failed(requireSplit(ring.getNewKey(), 1, def)) ||
          failed(requireSplit(ring.getNewValue(), 1, def)))
        return failure();
    return success();
  }
  if (isa<KVCacheAppendOp, KVRingAppendOp>(def)) {
    // (cache, key, value, position), a latent cache's without the value.
    Value cache = def->getOperand(0);
    if (axis != cast<RankedTensorType>(cache.getType()).getRank() - 2)
      return def->emitOpError("tensor parallelism splits a KV cache by heads "
                              "only");
    auto append = dyn_cast<KVCacheAppendOp>(def);
    Value value =
        append ? append.getValue() : cast<KVRingAppendOp>(def).getValue();
    if (failed(requireSplit(cache, axis, def)) ||
        failed(requireSplit(def->getOperand(1), 1, def)))
      return failure();
    return value ? requireSplit(value, 1, def) : success();
  }
  if (auto linear = dyn_cast<LinearOp>(def)) {
    // Column-parallel: [seq, heads, head_dim] by heads or [seq, out] by
    // features; the weight's rows (and the bias) split alike.
    if (axis != 1 || rowParallel.contains(def) || linear.getGated())
      return def->emitOpError("tensor parallelism: cannot split this "
                              "projection's output along axis ")
             << axis;
    if (failed(requireSplit(linear.getWeight(), 0, def)))
      return failure();
    if (Value bias = linear.getBias())
      return requireSplit(bias, 0, def);
    return success();
  }
  if (auto norm = dyn_cast<RmsNormOp>(def)) {
    // Each head normed alone (Qwen3's and Gemma's query and key norms):
    // the heads split, the [head_dim] gamma whole on every rank.
    auto type = cast<RankedTensorType>(norm.getType());
    if (axis >= type.getRank() - 1)
      return def->emitOpError("tensor parallelism: cannot split a norm "
                              "along the axis it normalizes");
    return requireSplit(norm.getInput(), axis, def);
  }
  if (auto perHead = dyn_cast<HeadLinearOp>(def)) {
    // Each head's own projection (MLA's absorbed query): its heads and
    // their weight rows split alike.
    if (axis != 1)
      return def->emitOpError("tensor parallelism: a per-head projection "
                              "is split by heads only");
    if (failed(requireSplit(perHead.getInput(), 1, def)))
      return failure();
    return requireSplit(perHead.getWeight(), 0, def);
  }
  if (auto join = dyn_cast<tensor::ConcatOp>(def)) {
    // Joined along another axis (MLA's query parts): each part alike.
    if (int64_t(join.getDim()) == axis)
      return def->emitOpError("tensor parallelism: cannot split a join along "
                              "the axis it joins");
    for (Value input : join.getInputs())
      if (failed(requireSplit(input, axis, def)))
        return failure();
    return success();
  }
  if (auto slice = dyn_cast<tensor::ExtractSliceOp>(def)) {
    // Columns of every head: the source split alike.
    if (!keepsWholeAxis(slice, axis))
      return def->emitOpError("tensor parallelism: a slice that cuts the "
                              "split axis ")
             << axis << " is not split";
    return requireSplit(slice.getSource(), axis, def);
  }
  return reader->emitOpError("tensor parallelism: cannot split ")
         << describe(v) << " along axis " << axis
         << " (tfmc splits attention by heads and the MLP by its features)";
}

/// Row-parallel: the input's features and the weight's columns split, the
/// bias held by rank 0 (summed once by the all-reduce).
LogicalResult SplitPlan::makeRowParallel(LinearOp linear) {
  if (!rowParallel.insert(linear).second)
    return success();
  if (linear.getGated() || linear.getActivation())
    return linear.emitOpError("tensor parallelism: a row-parallel projection "
                              "cannot have an epilogue");
  if (failed(requireSplit(linear.getInput(), 1, linear)) ||
      failed(requireSplit(linear.getWeight(), 1, linear)))
    return failure();
  Value bias = linear.getBias();
  if (!bias)
    return success();
  WeightOp weight = weightBehind(bias);
  if (!weight)
    return linear.emitOpError("tensor parallelism: the bias of a "
                              "row-parallel projection must be a weight");
  StringAttr name = weight.getNameAttr().getAttr();
  if (weightAxis.contains(name))
    return weight.emitOpError("tensor parallelism: weight '")
           << weight.getName() << "' is both split and a summed bias";
  partial.insert(name);
  return success();
}

LogicalResult SplitPlan::planFunction(func::FuncOp func) {
  // Caches hold each rank's heads ([..., kv_heads, head_dim]), whichever
  // entry point writes or reads them: what an encoder writes into a
  // cross-attention cache is split as the decoder reads it.
  for (BlockArgument arg : func.getArguments()) {
    auto cache = dyn_cast<RankedTensorType>(arg.getType());
    if (cache && cache.getRank() >= 2 &&
        func.getArgAttr(arg.getArgNumber(), kCacheArgAttrName) &&
        !holdsOneHead(cache) &&
        failed(requireSplit(arg, cache.getRank() - 2, func)))
      return failure();
  }
  WalkResult appends = func.walk([&](Operation *append) {
    if (!isa<KVCacheAppendOp, KVRingAppendOp>(append))
      return WalkResult::advance();
    Value cache = append->getResult(0);
    auto type = cast<RankedTensorType>(cache.getType());
    if (holdsOneHead(type))
      return WalkResult::advance();
    return failed(requireSplit(cache, type.getRank() - 2, append))
               ? WalkResult::interrupt()
               : WalkResult::advance();
  });
  if (appends.wasInterrupted())
    return failure();
  WalkResult seeds = func.walk([&](AttentionOp attention) {
    if (attention.getBias() || attention.getLengths()) {
      attention.emitOpError("tensor parallelism: attention with an additive "
                            "bias or packed sequences is not split yet");
      return WalkResult::interrupt();
    }
    // One KV head (multi-query attention) is replicated: every rank's
    // query heads read it whole, as vLLM replicates KV heads.
    bool oneKVHead =
        holdsOneHead(cast<RankedTensorType>(attention.getKey().getType()));
    if (failed(requireSplit(attention.getQuery(), 1, attention)) ||
        (!oneKVHead &&
         (failed(requireSplit(attention.getKey(), 1, attention)) ||
          failed(requireSplit(attention.getValue(), 1, attention)))))
      return WalkResult::interrupt();
    if (Value table = attention.getRelativeBias())
      if (failed(requireSplit(table, 1, attention)))
        return WalkResult::interrupt();
    // A head's sink goes with its head.
    if (Value sinks = attention.getSinks())
      if (failed(requireSplit(sinks, 0, attention)))
        return WalkResult::interrupt();
    split[attention.getResult()] = 1;
    // MLA's heads go through their own value projection first; Qwen3-Next's
    // and Qwen3.5's through their output gate (each head times the sigmoid
    // of its own gate columns, split with it).
    Value heads = attention.getResult();
    if (attention->hasOneUse())
      if (auto perHead = dyn_cast<HeadLinearOp>(*attention->getUsers().begin())) {
        if (failed(requireSplit(perHead.getResult(), 1, perHead)))
          return WalkResult::interrupt();
        heads = perHead.getResult();
      }
    if (heads.hasOneUse())
      if (auto gated = dyn_cast<MulOp>(*heads.getUsers().begin())) {
        if (failed(requireSplit(gated.getResult(), 1, gated)))
          return WalkResult::interrupt();
        heads = gated.getResult();
      }
    for (Operation *user : heads.getUsers()) {
      auto linear = dyn_cast<LinearOp>(user);
      if (!linear || linear.getInput() != heads) {
        user->emitOpError("tensor parallelism: reads the heads of an "
                          "attention, which only an output projection may");
        return WalkResult::interrupt();
      }
      if (failed(makeRowParallel(linear)))
        return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (seeds.wasInterrupted())
    return failure();
  WalkResult mlps = func.walk([&](LinearOp linear) {
    if (!isMlpDownProjection(linear))
      return WalkResult::advance();
    return failed(makeRowParallel(linear)) ? WalkResult::interrupt()
                                           : WalkResult::advance();
  });
  if (mlps.wasInterrupted())
    return failure();
  // The LM head split by vocabulary rows: each rank reads 1/N of it, and
  // the logits are gathered (a replicated head would be read whole by
  // every rank for every token).
  WalkResult heads = func.walk([&](LinearOp linear) {
    if (!vocabularyHeads.contains(linear) ||
        split.contains(linear.getInput()) || split.contains(linear.getResult()))
      return WalkResult::advance();
    if (failed(requireSplit(linear.getResult(), 1, linear)))
      return WalkResult::interrupt();
    gathered.insert(linear.getResult());
    return WalkResult::advance();
  });
  if (heads.wasInterrupted())
    return failure();
  return checkReaders(func);
}

/// Every reader of a split value computes on parts: an op of
/// TfmSharding.cpp whose other tensors are split alike, a row-parallel
/// projection, or the return of a cache.
LogicalResult SplitPlan::checkReaders(func::FuncOp func) {
  WalkResult result = func.walk([&](Operation *op) {
    bool readsSplit = llvm::any_of(op->getOperands(), [&](Value v) {
      return split.contains(v) && !gathered.contains(v);
    });
    if (!readsSplit)
      return WalkResult::advance();
    if (op->getParentOp() != func) {
      op->emitOpError("tensor parallelism: split values inside '")
          << op->getParentOp()->getName()
          << "' are not partitioned yet (entry points with loops over "
             "sequences: @decode_batch, @prefill_batch)";
      return WalkResult::interrupt();
    }
    if (isa<func::ReturnOp>(op) || rowParallel.contains(op))
      return WalkResult::advance();
    if (!isa<RopeOp, AttentionOp, KVCacheAppendOp, KVCacheReadOp,
             KVRingAppendOp, KVRingReadOp, LinearOp, HeadLinearOp, RmsNormOp,
             ActivationOp, ClampOp, AddOp, MulOp, DequantizeOp, QuantizeRowsOp,
             DequantizeRowsOp, tensor::CastOp, tensor::ConcatOp,
             tensor::ExtractSliceOp, tensor::DimOp>(op)) {
      op->emitOpError("tensor parallelism: cannot compute on the ranks' "
                      "parts of a split value");
      return WalkResult::interrupt();
    }
    for (Value result : op->getResults())
      if (isa<RankedTensorType>(result.getType()) && !split.contains(result)) {
        op->emitOpError("tensor parallelism: reads a split value but its "
                        "result would be whole");
        return WalkResult::interrupt();
      }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

/// shard-partition requires each op's result to have one use (its
/// annotation): index computations used twice are computed once per use
/// (CSE joins them again after partitioning).
void cloneSharedScalars(func::FuncOp func) {
  SmallVector<Operation *> ops;
  for (Operation &op : func.getBody().front())
    ops.push_back(&op);
  for (Operation *op : llvm::reverse(ops)) {
    if (op->hasTrait<OpTrait::ConstantLike>() || op->getNumRegions() ||
        op->getNumResults() != 1 ||
        isa<RankedTensorType>(op->getResultTypes()[0]))
      continue;
    SmallVector<OpOperand *> uses;
    for (OpOperand &use : op->getResult(0).getUses())
      uses.push_back(&use);
    for (OpOperand *use : llvm::drop_begin(uses)) {
      OpBuilder builder(use->getOwner());
      use->set(builder.clone(*op)->getResult(0));
    }
  }
}

/// Writes the plan as shard.shard annotations on every tensor of `func`.
class Annotator {
public:
  Annotator(func::FuncOp func, const SplitPlan &plan)
      : func(func), plan(plan), builder(func.getContext()) {}

  void run() {
    Block &body = func.getBody().front();
    builder.setInsertionPointToStart(&body);
    for (BlockArgument arg : body.getArguments())
      annotateResult(arg);
    SmallVector<Operation *> ops;
    for (Operation &op : body)
      if (!isa<shard::ShardOp, shard::ShardingOp>(op))
        ops.push_back(&op);
    for (Operation *op : ops) {
      if (op->hasTrait<OpTrait::ConstantLike>())
        continue;
      for (OpOperand &operand : op->getOpOperands())
        if (annotated(operand.get()))
          operand.set(forUsers(operand.get()));
      builder.setInsertionPointAfter(op);
      for (Value result : op->getResults())
        annotateResult(result);
    }
  }

private:
  static bool annotated(Value v) {
    auto type = dyn_cast<RankedTensorType>(v.getType());
    return type && type.getRank() > 0;
  }
  /// The planned axis of `v`, through the annotation that stands for it.
  std::optional<int64_t> planned(Value v) {
    auto it = original.find(v);
    return plan.axisOf(it == original.end() ? v : it->second);
  }
  /// The annotation `v`'s readers read (one per value: every reader wants
  /// the value as planned), right after `v`'s own.
  Value forUsers(Value annotation) {
    Value &users = readers[annotation];
    if (users)
      return users;
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointAfterValue(annotation);
    // Gathered logits are read whole: shard-partition all-gathers them.
    auto it = original.find(annotation);
    bool whole = it != original.end() && plan.isGathered(it->second);
    return users = shard::ShardOp::create(
               builder, annotation.getLoc(), annotation,
               sharding(whole ? std::nullopt : planned(annotation)),
               /*annotate_for_users=*/true);
  }
  /// `v`'s own annotation; its readers read the annotation.
  void annotateResult(Value v) {
    if (!annotated(v))
      return;
    std::optional<int64_t> axis =
        plan.isResliced(v) ? std::nullopt : plan.axisOf(v);
    auto shardOp =
        shard::ShardOp::create(builder, v.getLoc(), v, sharding(axis),
                               /*annotate_for_users=*/false);
    v.replaceAllUsesExcept(shardOp.getResult(), shardOp);
    original[shardOp.getResult()] = v;
  }
  /// One shard.sharding per axis (and one replicated), at the entry.
  Value sharding(std::optional<int64_t> axis) {
    int64_t key = axis.value_or(-1);
    auto it = shardings.find(key);
    if (it != shardings.end())
      return it->second;
    OpBuilder::InsertionGuard guard(builder);
    builder.setInsertionPointToStart(&func.getBody().front());
    SmallVector<shard::GridAxesAttr> axes;
    MLIRContext *context = func.getContext();
    if (axis) {
      for (int64_t d = 0; d < *axis; ++d)
        axes.push_back(shard::GridAxesAttr::get(context, {}));
      axes.push_back(shard::GridAxesAttr::get(context, {0}));
    } else {
      axes.push_back(shard::GridAxesAttr::get(context, {}));
    }
    auto op = shard::ShardingOp::create(
        builder, func.getLoc(), FlatSymbolRefAttr::get(context, kGridName),
        axes);
    return shardings[key] = op.getResult();
  }

  func::FuncOp func;
  const SplitPlan &plan;
  OpBuilder builder;
  DenseMap<int64_t, Value> shardings;
  DenseMap<Value, Value> original;
  DenseMap<Value, Value> readers;
};

struct ShardTensorParallelPass
    : tfm::impl::ShardTensorParallelPassBase<ShardTensorParallelPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (ranks < 2)
      return; // one process: nothing to split
    if (failed(checkModel(module)))
      return signalPassFailure();
    SplitPlan plan(ranks);
    if (auto model = module->getAttrOfType<ModelAttr>(kModelAttrName))
      plan.chooseVocabularyHeads(module, model.getVocabSize());
    SmallVector<func::FuncOp> funcs;
    for (auto func : module.getOps<func::FuncOp>())
      if (!func.isExternal())
        funcs.push_back(func);
    for (func::FuncOp func : funcs)
      if (failed(plan.planFunction(func)))
        return signalPassFailure();
    OpBuilder builder = OpBuilder::atBlockBegin(module.getBody());
    shard::GridOp::create(builder, module.getLoc(), kGridName,
                          ArrayRef<int64_t>{ranks});
    recordWeights(module, plan);
    for (func::FuncOp func : funcs) {
      cloneSharedScalars(func);
      Annotator(func, plan).run();
    }
  }

  /// The model's head counts, refused with the reason when the ranks do
  /// not divide them (before any op-level diagnostic).
  LogicalResult checkModel(ModuleOp module) {
    auto model = module->getAttrOfType<ModelAttr>(kModelAttrName);
    if (!model)
      return success();
    auto refuse = [&](StringRef what, int64_t count) {
      return module.emitError("--ranks ")
             << ranks.getValue() << ": the model's " << count << " " << what
             << " do not divide among " << ranks.getValue()
             << " ranks (tfmc splits attention by heads, KV heads included, "
                "keeping grouped-query groups whole, and replicates a single "
                "KV head only): use a number of ranks that divides "
             << count;
    };
    if (model.getNumKvHeads() != 1 && model.getNumKvHeads() % ranks != 0)
      return refuse("KV heads", model.getNumKvHeads());
    if (model.getNumHeads() % ranks != 0)
      return refuse("attention heads", model.getNumHeads());
    return success();
  }

  void recordWeights(ModuleOp module, const SplitPlan &plan) {
    MLIRContext *context = module.getContext();
    for (auto decl : module.getOps<WeightDeclOp>()) {
      StringAttr name = decl.getSymNameAttr();
      auto it = plan.splitWeights().find(name);
      if (it != plan.splitWeights().end())
        decl->setAttr(kSplitOverRanksAttrName,
                      DenseI64ArrayAttr::get(context, {it->second, ranks}));
      if (plan.partialWeights().contains(name))
        decl->setAttr(kPartialOverRanksAttrName,
                      IntegerAttr::get(IntegerType::get(context, 64), ranks));
    }
  }
};

} // namespace
