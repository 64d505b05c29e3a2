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
// a prefill runs one GEMM per expert over the tokens it got.
//
//===----------------------------------------------------------------------===//

#include "ir/TfmOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/IR/Builders.h"

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

void expand(MoeOp moe) {
  OpBuilder b(moe);
  Location loc = moe.getLoc();
  Value x = moe.getInput();
  RankedTensorType type = moe.getType();
  int64_t dyn = ShapedType::kDynamic, k = moe.getTopK();
  int64_t experts = moe.getRouterLogits().getType().getDimSize(1);
  auto route = RouteOp::create(
      b, loc,
      TypeRange{RankedTensorType::get({dyn, k}, b.getF32Type()),
                RankedTensorType::get({dyn, k}, b.getI32Type())},
      moe.getRouterLogits(), moe.getSelectionBias(), moe.getExpertScales(),
      moe.getTopKAttr(),
      moe.getNormalizeAttr(), moe.getScoringAttr(), moe.getGroupsAttr(),
      moe.getTopGroupsAttr(), moe.getRoutedScaleAttr());
  Value zero = arith::ConstantOp::create(b, loc, b.getF32FloatAttr(0.0f));
  Value empty = tensor::EmptyOp::create(
      b, loc, tensor::getMixedSizes(b, loc, x), type.getElementType());
  Value out = linalg::FillOp::create(b, loc, zero, empty).getResult(0);
  auto rowsType = RankedTensorType::get({dyn}, b.getI32Type());
  auto scalesType = RankedTensorType::get({dyn}, b.getF32Type());
  Value none = arith::ConstantIndexOp::create(b, loc, 0);
  for (int64_t e = 0; e < experts; ++e) {
    auto routed = ExpertRowsOp::create(b, loc, TypeRange{rowsType, scalesType},
                                       route.getExperts(), route.getWeights(),
                                       b.getI64IntegerAttr(e));
    Value count = tensor::DimOp::create(b, loc, routed.getRows(), 0);
    Value any =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, count, none);
    Value gate = moe.getExperts()[3 * e], up = moe.getExperts()[3 * e + 1],
          down = moe.getExperts()[3 * e + 2];
    Value gateBias, upBias, downBias;
    if (!moe.getExpertBiases().empty()) {
      gateBias = moe.getExpertBiases()[3 * e];
      upBias = moe.getExpertBiases()[3 * e + 1];
      downBias = moe.getExpertBiases()[3 * e + 2];
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
          Value result = LinearOp::create(b, loc, rows(type.getDimSize(1)),
                                          hidden, down, downBias);
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
                  b.getF64FloatAttr(double(k) / double(experts)));
    out = ifOp.getResult(0);
  }
  if (!moe.getShared().empty())
    out = addSharedExpert(b, moe, out);
  moe.replaceAllUsesWith(out);
  moe.erase();
}

struct ExpandExpertsPass
    : mlir::tfm::impl::ExpandExpertsPassBase<ExpandExpertsPass> {
  void runOnOperation() override {
    SmallVector<MoeOp> ops;
    getOperation().walk([&](MoeOp moe) { ops.push_back(moe); });
    for (MoeOp moe : ops)
      expand(moe);
  }
};

} // namespace
