//===- SelectCpuKernels.cpp - tfm ops the CPU runtime's kernels compute ===//
//
// See SelectCpuKernelsPass in Passes.td. Runs on tfm IR after
// tfm-lay-out-weights and before the target-independent
// tfm-lower-to-linalg, which lowers whatever is left. A kernel call hands
// the operands' tensors over with bufferization.to_buffer and wraps a
// fresh result buffer in bufferization.to_tensor, so that one-shot
// bufferization sees ordinary reads and a new tensor.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/BlockReads.h"
#include "codegen/cpu/Passes.h"
#include "codegen/cpu/PipelineTransfers.h"
#include "codegen/linalg/AttentionCall.h"
#include "codegen/linalg/KernelCalls.h"
#include "codegen/linalg/LinalgBuilders.h"
#include "codegen/linalg/LinearLowering.h"
#include "codegen/linalg/WeightFormats.h"
#include "codegen/linalg/WeightLayout.h"
#include "ir/TfmOps.h"
#include "tfm/weight_formats.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_SELECTCPUKERNELSPASS
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// A linear's weight as a GEMM kernel of the runtime reads it: float
/// panels (f32, or bf16/f16 behind a tfm.dequantize) or block panels'
/// bytes, and the kernel's name.
struct KernelWeight {
  Value data;
  StringRef kernel;
  /// The tfm_weight_format of block panels; -1 for float panels.
  int64_t blockFormat = -1;
};

/// `bf16Products`: bf16 panels go to the kernel that may round the
/// activations to bf16; else to the one that widens the panels always.
std::optional<KernelWeight> kernelWeight(Value weight,
                                         bool bf16Products = true) {
  Value stored = weight;
  if (auto widen = weight.getDefiningOp<DequantizeOp>())
    stored = widen.getInput();
  if (Value bytes = blockWeightBytes(stored)) {
    return KernelWeight{bytes, "tfm_rt_linear_blocks",
                        blockFormatCode(storedFormatOf(
                            cast<RankedTensorType>(stored.getType())))};
  }
  Operation *unpack = stored.getDefiningOp();
  if (!isPanelUnpack(unpack))
    return std::nullopt;
  Value panels = unpack->getOperand(0);
  Type element = cast<RankedTensorType>(panels.getType()).getElementType();
  if (element.isBF16())
    return KernelWeight{panels, bf16Products
                                    ? "tfm_rt_linear_panels_bf16"
                                    : "tfm_rt_linear_panels_bf16_widened"};
  if (element.isF16())
    return KernelWeight{panels, "tfm_rt_linear_panels_f16"};
  return KernelWeight{panels, "tfm_rt_linear_panels"};
}

/// x·Wᵀ (+ bias) over a weight a kernel reads as stored: a call of the
/// runtime's GEMM, which writes every output (bias included) into a fresh
/// buffer.
Value kernelProduct(ConversionPatternRewriter &rewriter, Location loc,
                    Value input, const KernelWeight &weight, Value bias,
                    RankedTensorType rowsType) {
  SmallVector<Value> inputs = {input, weight.data};
  if (bias)
    inputs.push_back(bias);
  SmallVector<Value> dynamicSizes = rowCountSizes(rewriter, loc, rowsType, input);
  SmallVector<Value> trailing;
  if (weight.blockFormat >= 0)
    trailing.push_back(arith::ConstantIntOp::create(
        rewriter, loc, rewriter.getI64Type(), weight.blockFormat));
  return callKernelWithOutput(
      rewriter, loc, bias ? (weight.kernel + "_bias").str() : weight.kernel.str(),
      inputs, rowsType, dynamicSizes, trailing);
}

/// tfm.linear over a weight a kernel reads as stored (panels, block
/// panels): the runtime's GEMM (runtime/kernels/kernels_panel_gemm.c,
/// kernels_blocks.c), which adds the bias itself; the activation stays an
/// epilogue.
struct LinearToKernelCall : OpConversionPattern<LinearOp> {
  LinearToKernelCall(MLIRContext *context, bool bf16Products)
      : OpConversionPattern(context), bf16Products(bf16Products) {}
  LogicalResult
  matchAndRewrite(LinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    std::optional<KernelWeight> weight =
        kernelWeight(adaptor.getWeight(), bf16Products);
    if (!weight)
      return rewriter.notifyMatchFailure(op, "weight not stored for a kernel");
    Location loc = op.getLoc();
    Value input = collapseToRows(rewriter, loc, adaptor.getInput());
    Value product = kernelProduct(rewriter, loc, input, *weight,
                                  adaptor.getBias(), linearProductType(op));
    replaceLinear(rewriter, op, product, /*bias=*/Value());
    return success();
  }
  bool bf16Products;
};

/// The runtime's per-head kernel takes a head_linear whose weight is in
/// block panels with whole panels a head.
std::optional<KernelWeight> headKernelWeight(HeadLinearOp op) {
  std::optional<KernelWeight> weight = kernelWeight(op.getWeight());
  if (!weight || weight->blockFormat < 0 ||
      op.getType().getDimSize(2) % TFM_BLOCK_PANEL_ROWS)
    return std::nullopt;
  return weight;
}

/// tfm.head_linear over block panels: tfm_rt_head_linear_blocks (in
/// kernels_blocks.c), each head an ordinary block product over its own
/// panels, all heads in one parallel region. Float weights stay with the
/// reference lowering's contraction.
struct HeadLinearToKernelCall : OpConversionPattern<HeadLinearOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(HeadLinearOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    std::optional<KernelWeight> weight = headKernelWeight(op);
    if (!weight)
      return rewriter.notifyMatchFailure(op, "weight not in block panels");
    Location loc = op.getLoc();
    RankedTensorType type = op.getType();
    SmallVector<Value> dynamicSizes =
        rowCountSizes(rewriter, loc, type, adaptor.getInput());
    Value format = arith::ConstantIntOp::create(
        rewriter, loc, rewriter.getI64Type(), weight->blockFormat);
    rewriter.replaceOp(
        op, callKernelWithOutput(rewriter, loc, "tfm_rt_head_linear_blocks",
                                 {adaptor.getInput(), weight->data}, type,
                                 dynamicSizes, {format}));
    return success();
  }
};

/// tfm.gated_delta_rule: the runtime's kernel (kernels_delta_rule.c),
/// tfm_rt_gated_delta_rule(q, k, v, alpha, decay, beta, starting state,
/// out, final state, scale, tiled, reset), which takes whole heads to each
/// core and writes both results into fresh buffers. The kernel reads the
/// reset flag itself: a select between zeros and a cached state, read by
/// the call, made One-Shot Bufferize copy the whole cache at every layer.
struct GatedDeltaRuleToKernelCall : OpConversionPattern<GatedDeltaRuleOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(GatedDeltaRuleOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    RankedTensorType resultType = op.getResult().getType();
    RankedTensorType stateType = op.getFinalState().getType();
    Value start = adaptor.getState() ? adaptor.getState()
                                     : staticZeros(rewriter, loc, stateType);
    Value reset =
        adaptor.getReset()
            ? arith::ExtUIOp::create(rewriter, loc, rewriter.getI64Type(),
                                     adaptor.getReset())
                  .getResult()
            : arith::ConstantIntOp::create(rewriter, loc, rewriter.getI64Type(),
                                           0)
                  .getResult();
    SmallVector<Value> operands;
    for (Value input : {adaptor.getQuery(), adaptor.getKey(),
                        adaptor.getValue(), adaptor.getAlpha(),
                        adaptor.getDecay(), adaptor.getBeta(), start})
      operands.push_back(kernelInput(rewriter, loc, input));
    SmallVector<Value> dynamicSizes =
        rowCountSizes(rewriter, loc, resultType, adaptor.getValue());
    auto [out, outOperand] =
        kernelOutput(rewriter, loc, resultType, dynamicSizes);
    auto [state, stateOperand] = kernelOutput(rewriter, loc, stateType, {});
    operands.append(
        {outOperand, stateOperand,
         arith::ConstantOp::create(rewriter, loc, op.getScaleAttr()),
         arith::ConstantIntOp::create(rewriter, loc, rewriter.getI64Type(),
                                      op.getTiled() ? 1 : 0),
         reset});
    func::FuncOp kernel = lookupOrDeclareRuntimeKernel(
        rewriter, op->getParentOfType<ModuleOp>(), "tfm_rt_gated_delta_rule",
        ValueRange(operands).getTypes());
    func::CallOp::create(rewriter, loc, kernel, operands);
    rewriter.replaceOp(
        op, {bufferization::ToTensorOp::create(rewriter, loc, resultType, out,
                                               /*restrict=*/true,
                                               /*writable=*/true),
             bufferization::ToTensorOp::create(rewriter, loc, stateType, state,
                                               /*restrict=*/true,
                                               /*writable=*/true)});
    return success();
  }
};

/// tfm.sparse_attention: the runtime's Longformer kernel
/// (kernels_attention_sparse.c), tfm_rt_sparse_attention(q, k, v, global q,
/// k, v, global mask, out, scale, window, global prefix). Without a mask
/// the kernel gets an empty one.
struct SparseAttentionToKernelCall : OpConversionPattern<SparseAttentionOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(SparseAttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value global = adaptor.getGlobal();
    if (!global) {
      auto none = RankedTensorType::get({0}, rewriter.getI32Type());
      global = arith::ConstantOp::create(
          rewriter, loc, DenseElementsAttr::get(none, ArrayRef<int32_t>{}));
    }
    SmallVector<Value> inputs = {adaptor.getQuery(),
                                 adaptor.getKey(),
                                 adaptor.getValue(),
                                 adaptor.getGlobalQuery(),
                                 adaptor.getGlobalKey(),
                                 adaptor.getGlobalValue(),
                                 global};
    RankedTensorType type = op.getType();
    SmallVector<Value> dynamicSizes =
        rowCountSizes(rewriter, loc, type, adaptor.getQuery());
    Type i64 = rewriter.getI64Type();
    SmallVector<Value> flags = {
        arith::ConstantOp::create(rewriter, loc, op.getScaleAttr()),
        arith::ConstantIntOp::create(rewriter, loc, i64, op.getWindow()),
        arith::ConstantIntOp::create(rewriter, loc, i64, op.getGlobalPrefix())};
    rewriter.replaceOp(
        op, callKernelWithOutput(rewriter, loc, "tfm_rt_sparse_attention",
                                 inputs, type, dynamicSizes, flags));
    return success();
  }
};

/// The window sizes and head dimensions tfm_rt_window_attention takes (its
/// per-window buffers live on the stack).
constexpr int64_t kWindowKernelMax = 256;

/// Whether the runtime's window kernel computes `op`.
bool windowKernelTakes(WindowAttentionOp op) {
  return op.getWindow() <= kWindowKernelMax &&
         op.getType().getDimSize(2) <= kWindowKernelMax;
}

/// tfm.window_attention (Swin): the runtime's kernel
/// (kernels_attention_window.c), tfm_rt_window_attention(q, k, v, bias, out,
/// scale, window), a window of a head per work item.
struct WindowAttentionToKernelCall : OpConversionPattern<WindowAttentionOp> {
  using OpConversionPattern::OpConversionPattern;

  LogicalResult
  matchAndRewrite(WindowAttentionOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    if (!windowKernelTakes(op))
      return rewriter.notifyMatchFailure(op, "window too large for the kernel");
    Location loc = op.getLoc();
    SmallVector<Value> flags = {
        arith::ConstantOp::create(rewriter, loc, op.getScaleAttr()),
        arith::ConstantIntOp::create(rewriter, loc, rewriter.getI64Type(),
                                     op.getWindow())};
    rewriter.replaceOp(
        op, callKernelWithOutput(rewriter, loc, "tfm_rt_window_attention",
                                 {adaptor.getQuery(), adaptor.getKey(),
                                  adaptor.getValue(), adaptor.getBias()},
                                 op.getType(), /*dynamicSizes=*/{}, flags));
    return success();
  }
};

/// tfm.lora: tfm_rt_lora (runtime/kernels/kernels_lora.c) adds each row's
/// adapter update to the projection's rows, as [rows, features] matrices,
/// reading the adapters the runtime bound to the call.
struct LoraToKernelCall : OpConversionPattern<LoraOp> {
  using OpConversionPattern::OpConversionPattern;
  LogicalResult
  matchAndRewrite(LoraOp op, OpAdaptor adaptor,
                  ConversionPatternRewriter &rewriter) const override {
    Location loc = op.getLoc();
    Value input = collapseToRows(rewriter, loc, adaptor.getInput());
    Value projected = collapseToRows(rewriter, loc, adaptor.getProjected());
    auto rowsType = cast<RankedTensorType>(projected.getType());
    Value target = arith::ConstantIntOp::create(
        rewriter, loc, rewriter.getI64Type(), op.getTarget());
    Value updated = callKernelWithOutput(
        rewriter, loc, "tfm_rt_lora", {input, projected}, rowsType,
        rowCountSizes(rewriter, loc, rowsType, projected), {target});
    RankedTensorType type = op.getType();
    if (type.getRank() == 3)
      updated = tensor::ExpandShapeOp::create(
          rewriter, loc, type, updated,
          SmallVector<ReassociationIndices>{{0}, {1, 2}});
    rewriter.replaceOp(op, updated);
    return success();
  }
};

/// Whether a pattern above (or the attention call's) takes `op`.
bool selectsKernel(Operation *op, bool fusedAttention) {
  if (auto linear = dyn_cast<LinearOp>(op))
    return kernelWeight(linear.getWeight()).has_value();
  if (auto perHead = dyn_cast<HeadLinearOp>(op))
    return headKernelWeight(perHead).has_value();
  if (isa<LoraOp>(op) || isPipelineTransfer(op))
    return true;
  if (auto attention = dyn_cast<AttentionOp>(op))
    return fusedAttention &&
           callsAttentionKernel(attention, /*plainOnly=*/false);
  if (isa<SparseAttentionOp, GatedDeltaRuleOp>(op))
    return fusedAttention;
  if (auto window = dyn_cast<WindowAttentionOp>(op))
    return fusedAttention && windowKernelTakes(window);
  return false;
}

struct SelectCpuKernelsPass
    : mlir::tfm::impl::SelectCpuKernelsPassBase<SelectCpuKernelsPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    ConversionTarget target(getContext());
    target.markUnknownOpDynamicallyLegal(
        [&](Operation *op) { return !selectsKernel(op, fusedAttention); });
    RewritePatternSet patterns(&getContext());
    populateCpuKernelPatterns(patterns, fusedAttention, bf16Products,
                              bf16Attention);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    // The dequantizations, block views and panels' unpacks the GEMM calls
    // read through are dead now, and so are the narrow cache rows' widenings
    // the attention kernel reads through; none may reach bufferization.
    eraseDeadWeightReads(module);
    module.walk([](DequantizeRowsOp widen) {
      if (widen->use_empty())
        widen->erase();
    });
    // What still reads block panels (lookups, widenings for ops no kernel
    // took), once the products have taken theirs.
    ConversionTarget blocks(getContext());
    blocks.markUnknownOpDynamicallyLegal(
        [](Operation *op) { return !readsBlocks(op); });
    RewritePatternSet blockPatterns(&getContext());
    populateBlockReadPatterns(blockPatterns);
    if (failed(
            applyPartialConversion(module, blocks, std::move(blockPatterns))))
      return signalPassFailure();
    eraseDeadWeightReads(module);
  }
};

} // namespace

void mlir::tfm::populateCpuKernelPatterns(RewritePatternSet &patterns,
                                          bool fusedAttention,
                                          bool bf16Products,
                                          bool bf16Attention) {
  patterns.add<LinearToKernelCall>(patterns.getContext(), bf16Products);
  patterns.add<HeadLinearToKernelCall, LoraToKernelCall>(patterns.getContext());
  populatePipelineTransferPatterns(patterns);
  if (fusedAttention) {
    populateAttentionCallPatterns(patterns, bf16Attention);
    patterns.add<SparseAttentionToKernelCall, WindowAttentionToKernelCall,
                 GatedDeltaRuleToKernelCall>(patterns.getContext());
  }
}
