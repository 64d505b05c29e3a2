//===- T5Builder.cpp - a T5 Seq2SeqSpec as tfm IR ------------------------===//
//
// The module of T5 (v1.0 and v1.1), as transformers'
// T5ForConditionalGeneration computes it: `@forward(source ids, decoder
// ids) -> logits [decoder tokens, vocab]`. Both stacks embed their ids
// with the shared table (no positions, no scaling) and run pre-norm blocks
//   x = x + Wo·attention(Wq·n(x), Wk·n(x), Wv·n(x))       n: RMSNorm
//   x = x + Wo·act(Wi·n(x))    or    Wo·(act(Wi0·n(x)) * Wi1·n(x))
// without biases or score scaling; the decoder's blocks put
// cross-attention to the encoder's (final-normed) output between the two.
// Positions enter only as the relative-position bias of self-attention:
// each stack's first layer holds the [buckets, heads] table and every
// layer of the stack reads it (tfm.attention's relative_bias),
// bidirectional in the encoder and causal in the decoder. A tied LM head
// reads the shared table, its input scaled by d_model^-0.5 (folded into
// the final norm's scale by the loader, Seq2SeqSpec::headNormScale).
//
//===----------------------------------------------------------------------===//

#include "frontend/builders/ModelIRBuilder.h"
#include "frontend/builders/Seq2SeqBuilder.h"
#include "ir/TfmOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

class T5IRBuilder : public ModelIRBuilder {
public:
  T5IRBuilder(MLIRContext &context, const Seq2SeqSpec &spec,
              const WeightStore &weights, llvm::StringRef checkpoint)
      : ModelIRBuilder(context, weights, checkpoint, spec.family),
        spec(spec) {}

  OwningOpRef<ModuleOp> build();

private:
  int64_t inner() const { return spec.encoderHeads * spec.headDim; }
  /// x·Wᵀ for the bias-free [out, in] weight `name`, as [rows, shape...].
  Value project(Value x, const std::string &name, ArrayRef<int64_t> shape,
                std::optional<ActivationKind> activation = std::nullopt) {
    return declarations.unbiasedLinear(b, x, name, shape, activation);
  }
  Value norm(Value x, const std::string &name) {
    return RmsNormOp::create(b, x.getLoc(), x.getType(), x,
                             weight(name, {spec.hiddenSize}),
                             b.getF32FloatAttr(spec.normEpsilon));
  }
  Value add(Value x, Value y) { return AddOp::create(b, x.getLoc(), x, y); }
  /// O·attention(Q·queries, K·keys, V·keys) of the T5Attention `module`,
  /// with the stack's relative-position table for self-attention.
  Value attention(Value queries, Value keys, const std::string &module,
                  Value relativeTable, bool causal);
  Value feedForward(Value x, const std::string &module);
  /// The blocks of `stack` ("encoder", or "decoder" with the encoder's
  /// output `memory`) over x, and its final norm (`finalNorm` names the
  /// scale it reads). Self-attention is causal in the decoder.
  Value stack(Value x, const std::string &stack, int64_t layers,
              Value memory, const std::string &finalNorm);

  const Seq2SeqSpec &spec;
};

Value T5IRBuilder::attention(Value queries, Value keys,
                             const std::string &module, Value relativeTable,
                             bool causal) {
  int64_t heads = spec.encoderHeads, headDim = spec.headDim;
  Value q = project(queries, module + "q.weight", {heads, headDim});
  Value k = project(keys, module + "k.weight", {heads, headDim});
  Value v = project(keys, module + "v.weight", {heads, headDim});
  // T5 does not scale its scores (its initialization does).
  AttentionOptions options;
  options.scale = b.getF32FloatAttr(1.0f);
  options.relativeBias = relativeTable;
  if (relativeTable)
    options.maxDistance = b.getI64IntegerAttr(spec.relativeMaxDistance);
  Value attended =
      attend(named(module + "attention"), q, k, v, causal, options);
  return project(attended, module + "o.weight", {spec.hiddenSize});
}

Value T5IRBuilder::feedForward(Value x, const std::string &module) {
  Location loc = named(module + "feed-forward");
  int64_t ffn = spec.encoderFfn;
  Value hidden;
  if (spec.gatedFfn) {
    Value gate = project(x, module + "wi_0.weight", {ffn});
    Value act = ActivationOp::create(b, loc, spec.activation, gate);
    hidden = MulOp::create(b, loc, act, project(x, module + "wi_1.weight", {ffn}));
  } else {
    hidden = project(x, module + "wi.weight", {ffn}, spec.activation);
  }
  return project(hidden, module + "wo.weight", {spec.hiddenSize});
}

Value T5IRBuilder::stack(Value x, const std::string &stack, int64_t layers,
                         Value memory, const std::string &finalNorm) {
  bool decoder = bool(memory);
  Value table = weight(
      stack + ".block.0.layer.0.SelfAttention.relative_attention_bias.weight",
      {spec.relativeBuckets, spec.encoderHeads});
  for (int64_t i = 0; i < layers; ++i) {
    std::string block = stack + ".block." + std::to_string(i) + ".layer.";
    Value normed = norm(x, block + "0.layer_norm.weight");
    x = add(x, attention(normed, normed, block + "0.SelfAttention.", table,
                         /*causal=*/decoder));
    std::string next = block + "1.";
    if (decoder) {
      x = add(x, attention(norm(x, next + "layer_norm.weight"), memory,
                           next + "EncDecAttention.", Value(),
                           /*causal=*/false));
      next = block + "2.";
    }
    x = add(x, feedForward(norm(x, next + "layer_norm.weight"),
                           next + "DenseReluDense."));
  }
  return norm(x, finalNorm);
}

OwningOpRef<ModuleOp> T5IRBuilder::build() {
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

  Value shared = weight("shared.weight", {spec.vocabSize, spec.hiddenSize});
  auto embed = [&](Value tokens, const char *side) -> Value {
    return EmbeddingOp::create(b, named(llvm::Twine(side) + " embeddings"),
                               rows({spec.hiddenSize}), shared, tokens,
                               FloatAttr());
  };
  Value memory = stack(embed(entry->getArgument(0), "encoder"), "encoder",
                       spec.encoderLayers, /*memory=*/Value(),
                       "encoder.final_layer_norm.weight");
  Value x = embed(entry->getArgument(1), "decoder");
  x = stack(x, "decoder", spec.decoderLayers, memory,
            spec.headNormName());

  Location at = named("lm head");
  Value head = spec.tiedHead
                   ? shared
                   : weight("lm_head.weight", {spec.vocabSize, spec.hiddenSize});
  Value logits = LinearOp::create(b, at, rows({spec.vocabSize}), x, head,
                                  /*bias=*/Value(), ActivationKindAttr(),
                                  UnitAttr());
  func::ReturnOp::create(b, at, logits);
  return module;
}

} // namespace

llvm::Expected<OwningOpRef<ModuleOp>> mlir::tfm::buildT5(
    MLIRContext &context, const Seq2SeqSpec &spec, const WeightStore &weights,
    llvm::StringRef checkpoint,
    llvm::function_ref<bool(llvm::StringRef)> isIgnoredWeight) {
  context.loadDialect<TfmDialect, func::FuncDialect, arith::ArithDialect>();
  T5IRBuilder builder(context, spec, weights, checkpoint);
  return builder.declarations.finish(builder.build(), isIgnoredWeight);
}
