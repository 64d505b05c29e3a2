//===- LowerKVCacheOps.cpp - KV cache reads and appends to tensor ops -----===//
//
// tfm.kv_cache_append and tfm.kv_cache_read as slices of the cache
// tensor [layers, 2, capacity, kv_heads, head_dim]: bufferization turns
// them into in-place writes and views of the runtime's buffer; a windowed
// layer's ring (tfm.kv_ring_append, tfm.kv_ring_read) as two runs of rows. An
// int8 cache's rows (tfm.quantize_rows, tfm.dequantize_rows) as linalg
// generics: the codes, and the scale's bytes taken apart and put together
// again with shifts.
//
//===----------------------------------------------------------------------===//

#include "codegen/linalg/LinalgBuilders.h"
#include "codegen/linalg/Passes.h"
#include "ir/TfmOps.h"

#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// Offsets, sizes and strides of one layer's K (kind 0) or V (kind 1) plane
/// of the cache [layers, 2, capacity, kv_heads, head_dim] (a latent cache
/// has K alone: [layers, 1, ...]), positions
/// [position, position + length).
struct CachePlane {
  SmallVector<OpFoldResult> offsets, sizes, strides;
};

CachePlane cachePlane(OpBuilder &b, RankedTensorType cacheType, int64_t layer,
                      int64_t kind, OpFoldResult position,
                      OpFoldResult length) {
  ArrayRef<int64_t> shape = cacheType.getShape();
  CachePlane plane;
  plane.offsets = {b.getIndexAttr(layer), b.getIndexAttr(kind), position,
                   b.getIndexAttr(0), b.getIndexAttr(0)};
  plane.sizes = {b.getIndexAttr(1), b.getIndexAttr(1), length,
                 b.getIndexAttr(shape[3]), b.getIndexAttr(shape[4])};
  plane.strides.assign(5, b.getIndexAttr(1));
  return plane;
}

struct LowerKVCacheAppend : OpConversionPattern<KVCacheAppendOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(KVCacheAppendOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value cache = adaptor.getCache();
    OpFoldResult length =
        tensor::getMixedSize(rewriter, loc, adaptor.getKey(), 0);
    // A latent cache's keys alone (no value), in its one plane.
    SmallVector<Value, 2> planes = {adaptor.getKey()};
    if (Value value = adaptor.getValue())
      planes.push_back(value);
    for (auto [kind, rows] : llvm::enumerate(planes)) {
      CachePlane plane = cachePlane(rewriter, op.getType(), op.getLayer(),
                                    kind, adaptor.getPosition(), length);
      // Rank-reducing: [s, kv_heads, head_dim] into [1, 1, s, ...].
      cache = tensor::InsertSliceOp::create(rewriter, loc, rows, cache,
                                            plane.offsets, plane.sizes,
                                            plane.strides);
    }
    rewriter.replaceOp(op, cache);
    return success();
  }
};

struct LowerKVCacheRead : OpConversionPattern<KVCacheReadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(KVCacheReadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    auto cacheType = cast<RankedTensorType>(op.getCache().getType());
    SmallVector<Value> planes;
    for (auto [kind, type] : llvm::enumerate(op.getResultTypes())) {
      // A result of static length (Whisper's fixed encoder frames) reads
      // exactly that many positions; the caller passes that length.
      int64_t rows = cast<RankedTensorType>(type).getDimSize(0);
      OpFoldResult length = ShapedType::isDynamic(rows)
                                ? OpFoldResult(adaptor.getLength())
                                : rewriter.getIndexAttr(rows);
      CachePlane plane = cachePlane(rewriter, cacheType, op.getLayer(), kind,
                                    rewriter.getIndexAttr(0), length);
      planes.push_back(tensor::ExtractSliceOp::create(
          rewriter, loc, cast<RankedTensorType>(type), adaptor.getCache(),
          plane.offsets, plane.sizes, plane.strides));
    }
    rewriter.replaceOp(op, planes);
    return success();
  }
};

/// Where `count` consecutive positions from `first` lie in a ring of
/// `window` rows from row `offset`: at most two runs of rows, the second
/// from the ring's start once the first reaches its end.
struct RingRuns {
  Value firstRow, firstLength, secondLength;
  Value offset; // the second run's row
};

RingRuns ringRuns(OpBuilder &b, Location loc, int64_t offset, int64_t window,
                  Value first, Value count) {
  Value ring = arith::ConstantIndexOp::create(b, loc, window);
  Value base = arith::ConstantIndexOp::create(b, loc, offset);
  Value inRing = arith::RemUIOp::create(b, loc, first, ring);
  RingRuns runs;
  runs.firstRow = arith::AddIOp::create(b, loc, base, inRing);
  runs.firstLength = arith::MinUIOp::create(
      b, loc, count, arith::SubIOp::create(b, loc, ring, inRing));
  runs.secondLength = arith::SubIOp::create(b, loc, count, runs.firstLength);
  runs.offset = base;
  return runs;
}

/// Rows [first, first + length) of [s, kv_heads, head_dim] `rows`.
Value rowsOf(OpBuilder &b, Location loc, Value rows, Value first,
             Value length) {
  auto type = cast<RankedTensorType>(rows.getType());
  SmallVector<OpFoldResult> offsets = {first, b.getIndexAttr(0),
                                       b.getIndexAttr(0)};
  SmallVector<OpFoldResult> sizes = {length, b.getIndexAttr(type.getDimSize(1)),
                                     b.getIndexAttr(type.getDimSize(2))};
  SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
  auto slice = RankedTensorType::get(
      {ShapedType::kDynamic, type.getDimSize(1), type.getDimSize(2)},
      type.getElementType());
  return tensor::ExtractSliceOp::create(b, loc, slice, rows, offsets, sizes,
                                        strides);
}

/// Rows of a windowed layer's ring as slices of the cache: the last
/// `window` of the appended rows in (at most) two runs, and a read's two
/// runs put together oldest first.
struct LowerKVRingAppend : OpConversionPattern<KVRingAppendOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(KVRingAppendOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    int64_t window = op.getWindowAttr().getInt();
    Value count = tensor::DimOp::create(b, loc, adaptor.getKey(), 0);
    // Rows a later row of this append overwrites are never written.
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value skipped = arith::MaxSIOp::create(
        b, loc,
        arith::SubIOp::create(b, loc, count,
                              arith::ConstantIndexOp::create(b, loc, window)),
        zero);
    Value kept = arith::SubIOp::create(b, loc, count, skipped);
    Value first = arith::AddIOp::create(b, loc, adaptor.getPosition(), skipped);
    RingRuns runs =
        ringRuns(b, loc, op.getOffsetAttr().getInt(), window, first, kept);
    Value secondSource =
        arith::AddIOp::create(b, loc, skipped, runs.firstLength);
    Value cache = adaptor.getCache();
    Value planes[] = {adaptor.getKey(), adaptor.getValue()};
    for (auto [kind, rows] : llvm::enumerate(planes)) {
      auto write = [&](Value source, Value length, Value row) {
        CachePlane plane = cachePlane(
            b, op.getType(), op.getPlaneAttr().getInt(), kind, row, length);
        cache = tensor::InsertSliceOp::create(
            b, loc, rowsOf(b, loc, rows, source, length), cache, plane.offsets,
            plane.sizes, plane.strides);
      };
      write(skipped, runs.firstLength, runs.firstRow);
      write(secondSource, runs.secondLength, runs.offset);
    }
    rewriter.replaceOp(op, cache);
    return success();
  }
};

struct LowerKVRingRead : OpConversionPattern<KVRingReadOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(KVRingReadOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    auto cacheType = cast<RankedTensorType>(op.getCache().getType());
    Value count =
        arith::SubIOp::create(b, loc, adaptor.getEnd(), adaptor.getFirst());
    RingRuns runs =
        ringRuns(b, loc, op.getOffsetAttr().getInt(),
                 op.getWindowAttr().getInt(), adaptor.getFirst(), count);
    Value newRows[] = {adaptor.getNewKey(), adaptor.getNewValue()};
    SmallVector<Value> planes;
    for (auto [kind, type] : llvm::enumerate(op.getResultTypes())) {
      auto rowsType = cast<RankedTensorType>(type);
      int64_t heads = rowsType.getDimSize(1), dim = rowsType.getDimSize(2);
      auto runType = RankedTensorType::get({ShapedType::kDynamic, heads, dim},
                                           rowsType.getElementType());
      Value total = arith::AddIOp::create(
          b, loc, count, tensor::DimOp::create(b, loc, newRows[kind], 0));
      Value rows =
          tensor::EmptyOp::create(b, loc, runType.getShape(),
                                  runType.getElementType(), ValueRange{total});
      auto place = [&](Value run, Value length, Value at) {
        SmallVector<OpFoldResult> offsets = {at, b.getIndexAttr(0),
                                             b.getIndexAttr(0)};
        SmallVector<OpFoldResult> sizes = {length, b.getIndexAttr(heads),
                                           b.getIndexAttr(dim)};
        SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
        rows = tensor::InsertSliceOp::create(b, loc, run, rows, offsets, sizes,
                                             strides);
      };
      auto read = [&](Value row, Value length, Value at) {
        CachePlane plane = cachePlane(b, cacheType, op.getPlaneAttr().getInt(),
                                      kind, row, length);
        place(tensor::ExtractSliceOp::create(b, loc, runType,
                                             adaptor.getCache(), plane.offsets,
                                             plane.sizes, plane.strides),
              length, at);
      };
      read(runs.firstRow, runs.firstLength,
           arith::ConstantIndexOp::create(b, loc, 0));
      read(runs.offset, runs.secondLength, runs.firstLength);
      place(newRows[kind], tensor::DimOp::create(b, loc, newRows[kind], 0),
            count);
      planes.push_back(tensor::CastOp::create(b, loc, rowsType, rows));
    }
    rewriter.replaceOp(op, planes);
    return success();
  }
};

constexpr int64_t kScaleBytes = QuantizeRowsOp::kScaleBytes;

/// The maps of a generic over `rank` dimensions that reads a full-rank
/// operand and one without the last dimension (its row's value).
SmallVector<AffineMap> rowValueMaps(OpBuilder &b, int64_t rank) {
  AffineMap identity = b.getMultiDimIdentityMap(rank);
  return {identity, identity.dropResult(rank - 1), identity};
}

/// `value`'s sizes with the last one replaced by `last`.
SmallVector<OpFoldResult> withLastSize(OpBuilder &b, Location loc, Value value,
                                       int64_t last) {
  SmallVector<OpFoldResult> sizes = tensor::getMixedSizes(b, loc, value);
  sizes.back() = b.getIndexAttr(last);
  return sizes;
}

/// Columns [first, first + count) of every row of `value`.
SmallVector<OpFoldResult> columnOffsets(OpBuilder &b, int64_t rank,
                                        int64_t first) {
  SmallVector<OpFoldResult> offsets(rank, b.getIndexAttr(0));
  offsets.back() = b.getIndexAttr(first);
  return offsets;
}

/// Inside a generic over a row's scale bytes (dimension `dim`): how far byte
/// i of the scale's bits is shifted, 8·i (i32).
Value byteShift(OpBuilder &b, Location loc, int64_t dim) {
  Type i32 = b.getI32Type();
  Value byte = arith::IndexCastOp::create(b, loc, i32,
                                          linalg::IndexOp::create(b, loc, dim));
  return arith::MulIOp::create(b, loc, byte,
                               arith::ConstantIntOp::create(b, loc, i32, 8));
}

/// One f32 value rounded to bf16, to nearest with ties to even, in integer
/// arithmetic: LLVM would make an f32 -> bf16 truncation a call to
/// __truncsfbf2 where the CPU has no AVX-512 BF16, which Debian's libgcc
/// (GCC 12) lacks. A NaN stays a (quiet) NaN.
Value roundToBF16(OpBuilder &b, Location loc, Value x) {
  Type i32 = b.getI32Type(), i16 = b.getIntegerType(16);
  auto constant = [&](int64_t v) {
    return arith::ConstantIntOp::create(b, loc, i32, v);
  };
  Value bits = arith::BitcastOp::create(b, loc, i32, x);
  Value sixteen = constant(16);
  Value lowestKept = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, bits, sixteen), constant(1));
  Value rounded = arith::AddIOp::create(
      b, loc, bits, arith::AddIOp::create(b, loc, lowestKept, constant(0x7fff)));
  Value quietNaN = arith::OrIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, bits, sixteen), constant(0x40));
  Value isNaN =
      arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNO, x, x);
  Value high = arith::SelectOp::create(
      b, loc, isNaN, quietNaN, arith::ShRUIOp::create(b, loc, rounded, sixteen));
  return arith::BitcastOp::create(b, loc, b.getBF16Type(),
                                  arith::TruncIOp::create(b, loc, i16, high));
}

/// x [..., n] -> [..., n] bf16 or f16, each value rounded to nearest even.
Value roundRows(OpBuilder &b, Location loc, Value x, RankedTensorType type) {
  Type element = type.getElementType();
  return createElementwise(
      b, loc, type, x, ValueRange{x},
      [&](OpBuilder &nb, Location l, ValueRange args) {
        if (element.isBF16())
          return roundToBF16(nb, l, args[0]);
        return Value(arith::TruncFOp::create(nb, l, element, args[0]));
      });
}

/// x [..., n] -> [..., n + 4] i8: codes round(x · 127 / max|x|), then the
/// scale max|x| / 127 as its four little-endian bytes; or x rounded to bf16
/// or f16.
struct LowerQuantizeRows : OpConversionPattern<QuantizeRowsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(QuantizeRowsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Value x = adaptor.getInput();
    if (!op.getType().getElementType().isInteger(8)) {
      rewriter.replaceOp(op, roundRows(b, loc, x, op.getType()));
      return success();
    }
    auto type = cast<RankedTensorType>(x.getType());
    int64_t rank = type.getRank(), n = type.getShape().back();
    Type i8 = b.getI8Type(), i32 = b.getI32Type();
    SmallVector<utils::IteratorType> parallel(rank,
                                              utils::IteratorType::parallel);
    // NaN-propagating maximum: a row with a NaN keeps it (scale NaN).
    Value absMax = createRowReduction(
        b, loc, x, 0.0, [](OpBuilder &nb, Location l, ValueRange args) {
          Value magnitude = math::AbsFOp::create(nb, l, args[0]);
          return Value(arith::MaximumFOp::create(nb, l, magnitude, args[1]));
        });
    Value zero = f32Constant(b, loc, 0.0), limit = f32Constant(b, loc, 127.0);

    Value codesInit = createEmpty(
        b, loc, RankedTensorType::get(type.getShape(), i8),
        tensor::getMixedSizes(b, loc, x));
    Value codes = createGeneric(
        b, loc, ValueRange{x, absMax}, codesInit, rowValueMaps(b, rank),
        parallel, [&](OpBuilder &nb, Location l, ValueRange args) {
          Value positive = arith::CmpFOp::create(
              nb, l, arith::CmpFPredicate::OGT, args[1], zero);
          Value inverse = arith::SelectOp::create(
              nb, l, positive, arith::DivFOp::create(nb, l, limit, args[1]),
              zero);
          Value scaled = math::RoundEvenOp::create(
              nb, l, arith::MulFOp::create(nb, l, args[0], inverse));
          // |scaled| <= 127 but for rounding; clamped so fptosi never
          // sees a value out of i8's range.
          Value clamped = arith::MinimumFOp::create(
              nb, l,
              arith::MaximumFOp::create(
                  nb, l, scaled, arith::NegFOp::create(nb, l, limit)),
              limit);
          return Value(arith::FPToSIOp::create(nb, l, i8, clamped));
        });

    SmallVector<int64_t> scaleShape(type.getShape().drop_back());
    scaleShape.push_back(kScaleBytes);
    Value scaleInit =
        createEmpty(b, loc, RankedTensorType::get(scaleShape, i8),
                    withLastSize(b, loc, x, kScaleBytes));
    AffineMap identity = b.getMultiDimIdentityMap(rank);
    Value scaleBytes = createGeneric(
        b, loc, ValueRange{absMax}, scaleInit,
        {identity.dropResult(rank - 1), identity}, parallel,
        [&](OpBuilder &nb, Location l, ValueRange args) {
          Value scale = arith::DivFOp::create(nb, l, args[0], limit);
          Value bits = arith::BitcastOp::create(nb, l, i32, scale);
          return Value(arith::TruncIOp::create(
              nb, l, i8,
              arith::ShRUIOp::create(nb, l, bits, byteShift(nb, l, rank - 1))));
        });

    Value rows = createEmpty(b, loc, op.getType(),
                             withLastSize(b, loc, x, n + kScaleBytes));
    SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
    rows = tensor::InsertSliceOp::create(
        b, loc, codes, rows, columnOffsets(b, rank, 0),
        tensor::getMixedSizes(b, loc, codes), strides);
    rows = tensor::InsertSliceOp::create(
        b, loc, scaleBytes, rows, columnOffsets(b, rank, n),
        tensor::getMixedSizes(b, loc, scaleBytes), strides);
    rewriter.replaceOp(op, rows);
    return success();
  }
};

/// [..., n + 4] i8 -> [..., n]: code · scale, the scale put together from
/// its row's last four bytes; [..., n] bf16 or f16 -> [..., n]: widened.
struct LowerDequantizeRows : OpConversionPattern<DequantizeRowsOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(DequantizeRowsOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    OpBuilder &b = rewriter;
    Value rows = adaptor.getInput();
    RankedTensorType type = op.getType();
    int64_t rank = type.getRank(), n = type.getShape().back();
    if (!cast<RankedTensorType>(rows.getType()).getElementType().isInteger(8)) {
      rewriter.replaceOp(
          op, createElementwise(b, loc, type, rows, ValueRange{rows},
                                [&](OpBuilder &nb, Location l, ValueRange args) {
                                  return Value(arith::ExtFOp::create(
                                      nb, l, nb.getF32Type(), args[0]));
                                }));
      return success();
    }
    Type i32 = b.getI32Type();
    SmallVector<OpFoldResult> strides(rank, b.getIndexAttr(1));
    Value codes = tensor::ExtractSliceOp::create(
        b, loc, rows, columnOffsets(b, rank, 0), withLastSize(b, loc, rows, n),
        strides);
    Value bytes = tensor::ExtractSliceOp::create(
        b, loc, rows, columnOffsets(b, rank, n),
        withLastSize(b, loc, rows, kScaleBytes), strides);

    // The scale's bits: byte i shifted left by 8·i, or-ed together.
    SmallVector<OpFoldResult> rowSizes = tensor::getMixedSizes(b, loc, rows);
    rowSizes.pop_back();
    Value zeroBits = arith::ConstantIntOp::create(b, loc, i32, 0);
    Value emptyBits = tensor::EmptyOp::create(b, loc, rowSizes, i32);
    Value bitsInit =
        linalg::FillOp::create(b, loc, zeroBits, emptyBits).getResult(0);
    AffineMap identity = b.getMultiDimIdentityMap(rank);
    SmallVector<utils::IteratorType> iterators(rank,
                                               utils::IteratorType::parallel);
    iterators.back() = utils::IteratorType::reduction;
    Value bits = createGeneric(
        b, loc, ValueRange{bytes}, bitsInit,
        {identity, identity.dropResult(rank - 1)}, iterators,
        [&](OpBuilder &nb, Location l, ValueRange args) {
          Value byte = arith::ExtUIOp::create(nb, l, i32, args[0]);
          Value shifted =
              arith::ShLIOp::create(nb, l, byte, byteShift(nb, l, rank - 1));
          return Value(arith::OrIOp::create(nb, l, args[1], shifted));
        });

    Value init =
        createEmpty(b, loc, type, withLastSize(b, loc, rows, n));
    SmallVector<utils::IteratorType> parallel(rank,
                                              utils::IteratorType::parallel);
    Value values = createGeneric(
        b, loc, ValueRange{codes, bits}, init, rowValueMaps(b, rank), parallel,
        [&](OpBuilder &nb, Location l, ValueRange args) {
          Value code =
              arith::SIToFPOp::create(nb, l, nb.getF32Type(), args[0]);
          Value scale =
              arith::BitcastOp::create(nb, l, nb.getF32Type(), args[1]);
          return Value(arith::MulFOp::create(nb, l, code, scale));
        });
    rewriter.replaceOp(op, values);
    return success();
  }
};

} // namespace

void mlir::tfm::populateLowerKVCachePatterns(RewritePatternSet &patterns) {
  patterns.add<LowerKVCacheAppend, LowerKVCacheRead, LowerKVRingAppend,
               LowerKVRingRead, LowerQuantizeRows, LowerDequantizeRows>(
      patterns.getContext());
}
