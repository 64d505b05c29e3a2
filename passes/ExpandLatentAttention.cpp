//===- ExpandLatentAttention.cpp - MLA's expanded form for long prompts ---===//
//
// The tfm-expand-latent-attention pass (see Passes.td). It matches the
// absorbed form DecoderIRBuilder::latentAttention builds, after tfm-kv-cache
// has made its key the cached latent rows:
//
//   %absorbed = tfm.head_linear %q_nope, %key_absorb      [s, H, latent]
//   %query    = tensor.concat dim(2) %absorbed, %q_rope   [s, H, latent+rope]
//   %o        = tfm.attention %query, %rows, %rows[.., :latent] {causal}
//   %values   = tfm.head_linear %o, %value_up             [s, H, value]
//
// and puts it in the else branch of an scf.if whose then branch computes
// %values the expanded way from %q_nope, %q_rope and %rows.
//
//===----------------------------------------------------------------------===//

#include "ir/ExpandedKeyAttr.h"
#include "ir/TfmOps.h"
#include "passes/CachePlan.h"
#include "passes/Passes.h"

#include "mlir/IR/SymbolTable.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_EXPANDLATENTATTENTIONPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// The absorbed form's ops and widths.
struct LatentAttention {
  HeadLinearOp absorb;
  tensor::ConcatOp query;
  AttentionOp attention;
  HeadLinearOp valueUp;
  WeightDeclOp keyUp;
  int64_t heads, latent, nope, rope, value;

  /// What the absorbed form spends beyond the expanded one on each
  /// query-key pair, in the absorbed attention's multiply-adds a head, and
  /// either form's projections per row (the absorbed form's per query, the
  /// expanded one's per key). The expanded attention's multiply-adds count
  /// twice: each of its heads reads keys and values of its own, where the
  /// absorbed form's heads share one latent row, and the runtime's kernel
  /// runs at about half the rate on them (bench/mla_forms.c; with the
  /// plain counts, 256 queries after 3 840 keys were expanded and ran
  /// 0.86x: docs/performance.md, "MLA's two forms in compiled models").
  static constexpr int64_t kExpandedPairWeight = 2;
  int64_t pairSaving() const {
    return 2 * latent + rope - kExpandedPairWeight * (nope + rope + value);
  }
  int64_t rowCost() const { return latent * (nope + value); }
};

/// The absorbed form around `attention`, if it is one this pass rewrites:
/// marked with its stored key up-projection, a plain causal attention over
/// latent rows, each op read only by the next, widths that agree with the
/// weights'.
std::optional<LatentAttention> matchAbsorbed(AttentionOp attention) {
  auto mark = attention->getAttrOfType<FlatSymbolRefAttr>(kExpandedKeyAttrName);
  std::optional<int64_t> latent = latentValueWidth(attention);
  if (!mark || !latent || attention.getBias() || attention.getLengths() ||
      attention.getRelativeBias() || attention.getSinks() ||
      attention.getWindow() || attention.getSoftcap() ||
      !attention->hasOneUse())
    return std::nullopt;
  LatentAttention m;
  m.attention = attention;
  m.latent = *latent;
  m.query = attention.getQuery().getDefiningOp<tensor::ConcatOp>();
  m.valueUp = dyn_cast<HeadLinearOp>(*attention->getUsers().begin());
  if (!m.query || m.query.getDim() != 2 || m.query.getInputs().size() != 2 ||
      !m.query->hasOneUse() || !m.valueUp ||
      m.valueUp.getInput() != attention.getResult())
    return std::nullopt;
  m.absorb = m.query.getInputs()[0].getDefiningOp<HeadLinearOp>();
  if (!m.absorb || !m.absorb->hasOneUse())
    return std::nullopt;
  m.keyUp = SymbolTable::lookupNearestSymbolFrom<WeightDeclOp>(attention, mark);
  if (!m.keyUp)
    return std::nullopt;
  auto queryNope = cast<RankedTensorType>(m.absorb.getInput().getType());
  RankedTensorType keyUp = m.keyUp.getTensorType();
  RankedTensorType values = m.valueUp.getType();
  m.heads = queryNope.getDimSize(1);
  m.nope = queryNope.getDimSize(2);
  m.rope =
      cast<RankedTensorType>(m.query.getInputs()[1].getType()).getDimSize(2);
  m.value = values.getDimSize(2);
  int64_t keyWidth =
      cast<RankedTensorType>(attention.getKey().getType()).getDimSize(2);
  // A split model's heads are the rank's own; the declaration keeps all.
  if (keyUp.getRank() != 2 || !keyUp.getElementType().isF32() ||
      keyUp.getShape() != ArrayRef<int64_t>{m.heads * m.nope, m.latent} ||
      cast<RankedTensorType>(m.valueUp.getWeight().getType()).getShape() !=
          ArrayRef<int64_t>{m.heads * m.value, m.latent} ||
      keyWidth != m.latent + m.rope || ShapedType::isDynamic(m.rope) ||
      m.pairSaving() <= 0)
    return std::nullopt;
  return m;
}

/// Whether the expanded form can cost less for some key count: a static
/// query count s gives it the pairs' saving s · saving per key beyond s,
/// against rowCost per key.
bool mayPay(LatentAttention m) {
  int64_t queries =
      cast<RankedTensorType>(m.attention.getQuery().getType()).getDimSize(0);
  return ShapedType::isDynamic(queries) ||
         queries * m.pairSaving() >= m.rowCost();
}

/// i1: whether the expanded form costs fewer multiply-adds for this call's
/// query and key counts.
Value expandedCostsLess(OpBuilder &b, Location loc, LatentAttention m) {
  auto constant = [&](int64_t v) -> Value {
    return arith::ConstantIndexOp::create(b, loc, v);
  };
  // Of the query's unrotated part: the query itself moves into the if.
  Value queries = tensor::DimOp::create(b, loc, m.absorb.getInput(), 0);
  Value keys = tensor::DimOp::create(b, loc, m.attention.getKey(), 0);
  Value pairs = arith::MulIOp::create(b, loc, queries, keys);
  if (m.attention.getCausal()) {
    // Query i (of s) sees the t − s earlier keys and i + 1 of its own.
    Value earlier = arith::SubIOp::create(b, loc, queries, constant(1));
    Value hidden = arith::DivUIOp::create(
        b, loc, arith::MulIOp::create(b, loc, queries, earlier), constant(2));
    pairs = arith::SubIOp::create(b, loc, pairs, hidden);
  }
  Value saved = arith::MulIOp::create(b, loc, pairs, constant(m.pairSaving()));
  Value extraRows = arith::SubIOp::create(b, loc, keys, queries);
  Value spent = arith::MulIOp::create(b, loc, extraRows, constant(m.rowCost()));
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::sge, saved, spent);
}

/// The expanded form's [s, H, value] result.
Value buildExpanded(OpBuilder &b, Location loc, LatentAttention m) {
  int64_t dyn = ShapedType::kDynamic;
  Type f32 = b.getF32Type();
  Value rows = m.attention.getKey();
  Value latent = latentColumns(b, loc, rows, 0, m.latent, /*dropHead=*/true);
  Value keyUp =
      WeightOp::create(b, loc, m.keyUp.getTensorType(), m.keyUp.getSymName());
  auto project = [&](Value weight, int64_t width) -> Value {
    return LinearOp::create(
        b, loc, RankedTensorType::get({dyn, m.heads, width}, f32), latent,
        weight, /*bias=*/Value(), ActivationKindAttr(), UnitAttr());
  };
  Value keysNope = project(keyUp, m.nope);
  Value values = project(m.valueUp.getWeight(), m.value);
  // The rotated part is one head's, the same for every query head.
  Value rotated =
      latentColumns(b, loc, rows, m.latent, m.rope, /*dropHead=*/true);
  Value empty = tensor::EmptyOp::create(
      b, loc,
      ArrayRef<OpFoldResult>{tensor::getMixedSize(b, loc, rows, 0),
                             b.getIndexAttr(m.heads), b.getIndexAttr(m.rope)},
      f32);
  Value keysRope =
      linalg::BroadcastOp::create(b, loc, rotated, empty, ArrayRef<int64_t>{1})
          ->getResult(0);
  Value keys =
      tensor::ConcatOp::create(b, loc, 2, ValueRange{keysNope, keysRope});
  Value query = tensor::ConcatOp::create(
      b, loc, 2, ValueRange{m.absorb.getInput(), m.query.getInputs()[1]});
  return AttentionOp::create(
      b, loc, m.valueUp.getType(), query, keys, values, /*bias=*/Value(),
      /*lengths=*/Value(), /*relative_bias=*/Value(), /*sinks=*/Value(),
      m.attention.getScaleAttr(), m.attention.getCausalAttr(),
      /*window=*/IntegerAttr(), /*max_distance=*/IntegerAttr(),
      /*softcap=*/FloatAttr());
}

/// The scf.if that picks a form, in the absorbed form's place.
void expand(LatentAttention m) {
  Location loc = m.attention.getLoc();
  OpBuilder b(m.valueUp);
  Value cheaper = expandedCostsLess(b, loc, m);
  auto choice = scf::IfOp::create(b, loc, TypeRange{m.valueUp.getType()},
                                  cheaper, /*withElseRegion=*/true);
  m.valueUp.getResult().replaceAllUsesWith(choice.getResult(0));

  b.setInsertionPointToStart(&choice.getThenRegion().front());
  scf::YieldOp::create(b, loc, buildExpanded(b, loc, m));

  Block &absorbed = choice.getElseRegion().front();
  for (Operation *op : {m.absorb.getOperation(), m.query.getOperation(),
                        m.attention.getOperation(), m.valueUp.getOperation()})
    op->moveBefore(&absorbed, absorbed.end());
  b.setInsertionPointToEnd(&absorbed);
  scf::YieldOp::create(b, loc, m.valueUp.getResult());
}

struct ExpandLatentAttentionPass
    : tfm::impl::ExpandLatentAttentionPassBase<ExpandLatentAttentionPass> {
  void runOnOperation() override {
    SmallVector<LatentAttention> found;
    getOperation().walk([&](AttentionOp attention) {
      if (std::optional<LatentAttention> m = matchAbsorbed(attention))
        if (mayPay(*m))
          found.push_back(*m);
    });
    for (LatentAttention m : found)
      expand(m);
  }
};

} // namespace
