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
#include "mlir/Dialect/Arith/Utils/Utils.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/SymbolTable.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"

#include <functional>
#include <limits>
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

  /// Whether `op` is one of @forward's top-level ops as they were
  /// classified (not one made since).
  bool contains(Operation *op) const { return level.contains(op); }

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
    if (layers < stages)
      return module.emitError("--pipeline-stages ")
             << stages << ": the model has " << layers
             << " layers, fewer than its stages";
    Levels levels(forward, layers);
    SmallVector<SmallVector<Operation *>> layerOps(layers);
    SmallVector<Operation *> epilogue;
    for (Operation &op : forward.getBody().front()) {
      int64_t at = levels.of(&op);
      if (at >= layers)
        epilogue.push_back(&op);
      else if (at >= 0)
        layerOps[at].push_back(&op);
    }

    // The units the stages are made of: the fewest layers that repeat
    // (one for most models; a period of sliding and full layers), proven
    // alike quietly, then, where too few units repeat for the stages,
    // stages of equal layers again aloud, to name the first difference.
    int64_t unitLayers = layers;
    SmallVector<StageMatcher> matchers;
    // The last unit's output, which the epilogue reads.
    Value lastOutput;
    for (int64_t size = 1; size < layers; ++size) {
      if (layers % size != 0)
        continue;
      ScopedDiagnosticHandler quiet(&getContext(),
                                    [](Diagnostic &) { return success(); });
      matchers.clear();
      FailureOr<Value> matched =
          matchUnits(levels, layerOps, epilogue, size, matchers);
      if (succeeded(matched)) {
        unitLayers = size;
        lastOutput = *matched;
        break;
      }
    }
    int64_t units = layers / unitLayers;
    if (units < stages) {
      matchers.clear();
      if (layers % stages == 0 && failed(matchUnits(levels, layerOps, epilogue,
                                                    layers / stages, matchers)))
        return failure();
      return module.emitError("--pipeline-stages ")
             << stages << ": the model's " << layers << " layers are alike in "
             << units << " units of " << unitLayers
             << ", fewer than its stages";
    }

    // Each stage's units, balanced by their weights; the code holds the
    // longest stage's units, and each stage runs its own count of them.
    SmallVector<Operation *> firstUnit;
    for (int64_t layer = 0; layer < unitLayers; ++layer)
      firstUnit.append(layerOps[layer]);
    int64_t unitWeights = weightElements(levels, firstUnit);
    int64_t headWeights = weightElements(levels, epilogue);
    SmallVector<int64_t> counts;
    if (stageLayers.empty()) {
      counts = balanceStages(units, stages, unitWeights, headWeights);
    } else {
      FailureOr<SmallVector<int64_t>> chosen =
          chosenStages(module, layers, unitLayers);
      if (failed(chosen))
        return failure();
      counts = *chosen;
    }
    int64_t longest = *llvm::max_element(counts);
    int64_t shortest = *llvm::min_element(counts);
    reportStages(module, counts, unitLayers, unitWeights, headWeights);

    // The first unit's input from the previous rank; the code's last
    // unit's output to the next, and to the epilogue.
    Value firstInput = matchers[0].firstInput;
    Value codeOutput = matchers[longest - 1].input;
    OpBuilder builder(module.getContext());
    builder.setInsertionPointAfterValue(firstInput);
    auto receive =
        PipelineReceiveOp::create(builder, firstInput.getLoc(), firstInput);
    for (StageMatcher &matcher : matchers)
      for (OpOperand *use : matcher.inputUses)
        use->set(receive);
    lastOutput.replaceUsesWithIf(codeOutput, [&](OpOperand &use) {
      return levels.of(forward.getBody().findAncestorOpInRegion(
                 *use.getOwner())) >= layers;
    });

    // Logits to rank 0; the units past the code's go.
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
    for (int64_t layer = layers - 1; layer >= longest * unitLayers; --layer)
      for (Operation *op : llvm::reverse(layerOps[layer])) {
        if (!op->use_empty())
          return op->emitOpError("of pipeline layer ")
                 << layer << " is read outside the stage that runs it";
        op->erase();
      }
    if (shortest < longest && failed(runOwnUnits(forward, counts, unitLayers,
                                                 levels, matchers, codeOutput)))
      return failure();
    builder.setInsertionPointAfterValue(codeOutput);
    PipelineSendOp::create(builder, codeOutput.getLoc(), codeOutput);

    module->setAttr(kPipelineStagesAttrName, builder.getI64IntegerAttr(stages));
    return recordWeightSources(module, matchers, counts);
  }

  /// The units of each stage as --pipeline-layers lists its layers: a
  /// stage a count, each a whole number of units, together every layer.
  FailureOr<SmallVector<int64_t>> chosenStages(ModuleOp module, int64_t layers,
                                               int64_t unitLayers) {
    SmallVector<StringRef> parts;
    StringRef(stageLayers.getValue()).split(parts, ',');
    SmallVector<int64_t> counts;
    int64_t total = 0;
    auto refuse = [&]() {
      return module.emitError("--pipeline-layers ")
             << stageLayers.getValue() << ": ";
    };
    for (StringRef part : parts) {
      int64_t count;
      if (part.trim().getAsInteger(10, count) || count < 1) {
        refuse() << "'" << part << "' is not a number of layers";
        return failure();
      }
      if (count % unitLayers != 0) {
        refuse() << "the model's layers repeat every " << unitLayers
                 << ", so a stage holds a multiple of " << unitLayers;
        return failure();
      }
      counts.push_back(count / unitLayers);
      total += count;
    }
    if (int64_t(counts.size()) != stages) {
      refuse() << "lists " << counts.size() << " stages, for "
               << stages.getValue() << " pipeline stages";
      return failure();
    }
    if (total != layers) {
      refuse() << "lists " << total << " layers; the model has " << layers;
      return failure();
    }
    return counts;
  }

  /// Proves every unit of `size` layers the first over other weights, one
  /// hidden value passing from each to the next, and the epilogue reading
  /// the last unit's output, which it returns: `matchers` holds units 1,
  /// 2, ...
  FailureOr<Value> matchUnits(const Levels &levels,
                              ArrayRef<SmallVector<Operation *>> layerOps,
                              ArrayRef<Operation *> epilogue, int64_t size,
                              SmallVector<StageMatcher> &matchers) {
    auto forward = cast<func::FuncOp>(layerOps[0][0]->getParentOp());
    auto unitOps = [&](int64_t unit) {
      SmallVector<Operation *> ops;
      for (int64_t layer = unit * size; layer < (unit + 1) * size; ++layer)
        ops.append(layerOps[layer]);
      return ops;
    };
    SmallVector<Operation *> first = unitOps(0);
    int64_t units = layerOps.size() / size;
    for (int64_t unit = 1; unit < units; ++unit) {
      StageMatcher &matcher = matchers.emplace_back(levels, unit, size);
      SmallVector<Operation *> ops = unitOps(unit);
      if (ops.size() != first.size())
        return forward.emitError("pipeline stage ")
               << unit << " has " << ops.size() << " ops where the first has "
               << first.size()
               << ": the stages of a model split into pipeline stages must "
                  "be alike";
      for (auto [op, firstOp] : llvm::zip(ops, first))
        if (failed(matcher.match(op, firstOp)))
          return failure();
      if (!matcher.input)
        return forward.emitError("pipeline stage ")
               << unit << " reads nothing of the stage before it";
    }
    // Every unit's input stands for the first's (an embedding's rows), and
    // its output for the first's.
    Value firstInput = matchers[0].firstInput;
    Value firstOutput = matchers[0].input;
    if (levels.ofValue(firstInput) != kPrologue)
      return forward.emitError("the first pipeline stage's input is not the "
                               "embedding's rows");
    for (StageMatcher &matcher : matchers)
      if (matcher.firstInput != firstInput)
        return forward.emitError("pipeline stages read other values of the "
                                 "stages before them");
    for (size_t i = 1; i < matchers.size(); ++i)
      if (matchers[i - 1].mapping.lookupOrNull(matchers[i].input) !=
          firstOutput)
        return forward.emitError("pipeline stage ")
               << i + 1 << " reads another value of its previous stage than "
               << "the second stage does of the first";
    Value lastOutput = lastUnitOutput(levels, epilogue, matchers.back(),
                                      firstOutput, layerOps.size());
    if (!lastOutput)
      return failure();
    return lastOutput;
  }

  /// The last unit's output, which the epilogue (final norm, head) alone
  /// reads of the layers; null, with an error, otherwise.
  static Value lastUnitOutput(const Levels &levels,
                              ArrayRef<Operation *> epilogue,
                              const StageMatcher &last, Value firstOutput,
                              int64_t layers) {
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
        return nullptr;
    }
    if (!lastOutput && !epilogue.empty())
      epilogue.front()->emitOpError("reads no layer: not split into pipeline "
                                    "stages");
    return lastOutput;
  }

  /// Units `counts` by stage, contiguous, at least one each, adding to
  /// `units`: the split whose heaviest stage is lightest when a unit
  /// weighs `unit` and the last stage carries `head` besides (decode reads
  /// every weight once a token, so a stage's time goes with its weights).
  /// Ties keep the last stage longest, the extra units on the first.
  static SmallVector<int64_t> balanceStages(int64_t units, int64_t stages,
                                            int64_t unit, int64_t head) {
    SmallVector<int64_t> best;
    int64_t bestCost = std::numeric_limits<int64_t>::max();
    for (int64_t last = units - (stages - 1); last >= 1; --last) {
      int64_t rest = units - last, each = rest / (stages - 1);
      int64_t extra = rest % (stages - 1);
      int64_t cost =
          std::max(last * unit + head, (each + (extra ? 1 : 0)) * unit);
      if (cost >= bestCost)
        continue;
      bestCost = cost;
      best.clear();
      for (int64_t stage = 0; stage < stages - 1; ++stage)
        best.push_back(each + (stage < extra ? 1 : 0));
      best.push_back(last);
    }
    return best;
  }

  /// The elements of the weights `ops` read (through weight-only ops: a
  /// dequantization, a join), each weight once.
  static int64_t weightElements(const Levels &levels,
                                ArrayRef<Operation *> ops) {
    llvm::StringSet<> seen;
    int64_t elements = 0;
    std::function<void(Value)> add = [&](Value value) {
      Operation *def = value.getDefiningOp();
      if (auto weight = dyn_cast_or_null<WeightOp>(def)) {
        if (seen.insert(weight.getName()).second)
          elements += cast<ShapedType>(weight.getType()).getNumElements();
      } else if (def && levels.isWeight(def)) {
        for (Value operand : def->getOperands())
          add(operand);
      }
    };
    for (Operation *op : ops)
      op->walk([&](Operation *inner) {
        if (isa<WeightOp>(inner))
          add(inner->getResult(0));
        for (Value operand : inner->getOperands())
          add(operand);
      });
    return elements;
  }

  /// Says how the layers were split and how even the stages' weights are.
  static void reportStages(ModuleOp module, ArrayRef<int64_t> counts,
                           int64_t unitLayers, int64_t unit, int64_t head) {
    SmallVector<double> weights;
    for (int64_t count : counts)
      weights.push_back(double(count * unit));
    weights.back() += double(head);
    double mean = 0;
    for (double w : weights)
      mean += w / weights.size();
    std::string layersText, weightsText;
    llvm::raw_string_ostream layersOs(layersText), weightsOs(weightsText);
    llvm::interleaveComma(counts, layersOs, [&](int64_t count) {
      layersOs << count * unitLayers;
    });
    llvm::interleaveComma(weights, weightsOs, [&](double w) {
      weightsOs << llvm::format("%.2f", w / mean);
    });
    weightsOs << " of the mean; the heaviest "
              << llvm::format("%.2f", *llvm::max_element(weights) / mean)
              << "x";
    module.emitRemark("pipeline stages of ")
        << layersText << " layers, first to last (the last with the final "
        << "norm and head); their weights " << weightsText;
  }

  /// In code of the longest stage's units, unit j past the shortest
  /// stage's runs only where this rank's stage has more than j units: on
  /// no rows elsewhere (a slice of none: its projections, attention and
  /// cache writes do nothing), its output then the rows it was given (its
  /// none written over them).
  /// `output`, the code's last unit's output, becomes what the code's
  /// units give.
  LogicalResult runOwnUnits(func::FuncOp forward, ArrayRef<int64_t> counts,
                            int64_t unitLayers, const Levels &levels,
                            ArrayRef<StageMatcher> matchers, Value &output) {
    int64_t shortest = *llvm::min_element(counts);
    int64_t longest = *llvm::max_element(counts);
    Block &body = forward.getBody().front();
    OpBuilder builder = OpBuilder::atBlockBegin(&body);
    Location loc = forward.getLoc();
    Value own = PipelineStageLayersOp::create(
        builder, loc,
        builder.getDenseI64ArrayAttr(llvm::to_vector(llvm::map_range(
            counts, [&](int64_t count) { return count * unitLayers; }))));
    Value input = matchers[shortest - 1].input;
    auto type = cast<RankedTensorType>(input.getType());
    if (!type.isDynamicDim(0))
      return forward.emitError("pipeline stages of unequal layers pass rows "
                               "of any number between layers; these have ")
             << type.getDimSize(0);
    for (int64_t unit = shortest; unit < longest; ++unit) {
      Value unitOutput = matchers[unit].input;
      auto inUnit = [&](OpOperand &use) {
        Operation *top = body.findAncestorOpInBlock(*use.getOwner());
        if (!top || !levels.contains(top))
          return false;
        int64_t at = levels.of(top);
        return at >= unit * unitLayers && at < (unit + 1) * unitLayers;
      };
      builder.setInsertionPointAfterValue(input);
      Value runs = arith::CmpIOp::create(
          builder, loc, arith::CmpIPredicate::ugt, own,
          arith::ConstantIndexOp::create(builder, loc, unit * unitLayers));
      Value zero = arith::ConstantIndexOp::create(builder, loc, 0);
      SmallVector<OpFoldResult> offsets(type.getRank(),
                                        builder.getIndexAttr(0));
      SmallVector<OpFoldResult> strides(type.getRank(),
                                        builder.getIndexAttr(1));
      SmallVector<OpFoldResult> sizes =
          tensor::getMixedSizes(builder, loc, input);
      Value rows = getValueOrCreateConstantIndexOp(builder, loc, sizes[0]);
      sizes[0] =
          arith::SelectOp::create(builder, loc, runs, rows, zero).getResult();
      Value given = tensor::ExtractSliceOp::create(builder, loc, type, input,
                                                   offsets, sizes, strides);
      input.replaceUsesWithIf(given, inUnit);
      // The unit's rows over the first `kept` of its input's: all of
      // them, or none. (An arith.select of the two tensors would do, but
      // it leaves buffers the arena cannot plan: every layer's then came
      // from malloc, and a stage's prefill took twice as long.)
      builder.setInsertionPointAfterValue(unitOutput);
      auto passed = tensor::InsertSliceOp::create(
          builder, loc, unitOutput, input, offsets, sizes, strides);
      unitOutput.replaceUsesWithIf(passed, [&](OpOperand &use) {
        return use.getOwner() != passed && !inUnit(use);
      });
      input = passed;
    }
    output = input;
    return success();
  }

  /// Each rank's weights in the code's places (the first `longest` units'
  /// layers); the later units' declarations go. Group g runs stage (g + P -
  /// 1) mod P, whose units start after the stages before it; a place past
  /// its stage's units holds one of its own units' (never read). A place
  /// holds what the code's weight is declared as: a stage whose weight is
  /// stored otherwise (a GGUF file's Q6_K where the first stage has Q4_K)
  /// is refused.
  LogicalResult recordWeightSources(ModuleOp module,
                                    ArrayRef<StageMatcher> matchers,
                                    ArrayRef<int64_t> counts) {
    MLIRContext *context = module.getContext();
    SymbolTable symbols(module);
    int64_t stages = counts.size(), longest = *llvm::max_element(counts);
    SmallVector<int64_t> starts = {0};
    for (int64_t count : counts)
      starts.push_back(starts.back() + count);
    // Unit `unit`'s weight in the place of the first unit's `name`.
    auto inUnit = [&](StringRef name, int64_t unit) {
      return unit == 0 ? name : matchers[unit - 1].weights.lookup(name);
    };
    SmallVector<NamedAttribute> sources;
    for (const auto &entry : matchers[0].weights) {
      StringRef first = entry.getKey();
      for (int64_t unit = 0; unit < longest; ++unit) {
        StringRef place = inUnit(first, unit);
        auto decl = symbols.lookup<WeightDeclOp>(place);
        if (!decl)
          continue;
        SmallVector<Attribute> ranks;
        for (int64_t group = 0; group < stages; ++group) {
          int64_t stage = (group + stages - 1) % stages;
          int64_t own = starts[stage] + unit % counts[stage];
          StringRef source = inUnit(first, own);
          auto sourceDecl = symbols.lookup<WeightDeclOp>(source);
          if (!sourceDecl || !sameStorage(decl, sourceDecl))
            return decl.emitOpError("is stored otherwise than '")
                   << source << "', which a later pipeline stage holds in "
                   << "its place: not split into pipeline stages";
          ranks.append(this->ranks, StringAttr::get(context, source));
        }
        sources.emplace_back(decl.getSymNameAttr(),
                             ArrayAttr::get(context, ranks));
      }
    }
    module->setAttr(kRankWeightSourcesAttrName,
                    DictionaryAttr::get(context, sources));
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
