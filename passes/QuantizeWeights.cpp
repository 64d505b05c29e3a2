//===- QuantizeWeights.cpp - weight matrices in narrower storage --------===//
//
// The tfm-quantize-weights pass (see Passes.td): picks a storage type for
// every weight matrix the model multiplies by or looks rows up in, retypes
// its declaration and reads, and puts tfm.dequantize where the f32 values
// are used. The values themselves are converted by the packager as it
// writes the blob (codegen/linalg/WeightFormats.cpp).
//
//===----------------------------------------------------------------------===//

#include "ir/TfmOps.h"
#include "passes/Passes.h"
#include "passes/Returned.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Regex.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_QUANTIZEWEIGHTSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// Rows every part of a join but the last must have for the join to stay
/// one weight in narrow storage: the widest panel any format is stored in
/// (f32 and bf16 panels: 32 rows; block formats: 16).
constexpr int64_t kJoinRowMultiple = 32;

/// The dtype that keeps each weight as its checkpoint stores it.
constexpr StringLiteral kCheckpoint = "checkpoint";
/// Every dtype name, for messages.
constexpr StringLiteral kDtypeNames =
    "f32, bf16, f16, int8, int8-channel, int4, int4-min or checkpoint";

/// The storage type of an f32 matrix `type` in `dtype` (f32, bf16, f16,
/// int8, int4, int4-min, q4_k, q5_k, q6_k, mxfp4); null for an unknown
/// name.
RankedTensorType storageType(RankedTensorType type, StringRef dtype) {
  MLIRContext *ctx = type.getContext();
  ArrayRef<int64_t> shape = type.getShape();
  std::optional<WeightFormat> format = formatOfDtype(dtype);
  if (!format)
    return {};
  switch (*format) {
  case WeightFormat::F32:
    return type;
  case WeightFormat::BF16:
    return RankedTensorType::get(shape, BFloat16Type::get(ctx));
  case WeightFormat::F16:
    return RankedTensorType::get(shape, Float16Type::get(ctx));
  default:
    break;
  }
  auto quant = BlockQuantAttr::get(ctx, *format);
  return RankedTensorType::get(shape, IntegerType::get(ctx, quant.codeBits()),
                               quant);
}

/// How the module reads each weight, from its tfm.weight ops' uses.
struct WeightUses {
  /// Read by an op that only f32 serves (a norm, a convolution, a bias).
  bool other = false;
  /// Looked up as a tfm.embedding table, or multiplied by an LM head.
  bool edge = false;
  /// Multiplied head by head (tfm.head_linear): worth storing narrow only
  /// in blocks, which the CPU's per-head kernel reads as stored; in bf16 or
  /// f16 it would be widened whole at every call.
  bool perHead = false;
};

/// The weights a concat joins, if all its inputs are tfm.weight ops and
/// its result is only a linear's weight.
SmallVector<WeightOp> joinedWeights(ConcatOp concat) {
  SmallVector<WeightOp> parts;
  for (Value input : concat.getInputs()) {
    auto weight = input.getDefiningOp<WeightOp>();
    if (!weight)
      return {};
    parts.push_back(weight);
  }
  for (OpOperand &use : concat->getUses()) {
    auto linear = dyn_cast<LinearOp>(use.getOwner());
    if (!linear || use.get() != linear.getWeight())
      return {};
  }
  return parts;
}

llvm::StringMap<WeightUses> classifyUses(ModuleOp module) {
  llvm::StringMap<WeightUses> uses;
  module.walk([&](WeightOp weight) {
    WeightUses &entry = uses[weight.getName()];
    for (OpOperand &use : weight->getUses()) {
      Operation *user = use.getOwner();
      if (auto linear = dyn_cast<LinearOp>(user)) {
        if (use.get() != linear.getWeight())
          entry.other = true;
        else if (isReturned(linear.getResult()))
          entry.edge = true;
      } else if (auto lookup = dyn_cast<EmbeddingOp>(user)) {
        if (use.get() == lookup.getTable())
          entry.edge = true;
        else
          entry.other = true;
      } else if (auto perHead = dyn_cast<HeadLinearOp>(user)) {
        if (use.get() == perHead.getWeight())
          entry.perHead = true;
        else
          entry.other = true;
      } else if (auto concat = dyn_cast<ConcatOp>(user)) {
        if (joinedWeights(concat).empty())
          entry.other = true;
      } else {
        entry.other = true;
      }
    }
  });
  return uses;
}

/// `value` (of a narrow storage type) read as f32 by the uses
/// `shouldReplace` picks, through one tfm.dequantize built after its
/// definition (none when it picks none).
void dequantizeFor(OpBuilder &b, Value value,
                   llvm::function_ref<bool(OpOperand &)> shouldReplace) {
  if (llvm::none_of(value.getUses(), shouldReplace))
    return;
  auto type = cast<RankedTensorType>(value.getType());
  b.setInsertionPointAfterValue(value);
  auto widened = DequantizeOp::create(
      b, value.getLoc(),
      RankedTensorType::get(type.getShape(), b.getF32Type()), value);
  value.replaceUsesWithIf(widened.getResult(), [&](OpOperand &use) {
    return use.getOwner() != widened && shouldReplace(use);
  });
}

/// How many bits a weight of `type` takes per element, doubled so that
/// block formats (8.5, 5 and 4.5 bits) stay whole (rounded up): the order
/// in which a join's parts are widened to one format.
int storageHalfBits(RankedTensorType type) {
  if (auto quant = dyn_cast_or_null<BlockQuantAttr>(type.getEncoding())) {
    WeightFormat format = quant.getFormat();
    int64_t elements = checkpointBlockElements(format);
    return (2 * 8 * checkpointBlockBytes(format) + elements - 1) / elements;
  }
  return 2 * type.getElementTypeBitWidth();
}

/// Gives all parts of each aligned join one format, the widest among them,
/// so that the join stays one narrow weight: a llama.cpp Q4_K_M file stores
/// some layers' value projection in Q6_K (int8 here) beside Q4_K query and
/// key projections (int4-min), and a join of mixed parts would otherwise
/// be dequantized to f32 on every call. A part kept f32 makes the whole
/// join f32; bf16 beside f16 (neither holds the other) too. A format only
/// a checkpoint can store (q4_k, q5_k, q6_k, mxfp4) joins others as the
/// encoded dtype that holds it (runtime/include/tfm/weight_formats.h's
/// JOIN). Widening repeats until no join changes, as a weight may sit in
/// several joins.
void unifyJoinFormats(ModuleOp module,
                      llvm::StringMap<RankedTensorType> &storage) {
  auto typeOf = [&](WeightOp part) {
    RankedTensorType type = storage.lookup(part.getName());
    return type ? type : cast<RankedTensorType>(part.getType());
  };
  auto formatOf = [](RankedTensorType type) -> std::optional<WeightFormat> {
    if (auto quant = dyn_cast_or_null<BlockQuantAttr>(type.getEncoding()))
      return quant.getFormat();
    return std::nullopt;
  };
  auto setStorage = [&](StringRef name, RankedTensorType type) {
    module.lookupSymbol<WeightDeclOp>(name).setType(type);
    if (type.getElementType().isF32())
      storage.erase(name);
    else
      storage[name] = type;
  };
  bool changed = true;
  while (changed) {
    changed = false;
    module.walk([&](ConcatOp concat) {
      SmallVector<WeightOp> parts = joinedWeights(concat);
      if (parts.empty())
        return;
      for (WeightOp part : ArrayRef(parts).drop_back())
        if (part.getType().getDimSize(0) % kJoinRowMultiple != 0)
          return;
      auto sameStorage = [](RankedTensorType a, RankedTensorType b) {
        return a.getElementType() == b.getElementType() &&
               a.getEncoding() == b.getEncoding();
      };
      if (llvm::all_of(parts, [&](WeightOp part) {
            return sameStorage(typeOf(part), typeOf(parts.front()));
          }))
        return;
      // Mixed: parts copied from the file (q4_k, q5_k, q6_k, mxfp4), and
      // q8_channel, count as the dtype they join as (the table's
      // joinDtype).
      auto joinable = [&](WeightOp part) {
        RankedTensorType type = typeOf(part);
        std::optional<WeightFormat> format = formatOf(type);
        if (format && StringRef(joinDtype(*format)) != dtypeName(*format))
          return storageType(type, joinDtype(*format));
        return type;
      };
      RankedTensorType widest = joinable(parts.front());
      for (WeightOp part : parts) {
        RankedTensorType type = joinable(part);
        if (sameStorage(type, widest))
          continue;
        int bits = storageHalfBits(type), widestBits = storageHalfBits(widest);
        if (bits == widestBits) // bf16 beside f16
          widest = RankedTensorType::get(widest.getShape(),
                                         Float32Type::get(module.getContext()));
        else if (bits > widestBits)
          widest = type;
      }
      for (WeightOp part : parts) {
        auto shape = cast<RankedTensorType>(part.getType()).getShape();
        setStorage(part.getName(),
                   RankedTensorType::get(shape, widest.getElementType(),
                                         widest.getEncoding()));
      }
      changed = true;
    });
  }
}

struct QuantizeWeightsPass
    : mlir::tfm::impl::QuantizeWeightsPassBase<QuantizeWeightsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    MLIRContext *ctx = &getContext();
    std::string edge = edgeDtype.empty()
                           ? (StringRef(dtype).starts_with("int4")
                                  ? std::string("int8")
                                  : dtype)
                           : edgeDtype;
    auto probe = RankedTensorType::get({1, 1}, Float32Type::get(ctx));
    auto isUserDtype = [&](StringRef name) {
      return !isCheckpointOnlyDtype(name) && storageType(probe, name);
    };
    for (StringRef name : {StringRef(dtype), StringRef(edge)}) {
      if (isCheckpointOnlyDtype(name)) {
        module.emitError()
            << "weight dtype '" << name << "' is kept from a checkpoint's "
            << StringRef(name).upper() << " tensors only (dtype=checkpoint), "
            << "not made from others "
            << "(expected " << kDtypeNames << ")";
        return signalPassFailure();
      }
      if (name != kCheckpoint && !isUserDtype(name)) {
        module.emitError() << "unknown weight dtype '" << name
                           << "' (expected " << kDtypeNames << ")";
        return signalPassFailure();
      }
    }
    llvm::Regex kept(keep);
    std::string regexError;
    if (!keep.empty() && !kept.isValid(regexError)) {
      module.emitError() << "invalid regex '" << keep
                         << "' for the weights to keep: " << regexError;
      return signalPassFailure();
    }

    // dtype-for: "REGEX=DTYPE", split at the last '='.
    auto [ruleRegex, ruleDtype] = StringRef(dtypeFor).rsplit('=');
    llvm::Regex ruled(ruleRegex);
    if (!dtypeFor.empty() &&
        (ruleRegex.empty() || !ruled.isValid(regexError) ||
         (ruleDtype != kCheckpoint && !isUserDtype(ruleDtype)))) {
      module.emitError() << "invalid dtype-for '" << dtypeFor
                         << "' (expected REGEX=DTYPE with a valid regex and "
                            "one of "
                         << kDtypeNames << ")"
                         << (regexError.empty() ? "" : ": ") << regexError;
      return signalPassFailure();
    }

    // Each declaration's storage type.
    llvm::StringMap<WeightUses> uses = classifyUses(module);
    llvm::StringMap<RankedTensorType> storage;
    for (WeightDeclOp decl : module.getOps<WeightDeclOp>()) {
      RankedTensorType type = decl.getTensorType();
      auto it = uses.find(decl.getSymName());
      if (type.getRank() != 2 || !type.getElementType().isF32() ||
          it == uses.end() || it->second.other ||
          (!keep.empty() && kept.match(decl.getSymName())))
        continue;
      StringRef chosen = it->second.edge ? edge : dtype;
      if (!dtypeFor.empty() && ruled.match(decl.getSymName()))
        chosen = ruleDtype;
      if (chosen == kCheckpoint) {
        auto stored = decl->getAttrOfType<StringAttr>(kCheckpointDtypeAttrName);
        chosen = stored ? stored.getValue() : "f32";
      }
      RankedTensorType narrow = storageType(type, chosen);
      if (!narrow) {
        decl.emitError() << "unknown checkpoint dtype '" << chosen << "'";
        return signalPassFailure();
      }
      if (narrow == type ||
          (it->second.perHead && !isa_and_nonnull<BlockQuantAttr>(
                                     narrow.getEncoding())))
        continue;
      storage[decl.getSymName()] = narrow;
      decl.setType(narrow);
    }

    unifyJoinFormats(module, storage);

    // Joins: one narrow join when its parts share a format and line up on
    // panels, else each part dequantized alone.
    OpBuilder b(ctx);
    module.walk([&](ConcatOp concat) {
      SmallVector<WeightOp> parts = joinedWeights(concat);
      if (parts.empty() || !storage.count(parts.front().getName()))
        return;
      RankedTensorType first = storage.lookup(parts.front().getName());
      bool oneJoin = true;
      for (auto [index, part] : llvm::enumerate(parts)) {
        RankedTensorType type = storage.lookup(part.getName());
        oneJoin &= type && type.getElementType() == first.getElementType() &&
                   type.getEncoding() == first.getEncoding();
        if (index + 1 < parts.size())
          oneJoin &= part.getType().getDimSize(0) % kJoinRowMultiple == 0;
      }
      if (!oneJoin)
        return;
      RankedTensorType joined = concat.getType();
      concat.getResult().setType(RankedTensorType::get(
          joined.getShape(), first.getElementType(), first.getEncoding()));
      dequantizeFor(b, concat.getResult(), [](OpOperand &) { return true; });
    });

    // Every read of a narrow weight: retyped, and dequantized for every
    // user but a join that is itself narrow.
    module.walk([&](WeightOp weight) {
      auto it = storage.find(weight.getName());
      if (it == storage.end())
        return;
      weight.getResult().setType(it->second);
      dequantizeFor(b, weight.getResult(), [](OpOperand &use) {
        auto concat = dyn_cast<ConcatOp>(use.getOwner());
        return !concat || concat.getType().getElementType().isF32();
      });
    });
  }
};

} // namespace
