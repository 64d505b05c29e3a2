//===- ParallelizeLoops.cpp - generated loops on the runtime's threads --===//
//
// See ParallelizeLoopsPass in Passes.td.
//
//===----------------------------------------------------------------------===//

#include "codegen/cpu/Passes.h"
#include "ir/Rematerialize.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/CallInterfaces.h"
#include "mlir/Interfaces/DataLayoutInterfaces.h"
#include "mlir/Transforms/LoopInvariantCodeMotionUtils.h"
#include "mlir/Transforms/RegionUtils.h"

#include <map>

namespace mlir::tfm {
#define GEN_PASS_DEF_PARALLELIZELOOPSPASS
#include "codegen/cpu/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// The runtime's entry point (runtime/core/thread_pool.h).
constexpr llvm::StringLiteral kParallelLoopName = "tfm_rt_parallel_loop";
/// Trip count assumed for a loop whose bounds are not constants (a
/// sequence length, say): the cost estimate only has to be the right order
/// of magnitude.
constexpr int64_t kUnknownTripCount = 64;

std::optional<int64_t> staticTripCount(Value lower, Value upper, Value step) {
  std::optional<int64_t> lb = getConstantIntValue(lower);
  std::optional<int64_t> ub = getConstantIntValue(upper);
  std::optional<int64_t> st = getConstantIntValue(step);
  if (!lb || !ub || !st || *st <= 0)
    return std::nullopt;
  return *ub > *lb ? (*ub - *lb + *st - 1) / *st : 0;
}

int64_t tripCountOrGuess(Value lower, Value upper, Value step) {
  return staticTripCount(lower, upper, step).value_or(kUnknownTripCount);
}

/// Iterations of `loop`'s dimensions other than `except` (all of them when
/// it is out of range), guessing where a trip count is not constant.
int64_t iterationsOutside(scf::ParallelOp loop, size_t except = ~size_t(0)) {
  int64_t iterations = 1;
  for (auto [index, lb, ub, step] :
       llvm::enumerate(loop.getLowerBound(), loop.getUpperBound(),
                       loop.getStep()))
    if (index != except)
      iterations *= tripCountOrGuess(lb, ub, step);
  return iterations;
}

/// Operations one run of `block` executes, counting nested loops by their
/// trip counts: the order of magnitude the runtime weighs against the cost
/// of handing work to another thread.
int64_t estimateCost(Block &block) {
  int64_t cost = 0;
  for (Operation &op : block.without_terminator()) {
    if (op.hasTrait<OpTrait::ConstantLike>())
      continue;
    if (auto loop = dyn_cast<scf::ForOp>(op)) {
      cost += tripCountOrGuess(loop.getLowerBound(), loop.getUpperBound(),
                               loop.getStep()) *
              estimateCost(*loop.getBody());
    } else if (auto loop = dyn_cast<scf::ParallelOp>(op)) {
      cost += iterationsOutside(loop) * estimateCost(*loop.getBody());
    } else {
      cost += 1;
      for (Region &region : op.getRegions())
        for (Block &nested : region)
          cost += estimateCost(nested);
    }
  }
  return cost;
}

/// Whether `value` can be recomputed inside the outlined function instead
/// of travelling through the context: constants, and casts of them. Keeping
/// them constant keeps trip counts and strides visible to LLVM.
bool isRematerializable(Value value) {
  Operation *def = value.getDefiningOp();
  if (!def)
    return false;
  if (def->hasTrait<OpTrait::ConstantLike>())
    return def->getNumOperands() == 0;
  if (isa<UnrealizedConversionCastOp, arith::IndexCastOp>(def))
    return def->getNumOperands() == 1 &&
           isRematerializable(def->getOperand(0));
  return false;
}

/// How a captured value is stored in the context: index as i64, LLVM types
/// as they are; null for anything else (a memref, say).
Type contextFieldType(Type type) {
  if (type.isIndex())
    return IntegerType::get(type.getContext(), 64);
  return LLVM::isCompatibleType(type) ? type : Type();
}

/// One top-level parallel loop, ready to be outlined.
struct OutlineCandidate {
  scf::ParallelOp loop;
  /// The dimension split over threads: the first whose trip count is not
  /// known to be 1 (a decode step's single row would leave nothing to
  /// split).
  unsigned dimension = 0;
  /// Values the loop uses from outside, passed through the context.
  SmallVector<Value> passed;
  /// Values the loop uses from outside that the outlined function
  /// recomputes.
  SmallVector<Value> rematerialized;
  LLVM::LLVMStructType contextType;
  int64_t costPerIteration = 0;
};

/// Analyzes `loop` (hoisting its invariant code first); nullopt where it
/// cannot run on other threads: a reduction, a call (the runtime's
/// allocator and kernels are not meant to be entered from the pool), or a
/// captured value with no LLVM type.
std::optional<OutlineCandidate> analyze(scf::ParallelOp loop) {
  if (!loop.getInitVals().empty())
    return std::nullopt;
  bool hasCall = false;
  loop.getBody()->walk([&](Operation *op) {
    hasCall |= isa<CallOpInterface>(op);
  });
  if (hasCall)
    return std::nullopt;
  moveLoopInvariantCode(cast<LoopLikeOpInterface>(loop.getOperation()));

  OutlineCandidate candidate;
  candidate.loop = loop;
  for (auto [index, lb, ub, step] :
       llvm::enumerate(loop.getLowerBound(), loop.getUpperBound(),
                       loop.getStep())) {
    if (staticTripCount(lb, ub, step) != 1) {
      candidate.dimension = index;
      break;
    }
  }
  llvm::SetVector<Value> captured;
  captured.insert(loop->getOperands().begin(), loop->getOperands().end());
  getUsedValuesDefinedAbove(loop.getRegion(), captured);
  SmallVector<Type> fields;
  for (Value value : captured) {
    if (isRematerializable(value)) {
      candidate.rematerialized.push_back(value);
      continue;
    }
    Type field = contextFieldType(value.getType());
    if (!field)
      return std::nullopt;
    candidate.passed.push_back(value);
    fields.push_back(field);
  }
  candidate.contextType =
      LLVM::LLVMStructType::getLiteral(loop.getContext(), fields);
  candidate.costPerIteration = std::max<int64_t>(
      1, iterationsOutside(loop, candidate.dimension) *
             estimateCost(*loop.getBody()));
  return candidate;
}

/// The address of the candidate's `index`-th captured value in the context.
Value contextField(OpBuilder &b, Location loc, const OutlineCandidate &c,
                   Value contextPtr, size_t index) {
  return LLVM::GEPOp::create(
      b, loc, LLVM::LLVMPointerType::get(b.getContext()), c.contextType,
      contextPtr, ArrayRef<LLVM::GEPArg>{0, static_cast<int32_t>(index)});
}

/// `(context, begin, end, thread)`: the signature of tfm_parallel_body.
FunctionType bodyFunctionType(MLIRContext *context) {
  Type i64 = IntegerType::get(context, 64);
  return FunctionType::get(context,
                           {LLVM::LLVMPointerType::get(context), i64, i64,
                            IntegerType::get(context, 32)},
                           {});
}

/// The function that runs iterations [begin, end) of the candidate's split
/// dimension, reading what the loop captured from the context.
func::FuncOp outlineBody(OpBuilder &b, SymbolTable &symbols,
                         func::FuncOp parent, Operation *insertAfter,
                         const OutlineCandidate &c) {
  scf::ParallelOp loop = c.loop;
  Location loc = loop.getLoc();
  MLIRContext *context = loop.getContext();
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointAfter(insertAfter);
  auto body = func::FuncOp::create(b, loc, (parent.getName() + "_loop").str(),
                                   bodyFunctionType(context));
  symbols.insert(body); // renames it to a fresh name
  body.setPrivate();
  body->setAttr("llvm.linkage",
                LLVM::LinkageAttr::get(context, LLVM::Linkage::Internal));
  Block *entry = body.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value contextPtr = entry->getArgument(0);

  IRMapping mapping;
  for (auto [index, value] : llvm::enumerate(c.passed)) {
    Value loaded =
        LLVM::LoadOp::create(b, loc, c.contextType.getBody()[index],
                             contextField(b, loc, c, contextPtr, index));
    if (value.getType().isIndex())
      loaded = arith::IndexCastOp::create(b, loc, value.getType(), loaded);
    mapping.map(value, loaded);
  }
  for (Value value : c.rematerialized)
    rematerialize(b, value, mapping);

  // The chunk [begin, end) of the split dimension's iteration numbers.
  unsigned d = c.dimension;
  Type indexType = b.getIndexType();
  Value begin =
      arith::IndexCastOp::create(b, loc, indexType, entry->getArgument(1));
  Value end =
      arith::IndexCastOp::create(b, loc, indexType, entry->getArgument(2));
  Value lower = mapping.lookup(loop.getLowerBound()[d]);
  Value upper = mapping.lookup(loop.getUpperBound()[d]);
  Value step = mapping.lookup(loop.getStep()[d]);
  Value chunkLower = arith::AddIOp::create(
      b, loc, lower, arith::MulIOp::create(b, loc, begin, step));
  Value chunkUpper = arith::MinSIOp::create(
      b, loc, upper,
      arith::AddIOp::create(b, loc, lower,
                            arith::MulIOp::create(b, loc, end, step)));
  auto chunk = cast<scf::ParallelOp>(b.clone(*loop, mapping));
  chunk.getLowerBoundMutable().slice(d, 1).assign(chunkLower);
  chunk.getUpperBoundMutable().slice(d, 1).assign(chunkUpper);
  func::ReturnOp::create(b, loc);
  return body;
}

func::FuncOp lookupOrDeclareParallelLoop(OpBuilder &b, ModuleOp module) {
  if (auto declared = module.lookupSymbol<func::FuncOp>(kParallelLoopName))
    return declared;
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(module.getBody());
  MLIRContext *context = module.getContext();
  Type i64 = b.getI64Type();
  auto declaration = func::FuncOp::create(
      b, module.getLoc(), kParallelLoopName,
      b.getFunctionType({i64, i64, bodyFunctionType(context),
                         LLVM::LLVMPointerType::get(context)},
                        {}));
  declaration.setPrivate();
  return declaration;
}

/// Replaces the candidate's loop with a call of the runtime that runs
/// `body` over the split dimension's iterations, after storing what the
/// loop captured into `contextPtr`.
void replaceWithRuntimeCall(OpBuilder &b, func::FuncOp runtime,
                            func::FuncOp body, Value contextPtr,
                            const OutlineCandidate &c) {
  scf::ParallelOp loop = c.loop;
  Location loc = loop.getLoc();
  b.setInsertionPoint(loop);
  for (auto [index, value] : llvm::enumerate(c.passed)) {
    Value stored = value;
    if (value.getType().isIndex())
      stored = arith::IndexCastOp::create(b, loc, b.getI64Type(), value);
    LLVM::StoreOp::create(b, loc, stored,
                          contextField(b, loc, c, contextPtr, index));
  }
  // Iterations of the split dimension: ceil((upper - lower) / step), which
  // the runtime takes as none when it is not positive.
  unsigned d = c.dimension;
  Value lower = loop.getLowerBound()[d], upper = loop.getUpperBound()[d],
        step = loop.getStep()[d];
  Value one = arith::ConstantIndexOp::create(b, loc, 1);
  Value span = arith::AddIOp::create(
      b, loc, arith::SubIOp::create(b, loc, upper, lower),
      arith::SubIOp::create(b, loc, step, one));
  Value iterations = arith::IndexCastOp::create(
      b, loc, b.getI64Type(), arith::DivSIOp::create(b, loc, span, step));
  Value cost = arith::ConstantIntOp::create(b, loc, b.getI64Type(),
                                            c.costPerIteration);
  Value function = func::ConstantOp::create(b, loc, body.getFunctionType(),
                                            body.getSymName());
  func::CallOp::create(b, loc, runtime,
                       ValueRange{iterations, cost, function, contextPtr});
  loop.erase();
}

/// A hash of `body`'s operations, their attributes and types, blind to
/// locations and to which values they use: equal for bodies that
/// OperationEquivalence finds equal.
llvm::hash_code structuralHash(func::FuncOp body) {
  llvm::hash_code hash{};
  body.getBody().walk([&](Operation *op) {
    hash =
        llvm::hash_combine(hash, OperationEquivalence::computeHash(
                                     op, OperationEquivalence::ignoreHashValue,
                                     OperationEquivalence::ignoreHashValue,
                                     OperationEquivalence::IgnoreLocations));
  });
  return hash;
}

/// The outlined bodies so far, by structural hash. Every layer of a model
/// and every entry point derived from @forward (prefill, decode, their
/// batched twins) outline the same loops; one function for each distinct
/// body keeps LLVM from optimizing and emitting the same code dozens of
/// times (the most of a small model's compile time).
class OutlinedBodies {
public:
  /// `body` itself, or an equal body outlined before, in which case `body`
  /// is erased.
  func::FuncOp keepOrReuse(func::FuncOp body, SymbolTable &symbols) {
    SmallVector<func::FuncOp, 1> &alike =
        byHash[static_cast<size_t>(structuralHash(body))];
    for (func::FuncOp kept : alike)
      if (isEqual(kept, body)) {
        symbols.erase(body);
        return kept;
      }
    alike.push_back(body);
    return body;
  }

private:
  /// Whether `a` and `b` are the same operations over the same flow: a
  /// value of `b` is equal to the value of `a` in the same place (the
  /// overload without value callbacks only accepts identical SSA values,
  /// which two functions never share).
  static bool isEqual(func::FuncOp a, func::FuncOp b) {
    IRMapping equal;
    return OperationEquivalence::isRegionEquivalentTo(
        &a.getBody(), &b.getBody(),
        [&](Value x, Value y) {
          return success(x == y || equal.lookupOrNull(x) == y);
        },
        [&](Value x, Value y) { equal.map(x, y); },
        OperationEquivalence::IgnoreLocations);
  }

  // std::map, since a hash may take any value (DenseMap reserves two).
  std::map<size_t, SmallVector<func::FuncOp, 1>> byHash;
};

struct ParallelizeLoopsPass
    : mlir::tfm::impl::ParallelizeLoopsPassBase<ParallelizeLoopsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SymbolTable symbols(module);
    OpBuilder b(module.getContext());
    OutlinedBodies bodies;
    SmallVector<func::FuncOp> functions(module.getOps<func::FuncOp>());
    for (func::FuncOp function : functions)
      if (!function.isExternal())
        parallelize(b, symbols, bodies, function);
  }

  void parallelize(OpBuilder &b, SymbolTable &symbols, OutlinedBodies &bodies,
                   func::FuncOp function) {
    // Top-level loops only: a nested one runs inside its parent's chunk.
    SmallVector<scf::ParallelOp> loops;
    function.walk<WalkOrder::PreOrder>([&](scf::ParallelOp loop) {
      loops.push_back(loop);
      return WalkResult::skip();
    });
    SmallVector<OutlineCandidate> candidates;
    for (scf::ParallelOp loop : loops)
      if (std::optional<OutlineCandidate> candidate = analyze(loop))
        candidates.push_back(std::move(*candidate));
    if (candidates.empty())
      return;

    // One context buffer per function, in its entry block (an alloca in a
    // loop would grow the stack on every trip), as large as the largest
    // context: the loops run one after the other.
    DataLayout layout = DataLayout::closest(function);
    uint64_t contextBytes = 8;
    for (const OutlineCandidate &c : candidates)
      contextBytes = std::max<uint64_t>(
          contextBytes, layout.getTypeSize(c.contextType).getFixedValue());
    Location loc = function.getLoc();
    b.setInsertionPointToStart(&function.getBody().front());
    Value words = LLVM::ConstantOp::create(
        b, loc, b.getI64Type(), b.getI64IntegerAttr((contextBytes + 7) / 8));
    Value contextPtr = LLVM::AllocaOp::create(
        b, loc, LLVM::LLVMPointerType::get(b.getContext()), b.getI64Type(),
        words, /*alignment=*/16);

    auto module = function->getParentOfType<ModuleOp>();
    func::FuncOp runtime = lookupOrDeclareParallelLoop(b, module);
    Operation *lastBody = function;
    for (const OutlineCandidate &c : candidates) {
      func::FuncOp outlined = outlineBody(b, symbols, function, lastBody, c);
      func::FuncOp body = bodies.keepOrReuse(outlined, symbols);
      replaceWithRuntimeCall(b, runtime, body, contextPtr, c);
      if (body == outlined)
        lastBody = body;
    }
  }
};

} // namespace
