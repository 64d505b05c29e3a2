//===- LowerAttentionToGpu.cpp - attention as one fused GPU kernel -------===//
//
// See LowerAttentionToGpuPass in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "codegen/cuda/GpuAlignment.h"
#include "codegen/cuda/Passes.h"
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

    SmallVector<Value> operands(call.getOperands());
    call.erase();
    for (Value operand : operands)
      if (auto cast = operand.getDefiningOp<memref::CastOp>())
        if (cast->use_empty())
          cast.erase();
    return success();
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

    void build(OpBuilder &b, Location loc, int64_t vec) const {
      auto index = [&](OpBuilder &at, int64_t value) -> Value {
        return arith::ConstantIndexOp::create(at, loc, value);
      };
      auto f32Constant = [&](OpBuilder &at, double value) -> Value {
        return arith::ConstantOp::create(at, loc, at.getF32FloatAttr(value));
      };
      // Threads per key row (each `vec` columns) and the groups of them
      // that split a chunk's keys; threads past the last group only score.
      int64_t lanes = width / vec;
      int64_t groups = threads / lanes;
      llvm::MaybeAlign align =
          vec > 1 ? llvm::MaybeAlign(kWideLoadBytes) : llvm::MaybeAlign();
      Value one = index(b, 1);
      Value keys = memref::DimOp::create(b, loc, k, 0);
      Value kvHead = arith::DivUIOp::create(b, loc, head, index(b, group));
      Value lane = arith::RemUIOp::create(b, loc, thread, index(b, lanes));
      Value share = arith::DivUIOp::create(b, loc, thread, index(b, lanes));
      Value firstColumn = arith::MulIOp::create(b, loc, lane, index(b, vec));
      Value accumulates = arith::CmpIOp::create(
          b, loc, arith::CmpIPredicate::ult, share, index(b, groups));
      // Queries are the last s of the t positions; the query sees keys
      // [first, end).
      Value end = keys;
      if (causal)
        end = arith::AddIOp::create(
            b, loc, arith::AddIOp::create(b, loc, query, one),
            arith::SubIOp::create(b, loc, keys, queries));
      Value first = index(b, 0);
      if (window > 0) {
        Value span = index(b, window);
        Value beyond = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ugt,
                                             end, span);
        first = arith::SelectOp::create(
            b, loc, beyond, arith::SubIOp::create(b, loc, end, span), first);
      }
      if (keySpan) {
        // This block's keys: [span * threads, (span + 1) * threads) of the
        // visible ones, one chunk (none where the span is out of view).
        Value spanFirst =
            arith::MulIOp::create(b, loc, keySpan, index(b, threads));
        first = arith::MaxUIOp::create(b, loc, first, spanFirst);
        end = arith::MinUIOp::create(
            b, loc, end,
            arith::AddIOp::create(b, loc, spanFirst, index(b, threads)));
      }
      Value minusInf =
          f32Constant(b, -std::numeric_limits<double>::infinity());
      Value zero = f32Constant(b, 0.0);
      auto reduce = [&](OpBuilder &at, Value value,
                        gpu::AllReduceOperation op) {
        return gpu::AllReduceOp::create(
                   at, loc, value,
                   gpu::AllReduceOperationAttr::get(at.getContext(), op),
                   at.getUnitAttr())
            .getResult();
      };
      auto column = [&](OpBuilder &at, int64_t e) -> Value {
        return e ? arith::AddIOp::create(at, loc, firstColumn, index(at, e))
                       .getResult()
                 : firstColumn;
      };

      SmallVector<Value> inits = {minusInf, zero};
      inits.append(vec, zero);
      auto chunks = scf::ForOp::create(
          b, loc, first, end, index(b, threads), inits,
          [&](OpBuilder &cb, Location, Value start, ValueRange carried) {
            Value runningMax = carried[0], runningSum = carried[1];
            Value key = arith::AddIOp::create(cb, loc, start, thread);
            Value visible = arith::CmpIOp::create(
                cb, loc, arith::CmpIPredicate::ult, key, end);
            auto scored = scf::IfOp::create(
                cb, loc, visible,
                [&](OpBuilder &sb, Location) {
                  auto dot = scf::ForOp::create(
                      sb, loc, index(sb, 0), index(sb, width), index(sb, vec),
                      ValueRange{zero},
                      [&](OpBuilder &db, Location, Value d, ValueRange sum) {
                        Value total = sum[0];
                        for (int64_t e = 0; e < vec; ++e) {
                          Value at = e ? arith::AddIOp::create(db, loc, d,
                                                               index(db, e))
                                             .getResult()
                                       : d;
                          auto elementAlign = e ? llvm::MaybeAlign() : align;
                          Value x = memref::LoadOp::create(
                              db, loc, q, ValueRange{query, head, at}, false,
                              elementAlign);
                          Value y = memref::LoadOp::create(
                              db, loc, k, ValueRange{key, kvHead, at}, false,
                              elementAlign);
                          total = arith::AddFOp::create(
                              db, loc, total,
                              arith::MulFOp::create(db, loc, x, y));
                        }
                        scf::YieldOp::create(db, loc, total);
                      });
                  Value score = arith::MulFOp::create(sb, loc, dot.getResult(0),
                                                      f32Constant(sb, scale));
                  if (softcap > 0)
                    score = softcapped(sb, loc, score, softcap);
                  scf::YieldOp::create(sb, loc, score);
                },
                [&](OpBuilder &sb, Location) {
                  scf::YieldOp::create(sb, loc, minusInf);
                });
            Value score = scored.getResult(0);
            Value chunkMax =
                reduce(cb, score, gpu::AllReduceOperation::MAXIMUMF);
            Value newMax =
                arith::MaximumFOp::create(cb, loc, runningMax, chunkMax);
            // exp(-inf - max) may not be 0 in the approximated exp: masked
            // keys get weight 0 explicitly, and so does the first chunk's
            // rescaling of the (zero) sums.
            Value weight = arith::SelectOp::create(
                cb, loc, visible,
                math::ExpOp::create(
                    cb, loc, arith::SubFOp::create(cb, loc, score, newMax)),
                zero);
            memref::StoreOp::create(cb, loc, weight, weights,
                                    ValueRange{thread});
            Value chunkSum = reduce(cb, weight, gpu::AllReduceOperation::ADD);
            Value firstChunk = arith::CmpFOp::create(
                cb, loc, arith::CmpFPredicate::OEQ, runningMax, minusInf);
            Value rescale = arith::SelectOp::create(
                cb, loc, firstChunk, zero,
                math::ExpOp::create(
                    cb, loc,
                    arith::SubFOp::create(cb, loc, runningMax, newMax)));
            Value newSum = arith::AddFOp::create(
                cb, loc, arith::MulFOp::create(cb, loc, runningSum, rescale),
                chunkSum);
            gpu::BarrierOp::create(cb, loc);
            // This thread's keys of the chunk: share, share + groups, ...
            Value inChunk = arith::MinUIOp::create(
                cb, loc, index(cb, threads),
                arith::SubIOp::create(cb, loc, end, start));
            Value count = arith::SelectOp::create(cb, loc, accumulates,
                                                  inChunk, index(cb, 0));
            SmallVector<Value> rescaled;
            for (Value acc : carried.drop_front(2))
              rescaled.push_back(arith::MulFOp::create(cb, loc, acc, rescale));
            // kUnroll keys per iteration, their loads issued together (a
            // loop of one would wait for each); a slot past `count` reads
            // the chunk's last key with weight 0.
            Value last = arith::SubIOp::create(cb, loc, inChunk, one);
            auto weighted = scf::ForOp::create(
                cb, loc, share, count, index(cb, groups * kUnroll), rescaled,
                [&](OpBuilder &wb, Location, Value slot0, ValueRange sums) {
                  SmallVector<Value> ps, rows;
                  for (int64_t u = 0; u < kUnroll; ++u) {
                    Value slot =
                        u ? arith::AddIOp::create(wb, loc, slot0,
                                                  index(wb, u * groups))
                                .getResult()
                          : slot0;
                    Value inside = arith::CmpIOp::create(
                        wb, loc, arith::CmpIPredicate::ult, slot, count);
                    Value clamped =
                        arith::SelectOp::create(wb, loc, inside, slot, last);
                    Value p = memref::LoadOp::create(wb, loc, weights,
                                                     ValueRange{clamped});
                    ps.push_back(
                        arith::SelectOp::create(wb, loc, inside, p, zero));
                    rows.push_back(
                        arith::AddIOp::create(wb, loc, start, clamped));
                  }
                  SmallVector<Value> next(sums);
                  for (int64_t u = 0; u < kUnroll; ++u)
                    for (int64_t e = 0; e < vec; ++e) {
                      Value x = memref::LoadOp::create(
                          wb, loc, v,
                          ValueRange{rows[u], kvHead, column(wb, e)}, false,
                          e ? llvm::MaybeAlign() : align);
                      next[e] = arith::AddFOp::create(
                          wb, loc, next[e],
                          arith::MulFOp::create(wb, loc, ps[u], x));
                    }
                  scf::YieldOp::create(wb, loc, next);
                });
            // The next chunk's weights overwrite these only after every
            // thread has read them.
            gpu::BarrierOp::create(cb, loc);
            SmallVector<Value> next = {newMax, newSum};
            next.append(weighted.getResults().begin(),
                        weighted.getResults().end());
            scf::YieldOp::create(cb, loc, next);
          });

      // The groups' partial outputs, summed by one thread per column.
      for (int64_t e = 0; e < vec; ++e)
        memref::StoreOp::create(
            b, loc, chunks.getResult(2 + e), partials,
            ValueRange{arith::AddIOp::create(
                b, loc, arith::MulIOp::create(b, loc, thread, index(b, vec)),
                index(b, e))});
      gpu::BarrierOp::create(b, loc);
      Value writes = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ult,
                                           thread, index(b, width));
      scf::IfOp::create(b, loc, writes, [&](OpBuilder &fb, Location) {
        // Thread c sums column c: lane c / vec's element c % vec of every
        // group, at partials[((g * lanes) + c / vec) * vec + c % vec].
        Value total = zero;
        for (int64_t g = 0; g < groups; ++g) {
          Value slot = arith::AddIOp::create(fb, loc, thread,
                                             index(fb, g * lanes * vec));
          total = arith::AddFOp::create(
              fb, loc, total,
              memref::LoadOp::create(fb, loc, partials, ValueRange{slot}));
        }
        if (keySpan) {
          // combineSpans normalizes.
          memref::StoreOp::create(fb, loc, total, spanParts,
                                  ValueRange{head, query, keySpan, thread});
        } else {
          Value normalized =
              arith::DivFOp::create(fb, loc, total, chunks.getResult(1));
          memref::StoreOp::create(fb, loc, normalized, out,
                                  ValueRange{query, head, thread});
        }
        scf::YieldOp::create(fb, loc);
      });
      if (keySpan) {
        Value firstThread = arith::CmpIOp::create(
            b, loc, arith::CmpIPredicate::eq, thread, index(b, 0));
        scf::IfOp::create(b, loc, firstThread, [&](OpBuilder &fb, Location) {
          for (auto [slot, value] :
               {std::pair{width, chunks.getResult(0)},
                std::pair{width + 1, chunks.getResult(1)}})
            memref::StoreOp::create(
                fb, loc, value, spanParts,
                ValueRange{head, query, keySpan, index(fb, slot)});
          scf::YieldOp::create(fb, loc);
        });
      }
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
