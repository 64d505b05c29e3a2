//===- FuseQKV.cpp - sibling head projections as one GEMM ---------------===//
//
// The tfm-fuse-qkv pass (see Passes.td). Q, K and V of one layer read the
// same normalized input: one GEMM over [W_q; W_k; W_v] reads it once and
// gives OpenBLAS (or any GEMM) a wider, more efficient product. The heads
// are sliced from the fused result along the heads dimension, so grouped-
// query shapes (fewer K/V heads) need nothing special.
//
//===----------------------------------------------------------------------===//

#include "ir/TfmOps.h"
#include "passes/HoistWeights.h"
#include "passes/Passes.h"

#include "llvm/ADT/MapVector.h"
#include "llvm/Support/Debug.h"

#define DEBUG_TYPE "tfm-fuse-qkv"

namespace mlir::tfm {
#define GEN_PASS_DEF_FUSEQKVPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// A projection that splits into heads and has no epilogue.
bool isHeadProjection(LinearOp op) {
  return op.getType().getRank() == 3 && !op.getActivation() && !op.getGated();
}

/// The checkpoint-only format its checkpoint stores the projection's
/// weight in ("q4_k", "q5_k", "q6_k", "mxfp4": tfm.checkpoint_dtype), empty
/// for anything else. Projections
/// in different K-quants stay apart: a join is stored in one format, and
/// neither holds the other's blocks, so a join of llama.cpp's Q4_K_M
/// layers whose V is Q6_K would be int8 (8.5 bits a weight for Q and K's
/// 4.625).
StringRef kQuantOf(LinearOp op) {
  auto weight = op.getWeight().getDefiningOp<WeightOp>();
  if (!weight)
    return {};
  auto decl = SymbolTable::lookupNearestSymbolFrom<WeightDeclOp>(
      op, weight.getNameAttr());
  auto dtype =
      decl ? decl->getAttrOfType<StringAttr>(kCheckpointDtypeAttrName) : nullptr;
  if (!dtype || !isCheckpointOnlyDtype(dtype.getValue()))
    return {};
  return dtype.getValue();
}

/// Joins `group` (same input, same head_dim, all with a bias or none) into
/// one linear placed at the first of them.
void fuse(ArrayRef<LinearOp> group) {
  LinearOp first = group.front();
  SmallVector<Value> parameters;
  for (LinearOp op : group)
    parameters.append({op.getWeight(), op.getBias()});
  IRRewriter b{OpBuilder(first)}; // inserts before the first projection
  if (!hoistWeightsBefore(parameters, first, b))
    return;
  Location loc = b.getFusedLoc(llvm::to_vector(
      llvm::map_range(group, [](LinearOp op) { return op.getLoc(); })));
  SmallVector<Value> weights, biases;
  int64_t heads = 0, rows = 0;
  for (LinearOp op : group) {
    weights.push_back(op.getWeight());
    if (op.getBias())
      biases.push_back(op.getBias());
    heads += op.getType().getDimSize(1);
    rows += op.getWeight().getType().getDimSize(0);
  }
  RankedTensorType weightType = first.getWeight().getType();
  Type element = weightType.getElementType();
  Value weight = ConcatOp::create(
      b, loc, RankedTensorType::get({rows, weightType.getDimSize(1)}, element),
      weights);
  Value bias;
  if (!biases.empty())
    bias = ConcatOp::create(b, loc, RankedTensorType::get({rows}, element),
                            biases);
  RankedTensorType resultType = first.getType();
  int64_t headDim = resultType.getDimSize(2);
  auto fusedType = RankedTensorType::get(
      {resultType.getDimSize(0), heads, headDim}, element);
  Value fused =
      LinearOp::create(b, loc, fusedType, first.getInput(), weight, bias);
  OpFoldResult seq = tensor::getMixedSize(b, loc, fused, 0);
  int64_t offset = 0;
  SmallVector<Value> slices;
  for (LinearOp op : group) {
    int64_t count = op.getType().getDimSize(1);
    SmallVector<OpFoldResult> offsets = {b.getIndexAttr(0),
                                         b.getIndexAttr(offset),
                                         b.getIndexAttr(0)};
    SmallVector<OpFoldResult> sizes = {seq, b.getIndexAttr(count),
                                       b.getIndexAttr(headDim)};
    SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
    Value slice = tensor::ExtractSliceOp::create(b, op.getLoc(), op.getType(),
                                                 fused, offsets, sizes,
                                                 strides);
    slices.push_back(slice);
    offset += count;
  }
  for (auto [index, op] : llvm::enumerate(group)) {
    LinearOp projection = op;
    projection.replaceAllUsesWith(slices[index]);
    projection.erase();
  }
  LLVM_DEBUG(llvm::dbgs() << "fused " << group.size() << " projections into "
                          << fusedType << "\n");
}

struct FuseQKVPass : mlir::tfm::impl::FuseQKVPassBase<FuseQKVPass> {
  void runOnOperation() override {
    // Sibling projections of each input, in program order, grouped by
    // head_dim, by whether they carry a bias and by their checkpoint's
    // K-quant.
    llvm::MapVector<std::tuple<Value, int64_t, int, Type, StringRef>,
                    SmallVector<LinearOp>>
        groups;
    getOperation().walk([&](LinearOp op) {
      if (!isHeadProjection(op))
        return;
      auto key = std::make_tuple(op.getInput(), op.getType().getDimSize(2),
                                 op.getBias() ? 1 : 0,
                                 op.getWeight().getType().getElementType(),
                                 kQuantOf(op));
      groups[key].push_back(op);
    });
    for (auto &[key, group] : groups)
      if (group.size() > 1)
        fuse(group);
  }
};

} // namespace
