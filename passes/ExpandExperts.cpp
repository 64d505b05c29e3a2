//===- ExpandExperts.cpp - a mixture of experts as per-expert projections -===//
//
// The tfm-expand-experts pass (see Passes.td): tfm.moe, which the cache
// derivations see as one position-wise op, becomes the routing
// (tfm.route), then for each expert the tokens routed to it
// (tfm.expert_rows) and, only where there are some, their rows
// (tfm.take_rows) through the expert's gate, up and down projections
// (tfm.linear: every weight format and GEMM kernel a dense MLP has, and the
// gate/up fusion) and back to their tokens, scaled by their weights
// (tfm.scatter_add_rows). A decode step thus reads its top_k experts only;
// a prefill runs one GEMM per expert over the tokens it got. A mixture
// that several entry points hold (the same weights) keeps its routing in
// each, and its routed experts in one private function they call.
//
//===----------------------------------------------------------------------===//

#include "ir/Rematerialize.h"
#include "ir/TfmOps.h"
#include "ir/TfmSharding.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Shard/IR/ShardOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/MapVector.h"

#include <limits>

namespace mlir::tfm {
#define GEN_PASS_DEF_EXPANDEXPERTSPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// `out` plus the shared expert's output on every token, times
/// sigmoid(x · gate vector) (Qwen2-MoE): a scatter over every row; without
/// a gate vector (DeepSeek), a plain sum.
Value addSharedExpert(OpBuilder &b, MoeOp moe, Value out) {
  Location loc = moe.getLoc();
  Value x = moe.getInput();
  ValueRange shared = moe.getShared();
  int64_t dyn = ShapedType::kDynamic;
  // As many rows as the input (one, where @prefill keeps the last).
  auto rows = [&](int64_t width) {
    return RankedTensorType::get({moe.getType().getDimSize(0), width},
                                 b.getF32Type());
  };
  int64_t width = cast<RankedTensorType>(shared[0].getType()).getDimSize(0);
  int64_t features = moe.getType().getDimSize(1);
  Value gated = LinearOp::create(b, loc, rows(width), x, shared[0], Value());
  Value upped = LinearOp::create(b, loc, rows(width), x, shared[1], Value());
  Value hidden = MulOp::create(
      b, loc, ActivationOp::create(b, loc, moe.getActivation(), gated), upped);
  Value result =
      LinearOp::create(b, loc, rows(features), hidden, shared[2], Value());
  // DeepSeek's shared experts have no gate: their output adds as it is.
  if (shared.size() == 3)
    return AddOp::create(b, loc, out, result);
  Value gate = ActivationOp::create(
      b, loc, ActivationKind::sigmoid,
      LinearOp::create(b, loc, rows(1), x, shared[3], Value()));
  SmallVector<ReassociationIndices> flat = {{0, 1}};
  Value scales = tensor::CollapseShapeOp::create(b, loc, gate, flat);
  // Every row, in order: [0, tokens).
  Value tokens = tensor::DimOp::create(b, loc, x, 0);
  auto indexType = RankedTensorType::get({dyn}, b.getI32Type());
  Value empty = tensor::EmptyOp::create(b, loc, indexType.getShape(),
                                        b.getI32Type(), ValueRange{tokens});
  auto iota = linalg::GenericOp::create(
      b, loc, indexType, ValueRange{}, ValueRange{empty},
      ArrayRef<AffineMap>{b.getMultiDimIdentityMap(1)},
      ArrayRef<utils::IteratorType>{utils::IteratorType::parallel},
      [&](OpBuilder &nb, Location l, ValueRange) {
        Value i = linalg::IndexOp::create(nb, l, 0);
        linalg::YieldOp::create(
            nb, l,
            ValueRange{arith::IndexCastOp::create(nb, l, nb.getI32Type(), i)});
      });
  return ScatterAddRowsOp::create(b, loc, result, scales, out,
                                  iota.getResult(0));
}

/// act(gate) * up, or with a swiglu_limit L (gpt-oss) act(min(gate, L)) *
/// (clamp(up, -L, L) + 1), the + 1 as a second product's sum.
Value gatedHidden(OpBuilder &b, MoeOp moe, Value gated, Value upped) {
  Location loc = moe.getLoc();
  std::optional<APFloat> limit = moe.getSwigluLimit();
  if (limit) {
    float l = limit->convertToFloat();
    float lowest = -std::numeric_limits<float>::infinity();
    gated = ClampOp::create(b, loc, gated, b.getF32FloatAttr(lowest),
                            b.getF32FloatAttr(l));
    upped = ClampOp::create(b, loc, upped, b.getF32FloatAttr(-l),
                            b.getF32FloatAttr(l));
  }
  Value activated = ActivationOp::create(b, loc, moe.getActivation(), gated);
  Value hidden = MulOp::create(b, loc, activated, upped);
  return limit ? AddOp::create(b, loc, hidden, activated) : hidden;
}

/// The routed experts' sum over the rows of `x`: for each expert, the
/// tokens `experts` routed to it (with their `weights`) through its
/// projections (`expertWeights`: gate, up, down of each; `biases` the same
/// or none) and back to their rows, scaled, into zeros. Each expert is
/// under an scf.if that skips it when no token chose it.
Value routedExperts(OpBuilder &b, MoeOp moe, Value x, Value experts,
                    Value weights, ValueRange expertWeights,
                    ValueRange biases) {
  Location loc = moe.getLoc();
  auto type = cast<RankedTensorType>(x.getType());
  int64_t dyn = ShapedType::kDynamic, k = moe.getTopK();
  // The experts given (a rank's own, under expert parallelism) of all.
  int64_t count = expertWeights.size() / 3;
  int64_t all = moe.getRouterLogits().getType().getDimSize(1);
  int64_t features = moe.getType().getDimSize(1);
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  Value empty = tensor::EmptyOp::create(
      b, loc,
      SmallVector<OpFoldResult>{tensor::getMixedSize(b, loc, x, 0),
                                b.getIndexAttr(features)},
      b.getF32Type());
  Value out = linalg::FillOp::create(b, loc, zero, empty).getResult(0);
  auto rowsType = RankedTensorType::get({dyn}, b.getI32Type());
  auto scalesType = RankedTensorType::get({dyn}, b.getF32Type());
  Value none = arith::ConstantIndexOp::create(b, loc, 0);
  for (int64_t e = 0; e < count; ++e) {
    auto routed =
        ExpertRowsOp::create(b, loc, TypeRange{rowsType, scalesType}, experts,
                             weights, b.getI64IntegerAttr(e));
    Value tokens = tensor::DimOp::create(b, loc, routed.getRows(), 0);
    Value any =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, tokens, none);
    Value gate = expertWeights[3 * e], up = expertWeights[3 * e + 1],
          down = expertWeights[3 * e + 2];
    Value gateBias, upBias, downBias;
    if (!biases.empty()) {
      gateBias = biases[3 * e];
      upBias = biases[3 * e + 1];
      downBias = biases[3 * e + 2];
    }
    int64_t inner = cast<RankedTensorType>(gate.getType()).getDimSize(0);
    auto ifOp = scf::IfOp::create(
        b, loc, any,
        [&](OpBuilder &b, Location loc) {
          auto rows = [&](int64_t width) {
            return RankedTensorType::get({dyn, width}, b.getF32Type());
          };
          Value taken = TakeRowsOp::create(b, loc, rows(type.getDimSize(1)), x,
                                           routed.getRows());
          Value gated =
              LinearOp::create(b, loc, rows(inner), taken, gate, gateBias);
          Value upped =
              LinearOp::create(b, loc, rows(inner), taken, up, upBias);
          Value hidden = gatedHidden(b, moe, gated, upped);
          Value result =
              LinearOp::create(b, loc, rows(features), hidden, down, downBias);
          scf::YieldOp::create(
              b, loc,
              ValueRange{ScatterAddRowsOp::create(
                  b, loc, result, routed.getScales(), out, routed.getRows())});
        },
        [&](OpBuilder &b, Location loc) {
          scf::YieldOp::create(b, loc, ValueRange{out});
        });
    // What share of the calls read this expert's weights, on average: the
    // weight layout's bytes read per decode step count that share.
    ifOp->setAttr(kExpertShareAttrName,
                  b.getF64FloatAttr(double(k) / double(all)));
    out = ifOp.getResult(0);
  }
  return out;
}

/// What `value` computes, as text, when it reads no argument (a weight, or
/// pure ops on weights): two mixtures whose experts have the same texts
/// compute the same function. None when it reads anything else.
std::optional<std::string> constantKey(Value value) {
  Operation *op = value.getDefiningOp();
  if (!op || op->getNumRegions() || !isMemoryEffectFree(op))
    return std::nullopt;
  std::string key;
  llvm::raw_string_ostream os(key);
  os << op->getName() << op->getAttrDictionary() << '(';
  for (Value operand : op->getOperands()) {
    std::optional<std::string> inner = constantKey(operand);
    if (!inner)
      return std::nullopt;
    os << *inner << ',';
  }
  os << ')' << cast<OpResult>(value).getResultNumber() << value.getType();
  return key;
}

/// The text that names a mixture's routed experts (constantKey of each
/// weight and bias, and the attributes the expansion reads), or none when
/// a weight is not a constant.
std::optional<std::string> expertsKey(MoeOp moe) {
  std::string key;
  llvm::raw_string_ostream os(key);
  // The widths only: the rows differ (@decode has one).
  os << moe->getAttrDictionary()
     << moe.getRouterLogits().getType().getDimSize(1) << ','
     << moe.getInput().getType().getDimSize(1) << ','
     << moe.getType().getDimSize(1);
  for (ValueRange values : {moe.getExperts(), moe.getExpertBiases()}) {
    os << '[';
    for (Value value : values) {
      std::optional<std::string> inner = constantKey(value);
      if (!inner)
        return std::nullopt;
      os << *inner << ';';
    }
    os << ']';
  }
  return key;
}

/// `type` with any number of rows.
RankedTensorType anyRows(Type type) {
  auto ranked = cast<RankedTensorType>(type);
  return RankedTensorType::get({ShapedType::kDynamic, ranked.getDimSize(1)},
                               ranked.getElementType());
}

/// Expert parallelism: each of `ranks` ranks runs `local` = experts / ranks
/// experts, in the places of experts [0, local), whose weights hold the
/// rank's own experts (the packager writes them from the checkpoint
/// tensors kRankWeightSourcesAttrName names). Empty: every rank runs all.
struct ExpertSplit {
  FlatSymbolRefAttr grid;
  int64_t local = 0;
  /// The shared expert's features split too (splitSharedExperts): its
  /// part is added before the all-reduce.
  bool sharedSplit = false;
  explicit operator bool() const { return bool(grid); }
};

/// The first `count` experts' values of `values` (3 an expert), all of
/// them if `count` is 0, none if there are none.
ValueRange firstExperts(ValueRange values, int64_t count) {
  return count && !values.empty() ? values.take_front(3 * count) : values;
}

/// A private function of `moe`'s routed experts: (rows, their experts,
/// their weights) -> the sum, with the experts' weights read inside.
func::FuncOp outlineExperts(SymbolTable &symbols, MoeOp moe, RouteOp route,
                            ExpertSplit split) {
  ModuleOp module = cast<ModuleOp>(symbols.getOp());
  Location loc = moe.getLoc();
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  auto type = b.getFunctionType({anyRows(moe.getInput().getType()),
                                 route.getExperts().getType(),
                                 route.getWeights().getType()},
                                {anyRows(moe.getType())});
  auto func = func::FuncOp::create(b, loc, "routed_experts", type);
  func.setPrivate();
  symbols.insert(func);
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  IRMapping mapping;
  SmallVector<Value> weights, biases;
  for (Value value : firstExperts(moe.getExperts(), split.local))
    weights.push_back(rematerialize(b, value, mapping));
  for (Value value : firstExperts(moe.getExpertBiases(), split.local))
    biases.push_back(rematerialize(b, value, mapping));
  Value sum =
      routedExperts(b, moe, entry->getArgument(0), entry->getArgument(1),
                    entry->getArgument(2), weights, biases);
  func::ReturnOp::create(b, loc, sum);
  return func;
}

/// The expert ids `experts` as this rank's local ones: less rank · local,
/// so that its experts are [0, local) and the others' match none.
Value localExperts(OpBuilder &b, Location loc, Value experts,
                   ExpertSplit split) {
  Value rank = shard::ProcessLinearIndexOp::create(b, loc, split.grid);
  Value first = arith::MulIOp::create(
      b, loc, rank, arith::ConstantIndexOp::create(b, loc, split.local));
  Value offset = arith::IndexCastOp::create(b, loc, b.getI32Type(), first);
  auto type = cast<RankedTensorType>(experts.getType());
  Value empty = tensor::EmptyOp::create(
      b, loc, tensor::getMixedSizes(b, loc, experts), type.getElementType());
  AffineMap identity = b.getMultiDimIdentityMap(2);
  return linalg::GenericOp::create(
             b, loc, type, ValueRange{experts}, ValueRange{empty},
             ArrayRef<AffineMap>{identity, identity},
             ArrayRef<utils::IteratorType>{utils::IteratorType::parallel,
                                           utils::IteratorType::parallel},
             [&](OpBuilder &nb, Location l, ValueRange args) {
               linalg::YieldOp::create(
                   nb, l,
                   ValueRange{arith::SubIOp::create(nb, l, args[0], offset)});
             })
      .getResult(0);
}

/// `moe` as its routing, its routed experts (inline, or a call of `shared`
/// where given; split over the ranks, their sums all-reduced, with `split`)
/// and its shared expert.
void expand(MoeOp moe, llvm::function_ref<func::FuncOp(RouteOp)> shared,
            ExpertSplit split) {
  OpBuilder b(moe);
  Location loc = moe.getLoc();
  int64_t dyn = ShapedType::kDynamic, k = moe.getTopK();
  auto route = RouteOp::create(
      b, loc,
      TypeRange{RankedTensorType::get({dyn, k}, b.getF32Type()),
                RankedTensorType::get({dyn, k}, b.getI32Type())},
      moe.getRouterLogits(), moe.getSelectionBias(), moe.getExpertScales(),
      moe.getTopKAttr(), moe.getNormalizeAttr(), moe.getScoringAttr(),
      moe.getGroupsAttr(), moe.getTopGroupsAttr(), moe.getRoutedScaleAttr());
  Value x = moe.getInput(), out;
  Value experts = split ? localExperts(b, loc, route.getExperts(), split)
                        : route.getExperts();
  if (func::FuncOp callee = shared ? shared(route) : func::FuncOp()) {
    Type rows = callee.getFunctionType().getInput(0);
    Value input =
        x.getType() == rows ? x : tensor::CastOp::create(b, loc, rows, x);
    out = func::CallOp::create(b, loc, callee,
                               ValueRange{input, experts, route.getWeights()})
              .getResult(0);
    if (out.getType() != moe.getType())
      out = tensor::CastOp::create(b, loc, moe.getType(), out);
  } else {
    out = routedExperts(b, moe, x, experts, route.getWeights(),
                        firstExperts(moe.getExperts(), split.local),
                        firstExperts(moe.getExpertBiases(), split.local));
  }
  // Each rank's sum holds its experts' part of every token's: their sum is
  // the mixture's. Every rank holds every token's row already (attention's
  // all-reduce made it whole), so only the combining needs a message: one
  // all-reduce of [tokens, features], as a row-parallel projection's. An
  // all-to-all would move k rows a token each way, k times the bytes.
  bool sharedExpert = !moe.getShared().empty();
  if (sharedExpert && split.sharedSplit)
    out = addSharedExpert(b, moe, out);
  if (split)
    out =
        shard::AllReduceOp::create(b, loc, out.getType(), split.grid.getValue(),
                                   ArrayRef<int16_t>{0}, out);
  if (sharedExpert && !split.sharedSplit)
    out = addSharedExpert(b, moe, out);
  moe.replaceAllUsesWith(out);
  moe.erase();
}

/// The weight `value` is read from, through one-operand ops (a dequantize).
WeightOp weightBehind(Value value) {
  while (Operation *op = value.getDefiningOp()) {
    if (auto weight = dyn_cast<WeightOp>(op))
      return weight;
    if (op->getNumOperands() != 1)
      return WeightOp();
    value = op->getOperand(0);
  }
  return WeightOp();
}

/// Plans `moe`'s experts split over `ranks` (expert parallelism): for each
/// weight of the first experts / ranks experts, the weights of the experts
/// each rank runs in its place, added to `sources`. None (every rank runs
/// every expert) where the experts are not a multiple of the ranks or a
/// weight is not whole on every rank or differs in type from its place's.
ExpertSplit
planExpertSplit(MoeOp moe, int64_t ranks, FlatSymbolRefAttr grid,
                llvm::MapVector<StringAttr, SmallVector<Attribute>> &sources) {
  int64_t count = moe.getRouterLogits().getType().getDimSize(1);
  if (ranks <= 1 || !grid || count % ranks != 0)
    return ExpertSplit();
  int64_t local = count / ranks;
  llvm::MapVector<StringAttr, SmallVector<Attribute>> planned;
  for (ValueRange values : {moe.getExperts(), moe.getExpertBiases()}) {
    for (int64_t place = 0, e = values.size() / ranks; place < e; ++place) {
      SmallVector<Attribute> names;
      WeightOp first;
      for (int64_t rank = 0; rank < ranks; ++rank) {
        WeightOp weight = weightBehind(values[rank * e + place]);
        auto decl = weight ? SymbolTable::lookupNearestSymbolFrom<WeightDeclOp>(
                                 weight, weight.getNameAttr())
                           : WeightDeclOp();
        if (!decl || decl->hasAttr(kSplitOverRanksAttrName) ||
            decl->hasAttr(kPartialOverRanksAttrName) ||
            (first && weight.getType() != first.getType()))
          return ExpertSplit();
        first = first ? first : weight;
        names.push_back(weight.getNameAttr().getAttr());
      }
      planned[first.getNameAttr().getAttr()] = names;
    }
  }
  for (auto &[place, names] : planned)
    sources[place] = names;
  return ExpertSplit{grid, local};
}

/// The shared experts of `moes` split by features over `ranks`, as a dense
/// MLP's: gate and up by rows, down by columns, each rank's declarations
/// its part (recorded in `tfm.split_over_ranks` and the module's
/// `tfm.rank_weights`, as tfm-localize-sharded-weights records a split).
/// A shared expert whose weights something else reads, or whose width the
/// ranks do not divide (or its stored blocks), stays whole. Returns the
/// mixtures whose shared expert is split.
llvm::DenseSet<Operation *>
splitSharedExperts(ModuleOp module, ArrayRef<MoeOp> moes, int64_t ranks) {
  // Weight name -> (its place in tfm.moe's shared list, whether it can be
  // split there).
  llvm::StringMap<std::pair<unsigned, bool>> places;
  auto splittable = [&](Value value, unsigned place) {
    auto weight = value.getDefiningOp<WeightOp>();
    if (!weight)
      return false;
    auto decl = SymbolTable::lookupNearestSymbolFrom<WeightDeclOp>(
        weight, weight.getNameAttr());
    int64_t axis = place == 2 ? 1 : 0;
    int64_t size = weight.getType().getDimSize(axis);
    auto stored =
        decl ? decl->getAttrOfType<StringAttr>(kCheckpointDtypeAttrName)
             : StringAttr();
    bool blocks = stored && isCheckpointOnlyDtype(stored.getValue());
    return decl && !decl->hasAttr(kSplitOverRanksAttrName) &&
           !decl->hasAttr(kPartialOverRanksAttrName) && size % ranks == 0 &&
           (axis == 0 || !blocks ||
            (size / ranks) % checkpointBlockColumns(stored.getValue()) == 0);
  };
  for (MoeOp moe : moes)
    for (unsigned place = 0; place < 3 && moe.getShared().size() >= 3;
         ++place) {
      Value value = moe.getShared()[place];
      auto weight = value.getDefiningOp<WeightOp>();
      if (!weight)
        continue;
      auto [it, fresh] =
          places.try_emplace(weight.getName(), place, splittable(value, place));
      if (!fresh && it->second.first != place)
        it->second.second = false;
    }
  // Only where every read of the weight is that place's.
  module.walk([&](WeightOp weight) {
    auto it = places.find(weight.getName());
    if (it == places.end())
      return;
    for (OpOperand &use : weight->getUses()) {
      auto moe = dyn_cast<MoeOp>(use.getOwner());
      unsigned first = moe ? moe.getShared().getBeginOperandIndex() : 0;
      if (!moe || use.getOperandNumber() != first + it->second.first)
        it->second.second = false;
    }
  });
  llvm::DenseSet<Operation *> split;
  for (MoeOp moe : moes) {
    ValueRange shared = moe.getShared();
    if (shared.size() < 3 ||
        !llvm::all_of(shared.take_front(3), [&](Value value) {
          auto weight = value.getDefiningOp<WeightOp>();
          return weight && places.lookup(weight.getName()).second;
        }))
      continue;
    split.insert(moe);
  }
  // The declarations of the split, their parts' types, and their readers.
  MLIRContext *context = module.getContext();
  SmallVector<NamedAttribute> recorded;
  if (auto existing =
          module->getAttrOfType<DictionaryAttr>(kRankWeightsAttrName))
    recorded.append(existing.begin(), existing.end());
  llvm::StringMap<RankedTensorType> parts;
  for (auto &[name, place] : places) {
    bool used = llvm::any_of(split, [&](Operation *op) {
      auto weight =
          cast<MoeOp>(op).getShared()[place.first].getDefiningOp<WeightOp>();
      return weight.getName() == name;
    });
    if (!used)
      continue;
    auto decl = cast<WeightDeclOp>(
        SymbolTable::lookupSymbolIn(module, StringAttr::get(context, name)));
    auto whole = cast<RankedTensorType>(decl.getType());
    int64_t axis = place.first == 2 ? 1 : 0;
    SmallVector<int64_t> shape(whole.getShape());
    shape[axis] /= ranks;
    auto array = DenseI64ArrayAttr::get(context, {axis, ranks});
    decl.setType(whole.clone(shape));
    decl->setAttr(kSplitOverRanksAttrName, array);
    recorded.emplace_back(decl.getSymNameAttr(), array);
    parts[name] = whole.clone(shape);
  }
  module.walk([&](WeightOp weight) {
    auto it = parts.find(weight.getName());
    if (it != parts.end())
      weight.getResult().setType(it->second);
  });
  if (!parts.empty())
    module->setAttr(kRankWeightsAttrName,
                    DictionaryAttr::get(context, recorded));
  return split;
}

struct ExpandExpertsPass
    : mlir::tfm::impl::ExpandExpertsPassBase<ExpandExpertsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<MoeOp> ops;
    module.walk([&](MoeOp moe) { ops.push_back(moe); });
    // Mixtures that several functions hold (each entry point the cache
    // derivations make has every layer's): their experts are compiled once,
    // in a function they all call. A mixture of 128 experts is otherwise
    // 128 blocks of GEMMs in each of @forward, @prefill, @decode and the
    // batched twins, and compiling them dominated the compile.
    SmallVector<std::optional<std::string>> keys(ops.size());
    llvm::StringMap<unsigned> holders;
    if (shareFunctions)
      for (auto [moe, key] : llvm::zip(ops, keys))
        if ((key = expertsKey(moe)))
          ++holders[*key];
    SymbolTable symbols(module);
    // Split over ranks: each holds 1/ranks of every mixture's experts.
    FlatSymbolRefAttr grid;
    auto grids = module.getOps<shard::GridOp>();
    if (ranks > 1 && !grids.empty())
      grid = FlatSymbolRefAttr::get((*grids.begin()).getSymNameAttr());
    llvm::MapVector<StringAttr, SmallVector<Attribute>> sources;
    SmallVector<ExpertSplit> splits;
    SmallVector<MoeOp> splitOps;
    for (MoeOp moe : ops) {
      splits.push_back(planExpertSplit(moe, ranks, grid, sources));
      if (splits.back())
        splitOps.push_back(moe);
    }
    llvm::DenseSet<Operation *> sharedSplit =
        splitSharedExperts(module, splitOps, ranks);
    llvm::StringMap<func::FuncOp> outlined;
    for (auto [moe, key, split] : llvm::zip(ops, keys, splits)) {
      split.sharedSplit = sharedSplit.contains(moe);
      if (!key || holders.lookup(*key) < 2) {
        expand(moe, nullptr, split);
        continue;
      }
      expand(
          moe,
          [&](RouteOp route) {
            func::FuncOp &func = outlined[*key];
            if (!func)
              func = outlineExperts(symbols, moe, route, split);
            return func;
          },
          split);
    }
    if (!sources.empty())
      module->setAttr(kRankWeightSourcesAttrName,
                      withStageSources(module, sources));
  }

  /// The expert places' sources, by tensor rank, composed with a pipeline's
  /// (tfm-pipeline-stages came first and listed its sources by MPI rank,
  /// group by group of `ranks`): MPI rank r holds, in an expert's place,
  /// its stage's tensor of the expert that tensor rank r mod `ranks` runs.
  DictionaryAttr withStageSources(
      ModuleOp module,
      const llvm::MapVector<StringAttr, SmallVector<Attribute>> &experts) {
    MLIRContext *context = &getContext();
    auto stages =
        module->getAttrOfType<DictionaryAttr>(kRankWeightSourcesAttrName);
    llvm::MapVector<StringAttr, SmallVector<Attribute>> sources;
    if (stages)
      for (NamedAttribute entry : stages)
        sources[entry.getName()] = llvm::to_vector(
            cast<ArrayAttr>(entry.getValue()).getAsRange<Attribute>());
    for (auto &[place, names] : experts) {
      ArrayAttr placeStages = stages ? stages.getAs<ArrayAttr>(place) : nullptr;
      if (!placeStages) {
        sources[place] = names;
        continue;
      }
      SmallVector<Attribute> composed;
      for (int64_t rank = 0, e = placeStages.size(); rank < e; ++rank) {
        Attribute expert = names[rank % names.size()];
        auto expertStages = stages.getAs<ArrayAttr>(cast<StringAttr>(expert));
        composed.push_back(expertStages ? expertStages[rank] : expert);
      }
      sources[place] = composed;
    }
    SmallVector<NamedAttribute> entries;
    for (auto &[place, names] : sources)
      entries.emplace_back(place, ArrayAttr::get(context, names));
    return DictionaryAttr::get(context, entries);
  }
};

} // namespace
