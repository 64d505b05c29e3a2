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
// MBartForConditionalGeneration and WhisperForConditionalGeneration are
// the same with pre-norm blocks, x = x + f(LayerNorm(x)), and a final
// LayerNorm per stack; Whisper's source is log-mel features through two
// conv1d + GELU stems (tfm.windows + tfm.linear) plus its stored position
// table, its k_proj has no bias and its head is the decoder's token table
// without a bias. T5 has its own builder (T5Builder.cpp).
//
//===----------------------------------------------------------------------===//

#include "frontend/builders/Seq2SeqBuilder.h"
#include "frontend/builders/ModelIRBuilder.h"
#include "ir/TfmOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

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
    return weight(spec.tokenTable(), {spec.vocabSize, spec.hiddenSize});
  }
  /// Token embeddings (scaled) plus the positions 0, 1, ... of `ids`.
  Value embed(Value ids, llvm::StringRef side);
  /// Whisper's encoder input: two conv1d + GELU stems over the log-mel
  /// features, plus the stored position table.
  Value embedSpeech(Value features);
  /// Post-norm (Marian, BART): x = norm(x + f(x)); pre-norm (Whisper):
  /// x = x + f(norm(x)).
  Value sublayer(Value x, const std::string &normName,
                 llvm::function_ref<Value(Value)> body) {
    if (spec.preNorm)
      return add(x, body(norm(x, normName)));
    return norm(add(x, body(x)), normName);
  }
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

Value Seq2SeqIRBuilder::embedSpeech(Value features) {
  Location loc = named("encoder convolutions");
  int64_t d = spec.hiddenSize, frames = 2 * spec.sourcePositions;
  // A kernel-3, padding-1 convolution of `length` positions + GELU.
  auto conv = [&](Value x, const std::string &name, int64_t channels,
                  int64_t length, int64_t stride, bool channelsFirst) {
    int64_t out = (length + 2 - 3) / stride + 1;
    auto windowsType =
        RankedTensorType::get({out, channels * 3}, b.getF32Type());
    Value windows = WindowsOp::create(
        b, loc, windowsType, x, b.getI64IntegerAttr(3),
        b.getI64IntegerAttr(stride), b.getI64IntegerAttr(1),
        channelsFirst ? b.getUnitAttr() : UnitAttr());
    return LinearOp::create(
        b, loc, RankedTensorType::get({out, d}, b.getF32Type()), windows,
        declarations.readAs(b, prefix + "encoder." + name + ".weight",
                            {d, channels, 3}, {d, channels * 3}),
        weight(prefix + "encoder." + name + ".bias", {d}),
        ActivationKindAttr::get(b.getContext(), ActivationKind::gelu),
        UnitAttr()).getResult();
  };
  Value x = conv(features, "conv1", spec.melBins, frames, 1,
                 /*channelsFirst=*/true);
  x = conv(x, "conv2", d, frames, 2, /*channelsFirst=*/false);
  x = add(x, weight(spec.storedPositionTable("encoder"),
                    {spec.sourcePositions, d}));
  // The blocks take rows of any count.
  return tensor::CastOp::create(b, loc, rows({d}), x);
}

Value Seq2SeqIRBuilder::attention(Value queries, Value keys,
                                  const std::string &module, int64_t heads,
                                  bool causal) {
  int64_t headDim = spec.hiddenSize / heads;
  Value q = linear(queries, module + "q_proj.weight", {heads, headDim});
  Value k = spec.keyBias
                ? linear(keys, module + "k_proj.weight", {heads, headDim})
                : declarations.unbiasedLinear(b, keys, module + "k_proj.weight",
                                              {heads, headDim});
  Value v = linear(keys, module + "v_proj.weight", {heads, headDim});
  Value attended = attend(named(module + "attention"), q, k, v, causal);
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
  x = sublayer(x, layer + "self_attn_layer_norm.weight", [&](Value h) {
    return attention(h, h, layer + "self_attn.", spec.encoderHeads,
                     /*causal=*/false);
  });
  return sublayer(x, layer + "final_layer_norm.weight", [&](Value h) {
    return feedForward(h, layer, spec.encoderFfn);
  });
}

Value Seq2SeqIRBuilder::decoderLayer(Value x, Value memory, int64_t index) {
  std::string layer =
      prefix + "decoder.layers." + std::to_string(index) + ".";
  x = sublayer(x, layer + "self_attn_layer_norm.weight", [&](Value h) {
    return attention(h, h, layer + "self_attn.", spec.decoderHeads,
                     /*causal=*/true);
  });
  x = sublayer(x, layer + "encoder_attn_layer_norm.weight", [&](Value h) {
    return attention(h, memory, layer + "encoder_attn.", spec.decoderHeads,
                     /*causal=*/false);
  });
  return sublayer(x, layer + "final_layer_norm.weight", [&](Value h) {
    return feedForward(h, layer, spec.decoderFfn);
  });
}

OwningOpRef<ModuleOp> Seq2SeqIRBuilder::build() {
  OwningOpRef<ModuleOp> module = ModuleOp::create(named(spec.family));
  MLIRContext *ctx = b.getContext();
  b.setInsertionPointToEnd(module->getBody());
  auto ids = RankedTensorType::get({ShapedType::kDynamic}, b.getI32Type());
  // Whisper's source: log-mel features [mel bins, frames] of 30 s.
  Type source = spec.speech()
                    ? Type(RankedTensorType::get(
                          {spec.melBins, 2 * spec.sourcePositions},
                          b.getF32Type()))
                    : Type(ids);
  auto function = func::FuncOp::create(
      b, named("forward"), "forward",
      b.getFunctionType({source, ids}, {rows({spec.vocabSize})}));
  function.setArgAttr(0, kInputArgAttrName,
                      InputRoleAttr::get(ctx, spec.speech()
                                                  ? InputRole::features
                                                  : InputRole::token_ids));
  function.setArgAttr(1, kInputArgAttrName,
                      InputRoleAttr::get(ctx, InputRole::decoder_token_ids));
  function.setResultAttr(0, kOutputResultAttrName,
                         OutputRoleAttr::get(ctx, OutputRole::logits));
  Block *entry = function.addEntryBlock();
  b.setInsertionPointToStart(entry);

  Value memory = spec.speech() ? embedSpeech(entry->getArgument(0))
                               : embed(entry->getArgument(0), "encoder");
  for (int64_t i = 0; i < spec.encoderLayers; ++i)
    memory = encoderLayer(memory, i);
  if (spec.preNorm)
    memory = norm(memory, prefix + "encoder.layer_norm.weight");
  // Whisper's encoder output has a fixed length, which sizes the
  // cross-attention cache tfm-kv-cache derives.
  if (spec.speech())
    memory = tensor::CastOp::create(
        b, memory.getLoc(),
        RankedTensorType::get({spec.sourcePositions, spec.hiddenSize},
                              b.getF32Type()),
        memory);
  Value x = embed(entry->getArgument(1), "decoder");
  for (int64_t i = 0; i < spec.decoderLayers; ++i)
    x = decoderLayer(x, memory, i);
  if (spec.preNorm)
    x = norm(x, prefix + "decoder.layer_norm.weight");

  // The LM head: the shared table (or the checkpoint's own lm_head) and
  // final_logits_bias, a [1, vocab] buffer.
  Location at = named("lm head");
  Value head = weights.contains("lm_head.weight")
                   ? declarations.read(b, "lm_head.weight",
                                       {spec.vocabSize, spec.hiddenSize})
                   : sharedTable();
  Value bias = spec.speech() ? Value()
                             : declarations.readAs(b, "final_logits_bias",
                                                   {1, spec.vocabSize},
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
  context.loadDialect<TfmDialect, func::FuncDialect, arith::ArithDialect,
                      tensor::TensorDialect>();
  Seq2SeqIRBuilder builder(context, spec, weights, checkpoint);
  return builder.declarations.finish(builder.build(), isIgnoredWeight);
}
