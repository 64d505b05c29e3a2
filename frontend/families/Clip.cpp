//===- Clip.cpp - CLIP's text and image encoders as tfm IR ---------------===//
//
// transformers' CLIP (modeling_clip.py). Both towers are pre-norm
// transformers whose blocks are
//     x = x + out_proj(attention(layer_norm1(x)))
//     x = x + fc2(act(fc1(layer_norm2(x))))          (act: quick_gelu)
// The text tower: token + learned position embeddings, causal attention,
// final_layer_norm; its pooled state is the row of the end-of-text token
// (tfm.token_row): the first position of eos_token_id, or, for the first
// checkpoints whose config says eos_token_id 2, of the largest id (their
// end-of-text is the vocabulary's last), as CLIPTextTransformer pools.
// The image tower: the patch convolution (no bias) as a GEMM over
// tfm.patches, the class embedding before the patches, learned positions,
// pre_layrnorm, the blocks; its pooled state is post_layernorm of the class
// token's row. text_projection and visual_projection (no biases) map the
// pooled states into the shared embedding space.
//
// Entry points, per tower present: @encode_text(ids) and
// @encode_image(pixels) return the last hidden state; @embed_text and
// @embed_image the projected embedding, or the pooled state of a tower
// without a projection (CLIPTextModel, CLIPVisionModel).
//
//===----------------------------------------------------------------------===//

#include "frontend/families/Clip.h"
#include "frontend/ErrorMessages.h"
#include "frontend/builders/ModelIRBuilder.h"
#include "frontend/families/VisionTransformer.h"
#include "frontend/tokenizers/Tokenizer.h"
#include "ir/TfmOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// What both towers share: the transformer.
struct TowerSpec {
  std::string prefix; // "text_model." or "vision_model."
  int64_t hiddenSize = 0, numLayers = 0, numHeads = 0, intermediateSize = 0;
  double normEpsilon = 1e-5;
  ActivationKind activation = ActivationKind::quick_gelu;
  /// The projection's weight ("text_projection.weight"); empty: none.
  std::string projection;
};

struct TextSpec : TowerSpec {
  int64_t vocabSize = 0, maxPositions = 0;
  /// The end-of-text id pooled at; nullopt: the largest id's position.
  std::optional<int64_t> eosTokenId;
};

struct ImageSpec : TowerSpec {
  int64_t imageSize = 0, patchSize = 0, channels = 3;
  int64_t patches() const {
    return (imageSize / patchSize) * (imageSize / patchSize);
  }
  int64_t tokens() const { return patches() + 1; }
};

struct ClipSpec {
  std::string family;
  std::optional<TextSpec> text;
  std::optional<ImageSpec> image;
  int64_t projectionDim = 0;
  /// SDXL's second text tower (with its projection): the module is then
  /// the pair's one @encode_text (buildTextPair).
  std::optional<TextSpec> text2;
};

class ClipIRBuilder : public ModelIRBuilder {
public:
  ClipIRBuilder(MLIRContext &context, const ClipSpec &spec,
                const WeightStore &weights, llvm::StringRef checkpoint)
      : ModelIRBuilder(context, weights, checkpoint, spec.family), spec(spec) {}

  OwningOpRef<ModuleOp> build();

private:
  RankedTensorType matrix(int64_t rows, int64_t columns) {
    return RankedTensorType::get({rows, columns}, b.getF32Type());
  }
  RankedTensorType vector(int64_t n) {
    return RankedTensorType::get({n}, b.getF32Type());
  }
  Value norm(const TowerSpec &tower, Value x, llvm::StringRef name) {
    return declarations.biasedLayerNorm(b, x, tower.prefix + name.str(),
                                        tower.hiddenSize, tower.normEpsilon);
  }
  Value layer(const TowerSpec &tower, Value x, int64_t index, bool causal);
  Value encoder(const TowerSpec &tower, Value x, bool causal);
  /// The pooled [d] state through the tower's projection, if it has one.
  Value project(const TowerSpec &tower, Value pooled);

  /// Token and position embeddings, then the first `layers` blocks.
  Value textStates(const TextSpec &text, Value ids, int64_t layers);
  Value textHidden(Value ids);
  Value textEmbedding(Value ids);
  /// The pooled state of `hidden` (the end-of-text row) through the
  /// tower's projection.
  Value textPooled(const TextSpec &text, Value hidden, Value ids);
  /// SDXL's @encode_text(ids, ids_2) (loadClipTextPair).
  void buildTextPair(ModuleOp module);
  Value imageHidden(Value pixels);
  Value imageEmbedding(Value pixels);

  /// func @name(input) -> result, its body from `body`.
  void entryPoint(llvm::StringRef name, Type input, InputRole role,
                  OutputRole output, llvm::function_ref<Value(Value)> body);

  const ClipSpec &spec;
};

Value ClipIRBuilder::layer(const TowerSpec &tower, Value x, int64_t index,
                           bool causal) {
  std::string at =
      tower.prefix + "encoder.layers." + std::to_string(index) + ".";
  int64_t d = tower.hiddenSize, heads = tower.numHeads, headDim = d / heads;
  Value h =
      norm(tower, x,
           "encoder.layers." + std::to_string(index) + ".layer_norm1.weight");
  Value q = linear(h, at + "self_attn.q_proj.weight", {heads, headDim});
  Value k = linear(h, at + "self_attn.k_proj.weight", {heads, headDim});
  Value v = linear(h, at + "self_attn.v_proj.weight", {heads, headDim});
  Value attended = AttentionOp::create(
      b, named(tower.prefix + "layer " + llvm::Twine(index) + " attention"),
      q.getType(), q, k, v, /*bias=*/Value(), /*lengths=*/Value(),
      /*relative_bias=*/Value(), /*sinks=*/Value(),
      b.getF32FloatAttr(1.0 / std::sqrt(double(headDim))),
      causal ? b.getUnitAttr() : UnitAttr(), /*window=*/IntegerAttr(),
      /*max_distance=*/IntegerAttr(), /*softcap=*/FloatAttr());
  x = AddOp::create(b, x.getLoc(), x,
                    linear(attended, at + "self_attn.out_proj.weight", {d}));
  h = norm(tower, x,
           "encoder.layers." + std::to_string(index) + ".layer_norm2.weight");
  h = linear(h, at + "mlp.fc1.weight", {tower.intermediateSize},
             tower.activation);
  return AddOp::create(b, x.getLoc(), x, linear(h, at + "mlp.fc2.weight", {d}));
}

Value ClipIRBuilder::encoder(const TowerSpec &tower, Value x, bool causal) {
  for (int64_t i = 0; i < tower.numLayers; ++i)
    x = layer(tower, x, i, causal);
  return x;
}

Value ClipIRBuilder::project(const TowerSpec &tower, Value pooled) {
  if (tower.projection.empty())
    return pooled;
  // A [d] vector through the [projection_dim, d] matrix: as one row.
  Location loc = named(tower.projection);
  int64_t d = tower.hiddenSize;
  Value row = tensor::ExpandShapeOp::create(
      b, loc, matrix(1, d), pooled, SmallVector<ReassociationIndices>{{0, 1}});
  Value projected = declarations.unbiasedLinear(b, row, tower.projection,
                                                {spec.projectionDim});
  return tensor::CollapseShapeOp::create(
      b, loc, vector(spec.projectionDim), projected,
      SmallVector<ReassociationIndices>{{0, 1}});
}

Value ClipIRBuilder::textStates(const TextSpec &text, Value ids,
                                int64_t layers) {
  Location loc = named(text.prefix + "embeddings");
  int64_t d = text.hiddenSize;
  Value tokens = EmbeddingOp::create(
      b, loc, rows({d}),
      weight(text.prefix + "embeddings.token_embedding.weight",
             {text.vocabSize, d}),
      ids, /*scale=*/FloatAttr());
  Value positions = PositionIdsOp::create(
      b, loc, ids.getType(), ids, /*offset=*/Value(), /*lengths=*/Value(),
      /*padding_id=*/IntegerAttr());
  Value learned = EmbeddingOp::create(
      b, loc, rows({d}),
      weight(text.prefix + "embeddings.position_embedding.weight",
             {text.maxPositions, d}),
      positions, /*scale=*/FloatAttr());
  Value x = AddOp::create(b, loc, tokens, learned);
  for (int64_t i = 0; i < layers; ++i)
    x = layer(text, x, i, /*causal=*/true);
  return x;
}

Value ClipIRBuilder::textHidden(Value ids) {
  const TextSpec &text = *spec.text;
  return norm(text, textStates(text, ids, text.numLayers),
              "final_layer_norm.weight");
}

Value ClipIRBuilder::textPooled(const TextSpec &text, Value hidden,
                                Value ids) {
  IntegerAttr eos =
      text.eosTokenId ? b.getI64IntegerAttr(*text.eosTokenId) : IntegerAttr();
  Value pooled = TokenRowOp::create(b, named("end-of-text pooling"),
                                    vector(text.hiddenSize), hidden, ids, eos);
  return project(text, pooled);
}

Value ClipIRBuilder::textEmbedding(Value ids) {
  return textPooled(*spec.text, textHidden(ids), ids);
}

void ClipIRBuilder::buildTextPair(ModuleOp module) {
  const TextSpec &first = *spec.text, &second = *spec.text2;
  MLIRContext *ctx = b.getContext();
  b.setInsertionPointToEnd(module.getBody());
  auto ids = RankedTensorType::get({ShapedType::kDynamic}, b.getI32Type());
  auto function = func::FuncOp::create(b, named("encode_text"), "encode_text",
                                       b.getFunctionType({ids, ids}, {}));
  for (unsigned i = 0; i < 2; ++i)
    function.setArgAttr(i, kInputArgAttrName,
                        InputRoleAttr::get(ctx, InputRole::token_ids));
  Block *entry = function.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value ids1 = entry->getArgument(0), ids2 = entry->getArgument(1);
  // hidden_states[-2] of each tower: its blocks but the last, without
  // final_layer_norm.
  Value states1 = textStates(first, ids1, first.numLayers - 1);
  Value penultimate2 = textStates(second, ids2, second.numLayers - 1);
  Value last2 = layer(second, penultimate2, second.numLayers - 1,
                      /*causal=*/true);
  Value pooled = textPooled(
      second, norm(second, last2, "final_layer_norm.weight"), ids2);
  Value states = tensor::ConcatOp::create(
      b, named("prompt_embeds"), 1, ValueRange{states1, penultimate2});
  func::ReturnOp::create(b, named("encode_text"), ValueRange{states, pooled});
  function.setType(b.getFunctionType(
      {ids, ids}, {states.getType(), pooled.getType()}));
  function.setResultAttr(0, kOutputResultAttrName,
                         OutputRoleAttr::get(ctx, OutputRole::hidden_states));
  function.setResultAttr(1, kOutputResultAttrName,
                         OutputRoleAttr::get(ctx, OutputRole::embedding));
}

Value ClipIRBuilder::imageHidden(Value pixels) {
  const ImageSpec &image = *spec.image;
  Location loc = named("image embeddings");
  int64_t d = image.hiddenSize, p = image.patchSize, c = image.channels,
          n = image.patches(), tokens = image.tokens();
  // The stride-p convolution without a bias: a GEMM over the flattened
  // patches with the [d, C, p, p] kernel read as [d, C·p·p].
  Value patches = PatchesOp::create(b, loc, matrix(n, c * p * p), pixels,
                                    b.getI64IntegerAttr(p),
                                    /*strides=*/DenseI64ArrayAttr());
  std::string kernel = image.prefix + "embeddings.patch_embedding.weight";
  Value x = LinearOp::create(
      b, loc, matrix(n, d), patches,
      declarations.readAs(b, kernel, {d, c, p, p}, {d, c * p * p}),
      /*bias=*/Value(), ActivationKindAttr(), UnitAttr());
  Value cls = declarations.readAs(
      b, image.prefix + "embeddings.class_embedding", {d}, {1, d});
  x = ConcatOp::create(b, loc, matrix(tokens, d), ValueRange{cls, x});
  Value positions = weight(
      image.prefix + "embeddings.position_embedding.weight", {tokens, d});
  x = AddOp::create(b, loc, x, positions);
  x = norm(image, x, "pre_layrnorm.weight");
  return encoder(image, x, /*causal=*/false);
}

Value ClipIRBuilder::imageEmbedding(Value pixels) {
  const ImageSpec &image = *spec.image;
  Value hidden = imageHidden(pixels);
  int64_t d = image.hiddenSize;
  // The class token's row, kept [1, d] for post_layernorm's rows.
  Value row = tensor::ExtractSliceOp::create(
      b, named("class token"), matrix(1, d), hidden, ValueRange(), ValueRange(),
      ValueRange(), b.getDenseI64ArrayAttr({0, 0}),
      b.getDenseI64ArrayAttr({1, d}), b.getDenseI64ArrayAttr({1, 1}));
  row = norm(image, row, "post_layernorm.weight");
  Value pooled = tensor::CollapseShapeOp::create(
      b, named("image pooling"), vector(d), row,
      SmallVector<ReassociationIndices>{{0, 1}});
  return project(image, pooled);
}

void ClipIRBuilder::entryPoint(llvm::StringRef name, Type input, InputRole role,
                               OutputRole output,
                               llvm::function_ref<Value(Value)> body) {
  MLIRContext *ctx = b.getContext();
  OpBuilder::InsertionGuard guard(b);
  // The result type is known once the body is built: start with none.
  auto function = func::FuncOp::create(b, named(name), name,
                                       b.getFunctionType({input}, {}));
  function.setArgAttr(0, kInputArgAttrName, InputRoleAttr::get(ctx, role));
  Block *entry = function.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value result = body(entry->getArgument(0));
  func::ReturnOp::create(b, named(name), result);
  function.setType(b.getFunctionType({input}, {result.getType()}));
  function.setResultAttr(0, kOutputResultAttrName,
                         OutputRoleAttr::get(ctx, output));
}

OwningOpRef<ModuleOp> ClipIRBuilder::build() {
  OwningOpRef<ModuleOp> module = ModuleOp::create(named(spec.family));
  if (spec.text2) {
    buildTextPair(*module);
    return module;
  }
  b.setInsertionPointToEnd(module->getBody());
  if (spec.text) {
    auto ids = RankedTensorType::get({ShapedType::kDynamic}, b.getI32Type());
    entryPoint("encode_text", ids, InputRole::token_ids,
               OutputRole::hidden_states,
               [&](Value in) { return textHidden(in); });
    entryPoint("embed_text", ids, InputRole::token_ids, OutputRole::embedding,
               [&](Value in) { return textEmbedding(in); });
  }
  if (spec.image) {
    const ImageSpec &image = *spec.image;
    auto pixels = RankedTensorType::get(
        {image.channels, image.imageSize, image.imageSize}, b.getF32Type());
    entryPoint("encode_image", pixels, InputRole::features,
               OutputRole::hidden_states,
               [&](Value in) { return imageHidden(in); });
    entryPoint("embed_image", pixels, InputRole::features,
               OutputRole::embedding,
               [&](Value in) { return imageEmbedding(in); });
  }
  return module;
}

/// A tower's defaults, as CLIPTextConfig and CLIPVisionConfig have them:
/// transformers writes only the fields that differ (a CLIPModel saved with
/// the defaults says no more than "model_type" in its tower configs).
struct TowerDefaults {
  int64_t hiddenSize, numLayers, numHeads, intermediateSize;
};
constexpr TowerDefaults kTextDefaults = {512, 12, 8, 2048};
constexpr TowerDefaults kImageDefaults = {768, 12, 12, 3072};

/// The transformer sizes of a tower's config (CLIPTextConfig,
/// CLIPVisionConfig), checked.
void readTower(ConfigReader &config, const TowerDefaults &defaults,
               TowerSpec &tower) {
  tower.hiddenSize = config.integer("hidden_size", defaults.hiddenSize);
  tower.numLayers = config.integer("num_hidden_layers", defaults.numLayers);
  tower.numHeads = config.integer("num_attention_heads", defaults.numHeads);
  tower.intermediateSize =
      config.integer("intermediate_size", defaults.intermediateSize);
  tower.normEpsilon = config.number("layer_norm_eps", 1e-5);
  tower.activation = config.activation("hidden_act", "quick_gelu");
  if (tower.hiddenSize <= 0 || tower.numLayers <= 0 || tower.numHeads <= 0 ||
      tower.intermediateSize <= 0)
    config.fail("hidden_size, num_hidden_layers, num_attention_heads and "
                "intermediate_size must be positive");
  else if (tower.hiddenSize % tower.numHeads)
    config.fail("hidden_size " + llvm::Twine(tower.hiddenSize) +
                " is not a multiple of num_attention_heads " +
                llvm::Twine(tower.numHeads));
}

void readText(ConfigReader &config, TextSpec &text) {
  text.prefix = "text_model.";
  readTower(config, kTextDefaults, text);
  text.vocabSize = config.integer("vocab_size", 49408);
  text.maxPositions = config.integer("max_position_embeddings", 77);
  if (text.vocabSize <= 0 || text.maxPositions <= 0)
    config.fail("vocab_size and max_position_embeddings must be positive");
  // transformers 4.40 pools at the largest id where eos_token_id is 2 (the
  // first checkpoints' configs), else at eos_token_id's first position.
  int64_t eos = config.integer("eos_token_id", 49407);
  if (eos != 2)
    text.eosTokenId = eos;
  if (eos < 0 || eos >= text.vocabSize)
    config.fail("eos_token_id " + llvm::Twine(eos) +
                " is outside the vocabulary [0, " +
                llvm::Twine(text.vocabSize) + ")");
}

void readImage(ConfigReader &config, ImageSpec &image) {
  image.prefix = "vision_model.";
  readTower(config, kImageDefaults, image);
  image.imageSize = config.integer("image_size", 224);
  image.patchSize = config.integer("patch_size", 32);
  image.channels = config.integer("num_channels", 3);
  if (image.imageSize <= 0 || image.patchSize <= 0 || image.channels <= 0)
    config.fail("image_size, patch_size and num_channels must be positive");
  else if (image.imageSize % image.patchSize)
    config.fail("patch_size " + llvm::Twine(image.patchSize) +
                " does not divide image_size " + llvm::Twine(image.imageSize));
}

/// A nested tower config (CLIPConfig's text_config, vision_config): read
/// with its own reader, whose errors name the field. The first published
/// configs also carry text_config_dict and vision_config_dict, whose
/// fields win, as CLIPConfig reads them; without either, the defaults.
template <typename Spec>
void readNested(ConfigReader &config, llvm::StringRef key, Spec &spec,
                void (*read)(ConfigReader &, Spec &)) {
  llvm::json::Object merged;
  for (std::string field : {key.str(), key.str() + "_dict"})
    if (const llvm::json::Object *nested = config.nested(field))
      for (const auto &entry : *nested)
        merged[entry.first] = entry.second;
  // Its errors read "<config.json>: text_config: ...".
  ConfigReader reader(merged, key.str());
  read(reader, spec);
  if (llvm::Error err = reader.takeError())
    config.fail(llvm::toString(std::move(err)));
}

} // namespace

static const llvm::StringLiteral kClipFamilies[] = {"clip", "clip_text_model",
                                                    "clip_vision_model"};

bool mlir::tfm::isClipFamily(llvm::StringRef modelType) {
  return llvm::is_contained(kClipFamilies, modelType);
}

std::string mlir::tfm::supportedClipFamilies() {
  return llvm::join(std::begin(kClipFamilies), std::end(kClipFamilies), ", ");
}

llvm::Error mlir::tfm::loadClip(MLIRContext &context, llvm::StringRef modelType,
                                ConfigReader &config,
                                ArrayRef<std::string> architectures,
                                llvm::StringRef checkpoint,
                                llvm::StringRef configPath,
                                LoadedModel &model) {
  ClipSpec spec;
  spec.family = modelType.str();
  std::string architecture = architectures.empty() ? "" : architectures.front();
  // Which towers and projections each architecture has.
  bool text = false, image = false, projections = false;
  if (modelType == "clip") {
    text = image = projections = true;
    if (!architecture.empty() && architecture != "CLIPModel")
      return makeError(configPath + ": the " + architecture +
                       " head of clip is not supported (CLIPModel is)");
  } else if (modelType == "clip_text_model") {
    text = true;
    projections = architecture == "CLIPTextModelWithProjection";
    if (!architecture.empty() && architecture != "CLIPTextModel" &&
        !projections)
      return makeError(configPath + ": the " + architecture +
                       " head of clip_text_model is not supported "
                       "(CLIPTextModel, CLIPTextModelWithProjection are)");
  } else {
    image = true;
    projections = architecture == "CLIPVisionModelWithProjection";
    if (!architecture.empty() && architecture != "CLIPVisionModel" &&
        !projections)
      return makeError(configPath + ": the " + architecture +
                       " head of clip_vision_model is not supported "
                       "(CLIPVisionModel, CLIPVisionModelWithProjection are)");
  }
  if (modelType == "clip") {
    spec.text.emplace();
    spec.image.emplace();
    readNested<TextSpec>(config, "text_config", *spec.text, readText);
    readNested<ImageSpec>(config, "vision_config", *spec.image, readImage);
  } else if (text) {
    // A tower's own config, as CLIPTextModel saves it.
    spec.text.emplace();
    readText(config, *spec.text);
  } else {
    spec.image.emplace();
    readImage(config, *spec.image);
  }
  if (projections) {
    spec.projectionDim = config.integer("projection_dim", 512);
    if (spec.projectionDim <= 0)
      config.fail("projection_dim must be positive");
    if (spec.text)
      spec.text->projection = "text_projection.weight";
    if (spec.image)
      spec.image->projection = "visual_projection.weight";
  }
  if (llvm::Error err = config.takeError())
    return std::move(err);

  context.loadDialect<TfmDialect, func::FuncDialect, arith::ArithDialect,
                      tensor::TensorDialect>();
  ClipIRBuilder builder(context, spec, model.weights, checkpoint);
  // CLIPModel's logit_scale (the temperature of its training loss) and the
  // position ids buffers some checkpoints carry are not outputs here.
  auto ignored = [](llvm::StringRef n) {
    return n == "logit_scale" || n.ends_with("embeddings.position_ids");
  };
  auto module = builder.declarations.finish(builder.build(), ignored);
  if (!module)
    return module.takeError();
  model.module = std::move(*module);
  model.family = spec.family;
  // CLIPModel's similarity scale: exp of its logit_scale.
  if (text && image) {
    const WeightTensor *scale = model.weights.lookup("logit_scale");
    if (!scale || scale->numElements() != 1)
      return makeError(checkpoint + ": CLIPModel needs its scalar "
                                    "'logit_scale'");
    float logit = scale->toF32()[0];
    double value = std::exp(double(logit));
    if (!std::isfinite(value) || value <= 0)
      return makeError(checkpoint + ": 'logit_scale' " +
                       llvm::formatv("{0}", logit).str() +
                       " gives no positive, finite scale");
    (*model.module)
        ->setAttr(kLogitScaleAttrName,
                  FloatAttr::get(Float64Type::get(&context), value));
  }
  model.addBos = false;
  // The tokenizer beside a text tower: CLIP's BPE, framed with its start
  // and end of text.
  llvm::StringRef directory = llvm::sys::path::parent_path(configPath);
  if (spec.text && hasByteLevelBpeFiles(directory)) {
    llvm::Expected<TokenizerVocab> vocab =
        readTokenizerAt(directory, spec.text->vocabSize);
    if (!vocab)
      return vocab.takeError();
    if (vocab->bpeSplit != TokenizerVocab::BpeSplit::Clip)
      return makeError(directory + ": CLIP's text tower needs CLIP's "
                                   "tokenizer (tokenizer_class "
                                   "CLIPTokenizer, or a tokenizer.json whose "
                                   "words end in \"</w>\")");
    model.tokenizer = std::move(*vocab);
    model.tokenizerPath = directory.str();
  }
  if (spec.text) {
    model.vocabSize = spec.text->vocabSize;
    model.maxContext = spec.text->maxPositions;
    model.hiddenSize = spec.text->hiddenSize;
    model.numLayers = spec.text->numLayers;
    model.numHeads = model.numKVHeads = spec.text->numHeads;
  } else {
    model.maxContext = spec.image->tokens();
    model.hiddenSize = spec.image->hiddenSize;
    model.numLayers = spec.image->numLayers;
    model.numHeads = model.numKVHeads = spec.image->numHeads;
  }
  if (spec.image) {
    llvm::Expected<ImagePreprocessingAttr> preprocessing =
        readImagePreprocessing(context,
                               llvm::sys::path::parent_path(configPath),
                               spec.image->imageSize,
                               /*sizeIsShortestEdge=*/true);
    if (!preprocessing)
      return preprocessing.takeError();
    model.imagePreprocessing = *preprocessing;
  }
  return llvm::Error::success();
}

llvm::Error mlir::tfm::loadClipTextPair(MLIRContext &context,
                                        ConfigReader &first,
                                        ConfigReader &second,
                                        llvm::StringRef secondPrefix,
                                        llvm::StringRef checkpoint,
                                        LoadedModel &model) {
  ClipSpec spec;
  spec.family = "clip_text_model";
  spec.text.emplace();
  spec.text2.emplace();
  readText(first, *spec.text);
  readText(second, *spec.text2);
  spec.text2->prefix = (secondPrefix + spec.text2->prefix).str();
  spec.text2->projection = (secondPrefix + "text_projection.weight").str();
  spec.projectionDim = second.integer("projection_dim", 512);
  if (spec.projectionDim <= 0)
    second.fail("projection_dim must be positive");
  if (llvm::Error err = first.takeError())
    return std::move(err);
  if (llvm::Error err = second.takeError())
    return std::move(err);
  const TextSpec &one = *spec.text, &two = *spec.text2;
  if (one.maxPositions != two.maxPositions || one.vocabSize != two.vocabSize)
    return makeError(second.file() + ": the second text encoder reads " +
                     llvm::Twine(two.maxPositions) + " positions of a " +
                     llvm::Twine(two.vocabSize) + "-token vocabulary, the "
                     "first " + llvm::Twine(one.maxPositions) + " of " +
                     llvm::Twine(one.vocabSize) + ": the pipeline tokenizes "
                     "a prompt once for both");
  if (one.numLayers < 2 || two.numLayers < 2)
    return makeError(first.file() + ": SDXL conditions on each text "
                     "encoder's penultimate layer; both need two or more");

  context.loadDialect<TfmDialect, func::FuncDialect, arith::ArithDialect,
                      tensor::TensorDialect>();
  ClipIRBuilder builder(context, spec, model.weights, checkpoint);
  // The first tower's last block and final_layer_norm are past the states
  // the pipeline reads; the position ids buffers are not weights.
  std::string lastBlock =
      one.prefix + "encoder.layers." + std::to_string(one.numLayers - 1) + ".";
  std::string firstNorm = one.prefix + "final_layer_norm.";
  auto ignored = [&](llvm::StringRef n) {
    return n.starts_with(lastBlock) || n.starts_with(firstNorm) ||
           n.ends_with("embeddings.position_ids");
  };
  auto module = builder.declarations.finish(builder.build(), ignored);
  if (!module)
    return module.takeError();
  model.module = std::move(*module);
  model.family = spec.family;
  model.addBos = false;
  model.vocabSize = one.vocabSize;
  model.maxContext = one.maxPositions;
  model.hiddenSize = one.hiddenSize + two.hiddenSize;
  model.numLayers = one.numLayers;
  model.numHeads = model.numKVHeads = one.numHeads;
  return llvm::Error::success();
}
