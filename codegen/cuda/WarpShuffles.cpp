//===- WarpShuffles.cpp - sums and maxima across a warp's lanes -----------===//

#include "codegen/cuda/WarpShuffles.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"

using namespace mlir;

Value mlir::tfm::combineAcrossLanes(OpBuilder &b, Location loc, Value value,
                                    int64_t lanes, bool maximum) {
  Value width = arith::ConstantIntOp::create(b, loc, b.getI32Type(), kWarp);
  for (int64_t distance = lanes / 2; distance > 0; distance /= 2) {
    Value other =
        gpu::ShuffleOp::create(
            b, loc, value,
            arith::ConstantIntOp::create(b, loc, b.getI32Type(), distance),
            width, gpu::ShuffleMode::XOR)
            .getShuffleResult();
    value = maximum
                ? arith::MaximumFOp::create(b, loc, value, other).getResult()
                : arith::AddFOp::create(b, loc, value, other).getResult();
  }
  return value;
}
