//===- PipelineStages.cpp - a decoder's layers in pipeline stages --------===//
//
// The tfm-pipeline-stages pass (see Passes.td). Every rank runs the same
// program, the first stage's layers, over its own weights; the stages'
// alikeness is what makes that exact, so the pass proves it (each later
// stage's ops are the first stage's, weights aside) before it drops them.
//
//===----------------------------------------------------------------------===//

#include "ir/TfmDialect.h"
#include "ir/TfmOps.h"
#include "ir/TfmSharding.h"
#include "passes/Passes.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include <optional>

namespace mlir::tfm {
#define GEN_PASS_DEF_PIPELINELASTSTAGEPASS
#define GEN_PASS_DEF_PIPELINESTAGESPASS
#include "passes/Passes.h.inc"
} // namespace mlir::tfm

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// Where a top-level op of @forward belongs. Layers are 0 .. L-1; the
/// epilogue (final norm, head) is L.
constexpr int64_t kReplicated = -2; // index math, positions: every rank
constexpr int64_t kPrologue = -1;   // the embedding: every rank too

/// The layer a weight belongs to: its name's first dotted part that is a
/// number (model.layers.3.mlp.up_proj.weight, transformer.h.3.attn,
/// blk.3.attn_q.weight); none for the embedding, final norm and head.
std::optional<int64_t> layerOfWeight(StringRef name) {
  SmallVector<StringRef> parts;
  name.split(parts, '.');
  for (StringRef part : parts) {
    int64_t layer;
    if (!part.getAsInteger(10, layer))
      return layer;
  }
  return std::nullopt;
}

/// The levels of @forward's top-level ops.
class Levels {
public:
  Levels(func::FuncOp forward, int64_t layers) : body(forward.getBody()) {
    epilogue = layers;
    for (Operation &op : body.front())
      classify(&op);
  }

  int64_t epilogue;

  int64_t of(Operation *op) const { return level.lookup(op); }

  /// The level of the top-level op that defines `value` (kReplicated for
  /// the function's arguments).
  int64_t ofValue(Value value) const {
    Operation *top = topLevel(value);
    return top ? of(top) : kReplicated;
  }

  /// The top-level op defining `value`; null for the function's arguments.
  Operation *topLevel(Value value) const {
    Operation *def = value.getDefiningOp();
    if (!def) {
      Block *owner = cast<BlockArgument>(value).getOwner();
      if (owner == &body.front())
        return nullptr;
      def = owner->getParentOp();
    }
    return body.findAncestorOpInRegion(*def);
  }

  bool isWeight(Operation *op) const { return weightLayer.contains(op); }

private:
  Region &body;
  llvm::DenseMap<Operation *, int64_t> level;
  /// Ops that are weights (tfm.weight, or computed from weights alone: a
  /// dequantization, a join): their layer, or kPrologue for the edge ones.
  llvm::DenseMap<Operation *, int64_t> weightLayer;

  void classify(Operation *op) {
    if (auto weight = dyn_cast<WeightOp>(op)) {
      std::optional<int64_t> layer = layerOfWeight(weight.getName());
      weightLayer[op] = level[op] = layer ? *layer : kPrologue;
      return;
    }
    int64_t at = kReplicated;
    bool readsEdgeWeight = false, allWeights = op->getNumOperands() > 0;
    op->walk([&](Operation *inner) {
      for (Value operand : inner->getOperands()) {
        Operation *top = topLevel(operand);
        if (top == op)
          continue;
        if (!top) {
          allWeights = false;
          continue;
        }
        auto weight = weightLayer.find(top);
        if (weight == weightLayer.end()) {
          allWeights = false;
          at = std::max(at, of(top));
        } else if (weight->second == kPrologue) {
          readsEdgeWeight = true;
        } else {
          at = std::max(at, weight->second);
        }
      }
    });
    if (allWeights && op->getNumRegions() == 0) {
      weightLayer[op] = level[op] = at >= 0 ? at : kPrologue;
      return;
    }
    // An edge weight read with a layer's rows is the final norm or the
    // head; read with the tokens only, the embedding.
    if (readsEdgeWeight)
      at = at >= 0 ? epilogue : std::max(at, kPrologue);
    level[op] = at;
  }
};

/// Proves stage `stage`'s ops the first stage's, weights aside, and
/// records how they correspond.
class StageMatcher {
public:
  StageMatcher(const Levels &levels, int64_t stage, int64_t layersPerStage)
      : levels(levels), stage(stage), layersPerStage(layersPerStage) {}

  /// Stage `stage`'s value -> the first stage's.
  IRMapping mapping;
  /// The one value this stage reads from the previous one, and the first
  /// stage's value it stands for.
  Value input, firstInput;
  /// The first stage's weights -> this stage's, in the same places.
  llvm::StringMap<StringRef> weights;
  /// The first stage's operands that the input stands for.
  SmallVector<OpOperand *> inputUses;

  LogicalResult match(Operation *op, Operation *first) {
    if (op->getName() != first->getName() ||
        op->getNumOperands() != first->getNumOperands() ||
        op->getResultTypes() != first->getResultTypes() ||
        op->getNumRegions() != first->getNumRegions())
      return differ(op, first, "is not the same op");
    if (auto weight = dyn_cast<WeightOp>(op)) {
      auto [it, added] = weights.try_emplace(cast<WeightOp>(first).getName(),
                                             weight.getName());
      if (!added && it->second != weight.getName())
        return differ(op, first, "reads another weight in its place");
    } else if (op->getAttrDictionary() != first->getAttrDictionary()) {
      return differ(op, first, "has other attributes");
    }
    for (auto [operand, firstOperand] :
         llvm::zip(op->getOpOperands(), first->getOpOperands()))
      if (failed(matchOperand(operand, firstOperand, op, first)))
        return failure();
    for (auto [region, firstRegion] :
         llvm::zip(op->getRegions(), first->getRegions())) {
      if (region.getBlocks().size() != firstRegion.getBlocks().size())
        return differ(op, first, "has other blocks");
      for (auto [block, firstBlock] : llvm::zip(region, firstRegion)) {
        if (block.getArgumentTypes() != firstBlock.getArgumentTypes() ||
            block.getOperations().size() != firstBlock.getOperations().size())
          return differ(op, first, "has another body");
        mapping.map(block.getArguments(), firstBlock.getArguments());
        for (auto [inner, firstInner] : llvm::zip(block, firstBlock))
          if (failed(match(&inner, &firstInner)))
            return failure();
      }
    }
    mapping.map(op->getResults(), first->getResults());
    return success();
  }

private:
  const Levels &levels;
  int64_t stage, layersPerStage;

  LogicalResult matchOperand(OpOperand &operand, OpOperand &firstOperand,
                             Operation *op, Operation *first) {
    Value value = operand.get(), firstValue = firstOperand.get();
    // Every read of the input (a norm's and a residual's) stands for one
    // of the first stage's input.
    if (input && value == input) {
      if (firstValue != firstInput)
        return differ(op, first, "reads other values");
      inputUses.push_back(&firstOperand);
      return success();
    }
    if (mapping.lookupOrDefault(value) == firstValue)
      return success();
    int64_t at = levels.ofValue(value);
    int64_t firstLayer = stage * layersPerStage;
    if (mapping.contains(value) || at < firstLayer - layersPerStage ||
        at >= firstLayer)
      return differ(op, first, "reads other values");
    // A value of the previous stage: the stage's input, one value.
    if (input && input != value)
      return op->emitOpError("reads two values of the stage before its own "
                             "(pipeline stage ")
             << stage << "): the stages pass one hidden value";
    input = value;
    firstInput = firstValue;
    mapping.map(value, firstValue);
    inputUses.push_back(&firstOperand);
    return success();
  }

  LogicalResult differ(Operation *op, Operation *first, StringRef how) {
    InFlightDiagnostic diagnostic =
        op->emitOpError("in pipeline stage ")
        << stage << " " << how << " than its place in the first stage: "
        << "the stages of a model split into pipeline stages must be alike "
           "(choose stages that divide the layers' pattern)";
    diagnostic.attachNote(first->getLoc()) << "the first stage's op";
    return diagnostic;
  }
};

struct PipelineStagesPass
    : tfm::impl::PipelineStagesPassBase<PipelineStagesPass> {
  using Base::Base;

  void runOnOperation() override {
    if (stages <= 1)
      return;
    if (ranks < 1) {
      getOperation().emitError("tfm-pipeline-stages: ranks must be at least "
                               "1, got ")
          << ranks;
      return signalPassFailure();
    }
    if (failed(split()))
      signalPassFailure();
  }

  LogicalResult split() {
    ModuleOp module = getOperation();
    int64_t stages = this->stages;
    auto model = module->getAttrOfType<ModelAttr>(kModelAttrName);
    auto forward = module.lookupSymbol<func::FuncOp>("forward");
    auto functions = module.getOps<func::FuncOp>();
    // A decoder: @forward from token ids to logits and nothing else (an
    // encoder-decoder's takes the encoder's input too).
    if (!model || !forward ||
        std::distance(functions.begin(), functions.end()) != 1 ||
        forward.getNumArguments() != 1 || forward.getNumResults() != 1)
      return module.emitError("--pipeline-stages splits a decoder's layers "
                              "(one @forward from token ids to logits); '")
             << (model ? model.getFamily() : StringRef("this model"))
             << "' is not one";
    int64_t layers = model.getNumLayers();
    if (layers < stages || layers % stages != 0)
      return module.emitError("--pipeline-stages ")
             << stages << ": the model's " << layers
             << " layers do not split into stages of equal layers";
    int64_t perStage = layers / stages;
    Levels levels(forward, layers);

    // Each stage's ops, in order.
    SmallVector<SmallVector<Operation *>> stageOps(stages);
    SmallVector<Operation *> epilogue;
    for (Operation &op : forward.getBody().front()) {
      int64_t at = levels.of(&op);
      if (at >= layers)
        epilogue.push_back(&op);
      else if (at >= 0)
        stageOps[at / perStage].push_back(&op);
    }

    // Every later stage is the first over other weights.
    SmallVector<StageMatcher> matchers;
    for (int64_t stage = 1; stage < stages; ++stage) {
      StageMatcher &matcher = matchers.emplace_back(levels, stage, perStage);
      if (stageOps[stage].size() != stageOps[0].size())
        return forward.emitError("pipeline stage ")
               << stage << " has " << stageOps[stage].size()
               << " ops where the first has " << stageOps[0].size()
               << ": the stages of a model split into pipeline stages must "
                  "be alike";
      for (auto [op, first] : llvm::zip(stageOps[stage], stageOps[0]))
        if (failed(matcher.match(op, first)))
          return failure();
      if (!matcher.input)
        return forward.emitError("pipeline stage ")
               << stage << " reads nothing of the stage before it";
    }
    // The first stage's input (an embedding's rows) and output (what the
    // second stage reads): every stage's input stands for the first's, and
    // every stage's output for the first's.
    Value firstInput = matchers[0].firstInput;
    Value firstOutput = matchers[0].input;
    if (levels.ofValue(firstInput) != kPrologue)
      return forward.emitError("the first pipeline stage's input is not the "
                               "embedding's rows");
    for (StageMatcher &matcher : matchers) {
      if (matcher.firstInput != firstInput)
        return forward.emitError("pipeline stages read other values of the "
                                 "stages before them");
    }
    for (size_t i = 1; i < matchers.size(); ++i)
      if (matchers[i - 1].mapping.lookupOrNull(matchers[i].input) !=
          firstOutput)
        return forward.emitError("pipeline stage ")
               << i + 1 << " reads another value of its previous stage than "
               << "the second stage does of the first";

    // The epilogue reads the last stage's output, as the first's.
    StageMatcher &last = matchers.back();
    Value lastOutput;
    for (Operation *op : epilogue) {
      WalkResult walked = op->walk([&](Operation *inner) {
        for (Value operand : inner->getOperands()) {
          int64_t at = levels.ofValue(operand);
          if (at < 0 || at >= layers)
            continue;
          if ((lastOutput && lastOutput != operand) ||
              last.mapping.lookupOrNull(operand) != firstOutput) {
            inner->emitOpError("reads a value of the layers other than the "
                               "last stage's output: not split into "
                               "pipeline stages");
            return WalkResult::interrupt();
          }
          lastOutput = operand;
        }
        return WalkResult::advance();
      });
      if (walked.wasInterrupted())
        return failure();
    }
    if (!lastOutput)
      return forward.emitError("no final norm or head reads the last "
                               "layer: not split into pipeline stages");

    // The first stage's input from the previous rank, its output to the
    // next; the epilogue on the first stage's output.
    OpBuilder builder(module.getContext());
    builder.setInsertionPointAfterValue(firstInput);
    auto receive =
        PipelineReceiveOp::create(builder, firstInput.getLoc(), firstInput);
    for (StageMatcher &matcher : matchers)
      for (OpOperand *use : matcher.inputUses)
        use->set(receive);
    builder.setInsertionPointAfterValue(firstOutput);
    PipelineSendOp::create(builder, firstOutput.getLoc(), firstOutput);
    lastOutput.replaceUsesWithIf(firstOutput, [&](OpOperand &use) {
      return levels.of(forward.getBody().findAncestorOpInRegion(
                 *use.getOwner())) >= layers;
    });

    // Logits to rank 0; the later stages' ops go.
    auto ret = cast<func::ReturnOp>(forward.getBody().front().getTerminator());
    builder.setInsertionPoint(ret);
    for (OpOperand &result : ret->getOpOperands()) {
      int64_t at = levels.ofValue(result.get());
      if (at >= 0 && at < layers)
        return ret.emitOpError("returns a layer's value: not split into "
                               "pipeline stages");
      if (at == layers)
        result.set(
            PipelineCollectOp::create(builder, ret.getLoc(), result.get()));
    }
    for (int64_t stage = stages - 1; stage >= 1; --stage)
      for (Operation *op : llvm::reverse(stageOps[stage])) {
        if (!op->use_empty())
          return op->emitOpError("of pipeline stage ")
                 << stage << " is read outside it";
        op->erase();
      }

    return recordWeightSources(module, matchers);
  }

  /// Each rank's weights in the first stage's places; the later stages'
  /// declarations go. A place holds what the first stage's weight is
  /// declared as: a stage whose weight is stored otherwise (a GGUF file's
  /// Q6_K where the first stage has Q4_K) is refused.
  LogicalResult recordWeightSources(ModuleOp module,
                                    ArrayRef<StageMatcher> matchers) {
    MLIRContext *context = module.getContext();
    SymbolTable symbols(module);
    SmallVector<NamedAttribute> sources;
    for (auto decl : module.getOps<WeightDeclOp>()) {
      StringRef name = decl.getSymName();
      if (!matchers[0].weights.contains(name))
        continue;
      // By stage, then by MPI rank.
      SmallVector<Attribute> stages = {StringAttr::get(context, name)};
      for (const StageMatcher &matcher : matchers) {
        StringRef source = matcher.weights.lookup(name);
        auto sourceDecl = symbols.lookup<WeightDeclOp>(source);
        if (!sourceDecl || !sameStorage(decl, sourceDecl))
          return decl.emitOpError("is stored otherwise than '")
                 << source << "', which a later pipeline stage holds in "
                 << "its place: not split into pipeline stages";
        stages.push_back(StringAttr::get(context, source));
      }
      // Group g runs stage (g + P - 1) mod P; each of its tensor ranks
      // holds that stage's weight (split later as tensor parallelism
      // splits it).
      SmallVector<Attribute> ranks;
      int64_t groups = stages.size();
      for (int64_t group = 0; group < groups; ++group)
        ranks.append(this->ranks, stages[(group + groups - 1) % groups]);
      sources.emplace_back(decl.getSymNameAttr(),
                           ArrayAttr::get(context, ranks));
    }
    module->setAttr(kRankWeightSourcesAttrName,
                    DictionaryAttr::get(context, sources));
    module->setAttr(kPipelineStagesAttrName,
                    IntegerAttr::get(IntegerType::get(context, 64),
                                     int64_t(matchers.size()) + 1));
    for (auto decl : llvm::make_early_inc_range(module.getOps<WeightDeclOp>()))
      if (SymbolTable::symbolKnownUseEmpty(decl, module))
        decl.erase();
    return success();
  }

  /// Whether two weights are declared alike but for their names.
  static bool sameStorage(WeightDeclOp a, WeightDeclOp b) {
    if (a.getType() != b.getType())
      return false;
    NamedAttrList attrs(a->getAttrDictionary()), others(b->getAttrDictionary());
    attrs.erase(a.getSymNameAttrName());
    others.erase(b.getSymNameAttrName());
    return attrs.getDictionary(a.getContext()) ==
           others.getDictionary(b.getContext());
  }
};

/// The top-level ops of `collect`'s block that only its input reads, in
/// program order: the epilogue only the last stage needs.
SmallVector<Operation *> onlyCollected(PipelineCollectOp collect) {
  Block *block = collect->getBlock();
  llvm::SetVector<Operation *> epilogue;
  auto readOnlyThere = [&](Operation *op) {
    for (Operation *user : op->getUsers()) {
      Operation *top = block->findAncestorOpInBlock(*user);
      if (top != collect.getOperation() && !epilogue.contains(top))
        return false;
    }
    return true;
  };
  // Users come after their operands: one sweep from the collect back.
  for (Operation *op = collect->getPrevNode(); op; op = op->getPrevNode())
    if (op->getNumResults() > 0 && !isa<WeightOp, arith::ConstantOp>(op) &&
        isMemoryEffectFree(op) && readOnlyThere(op))
      epilogue.insert(op);
  SmallVector<Operation *> ordered(epilogue.begin(), epilogue.end());
  llvm::sort(ordered,
             [](Operation *a, Operation *b) { return a->isBeforeInBlock(b); });
  return ordered;
}

struct PipelineLastStagePass
    : tfm::impl::PipelineLastStagePassBase<PipelineLastStagePass> {
  void runOnOperation() override {
    SmallVector<PipelineCollectOp> collects;
    getOperation().walk(
        [&](PipelineCollectOp collect) { collects.push_back(collect); });
    for (PipelineCollectOp collect : collects)
      runOnLastStage(collect);
  }

  /// The collect's input computed under scf.if on the last stage; an
  /// empty tensor of its type elsewhere.
  static void runOnLastStage(PipelineCollectOp collect) {
    SmallVector<Operation *> epilogue = onlyCollected(collect);
    if (epilogue.empty())
      return;
    Value logits = collect.getInput();
    auto type = cast<RankedTensorType>(logits.getType());
    Location loc = collect.getLoc();
    OpBuilder builder(collect);
    Value last = PipelineLastStageOp::create(builder, loc);
    auto branch = scf::IfOp::create(builder, loc, TypeRange{type}, last,
                                    /*withElseRegion=*/true);
    Block *onLast = &branch.getThenRegion().front();
    for (Operation *op : epilogue)
      op->moveBefore(onLast, onLast->end());
    builder.setInsertionPointToEnd(onLast);
    scf::YieldOp::create(builder, loc, logits);
    builder.setInsertionPointToEnd(&branch.getElseRegion().front());
    Value none = arith::ConstantIndexOp::create(builder, loc, 0);
    SmallVector<Value> sizes(type.getNumDynamicDims(), none);
    Value empty = tensor::EmptyOp::create(builder, loc, type, sizes);
    scf::YieldOp::create(builder, loc, empty);
    collect.getInputMutable().assign(branch.getResult(0));
  }
};

} // namespace
