//===- LowerReductionsToGpu.cpp - row reductions as block reductions -----===//
//
// See LowerReductionsToGpuPass in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "codegen/cuda/BufferViews.h"
#include "codegen/cuda/Passes.h"

#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/IR/IRMapping.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_LOWERREDUCTIONSTOGPUPASS
#include "codegen/cuda/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// How one output of a reduction generic is combined across the reduced
/// dimension: the op that folds a new value into it, the neutral element
/// the threads start from, and gpu.all_reduce's name for it.
struct Combiner {
  Operation *op = nullptr;
  TypedAttr identity;
  gpu::AllReduceOperation kind;
};

/// The combiner of output `index` of `generic`: its yielded value must be
/// `addf` or `maximumf` of its own block argument and something else.
std::optional<Combiner> combinerOf(linalg::GenericOp generic, unsigned index) {
  Block *body = generic.getBody();
  auto yield = cast<linalg::YieldOp>(body->getTerminator());
  BlockArgument accumulator =
      body->getArgument(generic.getNumDpsInputs() + index);
  Operation *op = yield.getOperand(index).getDefiningOp();
  if (!op || op->getNumOperands() != 2 ||
      !llvm::is_contained(op->getOperands(), accumulator) ||
      !accumulator.hasOneUse() || !accumulator.getType().isF32())
    return std::nullopt;
  Builder b(generic.getContext());
  if (isa<arith::AddFOp>(op))
    return Combiner{op, b.getF32FloatAttr(0.0f), gpu::AllReduceOperation::ADD};
  if (isa<arith::MaximumFOp>(op))
    return Combiner{op,
                    b.getF32FloatAttr(-std::numeric_limits<float>::infinity()),
                    gpu::AllReduceOperation::MAXIMUMF};
  return std::nullopt;
}

/// The indices `map` gives at loop indices `ivs`.
SmallVector<Value> indicesAt(OpBuilder &b, Location loc, AffineMap map,
                             ArrayRef<Value> ivs) {
  SmallVector<Value> indices;
  for (unsigned r = 0; r < map.getNumResults(); ++r)
    indices.push_back(
        affine::AffineApplyOp::create(b, loc, map.getSubMap({r}), ivs));
  return indices;
}

/// A generic's `body` but its yield, at loop indices `ivs`, cloned with
/// `mapping` (its block arguments mapped already); linalg.index becomes
/// the loop index.
void cloneBody(OpBuilder &b, Block *body, ArrayRef<Value> ivs,
               IRMapping &mapping) {
  for (Operation &op : body->without_terminator()) {
    if (auto index = dyn_cast<linalg::IndexOp>(op)) {
      mapping.map(index.getResult(), ivs[index.getDim()]);
      continue;
    }
    b.clone(op, mapping);
  }
}

/// The rows of a generic whose innermost loop is reduced: the product of
/// the other loops' static sizes, or dynamic.
int64_t staticRows(ArrayRef<int64_t> loopSizes) {
  int64_t rows = 1;
  for (int64_t size : loopSizes.drop_back())
    rows = ShapedType::isDynamic(size) || ShapedType::isDynamic(rows)
               ? ShapedType::kDynamic
               : rows * size;
  return rows;
}

/// Whether output `index` of `generic` is reduced (not indexed by the
/// innermost loop, the reduced one).
bool isReducedOutput(linalg::GenericOp generic, unsigned index) {
  return !generic.getIndexingMapsArray()[generic.getNumDpsInputs() + index]
              .isFunctionOfDim(generic.getNumLoops() - 1);
}

/// The `linalg.fill` that sets reduced output `index` of `generic` just
/// before it (nothing between them touching that buffer), where the
/// reduction writes every element of the output: a norm's sum of squares
/// zeroed by a kernel of its own, one thread, before the reduction's. The
/// reduction can fold its totals into the fill's value instead.
linalg::FillOp initialFill(linalg::GenericOp generic, unsigned index) {
  OpOperand *init = generic.getDpsInitOperand(index);
  auto type = cast<MemRefType>(init->get().getType());
  AffineMap map = generic.getMatchingIndexingMap(init);
  if (!map.isProjectedPermutation(/*allowZeroInResults=*/true))
    return nullptr;
  // Each element is some row's: a dimension the map does not index (0)
  // must hold one element.
  for (auto [dim, result] : llvm::enumerate(map.getResults()))
    if (isa<AffineConstantExpr>(result) && type.getDimSize(dim) != 1)
      return nullptr;
  Value buffer = viewedBuffer(init->get());
  for (Operation *op = generic->getPrevNode(); op; op = op->getPrevNode()) {
    auto fill = dyn_cast<linalg::FillOp>(op);
    if (fill && fill.hasPureBufferSemantics() &&
        fill.getDpsInitOperand(0)->get() == init->get())
      return fill;
    // A use of the buffer (or of a view of it) between them, or an op
    // that could write memory the analysis cannot see: no folding.
    if (op->getNumRegions() != 0 ||
        llvm::any_of(op->getOperands(), [&](Value operand) {
          return isa<MemRefType>(operand.getType()) &&
                 viewedBuffer(operand) == buffer;
        }))
      return nullptr;
  }
  return nullptr;
}

struct LowerReductionsToGpuPass
    : mlir::tfm::impl::LowerReductionsToGpuPassBase<
          LowerReductionsToGpuPass> {
  using Base::Base;

  void runOnOperation() override {
    moveReductionsInnermost();
    SmallVector<std::pair<linalg::GenericOp, linalg::GenericOp>> generics;
    getOperation().walk([&](linalg::GenericOp generic) {
      if (worthABlockPerRow(generic))
        generics.push_back(
            {generic, fuseConsumers ? rowwiseConsumer(generic) : nullptr});
    });
    for (auto [generic, consumer] : generics)
      lower(generic, consumer);
  }

  /// The elementwise generic right after `reduction` (past ops without
  /// memory effects only) that reads a reduced output of it, over the same
  /// rows and columns, e.g. a norm's scaling after its sum of squares: its
  /// block can apply it once the totals are known, one launch instead of
  /// two. It must read each of `reduction`'s outputs through the map
  /// `reduction` writes it with (an elementwise one then at the very
  /// elements this thread wrote), and read another operand of `reduction`
  /// through the identity (so its loops are `reduction`'s), and write
  /// elementwise without reading its outputs.
  linalg::GenericOp rowwiseConsumer(linalg::GenericOp reduction) {
    Operation *next = reduction->getNextNode();
    while (next && isMemoryEffectFree(next) && next->getNumRegions() == 0)
      next = next->getNextNode();
    auto consumer = dyn_cast_or_null<linalg::GenericOp>(next);
    unsigned rank = reduction.getNumLoops();
    if (!consumer || !consumer.hasPureBufferSemantics() ||
        consumer.getNumLoops() != rank ||
        consumer.getNumParallelLoops() != rank)
      return nullptr;
    AffineMap identity =
        AffineMap::getMultiDimIdentityMap(rank, reduction.getContext());
    for (OpOperand &init : consumer.getDpsInitsMutable())
      if (consumer.getMatchingIndexingMap(&init) != identity ||
          !consumer.getMatchingBlockArgument(&init).use_empty())
        return nullptr;
    bool readsTotal = false, sharesRows = false;
    for (OpOperand *input : consumer.getDpsInputOperands()) {
      AffineMap map = consumer.getMatchingIndexingMap(input);
      for (OpOperand &operand : reduction->getOpOperands()) {
        if (operand.get() != input->get())
          continue;
        bool isOutput = reduction.isDpsInit(&operand);
        if (isOutput && map != reduction.getMatchingIndexingMap(&operand))
          return nullptr;
        if (isOutput && !map.isFunctionOfDim(rank - 1))
          readsTotal = true;
        if (map == identity &&
            reduction.getMatchingIndexingMap(&operand) == identity)
          sharesRows = true;
      }
    }
    return readsTotal && sharesRows ? consumer : nullptr;
  }

  /// A reduction between parallel dimensions (attention's weighted sum of
  /// values: queries, heads, positions reduced, head width) would become a
  /// loop around the inner parallel ones, run by each thread of the outer
  /// ones: a handful of threads doing all the work. Reduced last, every
  /// parallel dimension is the GPU's.
  void moveReductionsInnermost() {
    SmallVector<linalg::GenericOp> generics;
    getOperation().walk([&](linalg::GenericOp generic) {
      if (generic.hasPureBufferSemantics() &&
          generic.getNumReductionLoops() == 1 &&
          generic.getIteratorTypesArray().back() !=
              utils::IteratorType::reduction)
        generics.push_back(generic);
    });
    IRRewriter rewriter(&getContext());
    for (linalg::GenericOp generic : generics) {
      SmallVector<unsigned> order, reduced;
      for (auto [dim, kind] : llvm::enumerate(generic.getIteratorTypesArray()))
        (kind == utils::IteratorType::reduction ? reduced : order)
            .push_back(dim);
      order.append(reduced);
      rewriter.setInsertionPoint(generic);
      (void)linalg::interchangeGenericOp(rewriter, generic, order);
    }
  }

  /// One reduced dimension, the innermost (so that neighbouring threads
  /// read neighbouring elements), at most three parallel ones (the grid's
  /// x, y, z), outputs that are reduced with a known combiner or written
  /// elementwise; and rows long enough, or few enough, to be worth a block
  /// each (a prefill's short rows, numerous, stay one thread each).
  bool worthABlockPerRow(linalg::GenericOp generic) {
    if (!generic.hasPureBufferSemantics() || generic.getNumReductionLoops() != 1)
      return false;
    unsigned rank = generic.getNumLoops();
    if (rank > 4 || generic.getIteratorTypesArray()[rank - 1] !=
                        utils::IteratorType::reduction)
      return false;
    for (OpOperand &init : generic.getDpsInitsMutable()) {
      unsigned index = init.getOperandNumber() - generic.getNumDpsInputs();
      bool reduced = isReducedOutput(generic, index);
      if (reduced && !combinerOf(generic, index))
        return false;
      // An output written elementwise must not read its old value.
      if (!reduced && !generic.getMatchingBlockArgument(&init).use_empty())
        return false;
    }
    SmallVector<int64_t> sizes = generic.getStaticLoopRanges();
    int64_t rows = staticRows(sizes);
    int64_t length = sizes[rank - 1];
    return ShapedType::isDynamic(length) || length >= minLength ||
           (!ShapedType::isDynamic(rows) && rows <= maxRows);
  }

  /// A block per point of the parallel dimensions; its threads stride
  /// through the reduced dimension, each folding its elements into its own
  /// accumulators (and writing the elementwise outputs); gpu.all_reduce
  /// joins the accumulators and thread 0 folds the totals into the outputs.
  ///
  /// With a rowwise `consumer` (rowwiseConsumer), built where it is: after
  /// the totals, every thread folds them as thread 0 does (from the
  /// outputs' old values, read before a barrier that orders them before
  /// thread 0's stores, which another barrier orders before the consumer),
  /// then strides through the row again applying the consumer, with the
  /// folded totals for the reduced outputs it reads.
  void lower(linalg::GenericOp generic, linalg::GenericOp consumer) {
    // Per reduced output, the fill just before the generic that thread 0
    // folds the total into (its value, not the buffer's), then erased:
    // found before anything is built between them.
    SmallVector<linalg::FillOp> fills;
    for (unsigned i = 0; i < generic.getNumDpsInits(); ++i)
      if (isReducedOutput(generic, i))
        fills.push_back(initialFill(generic, i));
    OpBuilder b(consumer ? consumer : generic);
    Location loc = generic.getLoc();
    unsigned rank = generic.getNumLoops();
    unsigned numInputs = generic.getNumDpsInputs();
    SmallVector<Range, 4> ranges =
        cast<linalg::LinalgOp>(generic.getOperation()).createLoopRanges(b, loc);
    auto value = [&](OpFoldResult size) {
      return getValueOrCreateConstantIndexOp(b, loc, size);
    };
    Value one = arith::ConstantIndexOp::create(b, loc, 1);
    // Grid x is the innermost parallel dimension.
    SmallVector<Value> grid(3, one);
    for (unsigned dim = 0; dim + 1 < rank; ++dim)
      grid[rank - 2 - dim] = value(ranges[dim].size);
    Value length = value(ranges[rank - 1].size);
    SmallVector<int64_t> sizes = generic.getStaticLoopRanges();
    // A few rows (a decode step's norm: one) get wide blocks: 128 threads
    // walking a 2048-wide row make 16 dependent loads each, twice, about
    // 24 us on an H200 for a kernel that moves 16 KB.
    int64_t rows = staticRows(sizes);
    int64_t blockSize =
        !ShapedType::isDynamic(rows) && rows <= fewRows ? fewRowsThreads
                                                        : threads;
    if (!ShapedType::isDynamic(sizes[rank - 1]))
      blockSize = std::min<int64_t>(
          blockSize, std::max<int64_t>(32, (sizes[rank - 1] + 31) / 32 * 32));
    Value stride = arith::ConstantIndexOp::create(b, loc, blockSize);
    auto launch = gpu::LaunchOp::create(b, loc, grid[0], grid[1], grid[2],
                                        stride, one, one);
    b.setInsertionPointToStart(&launch.getBody().front());
    gpu::KernelDim3 blockIds = launch.getBlockIds();
    Value blocks[3] = {blockIds.x, blockIds.y, blockIds.z};
    SmallVector<Value> point(rank);
    for (unsigned dim = 0; dim + 1 < rank; ++dim)
      point[dim] = blocks[rank - 2 - dim];
    Value thread = launch.getThreadIds().x;

    Block *body = generic.getBody();
    auto yield = cast<linalg::YieldOp>(body->getTerminator());
    SmallVector<unsigned> reduced;
    SmallVector<Combiner> combiners;
    SmallVector<Value> identities;
    for (unsigned i = 0; i < generic.getNumDpsInits(); ++i)
      if (isReducedOutput(generic, i)) {
        Combiner combiner = *combinerOf(generic, i);
        reduced.push_back(i);
        combiners.push_back(combiner);
        identities.push_back(
            arith::ConstantOp::create(b, loc, combiner.identity));
      }

    auto strided = scf::ForOp::create(
        b, loc, thread, length, stride, identities,
        [&](OpBuilder &nb, Location nl, Value r, ValueRange accumulators) {
          SmallVector<Value> ivs(point);
          ivs[rank - 1] = r;
          IRMapping mapping;
          for (OpOperand *input : generic.getDpsInputOperands()) {
            Value element = memref::LoadOp::create(
                nb, nl, input->get(),
                indicesAt(nb, nl, generic.getMatchingIndexingMap(input), ivs));
            mapping.map(body->getArgument(input->getOperandNumber()), element);
          }
          for (auto [position, i] : llvm::enumerate(reduced))
            mapping.map(body->getArgument(numInputs + i),
                        accumulators[position]);
          cloneBody(nb, body, ivs, mapping);
          SmallVector<Value> next;
          for (unsigned i = 0; i < generic.getNumDpsInits(); ++i) {
            Value yielded = mapping.lookupOrDefault(yield.getOperand(i));
            if (llvm::is_contained(reduced, i)) {
              next.push_back(yielded);
              continue;
            }
            OpOperand *init = generic.getDpsInitOperand(i);
            memref::StoreOp::create(
                nb, nl, yielded, init->get(),
                indicesAt(nb, nl, generic.getMatchingIndexingMap(init), ivs));
          }
          scf::YieldOp::create(nb, nl, next);
        });

    Value first = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq, thread,
        arith::ConstantIndexOp::create(b, loc, 0));
    SmallVector<Value> totals;
    for (auto [position, combiner] : llvm::enumerate(combiners))
      totals.push_back(gpu::AllReduceOp::create(
          b, loc, strided.getResult(position),
          gpu::AllReduceOperationAttr::get(b.getContext(), combiner.kind),
          b.getUnitAttr()));
    // A reduced output's element of this row, and its old value folded
    // with the total, as the generic would leave it.
    auto reducedAt = [&](OpBuilder &nb, Location nl, unsigned i) {
      OpOperand *init = generic.getDpsInitOperand(i);
      SmallVector<Value> at(point);
      at[rank - 1] = thread; // any: a reduced output does not use it
      return indicesAt(nb, nl, generic.getMatchingIndexingMap(init), at);
    };
    auto fold = [&](OpBuilder &nb, Location nl, unsigned position,
                    ValueRange indices) {
      unsigned i = reduced[position];
      Value old = fills[position]
                      ? fills[position].getInputs()[0]
                      : memref::LoadOp::create(
                            nb, nl, generic.getDpsInitOperand(i)->get(),
                            indices)
                            .getResult();
      IRMapping mapping;
      mapping.map(body->getArgument(numInputs + i), old);
      Operation *combiner = combiners[position].op;
      for (Value operand : combiner->getOperands())
        if (operand != body->getArgument(numInputs + i))
          mapping.map(operand, totals[position]);
      return nb.clone(*combiner, mapping)->getResult(0);
    };
    SmallVector<Value> folded;
    if (consumer) {
      for (unsigned position = 0; position < reduced.size(); ++position)
        folded.push_back(
            fold(b, loc, position, reducedAt(b, loc, reduced[position])));
      gpu::BarrierOp::create(b, loc);
    }
    scf::IfOp::create(b, loc, first, [&](OpBuilder &nb, Location nl) {
      for (auto [position, i] : llvm::enumerate(reduced)) {
        SmallVector<Value> indices = reducedAt(nb, nl, i);
        Value value = consumer ? folded[position]
                               : fold(nb, nl, position, indices);
        memref::StoreOp::create(nb, nl, value,
                                generic.getDpsInitOperand(i)->get(), indices);
      }
      scf::YieldOp::create(nb, nl);
    });
    if (consumer) {
      // Thread 0's stores before any read of the consumer: it reads the
      // totals from registers, but a view it reads may alias them.
      gpu::BarrierOp::create(b, loc);
      applyConsumer(b, loc, generic, consumer, point, thread, length, stride,
                    folded, reduced);
    }
    gpu::TerminatorOp::create(b, loc);
    for (linalg::FillOp fill : fills)
      if (fill)
        fill.erase();
    generic.erase();
    if (consumer)
      consumer.erase();
  }

  /// The consumer's elements of this block's row, strided over its threads
  /// as the reduction's were: its reads of a reduced output are the folded
  /// totals, of an elementwise output what this thread wrote.
  void applyConsumer(OpBuilder &b, Location loc, linalg::GenericOp generic,
                     linalg::GenericOp consumer, ArrayRef<Value> point,
                     Value thread, Value length, Value stride,
                     ArrayRef<Value> folded, ArrayRef<unsigned> reduced) {
    unsigned rank = consumer.getNumLoops();
    Block *body = consumer.getBody();
    auto yield = cast<linalg::YieldOp>(body->getTerminator());
    auto totalOf = [&](Value buffer) -> Value {
      for (auto [position, i] : llvm::enumerate(reduced))
        if (generic.getDpsInitOperand(i)->get() == buffer)
          return folded[position];
      return Value();
    };
    scf::ForOp::create(
        b, loc, thread, length, stride, ValueRange{},
        [&](OpBuilder &nb, Location nl, Value c, ValueRange) {
          SmallVector<Value> ivs(point);
          ivs[rank - 1] = c;
          IRMapping mapping;
          for (OpOperand *input : consumer.getDpsInputOperands()) {
            Value element = totalOf(input->get());
            if (!element)
              element = memref::LoadOp::create(
                  nb, nl, input->get(),
                  indicesAt(nb, nl, consumer.getMatchingIndexingMap(input),
                            ivs));
            mapping.map(body->getArgument(input->getOperandNumber()),
                        element);
          }
          cloneBody(nb, body, ivs, mapping);
          for (OpOperand &init : consumer.getDpsInitsMutable())
            memref::StoreOp::create(
                nb, nl,
                mapping.lookupOrDefault(yield.getOperand(
                    init.getOperandNumber() - consumer.getNumDpsInputs())),
                init.get(),
                indicesAt(nb, nl, consumer.getMatchingIndexingMap(&init), ivs));
          scf::YieldOp::create(nb, nl);
        });
  }
};

} // namespace
