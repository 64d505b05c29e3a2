//===- LowerMatmulToGpuTiles.cpp - prefill's x·Wᵀ through shared memory ===//
//
// See LowerMatmulToGpuTilesPass in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "codegen/cuda/GpuMatmuls.h"
#include "codegen/cuda/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_LOWERMATMULTOGPUTILESPASS
#include "codegen/cuda/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// The tile: kTile rows of x by kTile rows of W (outputs), kTile deep;
/// blocks of kTile x kRowGroups threads, each computing kTile / kRowGroups
/// outputs of one column.
constexpr int64_t kTile = 32;
constexpr int64_t kRowGroups = 8;
constexpr int64_t kRowsPerThread = kTile / kRowGroups;

struct LowerMatmulToGpuTilesPass
    : mlir::tfm::impl::LowerMatmulToGpuTilesPassBase<
          LowerMatmulToGpuTilesPass> {
  void runOnOperation() override {
    SmallVector<linalg::MatmulOp> matmuls;
    getOperation().walk([&](linalg::MatmulOp matmul) {
      if (isMatmulTransposedB(matmul))
        matmuls.push_back(matmul);
    });
    for (linalg::MatmulOp matmul : matmuls)
      lower(matmul);
  }

  void lower(linalg::MatmulOp matmul) {
    bool overwrite = absorbZeroFill(matmul);
    OpBuilder b(matmul);
    Location loc = matmul.getLoc();
    auto index = [&](OpBuilder &at, int64_t value) -> Value {
      return arith::ConstantIndexOp::create(at, loc, value);
    };
    Value one = index(b, 1);
    Value tile = index(b, kTile);
    MatmulTransposedB mm = readMatmulTransposedB(b, matmul);
    // A row of padding keeps a warp's column reads on distinct banks.
    Type f32 = b.getF32Type();
    auto shared = MemRefType::get(
        {kTile, kTile + 1}, f32, AffineMap(),
        gpu::AddressSpaceAttr::get(b.getContext(),
                                   gpu::AddressSpace::Workgroup));
    auto launch = gpu::LaunchOp::create(
        b, loc, tilesOf(b, loc, mm.columns, kTile),
        tilesOf(b, loc, mm.rows, kTile), one, tile,
        index(b, kRowGroups), one, /*dynamicSharedMemorySize=*/nullptr,
        /*asyncTokenType=*/nullptr, /*asyncDependencies=*/{},
        TypeRange{shared, shared});
    b.setInsertionPointToStart(&launch.getBody().front());
    Value lhsTile = launch.getWorkgroupAttributions()[0];
    Value rhsTile = launch.getWorkgroupAttributions()[1];
    Value tx = launch.getThreadIds().x;
    Value ty = launch.getThreadIds().y;
    Value rowBase = arith::MulIOp::create(b, loc, launch.getBlockIds().y, tile);
    Value columnBase =
        arith::MulIOp::create(b, loc, launch.getBlockIds().x, tile);
    Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(f32));
    // The tile rows this thread loads and computes: ty, ty + 8, ...
    SmallVector<Value> tileRows;
    for (int64_t i = 0; i < kRowsPerThread; ++i)
      tileRows.push_back(
          arith::AddIOp::create(b, loc, ty, index(b, i * kRowGroups)));

    SmallVector<Value> inits(kRowsPerThread, zero);
    auto depthLoop = scf::ForOp::create(
        b, loc, index(b, 0), mm.depth, tile, inits,
        [&](OpBuilder &nb, Location nl, Value k0, ValueRange sums) {
          Value k = arith::AddIOp::create(nb, nl, k0, tx);
          Value kInside = arith::CmpIOp::create(
              nb, nl, arith::CmpIPredicate::ult, k, mm.depth);
          // Each thread stages kRowsPerThread elements of each tile;
          // neighbouring threads read neighbouring k (coalesced).
          auto stage = [&](Value source, Value base, Value limit,
                           Value tileBuffer, Value tileRow) {
            Value row = arith::AddIOp::create(nb, nl, base, tileRow);
            Value inside = arith::AndIOp::create(
                nb, nl, kInside,
                arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ult, row,
                                      limit));
            auto load = scf::IfOp::create(
                nb, nl, inside,
                [&](OpBuilder &ib, Location il) {
                  Value v = memref::LoadOp::create(ib, il, source,
                                                   ValueRange{row, k});
                  // Narrow weights (tfm-widen-in-matmuls) are staged
                  // widened: the tiles and the sums stay f32.
                  if (v.getType() != f32)
                    v = arith::ExtFOp::create(ib, il, f32, v);
                  scf::YieldOp::create(ib, il, v);
                },
                [&](OpBuilder &ib, Location il) {
                  scf::YieldOp::create(ib, il, zero);
                });
            memref::StoreOp::create(nb, nl, load.getResult(0), tileBuffer,
                                    ValueRange{tileRow, tx});
          };
          for (Value tileRow : tileRows) {
            stage(mm.lhs, rowBase, mm.rows, lhsTile, tileRow);
            stage(mm.rhs, columnBase, mm.columns, rhsTile, tileRow);
          }
          gpu::BarrierOp::create(nb, nl);
          auto inner = scf::ForOp::create(
              nb, nl, index(nb, 0), tile, index(nb, 1), sums,
              [&](OpBuilder &ib, Location il, Value kk, ValueRange acc) {
                Value w = memref::LoadOp::create(ib, il, rhsTile,
                                                 ValueRange{tx, kk});
                SmallVector<Value> next;
                for (auto [i, tileRow] : llvm::enumerate(tileRows)) {
                  Value x = memref::LoadOp::create(ib, il, lhsTile,
                                                   ValueRange{tileRow, kk});
                  Value p = arith::MulFOp::create(ib, il, x, w);
                  next.push_back(arith::AddFOp::create(ib, il, acc[i], p));
                }
                scf::YieldOp::create(ib, il, next);
              });
          // The next tiles overwrite these only after every thread is done.
          gpu::BarrierOp::create(nb, nl);
          scf::YieldOp::create(nb, nl, inner.getResults());
        });

    Value column = arith::AddIOp::create(b, loc, columnBase, tx);
    Value columnInside = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::ult, column, mm.columns);
    for (auto [i, tileRow] : llvm::enumerate(tileRows)) {
      Value row = arith::AddIOp::create(b, loc, rowBase, tileRow);
      Value inside = arith::AndIOp::create(
          b, loc, columnInside,
          arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row, mm.rows));
      scf::IfOp::create(b, loc, inside, [&](OpBuilder &nb, Location nl) {
        storeSum(nb, nl, depthLoop.getResult(i), mm.out, ValueRange{row, column},
                 overwrite);
        scf::YieldOp::create(nb, nl);
      });
    }
    gpu::TerminatorOp::create(b, loc);
    matmul.erase();
  }
};

} // namespace
