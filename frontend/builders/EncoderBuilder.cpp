//===- EncoderBuilder.cpp - an EncoderSpec as tfm IR --------------------===//
//
// The module of an encoder: `@encode` follows transformers' BertModel:
// embeddings (word + token type + position, LayerNorm, an optional
// projection), then per layer
//   x = LayerNorm(x + Wo·attention(Wq·x, Wk·x, Wv·x))
//   x = LayerNorm(x + W2·act(W1·x))
// with biases everywhere and bidirectional attention; then the head the
// spec names (@fill_mask, @classify, @classify_tokens) or the pooling of a
// sentence embedder (@embed). A base model with a pooler also gets @pool,
// BertModel's pooler_output.
//
//===----------------------------------------------------------------------===//

#include "frontend/builders/EncoderBuilder.h"
#include "frontend/builders/DecoderSpec.h"
#include "frontend/builders/ModelIRBuilder.h"
#include "frontend/formats/ErrorMessages.h"
#include "ir/TfmOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;

namespace {

class EncoderIRBuilder : public ModelIRBuilder {
public:
  EncoderIRBuilder(MLIRContext &context, const EncoderSpec &spec,
                   const WeightStore &weights, llvm::StringRef checkpoint)
      : ModelIRBuilder(context, weights, checkpoint, spec.family),
        spec(spec) {}

  OwningOpRef<ModuleOp> build();

private:
  Value norm(Value x, const std::string &name, int64_t d = 0) {
    return declarations.biasedLayerNorm(b, x, name, d ? d : spec.hiddenSize,
                                        spec.normEpsilon);
  }
  Value layer(Value x, int64_t index, Value global);
  /// Longformer's attention of layer `index` (tfm.sparse_attention).
  Value sparseAttention(Value x, Value q, Value k, Value v, int64_t index,
                        Value global);
  /// Whether the entry points take a global_attention mask (Longformer,
  /// but for a sequence classifier, whose first token is global).
  bool takesGlobalMask() const {
    return spec.sparse && spec.sparse->globalPrefix == 0;
  }
  Value wordTable() {
    return weight(spec.wordEmbeddings, {spec.vocabSize, spec.embeddingWidth()});
  }
  func::FuncOp beginFunction(llvm::StringRef name, Type result,
                             OutputRole role);
  /// Embeddings and every layer: the last hidden states.
  Value encodeTokens(Block *entry);

  const EncoderSpec &spec;
};

Value EncoderIRBuilder::sparseAttention(Value x, Value q, Value k, Value v,
                                        int64_t index, Value global) {
  const EncoderSpec::SparseAttention &sparse = *spec.sparse;
  auto name = [&](const std::string &pattern) {
    return layerWeightName(pattern, index);
  };
  int64_t heads = spec.numHeads, headDim = spec.headDim();
  // transformers computes the global projections of global tokens (query)
  // and of all of them (keys, values); the query's rows of the others are
  // never read.
  Value gq = linear(x, name(sparse.globalQuery), {heads, headDim});
  Value gk = linear(x, name(sparse.globalKey), {heads, headDim});
  Value gv = linear(x, name(sparse.globalValue), {heads, headDim});
  return SparseAttentionOp::create(
      b, named("layer " + llvm::Twine(index) + " sparse attention"),
      q.getType(), q, k, v, gq, gk, gv, global,
      b.getI64IntegerAttr(sparse.windows[index]),
      b.getF32FloatAttr(1.0 / std::sqrt(double(headDim))),
      b.getI64IntegerAttr(sparse.globalPrefix));
}

Value EncoderIRBuilder::layer(Value x, int64_t index, Value global) {
  auto name = [&](const std::string &pattern) {
    return layerWeightName(pattern, index);
  };
  int64_t heads = spec.numHeads, headDim = spec.headDim(),
          d = spec.hiddenSize;
  Value q = linear(x, name(spec.query), {heads, headDim});
  Value k = linear(x, name(spec.key), {heads, headDim});
  Value v = linear(x, name(spec.value), {heads, headDim});
  // Bidirectional: no causal mask; every token sees every token (but in
  // Longformer, whose tokens see a window and the global ones).
  Value attended =
      spec.sparse ? sparseAttention(x, q, k, v, index, global)
                  : attend(named("layer " + llvm::Twine(index) + " attention"),
                           q, k, v, /*causal=*/false);
  Value projected = linear(attended, name(spec.attentionOutput), {d});
  x = norm(AddOp::create(b, x.getLoc(), x, projected),
           name(spec.attentionNorm));
  Value hidden = linear(x, name(spec.intermediate), {spec.intermediateSize},
                        spec.activation);
  Value out = linear(hidden, name(spec.output), {d});
  return norm(AddOp::create(b, x.getLoc(), x, out), name(spec.outputNorm));
}

/// A public entry point `name` taking the token ids (and token types, and
/// Longformer's global attention mask) and returning `result` in `role`;
/// the builder is left in its body.
func::FuncOp EncoderIRBuilder::beginFunction(llvm::StringRef name,
                                             Type result, OutputRole role) {
  auto ids = RankedTensorType::get({ShapedType::kDynamic}, b.getI32Type());
  bool types = !spec.typeEmbeddings.empty();
  SmallVector<Type> inputs = {ids};
  if (types)
    inputs.push_back(ids);
  if (takesGlobalMask())
    inputs.push_back(ids);
  auto function = func::FuncOp::create(b, named(name), name,
                                       b.getFunctionType(inputs, {result}));
  MLIRContext *ctx = b.getContext();
  function.setArgAttr(0, kInputArgAttrName,
                      InputRoleAttr::get(ctx, InputRole::token_ids));
  if (types)
    function.setArgAttr(1, kInputArgAttrName,
                        InputRoleAttr::get(ctx, InputRole::token_type_ids));
  if (takesGlobalMask())
    function.setArgAttr(inputs.size() - 1, kInputArgAttrName,
                        InputRoleAttr::get(ctx, InputRole::global_attention));
  function.setResultAttr(0, kOutputResultAttrName,
                         OutputRoleAttr::get(ctx, role));
  b.setInsertionPointToStart(function.addEntryBlock());
  return function;
}

Value EncoderIRBuilder::encodeTokens(Block *entry) {
  Value tokens = entry->getArgument(0);
  int64_t e = spec.embeddingWidth();
  Location loc = named("embeddings");
  Value x = EmbeddingOp::create(b, loc, rows({e}), wordTable(), tokens,
                                /*scale=*/FloatAttr());
  if (!spec.typeEmbeddings.empty())
    x = AddOp::create(
        b, loc, x,
        EmbeddingOp::create(
            b, loc, rows({e}),
            weight(spec.typeEmbeddings, {spec.typeVocabSize, e}),
            entry->getArgument(1), FloatAttr()));
  IntegerAttr padding = spec.positionPaddingId >= 0
                            ? b.getI64IntegerAttr(spec.positionPaddingId)
                            : IntegerAttr();
  Value positionIds = PositionIdsOp::create(b, loc, tokens.getType(), tokens,
                                            /*offset=*/Value(),
                                            /*lengths=*/Value(), padding);
  Value positions = EmbeddingOp::create(
      b, loc, rows({e}),
      weight(spec.positionEmbeddings, {spec.maxPositions, e}), positionIds,
      FloatAttr());
  x = norm(AddOp::create(b, loc, x, positions), spec.embeddingNorm, e);
  if (!spec.embeddingProjection.empty())
    x = linear(x, spec.embeddingProjection, {spec.hiddenSize});
  Value global = takesGlobalMask()
                     ? entry->getArgument(entry->getNumArguments() - 1)
                     : Value();
  for (int64_t i = 0; i < spec.numLayers; ++i)
    x = layer(x, i, global);
  return x;
}

OwningOpRef<ModuleOp> EncoderIRBuilder::build() {
  OwningOpRef<ModuleOp> module = ModuleOp::create(named(spec.family));
  b.setInsertionPointToEnd(module->getBody());
  int64_t d = spec.hiddenSize;
  // An embedder returns the pooled vector, a masked LM logits, an encoder
  // the hidden states.
  const std::optional<EncoderSpec::ClassifierHead> &classifier =
      spec.classifier;
  llvm::StringRef name = spec.pooling     ? "embed"
                         : spec.maskedLm ? "fill_mask"
                         : classifier    ? (classifier->perToken ? "classify_tokens"
                                                                 : "classify")
                                         : "encode";
  auto vector = [&](int64_t n) {
    return RankedTensorType::get({n}, b.getF32Type());
  };
  Type result = spec.pooling    ? Type(vector(d))
                : spec.maskedLm ? Type(rows({spec.vocabSize}))
                : classifier    ? (classifier->perToken
                                       ? Type(rows({classifier->labels}))
                                       : Type(vector(classifier->labels)))
                                : Type(rows({d}));
  MLIRContext *ctx = b.getContext();
  func::FuncOp function = beginFunction(
      name, result,
      spec.pooling                     ? OutputRole::embedding
      : spec.maskedLm || classifier ? OutputRole::logits
                                      : OutputRole::hidden_states);
  Value x = encodeTokens(&function.front());
  if (const std::optional<EncoderSpec::MaskedLmHead> &head = spec.maskedLm) {
    int64_t width = head->width ? head->width : d;
    x = norm(linear(x, head->dense, {width}, head->activation), head->norm,
             width);
    Value decoder = head->decoder.empty()
                        ? wordTable()
                        : weight(head->decoder, {spec.vocabSize, width});
    x = LinearOp::create(b, named("masked lm head"), rows({spec.vocabSize}), x,
                         decoder, weight(head->bias, {spec.vocabSize}),
                         ActivationKindAttr(), UnitAttr());
  }
  if (classifier) {
    // Position-wise, so the sequence head runs on every state and keeps the
    // first row's: the same as heading the first state alone.
    Location at = named("classifier");
    if (!classifier->dense.empty())
      x = linear(x, classifier->dense, {d}, classifier->activation);
    x = linear(x, classifier->output, {classifier->labels});
    if (!classifier->perToken)
      x = PoolOp::create(b, at, result,
                         PoolingKindAttr::get(ctx, PoolingKind::cls), x,
                         /*lengths=*/Value(), UnitAttr());
  }
  if (spec.pooling)
    x = PoolOp::create(b, named("pooling"), result,
                       PoolingKindAttr::get(ctx, *spec.pooling), x,
                       /*lengths=*/Value(),
                       spec.normalize ? b.getUnitAttr() : UnitAttr());
  func::ReturnOp::create(b, named("return"), x);
  if (!spec.pooler.empty() && name == "encode") {
    // BertModel's pooler_output: dense + tanh on the first token's state
    // (position-wise, so on every state, keeping the first).
    b.setInsertionPointToEnd(module->getBody());
    func::FuncOp pool = beginFunction("pool", vector(d), OutputRole::embedding);
    Value states = linear(encodeTokens(&pool.front()), spec.pooler, {d},
                          ActivationKind::tanh);
    Value pooled = PoolOp::create(b, named("pooler"), vector(d),
                                  PoolingKindAttr::get(ctx, PoolingKind::cls),
                                  states, /*lengths=*/Value(), UnitAttr());
    func::ReturnOp::create(b, named("return"), pooled);
  }
  return module;
}


} // namespace

llvm::Expected<OwningOpRef<ModuleOp>> mlir::tfm::buildEncoder(
    MLIRContext &context, const EncoderSpec &spec, const WeightStore &weights,
    llvm::StringRef checkpoint,
    llvm::function_ref<bool(llvm::StringRef)> isIgnoredWeight) {
  context.loadDialect<TfmDialect, func::FuncDialect, arith::ArithDialect>();
  EncoderIRBuilder builder(context, spec, weights, checkpoint);
  return builder.declarations.finish(builder.build(), isIgnoredWeight);
}
