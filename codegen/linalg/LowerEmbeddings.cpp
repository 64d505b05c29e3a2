//===- LowerEmbeddings.cpp - tokens and positions to linalg ---------------===//
//
// Token embeddings and positional encodings: position ids, table lookups,
// rotary embeddings (cos/sin tables computed once per call) and sinusoidal
// encodings.
//
//===----------------------------------------------------------------------===//

#include "codegen/linalg/LinalgBuilders.h"
#include "codegen/linalg/Passes.h"
#include "codegen/linalg/WeightFormats.h"
#include "codegen/linalg/WeightLayout.h"
#include "ir/TfmOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

using utils::IteratorType;

Value indexToF32(OpBuilder &b, Location loc, Value index) {
  Value i64 = arith::IndexCastOp::create(b, loc, b.getI64Type(), index);
  return arith::SIToFPOp::create(b, loc, b.getF32Type(), i64);
}

/// Positions that skip padding tokens: pos[i] = pad + #{j <= i : t[j] !=
/// pad} for a token, pad for a padding token. A [i, j] generic with j a
/// reduction: quadratic in the length, which is short for the encoders
/// that number positions so.
Value paddedPositions(OpBuilder &b, Location loc, Value tokens, int64_t pad,
                      Type elementType) {
  MLIRContext *ctx = b.getContext();
  auto type = cast<RankedTensorType>(tokens.getType());
  SmallVector<OpFoldResult> sizes = {tensor::getMixedSize(b, loc, tokens, 0)};
  Value padValue = arith::ConstantOp::create(
      b, loc, b.getIntegerAttr(type.getElementType(), pad));
  Value init = linalg::FillOp::create(
                   b, loc, padValue,
                   createEmpty(b, loc, RankedTensorType::get(
                                           type.getShape(), elementType),
                               sizes))
                   .getResult(0);
  AffineExpr i = getAffineDimExpr(0, ctx), j = getAffineDimExpr(1, ctx);
  SmallVector<AffineMap> maps = {AffineMap::get(2, 0, {i}, ctx),
                                 AffineMap::get(2, 0, {j}, ctx),
                                 AffineMap::get(2, 0, {i}, ctx)};
  return createGeneric(
      b, loc, ValueRange{tokens, tokens}, init, maps,
      {IteratorType::parallel, IteratorType::reduction},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        // Counts token j when j <= i and both are real tokens.
        Value row = linalg::IndexOp::create(nb, l, 0);
        Value column = linalg::IndexOp::create(nb, l, 1);
        Value padding = arith::ConstantOp::create(
            nb, l, nb.getIntegerAttr(args[0].getType(), pad));
        Value seen = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ule,
                                           column, row);
        Value realI = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ne,
                                            args[0], padding);
        Value realJ = arith::CmpIOp::create(nb, l, arith::CmpIPredicate::ne,
                                            args[1], padding);
        Value counts = arith::AndIOp::create(
            nb, l, seen, arith::AndIOp::create(nb, l, realI, realJ));
        Value one = arith::ExtUIOp::create(nb, l, args[2].getType(), counts);
        return arith::AddIOp::create(nb, l, args[2], one);
      });
}

struct LowerPositionIds : PackedSequencesPattern<PositionIdsOp> {
  using PackedSequencesPattern::PackedSequencesPattern;
  LogicalResult
  matchAndRewrite(PositionIdsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Type elementType = op.getType().getElementType();
    if (Value lengths = adaptor.getLengths()) {
      // Packed sequences: each numbered alone.
      Value tokens = adaptor.getTokens();
      Value init = createEmpty(rewriter, loc, op.getType(),
                               tensor::getMixedSizes(rewriter, loc, tokens));
      rewriter.replaceOp(
          op, forEachSequence(
                  rewriter, loc, lengths, init,
                  [&](OpBuilder &b, Location l, Value, Value start,
                      Value length, ValueRange carried) -> SmallVector<Value> {
                    Value own = sliceRows(b, l, tokens, start, length);
                    Value positions = PositionIdsOp::create(
                        b, l, own.getType(), own, /*offset=*/Value(),
                        /*lengths=*/Value(), op.getPaddingIdAttr());
                    return {insertRows(b, l, positions, carried[0], start)};
                  }));
      return success();
    }
    if (std::optional<int64_t> padding = op.getPaddingId()) {
      rewriter.replaceOp(op, paddedPositions(rewriter, loc, adaptor.getTokens(),
                                             *padding, elementType));
      return success();
    }
    Value offset = adaptor.getOffset();
    if (!offset)
      offset = arith::ConstantIndexOp::create(rewriter, loc, 0);
    Value result = createElementwise(
        rewriter, loc, adaptor.getTokens(), {},
        [&](OpBuilder &b, Location l, ValueRange) -> Value {
          Value i = linalg::IndexOp::create(b, l, 0);
          Value pos = arith::AddIOp::create(b, l, i, offset);
          return arith::IndexCastOp::create(b, l, elementType, pos);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// Element [row, col] of a weight stored as panels [panels, in, 32]:
/// panels[row / 32][col][row % 32].
Value readPanels(OpBuilder &b, Location loc, Value panels, Value row,
                 Value col) {
  Value width = arith::ConstantIndexOp::create(b, loc, kPanelWidth);
  Value panel = arith::DivUIOp::create(b, loc, row, width);
  Value lane = arith::RemUIOp::create(b, loc, row, width);
  return tensor::ExtractOp::create(b, loc, panels,
                                   ValueRange{panel, col, lane});
}

struct LowerEmbedding : OpConversionPattern<EmbeddingOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(EmbeddingOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value table = adaptor.getTable();
    // A table stored narrower is read as stored: the tfm.dequantize in
    // between stays unconverted (LowerToLinalgPass) and dies with its
    // lookups.
    if (auto widen = op.getTable().getDefiningOp<DequantizeOp>())
      table = widen.getInput();
    // Block tables are the target's to read (tfm-select-cpu-kernels calls
    // the runtime's tfm_rt_embedding_blocks).
    if (blockWeightBytes(table))
      return rewriter.notifyMatchFailure(
          op, "block tables are read by the target's kernels");
    // A table tied to an LM head stored as panels: rows are read from the
    // panels, so that the weight is stored once and the head's GEMV
    // streams it.
    Operation *unpack = table.getDefiningOp();
    Value panels = isPanelUnpack(unpack) ? unpack->getOperand(0) : Value();
    SmallVector<OpFoldResult> sizes = {
        tensor::getMixedSize(rewriter, loc, adaptor.getIds(), 0),
        tensor::getMixedSize(rewriter, loc, table, 1)};
    Value init = createEmpty(rewriter, loc, op.getType(), sizes);
    MLIRContext *ctx = op.getContext();
    AffineMap rows = AffineMap::get(2, 0, getAffineDimExpr(0, ctx));
    Value result = createGeneric(
        rewriter, loc, adaptor.getIds(), init,
        {rows, rewriter.getMultiDimIdentityMap(2)},
        {IteratorType::parallel, IteratorType::parallel},
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          // Ids were range-checked by the runtime before the call.
          Value row = arith::IndexCastOp::create(b, l, b.getIndexType(),
                                                 args[0]);
          Value col = linalg::IndexOp::create(b, l, 1);
          Value value =
              panels ? readPanels(b, l, panels, row, col)
                     : tensor::ExtractOp::create(b, l, table,
                                                 ValueRange{row, col});
          if (!value.getType().isF32())
            value = arith::ExtFOp::create(b, l, b.getF32Type(), value);
          if (std::optional<APFloat> scale = op.getScale())
            value = arith::MulFOp::create(
                b, l, value,
                arith::ConstantOp::create(
                    b, l, b.getFloatAttr(b.getF32Type(), *scale)));
          return value;
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

/// base^(-2·pair/dim): the frequency of dimension pair `pair`, computed as
/// 1 / base^(2·pair/dim) like llama2.c and Hugging Face do.
Value inverseFrequency(OpBuilder &b, Location loc, Value pair, int64_t dim,
                       Value baseF) {
  // Each operand built on its own line: argument evaluation order is
  // unspecified in C++, and the IR must not depend on the host compiler.
  Value pairF = indexToF32(b, loc, pair);
  Value two = f32Constant(b, loc, 2.0);
  Value twice = arith::MulFOp::create(b, loc, two, pairF);
  Value dimF = f32Constant(b, loc, dim);
  Value exponent = arith::DivFOp::create(b, loc, twice, dimF);
  Value power = math::PowFOp::create(b, loc, baseF, exponent);
  Value one = f32Constant(b, loc, 1.0);
  return arith::DivFOp::create(b, loc, one, power);
}

Value inverseFrequency(OpBuilder &b, Location loc, Value pair, int64_t dim,
                       double base) {
  return inverseFrequency(b, loc, pair, dim, f32Constant(b, loc, base));
}

/// Dynamic NTK scaling's base for a row at `position` (i32): theta while
/// position + 1 <= context, else theta · (factor · (position + 1) / context
/// − (factor − 1))^(dim / (dim − 2)), in f32 as transformers computes it.
Value dynamicNtkBase(OpBuilder &b, Location loc, Value position, double theta,
                     double factor, int64_t context, int64_t dim) {
  Value positionF = arith::SIToFPOp::create(b, loc, b.getF32Type(), position);
  Value one = f32Constant(b, loc, 1.0);
  Value length = arith::AddFOp::create(b, loc, positionF, one);
  Value factorF = f32Constant(b, loc, factor);
  Value scaled = arith::MulFOp::create(b, loc, factorF, length);
  Value contextF = f32Constant(b, loc, double(context));
  Value ratio = arith::DivFOp::create(b, loc, scaled, contextF);
  Value shift = f32Constant(b, loc, factor - 1);
  Value grown = arith::SubFOp::create(b, loc, ratio, shift);
  Value exponent = f32Constant(b, loc, double(dim) / double(dim - 2));
  Value power = math::PowFOp::create(b, loc, grown, exponent);
  Value thetaF = f32Constant(b, loc, theta);
  Value base = arith::MulFOp::create(b, loc, thetaF, power);
  Value past = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OGT, length,
                                     contextF);
  return arith::SelectOp::create(b, loc, past, base, thetaF);
}

/// cos (or sin) of positions[i] · theta^(-2j/headDim) (positions[i, c],
/// pair j's section c, with sections) as a [s, headDim/2] table: computed once
/// per call instead of once per element of every head, and shared by Q and K
/// and, once CSE merges the identical tables, by every layer. `rotaryDims`: the
/// rotated dimensions of a head (the table has half as many columns); `given`:
/// the op's explicit inverse frequencies, if any.
Value ropeTable(OpBuilder &b, Location loc, RopeOp op, Value positions,
                bool sine) {
  MLIRContext *ctx = b.getContext();
  int64_t rotaryDims = op.getRotaryDims();
  double theta = op.getTheta().convertToDouble();
  std::optional<ArrayRef<float>> given = op.getFrequencies();
  std::optional<APFloat> ntkFactor = op.getNtkFactor();
  int64_t half = rotaryDims / 2;
  auto positionsType = cast<RankedTensorType>(positions.getType());
  auto tableType = RankedTensorType::get({positionsType.getDimSize(0), half},
                                         b.getF32Type());
  SmallVector<OpFoldResult> sizes = {tensor::getMixedSize(b, loc, positions, 0),
                                     b.getIndexAttr(half)};
  auto angleFunction = [&](OpBuilder &nb, Location l, Value positionI,
                           Value inverse) -> Value {
    Value position = arith::SIToFPOp::create(nb, l, nb.getF32Type(), positionI);
    Value angle = arith::MulFOp::create(nb, l, position, inverse);
    if (sine)
      return math::SinOp::create(nb, l, angle);
    return math::CosOp::create(nb, l, angle);
  };
  if (ntkFactor) {
    // Each row's own base: its inverse frequencies are computed per row.
    return createGeneric(
        b, loc, ValueRange{positions}, createEmpty(b, loc, tableType, sizes),
        {AffineMap::get(2, 0, getAffineDimExpr(0, ctx)),
         b.getMultiDimIdentityMap(2)},
        {IteratorType::parallel, IteratorType::parallel},
        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          Value base = dynamicNtkBase(nb, l, args[0], theta,
                                      ntkFactor->convertToDouble(),
                                      int64_t(*op.getNtkContext()),
                                      rotaryDims);
          Value j = linalg::IndexOp::create(nb, l, 1);
          Value inverse = inverseFrequency(nb, l, j, rotaryDims, base);
          return angleFunction(nb, l, args[0], inverse);
        });
  }
  auto frequencyType = RankedTensorType::get({half}, b.getF32Type());
  if (std::optional<ArrayRef<float>> longer = op.getLongFrequencies()) {
    // LongRoPE: each row's frequencies by its own sequence length.
    Value shortTable = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(frequencyType, *given));
    Value longTable = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(frequencyType, *longer));
    int64_t context = int64_t(*op.getLongContext());
    return createGeneric(
        b, loc, ValueRange{positions, shortTable, longTable},
        createEmpty(b, loc, tableType, sizes),
        {AffineMap::get(2, 0, getAffineDimExpr(0, ctx)),
         AffineMap::get(2, 0, getAffineDimExpr(1, ctx)),
         AffineMap::get(2, 0, getAffineDimExpr(1, ctx)),
         b.getMultiDimIdentityMap(2)},
        {IteratorType::parallel, IteratorType::parallel},
        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          // p + 1 > context, as p >= context.
          Value past = arith::CmpIOp::create(
              nb, l, arith::CmpIPredicate::sge, args[0],
              arith::ConstantIntOp::create(nb, l, args[0].getType(), context));
          Value inverse =
              arith::SelectOp::create(nb, l, past, args[2], args[1]);
          return angleFunction(nb, l, args[0], inverse);
        });
  }
  Value frequencies =
      given ? Value(arith::ConstantOp::create(
                  b, loc, DenseElementsAttr::get(frequencyType, *given)))
            : createGeneric(
                  b, loc, ValueRange{},
                  createEmpty(b, loc, frequencyType, {b.getIndexAttr(half)}),
                  {b.getMultiDimIdentityMap(1)}, {IteratorType::parallel},
                  [&](OpBuilder &nb, Location l, ValueRange) -> Value {
                    Value j = linalg::IndexOp::create(nb, l, 0);
                    return inverseFrequency(nb, l, j, rotaryDims, theta);
                  });
  if (std::optional<ArrayRef<int64_t>> sections = op.getSections()) {
    // Pair j rotates by its section's column of the row's positions.
    return createGeneric(
        b, loc, ValueRange{frequencies}, createEmpty(b, loc, tableType, sizes),
        {AffineMap::get(2, 0, getAffineDimExpr(1, ctx)),
         b.getMultiDimIdentityMap(2)},
        {IteratorType::parallel, IteratorType::parallel},
        [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
          Value i = linalg::IndexOp::create(nb, l, 0);
          Value j = linalg::IndexOp::create(nb, l, 1);
          // The section of pair j: the section ends at or before it.
          Value section = arith::ConstantIndexOp::create(nb, l, 0);
          int64_t end = 0;
          for (size_t c = 0; c + 1 < sections->size(); ++c) {
            end += (*sections)[c];
            Value past = arith::CmpIOp::create(
                nb, l, arith::CmpIPredicate::uge, j,
                arith::ConstantIndexOp::create(nb, l, end));
            section = arith::SelectOp::create(
                nb, l, past, arith::ConstantIndexOp::create(nb, l, c + 1),
                section);
          }
          Value position = tensor::ExtractOp::create(nb, l, positions,
                                                     ValueRange{i, section});
          return angleFunction(nb, l, position, args[0]);
        });
  }
  return createGeneric(
      b, loc, ValueRange{positions, frequencies},
      createEmpty(b, loc, tableType, sizes),
      {AffineMap::get(2, 0, getAffineDimExpr(0, ctx)),
       AffineMap::get(2, 0, getAffineDimExpr(1, ctx)),
       b.getMultiDimIdentityMap(2)},
      {IteratorType::parallel, IteratorType::parallel},
      [&](OpBuilder &nb, Location l, ValueRange args) -> Value {
        return angleFunction(nb, l, args[0], args[1]);
      });
}

struct LowerRope : OpConversionPattern<RopeOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(RopeOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    Value x = adaptor.getInput();
    int64_t headDim = op.getType().getDimSize(2);
    int64_t rotary = op.getRotaryDims();
    bool interleaved = op.getStyle() == RopeStyle::interleaved;
    Value cosTable =
        ropeTable(rewriter, loc, op, adaptor.getPositions(), /*sine=*/false);
    Value sinTable =
        ropeTable(rewriter, loc, op, adaptor.getPositions(), /*sine=*/true);
    // Element d < rotary of a head belongs to pair d / 2 (interleaved) or
    // d mod rotary/2 (halves). Dimensions past `rotary` pass through; the
    // map keeps their (unused) table index in bounds.
    AffineExpr d = getAffineDimExpr(2, ctx);
    AffineExpr rotated = rotary < headDim ? d % rotary : d;
    AffineExpr pairOf = interleaved ? rotated.floorDiv(2) : d % (rotary / 2);
    AffineMap tableMap =
        AffineMap::get(3, 0, {getAffineDimExpr(0, ctx), pairOf}, ctx);
    AffineMap identity = rewriter.getMultiDimIdentityMap(3);
    Value init = createEmpty(rewriter, loc, op.getType(),
                             tensor::getMixedSizes(rewriter, loc, x));
    Value result = createGeneric(
        rewriter, loc, ValueRange{x, cosTable, sinTable}, init,
        {identity, tableMap, tableMap, identity},
        SmallVector<IteratorType>(3, IteratorType::parallel),
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value i = linalg::IndexOp::create(b, l, 0);
          Value h = linalg::IndexOp::create(b, l, 1);
          Value d = linalg::IndexOp::create(b, l, 2);
          // Whether `d` is its pair's second element, and where its partner
          // sits.
          Value isSecond, partner;
          if (interleaved) {
            Value two = arith::ConstantIndexOp::create(b, l, 2);
            Value parity = arith::RemUIOp::create(b, l, d, two);
            isSecond = arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::ne, parity,
                arith::ConstantIndexOp::create(b, l, 0));
            Value one = arith::ConstantIndexOp::create(b, l, 1);
            partner = arith::XOrIOp::create(b, l, d, one);
          } else {
            Value half = arith::ConstantIndexOp::create(b, l, rotary / 2);
            isSecond = arith::CmpIOp::create(b, l, arith::CmpIPredicate::uge,
                                             d, half);
            Value below = arith::SubIOp::create(b, l, d, half);
            Value above = arith::AddIOp::create(b, l, d, half);
            partner = arith::SelectOp::create(b, l, isSecond, below, above);
          }
          Value passThrough;
          if (rotary < headDim) {
            // Past the rotated dimensions: no partner (read itself).
            passThrough = arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::uge, d,
                arith::ConstantIndexOp::create(b, l, rotary));
            partner = arith::SelectOp::create(b, l, passThrough, d, partner);
          }
          Value other =
              tensor::ExtractOp::create(b, l, x, ValueRange{i, h, partner});
          // First element: x·cos − partner·sin; second: x·cos + partner·sin.
          Value xc = arith::MulFOp::create(b, l, args[0], args[1]);
          Value ps = arith::MulFOp::create(b, l, other, args[2]);
          Value second = arith::AddFOp::create(b, l, xc, ps);
          Value first = arith::SubFOp::create(b, l, xc, ps);
          Value rotated =
              arith::SelectOp::create(b, l, isSecond, second, first);
          if (!passThrough)
            return rotated;
          return arith::SelectOp::create(b, l, passThrough, args[0], rotated);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

struct LowerSinusoidalPosition : OpConversionPattern<SinusoidalPositionOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(SinusoidalPositionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    MLIRContext *ctx = op.getContext();
    int64_t dim = op.getType().getDimSize(1);
    double base = op.getBase().convertToDouble();
    bool interleaved = op.getLayout() == SinusoidLayout::interleaved;
    SmallVector<OpFoldResult> sizes = {
        tensor::getMixedSize(rewriter, loc, adaptor.getPositions(), 0),
        rewriter.getIndexAttr(dim)};
    Value init = createEmpty(rewriter, loc, op.getType(), sizes);
    AffineMap rows = AffineMap::get(2, 0, getAffineDimExpr(0, ctx));
    Value result = createGeneric(
        rewriter, loc, adaptor.getPositions(), init,
        {rows, rewriter.getMultiDimIdentityMap(2)},
        {IteratorType::parallel, IteratorType::parallel},
        [&](OpBuilder &b, Location l, ValueRange args) -> Value {
          Value j = linalg::IndexOp::create(b, l, 1);
          Value pair, isCos;
          if (interleaved) {
            Value two = arith::ConstantIndexOp::create(b, l, 2);
            pair = arith::DivUIOp::create(b, l, j, two);
            isCos = arith::CmpIOp::create(
                b, l, arith::CmpIPredicate::ne,
                arith::RemUIOp::create(b, l, j, two),
                arith::ConstantIndexOp::create(b, l, 0));
          } else {
            Value half = arith::ConstantIndexOp::create(b, l, dim / 2);
            pair = arith::RemUIOp::create(b, l, j, half);
            isCos =
                arith::CmpIOp::create(b, l, arith::CmpIPredicate::uge, j, half);
          }
          // In double, rounded once at the end, as the reference tables
          // are made (numpy): p / base^(2i/dim).
          Type f64 = b.getF64Type();
          Value position = arith::SIToFPOp::create(b, l, f64, args[0]);
          Value twice = arith::MulIOp::create(
              b, l, pair, arith::ConstantIndexOp::create(b, l, 2));
          Value twiceF = arith::UIToFPOp::create(
              b, l, f64,
              arith::IndexCastUIOp::create(b, l, b.getI64Type(), twice));
          Value dimF = arith::ConstantOp::create(b, l, b.getF64FloatAttr(dim));
          Value exponent = arith::DivFOp::create(b, l, twiceF, dimF);
          Value baseF = arith::ConstantOp::create(b, l, b.getF64FloatAttr(base));
          Value power = math::PowFOp::create(b, l, baseF, exponent);
          Value angle = arith::DivFOp::create(b, l, position, power);
          Value cos = math::CosOp::create(b, l, angle);
          Value sin = math::SinOp::create(b, l, angle);
          Value value = arith::SelectOp::create(b, l, isCos, cos, sin);
          return arith::TruncFOp::create(b, l, b.getF32Type(), value);
        });
    rewriter.replaceOp(op, result);
    return success();
  }
};

} // namespace

void mlir::tfm::populateLowerEmbeddingPatterns(RewritePatternSet &patterns) {
  patterns.add<LowerPositionIds, LowerEmbedding, LowerRope,
               LowerSinusoidalPosition>(patterns.getContext());
}
