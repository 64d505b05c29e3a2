//===- LowerMatmulToRuntime.cpp - x·Wᵀ through the runtime's BLAS -------===//
//
// See LowerMatmulToRuntimePass in Passes.td. OpenBLAS beats the loops
// LLVM vectorizes from linalg.matmul by one to two orders of magnitude on
// transformer shapes; the decision is per op, so other contractions keep
// their generated code.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/Passes.h"
#include "codegen/linalg/KernelCalls.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_LOWERMATMULTORUNTIMEPASS
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

constexpr llvm::StringLiteral kMatmulKernel = "tfm_rt_matmul_nt";

/// Whether `op` is C[m, n] += A[m, k] · B[n, k] on f32 memrefs.
bool isTransposedBMatmul(linalg::MatmulOp op) {
  if (!op.hasPureBufferSemantics())
    return false;
  for (Value v : op->getOperands()) {
    auto type = dyn_cast<MemRefType>(v.getType());
    if (!type || !type.getElementType().isF32())
      return false;
  }
  MLIRContext *ctx = op.getContext();
  AffineExpr m = getAffineDimExpr(0, ctx), n = getAffineDimExpr(1, ctx),
             k = getAffineDimExpr(2, ctx);
  SmallVector<AffineMap> expected = {AffineMap::get(3, 0, {m, k}, ctx),
                                     AffineMap::get(3, 0, {n, k}, ctx),
                                     AffineMap::get(3, 0, {m, n}, ctx)};
  return op.getIndexingMapsArray() == expected;
}

struct MatmulToKernelCall : OpRewritePattern<linalg::MatmulOp> {
  MatmulToKernelCall(MLIRContext *ctx, func::FuncOp kernel)
      : OpRewritePattern(ctx), kernel(kernel) {}

  LogicalResult matchAndRewrite(linalg::MatmulOp op,
                                PatternRewriter &rewriter) const override {
    if (!isTransposedBMatmul(op))
      return failure();
    MemRefType type = anyStridedF32(op.getContext(), 2);
    SmallVector<Value> operands;
    for (Value v : op->getOperands())
      operands.push_back(
          memref::CastOp::create(rewriter, op.getLoc(), type, v));
    rewriter.replaceOpWithNewOp<func::CallOp>(op, kernel, operands);
    return success();
  }

  func::FuncOp kernel;
};

struct LowerMatmulToRuntimePass
    : mlir::tfm::impl::LowerMatmulToRuntimePassBase<LowerMatmulToRuntimePass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    bool any = false;
    module.walk([&](linalg::MatmulOp op) { any |= isTransposedBMatmul(op); });
    if (!any)
      return;
    MemRefType type = anyStridedF32(&getContext(), 2);
    OpBuilder b(&getContext());
    func::FuncOp kernel = lookupOrDeclareRuntimeKernel(b, module, kMatmulKernel,
                                                       {type, type, type});
    RewritePatternSet patterns(&getContext());
    patterns.add<MatmulToKernelCall>(&getContext(), kernel);
    if (failed(applyPatternsGreedily(module, std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
