//===- BatchImages.cpp - derive @<name>_batch over a batch of images ----===//
//
// The tfm-batch-images pass (see Passes.td): an image model's entry point
// takes one image; its batch twin takes `[images, C, H, W]` and runs the
// entry point's body once per image in an scf.for, inserting each result
// into row `i` of `[images, ...]`. The weights (and other constants) are
// taken before the loop.
//
//===----------------------------------------------------------------------===//

#include "ir/DiffusionAttr.h"
#include "ir/TfmOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_BATCHIMAGESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// Whether `func` is an image entry point: one static-shaped features input
/// and one static-shaped result.
bool takesOneImage(func::FuncOp func) {
  if (func.getNumArguments() != 1 || func.getNumResults() != 1)
    return false;
  auto role = func.getArgAttrOfType<InputRoleAttr>(0, kInputArgAttrName);
  auto image = dyn_cast<RankedTensorType>(func.getArgumentTypes()[0]);
  auto result = dyn_cast<RankedTensorType>(func.getResultTypes()[0]);
  return role && role.getValue() == InputRole::features && image &&
         image.hasStaticShape() && result && result.hasStaticShape();
}

/// `type` with a leading dynamic dimension: one `type` per image.
RankedTensorType batchOf(RankedTensorType type) {
  SmallVector<int64_t> shape = {ShapedType::kDynamic};
  llvm::append_range(shape, type.getShape());
  return RankedTensorType::get(shape, type.getElementType());
}

/// Offsets [i, 0, ...], sizes [1, shape...], unit strides: row `i` of a
/// batch of `type`.
struct BatchRow {
  SmallVector<OpFoldResult> offsets, sizes, strides;
  BatchRow(OpBuilder &b, Value i, RankedTensorType type) {
    offsets.push_back(i);
    sizes.push_back(b.getIndexAttr(1));
    strides.push_back(b.getIndexAttr(1));
    for (int64_t size : type.getShape()) {
      offsets.push_back(b.getIndexAttr(0));
      sizes.push_back(b.getIndexAttr(size));
      strides.push_back(b.getIndexAttr(1));
    }
  }
};

/// Ops that do not depend on the image: weights and constants.
bool isInvariant(Operation &op) {
  return op.getNumOperands() == 0 &&
         (isa<WeightOp>(op) || op.hasTrait<OpTrait::ConstantLike>());
}

void buildBatch(func::FuncOp func) {
  Location loc = func.getLoc();
  OpBuilder b(func->getContext());
  b.setInsertionPointAfter(func);
  auto imageType = cast<RankedTensorType>(func.getArgumentTypes()[0]);
  auto resultType = cast<RankedTensorType>(func.getResultTypes()[0]);
  auto batch = func::FuncOp::create(
      b, loc, batchTwinName(func),
      b.getFunctionType({batchOf(imageType)}, {batchOf(resultType)}));
  batch.setAllArgAttrs(func.getAllArgAttrs());
  batch.setAllResultAttrs(func.getAllResultAttrs());
  Block *entry = batch.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value images = entry->getArgument(0);

  IRMapping mapping;
  Block &body = func.front();
  for (Operation &op : body.without_terminator())
    if (isInvariant(op))
      b.clone(op, mapping);
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value count = tensor::DimOp::create(b, loc, images, zero);
  Value init =
      tensor::EmptyOp::create(b, loc, batchOf(resultType), ValueRange{count});
  auto loop = scf::ForOp::create(
      b, loc, zero, count, one, ValueRange{init},
      [&](OpBuilder &nested, Location at, Value i, ValueRange rows) {
        BatchRow in(nested, i, imageType);
        Value image = tensor::ExtractSliceOp::create(
            nested, at, imageType, images, in.offsets, in.sizes, in.strides);
        IRMapping perImage = mapping;
        perImage.map(func.getArgument(0), image);
        for (Operation &op : body.without_terminator())
          if (!isInvariant(op))
            nested.clone(op, perImage);
        Value result = perImage.lookup(body.getTerminator()->getOperand(0));
        BatchRow out(nested, i, resultType);
        Value updated = tensor::InsertSliceOp::create(
            nested, at, result, rows[0], out.offsets, out.sizes, out.strides);
        scf::YieldOp::create(nested, at, updated);
      });
  func::ReturnOp::create(b, loc, loop.getResult(0));
}

struct BatchImagesPass : mlir::tfm::impl::BatchImagesPassBase<BatchImagesPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    // A diffusion pipeline's VAE calls take one image at a time in its
    // sampling loop: twins would double the largest code for nothing.
    if (module->hasAttr(kDiffusionAttrName))
      return;
    SmallVector<func::FuncOp> images;
    for (auto func : module.getOps<func::FuncOp>())
      if (mayGetBatchTwin(module, func) && takesOneImage(func))
        images.push_back(func);
    for (func::FuncOp func : images)
      buildBatch(func);
  }
};

} // namespace
