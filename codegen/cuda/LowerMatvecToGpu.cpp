//===- LowerMatvecToGpu.cpp - decode's x·Wᵀ as warp reductions -----------===//
//
// See LowerMatvecToGpuPass in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "codegen/cuda/GpuAlignment.h"
#include "codegen/cuda/GpuMatmuls.h"
#include "codegen/cuda/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AffineMap.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_LOWERMATVECTOGPUPASS
#include "codegen/cuda/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// Runs of 16 bytes a lane loads per iteration of the aligned path.
constexpr int64_t kRunsInFlight = 4;

/// One product's kernel as it is built: the launch, each thread's place
/// (its output, its share of the output's k), and the parts below (a
/// lane's partial sum, the warp's, writing or adding up the sums).
class MatvecKernel {
public:
  /// `split` warps per output (warpsPerOutput), `threads` a block.
  MatvecKernel(linalg::MatmulOp matmul, bool overwrite, int64_t threads,
               int64_t split, int64_t chunk, int64_t wideElements)
      : matmul(matmul), overwrite(overwrite), loc(matmul.getLoc()),
        threads(threads), split(split), chunk(chunk),
        wideElements(wideElements) {}

  /// Replaces the matmul (read as `mm`) with the kernel.
  void build(const MatmulTransposedB &product) {
    mm = product;
    OpBuilder b(matmul);
    Value one = index(b, 1);
    int64_t warps = threads / kWarp;
    int64_t outputsPerBlock = warps / split;
    // Loads in flight a lane: four while whole runs of them fit; fewer
    // where a split leaves each warp only a few runs of k (the main loop
    // would never run).
    runs = kRunsInFlight;
    if (split > 1)
      runs = std::clamp<int64_t>(
          cast<MemRefType>(mm.rhs.getType()).getDimSize(1) / (chunk * split), 1,
          kRunsInFlight);

    Value columnGroups = tilesOf(b, loc, mm.columns, outputsPerBlock);
    SmallVector<Type> sharedTypes;
    if (split > 1)
      sharedTypes.push_back(
          MemRefType::get({warps}, b.getF32Type(), AffineMap(),
                          gpu::AddressSpaceAttr::get(
                              b.getContext(), gpu::AddressSpace::Workgroup)));
    auto launch = gpu::LaunchOp::create(
        b, loc, columnGroups, mm.rows, one, index(b, threads), one, one,
        /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
        /*asyncDependencies=*/{}, sharedTypes);
    b.setInsertionPointToStart(&launch.getBody().front());
    thread = launch.getThreadIds().x;
    lane = arith::RemUIOp::create(b, loc, thread, index(b, kWarp));
    warp = arith::DivUIOp::create(b, loc, thread, index(b, kWarp));
    firstColumn = arith::MulIOp::create(b, loc, launch.getBlockIds().x,
                                        index(b, outputsPerBlock));
    column = arith::AddIOp::create(
        b, loc, firstColumn,
        split > 1
            ? arith::DivUIOp::create(b, loc, warp, index(b, split)).getResult()
            : warp);
    // Which of the output's warps this is: it starts at its run of k.
    share =
        split > 1
            ? arith::RemUIOp::create(b, loc, warp, index(b, split)).getResult()
            : Value();
    row = launch.getBlockIds().y;
    f32 = b.getF32Type();
    zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(f32));

    // A warp past the last output has nothing to do; the condition is the
    // same for all its lanes, so its shuffles see every lane.
    Value inside = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                         column, mm.columns);
    if (split == 1) {
      ifThen(b, inside, [&](OpBuilder &nb, Location nl) {
        Value total = warpPart(nb, nl);
        ifThen(nb, isZero(nb, lane), [&](OpBuilder &fb, Location fl) {
          storeSum(fb, fl, total, mm.out, ValueRange{row, column}, overwrite);
        });
      });
    } else {
      addUpShares(b, inside, launch.getWorkgroupAttributions()[0],
                  outputsPerBlock);
    }
    gpu::TerminatorOp::create(b, loc);
    matmul.erase();
  }

private:
  Value index(OpBuilder &at, int64_t value) {
    return arith::ConstantIndexOp::create(at, loc, value);
  }
  void ifThen(OpBuilder &at, Value condition,
              function_ref<void(OpBuilder &, Location)> body) {
    scf::IfOp::create(at, loc, condition, [&](OpBuilder &tb, Location tl) {
      body(tb, tl);
      scf::YieldOp::create(tb, tl);
    });
  }
  Value isZero(OpBuilder &at, Value value) {
    return arith::CmpIOp::create(at, loc, arith::CmpIPredicate::eq, value,
                                 index(at, 0));
  }

  /// The partial sum (from `init`) of lane `lane` over k = start, start +
  /// step, ... below `end`, with `width` consecutive elements at each of
  /// k, k + stride, ... (`count` of them: loads in flight together), each
  /// operand's runs of 16 bytes loaded together where `wide` (the rows
  /// aligned). Narrow weights (bf16, f16: tfm-widen-in-matmuls) widen as
  /// they load.
  Value partialSum(OpBuilder &ob, Location ol, Value init, Value start,
                   Value end, Value step, int64_t width, bool wide,
                   int64_t count, int64_t stride) {
    auto loop = scf::ForOp::create(
        ob, ol, start, end, step, ValueRange{init},
        [&](OpBuilder &nb, Location nl, Value first, ValueRange acc) {
          auto load = [&](Value buffer, Value outer, Value at, int64_t e) {
            auto type = cast<MemRefType>(buffer.getType());
            int64_t perWideLoad =
                kWideLoadBytes * 8 / type.getElementTypeBitWidth();
            llvm::MaybeAlign align = wide && e % perWideLoad == 0
                                         ? llvm::MaybeAlign(kWideLoadBytes)
                                         : llvm::MaybeAlign();
            Value v = memref::LoadOp::create(
                nb, nl, buffer, ValueRange{outer, at}, false, align);
            return type.getElementType() == f32
                       ? v
                       : arith::ExtFOp::create(nb, nl, f32, v).getResult();
          };
          Value sum = acc[0];
          for (int64_t run = 0; run < count; ++run) {
            Value k = run ? arith::AddIOp::create(nb, nl, first,
                                                  index(nb, run * stride))
                                .getResult()
                          : first;
            for (int64_t e = 0; e < width; ++e) {
              Value at =
                  e ? arith::AddIOp::create(nb, nl, k, index(nb, e)).getResult()
                    : k;
              Value x = load(mm.lhs, row, at, e);
              Value w = load(mm.rhs, column, at, e);
              sum = arith::AddFOp::create(nb, nl, sum,
                                          arith::MulFOp::create(nb, nl, x, w));
            }
          }
          scf::YieldOp::create(nb, nl, sum);
        });
    return loop.getResult(0);
  }

  /// A lane's first k, `offset`, moved past the runs of `run` elements
  /// that the output's earlier warps take.
  Value afterOtherShares(OpBuilder &at, Location l, Value offset, int64_t run) {
    if (split == 1)
      return offset;
    return arith::AddIOp::create(
        at, l, offset, arith::MulIOp::create(at, l, share, index(at, run)));
  }

  /// This warp's part of the output's sum (in every lane, after the
  /// shuffles).
  Value warpPart(OpBuilder &nb, Location nl) {
    auto scalar = [&](OpBuilder &sb, Location sl) {
      Value start = afterOtherShares(sb, sl, lane, kWarp);
      return partialSum(sb, sl, zero, start, mm.depth, index(sb, kWarp * split),
                        1, false, 1, 0);
    };
    Value part;
    if (hasUnitInnerStride(mm.lhs) && hasUnitInnerStride(mm.rhs)) {
      Value depthFits = arith::CmpIOp::create(
          nb, nl, arith::CmpIPredicate::eq,
          arith::RemUIOp::create(nb, nl, mm.depth, index(nb, wideElements)),
          index(nb, 0));
      Value aligned = arith::AndIOp::create(
          nb, nl, depthFits,
          arith::AndIOp::create(nb, nl, rowsStartAligned(nb, nl, mm.lhs),
                                rowsStartAligned(nb, nl, mm.rhs)));
      auto choice = scf::IfOp::create(
          nb, nl, aligned,
          [&](OpBuilder &vb, Location vl) {
            // `runs` runs of 16 bytes a lane per iteration while whole
            // ones fit, then one: a warp per output leaves few warps on
            // an SM when the outputs are few (2048), and one load at a
            // time each streamed at 35% of an H200's bandwidth.
            Value start = afterOtherShares(
                vb, vl,
                arith::MulIOp::create(vb, vl, lane, index(vb, wideElements)),
                chunk);
            int64_t stride = chunk * split;
            Value unrolled = index(vb, stride * runs);
            Value mainEnd = arith::SubIOp::create(
                vb, vl, mm.depth,
                arith::RemUIOp::create(vb, vl, mm.depth, unrolled));
            Value head = partialSum(vb, vl, zero, start, mainEnd, unrolled,
                                    wideElements, true, runs, stride);
            Value rest = partialSum(
                vb, vl, head, arith::AddIOp::create(vb, vl, start, mainEnd),
                mm.depth, index(vb, stride), wideElements, true, 1, 0);
            scf::YieldOp::create(vb, vl, rest);
          },
          [&](OpBuilder &sb, Location sl) {
            scf::YieldOp::create(sb, sl, scalar(sb, sl));
          });
      part = choice.getResult(0);
    } else {
      part = scalar(nb, nl);
    }
    return combineAcrossLanes(nb, nl, part, kWarp, /*maximum=*/false);
  }

  /// Several warps an output: each leaves its part in `partials`
  /// (workgroup memory), and after a barrier thread j of the block adds
  /// up the parts of its j-th output and writes it.
  void addUpShares(OpBuilder &b, Value inside, Value partials,
                   int64_t outputsPerBlock) {
    // Every thread reaches the barrier: a warp past the last output
    // contributes 0.
    auto part = scf::IfOp::create(
        b, loc, inside,
        [&](OpBuilder &nb, Location nl) {
          scf::YieldOp::create(nb, nl, warpPart(nb, nl));
        },
        [&](OpBuilder &nb, Location nl) {
          scf::YieldOp::create(nb, nl, zero);
        });
    ifThen(b, isZero(b, lane), [&](OpBuilder &fb, Location fl) {
      memref::StoreOp::create(fb, fl, part.getResult(0), partials,
                              ValueRange{warp});
    });
    gpu::BarrierOp::create(b, loc);
    Value ownColumn = arith::AddIOp::create(b, loc, firstColumn, thread);
    Value sums = arith::AndIOp::create(
        b, loc,
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, thread,
                              index(b, outputsPerBlock)),
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult, ownColumn,
                              mm.columns));
    ifThen(b, sums, [&](OpBuilder &fb, Location fl) {
      Value firstPart = arith::MulIOp::create(fb, fl, thread, index(fb, split));
      Value total = memref::LoadOp::create(fb, fl, partials, firstPart);
      for (int64_t s = 1; s < split; ++s)
        total = arith::AddFOp::create(
            fb, fl, total,
            memref::LoadOp::create(fb, fl, partials,
                                   ValueRange{arith::AddIOp::create(
                                       fb, fl, firstPart, index(fb, s))}));
      storeSum(fb, fl, total, mm.out, ValueRange{row, ownColumn}, overwrite);
    });
  }

  linalg::MatmulOp matmul;
  bool overwrite;
  Location loc;
  int64_t threads, split, chunk, wideElements, runs = kRunsInFlight;
  MatmulTransposedB mm;
  Type f32;
  Value thread, lane, warp, firstColumn, column, share, row, zero;
};

struct LowerMatvecToGpuPass
    : mlir::tfm::impl::LowerMatvecToGpuPassBase<LowerMatvecToGpuPass> {
  using Base::Base;

  void runOnOperation() override {
    if (threads % kWarp != 0 || threads < kWarp || threads > 1024) {
      getOperation().emitError("tfm-lower-matvec-to-gpu: threads must be a "
                               "multiple of 32 between 32 and 1024");
      return signalPassFailure();
    }
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

  /// Warps that share one output's k (a power of two dividing the block's
  /// warps): more while the launch would have fewer than `target-warps`
  /// and each warp keeps at least one 16-byte run per lane of each row.
  /// 1 where the sizes are known at run time only.
  int64_t warpsPerOutput(const MatmulTransposedB &mm, int64_t chunk) const {
    auto lhs = cast<MemRefType>(mm.lhs.getType());
    auto rhs = cast<MemRefType>(mm.rhs.getType());
    if (rhs.isDynamicDim(0) || rhs.isDynamicDim(1) || lhs.isDynamicDim(0))
      return 1;
    int64_t outputs = rhs.getDimSize(0) * lhs.getDimSize(0);
    int64_t chunks = rhs.getDimSize(1) / chunk;
    int64_t warps = 1;
    while (warps * 2 <= threads / kWarp && outputs * warps < targetWarps &&
           warps * 2 <= chunks)
      warps *= 2;
    return warps;
  }

  /// `threads` / 32 warps per block, `split` of them (warpsPerOutput) per
  /// output element: the lanes of a warp stride through k together (a
  /// warp reads one contiguous run of the weight row), 16 bytes per lane
  /// and load where both rows are aligned, one element otherwise, the
  /// `split` warps of an output taking every split-th run; shuffles sum
  /// the lanes' partial sums, and lane 0 writes the total (one warp) or
  /// leaves it in workgroup memory for the block's first threads to add
  /// up (several).
  void lower(linalg::MatmulOp matmul) {
    bool overwrite = absorbZeroFill(matmul);
    OpBuilder b(matmul);
    MatmulTransposedB mm = readMatmulTransposedB(b, matmul);
    // A step of the aligned path: 16 bytes of the narrower operand (four
    // f32 weights, eight bf16), as many elements of the other.
    auto bitsOf = [](Value buffer) {
      return cast<MemRefType>(buffer.getType()).getElementTypeBitWidth();
    };
    int64_t wideElements =
        kWideLoadBytes * 8 / std::min(bitsOf(mm.lhs), bitsOf(mm.rhs));
    int64_t chunk = kWarp * wideElements;
    MatvecKernel(matmul, overwrite, threads, warpsPerOutput(mm, chunk), chunk,
                 wideElements)
        .build(mm);
  }
};

} // namespace
