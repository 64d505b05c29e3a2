//===- LowerKVCacheOps.cpp - KV cache reads and appends to tensor ops -----===//
//
// tfm.kv_cache_append and tfm.kv_cache_read as slices of the cache
// tensor [layers, 2, capacity, kv_heads, head_dim]: bufferization turns
// them into in-place writes and views of the runtime's buffer.
//
//===----------------------------------------------------------------------===//

#include "codegen/LinalgBuilders.h"
#include "codegen/Passes.h"
#include "ir/TfmOps.h"

#include "mlir/Transforms/DialectConversion.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// Offsets, sizes and strides of one layer's K (kind 0) or V (kind 1) plane
/// of the cache [layers, 2, capacity, kv_heads, head_dim], positions
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
    Value planes[] = {adaptor.getKey(), adaptor.getValue()};
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

} // namespace

void mlir::tfm::populateLowerKVCachePatterns(RewritePatternSet &patterns) {
  patterns.add<LowerKVCacheAppend, LowerKVCacheRead>(patterns.getContext());
}
