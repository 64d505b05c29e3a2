//===- LowerAttentionToGpu.cpp - attention as one fused GPU kernel -------===//
//
// See LowerAttentionToGpuPass in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "codegen/cuda/GpuAlignment.h"
#include "codegen/cuda/Passes.h"
#include "codegen/cuda/TiledAttention.h"
#include "codegen/linalg/LinalgBuilders.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/Matchers.h"

#include <limits>

namespace mlir::tfm {
#define GEN_PASS_DEF_LOWERATTENTIONTOGPUPASS
#include "codegen/cuda/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

constexpr StringLiteral kAttentionKernel = "tfm_rt_attention";
/// Threads of a block: the keys of a chunk, scored at once, one each.
constexpr int64_t kThreads = 256;
/// Decode's blocks (one query a head) each take a span of this many keys
/// at least (and at least a head's width: a thread writes each column),
/// so that a step has heads x keys / span blocks instead of heads.
constexpr int64_t kDecodeSpan = 64;
/// Keys a thread weighs per iteration of the weighted sum.
constexpr int64_t kUnroll = 4;

/// The buffer a kernel operand was cast from (tfm-select-cpu-kernels
/// passes fully dynamic strided memrefs; the source keeps static sizes).
Value uncast(Value operand) {
  if (auto cast = operand.getDefiningOp<memref::CastOp>())
    return cast.getSource();
  return operand;
}

struct LowerAttentionToGpuPass
    : mlir::tfm::impl::LowerAttentionToGpuPassBase<LowerAttentionToGpuPass> {
  using Base::Base;

  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::CallOp> calls;
    WalkResult walk = module.walk([&](func::CallOp call) {
      StringRef callee = call.getCallee();
      if (callee == kAttentionKernel) {
        calls.push_back(call);
        return WalkResult::advance();
      }
      if (callee.starts_with("tfm_rt_")) {
        call.emitError("--target=cuda has no kernel for ") << callee;
        return WalkResult::interrupt();
      }
      return WalkResult::advance();
    });
    if (walk.wasInterrupted())
      return signalPassFailure();
    for (func::CallOp call : calls)
      if (failed(lower(call)))
        return signalPassFailure();
    if (auto declaration = module.lookupSymbol<func::FuncOp>(kAttentionKernel))
      if (declaration.symbolKnownUseEmpty(module))
        declaration.erase();
  }

  /// tfm_rt_attention(q [s, heads, d], k [t, kv_heads, d], v, sinks (none:
  /// [0]), out [s, heads, d], scale, causal, window, softcap) as one kernel: a
  /// block per (head, query). Keys go by chunks of as many as the block has
  /// threads: each thread scores one (q · k, scaled, masked), block reductions
  /// give the chunk's maximum and sum of exponentials (online softmax: the
  /// running sum and outputs are rescaled when the maximum grows), and groups
  /// of threads, each thread `vec` output columns, split the chunk's keys,
  /// reading the weights from shared memory. Rows are read four elements
  /// per load where they are 16-byte aligned (tested at run time), one
  /// otherwise.
  LogicalResult lower(func::CallOp call) {
    Location loc = call.getLoc();
    if (call.getNumOperands() != 9)
      return call.emitError("tfm_rt_attention takes 9 operands");
    Value q = uncast(call.getOperand(0)), k = uncast(call.getOperand(1)),
          v = uncast(call.getOperand(2)), out = uncast(call.getOperand(4));
    auto sinksType = cast<MemRefType>(uncast(call.getOperand(3)).getType());
    if (sinksType.getDimSize(0) != 0)
      return call.emitError("attention sinks (gpt-oss) are not supported on "
                            "the GPU yet");
    FloatAttr scaleAttr, softcapAttr;
    IntegerAttr causalAttr, windowAttr;
    if (!matchPattern(call.getOperand(5), m_Constant(&scaleAttr)) ||
        !matchPattern(call.getOperand(6), m_Constant(&causalAttr)) ||
        !matchPattern(call.getOperand(7), m_Constant(&windowAttr)) ||
        !matchPattern(call.getOperand(8), m_Constant(&softcapAttr)))
      return call.emitError("attention's scale and flags must be constants");
    auto qType = cast<MemRefType>(q.getType());
    auto kType = cast<MemRefType>(k.getType());
    if (qType.isDynamicDim(1) || qType.isDynamicDim(2) ||
        kType.isDynamicDim(1))
      return call.emitError("attention's heads and head width must be "
                            "known at compile time");
    int64_t heads = qType.getDimSize(1), width = qType.getDimSize(2);
    if (width > kThreads)
      return call.emitError("attention heads wider than ")
             << kThreads << " are not supported on the GPU";
    OpBuilder b(call);
    Type f32 = b.getF32Type();
    auto index = [&](int64_t value) -> Value {
      return arith::ConstantIndexOp::create(b, loc, value);
    };
    // A prefill (queries known at run time only) with heads the tiles take
    // goes by tiles of queries and keys.
    if (qType.isDynamicDim(0) && tiledAttentionFits(width)) {
      buildTiledPrefillAttention(
          b, loc,
          AttentionOperands{q, k, v, out, scaleAttr.getValueAsDouble(),
                            softcapAttr.getValueAsDouble(),
                            causalAttr.getInt() != 0, windowAttr.getInt(),
                            heads, width, heads / kType.getDimSize(1)});
      eraseCall(call);
      return success();
    }
    Value one = index(1);
    Value queries = memref::DimOp::create(b, loc, q, 0);
    // Decode (queries known at compile time: one a step) splits the keys
    // (flash-decoding): a block per (head, query, span of keys) writes its
    // unnormalized outputs, maximum and sum, and a second kernel combines
    // the spans. Prefill has heads x queries blocks already.
    bool splitKeys = splitDecodeKeys && !qType.isDynamicDim(0);
    int64_t threads =
        splitKeys ? std::max<int64_t>(kDecodeSpan, llvm::alignTo(width, 32))
                  : kThreads;
    Kernel kernel{q,
                  k,
                  v,
                  out,
                  queries,
                  scaleAttr.getValueAsDouble(),
                  softcapAttr.getValueAsDouble(),
                  causalAttr.getInt() != 0,
                  windowAttr.getInt(),
                  width,
                  heads / kType.getDimSize(1),
                  threads};
    Value spans = one;
    if (splitKeys) {
      Value keys = memref::DimOp::create(b, loc, k, 0);
      spans = arith::DivUIOp::create(
          b, loc, arith::AddIOp::create(b, loc, keys, index(threads - 1)),
          index(threads));
      // [head, query, span]: width outputs, then the maximum and the sum.
      auto partsType = MemRefType::get(
          {heads, qType.getDimSize(0), ShapedType::kDynamic, width + 2}, f32);
      kernel.spanParts =
          memref::AllocOp::create(b, loc, partsType, ValueRange{spans});
    }
    auto workgroup = [&](int64_t size) {
      return MemRefType::get({size}, f32, AffineMap(),
                             gpu::AddressSpaceAttr::get(
                                 b.getContext(), gpu::AddressSpace::Workgroup));
    };
    auto launch = gpu::LaunchOp::create(
        b, loc, index(heads), queries, spans, index(threads), one, one,
        /*dynamicSharedMemorySize=*/nullptr, /*asyncTokenType=*/nullptr,
        /*asyncDependencies=*/{},
        TypeRange{workgroup(threads),
                  workgroup(threads * kWideLoadElements)});
    b.setInsertionPointToStart(&launch.getBody().front());
    kernel.weights = launch.getWorkgroupAttributions()[0];
    kernel.partials = launch.getWorkgroupAttributions()[1];
    kernel.head = launch.getBlockIds().x;
    kernel.query = launch.getBlockIds().y;
    kernel.thread = launch.getThreadIds().x;
    if (splitKeys)
      kernel.keySpan = launch.getBlockIds().z;
    // The output is written one column per thread: only q, k and v are
    // read wide.
    bool wide = width % kWideLoadElements == 0 && hasUnitInnerStride(q) &&
                hasUnitInnerStride(k) && hasUnitInnerStride(v);
    if (wide) {
      Value aligned = rowsStartAligned(b, loc, q);
      for (Value buffer : {k, v})
        aligned = arith::AndIOp::create(b, loc, aligned,
                                        rowsStartAligned(b, loc, buffer));
      scf::IfOp::create(
          b, loc, aligned,
          [&](OpBuilder &ab, Location) {
            kernel.build(ab, loc, kWideLoadElements);
            scf::YieldOp::create(ab, loc);
          },
          [&](OpBuilder &ub, Location) {
            kernel.build(ub, loc, 1);
            scf::YieldOp::create(ub, loc);
          });
    } else {
      kernel.build(b, loc, 1);
    }
    gpu::TerminatorOp::create(b, loc);
    if (splitKeys) {
      b.setInsertionPointAfter(launch);
      combineSpans(b, loc, kernel, heads, spans);
      memref::DeallocOp::create(b, loc, kernel.spanParts);
    }

    eraseCall(call);
    return success();
  }

  /// Erases the lowered call and the casts that only it used.
  static void eraseCall(func::CallOp call) {
    SmallVector<Value> operands(call.getOperands());
    call.erase();
    for (Value operand : operands)
      if (auto cast = operand.getDefiningOp<memref::CastOp>())
        if (cast->use_empty())
          cast.erase();
  }

  /// What a block computes, built inside the launch for a given number of
  /// output columns per thread.
  struct Kernel {
    Value q, k, v, out, queries;
    double scale;
    /// Scores soft-capped to softcap · tanh(score / softcap) (Gemma 2);
    /// 0: none.
    double softcap;
    bool causal;
    int64_t window, width, group;
    /// Threads of a block, keys of a chunk.
    int64_t threads;
    Value weights, partials, head, query, thread;
    /// For decode's split keys: the block's span of keys (block z) and the
    /// buffer of every span's unnormalized outputs, maximum and sum.
    Value keySpan, spanParts;

    static Value index(OpBuilder &at, Location loc, int64_t value) {
      return arith::ConstantIndexOp::create(at, loc, value);
    }
    static Value f32Constant(OpBuilder &at, Location loc, double value) {
      return arith::ConstantOp::create(at, loc, at.getF32FloatAttr(value));
    }

    /// A thread's place in the block, for `vec` output columns a thread.
    struct Layout {
      /// Threads per key row (each `vec` columns) and the groups of them
      /// that split a chunk's keys; threads past the last group only score.
      int64_t vec, lanes, groups;
      llvm::MaybeAlign align;
      Value kvHead, lane, share, firstColumn, accumulates;
      /// The keys the block weighs: [first, end).
      Value first, end;
      Value minusInf, zero;
    };

    Layout layout(OpBuilder &b, Location loc, int64_t vec) const {
      Layout l;
      l.vec = vec;
      l.lanes = width / vec;
      l.groups = threads / l.lanes;
      l.align = vec > 1 ? llvm::MaybeAlign(kWideLoadBytes) : llvm::MaybeAlign();
      Value keys = memref::DimOp::create(b, loc, k, 0);
      l.kvHead = arith::DivUIOp::create(b, loc, head, index(b, loc, group));
      l.lane = arith::RemUIOp::create(b, loc, thread, index(b, loc, l.lanes));
      l.share = arith::DivUIOp::create(b, loc, thread, index(b, loc, l.lanes));
      l.firstColumn = arith::MulIOp::create(b, loc, l.lane, index(b, loc, vec));
      l.accumulates = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                            l.share, index(b, loc, l.groups));
      KeyRange visible =
          visibleKeys(b, loc, query, queries, keys, causal, window);
      l.first = visible.first;
      l.end = visible.end;
      if (keySpan) {
        // This block's keys: [span * threads, (span + 1) * threads) of the
        // visible ones, one chunk (none where the span is out of view).
        Value spanFirst =
            arith::MulIOp::create(b, loc, keySpan, index(b, loc, threads));
        l.first = arith::MaxUIOp::create(b, loc, l.first, spanFirst);
        l.end = arith::MinUIOp::create(
            b, loc, l.end,
            arith::AddIOp::create(b, loc, spanFirst, index(b, loc, threads)));
      }
      l.minusInf =
          f32Constant(b, loc, -std::numeric_limits<double>::infinity());
      l.zero = f32Constant(b, loc, 0.0);
      return l;
    }

    void build(OpBuilder &b, Location loc, int64_t vec) const {
      Layout l = layout(b, loc, vec);
      SmallVector<Value> inits = {l.minusInf, l.zero};
      inits.append(vec, l.zero);
      auto chunks = scf::ForOp::create(
          b, loc, l.first, l.end, index(b, loc, threads), inits,
          [&](OpBuilder &cb, Location, Value start, ValueRange carried) {
            scf::YieldOp::create(cb, loc,
                                 chunkStep(cb, loc, l, start, carried));
          });
      writeResult(b, loc, l, chunks.getResults());
    }

    /// q · k of key row `key` (a thread's), scaled and soft-capped.
    Value score(OpBuilder &sb, Location loc, const Layout &l, Value key) const {
      // kUnroll loads of the key row in flight per iteration where they
      // fit the width (a loop of one waits for each: decode's blocks are a
      // chain of such waits).
      int64_t vec = l.vec;
      int64_t unroll = (width / vec) % kUnroll == 0 ? kUnroll : 1;
      auto dot = scf::ForOp::create(
          sb, loc, index(sb, loc, 0), index(sb, loc, width),
          index(sb, loc, vec * unroll), ValueRange{l.zero},
          [&](OpBuilder &db, Location, Value d, ValueRange sum) {
            SmallVector<Value> xs, ys;
            for (int64_t e = 0; e < vec * unroll; ++e) {
              Value at =
                  e ? arith::AddIOp::create(db, loc, d, index(db, loc, e))
                          .getResult()
                    : d;
              auto elementAlign = e % vec ? llvm::MaybeAlign() : l.align;
              xs.push_back(memref::LoadOp::create(db, loc, q,
                                                  ValueRange{query, head, at},
                                                  false, elementAlign));
              ys.push_back(memref::LoadOp::create(db, loc, k,
                                                  ValueRange{key, l.kvHead, at},
                                                  false, elementAlign));
            }
            Value total = sum[0];
            for (auto [x, y] : llvm::zip(xs, ys))
              total = arith::AddFOp::create(
                  db, loc, total, arith::MulFOp::create(db, loc, x, y));
            scf::YieldOp::create(db, loc, total);
          });
      Value score = arith::MulFOp::create(sb, loc, dot.getResult(0),
                                          f32Constant(sb, loc, scale));
      if (softcap > 0)
        score = softcapped(sb, loc, score, softcap);
      return score;
    }

    /// One chunk of keys from `start`: a key a thread scored, the block's
    /// maximum and sum of exponentials (online softmax: the running sum and
    /// outputs rescaled when the maximum grows), the weights staged in
    /// workgroup memory and weighed into the thread's output columns.
    /// Returns the new (maximum, sum, outputs...).
    SmallVector<Value> chunkStep(OpBuilder &cb, Location loc, const Layout &l,
                                 Value start, ValueRange carried) const {
      auto reduce = [&](Value value, gpu::AllReduceOperation op) {
        return gpu::AllReduceOp::create(
                   cb, loc, value,
                   gpu::AllReduceOperationAttr::get(cb.getContext(), op),
                   cb.getUnitAttr())
            .getResult();
      };
      Value runningMax = carried[0], runningSum = carried[1];
      SmallVector<Value> prefetched;
      if (prefetchesValues(l))
        prefetched = prefetchValues(cb, loc, l, start);
      Value key = arith::AddIOp::create(cb, loc, start, thread);
      Value visible =
          arith::CmpIOp::create(cb, loc, arith::CmpIPredicate::ult, key, l.end);
      auto scored = scf::IfOp::create(
          cb, loc, visible,
          [&](OpBuilder &sb, Location) {
            scf::YieldOp::create(sb, loc, score(sb, loc, l, key));
          },
          [&](OpBuilder &sb, Location) {
            scf::YieldOp::create(sb, loc, l.minusInf);
          });
      Value keyScore = scored.getResult(0);
      Value chunkMax = reduce(keyScore, gpu::AllReduceOperation::MAXIMUMF);
      Value newMax = arith::MaximumFOp::create(cb, loc, runningMax, chunkMax);
      // exp(-inf - max) may not be 0 in the approximated exp: masked keys
      // get weight 0 explicitly, and so does the first chunk's rescaling of
      // the (zero) sums.
      Value weight = arith::SelectOp::create(
          cb, loc, visible,
          math::ExpOp::create(cb, loc,
                              arith::SubFOp::create(cb, loc, keyScore, newMax)),
          l.zero);
      memref::StoreOp::create(cb, loc, weight, weights, ValueRange{thread});
      Value chunkSum = reduce(weight, gpu::AllReduceOperation::ADD);
      Value firstChunk = arith::CmpFOp::create(
          cb, loc, arith::CmpFPredicate::OEQ, runningMax, l.minusInf);
      Value rescale = arith::SelectOp::create(
          cb, loc, firstChunk, l.zero,
          math::ExpOp::create(
              cb, loc, arith::SubFOp::create(cb, loc, runningMax, newMax)));
      Value newSum = arith::AddFOp::create(
          cb, loc, arith::MulFOp::create(cb, loc, runningSum, rescale),
          chunkSum);
      gpu::BarrierOp::create(cb, loc);
      SmallVector<Value> rescaled;
      for (Value acc : carried.drop_front(2))
        rescaled.push_back(arith::MulFOp::create(cb, loc, acc, rescale));
      SmallVector<Value> next = {newMax, newSum};
      llvm::append_range(next,
                         weighChunk(cb, loc, l, start, rescaled, prefetched));
      // The next chunk's weights overwrite these only after every thread
      // has read them.
      gpu::BarrierOp::create(cb, loc);
      return next;
    }

    /// This thread's keys of the chunk from `start` (share, share + groups,
    /// ...): how many there are and, per slot, the key to read (a slot
    /// past the count reads the chunk's last key, weighed 0).
    struct ChunkSlots {
      Value count, last;
    };
    ChunkSlots chunkSlots(OpBuilder &cb, Location loc, const Layout &l,
                          Value start) const {
      Value inChunk =
          arith::MinUIOp::create(cb, loc, index(cb, loc, threads),
                                 arith::SubIOp::create(cb, loc, l.end, start));
      return {arith::SelectOp::create(cb, loc, l.accumulates, inChunk,
                                      index(cb, loc, 0)),
              arith::SubIOp::create(cb, loc, inChunk, index(cb, loc, 1))};
    }

    /// Slot `slot`'s key row (clamped) and whether it counts.
    std::pair<Value, Value> slotKey(OpBuilder &at, Location loc,
                                    const ChunkSlots &slots, Value start,
                                    Value slot) const {
      Value inside = arith::CmpIOp::create(at, loc, arith::CmpIPredicate::ult,
                                           slot, slots.count);
      Value clamped =
          arith::SelectOp::create(at, loc, inside, slot, slots.last);
      return {clamped, inside};
    }

    Value valueAt(OpBuilder &at, Location loc, const Layout &l, Value row,
                  int64_t e) const {
      Value column =
          e ? arith::AddIOp::create(at, loc, l.firstColumn, index(at, loc, e))
                  .getResult()
            : l.firstColumn;
      return memref::LoadOp::create(at, loc, v,
                                    ValueRange{row, l.kvHead, column}, false,
                                    e ? llvm::MaybeAlign() : l.align);
    }

    /// Slots of a chunk a thread weighs: threads / groups.
    int64_t slotsPerThread(const Layout &l) const {
      return llvm::divideCeil(threads, l.groups);
    }

    /// Whether a thread's value rows of a chunk (slots x vec floats) are
    /// loaded into registers as the chunk starts, their loads in flight
    /// while the keys are scored and the block reduces (decode's blocks: 16
    /// rows of 4): at most 64 registers.
    bool prefetchesValues(const Layout &l) const {
      return slotsPerThread(l) * l.vec <= 64;
    }

    /// The value rows of this thread's slots of the chunk from `start`,
    /// loaded together (prefetchesValues).
    SmallVector<Value> prefetchValues(OpBuilder &cb, Location loc,
                                      const Layout &l, Value start) const {
      ChunkSlots slots = chunkSlots(cb, loc, l, start);
      SmallVector<Value> values;
      for (int64_t u = 0; u < slotsPerThread(l); ++u) {
        Value slot = arith::AddIOp::create(cb, loc, l.share,
                                           index(cb, loc, u * l.groups));
        Value row = arith::AddIOp::create(
            cb, loc, start, slotKey(cb, loc, slots, start, slot).first);
        for (int64_t e = 0; e < l.vec; ++e)
          values.push_back(valueAt(cb, loc, l, row, e));
      }
      return values;
    }

    /// `sums` plus the staged weights times the value rows of this
    /// thread's keys of the chunk from `start`: from `prefetched` rows
    /// (prefetchValues), or loaded kUnroll keys per iteration, their loads
    /// issued together (a loop of one would wait for each).
    SmallVector<Value> weighChunk(OpBuilder &cb, Location loc, const Layout &l,
                                  Value start, ValueRange sums,
                                  ValueRange prefetched) const {
      ChunkSlots slots = chunkSlots(cb, loc, l, start);
      auto weightOf = [&](OpBuilder &at, Value slot) {
        auto [clamped, inside] = slotKey(at, loc, slots, start, slot);
        Value p = memref::LoadOp::create(at, loc, weights, ValueRange{clamped});
        return std::pair{
            arith::SelectOp::create(at, loc, inside, p, l.zero).getResult(),
            clamped};
      };
      if (!prefetched.empty()) {
        SmallVector<Value> next(sums);
        for (int64_t u = 0; u < slotsPerThread(l); ++u) {
          Value slot = arith::AddIOp::create(cb, loc, l.share,
                                             index(cb, loc, u * l.groups));
          Value p = weightOf(cb, slot).first;
          for (int64_t e = 0; e < l.vec; ++e)
            next[e] = arith::AddFOp::create(
                cb, loc, next[e],
                arith::MulFOp::create(cb, loc, p, prefetched[u * l.vec + e]));
        }
        return next;
      }
      auto weighted = scf::ForOp::create(
          cb, loc, l.share, slots.count, index(cb, loc, l.groups * kUnroll),
          sums, [&](OpBuilder &wb, Location, Value slot0, ValueRange acc) {
            SmallVector<Value> ps, rows;
            for (int64_t u = 0; u < kUnroll; ++u) {
              Value slot = u ? arith::AddIOp::create(
                                   wb, loc, slot0, index(wb, loc, u * l.groups))
                                   .getResult()
                             : slot0;
              auto [p, clamped] = weightOf(wb, slot);
              ps.push_back(p);
              rows.push_back(arith::AddIOp::create(wb, loc, start, clamped));
            }
            SmallVector<Value> next(acc);
            for (int64_t u = 0; u < kUnroll; ++u)
              for (int64_t e = 0; e < l.vec; ++e)
                next[e] = arith::AddFOp::create(
                    wb, loc, next[e],
                    arith::MulFOp::create(wb, loc, ps[u],
                                          valueAt(wb, loc, l, rows[u], e)));
            scf::YieldOp::create(wb, loc, next);
          });
      return SmallVector<Value>(weighted.getResults());
    }

    /// The groups' partial outputs, summed by one thread per column, then
    /// normalized into `out` or (split keys) written with the maximum and
    /// sum for combineSpans.
    void writeResult(OpBuilder &b, Location loc, const Layout &l,
                     ValueRange results) const {
      int64_t vec = l.vec;
      for (int64_t e = 0; e < vec; ++e)
        memref::StoreOp::create(
            b, loc, results[2 + e], partials,
            ValueRange{arith::AddIOp::create(
                b, loc,
                arith::MulIOp::create(b, loc, thread, index(b, loc, vec)),
                index(b, loc, e))});
      gpu::BarrierOp::create(b, loc);
      Value writes = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                           thread, index(b, loc, width));
      scf::IfOp::create(b, loc, writes, [&](OpBuilder &fb, Location) {
        // Thread c sums column c: lane c / vec's element c % vec of every
        // group, at partials[((g * lanes) + c / vec) * vec + c % vec].
        Value total = l.zero;
        for (int64_t g = 0; g < l.groups; ++g) {
          Value slot = arith::AddIOp::create(fb, loc, thread,
                                             index(fb, loc, g * l.lanes * vec));
          total = arith::AddFOp::create(
              fb, loc, total,
              memref::LoadOp::create(fb, loc, partials, ValueRange{slot}));
        }
        if (keySpan) {
          // combineSpans normalizes.
          memref::StoreOp::create(fb, loc, total, spanParts,
                                  ValueRange{head, query, keySpan, thread});
        } else {
          Value normalized = arith::DivFOp::create(fb, loc, total, results[1]);
          memref::StoreOp::create(fb, loc, normalized, out,
                                  ValueRange{query, head, thread});
        }
        scf::YieldOp::create(fb, loc);
      });
      if (!keySpan)
        return;
      Value firstThread = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::eq, thread, index(b, loc, 0));
      scf::IfOp::create(b, loc, firstThread, [&](OpBuilder &fb, Location) {
        for (auto [slot, value] :
             {std::pair{width, results[0]}, std::pair{width + 1, results[1]}})
          memref::StoreOp::create(
              fb, loc, value, spanParts,
              ValueRange{head, query, keySpan, index(fb, loc, slot)});
        scf::YieldOp::create(fb, loc);
      });
    }
  };

  /// The second kernel of a split: a block per (head, query), a thread per
  /// output column, weighing each span's outputs and sum by exp(its
  /// maximum - the maximum of all) (0 for a span without visible keys,
  /// whose maximum is -inf) and dividing.
  static void combineSpans(OpBuilder &b, Location loc, const Kernel &kernel,
                           int64_t heads, Value spans) {
    auto index = [&](OpBuilder &at, int64_t value) -> Value {
      return arith::ConstantIndexOp::create(at, loc, value);
    };
    Value one = index(b, 1);
    Type f32 = b.getF32Type();
    auto launch = gpu::LaunchOp::create(b, loc, index(b, heads),
                                        kernel.queries, one,
                                        index(b, kernel.width), one, one);
    OpBuilder::InsertionGuard afterLaunch(b);
    b.setInsertionPointToStart(&launch.getBody().front());
    Value head = launch.getBlockIds().x, query = launch.getBlockIds().y;
    Value column = launch.getThreadIds().x;
    Value parts = kernel.spanParts;
    Value maxAt = index(b, kernel.width), sumAt = index(b, kernel.width + 1);
    auto part = [&](OpBuilder &at, Value span, Value slot) {
      return memref::LoadOp::create(at, loc, parts,
                                    ValueRange{head, query, span, slot})
          .getResult();
    };
    Value minusInf = arith::ConstantOp::create(
        b, loc, b.getF32FloatAttr(-std::numeric_limits<double>::infinity()));
    Value zero = arith::ConstantOp::create(b, loc, b.getZeroAttr(f32));
    auto overall = scf::ForOp::create(
        b, loc, index(b, 0), spans, one, ValueRange{minusInf},
        [&](OpBuilder &fb, Location, Value span, ValueRange max) {
          scf::YieldOp::create(
              fb, loc,
              arith::MaximumFOp::create(fb, loc, max[0],
                                        part(fb, span, maxAt))
                  .getResult());
        });
    Value largest = overall.getResult(0);
    auto weighted = scf::ForOp::create(
        b, loc, index(b, 0), spans, one, ValueRange{zero, zero},
        [&](OpBuilder &fb, Location, Value span, ValueRange acc) {
          Value max = part(fb, span, maxAt);
          Value empty = arith::CmpFOp::create(
              fb, loc, arith::CmpFPredicate::OEQ, max, minusInf);
          Value weight = arith::SelectOp::create(
              fb, loc, empty, zero,
              math::ExpOp::create(fb, loc,
                                  arith::SubFOp::create(fb, loc, max, largest)));
          auto plus = [&](Value sum, Value value) {
            return arith::AddFOp::create(
                       fb, loc, sum,
                       arith::MulFOp::create(fb, loc, weight, value))
                .getResult();
          };
          scf::YieldOp::create(
              fb, loc,
              ValueRange{plus(acc[0], part(fb, span, column)),
                         plus(acc[1], part(fb, span, sumAt))});
        });
    Value normalized = arith::DivFOp::create(b, loc, weighted.getResult(0),
                                             weighted.getResult(1));
    memref::StoreOp::create(b, loc, normalized, kernel.out,
                            ValueRange{query, head, column});
    gpu::TerminatorOp::create(b, loc);
  }
};

} // namespace
