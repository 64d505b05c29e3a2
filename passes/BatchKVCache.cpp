//===- BatchKVCache.cpp - @decode_batch and @prefill_batch, derived later -===//
//
// The tfm-batch-kv-cache pass (see Passes.td): tfm-kv-cache's batched
// entry points for a module whose @prefill is already there. A model split
// over ranks runs it after its partition, on each rank's @forward.
//
//===----------------------------------------------------------------------===//

#include "passes/CachePlan.h"
#include "passes/Passes.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_BATCHKVCACHEPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

struct BatchKVCachePass
    : mlir::tfm::impl::BatchKVCachePassBase<BatchKVCachePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    for (StringRef name : {"decode_batch", "prefill_batch"})
      if (Operation *existing = module.lookupSymbol(name)) {
        existing->emitOpError()
            << "tfm-batch-kv-cache: @" << name << " already exists";
        return signalPassFailure();
      }
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    auto prefill = module.lookupSymbol<func::FuncOp>("prefill");
    if (!forward || !prefill) {
      module.emitError("tfm-batch-kv-cache: needs @forward and the @prefill "
                       "tfm-kv-cache derived from it");
      return signalPassFailure();
    }
    // @prefill(tokens, start, slot, cache [layers, 2, capacity, kv_heads,
    // head_dim], ...): the capacity and stored type to batch.
    auto cacheType =
        prefill.getNumArguments() > 3
            ? dyn_cast<RankedTensorType>(prefill.getArgumentTypes()[3])
            : RankedTensorType();
    if (!cacheType || cacheType.getRank() != 5 ||
        !prefill.getArgAttr(3, kCacheArgAttrName)) {
      prefill.emitOpError("tfm-batch-kv-cache: expected @prefill's fourth "
                          "argument to be its self-attention cache");
      return signalPassFailure();
    }
    FailureOr<CachePlan> plan = planCache(forward);
    if (failed(plan))
      return signalPassFailure();
    Type stored = cacheType.getElementType();
    if (stored != plan->keyType.getElementType())
      plan->storedRows = stored;
    int64_t capacity = cacheType.getDimSize(2);
    // @prefill's planes (windowed layers' rings share theirs); the batched
    // cache keeps a plane per layer.
    RankedTensorType expected =
        selfCacheTypeOf(*plan, capacity, layOutCache(*plan, capacity).planes);
    if (expected != cacheType) {
      prefill.emitOpError()
          << "tfm-batch-kv-cache: @forward's layers would cache " << expected
          << ", not @prefill's " << cacheType;
      return signalPassFailure();
    }
    buildDecodeBatch(forward, *plan, capacity);
    if (!plan->sourceArg)
      buildPrefillBatch(forward, *plan, capacity);
  }
};

} // namespace
