//===- TiledAttention.cpp - prefill attention over tiles ------------------===//
//
// A prefill's attention with a block per (head, query) reads every visible
// key and value row once per query: at 2048 tokens, 32 heads and 22 layers
// of a 1.1 B model, hundreds of GB from L2 a prompt, 0.14x PyTorch on an
// H200. Here a block takes a tile of queries of one head (flash attention,
// on CUDA cores): the queries sit in workgroup memory, tiles of keys and
// values pass through it once per block, and each thread keeps its rows'
// running maximum, sum and outputs in registers (online softmax).
//
// The block's 256 threads are 32 groups of 8 consecutive lanes. Group g
// owns `rows` queries (g * rows + i); lane c of a group scores keys c, c +
// 8, ... of each tile and accumulates output columns c, c + 8, ...: the 8
// lanes of a row meet by shuffles for its maximum and sum, and through the
// tile of weights P in workgroup memory for P · V. Rows of the staged tiles
// are padded so that the lanes of a warp hit distinct banks.
//
//===----------------------------------------------------------------------===//

#include "codegen/cuda/TiledAttention.h"
#include "codegen/cuda/WarpShuffles.h"
#include "codegen/linalg/LinalgBuilders.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"

#include <limits>
#include <optional>

using namespace mlir;
using namespace mlir::tfm;

namespace {

constexpr int64_t kThreads = 256;
/// Lanes that share a row of queries.
constexpr int64_t kRowLanes = 8;
constexpr int64_t kRowGroups = kThreads / kRowLanes;

/// What each thread holds: queries (rows) and keys of a tile it scores.
struct TileShape {
  int64_t rows, keys;
};

std::optional<TileShape> tileShapeFor(int64_t width) {
  if (width % kRowLanes != 0)
    return std::nullopt;
  // 64-wide heads: 64 queries by 32 keys a tile, 41.5 KB staged; up to
  // 128: 32 by 16, 35 KB.
  if (width <= 64)
    return TileShape{2, 4};
  if (width <= 128)
    return TileShape{1, 2};
  return std::nullopt;
}

class TiledAttentionBuilder {
public:
  TiledAttentionBuilder(OpBuilder &b, Location loc, const AttentionOperands &a)
      : b(b), loc(loc), a(a), shape(*tileShapeFor(a.width)),
        queryTile(kRowGroups * shape.rows), keyTile(kRowLanes * shape.keys),
        columns(a.width / kRowLanes) {}

  void build() {
    Type f32 = b.getF32Type();
    auto shared = [&](int64_t rows, int64_t stride) {
      return MemRefType::get({rows, stride}, f32, AffineMap(),
                             gpu::AddressSpaceAttr::get(
                                 b.getContext(), gpu::AddressSpace::Workgroup));
    };
    // Strides: a warp's lanes read Q and K rows at one column (rows of
    // width + 1 land on distinct banks) and write P rows of 8 lanes
    // `rows` rows apart (a stride of 8 / rows words past 32 spreads them).
    int64_t weightStride = keyTile + kRowLanes / shape.rows;
    queries = memref::DimOp::create(b, loc, a.q, 0);
    keys = memref::DimOp::create(b, loc, a.k, 0);
    Value one = index(b, 1);
    Value queryTiles = arith::DivUIOp::create(
        b, loc, arith::AddIOp::create(b, loc, queries, index(b, queryTile - 1)),
        index(b, queryTile));
    auto launch = gpu::LaunchOp::create(
        b, loc, index(b, a.heads), queryTiles, one, index(b, kThreads), one,
        one, /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
        /*asyncDependencies=*/{},
        TypeRange{shared(queryTile, a.width + 1), shared(keyTile, a.width + 1),
                  shared(keyTile, a.width), shared(queryTile, weightStride)});
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(&launch.getBody().front());
    qTile = launch.getWorkgroupAttributions()[0];
    kTile = launch.getWorkgroupAttributions()[1];
    vTile = launch.getWorkgroupAttributions()[2];
    pTile = launch.getWorkgroupAttributions()[3];
    head = launch.getBlockIds().x;
    thread = launch.getThreadIds().x;
    firstQuery = arith::MulIOp::create(b, loc, launch.getBlockIds().y,
                                       index(b, queryTile));
    kvHead = arith::DivUIOp::create(b, loc, head, index(b, a.group));
    Value group = arith::DivUIOp::create(b, loc, thread, index(b, kRowLanes));
    lane = arith::RemUIOp::create(b, loc, thread, index(b, kRowLanes));
    for (int64_t i = 0; i < shape.rows; ++i)
      rows.push_back(arith::AddIOp::create(
          b, loc, arith::MulIOp::create(b, loc, group, index(b, shape.rows)),
          index(b, i)));
    minusInf = f32Constant(b, -std::numeric_limits<double>::infinity());
    zero = f32Constant(b, 0.0);

    stageQueries();
    gpu::BarrierOp::create(b, loc);
    auto [begin, end] = blockKeys();
    SmallVector<Value> inits;
    inits.append(shape.rows, minusInf); // running maxima
    inits.append(shape.rows, zero);     // running sums
    inits.append(shape.rows * columns, zero);
    auto tiles = scf::ForOp::create(
        b, loc, begin, end, index(b, keyTile), inits,
        [&](OpBuilder &tb, Location, Value start, ValueRange carried) {
          scf::YieldOp::create(tb, loc, keyTileStep(tb, start, carried));
        });
    writeOutputs(tiles.getResults());
    gpu::TerminatorOp::create(b, loc);
  }

private:
  Value index(OpBuilder &at, int64_t value) {
    return arith::ConstantIndexOp::create(at, loc, value);
  }
  Value f32Constant(OpBuilder &at, double value) {
    return arith::ConstantOp::create(at, loc, at.getF32FloatAttr(value));
  }
  Value add(OpBuilder &at, Value x, Value y) {
    return arith::AddIOp::create(at, loc, x, y);
  }
  Value less(OpBuilder &at, Value x, Value y) {
    return arith::CmpIOp::create(at, loc, arith::CmpIPredicate::ult, x, y);
  }
  /// Lane c's j-th key or column of a row: c + 8 j.
  Value laneStride(OpBuilder &at, int64_t j) {
    return j ? add(at, lane, index(at, j * kRowLanes)) : lane;
  }

  /// Copies `count` rows of `source` [position, head, d] from `first` into
  /// `tile` (zeros past `limit`, at least 1), the block's threads walking
  /// the tile element by element (neighbours read neighbouring columns),
  /// each value multiplied by `factor` when given. A thread's loads are
  /// issued together, then its stores (a loop would wait for each load):
  /// rows past `limit` read its last row and store 0.
  void stage(OpBuilder &at, Value source, Value sourceHead, Value first,
             Value limit, Value tile, int64_t count,
             std::optional<double> factor) {
    int64_t perThread = llvm::divideCeil(count * a.width, kThreads);
    Value last = arith::SubIOp::create(at, loc, limit, index(at, 1));
    SmallVector<Value> values, elements, rowsAt, columnsAt;
    for (int64_t i = 0; i < perThread; ++i) {
      Value e = i ? add(at, thread, index(at, i * kThreads)) : thread;
      Value row = arith::DivUIOp::create(at, loc, e, index(at, a.width));
      Value column = arith::RemUIOp::create(at, loc, e, index(at, a.width));
      Value position = add(at, first, row);
      Value clamped = arith::MinUIOp::create(at, loc, position, last);
      Value x = memref::LoadOp::create(at, loc, source,
                                       ValueRange{clamped, sourceHead, column});
      values.push_back(
          arith::SelectOp::create(at, loc, less(at, position, limit), x, zero));
      elements.push_back(e);
      rowsAt.push_back(row);
      columnsAt.push_back(column);
    }
    for (int64_t i = 0; i < perThread; ++i) {
      Value x = values[i];
      if (factor)
        x = arith::MulFOp::create(at, loc, x, f32Constant(at, *factor));
      auto store = [&](OpBuilder &sb) {
        memref::StoreOp::create(sb, loc, x, tile,
                                ValueRange{rowsAt[i], columnsAt[i]});
      };
      // Only the last round can run past the tile (count x width not a
      // multiple of the block).
      if ((i + 1) * kThreads <= count * a.width) {
        store(at);
        continue;
      }
      Value inTile = less(at, elements[i], index(at, count * a.width));
      scf::IfOp::create(at, loc, inTile, [&](OpBuilder &sb, Location) {
        store(sb);
        scf::YieldOp::create(sb, loc);
      });
    }
  }

  /// The block's queries, scaled once here rather than every score.
  void stageQueries() {
    stage(b, a.q, head, firstQuery, queries, qTile, queryTile, a.scale);
  }

  KeyRange keysOf(OpBuilder &at, Value query) {
    return visibleKeys(at, loc, query, queries, keys, a.causal, a.window);
  }

  /// The keys any query of the block sees: from the first query's first
  /// to the last query's end.
  std::pair<Value, Value> blockKeys() {
    Value lastQuery = arith::SubIOp::create(
        b, loc,
        arith::MinUIOp::create(b, loc, queries,
                               add(b, firstQuery, index(b, queryTile))),
        index(b, 1));
    Value begin = keysOf(b, firstQuery).first;
    Value end = keysOf(b, lastQuery).end;
    return {begin, end};
  }

  /// One tile of keys from `start`: stage K and V, score, update the
  /// running maxima and sums, stage P, accumulate P · V. Returns the new
  /// carried values (maxima, sums, outputs).
  SmallVector<Value> keyTileStep(OpBuilder &tb, Value start,
                                 ValueRange carried) {
    int64_t rowCount = shape.rows, keyCount = shape.keys;
    stage(tb, a.k, kvHead, start, keys, kTile, keyTile, std::nullopt);
    stage(tb, a.v, kvHead, start, keys, vTile, keyTile, std::nullopt);
    gpu::BarrierOp::create(tb, loc);

    // Scores: rows x keys dot products over the head's width.
    SmallVector<Value> dotInits(rowCount * keyCount, zero);
    auto dots = scf::ForOp::create(
        tb, loc, index(tb, 0), index(tb, a.width), index(tb, 1), dotInits,
        [&](OpBuilder &db, Location, Value d, ValueRange sums) {
          SmallVector<Value> qs, ks, next;
          for (int64_t i = 0; i < rowCount; ++i)
            qs.push_back(
                memref::LoadOp::create(db, loc, qTile, ValueRange{rows[i], d}));
          for (int64_t j = 0; j < keyCount; ++j)
            ks.push_back(memref::LoadOp::create(
                db, loc, kTile, ValueRange{laneStride(db, j), d}));
          for (int64_t i = 0; i < rowCount; ++i)
            for (int64_t j = 0; j < keyCount; ++j)
              next.push_back(math::FmaOp::create(db, loc, qs[i], ks[j],
                                                 sums[i * keyCount + j]));
          scf::YieldOp::create(db, loc, next);
        });

    SmallVector<Value> next(carried);
    SmallVector<Value> rescales;
    for (int64_t i = 0; i < rowCount; ++i) {
      Value query = add(tb, firstQuery, rows[i]);
      auto [first, end] = keysOf(tb, query);
      SmallVector<Value> scores, visible;
      Value rowMax = minusInf;
      for (int64_t j = 0; j < keyCount; ++j) {
        Value key = add(tb, start, laneStride(tb, j));
        Value sees = less(tb, key, end);
        if (a.window > 0)
          sees = arith::AndIOp::create(
              tb, loc, sees,
              arith::CmpIOp::create(tb, loc, arith::CmpIPredicate::uge, key,
                                    first));
        Value score = dots.getResult(i * keyCount + j);
        if (a.softcap > 0)
          score = softcapped(tb, loc, score, a.softcap);
        score = arith::SelectOp::create(tb, loc, sees, score, minusInf);
        rowMax = arith::MaximumFOp::create(tb, loc, rowMax, score);
        scores.push_back(score);
        visible.push_back(sees);
      }
      Value runningMax = carried[i], runningSum = carried[rowCount + i];
      Value newMax = arith::MaximumFOp::create(
          tb, loc, runningMax,
          combineAcrossLanes(tb, loc, rowMax, kRowLanes, /*maximum=*/true));
      // Masked keys weigh 0 explicitly (exp(-inf - -inf) is NaN), as does
      // the rescaling of sums that have seen no key yet.
      Value rowSum = zero;
      for (int64_t j = 0; j < keyCount; ++j) {
        Value weight = arith::SelectOp::create(
            tb, loc, visible[j],
            math::ExpOp::create(
                tb, loc, arith::SubFOp::create(tb, loc, scores[j], newMax)),
            zero);
        memref::StoreOp::create(tb, loc, weight, pTile,
                                ValueRange{rows[i], laneStride(tb, j)});
        rowSum = arith::AddFOp::create(tb, loc, rowSum, weight);
      }
      Value nothingYet = arith::CmpFOp::create(
          tb, loc, arith::CmpFPredicate::OEQ, runningMax, minusInf);
      Value rescale = arith::SelectOp::create(
          tb, loc, nothingYet, zero,
          math::ExpOp::create(
              tb, loc, arith::SubFOp::create(tb, loc, runningMax, newMax)));
      next[i] = newMax;
      next[rowCount + i] = arith::AddFOp::create(
          tb, loc, arith::MulFOp::create(tb, loc, runningSum, rescale),
          combineAcrossLanes(tb, loc, rowSum, kRowLanes, /*maximum=*/false));
      rescales.push_back(rescale);
    }
    gpu::BarrierOp::create(tb, loc);

    // Outputs: rescaled, plus P · V over the tile's keys.
    int64_t outputsAt = 2 * rowCount;
    SmallVector<Value> outputs;
    for (int64_t i = 0; i < rowCount; ++i)
      for (int64_t c = 0; c < columns; ++c)
        outputs.push_back(arith::MulFOp::create(
            tb, loc, carried[outputsAt + i * columns + c], rescales[i]));
    auto weighted = scf::ForOp::create(
        tb, loc, index(tb, 0), index(tb, keyTile), index(tb, 1), outputs,
        [&](OpBuilder &wb, Location, Value key, ValueRange sums) {
          SmallVector<Value> ps, vs, sum;
          for (int64_t i = 0; i < rowCount; ++i)
            ps.push_back(memref::LoadOp::create(wb, loc, pTile,
                                                ValueRange{rows[i], key}));
          for (int64_t c = 0; c < columns; ++c)
            vs.push_back(memref::LoadOp::create(
                wb, loc, vTile, ValueRange{key, laneStride(wb, c)}));
          for (int64_t i = 0; i < rowCount; ++i)
            for (int64_t c = 0; c < columns; ++c)
              sum.push_back(math::FmaOp::create(wb, loc, ps[i], vs[c],
                                                sums[i * columns + c]));
          scf::YieldOp::create(wb, loc, sum);
        });
    // The next tile's stages overwrite K, V and P only after every thread
    // has read them.
    gpu::BarrierOp::create(tb, loc);
    for (auto [slot, value] : llvm::enumerate(weighted.getResults()))
      next[outputsAt + slot] = value;
    return next;
  }

  /// Each row inside the prompt: its outputs over its sum.
  void writeOutputs(ValueRange results) {
    int64_t rowCount = shape.rows;
    for (int64_t i = 0; i < rowCount; ++i) {
      Value query = add(b, firstQuery, rows[i]);
      Value sum = results[rowCount + i];
      scf::IfOp::create(
          b, loc, less(b, query, queries), [&](OpBuilder &wb, Location) {
            for (int64_t c = 0; c < columns; ++c) {
              Value total = results[2 * rowCount + i * columns + c];
              memref::StoreOp::create(
                  wb, loc, arith::DivFOp::create(wb, loc, total, sum), a.out,
                  ValueRange{query, head, laneStride(wb, c)});
            }
            scf::YieldOp::create(wb, loc);
          });
    }
  }

  OpBuilder &b;
  Location loc;
  const AttentionOperands &a;
  TileShape shape;
  int64_t queryTile, keyTile, columns;
  Value queries, keys, minusInf, zero;
  Value qTile, kTile, vTile, pTile;
  Value head, kvHead, thread, lane, firstQuery;
  SmallVector<Value> rows;
};

} // namespace

KeyRange mlir::tfm::visibleKeys(OpBuilder &b, Location loc, Value query,
                                Value queries, Value keys, bool causal,
                                int64_t window) {
  // The query's position among the keys, plus one: queries are the last
  // `queries` of the `keys`.
  Value past = arith::AddIOp::create(
      b, loc,
      arith::AddIOp::create(b, loc, query,
                            arith::ConstantIndexOp::create(b, loc, 1)),
      arith::SubIOp::create(b, loc, keys, queries));
  Value end = causal ? arith::MinUIOp::create(b, loc, keys, past) : keys;
  Value first = arith::ConstantIndexOp::create(b, loc, 0);
  if (window > 0) {
    // Keys `window` or more positions behind the query are hidden (without
    // `causal`, later keys stay seen).
    Value span = arith::ConstantIndexOp::create(b, loc, window);
    first = arith::SelectOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt, past, span),
        arith::SubIOp::create(b, loc, past, span), first);
  }
  return {first, end};
}

bool mlir::tfm::tiledAttentionFits(int64_t width) {
  return tileShapeFor(width).has_value();
}

void mlir::tfm::buildTiledPrefillAttention(OpBuilder &b, Location loc,
                                           const AttentionOperands &operands) {
  TiledAttentionBuilder(b, loc, operands).build();
}
