//===- Seq2SeqBuilder.cpp - a Seq2SeqSpec as tfm IR ---------------------===//
//
// The module of an encoder-decoder, as transformers' MarianMTModel and
// BartForConditionalGeneration compute it: `@forward(source ids, decoder
// ids) -> logits [decoder tokens, vocab]`. The encoder embeds the source
// (scaled token embeddings + sinusoidal or learned positions, BART's
// LayerNorm on them) and runs post-norm blocks
//   x = LayerNorm(x + Wo·attention(Wq·x, Wk·x, Wv·x))
//   x = LayerNorm(x + W2·act(W1·x))
// with bidirectional attention; the decoder embeds its ids alike and runs
// blocks with causal self-attention, then cross-attention to the encoder's
// output (queries from the decoder, keys and values from the encoder), then
// the FFN, each followed by its LayerNorm; the LM head is the shared
// embedding table plus final_logits_bias. tfm-kv-cache is what derives the
// cached entry points from this whole-sequence definition.
//
//===----------------------------------------------------------------------===//

#include "frontend/Seq2SeqFamilies.h"
#include "frontend/ModelIRBuilder.h"
#include "ir/TfmOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

class Seq2SeqIRBuilder : public ModelIRBuilder {
public:
  Seq2SeqIRBuilder(MLIRContext &context, const Seq2SeqSpec &spec,
                   const WeightStore &weights, llvm::StringRef checkpoint)
      : ModelIRBuilder(context, weights, checkpoint, spec.family),
        spec(spec), weights(weights), prefix(spec.prefix) {}

  OwningOpRef<ModuleOp> build();

private:
  Value norm(Value x, const std::string &name) {
    return declarations.biasedLayerNorm(b, x, name, spec.hiddenSize,
                                        spec.normEpsilon);
  }
  Value add(Value x, Value y) { return AddOp::create(b, x.getLoc(), x, y); }
  Value sharedTable() {
    return weight(prefix + "shared.weight", {spec.vocabSize, spec.hiddenSize});
  }
  /// Token embeddings (scaled) plus the positions 0, 1, ... of `ids`.
  Value embed(Value ids, llvm::StringRef side);
  /// Wo·attention(Wq·queries, Wk·keys, Wv·keys) with the projections under
  /// `module` ("...self_attn.", "...encoder_attn.").
  Value attention(Value queries, Value keys, const std::string &module,
                  int64_t heads, bool causal);
  Value feedForward(Value x, const std::string &layer, int64_t ffn);
  Value encoderLayer(Value x, int64_t index);
  Value decoderLayer(Value x, Value memory, int64_t index);

  const Seq2SeqSpec &spec;
  const WeightStore &weights;
  const std::string &prefix; // spec.prefix
};

Value Seq2SeqIRBuilder::embed(Value ids, llvm::StringRef side) {
  Location loc = named(side + " embeddings");
  double scale = spec.embeddingScale();
  Value x = EmbeddingOp::create(
      b, loc, rows({spec.hiddenSize}), sharedTable(), ids,
      scale == 1.0 ? FloatAttr() : b.getF32FloatAttr(scale));
  Value positions =
      PositionIdsOp::create(b, loc, ids.getType(), ids, /*offset=*/Value(),
                            /*lengths=*/Value(), /*padding_id=*/IntegerAttr());
  Value encoded =
      spec.sinusoidalPositions
          ? SinusoidalPositionOp::create(
                b, loc, rows({spec.hiddenSize}),
                SinusoidLayoutAttr::get(b.getContext(), SinusoidLayout::concat),
                positions, b.getF32FloatAttr(10000.0f))
                .getResult()
          : EmbeddingOp::create(
                b, loc, rows({spec.hiddenSize}),
                declarations.read(b, spec.positionTable(side.str()),
                                  {spec.maxPositions, spec.hiddenSize}),
                positions, FloatAttr())
                .getResult();
  x = add(x, encoded);
  if (spec.embeddingNorm)
    x = norm(x, prefix + side.str() + ".layernorm_embedding.weight");
  return x;
}

Value Seq2SeqIRBuilder::attention(Value queries, Value keys,
                                  const std::string &module, int64_t heads,
                                  bool causal) {
  int64_t headDim = spec.hiddenSize / heads;
  Value q = linear(queries, module + "q_proj.weight", {heads, headDim});
  Value k = linear(keys, module + "k_proj.weight", {heads, headDim});
  Value v = linear(keys, module + "v_proj.weight", {heads, headDim});
  Value attended = AttentionOp::create(
      b, named(module + "attention"), q.getType(), q, k, v, /*bias=*/Value(),
      /*lengths=*/Value(), /*relative_bias=*/Value(),
      b.getF32FloatAttr(1.0 / std::sqrt(double(headDim))),
      causal ? b.getUnitAttr() : UnitAttr(), /*window=*/IntegerAttr(),
      /*max_distance=*/IntegerAttr());
  return linear(attended, module + "out_proj.weight", {spec.hiddenSize});
}

Value Seq2SeqIRBuilder::feedForward(Value x, const std::string &layer,
                                    int64_t ffn) {
  Value hidden = linear(x, layer + "fc1.weight", {ffn}, spec.activation);
  return linear(hidden, layer + "fc2.weight", {spec.hiddenSize});
}

Value Seq2SeqIRBuilder::encoderLayer(Value x, int64_t index) {
  std::string layer =
      prefix + "encoder.layers." + std::to_string(index) + ".";
  x = norm(add(x, attention(x, x, layer + "self_attn.", spec.encoderHeads,
                            /*causal=*/false)),
           layer + "self_attn_layer_norm.weight");
  return norm(add(x, feedForward(x, layer, spec.encoderFfn)),
              layer + "final_layer_norm.weight");
}

Value Seq2SeqIRBuilder::decoderLayer(Value x, Value memory, int64_t index) {
  std::string layer =
      prefix + "decoder.layers." + std::to_string(index) + ".";
  x = norm(add(x, attention(x, x, layer + "self_attn.", spec.decoderHeads,
                            /*causal=*/true)),
           layer + "self_attn_layer_norm.weight");
  x = norm(add(x, attention(x, memory, layer + "encoder_attn.",
                            spec.decoderHeads, /*causal=*/false)),
           layer + "encoder_attn_layer_norm.weight");
  return norm(add(x, feedForward(x, layer, spec.decoderFfn)),
              layer + "final_layer_norm.weight");
}

OwningOpRef<ModuleOp> Seq2SeqIRBuilder::build() {
  OwningOpRef<ModuleOp> module = ModuleOp::create(named(spec.family));
  MLIRContext *ctx = b.getContext();
  b.setInsertionPointToEnd(module->getBody());
  auto ids = RankedTensorType::get({ShapedType::kDynamic}, b.getI32Type());
  auto function = func::FuncOp::create(
      b, named("forward"), "forward",
      b.getFunctionType({ids, ids}, {rows({spec.vocabSize})}));
  function.setArgAttr(0, kInputArgAttrName,
                      InputRoleAttr::get(ctx, InputRole::token_ids));
  function.setArgAttr(1, kInputArgAttrName,
                      InputRoleAttr::get(ctx, InputRole::decoder_token_ids));
  function.setResultAttr(0, kOutputResultAttrName,
                         OutputRoleAttr::get(ctx, OutputRole::logits));
  Block *entry = function.addEntryBlock();
  b.setInsertionPointToStart(entry);

  Value memory = embed(entry->getArgument(0), "encoder");
  for (int64_t i = 0; i < spec.encoderLayers; ++i)
    memory = encoderLayer(memory, i);
  Value x = embed(entry->getArgument(1), "decoder");
  for (int64_t i = 0; i < spec.decoderLayers; ++i)
    x = decoderLayer(x, memory, i);

  // The LM head: the shared table (or the checkpoint's own lm_head) and
  // final_logits_bias, a [1, vocab] buffer.
  Location at = named("lm head");
  Value head = weights.contains("lm_head.weight")
                   ? declarations.read(b, "lm_head.weight",
                                       {spec.vocabSize, spec.hiddenSize})
                   : sharedTable();
  Value bias = declarations.readAs(b, "final_logits_bias", {1, spec.vocabSize},
                                   {spec.vocabSize});
  Value logits = LinearOp::create(b, at, rows({spec.vocabSize}), x, head, bias,
                                  ActivationKindAttr(), UnitAttr());
  func::ReturnOp::create(b, at, logits);
  return module;
}

} // namespace

llvm::Expected<OwningOpRef<ModuleOp>> mlir::tfm::buildSeq2Seq(
    MLIRContext &context, const Seq2SeqSpec &spec, const WeightStore &weights,
    llvm::StringRef checkpoint,
    llvm::function_ref<bool(llvm::StringRef)> isIgnoredWeight) {
  if (spec.t5Blocks)
    return buildT5(context, spec, weights, checkpoint, isIgnoredWeight);
  context.loadDialect<TfmDialect, func::FuncDialect, arith::ArithDialect>();
  Seq2SeqIRBuilder builder(context, spec, weights, checkpoint);
  return builder.declarations.finish(builder.build(), isIgnoredWeight);
}
