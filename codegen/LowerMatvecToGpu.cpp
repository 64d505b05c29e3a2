//===- LowerMatvecToGpu.cpp - decode's x·Wᵀ as block reductions ----------===//
//
// See LowerMatvecToGpuPass in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "codegen/GpuMatmuls.h"
#include "codegen/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AffineMap.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_LOWERMATVECTOGPUPASS
#include "codegen/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

struct LowerMatvecToGpuPass
    : mlir::tfm::impl::LowerMatvecToGpuPassBase<LowerMatvecToGpuPass> {
  using Base::Base;

  void runOnOperation() override {
    SmallVector<linalg::MatmulOp> matvecs;
    getOperation().walk([&](linalg::MatmulOp matmul) {
      auto lhs = cast<MemRefType>(matmul.getDpsInputs()[0].getType());
      if (isMatmulTransposedB(matmul) && !lhs.isDynamicDim(0) &&
          lhs.getDimSize(0) <= maxRows)
        matvecs.push_back(matmul);
    });
    for (linalg::MatmulOp matmul : matvecs)
      lower(matmul);
  }

  /// One block per output element: its threads stride through k (adjacent
  /// threads, adjacent weights), then gpu.all_reduce sums their partial
  /// sums and thread 0 adds the total to C.
  void lower(linalg::MatmulOp matmul) {
    bool overwrite = absorbZeroFill(matmul);
    OpBuilder b(matmul);
    Location loc = matmul.getLoc();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    MatmulTransposedB mm = readMatmulTransposedB(b, matmul);
    Value blockSize = arith::ConstantIndexOp::create(b, loc, threads);
    auto launch = gpu::LaunchOp::create(b, loc, mm.columns, mm.rows, one, blockSize,
                                        one, one);
    Block &body = launch.getBody().front();
    b.setInsertionPointToStart(&body);
    Value column = launch.getBlockIds().x;
    Value row = launch.getBlockIds().y;
    Value thread = launch.getThreadIds().x;
    Type f32 = b.getF32Type();
    Value init = arith::ConstantOp::create(b, loc, b.getZeroAttr(f32));
    auto strided = scf::ForOp::create(
        b, loc, thread, mm.depth, blockSize, ValueRange{init},
        [&](OpBuilder &nb, Location nl, Value k, ValueRange acc) {
          Value x = memref::LoadOp::create(nb, nl, mm.lhs, ValueRange{row, k});
          Value w = memref::LoadOp::create(nb, nl, mm.rhs, ValueRange{column, k});
          Value product = arith::MulFOp::create(nb, nl, x, w);
          Value sum = arith::AddFOp::create(nb, nl, acc[0], product);
          scf::YieldOp::create(nb, nl, sum);
        });
    Value total = gpu::AllReduceOp::create(
        b, loc, strided.getResult(0),
        gpu::AllReduceOperationAttr::get(b.getContext(),
                                         gpu::AllReduceOperation::ADD),
        b.getUnitAttr());
    Value first = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq,
                                        thread, zero);
    scf::IfOp::create(b, loc, first, [&](OpBuilder &nb, Location nl) {
      storeSum(nb, nl, total, mm.out, ValueRange{row, column}, overwrite);
      scf::YieldOp::create(nb, nl);
    });
    gpu::TerminatorOp::create(b, loc);
    matmul.erase();
  }
};

} // namespace
