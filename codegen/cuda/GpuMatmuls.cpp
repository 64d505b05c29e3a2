//===- GpuMatmuls.cpp - what the GPU matmul lowerings share -------------===//

#include "codegen/cuda/GpuMatmuls.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/Matchers.h"

using namespace mlir;

bool mlir::tfm::isMatmulTransposedB(linalg::MatmulOp matmul) {
  if (!matmul.hasPureBufferSemantics())
    return false;
  MLIRContext *context = matmul.getContext();
  AffineExpr m, n, k;
  bindDims(context, m, n, k);
  SmallVector<AffineMap> expected = {AffineMap::get(3, 0, {m, k}, context),
                                     AffineMap::get(3, 0, {n, k}, context),
                                     AffineMap::get(3, 0, {m, n}, context)};
  return matmul.getIndexingMapsArray() == expected;
}

mlir::tfm::MatmulTransposedB
mlir::tfm::readMatmulTransposedB(OpBuilder &b, linalg::MatmulOp matmul) {
  Location loc = matmul.getLoc();
  MatmulTransposedB mm;
  mm.lhs = matmul.getDpsInputs()[0];
  mm.rhs = matmul.getDpsInputs()[1];
  mm.out = matmul.getDpsInits()[0];
  mm.rows = memref::DimOp::create(b, loc, mm.lhs, 0);
  mm.depth = memref::DimOp::create(b, loc, mm.lhs, 1);
  mm.columns = memref::DimOp::create(b, loc, mm.rhs, 0);
  return mm;
}

Value mlir::tfm::tilesOf(OpBuilder &b, Location loc, Value size,
                         int64_t tile) {
  Value padded = arith::AddIOp::create(
      b, loc, size, arith::ConstantIndexOp::create(b, loc, tile - 1));
  return arith::DivUIOp::create(b, loc, padded,
                                arith::ConstantIndexOp::create(b, loc, tile));
}

bool mlir::tfm::absorbZeroFill(linalg::MatmulOp matmul) {
  Value out = matmul.getDpsInits()[0];
  auto fill = dyn_cast_or_null<linalg::FillOp>(matmul->getPrevNode());
  if (!fill || !fill.hasPureBufferSemantics() ||
      fill.getDpsInits()[0] != out ||
      !matchPattern(fill.getDpsInputs()[0], m_AnyZeroFloat()))
    return false;
  fill.erase();
  return true;
}

void mlir::tfm::storeSum(OpBuilder &b, Location loc, Value sum, Value out,
                         ValueRange indices, bool overwrite) {
  if (!overwrite)
    sum = arith::AddFOp::create(
        b, loc, memref::LoadOp::create(b, loc, out, indices), sum);
  memref::StoreOp::create(b, loc, sum, out, indices);
}
