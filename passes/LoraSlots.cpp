//===- LoraSlots.cpp - run-time LoRA adapters' updates on projections ----===//
//
// The tfm-lora-slots pass (see Passes.td). The base weights stay as they
// are and are read once a step for every row; each adapted projection's
// output gains the low-rank update of the adapter its row runs with
// (tfm.lora, a runtime kernel that reads the adapters' slots), so that
// requests with different adapters, or none, share one batch.
//
//===----------------------------------------------------------------------===//

#include "ir/TfmOps.h"
#include "passes/Passes.h"

#include "mlir/IR/Builders.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_LORASLOTSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// The checkpoint name of the weight `linear` multiplies by (through a
/// widening of a narrow checkpoint's), or empty.
StringRef weightName(LinearOp linear) {
  Value weight = linear.getWeight();
  if (auto widen = weight.getDefiningOp<DequantizeOp>())
    weight = widen.getInput();
  auto read = weight.getDefiningOp<WeightOp>();
  return read ? read.getName() : StringRef();
}

/// The module a layer's weight belongs to ("up_proj" of
/// "model.layers.3.mlp.up_proj.weight"; "qkv_proj" of a part the frontend
/// split a fused checkpoint projection into, "self_attn.qkv_proj.q.weight",
/// as PEFT names the module), or empty when the weight is not a layer's
/// (no numbered part: LM heads, embeddings, projectors).
StringRef layerModule(StringRef name) {
  if (!name.consume_back(".weight"))
    return {};
  SmallVector<StringRef> parts;
  name.split(parts, '.');
  bool numbered = llvm::any_of(parts, [](StringRef part) {
    return !part.empty() && llvm::all_of(part, llvm::isDigit);
  });
  if (!numbered)
    return {};
  // The parts preparePhi3Checkpoint names (runtime/adapters/lora_layout.c's
  // kFusedParts lays a fused adapter out on them).
  bool splitPart =
      llvm::is_contained({"q", "k", "v", "gate", "up"}, parts.back()) &&
      parts.size() >= 2 &&
      !llvm::all_of(parts[parts.size() - 2], llvm::isDigit);
  return splitPart ? parts[parts.size() - 2] : parts.back();
}

struct LoraSlotsPass : mlir::tfm::impl::LoraSlotsPassBase<LoraSlotsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (slots < 1 || rank < 1) {
      module.emitError() << "tfm-lora-slots: expected at least one slot of "
                            "rank at least 1, got "
                         << slots << " of rank " << rank;
      return signalPassFailure();
    }
    llvm::StringSet<> wanted;
    SmallVector<StringRef> listed;
    StringRef(targets).split(listed, ',', -1, /*KeepEmpty=*/false);
    for (StringRef target : listed)
      wanted.insert(target.trim());

    // Each adapted weight once, by name, with its features; the table is
    // sorted by name so that every entry point indexes it alike.
    std::map<std::string, std::pair<int64_t, int64_t>> features;
    SmallVector<LinearOp> adapted;
    llvm::StringSet<> matched;
    WalkResult walk = module.walk([&](LinearOp linear) {
      StringRef name = weightName(linear);
      StringRef target = layerModule(name);
      if (target.empty() || (!wanted.empty() && !wanted.contains(target)))
        return WalkResult::advance();
      if (linear.getActivation() || linear.getGated()) {
        linear.emitOpError() << "cannot take a LoRA update after an "
                                "activation epilogue ('"
                             << name << "')";
        return WalkResult::interrupt();
      }
      matched.insert(target);
      features[name.str()] = {linear.getInFeatures(), linear.getOutFeatures()};
      adapted.push_back(linear);
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    for (StringRef target : listed)
      if (!matched.contains(target.trim())) {
        module.emitError() << "--lora-targets: no projection of the layers "
                              "is a module named '"
                           << target.trim() << "'";
        return signalPassFailure();
      }
    if (adapted.empty()) {
      module.emitError("--lora-slots: this model has no projection in "
                       "numbered layers to adapt");
      return signalPassFailure();
    }

    llvm::StringMap<int64_t> index;
    SmallVector<Attribute> names;
    SmallVector<int64_t> sizes;
    for (auto &[name, inOut] : features) {
      index[name] = static_cast<int64_t>(names.size());
      names.push_back(StringAttr::get(&getContext(), name));
      sizes.push_back(inOut.first);
      sizes.push_back(inOut.second);
    }
    for (LinearOp linear : adapted) {
      OpBuilder b(linear->getContext());
      b.setInsertionPointAfter(linear);
      Value projected = linear.getResult();
      auto update = LoraOp::create(
          b, linear.getLoc(), projected.getType(), linear.getInput(), projected,
          b.getI64IntegerAttr(index[weightName(linear)]));
      projected.replaceAllUsesExcept(update.getResult(), update);
    }
    Builder b(&getContext());
    module->setAttr(
        kLoraAttrName,
        b.getDictionaryAttr(
            {b.getNamedAttr("slots", b.getI64IntegerAttr(slots)),
             b.getNamedAttr("rank", b.getI64IntegerAttr(rank)),
             b.getNamedAttr("targets", b.getArrayAttr(names)),
             b.getNamedAttr("features", b.getDenseI64ArrayAttr(sizes))}));
  }
};

} // namespace
