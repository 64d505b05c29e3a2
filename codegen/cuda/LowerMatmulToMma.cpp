//===- LowerMatmulToMma.cpp - prefill's x·Wᵀ on tensor cores (mma.sync) --===//
//
// See LowerMatmulToMmaPass in Passes.td.
//
// The fragment layout of mma.sync.m16n8k16 (PTX ISA, "Matrix Fragments for
// mma.m16n8k16 with floating point type"), for lane = 4 * g + q:
//   A (16 x 16, row-major), four 32-bit registers of two elements each:
//     a0 = A[g][2q, 2q+1]   a1 = A[g+8][2q, 2q+1]
//     a2 = A[g][2q+8, +9]   a3 = A[g+8][2q+8, +9]
//   B (16 x 8, k by n, "col": n-major), two registers:
//     b0 = B[2q, 2q+1][g]   b1 = B[2q+8, +9][g]
//   C, D (16 x 8 f32): c0, c1 = C[g][2q, 2q+1]   c2, c3 = C[g+8][2q, 2q+1]
// with the lower-indexed element of a pair in the register's low half.
// W is stored [n, k], k contiguous, so a B register is two neighbouring
// weights of one row, as an A register is two neighbouring activations:
// the tiles are staged in workgroup memory as such pairs (32-bit words),
// and every fragment register is one word load.
//
//===----------------------------------------------------------------------===//

#include "codegen/cuda/GpuAlignment.h"
#include "codegen/cuda/GpuMatmuls.h"
#include "codegen/cuda/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/LLVMIR/NVVMDialect.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_LOWERMATMULTOMMAPASS
#include "codegen/cuda/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// One mma.sync: a 16 x 8 block of C, 16 deep.
constexpr int64_t kMmaRows = 16, kMmaColumns = 8, kMmaDepth = 16;
/// A warp's part of the block's tile: 2 x 4 mma blocks, 32 x 32 outputs.
constexpr int64_t kWarpRows = 32, kWarpColumns = 32;
constexpr int64_t kMmasDown = kWarpRows / kMmaRows;
constexpr int64_t kMmasAcross = kWarpColumns / kMmaColumns;
/// The block's tile: 2 x 2 warps, 64 x 64 outputs, 32 deep per stage.
constexpr int64_t kTileRows = 64, kTileColumns = 64, kTileDepth = 32;
constexpr int64_t kWarpsAcross = kTileColumns / kWarpColumns;
constexpr int64_t kThreads =
    kWarp * (kTileRows / kWarpRows) * kWarpsAcross;
/// A staged row holds kTileDepth / 2 words (pairs of 16-bit elements) and
/// 4 words of padding: with rows 20 words apart, the words a fragment load
/// reads (rows g, columns q: 20 g + q) fall on 32 distinct banks.
constexpr int64_t kWordsPerRow = kTileDepth / 2;
constexpr int64_t kPaddedWordsPerRow = kWordsPerRow + 4;
/// Words each thread stages per tile and stage: 64 rows x 16 words / 128.
constexpr int64_t kStagedWordsPerThread = kTileRows * kWordsPerRow / kThreads;
static_assert(kTileRows == kTileColumns,
              "the A and B tiles share the staging loop");
/// Where a block's tiles lie wholly inside both operands and their rows
/// are 16-byte aligned, each thread stages runs of 16 bytes: four f32 of
/// x (two words), eight bf16 or f16 of W (four words).
constexpr int64_t kRunElementsOfX = kWideLoadBytes / 4;
constexpr int64_t kRunElementsOfW = kWideLoadBytes / 2;

/// One matmul's kernel as it is built: the launch, each thread's place in
/// its block and warp, and the staged tiles, which the parts below (staging
/// the tiles, the mma.sync steps, storing the sums) all read.
class MmaKernel {
public:
  MmaKernel(linalg::MatmulOp matmul, bool overwrite)
      : matmul(matmul), overwrite(overwrite), loc(matmul.getLoc()),
        context(matmul.getContext()) {}

  /// Replaces the matmul with the kernel.
  void build() {
    OpBuilder b(matmul);
    mm = readMatmulTransposedB(b, matmul);
    narrow = cast<MemRefType>(mm.rhs.getType()).getElementType();
    f32 = b.getF32Type();
    i32 = b.getI32Type();
    launchBlocks(b);
    Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(f32));
    int64_t accumulators = kMmasDown * kMmasAcross * 4;
    SmallVector<Value> inits(accumulators, zero);
    auto depthLoop = scf::ForOp::create(
        b, loc, index(b, 0), mm.depth, index(b, kTileDepth), inits,
        [&](OpBuilder &nb, Location nl, Value k0, ValueRange sums) {
          depthLast = arith::SubIOp::create(nb, nl, mm.depth, one);
          narrowZero = arith::ConstantOp::create(nb, nl, nb.getZeroAttr(narrow));
          stageTiles(nb, nl, k0);
          SmallVector<Value> next = multiplyStagedTiles(nb, nl, sums);
          // The next stage overwrites the tiles only after every warp is
          // done with them.
          gpu::BarrierOp::create(nb, nl);
          scf::YieldOp::create(nb, nl, next);
        });
    storeSums(b, depthLoop);
    gpu::TerminatorOp::create(b, loc);
    matmul.erase();
  }

private:
  Value index(OpBuilder &at, int64_t value) {
    return arith::ConstantIndexOp::create(at, loc, value);
  }
  Value add(OpBuilder &at, Value x, int64_t offset) {
    return offset ? arith::AddIOp::create(at, loc, x, index(at, offset))
                        .getResult()
                  : x;
  }

  /// The launch (a block per 64 x 64 tile of outputs, its two staged tiles
  /// in workgroup memory) and each thread's coordinates.
  void launchBlocks(OpBuilder &b) {
    auto staged = MemRefType::get(
        {kTileRows, kPaddedWordsPerRow}, i32, AffineMap(),
        gpu::AddressSpaceAttr::get(context, gpu::AddressSpace::Workgroup));
    one = index(b, 1);
    auto launch = gpu::LaunchOp::create(
        b, loc, tilesOf(b, loc, mm.columns, kTileColumns),
        tilesOf(b, loc, mm.rows, kTileRows),
        one, index(b, kThreads), one, one,
        /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
        /*asyncDependencies=*/{}, TypeRange{staged, staged});
    b.setInsertionPointToStart(&launch.getBody().front());
    lhsTile = launch.getWorkgroupAttributions()[0];
    rhsTile = launch.getWorkgroupAttributions()[1];
    thread = launch.getThreadIds().x;
    // Whether runs of 16 bytes along the rows of x and W are aligned (the
    // same for every block, tested in the kernel as the matrix-vector
    // kernel does): the fast staging path's condition, with the tile inside.
    aligned = arith::ConstantIntOp::create(b, loc, b.getI1Type(), 0);
    if (hasUnitInnerStride(mm.lhs) && hasUnitInnerStride(mm.rhs))
      aligned = arith::AndIOp::create(b, loc, rowsStartAligned(b, loc, mm.lhs),
                                      rowsStartAligned(b, loc, mm.rhs));
    Value warp = arith::DivUIOp::create(b, loc, thread, index(b, kWarp));
    Value lane = arith::RemUIOp::create(b, loc, thread, index(b, kWarp));
    group = arith::DivUIOp::create(b, loc, lane, index(b, 4));
    inGroup = arith::RemUIOp::create(b, loc, lane, index(b, 4));
    rowBase =
        arith::MulIOp::create(b, loc, launch.getBlockIds().y, index(b, kTileRows));
    columnBase = arith::MulIOp::create(b, loc, launch.getBlockIds().x,
                                       index(b, kTileColumns));
    warpRow = arith::MulIOp::create(
        b, loc, arith::DivUIOp::create(b, loc, warp, index(b, kWarpsAcross)),
        index(b, kWarpRows));
    warpColumn = arith::MulIOp::create(
        b, loc, arith::RemUIOp::create(b, loc, warp, index(b, kWarpsAcross)),
        index(b, kWarpColumns));
    // Staging: thread t stages words t, t + 128, ... of each tile, row
    // t / 16 + 8 i, word t % 16: a warp's loads cover two runs of 32
    // consecutive elements.
    stagedRow = arith::DivUIOp::create(b, loc, thread, index(b, kWordsPerRow));
    stagedWord = arith::RemUIOp::create(b, loc, thread, index(b, kWordsPerRow));
  }

  /// Activations are rounded to the weights' type (as PyTorch's bf16
  /// products are): mma.sync multiplies pairs of one type.
  Value toNarrow(OpBuilder &ob, Value v) {
    return v.getType() == narrow
               ? v
               : arith::TruncFOp::create(ob, loc, narrow, v).getResult();
  }

  /// Element (row, k) of `source` in the weights' type, zero outside
  /// [0, limit) x [0, depth). The load is clamped into the buffer (rows and
  /// depth are at least 1 when the kernel runs) and its value replaced, so
  /// no thread branches.
  Value element(OpBuilder &ob, Value source, Value row, Value limit,
                Value k) {
    Value rowLast = arith::SubIOp::create(ob, loc, limit, one);
    Value inside = arith::AndIOp::create(
        ob, loc,
        arith::CmpIOp::create(ob, loc, arith::CmpIPredicate::ult, row, limit),
        arith::CmpIOp::create(ob, loc, arith::CmpIPredicate::ult, k,
                              mm.depth));
    Value v = memref::LoadOp::create(
        ob, loc, source,
        ValueRange{arith::MinUIOp::create(ob, loc, row, rowLast),
                   arith::MinUIOp::create(ob, loc, k, depthLast)});
    return arith::SelectOp::create(ob, loc, inside, toNarrow(ob, v),
                                   narrowZero)
        .getResult();
  }

  /// Two 16-bit elements as one word, the first in the low half.
  Value pack(OpBuilder &ob, Value low, Value high) {
    auto bits = [&](Value v) {
      Value i16 = arith::BitcastOp::create(ob, loc, ob.getI16Type(), v);
      return arith::ExtUIOp::create(ob, loc, i32, i16).getResult();
    };
    Value shifted = arith::ShLIOp::create(
        ob, loc, bits(high), arith::ConstantIntOp::create(ob, loc, i32, 16));
    return arith::OrIOp::create(ob, loc, bits(low), shifted).getResult();
  }

  /// Stages depth k0.. of both tiles: runs of 16 bytes where the tiles lie
  /// inside the operands and their rows are aligned, element by element
  /// (zeros outside) at the edges; then waits for every thread.
  void stageTiles(OpBuilder &nb, Location nl, Value k0) {
    auto within = [&](Value base, int64_t size, Value limit) {
      return arith::CmpIOp::create(nb, nl, arith::CmpIPredicate::ule,
                                   add(nb, base, size), limit)
          .getResult();
    };
    Value inside = aligned;
    for (Value condition : {within(rowBase, kTileRows, mm.rows),
                            within(columnBase, kTileColumns, mm.columns),
                            within(k0, kTileDepth, mm.depth)})
      inside = arith::AndIOp::create(nb, nl, inside, condition);
    scf::IfOp::create(
        nb, nl, inside,
        [&](OpBuilder &rb, Location rl) { stageRuns(rb, rl, k0); },
        [&](OpBuilder &cb, Location cl) { stageClamped(cb, cl, k0); });
    gpu::BarrierOp::create(nb, nl);
  }

  /// The tiles' edges: out-of-range rows and depths stage zeros.
  void stageClamped(OpBuilder &cb, Location cl, Value k0) {
    Value k = arith::AddIOp::create(
        cb, cl, k0,
        arith::MulIOp::create(cb, cl, stagedWord, index(cb, 2)));
    Value kNext = add(cb, k, 1);
    for (int64_t i = 0; i < kStagedWordsPerThread; ++i) {
      Value tileRow =
          add(cb, stagedRow, i * (kThreads / kWordsPerRow));
      auto stage = [&](Value source, Value base, Value limit,
                       Value tile) {
        Value row = arith::AddIOp::create(cb, cl, base, tileRow);
        Value word = pack(cb, element(cb, source, row, limit, k),
                          element(cb, source, row, limit, kNext));
        memref::StoreOp::create(cb, cl, word, tile,
                                ValueRange{tileRow, stagedWord});
      };
      stage(mm.lhs, rowBase, mm.rows, lhsTile);
      stage(mm.rhs, columnBase, mm.columns, rhsTile);
    }
    scf::YieldOp::create(cb, cl);
  }

  /// Inside: runs of 16 bytes, each loaded unconditionally from consecutive
  /// addresses (one 16-byte load once LLVM merges them) and stored as
  /// consecutive words.
  void stageRuns(OpBuilder &rb, Location rl, Value k0) {
    auto stage = [&](Value source, Value base, Value tile,
                     int64_t runElements) {
      int64_t runsPerRow = kTileDepth / runElements;
      int64_t runsPerThread = kTileRows * runsPerRow / kThreads;
      Value runRow =
          arith::DivUIOp::create(rb, rl, thread, index(rb, runsPerRow));
      Value run =
          arith::RemUIOp::create(rb, rl, thread, index(rb, runsPerRow));
      Value firstK = arith::AddIOp::create(
          rb, rl, k0,
          arith::MulIOp::create(rb, rl, run, index(rb, runElements)));
      Value firstWord =
          arith::MulIOp::create(rb, rl, run, index(rb, runElements / 2));
      for (int64_t i = 0; i < runsPerThread; ++i) {
        Value tileRow = add(rb, runRow, i * (kThreads / runsPerRow));
        Value row = arith::AddIOp::create(rb, rl, base, tileRow);
        SmallVector<Value> values;
        for (int64_t e = 0; e < runElements; ++e) {
          Value v = memref::LoadOp::create(
              rb, rl, source, ValueRange{row, add(rb, firstK, e)},
              false,
              e ? llvm::MaybeAlign() : llvm::MaybeAlign(kWideLoadBytes));
          values.push_back(toNarrow(rb, v));
        }
        for (int64_t w = 0; w < runElements / 2; ++w)
          memref::StoreOp::create(
              rb, rl, pack(rb, values[2 * w], values[2 * w + 1]), tile,
              ValueRange{tileRow, add(rb, firstWord, w)});
      }
    };
    stage(mm.lhs, rowBase, lhsTile, kRunElementsOfX);
    stage(mm.rhs, columnBase, rhsTile, kRunElementsOfW);
    scf::YieldOp::create(rb, rl);
  }

  /// The warp's 2 x 4 mma blocks over the staged depth: `sums` (the
  /// accumulators) plus the tiles' products.
  SmallVector<Value> multiplyStagedTiles(OpBuilder &nb, Location nl,
                                         ValueRange sums) {
    SmallVector<Value> next(sums.begin(), sums.end());
    // A fragment register: bf16 pairs as the i32 words they are
    // staged as, f16 pairs as vector<2xf16> (what nvvm.mma.sync
    // takes for each).
    auto word = [&](Value tile, Value row, int64_t rowOffset,
                    int64_t wordOffset) {
      Value w = memref::LoadOp::create(
          nb, nl, tile,
          ValueRange{add(nb, row, rowOffset),
                     add(nb, inGroup, wordOffset)});
      if (narrow.isF16())
        w = LLVM::BitcastOp::create(nb, nl, VectorType::get({2}, narrow),
                                    w);
      return w;
    };
    auto accumulatorType = LLVM::LLVMStructType::getLiteral(
        context, SmallVector<Type>(4, f32));
    NVVM::MMATypes multiplicand =
        narrow.isBF16() ? NVVM::MMATypes::bf16 : NVVM::MMATypes::f16;
    for (int64_t step = 0; step < kTileDepth / kMmaDepth; ++step) {
      int64_t stepWord = step * kMmaDepth / 2;
      SmallVector<SmallVector<Value>> a, bFragments;
      for (int64_t i = 0; i < kMmasDown; ++i) {
        Value row = arith::AddIOp::create(
            nb, nl, add(nb, warpRow, i * kMmaRows), group);
        a.push_back({word(lhsTile, row, 0, stepWord),
                     word(lhsTile, row, 8, stepWord),
                     word(lhsTile, row, 0, stepWord + 4),
                     word(lhsTile, row, 8, stepWord + 4)});
      }
      for (int64_t j = 0; j < kMmasAcross; ++j) {
        Value column = arith::AddIOp::create(
            nb, nl, add(nb, warpColumn, j * kMmaColumns), group);
        bFragments.push_back({word(rhsTile, column, 0, stepWord),
                              word(rhsTile, column, 0, stepWord + 4)});
      }
      for (int64_t i = 0; i < kMmasDown; ++i)
        for (int64_t j = 0; j < kMmasAcross; ++j) {
          int64_t first = (i * kMmasAcross + j) * 4;
          ValueRange c = ValueRange(next).slice(first, 4);
          Value d = NVVM::MmaOp::create(
              nb, nl, accumulatorType, a[i], bFragments[j], c,
              ArrayRef<int64_t>{kMmaRows, kMmaColumns, kMmaDepth},
              std::nullopt, std::nullopt,
              std::array<NVVM::MMATypes, 2>{multiplicand, multiplicand},
              std::array<NVVM::MMALayout, 2>{NVVM::MMALayout::row,
                                             NVVM::MMALayout::col});
          for (int64_t e = 0; e < 4; ++e)
            next[first + e] = LLVM::ExtractValueOp::create(nb, nl, d, e);
        }
    }
    return next;
  }

  /// Each lane's sums into C (overwritten, or added to).
  void storeSums(OpBuilder &b, scf::ForOp depthLoop) {
    // Each lane holds c0..c3 of every mma block: rows g and g + 8, columns
    // 2q and 2q + 1.
    Value laneRow = arith::AddIOp::create(
        b, loc, arith::AddIOp::create(b, loc, rowBase, warpRow), group);
    Value laneColumn = arith::AddIOp::create(
        b, loc, arith::AddIOp::create(b, loc, columnBase, warpColumn),
        arith::MulIOp::create(b, loc, inGroup, index(b, 2)));
    for (int64_t i = 0; i < kMmasDown; ++i)
      for (int64_t j = 0; j < kMmasAcross; ++j)
        for (int64_t e = 0; e < 4; ++e) {
          Value row = add(b, laneRow, i * kMmaRows + (e / 2) * 8);
          Value column = add(b, laneColumn, j * kMmaColumns + e % 2);
          Value inside = arith::AndIOp::create(
              b, loc,
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, row,
                                    mm.rows),
              arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, column,
                                    mm.columns));
          Value sum = depthLoop.getResult((i * kMmasAcross + j) * 4 + e);
          scf::IfOp::create(b, loc, inside, [&](OpBuilder &nb, Location nl) {
            storeSum(nb, nl, sum, mm.out, ValueRange{row, column}, overwrite);
            scf::YieldOp::create(nb, nl);
          });
        }
  }

  linalg::MatmulOp matmul;
  bool overwrite;
  Location loc;
  MLIRContext *context;
  MatmulTransposedB mm;
  Type narrow, f32, i32;
  Value one, lhsTile, rhsTile, thread, aligned, group, inGroup, rowBase,
      columnBase, warpRow, warpColumn, stagedRow, stagedWord;
  /// Set at the start of each depth step.
  Value depthLast, narrowZero;
};

struct LowerMatmulToMmaPass
    : mlir::tfm::impl::LowerMatmulToMmaPassBase<LowerMatmulToMmaPass> {
  void runOnOperation() override {
    SmallVector<linalg::MatmulOp> matmuls;
    getOperation().walk([&](linalg::MatmulOp matmul) {
      if (!isMatmulTransposedB(matmul))
        return;
      auto operandType = [&](int i) {
        return cast<MemRefType>(matmul->getOperand(i).getType())
            .getElementType();
      };
      Type weights = operandType(1);
      if ((weights.isBF16() || weights.isF16()) && operandType(0).isF32() &&
          operandType(2).isF32())
        matmuls.push_back(matmul);
    });
    for (linalg::MatmulOp matmul : matmuls) {
      bool overwrite = absorbZeroFill(matmul);
      MmaKernel(matmul, overwrite).build();
    }
  }
};

} // namespace
