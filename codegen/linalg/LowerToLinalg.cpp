//===- LowerToLinalg.cpp - tfm ops to linalg on tensors -----------------===//
//
// The tfm-lower-to-linalg pass: every tfm op still in the module becomes
// linalg, tensor, arith and math ops on tensors, through the patterns of
// one file per op family (LowerEmbeddings, LowerLinearAndElementwise,
// LowerNorms, LowerAttention, LowerKVCacheOps, LowerPooling,
// LowerRecurrent, ...). Target
// independent: the weights were laid out by tfm-lay-out-weights, and a
// target's kernels (tfm-select-cpu-kernels) took their ops before this
// runs. Codegen handles
// f32 only: the frontend converts F16 and BF16 checkpoints at compile time.
//
//===----------------------------------------------------------------------===//

#include "codegen/linalg/Passes.h"
#include "codegen/linalg/WeightLayout.h"
#include "ir/TfmOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Transforms/DialectConversion.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_LOWERTOLINALGPASS
#include "codegen/linalg/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// The entry points' descriptions (tfm.input, tfm.cache, tfm.output) have
/// been read by the packager before lowering; of them, lowered code keeps
/// only that a cache argument is state the runtime owns: writable, so that
/// bufferization updates it in place; and, with `markHostInputs`, that a
/// tensor input is the caller's memory (tfm.host_input), which a GPU build
/// must copy in.
void lowerArgumentDescriptions(func::FuncOp func, bool markHostInputs) {
  for (unsigned i = 0, e = func.getNumArguments(); i < e; ++i) {
    if (func.getArgAttr(i, kCacheArgAttrName))
      func.setArgAttr(i, bufferization::BufferizationDialect::kWritableAttrName,
                      BoolAttr::get(func.getContext(), true));
    if (markHostInputs && func.getArgAttr(i, kInputArgAttrName) &&
        isa<TensorType>(func.getArgument(i).getType()))
      func.setArgAttr(i, kHostInputArgAttrName,
                      UnitAttr::get(func.getContext()));
    func.removeArgAttr(i, kCacheArgAttrName);
    func.removeArgAttr(i, kInputArgAttrName);
  }
  for (unsigned i = 0, e = func.getNumResults(); i < e; ++i)
    func.removeResultAttr(i, StringAttr::get(func.getContext(),
                                             kOutputResultAttrName));
}

/// The op that this pass cannot take, with why: weights not laid out yet,
/// or element types codegen does not compute in.
LogicalResult checkLowerable(ModuleOp module) {
  WalkResult walk = module.walk([&](Operation *op) {
    if (!isa<TfmDialect>(op->getDialect()))
      return WalkResult::advance();
    if (isa<WeightOp>(op)) {
      op->emitOpError("has no place in the weight blob: run "
                      "tfm-lay-out-weights before tfm-lower-to-linalg");
      return WalkResult::interrupt();
    }
    // Computation is f32-only; say so instead of miscompiling. A bf16 or
    // f16 KV cache stores and reads rows in that type (tfm.quantize_rows
    // narrows them, tfm.dequantize_rows widens them back to f32).
    if (isa<QuantizeRowsOp, KVCacheAppendOp, KVCacheReadOp, KVRingAppendOp,
            KVRingReadOp>(op))
      return WalkResult::advance();
    for (Type t : op->getResultTypes()) {
      auto tensor = dyn_cast<RankedTensorType>(t);
      if (tensor && isa<FloatType>(tensor.getElementType()) &&
          !tensor.getElementType().isF32()) {
        op->emitOpError() << "codegen supports f32 tensors only, got "
                          << tensor.getElementType();
        return WalkResult::interrupt();
      }
    }
    return WalkResult::advance();
  });
  return failure(walk.wasInterrupted());
}

struct LowerToLinalgPass
    : mlir::tfm::impl::LowerToLinalgPassBase<LowerToLinalgPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    if (failed(checkLowerable(module)))
      return signalPassFailure();
    for (auto func : module.getOps<func::FuncOp>())
      lowerArgumentDescriptions(func, markHostInputs);

    ConversionTarget target(getContext());
    target.addIllegalDialect<TfmDialect>();
    target.addLegalDialect<arith::ArithDialect, linalg::LinalgDialect,
                           math::MathDialect, memref::MemRefDialect,
                           tensor::TensorDialect,
                           bufferization::BufferizationDialect>();
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    // A narrow table's lookups read it as stored (LowerEmbedding): its
    // tfm.dequantize is left alone, and removed once they are gone.
    target.addDynamicallyLegalOp<DequantizeOp>([](DequantizeOp op) {
      return !op->use_empty() &&
             llvm::all_of(op->getUses(), [](OpOperand &use) {
               auto lookup = dyn_cast<EmbeddingOp>(use.getOwner());
               return lookup && use.get() == lookup.getTable();
             });
    });
    RewritePatternSet patterns(&getContext());
    populateLowerToLinalgPatterns(patterns);
    if (failed(applyPartialConversion(module, target, std::move(patterns))))
      return signalPassFailure();
    eraseDeadWeightReads(module);
  }
};

} // namespace

void mlir::tfm::populateLowerToLinalgPatterns(RewritePatternSet &patterns) {
  populateLowerEmbeddingPatterns(patterns);
  populateLowerLinearAndElementwisePatterns(patterns);
  populateLowerNormPatterns(patterns);
  populateLowerAttentionPatterns(patterns);
  populateLowerKVCachePatterns(patterns);
  populateLowerPoolingPatterns(patterns);
  populateLowerPatchesPatterns(patterns);
  populateLowerExpertPatterns(patterns);
  populateLowerImagePatterns(patterns);
  populateLowerRecurrentPatterns(patterns);
}
