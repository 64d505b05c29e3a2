//===- AlignmentEntry.cpp - Whisper's @align from @forward --------------===//
//
// Word timestamps follow where the decoder looks in the audio: the
// cross-attention probabilities of a few heads (generation_config.json's
// alignment_heads), which transformers collects with output_attentions
// and OpenAI's find_alignment with hooks. tfm-kv-cache derives
//   @align(tokens, cross cache, encoded length)
//       -> [tokens, alignment heads, source positions]
// from @forward: the decoder teacher-forced over the tokens from position
// 0 (a causal decoder gives each row the weights it had while generating),
// its cross-attention keys read from the cache @encode filled, and the
// listed heads' probabilities (tfm.attention_weights) in place of the
// logits; the layers after the last listed one are dead and pruned. A
// layer's listed heads are one op; each head's weights go to its place in
// the list, so that the runtime sums them in transformers' order.
//
//===----------------------------------------------------------------------===//

#include "passes/CachePlan.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <map>

using namespace mlir;
using namespace mlir::tfm;

LogicalResult mlir::tfm::buildAlign(func::FuncOp forward, const CachePlan &plan,
                                    int64_t capacity,
                                    ArrayRef<int32_t> alignmentHeads) {
  MLIRContext *ctx = forward.getContext();
  Location loc = forward.getLoc();
  if (alignmentHeads.empty() || alignmentHeads.size() % 2 != 0)
    return forward.emitOpError(
        "tfm-kv-cache: alignment heads should be [layer, head] pairs");
  // The listed heads of each layer, in layer order, and where each is
  // listed.
  std::map<int64_t, SmallVector<int64_t>> headsOf, placesOf;
  for (size_t i = 0; i < alignmentHeads.size(); i += 2) {
    int64_t layer = alignmentHeads[i], head = alignmentHeads[i + 1];
    if (layer < 0 || layer >= int64_t(plan.crossLayers.size()))
      return forward.emitOpError()
             << "tfm-kv-cache: alignment head [" << layer << ", " << head
             << "] names a layer outside the decoder's "
             << plan.crossLayers.size() << " cross-attention layers";
    int64_t heads =
        AttentionOp(plan.crossLayers[layer]).getQuery().getType().getDimSize(1);
    if (head < 0 || head >= heads)
      return forward.emitOpError()
             << "tfm-kv-cache: alignment head [" << layer << ", " << head
             << "] names a head outside the layer's " << heads;
    headsOf[layer].push_back(head);
    placesOf[layer].push_back(int64_t(i / 2));
  }

  IRMapping mapping;
  auto align = cast<func::FuncOp>(forward->clone(mapping));
  align.setName("align");
  forward->getBlock()->getOperations().insertAfter(forward->getIterator(),
                                                   align);
  readCrossCache(align, mapping, plan, capacity);
  Block &entry = align.front();
  Value tokens = entry.getArgument(plan.tokensArg);
  auto ret = cast<func::ReturnOp>(entry.getTerminator());
  OpBuilder b(ret);
  int64_t total = int64_t(alignmentHeads.size() / 2);
  // Whisper's source positions are static (1500); a text source's are
  // the encoded length the cache read gives.
  int64_t sourceRows = plan.crossKeyType.getDimSize(0);
  auto type = RankedTensorType::get({ShapedType::kDynamic, total, sourceRows},
                                    b.getF32Type());
  auto crossOf = [&](int64_t layer) {
    return cast<AttentionOp>(
        mapping.lookup(AttentionOp(plan.crossLayers[layer]).getOperation()));
  };
  Value rows = tensor::DimOp::create(b, loc, tokens, 0);
  SmallVector<Value> dynamicSizes = {rows};
  OpFoldResult keyRows = b.getIndexAttr(sourceRows);
  if (ShapedType::isDynamic(sourceRows)) {
    Value length = tensor::DimOp::create(
        b, loc, crossOf(headsOf.begin()->first).getKey(), 0);
    dynamicSizes.push_back(length);
    keyRows = length;
  }
  Value weights = tensor::EmptyOp::create(b, loc, type, dynamicSizes);
  SmallVector<OpFoldResult> strides(3, b.getIndexAttr(1));
  for (const auto &[layer, heads] : headsOf) {
    AttentionOp attention = crossOf(layer);
    auto own = RankedTensorType::get(
        {ShapedType::kDynamic, int64_t(heads.size()), sourceRows},
        b.getF32Type());
    Value probabilities = AttentionWeightsOp::create(
        b, attention.getLoc(), own, attention.getQuery(), attention.getKey(),
        b.getDenseI64ArrayAttr(heads), attention.getScaleAttr());
    SmallVector<OpFoldResult> sizes = {OpFoldResult(rows), b.getIndexAttr(1),
                                       keyRows};
    for (auto [k, place] : llvm::enumerate(placesOf[layer])) {
      Value head = tensor::ExtractSliceOp::create(
          b, loc, probabilities,
          {b.getIndexAttr(0), b.getIndexAttr(int64_t(k)), b.getIndexAttr(0)},
          sizes, strides);
      weights = tensor::InsertSliceOp::create(
          b, loc, head, weights,
          {b.getIndexAttr(0), b.getIndexAttr(place), b.getIndexAttr(0)}, sizes,
          strides);
    }
  }
  ret->setOperands(weights);
  align.setType(FunctionType::get(ctx, entry.getArgumentTypes(), {type}));
  // The logits, the layers after the last listed one and the encoder are
  // dead now; the source argument goes.
  pruneDeadCode(align, plan.sourceArg);
  align.setArgAttr(0, kInputArgAttrName,
                   InputRoleAttr::get(ctx, InputRole::token_ids));
  align.setArgAttr(1, kCacheArgAttrName,
                   CacheAttr::get(ctx, CacheKind::cross_attention, 0));
  align.setArgAttr(2, kInputArgAttrName,
                   InputRoleAttr::get(ctx, InputRole::encoded_length));
  align.setResultAttr(0, kOutputResultAttrName,
                      OutputRoleAttr::get(ctx, OutputRole::alignment_weights));
  return success();
}
