//===- ConvolutionsAsGemm.cpp - 2-D convolutions as windows and a GEMM ---===//
//
// The tfm-convolutions-as-gemm pass (see Passes.td). A convolution of a
// [H, W, C] map by k x k windows is a GEMM of its [Ho·Wo, C·k·k] windows by
// the [out, C·k·k] weight (a batch [N, H, W, C]: N·Ho·Wo rows, the weight
// read once for all): tfm.linear, so the weight's storage format and the
// GEMM kernels are the projections'. The windows cost k² copies of the
// input, small beside the product's 2·out multiply-adds per copied value;
// large ones are taken in bands of output rows (kMaxWindowBytes), each
// multiplied before the next is gathered, so that memory holds one band
// (a batch's image by image).
//
//===----------------------------------------------------------------------===//

#include "ir/TfmOps.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_CONVOLUTIONSASGEMMPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// Windows past this many bytes are taken a band of output rows at a time,
/// each band multiplied before the next's windows are gathered: the arena
/// then holds one band's (a VAE decoder's 512x512 map of 256 channels
/// would take 2.4 GB of windows at once).
constexpr int64_t kMaxWindowBytes = int64_t(64) << 20;

struct ConvolutionAsGemm : OpRewritePattern<Conv2dOp> {
  using OpRewritePattern::OpRewritePattern;

  /// The products of one [H, W, C] map's windows by the weight, a band of
  /// output rows each (one band when its windows fit kMaxWindowBytes).
  static void bandProducts(Conv2dOp op, Value image, int64_t height,
                           int64_t width, int64_t out,
                           PatternRewriter &rewriter,
                           SmallVectorImpl<Value> &products) {
    Location loc = op.getLoc();
    Type f = op.getType().getElementType();
    ArrayRef<int64_t> shape = cast<RankedTensorType>(image.getType()).getShape();
    int64_t channels = shape[2], k = op.getKernel(), stride = op.getStride();
    ArrayRef<int64_t> padding = op.getPadding();
    int64_t columns = channels * k * k;
    int64_t rowBytes = width * columns * int64_t(sizeof(float));
    int64_t band = std::max<int64_t>(1, kMaxWindowBytes / rowBytes);
    for (int64_t r0 = 0; r0 < height; r0 += band) {
      int64_t r1 = std::min(height, r0 + band);
      // The input rows the band reads, and the padding left at its ends.
      int64_t first = r0 * stride - padding[0],
              last = (r1 - 1) * stride - padding[0] + k - 1;
      int64_t lo = std::max<int64_t>(0, first),
              hi = std::min<int64_t>(shape[0] - 1, last);
      // One band: the whole map with the convolution's own padding.
      DenseI64ArrayAttr pads =
          band >= height ? op.getPaddingAttr()
                         : rewriter.getDenseI64ArrayAttr(
                               {lo - first, padding[1], last - hi, padding[3]});
      Value input = image;
      if (band < height && (lo != 0 || hi != shape[0] - 1))
        input = tensor::ExtractSliceOp::create(
            rewriter, loc,
            RankedTensorType::get({hi - lo + 1, shape[1], channels}, f), input,
            ValueRange(), ValueRange(), ValueRange(),
            rewriter.getDenseI64ArrayAttr({lo, 0, 0}),
            rewriter.getDenseI64ArrayAttr({hi - lo + 1, shape[1], channels}),
            rewriter.getDenseI64ArrayAttr({1, 1, 1}));
      int64_t pixels = (r1 - r0) * width;
      Value windows = ImageWindowsOp::create(
          rewriter, loc, RankedTensorType::get({pixels, columns}, f), input,
          op.getKernelAttr(), op.getStrideAttr(), pads);
      products.push_back(LinearOp::create(
          rewriter, loc, RankedTensorType::get({pixels, out}, f), windows,
          op.getWeight(), op.getBias()));
    }
  }

  LogicalResult matchAndRewrite(Conv2dOp op,
                                PatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    Type f = type.getElementType();
    // A batch [N, H, W, C] is N maps whose windows are rows of one GEMM.
    bool batched = type.getRank() == 4;
    int64_t images = batched ? type.getDimSize(0) : 1;
    ArrayRef<int64_t> outShape = type.getShape().take_back(3);
    int64_t height = outShape[0], width = outShape[1], out = outShape[2],
            k = op.getKernel(), stride = op.getStride();
    ArrayRef<int64_t> image =
        op.getInput().getType().getShape().take_back(3);
    int64_t channels = image[2], rows = images * height * width;
    ArrayRef<int64_t> padding = op.getPadding();
    SmallVector<ReassociationIndices> toRows =
        batched ? SmallVector<ReassociationIndices>{{0, 1, 2}, {3}}
                : SmallVector<ReassociationIndices>{{0, 1}, {2}};
    bool pointwise = k == 1 && stride == 1 &&
                     llvm::all_of(padding, [](int64_t p) { return p == 0; });
    if (pointwise) {
      Value flat = tensor::CollapseShapeOp::create(
          rewriter, loc, RankedTensorType::get({rows, channels}, f),
          op.getInput(), toRows);
      Value product = LinearOp::create(
          rewriter, loc, RankedTensorType::get({rows, out}, f), flat,
          op.getWeight(), op.getBias());
      rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(op, type, product,
                                                         toRows);
      return success();
    }
    int64_t columns = channels * k * k;
    SmallVector<Value> products;
    if (rows * columns * int64_t(sizeof(float)) <= kMaxWindowBytes) {
      // Every image's windows at once: one GEMM reads the weight once.
      Value windows = ImageWindowsOp::create(
          rewriter, loc, RankedTensorType::get({rows, columns}, f),
          op.getInput(), op.getKernelAttr(), op.getStrideAttr(),
          op.getPaddingAttr());
      products.push_back(LinearOp::create(
          rewriter, loc, RankedTensorType::get({rows, out}, f), windows,
          op.getWeight(), op.getBias()));
    } else if (!batched || images == 1) {
      // One map (a batch of one viewed as its image) in bands.
      Value map = op.getInput();
      if (batched)
        map = tensor::CollapseShapeOp::create(
            rewriter, loc, RankedTensorType::get(image, f), map,
            ArrayRef<ReassociationIndices>{{0, 1}, {2}, {3}});
      bandProducts(op, map, height, width, out, rewriter, products);
    } else {
      // Image by image, each in bands.
      auto imageType = RankedTensorType::get(image, f);
      for (int64_t n = 0; n < images; ++n) {
        Value one = tensor::ExtractSliceOp::create(
            rewriter, loc, imageType, op.getInput(), ValueRange(),
            ValueRange(), ValueRange(),
            rewriter.getDenseI64ArrayAttr({n, 0, 0, 0}),
            rewriter.getDenseI64ArrayAttr({1, image[0], image[1], image[2]}),
            rewriter.getDenseI64ArrayAttr({1, 1, 1, 1}));
        bandProducts(op, one, height, width, out, rewriter, products);
      }
    }
    Value product =
        products.size() == 1
            ? products.front()
            : tensor::ConcatOp::create(rewriter, loc, 0, products).getResult();
    rewriter.replaceOpWithNewOp<tensor::ExpandShapeOp>(op, type, product,
                                                       toRows);
    return success();
  }
};

struct ConvolutionsAsGemmPass
    : mlir::tfm::impl::ConvolutionsAsGemmPassBase<ConvolutionsAsGemmPass> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<ConvolutionAsGemm>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
