//===- PlanArena.cpp - a function's temporary buffers in one arena ------===//
//
// See PlanArenaPass in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "codegen/linalg/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Interfaces/ViewLikeInterface.h"

namespace mlir::tfm {
#define GEN_PASS_DEF_PLANARENAPASS
#include "codegen/linalg/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

constexpr int64_t kArenaAlignment = 64;
/// The sequence length at which dynamic sizes are evaluated to order the
/// placement (any value is correct; this one is typical).
constexpr int64_t kRepresentativeDim = 128;

/// A buffer the function allocates and frees itself.
struct Buffer {
  memref::AllocOp alloc;
  memref::DeallocOp dealloc;
  /// First and last op of the body (by position) that use it or a view.
  int64_t first = 0, last = 0;
  /// Placed on top of these (indices into the plan's buffers).
  SmallVector<size_t> below;
  Value offset, size;
};

/// Position of the entry-block ancestor of `op` (-1 when outside).
int64_t positionIn(Block &block, Operation *op,
                   const DenseMap<Operation *, int64_t> &positions) {
  Operation *ancestor = block.findAncestorOpInBlock(*op);
  return ancestor ? positions.lookup(ancestor) : -1;
}

/// The lifetime of `alloc`'s buffer in `block`, over all views of it;
/// nullopt when a view escapes (returned, yielded) or no dealloc in the
/// block frees it.
std::optional<Buffer>
analyze(memref::AllocOp alloc, Block &block,
        const DenseMap<Operation *, int64_t> &positions) {
  Buffer buffer;
  buffer.alloc = alloc;
  buffer.first = std::numeric_limits<int64_t>::max();
  buffer.last = -1;
  SmallVector<Value> aliases = {alloc.getResult()};
  while (!aliases.empty()) {
    Value value = aliases.pop_back_val();
    for (Operation *user : value.getUsers()) {
      if (auto dealloc = dyn_cast<memref::DeallocOp>(user)) {
        if (value != alloc.getResult() || dealloc->getBlock() != &block ||
            buffer.dealloc)
          return std::nullopt;
        buffer.dealloc = dealloc;
        continue;
      }
      if (user->hasTrait<OpTrait::ReturnLike>() ||
          user->hasTrait<OpTrait::IsTerminator>())
        return std::nullopt;
      auto view = dyn_cast<ViewLikeOpInterface>(user);
      if (view && view.getViewSource() == value)
        aliases.append(user->result_begin(), user->result_end());
      int64_t position = positionIn(block, user, positions);
      if (position < 0)
        return std::nullopt;
      buffer.first = std::min(buffer.first, position);
      buffer.last = std::max(buffer.last, position);
    }
  }
  if (!buffer.dealloc || buffer.last < 0)
    return std::nullopt;
  return buffer;
}

/// Bytes per element of `type`, 0 when not a plain int or float.
int64_t elementBytes(MemRefType type) {
  Type element = type.getElementType();
  if (!element.isIntOrFloat() || element.getIntOrFloatBitWidth() % 8)
    return 0;
  return element.getIntOrFloatBitWidth() / 8;
}

double representativeBytes(Buffer &buffer) {
  MemRefType type = buffer.alloc.getType();
  double bytes = elementBytes(type);
  for (int64_t dim : type.getShape())
    bytes *= ShapedType::isDynamic(dim) ? kRepresentativeDim : dim;
  return bytes;
}

int64_t alignedRepresentativeBytes(Buffer &buffer) {
  auto bytes = static_cast<int64_t>(representativeBytes(buffer));
  return (bytes + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
}

/// `value` rounded up to the arena's alignment.
Value alignUp(OpBuilder &b, Location loc, Value value) {
  Value mask = arith::ConstantIndexOp::create(b, loc, kArenaAlignment - 1);
  Value sum = arith::AddIOp::create(b, loc, value, mask);
  Value notMask = arith::ConstantIndexOp::create(b, loc, ~(kArenaAlignment - 1));
  return arith::AndIOp::create(b, loc, sum, notMask);
}

/// Whether `size` is defined before `insertion` in `block`, moving the pure
/// arithmetic it is computed by there when that arithmetic reads only
/// values defined there. A layer a pipeline stage skips sizes its buffers
/// by `select(runs, rows, 0)` just before the layer; moved up, those
/// buffers join the arena instead of being allocated on every call.
bool definedBefore(Value size, Operation *insertion, Block &block) {
  SetVector<Operation *> slice;
  SmallVector<Value> pending = {size};
  while (!pending.empty()) {
    Operation *def = pending.pop_back_val().getDefiningOp();
    if (!def || (def->getBlock() == &block && def->isBeforeInBlock(insertion)))
      continue;
    // Scalars only: a memref.dim of a buffer would end up above the view
    // that replaces the buffer.
    if (def->getBlock() != &block || def == insertion || !isPure(def) ||
        def->getNumRegions() ||
        !llvm::all_of(def->getOperandTypes(),
                      [](Type type) { return type.isIntOrIndexOrFloat(); }))
      return false;
    if (slice.insert(def))
      llvm::append_range(pending, def->getOperands());
  }
  SmallVector<Operation *> moved = slice.takeVector();
  llvm::sort(moved,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  for (Operation *op : moved)
    op->moveBefore(insertion);
  return true;
}

struct PlanArenaPass : mlir::tfm::impl::PlanArenaPassBase<PlanArenaPass> {
  void runOnOperation() override {
    func::FuncOp func = getOperation();
    if (func.isExternal())
      return;
    Block &block = func.getBody().front();
    // Positions are taken once: moving sizes up (definedBefore) does not
    // move any buffer's uses.
    DenseMap<Operation *, int64_t> positions;
    SmallVector<Operation *> byPosition;
    for (auto [index, op] : llvm::enumerate(block)) {
      positions[&op] = index;
      byPosition.push_back(&op);
    }

    std::vector<Buffer> buffers;
    for (auto alloc : block.getOps<memref::AllocOp>()) {
      MemRefType type = alloc.getType();
      if (!type.getLayout().isIdentity() || !elementBytes(type) ||
          !alloc.getSymbolOperands().empty())
        continue;
      if (std::optional<Buffer> buffer = analyze(alloc, block, positions))
        buffers.push_back(*buffer);
    }
    // The arena's arithmetic goes before the first use of any buffer, so
    // every size it reads must be defined there: move pure arithmetic up,
    // and drop buffers whose sizes still come later until that holds.
    Operation *insertion = nullptr;
    for (bool changed = true; changed && !buffers.empty();) {
      int64_t first = std::numeric_limits<int64_t>::max();
      for (const Buffer &buffer : buffers)
        first = std::min(first, buffer.first);
      insertion = byPosition[first];
      size_t before = buffers.size();
      llvm::erase_if(buffers, [&](Buffer &buffer) {
        return llvm::any_of(buffer.alloc.getDynamicSizes(), [&](Value size) {
          return !definedBefore(size, insertion, block);
        });
      });
      changed = buffers.size() != before;
    }
    if (buffers.size() < 2)
      return;

    // Placement at the representative size: largest first, each at the
    // lowest offset where it fits between the placed buffers it overlaps.
    auto bySize = llvm::to_vector(llvm::seq<size_t>(0, buffers.size()));
    llvm::stable_sort(bySize, [&](size_t a, size_t b) {
      return representativeBytes(buffers[a]) > representativeBytes(buffers[b]);
    });
    std::vector<int64_t> staticOffset(buffers.size(), -1);
    auto overlap = [&](size_t i, size_t j) {
      return buffers[i].first <= buffers[j].last &&
             buffers[j].first <= buffers[i].last;
    };
    for (size_t i : bySize) {
      int64_t size = alignedRepresentativeBytes(buffers[i]);
      SmallVector<std::pair<int64_t, int64_t>> taken;
      for (size_t j = 0; j < buffers.size(); ++j)
        if (j != i && staticOffset[j] >= 0 && overlap(i, j))
          taken.push_back({staticOffset[j],
                           staticOffset[j] + alignedRepresentativeBytes(buffers[j])});
      llvm::sort(taken);
      int64_t offset = 0;
      for (auto [begin, end] : taken) {
        if (offset + size <= begin)
          break;
        offset = std::max(offset, end);
      }
      staticOffset[i] = offset;
    }
    // At run time sizes differ, so the plan kept is the order it found:
    // each buffer sits on top of the overlapping buffers placed below it.
    // Every overlapping pair is ordered, so no two ever share bytes; at the
    // representative size the offsets are at most the static ones.
    auto order = llvm::to_vector(llvm::seq<size_t>(0, buffers.size()));
    llvm::stable_sort(order, [&](size_t a, size_t b) {
      return staticOffset[a] < staticOffset[b];
    });
    for (auto [rank, i] : llvm::enumerate(order))
      for (size_t j : ArrayRef<size_t>(order).take_front(rank))
        if (overlap(i, j))
          buffers[i].below.push_back(j);

    OpBuilder b(insertion);
    Location loc = func.getLoc();
    Value zero = arith::ConstantIndexOp::create(b, loc, 0);
    for (Buffer &buffer : buffers) {
      MemRefType type = buffer.alloc.getType();
      int64_t staticBytes = elementBytes(type);
      for (int64_t dim : type.getShape())
        staticBytes *= ShapedType::isDynamic(dim) ? 1 : dim;
      Value bytes = arith::ConstantIndexOp::create(b, loc, staticBytes);
      for (Value dim : buffer.alloc.getDynamicSizes())
        bytes = arith::MulIOp::create(b, loc, bytes, dim);
      buffer.size = alignUp(b, loc, bytes);
    }
    Value total = zero;
    for (size_t i : order) {
      Value offset = zero;
      for (size_t j : buffers[i].below)
        offset = arith::MaxUIOp::create(
            b, loc, offset,
            arith::AddIOp::create(b, loc, buffers[j].offset, buffers[j].size));
      buffers[i].offset = offset;
      total = arith::MaxUIOp::create(
          b, loc, total, arith::AddIOp::create(b, loc, offset, buffers[i].size));
    }
    auto arenaType = MemRefType::get({ShapedType::kDynamic}, b.getI8Type());
    Value arena = memref::AllocOp::create(b, loc, arenaType, ValueRange{total},
                                          b.getI64IntegerAttr(kArenaAlignment));
    for (Buffer &buffer : buffers) {
      Value view = memref::ViewOp::create(b, buffer.alloc.getLoc(),
                                          buffer.alloc.getType(), arena,
                                          buffer.offset,
                                          buffer.alloc.getDynamicSizes());
      buffer.alloc.getResult().replaceAllUsesWith(view);
      buffer.dealloc->erase();
      buffer.alloc->erase();
    }
    b.setInsertionPoint(block.getTerminator());
    memref::DeallocOp::create(b, loc, arena);
  }
};

} // namespace
