//===- WidenInMatmuls.cpp - products read narrow float weights as stored -===//
//
// See WidenInMatmulsPass in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "codegen/cuda/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_WIDENINMATMULSPASS
#include "codegen/cuda/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;

namespace {

/// The narrow tensor that `value` widens element by element (a
/// linalg.generic of identity maps whose body is one arith.extf), or null.
Value widenedFrom(Value value) {
  auto generic = value.getDefiningOp<linalg::GenericOp>();
  if (!generic || !generic.hasPureTensorSemantics() ||
      generic.getNumDpsInputs() != 1 || generic.getNumDpsInits() != 1 ||
      generic.getNumParallelLoops() != generic.getNumLoops() ||
      !llvm::all_of(generic.getIndexingMapsArray(),
                    [](AffineMap map) { return map.isIdentity(); }))
    return nullptr;
  Block &body = generic.getRegion().front();
  auto yield = cast<linalg::YieldOp>(body.getTerminator());
  auto extend = yield.getValues()[0].getDefiningOp<arith::ExtFOp>();
  if (!extend || &body.front() != extend.getOperation() ||
      extend.getIn() != body.getArgument(0))
    return nullptr;
  return generic.getDpsInputs()[0];
}

/// The narrow operand a product can read instead of `value`: the tensor
/// a widening widens, or for a concat of widenings of one narrow type (a
/// join whose parts do not line up on the CPU's panels:
/// tfm-quantize-weights) a concat of the narrow tensors, built before
/// `before`. Null when there is none.
Value narrowOperand(OpBuilder &b, Operation *before, Value value) {
  if (Value narrow = widenedFrom(value))
    return narrow;
  auto concat = value.getDefiningOp<tensor::ConcatOp>();
  if (!concat)
    return nullptr;
  SmallVector<Value> parts;
  for (Value input : concat.getInputs()) {
    Value narrow = widenedFrom(input);
    if (!narrow || (!parts.empty() && getElementTypeOrSelf(narrow) !=
                                          getElementTypeOrSelf(parts.front())))
      return nullptr;
    parts.push_back(narrow);
  }
  b.setInsertionPoint(before);
  return tensor::ConcatOp::create(b, concat.getLoc(), concat.getDim(), parts);
}

struct WidenInMatmulsPass
    : mlir::tfm::impl::WidenInMatmulsPassBase<WidenInMatmulsPass> {
  void runOnOperation() override {
    SmallVector<linalg::MatmulOp> matmuls;
    getOperation().walk([&](linalg::MatmulOp matmul) {
      if (matmul.hasPureTensorSemantics())
        matmuls.push_back(matmul);
    });
    for (linalg::MatmulOp matmul : matmuls) {
      OpBuilder b(matmul);
      SmallVector<Value> inputs;
      SmallVector<Operation *> replaced;
      for (Value input : matmul.getDpsInputs()) {
        Value narrow = narrowOperand(b, matmul, input);
        inputs.push_back(narrow ? narrow : input);
        if (narrow)
          replaced.push_back(input.getDefiningOp());
      }
      if (replaced.empty())
        continue;
      // Rebuilt, not updated: the body's block arguments take the
      // operands' element types, and the builder widens them in it.
      SmallVector<NamedAttribute> attributes = {
          b.getNamedAttr("indexing_maps", matmul.getIndexingMaps())};
      if (Attribute cast = matmul.getCastAttr())
        attributes.push_back(b.getNamedAttr("cast", cast));
      auto narrowed = linalg::MatmulOp::create(
          b, matmul.getLoc(), matmul->getResultTypes(), inputs,
          matmul.getDpsInits(), attributes);
      matmul->replaceAllUsesWith(narrowed);
      matmul.erase();
      // What fed only this product goes: a widening, or a concat of
      // widenings and then those.
      for (Operation *op : replaced) {
        if (!op->use_empty())
          continue;
        SmallVector<Operation *> parts;
        if (isa<tensor::ConcatOp>(op))
          for (Value input : op->getOperands())
            parts.push_back(input.getDefiningOp());
        op->erase();
        for (Operation *part : parts)
          if (part->use_empty())
            part->erase();
      }
    }
  }
};

} // namespace
