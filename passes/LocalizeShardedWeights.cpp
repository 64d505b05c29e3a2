//===- LocalizeShardedWeights.cpp - declare the rank's part of a weight --===//
//
// The tfm-localize-sharded-weights pass (see Passes.td): after
// shard-partition every tfm.weight of a split weight reads the rank's part;
// the declaration follows, so codegen lays out and packages the part.
//
//===----------------------------------------------------------------------===//

#include "ir/TfmOps.h"
#include "ir/TfmSharding.h"
#include "passes/Passes.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_LOCALIZESHARDEDWEIGHTSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// A weight kept in its checkpoint's blocks (tfm.checkpoint_dtype q4_k,
/// q5_k, q6_k or mxfp4) and split by columns into parts of `columns` each: its
/// blocks copy as stored where the parts are whole blocks; where a part
/// would cut a block (LLaMA-2-7B's 11008 MLP features over 2 ranks) it is
/// requantized to int8, as formats no kernel reads are, and tfmc says so.
void keepBlocksWhole(WeightDeclOp decl, int64_t axis, int64_t columns) {
  auto stored = decl->getAttrOfType<StringAttr>(kCheckpointDtypeAttrName);
  if (axis != 1 || !stored || !isCheckpointOnlyDtype(stored.getValue()) ||
      columns % checkpointBlockColumns(stored.getValue()) == 0)
    return;
  decl.emitWarning() << "split into parts of " << columns
                     << " columns, which would cut its "
                     << stored.getValue().upper() << " blocks of "
                     << checkpointBlockColumns(stored.getValue())
                     << ": requantized to int8";
  decl->setAttr(kCheckpointDtypeAttrName,
                StringAttr::get(decl.getContext(), "int8"));
}

struct LocalizeShardedWeightsPass
    : tfm::impl::LocalizeShardedWeightsPassBase<LocalizeShardedWeightsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *context = module.getContext();
    SmallVector<NamedAttribute> parts;
    for (auto decl : module.getOps<WeightDeclOp>()) {
      if (auto partial =
              decl->getAttrOfType<IntegerAttr>(kPartialOverRanksAttrName))
        parts.emplace_back(
            decl.getSymNameAttr(),
            DenseI64ArrayAttr::get(context, {-1, partial.getInt()}));
      auto split =
          decl->getAttrOfType<DenseI64ArrayAttr>(kSplitOverRanksAttrName);
      auto whole = dyn_cast<RankedTensorType>(decl.getType());
      if (!split || !whole)
        continue;
      SmallVector<int64_t> shape(whole.getShape());
      if (shape[split[0]] % split[1] != 0) {
        decl.emitOpError("is split over ")
            << split[1] << " ranks along axis " << split[0]
            << ", which its size " << shape[split[0]]
            << " is not a multiple of";
        return signalPassFailure();
      }
      shape[split[0]] /= split[1];
      decl.setType(whole.clone(shape));
      keepBlocksWhole(decl, split[0], shape[split[0]]);
      parts.emplace_back(decl.getSymNameAttr(), split);
    }
    if (!parts.empty())
      module->setAttr(kRankWeightsAttrName,
                      DictionaryAttr::get(context, parts));
  }
};

} // namespace
