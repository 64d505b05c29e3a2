//===- EncoderFamilies.cpp - Hugging Face encoder model_types -----------===//
//
// BERT's reader and the module of an encoder (see EncoderFamilies.h). The
// module's @encode follows transformers' BertModel: embeddings (word +
// token type + position, LayerNorm), then per layer
//   x = LayerNorm(x + Wo·attention(Wq·x, Wk·x, Wv·x))
//   x = LayerNorm(x + W2·gelu(W1·x))
// with biases everywhere and bidirectional attention.
//
//===----------------------------------------------------------------------===//

#include "frontend/EncoderFamilies.h"
#include "frontend/DecoderSpec.h"
#include "frontend/ErrorMessages.h"
#include "frontend/WeightDeclarations.h"
#include "ir/TfmOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;

namespace {

void readActivation(ConfigReader &config, llvm::StringRef key,
                    EncoderSpec &spec) {
  std::string activation = config.string(key, "gelu");
  if (activation == "gelu")
    spec.activation = ActivationKind::gelu;
  else if (activation == "gelu_new" || activation == "gelu_pytorch_tanh")
    spec.activation = ActivationKind::gelu_tanh;
  else if (activation == "relu")
    spec.activation = ActivationKind::relu;
  else
    config.fail("unsupported config value " + key + " = '" + activation +
                "' (supported: gelu, gelu_new, gelu_pytorch_tanh, relu)");
}

EncoderSpec readBertSpec(ConfigReader &config) {
  EncoderSpec spec;
  spec.family = "bert";
  spec.vocabSize = config.integer("vocab_size");
  spec.hiddenSize = config.integer("hidden_size");
  spec.numLayers = config.integer("num_hidden_layers");
  spec.numHeads = config.integer("num_attention_heads");
  spec.intermediateSize = config.integer("intermediate_size");
  spec.maxPositions = config.integer("max_position_embeddings");
  spec.typeVocabSize = config.integer("type_vocab_size", 2);
  spec.normEpsilon = config.number("layer_norm_eps", 1e-12);
  readActivation(config, "hidden_act", spec);
  std::string positions =
      config.string("position_embedding_type", "absolute");
  if (positions != "absolute")
    config.fail("unsupported config value position_embedding_type = '" +
                positions + "' (supported: absolute)");
  if (config.boolean("is_decoder", false))
    config.fail("unsupported config value 'is_decoder' = true (a BERT "
                "decoder)");
  return spec;
}

/// DistilBERT: BERT's blocks under other names, no token types, epsilon
/// 1e-12 fixed by the reference.
EncoderSpec readDistilBertSpec(ConfigReader &config) {
  EncoderSpec spec;
  spec.family = "distilbert";
  spec.vocabSize = config.integer("vocab_size");
  spec.hiddenSize = config.integer("dim");
  spec.numLayers = config.integer("n_layers");
  spec.numHeads = config.integer("n_heads");
  spec.intermediateSize = config.integer("hidden_dim");
  spec.maxPositions = config.integer("max_position_embeddings");
  spec.normEpsilon = 1e-12;
  readActivation(config, "activation", spec);
  return spec;
}

/// DistilBERT's checkpoint names, after `prefix` ("distilbert.").
void useDistilBertNames(EncoderSpec &spec, const std::string &prefix) {
  std::string e = prefix + "embeddings.";
  spec.wordEmbeddings = e + "word_embeddings.weight";
  spec.positionEmbeddings = e + "position_embeddings.weight";
  spec.embeddingNorm = e + "LayerNorm.weight";
  std::string l = prefix + "transformer.layer.{}.";
  spec.query = l + "attention.q_lin.weight";
  spec.key = l + "attention.k_lin.weight";
  spec.value = l + "attention.v_lin.weight";
  spec.attentionOutput = l + "attention.out_lin.weight";
  spec.attentionNorm = l + "sa_layer_norm.weight";
  spec.intermediate = l + "ffn.lin1.weight";
  spec.output = l + "ffn.lin2.weight";
  spec.outputNorm = l + "output_layer_norm.weight";
}

/// BERT's checkpoint names, after `prefix` ("bert." in task models).
void useBertNames(EncoderSpec &spec, const std::string &prefix) {
  std::string e = prefix + "embeddings.";
  spec.wordEmbeddings = e + "word_embeddings.weight";
  spec.positionEmbeddings = e + "position_embeddings.weight";
  spec.typeEmbeddings = e + "token_type_embeddings.weight";
  spec.embeddingNorm = e + "LayerNorm.weight";
  std::string l = prefix + "encoder.layer.{}.";
  spec.query = l + "attention.self.query.weight";
  spec.key = l + "attention.self.key.weight";
  spec.value = l + "attention.self.value.weight";
  spec.attentionOutput = l + "attention.output.dense.weight";
  spec.attentionNorm = l + "attention.output.LayerNorm.weight";
  spec.intermediate = l + "intermediate.dense.weight";
  spec.output = l + "output.dense.weight";
  spec.outputNorm = l + "output.LayerNorm.weight";
}

class EncoderIRBuilder {
public:
  EncoderIRBuilder(MLIRContext &context, const EncoderSpec &spec,
                   const WeightStore &weights, llvm::StringRef checkpoint)
      : declarations(weights, checkpoint, spec.family), b(&context),
        spec(spec) {}

  OwningOpRef<ModuleOp> build();

  WeightDeclarations declarations;

private:
  Location named(const llvm::Twine &what) {
    return NameLoc::get(b.getStringAttr(what));
  }
  RankedTensorType rows(ArrayRef<int64_t> trailing) {
    SmallVector<int64_t> shape = {ShapedType::kDynamic};
    shape.append(trailing.begin(), trailing.end());
    return RankedTensorType::get(shape, b.getF32Type());
  }
  Value weight(const std::string &name, std::vector<int64_t> shape) {
    return declarations.read(b, name, shape);
  }
  /// x·Wᵀ + b for the [out, in] weight `name`, as `[?, resultShape...]`.
  Value linear(Value x, const std::string &name, ArrayRef<int64_t> resultShape,
               std::optional<ActivationKind> activation = std::nullopt) {
    auto xType = cast<RankedTensorType>(x.getType());
    int64_t in = 1, out = 1;
    for (int64_t d : xType.getShape().drop_front())
      in *= d;
    for (int64_t d : resultShape)
      out *= d;
    Value w = weight(name, {out, in});
    Value bias = weight(biasName(name), {out});
    ActivationKindAttr act =
        activation ? ActivationKindAttr::get(b.getContext(), *activation)
                   : ActivationKindAttr();
    return LinearOp::create(b, x.getLoc(), rows(resultShape), x, w, bias, act,
                            /*gated=*/UnitAttr());
  }
  Value norm(Value x, const std::string &name, int64_t d = 0) {
    d = d ? d : spec.hiddenSize;
    return LayerNormOp::create(b, x.getLoc(), x.getType(), x,
                               weight(name, {d}),
                               weight(biasName(name), {d}),
                               b.getF32FloatAttr(spec.normEpsilon));
  }
  Value layer(Value x, int64_t index);

  OpBuilder b;
  const EncoderSpec &spec;
};

Value EncoderIRBuilder::layer(Value x, int64_t index) {
  auto name = [&](const std::string &pattern) {
    return layerWeightName(pattern, index);
  };
  int64_t heads = spec.numHeads, headDim = spec.headDim(),
          d = spec.hiddenSize;
  Value q = linear(x, name(spec.query), {heads, headDim});
  Value k = linear(x, name(spec.key), {heads, headDim});
  Value v = linear(x, name(spec.value), {heads, headDim});
  auto scale = b.getF32FloatAttr(1.0 / std::sqrt(double(headDim)));
  // Bidirectional: no causal mask; every token sees every token.
  Value attended = AttentionOp::create(
      b, named("layer " + llvm::Twine(index) + " attention"), q.getType(), q,
      k, v, /*bias=*/Value(), scale, /*causal=*/UnitAttr(),
      /*window=*/IntegerAttr());
  Value projected = linear(attended, name(spec.attentionOutput), {d});
  x = norm(AddOp::create(b, x.getLoc(), x, projected),
           name(spec.attentionNorm));
  Value hidden = linear(x, name(spec.intermediate), {spec.intermediateSize},
                        spec.activation);
  Value out = linear(hidden, name(spec.output), {d});
  return norm(AddOp::create(b, x.getLoc(), x, out), name(spec.outputNorm));
}

OwningOpRef<ModuleOp> EncoderIRBuilder::build() {
  OwningOpRef<ModuleOp> module = ModuleOp::create(named(spec.family));
  b.setInsertionPointToEnd(module->getBody());
  auto ids = RankedTensorType::get({ShapedType::kDynamic}, b.getI32Type());
  int64_t d = spec.hiddenSize, e = spec.embeddingWidth();
  bool types = !spec.typeEmbeddings.empty();
  SmallVector<Type> inputs = {ids};
  if (types)
    inputs.push_back(ids);
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
  auto encode = func::FuncOp::create(b, named(name), name,
                                     b.getFunctionType(inputs, {result}));
  MLIRContext *ctx = b.getContext();
  encode.setArgAttr(0, kInputArgAttrName,
                    InputRoleAttr::get(ctx, InputRole::token_ids));
  if (types)
    encode.setArgAttr(1, kInputArgAttrName,
                      InputRoleAttr::get(ctx, InputRole::token_type_ids));
  encode.setResultAttr(
      0, kOutputResultAttrName,
      OutputRoleAttr::get(ctx, spec.pooling ? OutputRole::embedding
                               : spec.maskedLm || classifier
                                   ? OutputRole::logits
                                   : OutputRole::hidden_states));
  Block *entry = encode.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value tokens = entry->getArgument(0);

  Location loc = named("embeddings");
  Value wordTable = weight(spec.wordEmbeddings, {spec.vocabSize, e});
  Value x = EmbeddingOp::create(b, loc, rows({e}), wordTable, tokens,
                                /*scale=*/FloatAttr());
  if (types)
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
                                            /*offset=*/Value(), padding);
  Value positions = EmbeddingOp::create(
      b, loc, rows({e}),
      weight(spec.positionEmbeddings, {spec.maxPositions, e}), positionIds,
      FloatAttr());
  x = norm(AddOp::create(b, loc, x, positions), spec.embeddingNorm, e);
  if (!spec.embeddingProjection.empty())
    x = linear(x, spec.embeddingProjection, {d});
  for (int64_t i = 0; i < spec.numLayers; ++i)
    x = layer(x, i);
  if (const std::optional<EncoderSpec::MaskedLmHead> &head = spec.maskedLm) {
    x = norm(linear(x, head->dense, {d}, head->activation), head->norm);
    Value decoder = head->decoder.empty()
                        ? wordTable
                        : weight(head->decoder, {spec.vocabSize, d});
    x = LinearOp::create(b, named("masked lm head"), rows({spec.vocabSize}), x,
                         decoder, weight(head->bias, {spec.vocabSize}),
                         ActivationKindAttr(), UnitAttr());
  }
  if (classifier) {
    // Position-wise, so the sequence head runs on every state and keeps the
    // first row's: the same as heading the first state alone.
    Location at = named("classifier");
    if (!classifier->dense.empty())
      x = linear(x, classifier->dense, {d}, ActivationKind::tanh);
    x = linear(x, classifier->output, {classifier->labels});
    if (!classifier->perToken)
      x = PoolOp::create(b, at, result,
                         PoolingKindAttr::get(ctx, PoolingKind::cls), x,
                         UnitAttr());
  }
  if (spec.pooling)
    x = PoolOp::create(b, named("pooling"), result,
                       PoolingKindAttr::get(ctx, *spec.pooling), x,
                       spec.normalize ? b.getUnitAttr() : UnitAttr());
  func::ReturnOp::create(b, loc, x);
  return module;
}

} // namespace

std::string mlir::tfm::supportedEncoderFamilies() {
  return "bert, distilbert, electra, roberta, xlm-roberta";
}

bool mlir::tfm::readEncoderFamily(llvm::StringRef modelType,
                                  ConfigReader &config, EncoderSpec &spec) {
  if (modelType == "bert") {
    spec = readBertSpec(config);
  } else if (modelType == "distilbert") {
    spec = readDistilBertSpec(config);
  } else if (modelType == "electra") {
    // BERT's layers over embeddings of their own width, projected.
    spec = readBertSpec(config);
    spec.family = "electra";
    spec.embeddingSize = config.integer("embedding_size", spec.hiddenSize);
  } else if (modelType == "roberta" || modelType == "xlm-roberta") {
    // BERT's layers; positions number only real tokens, after the padding
    // id, and there is one token type.
    spec = readBertSpec(config);
    spec.family = modelType.str();
    spec.typeVocabSize = config.integer("type_vocab_size", 1);
    spec.positionPaddingId = config.integer("pad_token_id", 1);
    if (spec.positionPaddingId < 0)
      config.fail("pad_token_id must be non-negative, got " +
                  llvm::Twine(spec.positionPaddingId));
  } else {
    return false;
  }
  return true;
}

llvm::Error mlir::tfm::validateEncoderSpec(const EncoderSpec &spec,
                                           llvm::StringRef configPath) {
  struct Field {
    const char *name;
    int64_t value;
  };
  for (Field f : {Field{"vocab size", spec.vocabSize},
                  {"hidden size", spec.hiddenSize},
                  {"layer count", spec.numLayers},
                  {"attention head count", spec.numHeads},
                  {"intermediate size", spec.intermediateSize},
                  {"maximum positions", spec.maxTokens()},
                  {"embedding size", spec.embeddingWidth()}})
    if (f.value <= 0)
      return makeError(configPath + ": " + f.name +
                       " must be positive, got " + llvm::Twine(f.value));
  if (spec.family != "distilbert" && spec.typeVocabSize <= 0)
    return makeError(configPath + ": token type count must be positive, got " +
                     llvm::Twine(spec.typeVocabSize));
  if (spec.hiddenSize % spec.numHeads != 0)
    return makeError(configPath + ": hidden size (" +
                     llvm::Twine(spec.hiddenSize) +
                     ") is not divisible by the head count (" +
                     llvm::Twine(spec.numHeads) + ")");
  if (!(spec.normEpsilon >= 0) || !std::isfinite(spec.normEpsilon))
    return makeError(configPath + ": norm epsilon must be finite and "
                                  "non-negative");
  return llvm::Error::success();
}

EncoderHead
mlir::tfm::encoderHeadOf(llvm::ArrayRef<std::string> architectures) {
  for (llvm::StringRef architecture : architectures) {
    if (architecture.ends_with("ForMaskedLM") ||
        architecture.ends_with("ForPreTraining"))
      return EncoderHead::MaskedLm;
    if (architecture.ends_with("ForSequenceClassification"))
      return EncoderHead::SequenceClassification;
    if (architecture.ends_with("ForTokenClassification"))
      return EncoderHead::TokenClassification;
  }
  return EncoderHead::None;
}

bool mlir::tfm::resolveEncoderNames(EncoderSpec &spec,
                                    const WeightStore &weights,
                                    EncoderHead head, int64_t labels) {
  // Task models (BertForMaskedLM, ...) keep the encoder under "bert.",
  // "roberta." (XLM-R's classes too), "distilbert.", "electra.".
  std::string scope = spec.family == "xlm-roberta" ? "roberta" : spec.family;
  std::string prefix =
      weights.contains(scope + ".embeddings.word_embeddings.weight")
          ? scope + "."
          : "";
  if (spec.family == "distilbert") {
    useDistilBertNames(spec, prefix);
    return head == EncoderHead::None;
  }
  useBertNames(spec, prefix);
  if (spec.embeddingWidth() != spec.hiddenSize)
    spec.embeddingProjection = prefix + "embeddings_project.weight";
  bool roberta = spec.family == "roberta" || spec.family == "xlm-roberta";
  bool bert = spec.family == "bert";
  switch (head) {
  case EncoderHead::None:
    return true;
  case EncoderHead::TokenClassification:
    if (!bert && !roberta && spec.family != "electra")
      return false;
    spec.classifier = {true, "", "classifier.weight", labels};
    return true;
  case EncoderHead::SequenceClassification:
    // BERT: its pooler (dense + tanh on [CLS]) then the classifier;
    // RoBERTa: the same shape under its head's names.
    if (bert)
      spec.classifier = {false, prefix + "pooler.dense.weight",
                         "classifier.weight", labels};
    else if (roberta)
      spec.classifier = {false, "classifier.dense.weight",
                         "classifier.out_proj.weight", labels};
    else
      return false;
    return true;
  case EncoderHead::MaskedLm:
    break;
  }
  // The decoder is tied to the word embeddings unless the checkpoint has
  // its own; the bias is saved as the head's or the decoder's.
  auto firstOf = [&](std::initializer_list<std::string> names) {
    for (const std::string &name : names)
      if (weights.contains(name))
        return name;
    return std::string(*names.begin());
  };
  EncoderSpec::MaskedLmHead maskedLm;
  if (bert) {
    std::string p = "cls.predictions.";
    maskedLm = {p + "transform.dense.weight", p + "transform.LayerNorm.weight",
            weights.contains(p + "decoder.weight") ? p + "decoder.weight" : "",
            firstOf({p + "bias", p + "decoder.bias"}), spec.activation};
  } else if (roberta) {
    // RoBERTa's head uses the exact GELU whatever hidden_act says.
    std::string p = "lm_head.";
    maskedLm = {p + "dense.weight", p + "layer_norm.weight",
            weights.contains(p + "decoder.weight") ? p + "decoder.weight" : "",
            firstOf({p + "bias", p + "decoder.bias"}), ActivationKind::gelu};
  } else {
    return false;
  }
  spec.maskedLm = maskedLm;
  return true;
}

llvm::Expected<OwningOpRef<ModuleOp>> mlir::tfm::buildEncoder(
    MLIRContext &context, const EncoderSpec &spec, const WeightStore &weights,
    llvm::StringRef checkpoint,
    llvm::function_ref<bool(llvm::StringRef)> isIgnoredWeight) {
  context.loadDialect<TfmDialect, func::FuncDialect, arith::ArithDialect>();
  EncoderIRBuilder builder(context, spec, weights, checkpoint);
  OwningOpRef<ModuleOp> module = builder.build();
  if (llvm::Error err = builder.declarations.finish(isIgnoredWeight))
    return std::move(err);
  if (failed(module->verify()))
    return makeError("internal error: the " + spec.family +
                     " module does not verify");
  return std::move(module);
}
