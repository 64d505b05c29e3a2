//===- PrefillEmbeddings.cpp - @prefill over rows instead of token ids ---===//
//
// A vision-language model's prompt holds positions whose rows are not
// embeddings of token ids but an image's tokens (@encode_image's, LLaVA's
// projected patches). @prefill_embeddings(rows [n, hidden], start, slot,
// cache...) is @prefill with its embedding lookup replaced by `rows`: the
// runtime runs a prompt's text through @prefill and each run of image rows
// through it, the positions counting on through both, as transformers
// splices image features into inputs_embeds. @prefill_batch_embeddings is
// the engine's twin of @prefill_batch. Derived by tfm-kv-cache where the
// module names an image placeholder (tfm.image_token).
//
// Where an image's rows attend to each other both ways
// (tfm.image_rows_bidirectional, Gemma 3), the clone's self-attention is
// not causal: each new row sees every new row of its call (and of its
// sequence's chunk in the batched twin), which the runtime makes one
// image's; a window still hides the keys behind.
//
//===----------------------------------------------------------------------===//

#include "passes/CachePlan.h"

#include "mlir/Dialect/Tensor/IR/Tensor.h"

using namespace mlir;
using namespace mlir::tfm;

LogicalResult mlir::tfm::buildPrefillEmbeddings(func::FuncOp prefill,
                                                const CachePlan &plan) {
  MLIRContext *ctx = prefill.getContext();
  if (plan.sourceArg)
    return prefill.emitOpError(
        "tfm-kv-cache: image tokens (tfm.image_token) in an "
        "encoder-decoder's prompt are not supported");
  auto clone = cast<func::FuncOp>(prefill->clone());
  clone.setName((prefill.getName() + "_embeddings").str());
  prefill->getBlock()->getOperations().insertAfter(prefill->getIterator(),
                                                   clone);
  Block &entry = clone.front();
  Value tokens = entry.getArgument(0);
  EmbeddingOp lookup;
  for (Operation *user : tokens.getUsers())
    if (auto embedding = dyn_cast<EmbeddingOp>(user)) {
      if (lookup)
        return embedding.emitOpError()
               << "tfm-kv-cache: @" << prefill.getName()
               << " looks its tokens up twice; image rows can stand for one "
                  "lookup only";
      lookup = embedding;
    }
  if (!lookup)
    return clone.emitOpError()
           << "tfm-kv-cache: @" << prefill.getName()
           << " has no embedding lookup of its tokens for image rows to "
              "replace";
  auto rowsType = cast<RankedTensorType>(lookup.getType());
  Location loc = clone.getLoc();
  // The rows come first, where the tokens were (erased below).
  (void)clone.insertArgument(0, rowsType, DictionaryAttr(), loc);
  BlockArgument rows = entry.getArgument(0);
  OpBuilder b(ctx);
  b.setInsertionPointToStart(&entry);
  Value count = tensor::DimOp::create(b, loc, rows, 0);
  // What else reads the tokens may read how many there are, never which.
  Value placeholders;
  for (OpOperand &use : llvm::make_early_inc_range(tokens.getUses())) {
    Operation *user = use.getOwner();
    if (user == lookup)
      continue;
    if (auto dim = dyn_cast<tensor::DimOp>(user)) {
      dim.getSourceMutable().assign(rows);
      continue;
    }
    auto positions = dyn_cast<PositionIdsOp>(user);
    if (!positions || positions.getPaddingId())
      return user->emitOpError()
             << "tfm-kv-cache: reads @" << prefill.getName()
             << "'s token ids, which image rows have none of";
    if (!placeholders)
      placeholders = tensor::EmptyOp::create(
          b, loc, ArrayRef<OpFoldResult>{count},
          cast<RankedTensorType>(tokens.getType()).getElementType());
    use.set(placeholders);
  }
  lookup.getResult().replaceAllUsesWith(rows);
  lookup.erase();
  if (prefill->getParentOfType<ModuleOp>()->hasAttr(
          kImageRowsBidirectionalAttrName))
    clone.walk([](AttentionOp attention) {
      if (attention.getCausal())
        attention.removeCausalAttr();
    });
  pruneDeadCode(clone, /*unused=*/1u);
  clone.setArgAttr(0, kInputArgAttrName,
                   InputRoleAttr::get(ctx, InputRole::features));
  return success();
}
