//===- LinalgBuilders.cpp - small builders of linalg ops ----------------===//

#include "codegen/linalg/LinalgBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <limits>

using namespace mlir;
using namespace mlir::tfm;

Value mlir::tfm::f32Constant(OpBuilder &b, Location loc, double value) {
  return arith::ConstantOp::create(b, loc, b.getF32FloatAttr(value));
}

Value mlir::tfm::softcapped(OpBuilder &b, Location loc, Value x, double cap) {
  Value scaled = arith::DivFOp::create(b, loc, x, f32Constant(b, loc, cap));
  return arith::MulFOp::create(b, loc, math::TanhOp::create(b, loc, scaled),
                               f32Constant(b, loc, cap));
}

Value mlir::tfm::accumulate(OpBuilder &b, Location loc, Value acc,
                            Value value) {
  auto flags = arith::FastMathFlagsAttr::get(
      b.getContext(), arith::FastMathFlags::reassoc | arith::FastMathFlags::contract);
  return arith::AddFOp::create(b, loc, value, acc, flags);
}

Value mlir::tfm::createEmpty(OpBuilder &b, Location loc, RankedTensorType type,
                             ArrayRef<OpFoldResult> sizes) {
  return tensor::EmptyOp::create(b, loc, sizes, type.getElementType());
}

Value mlir::tfm::createFilled(OpBuilder &b, Location loc,
                              RankedTensorType type,
                              ArrayRef<OpFoldResult> sizes, double value) {
  Value empty = createEmpty(b, loc, type, sizes);
  Value scalar = arith::ConstantOp::create(
      b, loc, b.getFloatAttr(type.getElementType(), value));
  return linalg::FillOp::create(b, loc, scalar, empty).getResult(0);
}

Value mlir::tfm::staticZeros(OpBuilder &b, Location loc,
                             RankedTensorType type) {
  SmallVector<OpFoldResult> sizes;
  for (int64_t d : type.getShape())
    sizes.push_back(b.getIndexAttr(d));
  return createFilled(b, loc, type, sizes, 0.0);
}

Value mlir::tfm::recurrentStartingState(OpBuilder &b, Location loc, Value state,
                                        Value reset, RankedTensorType type) {
  if (!state)
    return staticZeros(b, loc, type);
  if (!reset)
    return state;
  // Selected element by element into a new tensor: a tensor-level
  // arith.select would put the state and a shared zeros tensor in one alias
  // set, and One-Shot Bufferize would then copy the whole cached state
  // rather than update it in place.
  return createElementwise(
      b, loc, state, ValueRange{state},
      [&](OpBuilder &nested, Location l, ValueRange args) -> Value {
        return arith::SelectOp::create(nested, l, reset,
                                       f32Constant(nested, l, 0.0), args[0]);
      });
}

Value mlir::tfm::createGeneric(OpBuilder &b, Location loc, ValueRange inputs,
                               Value init, ArrayRef<AffineMap> maps,
                               ArrayRef<utils::IteratorType> iterators,
                               GenericBody body) {
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{init.getType()}, inputs, ValueRange{init}, maps,
      iterators, [&](OpBuilder &nested, Location nestedLoc, ValueRange args) {
        Value result = body(nested, nestedLoc, args);
        linalg::YieldOp::create(nested, nestedLoc, result);
      });
  return generic.getResult(0);
}

Value mlir::tfm::createElementwise(OpBuilder &b, Location loc, Value like,
                                   ValueRange inputs, GenericBody body) {
  return createElementwise(b, loc, cast<RankedTensorType>(like.getType()),
                           like, inputs, body);
}

Value mlir::tfm::createElementwise(OpBuilder &b, Location loc,
                                   RankedTensorType type, Value like,
                                   ValueRange inputs, GenericBody body) {
  Value init = createEmpty(b, loc, type, tensor::getMixedSizes(b, loc, like));
  SmallVector<AffineMap> maps(inputs.size() + 1,
                              b.getMultiDimIdentityMap(type.getRank()));
  SmallVector<utils::IteratorType> iterators(type.getRank(),
                                             utils::IteratorType::parallel);
  return createGeneric(b, loc, inputs, init, maps, iterators, body);
}

Value mlir::tfm::createRowReduction(OpBuilder &b, Location loc, Value input,
                                    double initValue, GenericBody body) {
  auto type = cast<RankedTensorType>(input.getType());
  int64_t rank = type.getRank();
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, input);
  sizes.pop_back();
  auto reducedType = RankedTensorType::get(type.getShape().drop_back(),
                                           type.getElementType());
  Value init = createFilled(b, loc, reducedType, sizes, initValue);
  AffineMap identity = b.getMultiDimIdentityMap(rank);
  AffineMap dropLast = identity.dropResult(rank - 1);
  SmallVector<utils::IteratorType> iterators(rank,
                                             utils::IteratorType::parallel);
  iterators.back() = utils::IteratorType::reduction;
  return createGeneric(b, loc, input, init, {identity, dropLast}, iterators,
                       body);
}

Value mlir::tfm::softmaxOverLastDim(OpBuilder &b, Location loc, Value logits,
                                    ArrayRef<OpFoldResult> sizes, Value sinks) {
  auto type = cast<RankedTensorType>(logits.getType());
  int64_t rank = type.getRank();
  AffineMap identity = b.getMultiDimIdentityMap(rank);
  AffineMap rows = identity.dropResult(rank - 1);
  SmallVector<utils::IteratorType> parallel(rank,
                                            utils::IteratorType::parallel);
  Value rowMax = createRowReduction(
      b, loc, logits, -std::numeric_limits<double>::infinity(),
      [](OpBuilder &nb, Location l, ValueRange args) -> Value {
        return arith::MaximumFOp::create(nb, l, args[0], args[1]);
      });
  // A sink per leading index: rows [d0, ...] read sinks[d0].
  AffineMap sinkOfRow =
      AffineMap::get(rank - 1, 0, b.getAffineDimExpr(0), b.getContext());
  SmallVector<utils::IteratorType> rowsParallel(rank - 1,
                                                utils::IteratorType::parallel);
  // A generic over the rows of `perRow`'s first value, reading each row's
  // sink after it and `perRow`'s others after that.
  auto overRowsWithSink = [&](ValueRange perRow, GenericBody body) {
    AffineMap rowIdentity = b.getMultiDimIdentityMap(rank - 1);
    SmallVector<Value> inputs{perRow.front(), sinks};
    llvm::append_range(inputs, perRow.drop_front());
    SmallVector<AffineMap> maps{rowIdentity, sinkOfRow};
    maps.append(perRow.size(), rowIdentity); // the others and the result
    return createGeneric(
        b, loc, inputs,
        createEmpty(b, loc, cast<RankedTensorType>(perRow.front().getType()),
                    tensor::getMixedSizes(b, loc, perRow.front())),
        maps, rowsParallel, body);
  };
  if (sinks)
    rowMax = overRowsWithSink(
        rowMax, [](OpBuilder &nb, Location l, ValueRange args) -> Value {
          return arith::MaximumFOp::create(nb, l, args[0], args[1]);
        });
  Value exps = createGeneric(
      b, loc, ValueRange{logits, rowMax}, createEmpty(b, loc, type, sizes),
      {identity, rows, identity}, parallel,
      [](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value shifted = arith::SubFOp::create(nb, l, args[0], args[1]);
        return math::ExpOp::create(nb, l, shifted);
      });
  Value rowSum = createRowReduction(
      b, loc, exps, 0.0, [](OpBuilder &nb, Location l, ValueRange args) -> Value {
        return accumulate(nb, l, args[1], args[0]);
      });
  // The sink's term, e^(sink - the maximum exps were shifted by).
  if (sinks)
    rowSum = overRowsWithSink(
        {rowSum, rowMax},
        [](OpBuilder &nb, Location l, ValueRange args) -> Value {
          Value shifted = arith::SubFOp::create(nb, l, args[1], args[2]);
          return arith::AddFOp::create(nb, l, args[0],
                                       math::ExpOp::create(nb, l, shifted));
        });
  return createGeneric(
      b, loc, ValueRange{exps, rowSum}, createEmpty(b, loc, type, sizes),
      {identity, rows, identity}, parallel,
      [](OpBuilder &nb, Location l, ValueRange args) -> Value {
        return arith::DivFOp::create(nb, l, args[0], args[1]);
      });
}

Value mlir::tfm::createColumnReduction(OpBuilder &b, Location loc, Value x,
                                       bool max) {
  MLIRContext *ctx = b.getContext();
  auto inputType = cast<RankedTensorType>(x.getType());
  auto type = RankedTensorType::get({inputType.getDimSize(1)},
                                    inputType.getElementType());
  double start = max ? -std::numeric_limits<double>::infinity() : 0.0;
  // createFilled takes every dimension's size.
  Value init = createFilled(b, loc, type, {b.getIndexAttr(type.getDimSize(0))},
                            start);
  AffineExpr i = getAffineDimExpr(0, ctx), j = getAffineDimExpr(1, ctx);
  return createGeneric(
      b, loc, x, init,
      {AffineMap::get(2, 0, {i, j}, ctx), AffineMap::get(2, 0, {j}, ctx)},
      {utils::IteratorType::reduction, utils::IteratorType::parallel},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        if (max)
          return arith::MaximumFOp::create(nb, l, args[0], args[1]);
        return accumulate(nb, l, args[1], args[0]);
      });
}

SmallVector<Value> mlir::tfm::forEachSequence(OpBuilder &b, Location loc,
                                              Value lengths, ValueRange inits,
                                              SequenceBody body) {
  Value zero = arith::ConstantIndexOp::create(b, loc, 0);
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value count = tensor::DimOp::create(b, loc, lengths, 0);
  SmallVector<Value> carried = {zero};
  carried.append(inits.begin(), inits.end());
  auto loop = scf::ForOp::create(
      b, loc, zero, count, one, carried,
      [&](OpBuilder &nb, Location l, Value sequence, ValueRange args) {
        Value length = arith::IndexCastOp::create(
            nb, l, nb.getIndexType(),
            tensor::ExtractOp::create(nb, l, lengths, sequence));
        SmallVector<Value> next = {
            arith::AddIOp::create(nb, l, args[0], length)};
        llvm::append_range(next, body(nb, l, sequence, args[0], length,
                                      args.drop_front()));
        scf::YieldOp::create(nb, l, next);
      });
  return SmallVector<Value>(loop.getResults().drop_front());
}

/// Offsets, sizes and strides of rows [start, start + length) of `value`.
static void rowsOf(OpBuilder &b, Location loc, Value value, Value start,
                   OpFoldResult length, SmallVector<OpFoldResult> &offsets,
                   SmallVector<OpFoldResult> &sizes,
                   SmallVector<OpFoldResult> &strides) {
  auto type = cast<RankedTensorType>(value.getType());
  offsets.assign(type.getRank(), b.getIndexAttr(0));
  strides.assign(type.getRank(), b.getIndexAttr(1));
  sizes = tensor::getMixedSizes(b, loc, value);
  offsets[0] = start;
  sizes[0] = length;
}

Value mlir::tfm::sliceRows(OpBuilder &b, Location loc, Value value,
                           Value start, Value length) {
  SmallVector<OpFoldResult> offsets, sizes, strides;
  rowsOf(b, loc, value, start, length, offsets, sizes, strides);
  return tensor::ExtractSliceOp::create(b, loc, value, offsets, sizes,
                                        strides);
}

Value mlir::tfm::insertRows(OpBuilder &b, Location loc, Value rows,
                            Value into, Value start) {
  SmallVector<OpFoldResult> offsets, sizes, strides;
  rowsOf(b, loc, rows, start, tensor::getMixedSize(b, loc, rows, 0), offsets,
         sizes, strides);
  return tensor::InsertSliceOp::create(b, loc, rows, into, offsets, sizes,
                                       strides);
}

Value mlir::tfm::gatherRows(OpBuilder &b, Location loc, Value input, Value rows,
                            RankedTensorType type) {
  SmallVector<OpFoldResult> sizes = {tensor::getMixedSize(b, loc, rows, 0),
                                     tensor::getMixedSize(b, loc, input, 1)};
  Value init = createEmpty(b, loc, type, sizes);
  MLIRContext *ctx = b.getContext();
  return createGeneric(
      b, loc, ValueRange{rows}, init,
      {AffineMap::get(2, 0, getAffineDimExpr(0, ctx)),
       b.getMultiDimIdentityMap(2)},
      {utils::IteratorType::parallel, utils::IteratorType::parallel},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        Value row =
            arith::IndexCastOp::create(nb, l, nb.getIndexType(), args[0]);
        Value column = linalg::IndexOp::create(nb, l, 1);
        return tensor::ExtractOp::create(nb, l, input, ValueRange{row, column});
      });
}
