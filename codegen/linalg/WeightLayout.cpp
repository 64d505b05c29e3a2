//===- WeightLayout.cpp - where weights live in the blob ----------------===//
//
// The tfm-lay-out-weights pass (see WeightLayout.h and Passes.td).
//
//===----------------------------------------------------------------------===//

#include "codegen/linalg/WeightLayout.h"
#include "codegen/linalg/Passes.h"
#include "codegen/linalg/WeightFormats.h"
#include "ir/TfmOps.h"
#include "tfm/weight_formats.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Debug.h"

#include <map>

namespace mlir::tfm {
#define GEN_PASS_DEF_LAYOUTWEIGHTSPASS
#include "codegen/linalg/Passes.h.inc"
} // namespace mlir::tfm

#define DEBUG_TYPE "tfm-lay-out-weights"

using namespace mlir;
using namespace mlir::tfm;

namespace {

int64_t alignTo(int64_t value, int64_t alignment) {
  return (value + alignment - 1) / alignment * alignment;
}

int64_t panelCount(int64_t rows) {
  return (rows + kPanelWidth - 1) / kPanelWidth;
}

/// Whether a weight of `type` may be stored as panels: a matrix of floats
/// (block formats always are).
bool panelable(RankedTensorType type) {
  return type.getRank() == 2 && isa<FloatType>(type.getElementType());
}

/// The names `concat` joins when its inputs are all weights, each once;
/// empty otherwise.
SmallVector<StringRef> joinedWeightNames(ConcatOp concat) {
  SmallVector<StringRef> names;
  llvm::StringSet<> seen;
  for (Value input : concat.getInputs()) {
    auto weight = input.getDefiningOp<WeightOp>();
    if (!weight || !seen.insert(weight.getName()).second)
      return {};
    names.push_back(weight.getName());
  }
  return names;
}

/// Whether `use` is as the weight of a tfm.linear.
bool isLinearWeight(OpOperand &use) {
  auto linear = dyn_cast<LinearOp>(use.getOwner());
  return linear && use.getOperandNumber() ==
                       linear.getWeightMutable().getOperandNumber();
}

/// Whether `use` is as the table of a tfm.embedding (a token embedding
/// tied to an LM head: the lookup reads its few rows from the panels).
bool isEmbeddingTable(OpOperand &use) {
  auto lookup = dyn_cast<EmbeddingOp>(use.getOwner());
  return lookup && use.getOperandNumber() ==
                       lookup.getTableMutable().getOperandNumber();
}

bool readAsMatrix(Value value, bool lookups, bool &multiplied);

/// Whether `use` reads its value as a matrix that kernels take from
/// panels: as a linear's weight, as an embedding's table when `lookups`
/// allows, or through a tfm.dequantize read that way. Sets `multiplied`
/// when a linear reads it.
bool readAsMatrix(OpOperand &use, bool lookups, bool &multiplied) {
  if (auto widen = dyn_cast<DequantizeOp>(use.getOwner()))
    return readAsMatrix(widen.getResult(), lookups, multiplied);
  if (isLinearWeight(use)) {
    multiplied = true;
    return true;
  }
  return lookups && isEmbeddingTable(use);
}

/// Whether every use of `value` reads it as a matrix (above).
bool readAsMatrix(Value value, bool lookups, bool &multiplied) {
  return llvm::all_of(value.getUses(), [&](OpOperand &use) {
    return readAsMatrix(use, lookups, multiplied);
  });
}

/// Whether every use of `value` is as the weight of a tfm.linear (through
/// a tfm.dequantize or not).
bool onlyLinearWeight(Value value) {
  bool multiplied = false;
  return readAsMatrix(value, /*lookups=*/false, multiplied);
}

/// Rows per panel of a weight of storage type `type`.
int64_t panelHeight(RankedTensorType type) {
  return panelRows(storedFormatOf(type));
}

/// A join placed back to back: its parts, and every concat op (one per
/// function) that reads it.
struct PlacedJoin {
  SmallVector<WeightOp> parts;
  SmallVector<ConcatOp> uses;
};

/// The joins of weights that become views. The same names joined in
/// another function (@forward, @prefill) share the placement; a weight
/// joined with different neighbours elsewhere is copied there
/// (tensor.concat).
std::vector<PlacedJoin> findPlacedJoins(ModuleOp module) {
  std::vector<PlacedJoin> joins;
  std::map<std::string, size_t> byKey;
  llvm::StringSet<> joined;
  module.walk([&](ConcatOp concat) {
    SmallVector<StringRef> names = joinedWeightNames(concat);
    if (names.empty())
      return;
    std::string key = llvm::join(names, "\n");
    if (auto it = byKey.find(key); it != byKey.end()) {
      joins[it->second].uses.push_back(concat);
      return;
    }
    if (llvm::any_of(names, [&](StringRef n) { return joined.contains(n); }))
      return;
    PlacedJoin join;
    for (Value input : concat.getInputs()) {
      join.parts.push_back(input.getDefiningOp<WeightOp>());
      joined.insert(join.parts.back().getName());
    }
    join.uses.push_back(concat);
    byKey[key] = joins.size();
    joins.push_back(std::move(join));
  });
  return joins;
}

/// The weights stored as panels: float matrices that only linear ops
/// read, directly or through placed joins (and, read directly, as the
/// token embeddings an LM head is tied to); a join is stored as panels
/// whole or not at all, and only if every part but the last fills its
/// panels (so that the parts' panels follow each other without gaps).
/// Weights in blocks are block panels whatever `packPanels` says; a join of
/// them that cannot be is an error.
FailureOr<llvm::StringSet<>>
choosePanels(ModuleOp module, ArrayRef<PlacedJoin> joins, bool packPanels) {
  llvm::DenseSet<Operation *> placed;
  for (const PlacedJoin &join : joins)
    placed.insert(join.uses.begin(), join.uses.end());
  llvm::StringSet<> candidates, rejected;
  llvm::StringSet<> blocks;
  module.walk([&](WeightOp weight) {
    RankedTensorType type = weight.getType();
    if (isBlockFormat(storedFormatOf(type))) {
      blocks.insert(weight.getName());
      candidates.insert(weight.getName());
      return;
    }
    bool fits = packPanels && panelable(type);
    bool multiplied = false;
    for (OpOperand &use : weight->getUses()) {
      auto concat = dyn_cast<ConcatOp>(use.getOwner());
      if (concat) {
        fits &= placed.contains(concat) && onlyLinearWeight(concat);
        multiplied = true;
      } else {
        fits &= readAsMatrix(use, /*lookups=*/true, multiplied);
      }
    }
    if (!fits)
      rejected.insert(weight.getName());
    else if (multiplied)
      candidates.insert(weight.getName());
  });
  // Panels pay only where a GEMM reads them: a table that is only looked
  // up (in every function) is not a candidate at all.
  for (StringRef name : rejected.keys())
    candidates.erase(name);
  for (const PlacedJoin &join : joins) {
    bool whole = true;
    for (auto [index, part] : llvm::enumerate(join.parts)) {
      WeightOp weight = part;
      whole &= candidates.contains(weight.getName());
      if (index + 1 < join.parts.size())
        whole &= weight.getType().getDimSize(0) %
                     panelHeight(weight.getType()) == 0;
    }
    if (whole)
      continue;
    for (WeightOp part : join.parts) {
      if (blocks.contains(part.getName()))
        return part.emitOpError()
               << "is joined in blocks with weights that do not fill whole "
                  "panels of "
               << TFM_BLOCK_PANEL_ROWS << " rows";
      candidates.erase(part.getName());
    }
  }
  return candidates;
}

/// Builds the value a weight op (or placed join) of `type` becomes: a view
/// of the blob, through linalg.unpack when stored as panels.
Value weightView(OpBuilder &b, Location loc, Value blob, int64_t offset,
                 RankedTensorType type, bool panels) {
  Value shift = arith::ConstantIndexOp::create(b, loc, offset);
  WeightFormat format = storedFormatOf(type);
  if (isBlockFormat(format)) {
    // The block panels' bytes, seen as the weight's type until a kernel
    // call takes them (tfm-select-cpu-kernels).
    int64_t bytes = storedMatrixBytes(format, type.getDimSize(0),
                                      type.getDimSize(1), /*panels=*/true);
    auto memrefType = MemRefType::get({bytes}, b.getI8Type());
    Value view =
        memref::ViewOp::create(b, loc, memrefType, blob, shift, ValueRange{});
    Value tensor = bufferization::ToTensorOp::create(
        b, loc, RankedTensorType::get({bytes}, b.getI8Type()), view,
        /*restrict=*/true, /*writable=*/false);
    return UnrealizedConversionCastOp::create(b, loc, type, tensor)
        .getResult(0);
  }
  SmallVector<int64_t> stored(type.getShape());
  if (panels)
    stored = {panelCount(type.getDimSize(0)), type.getDimSize(1), kPanelWidth};
  auto memrefType = MemRefType::get(stored, type.getElementType());
  Value view =
      memref::ViewOp::create(b, loc, memrefType, blob, shift, ValueRange{});
  // Weights are read-only and alias nothing the function writes.
  Value tensor = bufferization::ToTensorOp::create(
      b, loc, RankedTensorType::get(stored, type.getElementType()), view,
      /*restrict=*/true, /*writable=*/false);
  if (!panels)
    return tensor;
  Value matrix = tensor::EmptyOp::create(b, loc, type.getShape(),
                                         type.getElementType());
  return linalg::UnPackOp::create(b, loc, tensor, matrix, /*innerDimsPos=*/{0},
                                  {b.getIndexAttr(kPanelWidth)});
}

/// Bytes of a weight of storage type `type` in the blob.
int64_t storedBytes(RankedTensorType type, bool panels) {
  return type.getRank() == 2
             ? storedMatrixBytes(storedFormatOf(type), type.getDimSize(0),
                                 type.getDimSize(1), panels)
             : type.getNumElements() * type.getElementTypeBitWidth() / 8;
}

/// The share of calls that read `weight`: that of the expert (an scf.if of
/// tfm-expand-experts) every use is inside, else 1.
double shareOfCalls(WeightOp weight) {
  // The ops that compute with it: through the widening of a narrow weight
  // and the joins of weights (which codegen reads as stored).
  SmallVector<Operation *> users, pending(weight->getUsers().begin(),
                                          weight->getUsers().end());
  while (!pending.empty()) {
    Operation *user = pending.pop_back_val();
    if (isa<DequantizeOp, ConcatOp>(user))
      pending.append(user->getUsers().begin(), user->getUsers().end());
    else
      users.push_back(user);
  }
  double share = 0;
  for (Operation *user : users) {
    Operation *guard = user;
    while (guard && !guard->hasAttr(kExpertShareAttrName))
      guard = guard->getParentOp();
    if (!guard)
      return 1.0;
    share =
        std::max(share, cast<FloatAttr>(guard->getAttr(kExpertShareAttrName))
                            .getValueAsDouble());
  }
  return share > 0 ? share : 1.0;
}

/// `func` and the functions it calls, to any depth.
SmallVector<func::FuncOp> withCallees(func::FuncOp func) {
  SmallVector<func::FuncOp> functions = {func};
  llvm::SmallPtrSet<Operation *, 8> seen = {func};
  for (size_t i = 0; i < functions.size(); ++i)
    functions[i].walk([&](func::CallOp call) {
      auto callee = SymbolTable::lookupNearestSymbolFrom<func::FuncOp>(
          call, call.getCalleeAttr());
      if (callee && !callee.isExternal() && seen.insert(callee).second)
        functions.push_back(callee);
    });
  return functions;
}

/// Bytes of weights one call of `func` (on one token) reads, with those of
/// the functions it calls (tfm-expand-experts' shared experts): each weight
/// whole, but a table it only looks up one row, and an expert's by its
/// share of the calls.
int64_t bytesReadPerCall(func::FuncOp entry, const WeightLayout &layout) {
  llvm::StringMap<int64_t> read;
  for (func::FuncOp func : withCallees(entry))
    func.walk([&](WeightOp weight) {
      RankedTensorType type = weight.getType();
      int64_t bytes =
          storedBytes(type, layout.panels.contains(weight.getName()));
      // An expert's weights: read by the share of tokens routed to it.
      bytes = int64_t(double(bytes) * shareOfCalls(weight));
      bool multiplied = false;
      bool rowsOnly =
          readAsMatrix(weight.getResult(), /*lookups=*/true, multiplied) &&
          !multiplied && type.getRank() == 2;
      int64_t &entry = read[weight.getName()];
      entry = std::max(entry, rowsOnly ? bytes / type.getDimSize(0) : bytes);
    });
  int64_t total = 0;
  for (const auto &entry : read)
    total += entry.getValue();
  return total;
}

} // namespace

FailureOr<WeightLayout> mlir::tfm::layOutWeights(ModuleOp module,
                                                 bool packPanels) {
  WeightLayout result;
  std::vector<PlacedJoin> joins = findPlacedJoins(module);
  FailureOr<llvm::StringSet<>> panels =
      choosePanels(module, joins, packPanels);
  if (failed(panels))
    return failure();
  result.panels = std::move(*panels);
  MLIRContext *ctx = module.getContext();
  Builder b(ctx);
  SmallVector<NamedAttribute> layout, panelShapes, formats;
  int64_t size = 0;
  auto place = [&](WeightOp op, bool alignStart) {
    RankedTensorType type = op.getType();
    if (alignStart)
      size = alignTo(size, kWeightAlignment);
    result.offsets[op.getName()] = size;
    layout.push_back(
        b.getNamedAttr(op.getName(), b.getI64IntegerAttr(size)));
    bool panels = result.panels.contains(op.getName());
    if (panels)
      panelShapes.push_back(
          b.getNamedAttr(op.getName(), b.getDenseI64ArrayAttr(
                                               type.getShape())));
    WeightFormat format = storedFormatOf(type);
    if (format != WeightFormat::F32)
      formats.push_back(
          b.getNamedAttr(op.getName(), b.getStringAttr(formatName(format))));
    size += storedBytes(type, panels);
    LLVM_DEBUG(llvm::dbgs() << "weight " << op.getName() << " at "
                            << result.offsets[op.getName()] << "\n");
  };
  // Joined weights first, back to back: the join is then a view.
  for (const PlacedJoin &join : joins) {
    for (auto [index, part] : llvm::enumerate(join.parts))
      place(WeightOp(part), /*alignStart=*/index == 0);
    WeightOp first = join.parts.front();
    for (ConcatOp use : join.uses)
      result.joins[use] = result.offsets[first.getName()];
  }
  // The verifier has checked that every use of a weight has its declared
  // type: the first use places it.
  module.walk([&](WeightOp op) {
    if (!result.offsets.count(op.getName()))
      place(op, /*alignStart=*/true);
  });
  module->setAttr(kWeightLayoutAttrName, b.getDictionaryAttr(layout));
  if (!panelShapes.empty())
    module->setAttr(kWeightPanelsAttrName, b.getDictionaryAttr(panelShapes));
  if (!formats.empty())
    module->setAttr(kWeightFormatsAttrName, b.getDictionaryAttr(formats));
  module->setAttr(kWeightBytesAttrName, b.getI64IntegerAttr(size));
  if (auto decode = module.lookupSymbol<func::FuncOp>("decode"))
    module->setAttr(kDecodeWeightBytesAttrName,
                    b.getI64IntegerAttr(bytesReadPerCall(decode, result)));
  return result;
}

void mlir::tfm::lowerWeights(ModuleOp module, const WeightLayout &layout) {
  MLIRContext *ctx = module.getContext();
  // The functions needing weights: readers, then their callers, to a fixed
  // point.
  llvm::SmallPtrSet<Operation *, 8> needs;
  module.walk([&](WeightOp op) {
    needs.insert(op->getParentOfType<func::FuncOp>());
  });
  // Every entry point (a public function whose arguments carry tfm.input
  // roles) takes the weights first, as the runtime calls them
  // (EntryPointTable.cpp), even one that reads none (a hand-written
  // module's): without the argument its inputs would be read one off.
  for (auto func : module.getOps<func::FuncOp>()) {
    bool entry = func.isPublic() && !func.isExternal();
    for (unsigned i = 0; entry && i < func.getNumArguments(); ++i)
      entry = func.getArgAttr(i, kInputArgAttrName) ||
              func.getArgAttr(i, kCacheArgAttrName);
    if (entry && func.getNumArguments() > 0)
      needs.insert(func);
  }
  for (bool changed = true; changed;) {
    changed = false;
    module.walk([&](func::CallOp call) {
      Operation *callee = module.lookupSymbol(call.getCallee());
      if (needs.count(callee))
        changed |= needs.insert(call->getParentOfType<func::FuncOp>()).second;
    });
  }
  auto blobType =
      MemRefType::get({ShapedType::kDynamic}, IntegerType::get(ctx, 8));
  for (Operation *op : needs) {
    auto func = cast<func::FuncOp>(op);
    // Named by its location so that dumps say what the argument is.
    (void)func.insertArgument(0, blobType, DictionaryAttr::get(ctx),
                              NameLoc::get(StringAttr::get(ctx, "weights")));
  }
  OpBuilder b(ctx);
  module.walk([&](func::CallOp call) {
    if (!needs.count(module.lookupSymbol(call.getCallee())))
      return;
    Value blob = call->getParentOfType<func::FuncOp>().getArgument(0);
    call->insertOperands(0, blob);
  });
  auto replaceByView = [&](Operation *op, int64_t offset, StringRef name) {
    b.setInsertionPoint(op);
    Value view = weightView(
        b, op->getLoc(), op->getParentOfType<func::FuncOp>().getArgument(0),
        offset, cast<RankedTensorType>(op->getResult(0).getType()),
        layout.panels.contains(name));
    op->getResult(0).replaceAllUsesWith(view);
    op->erase();
  };
  for (auto [op, offset] : layout.joins) {
    auto concat = cast<ConcatOp>(op);
    StringRef first = concat.getInputs().front().getDefiningOp<WeightOp>()
                          .getName();
    replaceByView(concat, offset, first);
  }
  module.walk([&](WeightOp op) {
    replaceByView(op, layout.offsets.lookup(op.getName()), op.getName());
  });
  // The layout on the module now says where each declared weight is.
  for (WeightDeclOp decl :
       llvm::make_early_inc_range(module.getOps<WeightDeclOp>()))
    decl.erase();
}

Value mlir::tfm::blockWeightBytes(Value weight) {
  auto view = weight.getDefiningOp<UnrealizedConversionCastOp>();
  if (!view || view->getNumOperands() != 1 || view->getNumResults() != 1)
    return Value();
  auto type = dyn_cast<RankedTensorType>(view.getResult(0).getType());
  if (!type || !isBlockFormat(storedFormatOf(type)))
    return Value();
  return view.getOperand(0);
}

void mlir::tfm::eraseDeadWeightReads(ModuleOp module) {
  module.walk([](DequantizeOp widen) {
    if (widen->use_empty())
      widen->erase();
  });
  module.walk([](UnrealizedConversionCastOp view) {
    if (blockWeightBytes(view.getResult(0)) && view->use_empty())
      view->erase();
  });
  module.walk([](linalg::UnPackOp unpack) {
    if (!isPanelUnpack(unpack) || !unpack->use_empty())
      return;
    Operation *dest = unpack.getDest().getDefiningOp();
    unpack->erase();
    if (dest && dest->use_empty())
      dest->erase();
  });
}

bool mlir::tfm::isPanelUnpack(Operation *op) {
  auto unpack = dyn_cast_or_null<linalg::UnPackOp>(op);
  return unpack && unpack.getSourceType().getRank() == 3 &&
         unpack.getInnerDimsPos() == ArrayRef<int64_t>{0} &&
         unpack.getStaticInnerTiles() == ArrayRef<int64_t>{kPanelWidth} &&
         unpack.getOuterDimsPerm().empty();
}

namespace {

struct LayOutWeightsPass
    : mlir::tfm::impl::LayOutWeightsPassBase<LayOutWeightsPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    FailureOr<WeightLayout> layout = layOutWeights(module, packWeights);
    if (failed(layout))
      return signalPassFailure();
    lowerWeights(module, *layout);
  }
};

} // namespace
