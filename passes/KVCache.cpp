//===- KVCache.cpp - derive @prefill and @decode from @forward ----------===//
//
// The tfm-kv-cache pass (see Passes.td). The analysis first proves that
// caching is sound for every op of @forward: only attention mixes positions,
// attention is causal, and positions come from the token sequence. The
// rewrite then clones @forward into @prefill (and, where the module names
// Whisper's alignment heads, @align: AlignmentEntry.cpp), threads the cache
// through each layer's attention (where windows differ, a windowed layer's
// through its ring: layOutCache), a hybrid's recurrent layers through their
// states (RecurrentState.cpp), and keeps only the last position's logits
// (sliced before the final norm and LM head, which act row by row); @decode
// calls @prefill with one token.
//
//===----------------------------------------------------------------------===//

#include "ir/TfmOps.h"
#include "passes/CachePlan.h"
#include "passes/Passes.h"
#include "passes/PositionAnalysis.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/Transforms/RegionUtils.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Debug.h"


#define DEBUG_TYPE "tfm-kv-cache"

namespace mlir::tfm {
#define GEN_PASS_DEF_KVCACHEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// The values of `func` that vary with the positions: its tokens (the
/// decoder's, in an encoder-decoder) and everything computed from them.
/// The rest (weights, constants, joins of weights, an encoder's output) is
/// the same for every position.
llvm::DenseSet<Value> positionVaryingValues(func::FuncOp func,
                                           unsigned tokensArg) {
  return valuesComputedFrom(func, func.getArgument(tokensArg));
}

/// @forward(tokens) of a decoder, or @forward(source, decoder ids) of an
/// encoder-decoder (by their tfm.input roles): which argument is which.
LogicalResult findTokenArguments(func::FuncOp forward, CachePlan &plan) {
  FunctionType type = forward.getFunctionType();
  auto isIds = [&](unsigned i) {
    auto t = dyn_cast<RankedTensorType>(type.getInput(i));
    return t && t.getRank() == 1 && t.getElementType().isInteger();
  };
  auto role = [&](unsigned i) {
    auto attr = forward.getArgAttrOfType<InputRoleAttr>(i, kInputArgAttrName);
    return attr ? std::optional<InputRole>(attr.getValue()) : std::nullopt;
  };
  if (type.getNumResults() == 1 && type.getNumInputs() == 1 && isIds(0))
    return success();
  // The source: token ids, or a speech model's features.
  auto isSource = [&](unsigned i) {
    return (isIds(i) && role(i) == InputRole::token_ids) ||
           role(i) == InputRole::features;
  };
  if (type.getNumResults() == 1 && type.getNumInputs() == 2) {
    for (unsigned i : {0u, 1u})
      if (isIds(i) && role(i) == InputRole::decoder_token_ids &&
          isSource(1 - i)) {
        plan.tokensArg = i;
        plan.sourceArg = 1 - i;
        return success();
      }
  }
  return forward.emitOpError(
      "expected @forward(tokens: tensor<?xiN>) -> logits, or an "
      "encoder-decoder's @forward(source ids or features, decoder ids), for "
      "a KV cache");
}

/// Records a cross-attention op: keys and values from the source alone.
LogicalResult planCrossAttention(AttentionOp attention, CachePlan &plan) {
  if (!plan.sourceArg)
    return attention.emitOpError(
        "cannot cache attention to keys that are not the tokens' own");
  if (attention.getCausal() || attention.getBias() ||
      attention.getRelativeBias() || attention.getLengths())
    return attention.emitOpError(
        "cannot cache cross-attention that is causal, biased or packed");
  RankedTensorType keyType = attention.getKey().getType();
  if (attention.getValue().getType() != keyType ||
      (plan.crossKeyType && plan.crossKeyType != keyType))
    return attention.emitOpError()
           << "cannot cache cross-attention keys of type " << keyType
           << " beside values or earlier layers of another type";
  plan.crossKeyType = keyType;
  plan.crossLayers.push_back(attention);
  return success();
}

/// Records a recurrent op: its state at the end of the recurrent cache.
LogicalResult planRecurrent(Operation *op, CachePlan &plan) {
  auto stateType = cast<RankedTensorType>(op->getResult(1).getType());
  if ((isa<CausalConv1dOp>(op) && cast<CausalConv1dOp>(op).getState()) ||
      (isa<GatedDeltaRuleOp>(op) && cast<GatedDeltaRuleOp>(op).getState()))
    return op->emitOpError("cannot cache a recurrent op that is given a "
                           "state already");
  if (!stateType.getElementType().isF32())
    return op->emitOpError() << "cannot cache a recurrent state of type "
                             << stateType << " (the cache keeps f32)";
  plan.recurrent.push_back({op, plan.recurrentElements, stateType});
  plan.recurrentElements += stateType.getNumElements();
  return success();
}

/// Records which earlier layer `attention` shares its keys and values
/// with (the same SSA values), if any; one of another window is refused
/// (its cached rows would not be what it sees).
LogicalResult planSource(AttentionOp attention, CachePlan &plan) {
  int64_t source = -1;
  for (auto [layer, earlier] : llvm::enumerate(plan.layers)) {
    AttentionOp other = earlier;
    if (other.getKey() != attention.getKey() &&
        other.getValue() != attention.getValue())
      continue;
    if (other.getKey() != attention.getKey() ||
        other.getValue() != attention.getValue() ||
        other.getWindow() != attention.getWindow())
      return attention.emitOpError()
             << "cannot cache attention that shares layer " << layer
             << "'s keys or values but not both, or not its window";
    source = plan.sources[layer] >= 0 ? plan.sources[layer] : int64_t(layer);
    break;
  }
  plan.sources.push_back(source);
  return success();
}

/// The cache's key type, and where layers' keys differ, the windowed
/// layers' (CachePlan::ringKeyType): every windowed layer's keys of one
/// type and every other layer's of another, or the first layer that breaks
/// that is refused.
LogicalResult planKeyTypes(CachePlan &plan) {
  auto isWindowed = [](AttentionOp attention) {
    return attention.getWindow().has_value();
  };
  RankedTensorType windowed, whole;
  bool differ = false;
  for (AttentionOp attention : plan.layers) {
    RankedTensorType type = attention.getKey().getType();
    RankedTensorType &same = isWindowed(attention) ? windowed : whole;
    if (same && same != type)
      return attention.emitOpError()
             << "cannot cache keys of type " << type << " beside "
             << (isWindowed(attention) ? "windowed" : "unwindowed")
             << " layers' of type " << same
             << " (layers' keys may differ only between windowed layers and "
                "the others)";
    same = type;
    RankedTensorType other = isWindowed(attention) ? whole : windowed;
    differ |= other && other != type;
  }
  plan.keyType = whole ? whole : windowed;
  if (!differ)
    return success();
  if (plan.sourceArg)
    return AttentionOp(plan.layers.front())
        .emitOpError("cannot cache an encoder-decoder's layers of two key "
                     "types");
  plan.ringKeyType = windowed;
  return success();
}

/// Says what each argument of @prefill or @decode is: tokens at a start
/// position, written to the cache from a slot on, and the cache itself,
/// state that codegen updates in place (then the windowed layers' rings
/// where their keys are of another type, and a hybrid's recurrent states);
/// for an encoder-decoder then the
/// read-only cross-attention cache @encode filled and how many source
/// positions it holds. A window shared by every layer is the cache's: the
/// runtime may then drop positions no query can see. `ringRows`: where the
/// windowed layers' rings stand apart, the rows each of them has where
/// they are alike (uniformRing, 0 where not): the runtime then keeps the
/// rows a speculative step overwrites, to put back those of rejected
/// drafts.
void describeArguments(func::FuncOp func, const CachePlan &plan,
                       std::optional<int64_t> ringRows) {
  MLIRContext *ctx = func.getContext();
  int64_t window = sharedWindow(plan);
  func.setArgAttr(0, kInputArgAttrName,
                  InputRoleAttr::get(ctx, InputRole::token_ids));
  func.setArgAttr(1, kInputArgAttrName,
                  InputRoleAttr::get(ctx, InputRole::start_position));
  func.setArgAttr(2, kInputArgAttrName,
                  InputRoleAttr::get(ctx, InputRole::cache_slot));
  func.setArgAttr(3, kCacheArgAttrName,
                  CacheAttr::get(ctx, CacheKind::self_attention, window));
  unsigned next = 4;
  if (ringRows)
    func.setArgAttr(
        next++, kCacheArgAttrName,
        CacheAttr::get(ctx, CacheKind::self_attention_rings, *ringRows));
  if (!plan.recurrent.empty())
    func.setArgAttr(next, kCacheArgAttrName,
                    CacheAttr::get(ctx, CacheKind::recurrent_state, 0));
  if (plan.sourceArg) {
    func.setArgAttr(4, kCacheArgAttrName,
                    CacheAttr::get(ctx, CacheKind::cross_attention, 0));
    func.setArgAttr(5, kInputArgAttrName,
                    InputRoleAttr::get(ctx, InputRole::encoded_length));
  }
  func.setResultAttr(0, kOutputResultAttrName,
                     OutputRoleAttr::get(ctx, OutputRole::logits));
}

/// @prefill, or with `everyRow` @verify: the same calls, every position's
/// logits returned (a speculative step's drafted tokens checked at once).
func::FuncOp buildPrefill(func::FuncOp forward, const CachePlan &plan,
                          int64_t capacity, bool everyRow = false) {
  MLIRContext *ctx = forward.getContext();
  Location loc = forward.getLoc();
  CacheLayout layout = layOutCache(plan, capacity);
  auto cacheType = selfCacheTypeOf(plan, capacity, layout.planes);

  // Clone @forward; map its attention ops onto the clone's.
  IRMapping mapping;
  auto prefill = cast<func::FuncOp>(forward->clone(mapping));
  prefill.setName(everyRow ? "verify" : "prefill");
  forward->getBlock()->getOperations().insertAfter(forward->getIterator(),
                                                   prefill);
  Block &entry = prefill.front();
  Value tokens = entry.getArgument(plan.tokensArg);
  // `start` is the position of the first token (positions, RoPE); `slot`
  // where its keys go in the cache. They differ once the runtime has slid
  // a windowed model's cache (dropped positions no query can see).
  Value start = entry.addArgument(IndexType::get(ctx), loc);
  Value slot = entry.addArgument(IndexType::get(ctx), loc);
  Value cache = entry.addArgument(cacheType, loc);
  // The windowed layers' rings, where their keys have a type of their own.
  RankedTensorType ringType =
      layout.ringPlanes
          ? ringCacheTypeOf(plan, layout.ringRows, layout.ringPlanes)
          : RankedTensorType();
  Value rings = ringType ? entry.addArgument(ringType, loc) : Value();
  // The recurrent layers' states, after the caches (a decoder's only).
  Value state = plan.recurrent.empty()
                    ? Value()
                    : entry.addArgument(recurrentStateTypeOf(plan), loc);

  OpBuilder b(ctx);
  b.setInsertionPointToStart(&entry);
  Value rows = tensor::DimOp::create(b, loc, tokens, 0);
  Value end = arith::AddIOp::create(b, loc, slot, rows);
  // A sequence's first call starts its recurrent layers from zeros.
  Value reset =
      arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, start,
                            arith::ConstantIndexOp::create(b, loc, 0));

  prefill.walk([&](PositionIdsOp op) {
    if (op.getTokens() == tokens)
      op.getOffsetMutable().assign(start);
  });
  SmallVector<CachedKeysAndValues> cachedOf;
  for (auto [layer, original] : llvm::enumerate(plan.layers)) {
    Operation *originalOp = AttentionOp(original).getOperation();
    auto attention = cast<AttentionOp>(mapping.lookup(originalOp));
    b.setInsertionPoint(attention);
    LayerRows rows = layout.layers[layer];
    if (rows.source >= 0) {
      // What its source appended and read, this call's rows included.
      CachedKeysAndValues shared = cachedOf[rows.source];
      cachedOf.push_back(shared);
      attendToCached(b, attention.getLoc(), attention, shared.keys,
                     shared.values);
      continue;
    }
    RowsToCache own = rowsToCache(attention);
    Value &held = rows.ring ? rings : cache;
    RankedTensorType heldType = rows.ring ? ringType : cacheType;
    CachedKeysAndValues cached =
        rows.ring ? appendAndReadRing(b, attention.getLoc(), heldType, held,
                                      own.keys, own.values, start, rows)
                  : appendAndRead(b, attention.getLoc(), heldType, held,
                                  own.keys, own.values, slot, end, rows.plane);
    held = cached.cache;
    cachedOf.push_back(cached);
    attendToCached(b, attention.getLoc(), attention, cached.keys,
                   cached.values);
  }
  for (const RecurrentSlot &slot : plan.recurrent)
    state = carryRecurrentState(b, mapping.lookup(slot.op), slot, state, reset);
  if (plan.sourceArg)
    readCrossCache(prefill, mapping, plan, capacity);

  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  b.setInsertionPoint(ret);
  Value last = arith::SubIOp::create(
      b, loc, rows, arith::ConstantIndexOp::create(b, loc, 1));
  auto lastRow = [&](OpBuilder &nb, Location l, Value rows) {
    return sliceRows(nb, l, rows, last, nb.getIndexAttr(1));
  };
  Value logits = everyRow
                     ? ret.getOperand(0)
                     : pickRows(b, loc, ret.getOperand(0), 1, lastRow,
                                positionVaryingValues(prefill, plan.tokensArg));
  SmallVector<Value> results{logits, cache};
  if (rings)
    results.push_back(rings);
  if (state)
    results.push_back(state);
  ret->setOperands(results);
  prefill.setType(FunctionType::get(ctx, entry.getArgumentTypes(),
                                    ValueRange(results).getTypes()));
  // The full-sequence head is dead now, and so is an encoder's work.
  pruneDeadCode(prefill, plan.sourceArg);
  describeArguments(prefill, plan,
                    rings ? std::optional<int64_t>(uniformRing(layout.layers))
                          : std::nullopt);
  LLVM_DEBUG(llvm::dbgs() << "cache " << cacheType << " for "
                          << plan.layers.size() << " layers\n");
  return prefill;
}

/// The encoder's output: the rows every cross-attention projects its keys
/// and values from, or null when they are not one value.
Value encoderOutput(const CachePlan &plan) {
  Value output;
  for (AttentionOp attention : plan.crossLayers)
    for (Value projected :
         {Value(attention.getKey()), Value(attention.getValue())}) {
      auto linear = projected.getDefiningOp<LinearOp>();
      if (!linear || (output && linear.getInput() != output))
        return Value();
      output = linear.getInput();
    }
  return output;
}

/// An encoder-decoder's @encode(source, cross cache) -> (encoder output,
/// cross cache): the encoder, then every decoder layer's cross-attention
/// keys and values of the source, written to the cross cache from position
/// 0. Run once per input; @prefill and @decode then read them.
LogicalResult buildEncode(func::FuncOp forward, const CachePlan &plan,
                          int64_t capacity) {
  Value output = encoderOutput(plan);
  if (!output)
    return AttentionOp(plan.crossLayers.front()).emitOpError(
        "cannot find the encoder's output: cross-attention keys and values "
        "are not projections of one value");
  MLIRContext *ctx = forward.getContext();
  Location loc = forward.getLoc();
  auto crossType = cacheTypeOf(plan.crossKeyType, plan.crossLayers.size(),
                               crossCapacity(plan, capacity));
  IRMapping mapping;
  auto encode = cast<func::FuncOp>(forward->clone(mapping));
  encode.setName("encode");
  forward->getBlock()->getOperations().insertAfter(forward->getIterator(),
                                                   encode);
  Block &entry = encode.front();
  Value cache = entry.addArgument(crossType, loc);
  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  OpBuilder b(ret);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  for (auto [layer, original] : llvm::enumerate(plan.crossLayers)) {
    Operation *originalOp = AttentionOp(original).getOperation();
    auto attention = cast<AttentionOp>(mapping.lookup(originalOp));
    cache = KVCacheAppendOp::create(b, attention.getLoc(), crossType, cache,
                                    attention.getKey(), attention.getValue(),
                                    zero, b.getI64IntegerAttr(layer));
  }
  Value hidden = mapping.lookup(output);
  ret->setOperands({hidden, cache});
  encode.setType(FunctionType::get(ctx, entry.getArgumentTypes(),
                                   {hidden.getType(), crossType}));
  // The decoder is dead now; so are its ids.
  pruneDeadCode(encode, plan.tokensArg);
  encode.setArgAttr(0, kInputArgAttrName,
                    forward.getArgAttr(*plan.sourceArg, kInputArgAttrName));
  encode.setArgAttr(1, kCacheArgAttrName,
                    CacheAttr::get(ctx, CacheKind::cross_attention, 0));
  encode.setResultAttr(0, kOutputResultAttrName,
                       OutputRoleAttr::get(ctx, OutputRole::hidden_states));
  return success();
}

/// @decode(token: tensor<1xi32>, position, slot, cache, ...): @prefill of
/// one token.
void buildDecode(func::FuncOp prefill, const CachePlan &plan) {
  MLIRContext *ctx = prefill.getContext();
  Location loc = prefill.getLoc();
  FunctionType prefillType = prefill.getFunctionType();
  auto tokensType = cast<RankedTensorType>(prefillType.getInput(0));
  auto tokenType = RankedTensorType::get({1}, tokensType.getElementType());
  SmallVector<Type> inputs(prefillType.getInputs());
  inputs[0] = tokenType;
  OpBuilder b(ctx);
  b.setInsertionPointAfter(prefill);
  auto decode = func::FuncOp::create(
      b, loc, "decode", FunctionType::get(ctx, inputs, prefillType.getResults()));
  Block *entry = decode.addEntryBlock();
  b.setInsertionPointToStart(entry);
  SmallVector<Value> arguments(entry->getArguments());
  arguments[0] =
      tensor::CastOp::create(b, loc, tokensType, entry->getArgument(0));
  auto call = func::CallOp::create(b, loc, prefill, arguments);
  func::ReturnOp::create(b, loc, call.getResults());
  auto rings = prefill.getNumArguments() > 4
                   ? prefill.getArgAttrOfType<CacheAttr>(4, kCacheArgAttrName)
                   : CacheAttr();
  describeArguments(decode, plan,
                    rings && rings.getKind() == CacheKind::self_attention_rings
                        ? std::optional<int64_t>(rings.getWindow())
                        : std::nullopt);
}

struct KVCachePass : mlir::tfm::impl::KVCachePassBase<KVCachePass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    if (!forward) {
      module.emitError("tfm-kv-cache: no @forward function to derive "
                       "@prefill and @decode from");
      return signalPassFailure();
    }
    for (StringRef name : {"prefill", "decode", "decode_batch", "prefill_batch",
                           "verify", "verify_batch"})
      if (Operation *existing = module.lookupSymbol(name)) {
        existing->emitOpError() << "tfm-kv-cache: @" << name
                                << " already exists";
        return signalPassFailure();
      }
    int64_t capacity = maxContext;
    if (capacity == 0)
      if (auto model = module->getAttrOfType<ModelAttr>(kModelAttrName))
        capacity = model.getMaxContext();
    if (capacity <= 0) {
      forward.emitOpError() << "tfm-kv-cache needs a positive capacity: set "
                               "max-context or the module's "
                            << kModelAttrName;
      return signalPassFailure();
    }
    Builder types(&getContext());
    Type storedRows = llvm::StringSwitch<Type>(kvDtype)
                          .Case("f32", Type())
                          .Case("bf16", types.getBF16Type())
                          .Case("f16", types.getF16Type())
                          .Case("int8", types.getI8Type())
                          .Default(types.getNoneType());
    if (isa_and_nonnull<NoneType>(storedRows)) {
      module.emitError() << "tfm-kv-cache: unknown kv-dtype '" << kvDtype
                         << "' (expected f32, bf16, f16 or int8)";
      return signalPassFailure();
    }
    FailureOr<CachePlan> plan = planCache(forward);
    if (failed(plan))
      return signalPassFailure();
    plan->storedRows = storedRows;
    if (plan->sourceArg && plan->crossLayers.empty()) {
      forward.emitOpError("tfm-kv-cache: an encoder-decoder without "
                          "cross-attention");
      return signalPassFailure();
    }
    if (plan->sourceArg && module.lookupSymbol("encode")) {
      module.lookupSymbol("encode")->emitOpError(
          "tfm-kv-cache: @encode already exists");
      return signalPassFailure();
    }
    if (plan->sourceArg && failed(buildEncode(forward, *plan, capacity)))
      return signalPassFailure();
    // Whisper's word timestamps: the alignment heads' weights.
    auto model = module->getAttrOfType<ModelAttr>(kModelAttrName);
    GenerationAttr generation = model ? model.getGeneration() : nullptr;
    if (align && plan->sourceArg && generation &&
        generation.getAlignmentHeads()) {
      if (module.lookupSymbol("align")) {
        module.lookupSymbol("align")->emitOpError(
            "tfm-kv-cache: @align already exists");
        return signalPassFailure();
      }
      if (failed(buildAlign(forward, *plan, capacity,
                            generation.getAlignmentHeads().asArrayRef())))
        return signalPassFailure();
    }
    buildDecode(buildPrefill(forward, *plan, capacity), *plan);
    if (verify) {
      // Rejected drafts are dropped by shortening the cache, which keeps
      // the rows before them; a ring's rows they overwrote the runtime
      // kept and puts back (its rings' window); recurrent states it kept
      // before the call, and runs the drafts it accepts again from them.
      // An encoder-decoder's generation drafts nothing yet.
      if (plan->sourceArg) {
        forward.emitOpError() << "tfm-kv-cache: no @verify for speculative "
                                 "decoding of an encoder-decoder's decoder "
                                 "(decoder-only models have one)";
        return signalPassFailure();
      }
      buildPrefill(forward, *plan, capacity, /*everyRow=*/true);
    }
    if (decodeBatch)
      buildDecodeBatch(forward, *plan, capacity);
    if (prefillBatch && !plan->sourceArg) {
      buildPrefillBatch(forward, *plan, capacity);
      if (verify)
        buildPrefillBatch(forward, *plan, capacity, /*everyRow=*/true);
    }
    // A vision-language model's image rows in place of embeddings, for
    // sessions and the engine.
    if (module->hasAttr(kImageTokenAttrName))
      for (StringRef name : {"prefill", "prefill_batch"}) {
        auto from = module.lookupSymbol<func::FuncOp>(name);
        if (!from)
          continue;
        if (Operation *existing =
                module.lookupSymbol((name + "_embeddings").str())) {
          existing->emitOpError()
              << "tfm-kv-cache: @" << name << "_embeddings already exists";
          return signalPassFailure();
        }
        if (failed(buildPrefillEmbeddings(from, *plan)))
          return signalPassFailure();
      }
  }
};

} // namespace

FailureOr<CachePlan> mlir::tfm::planCache(func::FuncOp forward) {
  CachePlan plan;
  if (failed(findTokenArguments(forward, plan)))
    return failure();
  Value tokens = forward.getArgument(plan.tokensArg);
  llvm::DenseSet<Value> varying =
      positionVaryingValues(forward, plan.tokensArg);
  WalkResult walk = forward.walk([&](Operation *op) -> WalkResult {
    // What reads no position-varying value is computed alike either way;
    // a position-wise op may run on the new positions alone.
    bool readsPositions = llvm::any_of(
        op->getOperands(), [&](Value v) { return varying.contains(v); });
    if (op == forward || isa<func::ReturnOp>(op) || !readsPositions ||
        actsOnEachPosition(op))
      return WalkResult::advance();
    // A recurrent op is causal, and a fixed-size state sums up the past.
    if (isRecurrent(op)) {
      if (failed(planRecurrent(op, plan)))
        return WalkResult::interrupt();
      return WalkResult::advance();
    }
    if (auto positions = dyn_cast<PositionIdsOp>(op)) {
      if (positions.getTokens() != tokens || positions.getOffset() ||
          positions.getPaddingId()) {
        op->emitOpError("cannot cache: positions that do not count the "
                        "tokens of @forward from 0");
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    }
    if (auto attention = dyn_cast<AttentionOp>(op)) {
      if (!varying.contains(attention.getKey()) &&
          !varying.contains(attention.getValue()))
        return failed(planCrossAttention(attention, plan))
                   ? WalkResult::interrupt()
                   : WalkResult::advance();
      if (!attention.getCausal()) {
        op->emitOpError("cannot cache bidirectional attention: a new token "
                        "would change the past positions' outputs");
        return WalkResult::interrupt();
      }
      // A relative_bias depends on distances alone, which a cached step
      // keeps; an arbitrary bias would need its rows for the new positions.
      if (attention.getBias()) {
        op->emitOpError("cannot cache attention with an additive bias");
        return WalkResult::interrupt();
      }
      RankedTensorType keyType = attention.getKey().getType();
      bool latent = latentValueWidth(attention).has_value();
      if (!plan.layers.empty() && latent != plan.latent) {
        op->emitOpError("cannot cache latent attention beside attention "
                        "with keys and values of its own (a latent cache "
                        "keeps one plane a layer)");
        return WalkResult::interrupt();
      }
      plan.latent = latent;
      if (latent && attention.getWindow()) {
        op->emitOpError("cannot cache windowed latent attention (a ring "
                        "keeps keys and values of their own)");
        return WalkResult::interrupt();
      }
      if (!latent && attention.getValue().getType() != keyType) {
        op->emitOpError() << "cannot cache values of type "
                          << attention.getValue().getType()
                          << " beside keys of type " << keyType;
        return WalkResult::interrupt();
      }
      if (failed(planSource(attention, plan)))
        return WalkResult::interrupt();
      plan.layers.push_back(attention);
      return WalkResult::advance();
    }
    op->emitOpError("cannot cache through an op that is not position-wise "
                    "(Tfm_PositionWise, or a slice keeping every row)");
    return WalkResult::interrupt();
  });
  if (walk.wasInterrupted())
    return failure();
  if (plan.layers.empty())
    return forward.emitOpError("has no attention to cache");
  if (failed(planKeyTypes(plan)))
    return failure();
  if (!plan.recurrent.empty() && plan.sourceArg)
    return plan.recurrent.front().op->emitOpError(
        "cannot cache a recurrent layer of an encoder-decoder's decoder");
  return plan;
}

RankedTensorType mlir::tfm::cacheTypeOf(RankedTensorType keyType, size_t layers,
                                        int64_t capacity, bool keysOnly) {
  return RankedTensorType::get({int64_t(layers), keysOnly ? 1 : 2, capacity,
                                keyType.getDimSize(1), keyType.getDimSize(2)},
                               keyType.getElementType());
}

/// The cache of `planes` planes of `rows` rows of keys of `keyType`, in
/// the plan's stored row type.
static RankedTensorType storedCacheTypeOf(const CachePlan &plan,
                                          RankedTensorType keyType,
                                          int64_t rows, int64_t planes) {
  RankedTensorType f32 = cacheTypeOf(keyType, planes, rows, plan.latent);
  if (!plan.storedRows)
    return f32;
  SmallVector<int64_t> shape(f32.getShape());
  if (plan.storedRows.isInteger(8))
    shape.back() += QuantizeRowsOp::kScaleBytes;
  return RankedTensorType::get(shape, plan.storedRows);
}

RankedTensorType mlir::tfm::selfCacheTypeOf(const CachePlan &plan,
                                            int64_t capacity,
                                            std::optional<int64_t> planes) {
  return storedCacheTypeOf(plan, plan.keyType, capacity,
                           planes ? *planes : plan.layers.size());
}

RankedTensorType mlir::tfm::ringCacheTypeOf(const CachePlan &plan,
                                            int64_t rows, int64_t planes) {
  return storedCacheTypeOf(
      plan, plan.ringKeyType ? plan.ringKeyType : plan.keyType, rows, planes);
}

Value mlir::tfm::pickRows(
    OpBuilder &b, Location loc, Value value, int64_t rows,
    llvm::function_ref<Value(OpBuilder &, Location, Value)> pick,
    const llvm::DenseSet<Value> &varying) {
  auto type = cast<RankedTensorType>(value.getType());
  auto pickedType =
      RankedTensorType::get({rows, type.getDimSize(1)}, type.getElementType());
  Operation *producer = value.getDefiningOp();
  auto isRows = [&](Value v) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    return !varying.contains(v) || (t && t.getRank() == 2);
  };
  // Ops that compute each row alone: position-wise tfm ops, and those
  // after a vocabulary-parallel head (the gather of its logits' columns,
  // a cast), which then gather the picked rows only. Not a write of all
  // rows or none: the rows written may be none to pick (a layer a pipeline
  // stage does not run).
  bool eachRowAlone = producer && actsOnEachPosition(producer) &&
                      !isa<tensor::DimOp, tensor::ExtractSliceOp, LoraOp,
                           tensor::InsertSliceOp>(producer);
  if (eachRowAlone && producer->hasOneUse() && producer->getNumResults() == 1 &&
      llvm::all_of(producer->getOperands(), isRows)) {
    IRMapping mapping;
    for (Value operand : producer->getOperands())
      if (varying.contains(operand))
        mapping.map(operand, pickRows(b, loc, operand, rows, pick, varying));
    Operation *picked = b.clone(*producer, mapping);
    picked->getResult(0).setType(pickedType);
    return picked->getResult(0);
  }
  return pick(b, loc, value);
}

int64_t mlir::tfm::crossCapacity(const CachePlan &plan, int64_t capacity) {
  int64_t rows = plan.crossKeyType.getDimSize(0);
  return ShapedType::isDynamic(rows) ? capacity : rows;
}

CacheLayout mlir::tfm::layOutCache(const CachePlan &plan, int64_t capacity) {
  CacheLayout layout;
  auto windowOf = [&](AttentionOp attention) {
    int64_t window = attention.getWindow().value_or(0);
    return window < capacity ? window : 0;
  };
  // Rings where windows differ and some layer keeps every position (with
  // every layer windowed, each keeps its positions in a plane: the runtime
  // bounds them by the capacity); where the windowed layers' keys have a
  // type of their own, for every windowed layer.
  auto ringOf = [&](AttentionOp attention) -> int64_t {
    if (plan.ringKeyType)
      return attention.getWindow()
                 ? std::min(int64_t(*attention.getWindow()), capacity)
                 : 0;
    return windowOf(attention);
  };
  bool rings =
      plan.ringKeyType ||
      (sharedWindow(plan) == 0 &&
       llvm::any_of(plan.layers,
                    [&](AttentionOp attention) { return ringOf(attention); }) &&
       llvm::any_of(plan.layers,
                    [&](AttentionOp attention) { return !ringOf(attention); }));
  for (auto [layer, planned] : llvm::enumerate(plan.layers)) {
    AttentionOp attention = planned;
    LayerRows rows;
    if (plan.sources[layer] >= 0) {
      rows.source = plan.sources[layer]; // placed with its source below
    } else if (int64_t ring = rings ? ringOf(attention) : 0) {
      rows.ring = ring;
      rows.plane = layout.ringPlanes++;
      layout.ringRows = std::max(layout.ringRows, ring);
    } else {
      rows.plane = layout.planes++;
    }
    layout.layers.push_back(rows);
  }
  shareSourcesRows(layout.layers);
  return layout;
}

void mlir::tfm::shareSourcesRows(SmallVectorImpl<LayerRows> &layers) {
  for (auto [layer, rows] : llvm::enumerate(layers)) {
    if (rows.source < 0)
      continue;
    LayerRows &source = layers[rows.source];
    int64_t from = rows.source;
    rows = source;
    rows.source = from;
    // A ring's last reader appends: the others read it before the rows
    // they see are dropped.
    if (rows.ring) {
      for (LayerRows &other : layers)
        if (&other != &rows && (&other == &source || other.source == from))
          other.appends = false;
      rows.appends = true;
    } else {
      rows.appends = false;
    }
  }
}

int64_t mlir::tfm::uniformRing(ArrayRef<LayerRows> layers) {
  int64_t ring = 0;
  for (const LayerRows &rows : layers) {
    if (!rows.ring)
      continue;
    if (ring && ring != rows.ring)
      return 0;
    ring = rows.ring;
  }
  return ring;
}

int64_t mlir::tfm::sharedWindow(const CachePlan &plan) {
  std::optional<int64_t> window;
  for (AttentionOp attention : plan.layers) {
    int64_t own = attention.getWindow().value_or(0);
    if (window && *window != own)
      return 0;
    window = own;
  }
  return window.value_or(0);
}

void mlir::tfm::readCrossCache(func::FuncOp clone, const IRMapping &mapping,
                               const CachePlan &plan, int64_t capacity) {
  MLIRContext *ctx = clone.getContext();
  Location loc = clone.getLoc();
  Block &entry = clone.front();
  auto crossType = cacheTypeOf(plan.crossKeyType, plan.crossLayers.size(),
                               crossCapacity(plan, capacity));
  Value cross = entry.addArgument(crossType, loc);
  Value encoded = entry.addArgument(IndexType::get(ctx), loc);
  OpBuilder b(ctx);
  for (auto [layer, original] : llvm::enumerate(plan.crossLayers)) {
    Operation *originalOp = AttentionOp(original).getOperation();
    auto attention = cast<AttentionOp>(mapping.lookup(originalOp));
    b.setInsertionPoint(attention);
    auto read = KVCacheReadOp::create(
        b, attention.getLoc(), TypeRange{plan.crossKeyType, plan.crossKeyType},
        cross, encoded, b.getI64IntegerAttr(layer));
    attention.getKeyMutable().assign(read.getKey());
    attention.getValueMutable().assign(read.getValue());
  }
}

void mlir::tfm::pruneDeadCode(func::FuncOp func,
                              std::optional<unsigned> unused) {
  IRRewriter rewriter(func.getContext());
  (void)runRegionDCE(rewriter, func.getBody());
  if (unused)
    (void)func.eraseArgument(*unused);
}
