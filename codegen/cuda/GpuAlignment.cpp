//===- GpuAlignment.cpp - run-time alignment checks for wide loads ------===//

#include "codegen/cuda/GpuAlignment.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"

using namespace mlir;

bool mlir::tfm::hasUnitInnerStride(Value buffer) {
  auto type = cast<MemRefType>(buffer.getType());
  SmallVector<int64_t> strides;
  int64_t offset;
  return succeeded(type.getStridesAndOffset(strides, offset)) &&
         !strides.empty() && strides.back() == 1;
}

Value mlir::tfm::rowsStartAligned(OpBuilder &b, Location loc, Value buffer) {
  auto metadata = memref::ExtractStridedMetadataOp::create(b, loc, buffer);
  Value base = memref::ExtractAlignedPointerAsIndexOp::create(b, loc, buffer);
  auto type = cast<MemRefType>(buffer.getType());
  Value elementBytes = arith::ConstantIndexOp::create(
      b, loc, type.getElementTypeBitWidth() / 8);
  // OR-ing the byte addresses and strides keeps every low bit any of
  // them has set.
  Value bits = arith::AddIOp::create(
      b, loc, base, arith::MulIOp::create(b, loc, metadata.getOffset(), elementBytes));
  ValueRange strides = metadata.getStrides();
  for (Value stride : strides.drop_back())
    bits = arith::OrIOp::create(b, loc, bits,
                                arith::MulIOp::create(b, loc, stride, elementBytes));
  Value low = arith::RemUIOp::create(
      b, loc, bits, arith::ConstantIndexOp::create(b, loc, kWideLoadBytes));
  return arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, low,
                               arith::ConstantIndexOp::create(b, loc, 0));
}
