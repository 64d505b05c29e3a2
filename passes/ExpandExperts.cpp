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
#include "passes/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

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
  int64_t count = moe.getRouterLogits().getType().getDimSize(1);
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
                  b.getF64FloatAttr(double(k) / double(count)));
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

/// A private function of `moe`'s routed experts: (rows, their experts,
/// their weights) -> the sum, with the experts' weights read inside.
func::FuncOp outlineExperts(SymbolTable &symbols, MoeOp moe, RouteOp route) {
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
  for (Value value : moe.getExperts())
    weights.push_back(rematerialize(b, value, mapping));
  for (Value value : moe.getExpertBiases())
    biases.push_back(rematerialize(b, value, mapping));
  Value sum =
      routedExperts(b, moe, entry->getArgument(0), entry->getArgument(1),
                    entry->getArgument(2), weights, biases);
  func::ReturnOp::create(b, loc, sum);
  return func;
}

/// `moe` as its routing, its routed experts (inline, or a call of `shared`
/// where given) and its shared expert.
void expand(MoeOp moe, llvm::function_ref<func::FuncOp(RouteOp)> shared) {
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
  if (func::FuncOp callee = shared ? shared(route) : func::FuncOp()) {
    Type rows = callee.getFunctionType().getInput(0);
    Value input =
        x.getType() == rows ? x : tensor::CastOp::create(b, loc, rows, x);
    out = func::CallOp::create(
              b, loc, callee,
              ValueRange{input, route.getExperts(), route.getWeights()})
              .getResult(0);
    if (out.getType() != moe.getType())
      out = tensor::CastOp::create(b, loc, moe.getType(), out);
  } else {
    out = routedExperts(b, moe, x, route.getExperts(), route.getWeights(),
                        moe.getExperts(), moe.getExpertBiases());
  }
  if (!moe.getShared().empty())
    out = addSharedExpert(b, moe, out);
  moe.replaceAllUsesWith(out);
  moe.erase();
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
    llvm::StringMap<func::FuncOp> outlined;
    for (auto [moe, key] : llvm::zip(ops, keys)) {
      if (!key || holders.lookup(*key) < 2) {
        expand(moe, nullptr);
        continue;
      }
      expand(moe, [&](RouteOp route) {
        func::FuncOp &func = outlined[*key];
        if (!func)
          func = outlineExperts(symbols, moe, route);
        return func;
      });
    }
  }
};

} // namespace
