//===- ClipBuilder.cpp - CLIP's text and image encoders as tfm IR ---------===//
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

#include "frontend/builders/ClipBuilder.h"
#include "frontend/builders/ModelIRBuilder.h"
#include "ir/TfmOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;

namespace {

class ClipIRBuilder : public ModelIRBuilder {
public:
  ClipIRBuilder(MLIRContext &context, const ClipSpec &spec,
                const WeightStore &weights, llvm::StringRef checkpoint)
      : ModelIRBuilder(context, weights, checkpoint, spec.family), spec(spec) {}

  OwningOpRef<ModuleOp> build();
  /// A module of @encode_image alone: `tokens`' image tokens.
  OwningOpRef<ModuleOp> buildImageTokens(const ImageTokensSpec &tokens);

private:
  RankedTensorType vector(int64_t n) {
    return RankedTensorType::get({n}, b.getF32Type());
  }
  Value norm(const ClipTowerSpec &tower, Value x, llvm::StringRef name) {
    return declarations.biasedLayerNorm(b, x, tower.prefix + name.str(),
                                        tower.hiddenSize, tower.normEpsilon);
  }
  Value layer(const ClipTowerSpec &tower, Value x, int64_t index, bool causal);
  /// The pooled [d] state through the tower's projection, if it has one.
  Value project(const ClipTowerSpec &tower, Value pooled);
  /// A [1, d] row as [d].
  Value vectorOf(Value row, int64_t d, llvm::StringRef what);
  /// SigLIP's pooling of the image's hidden state: its learned probe's
  /// attention over the rows, then a residual MLP (head.*).
  Value attentionPool(const ClipImageSpec &image, Value hidden);

  /// Token and position embeddings, then the first `layers` blocks.
  Value textStates(const ClipTextSpec &text, Value ids, int64_t layers);
  Value textHidden(Value ids);
  Value textEmbedding(Value ids);
  /// The pooled state of `hidden` (the end-of-text row) through the
  /// tower's projection.
  Value textPooled(const ClipTextSpec &text, Value hidden, Value ids);
  /// SDXL's @encode_text(ids, ids_2) (loadClipTextPair).
  void buildTextPair(ModuleOp module);
  /// The image tower's embeddings and pre_layrnorm, then its first
  /// `layers` blocks.
  Value imageStates(Value pixels, int64_t layers);
  Value imageHidden(Value pixels);
  Value imageEmbedding(Value pixels);

  /// LLaVA's image tokens (ImageTokensSpec).
  Value imageTokens(const ImageTokensSpec &tokens, Value pixels);
  /// Gemma 3's projector over the tower's last hidden state.
  /// The tower's last hidden state with each of `tokens.square()`'s
  /// squares' patches as consecutive rows.
  Value squaresTogether(const ImageTokensSpec &tokens, Value pixels);
  Value pooledImageTokens(const ImageTokensSpec &tokens, Value pixels);
  Value shuffledImageTokens(const ImageTokensSpec &tokens, Value pixels);

  /// func @name(input) -> result, its body from `body`.
  void entryPoint(llvm::StringRef name, Type input, InputRole role,
                  OutputRole output, llvm::function_ref<Value(Value)> body);
  /// func @name(input) -> results, one role each.
  void entryPoint(llvm::StringRef name, Type input, InputRole role,
                  llvm::ArrayRef<OutputRole> outputs,
                  llvm::function_ref<SmallVector<Value>(Value)> body);

  const ClipSpec &spec;
};

Value ClipIRBuilder::layer(const ClipTowerSpec &tower, Value x, int64_t index,
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
  Value attended =
      attend(named(tower.prefix + "layer " + llvm::Twine(index) + " attention"),
             q, k, v, causal);
  x = AddOp::create(b, x.getLoc(), x,
                    linear(attended, at + "self_attn.out_proj.weight", {d}));
  h = norm(tower, x,
           "encoder.layers." + std::to_string(index) + ".layer_norm2.weight");
  h = linear(h, at + "mlp.fc1.weight", {tower.intermediateSize},
             tower.activation);
  return AddOp::create(b, x.getLoc(), x, linear(h, at + "mlp.fc2.weight", {d}));
}

Value ClipIRBuilder::project(const ClipTowerSpec &tower, Value pooled) {
  if (tower.projection.empty())
    return pooled;
  // A [d] vector through the [projection_dim, d] matrix: as one row.
  // SigLIP's text head has a bias.
  Location loc = named(tower.projection);
  int64_t d = tower.hiddenSize;
  Value row = tensor::ExpandShapeOp::create(
      b, loc, matrix(1, d), pooled, SmallVector<ReassociationIndices>{{0, 1}});
  Value projected = tower.siglip
                        ? linear(row, tower.projection, {spec.projectionDim})
                        : declarations.unbiasedLinear(b, row, tower.projection,
                                                      {spec.projectionDim});
  return vectorOf(projected, spec.projectionDim, tower.projection);
}

Value ClipIRBuilder::vectorOf(Value row, int64_t d, llvm::StringRef what) {
  return tensor::CollapseShapeOp::create(
      b, named(what), vector(d), row,
      SmallVector<ReassociationIndices>{{0, 1}});
}

Value ClipIRBuilder::attentionPool(const ClipImageSpec &image, Value hidden) {
  std::string at = image.prefix + "head.";
  int64_t d = image.hiddenSize, heads = image.numHeads;
  Value probe = declarations.readAs(b, at + "probe", {1, 1, d}, {1, d});
  // nn.MultiheadAttention's packed in_proj, split by the family reader.
  Value q = linear(probe, at + "attention.q_proj.weight", {heads, d / heads});
  Value k = linear(hidden, at + "attention.k_proj.weight", {heads, d / heads});
  Value v = linear(hidden, at + "attention.v_proj.weight", {heads, d / heads});
  Value attended = attend(named("attention pooling"), q, k, v,
                          /*causal=*/false);
  Value x = linear(attended, at + "attention.out_proj.weight", {d});
  Value h = declarations.biasedLayerNorm(b, x, at + "layernorm.weight", d,
                                         image.normEpsilon);
  h = linear(h, at + "mlp.fc1.weight", {image.intermediateSize},
             image.activation);
  x = AddOp::create(b, x.getLoc(), x, linear(h, at + "mlp.fc2.weight", {d}));
  return vectorOf(x, d, "attention pooling");
}

Value ClipIRBuilder::textStates(const ClipTextSpec &text, Value ids,
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
    x = layer(text, x, i, /*causal=*/!text.siglip);
  return x;
}

Value ClipIRBuilder::textHidden(Value ids) {
  const ClipTextSpec &text = *spec.text;
  return norm(text, textStates(text, ids, text.numLayers),
              "final_layer_norm.weight");
}

Value ClipIRBuilder::textPooled(const ClipTextSpec &text, Value hidden,
                                Value ids) {
  if (text.siglip) {
    // The last position's row.
    Location loc = named("last-row pooling");
    int64_t d = text.hiddenSize;
    Value count = tensor::DimOp::create(b, loc, hidden, 0);
    Value last = arith::SubIOp::create(
        b, loc, count, arith::ConstantIndexOp::create(b, loc, 1));
    Value row = tensor::ExtractSliceOp::create(
        b, loc, matrix(1, d), hidden, ValueRange{last}, ValueRange(),
        ValueRange(), b.getDenseI64ArrayAttr({ShapedType::kDynamic, 0}),
        b.getDenseI64ArrayAttr({1, d}), b.getDenseI64ArrayAttr({1, 1}));
    return project(text, vectorOf(row, d, "last-row pooling"));
  }
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
  const ClipTextSpec &first = *spec.text, &second = *spec.text2;
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
  Value pooled =
      textPooled(second, norm(second, last2, "final_layer_norm.weight"), ids2);
  Value states = tensor::ConcatOp::create(b, named("prompt_embeds"), 1,
                                          ValueRange{states1, penultimate2});
  func::ReturnOp::create(b, named("encode_text"), ValueRange{states, pooled});
  function.setType(
      b.getFunctionType({ids, ids}, {states.getType(), pooled.getType()}));
  function.setResultAttr(0, kOutputResultAttrName,
                         OutputRoleAttr::get(ctx, OutputRole::hidden_states));
  function.setResultAttr(1, kOutputResultAttrName,
                         OutputRoleAttr::get(ctx, OutputRole::embedding));
}

Value ClipIRBuilder::imageStates(Value pixels, int64_t layers) {
  const ClipImageSpec &image = *spec.image;
  Location loc = named("image embeddings");
  int64_t d = image.hiddenSize, p = image.patchSize, c = image.channels,
          n = image.patches(), tokens = image.tokens();
  // The stride-p convolution (CLIP's without a bias): a GEMM over the
  // flattened patches with the [d, C, p, p] kernel read as [d, C·p·p].
  Value patches = PatchesOp::create(b, loc, matrix(n, c * p * p), pixels,
                                    b.getI64IntegerAttr(p),
                                    /*strides=*/DenseI64ArrayAttr());
  std::string kernel = image.prefix + "embeddings.patch_embedding.weight";
  Value bias =
      image.siglip
          ? weight(image.prefix + "embeddings.patch_embedding.bias", {d})
          : Value();
  Value x = LinearOp::create(
      b, loc, matrix(n, d), patches,
      declarations.readAs(b, kernel, {d, c, p, p}, {d, c * p * p}), bias,
      ActivationKindAttr(), UnitAttr());
  if (!image.siglip) {
    Value cls = declarations.readAs(
        b, image.prefix + "embeddings.class_embedding", {d}, {1, d});
    x = ConcatOp::create(b, loc, matrix(tokens, d), ValueRange{cls, x});
  }
  Value positions = weight(
      image.prefix + "embeddings.position_embedding.weight", {tokens, d});
  x = AddOp::create(b, loc, x, positions);
  if (!image.siglip)
    x = norm(image, x, "pre_layrnorm.weight");
  for (int64_t i = 0; i < layers; ++i)
    x = layer(image, x, i, /*causal=*/false);
  return x;
}

Value ClipIRBuilder::imageHidden(Value pixels) {
  const ClipImageSpec &image = *spec.image;
  Value x = imageStates(pixels, image.numLayers);
  // SigLIP's last hidden state is after post_layernorm.
  return image.siglip ? norm(image, x, "post_layernorm.weight") : x;
}

Value ClipIRBuilder::imageEmbedding(Value pixels) {
  const ClipImageSpec &image = *spec.image;
  Value hidden = imageHidden(pixels);
  if (image.siglip)
    return attentionPool(image, hidden);
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

Value ClipIRBuilder::squaresTogether(const ImageTokensSpec &tokens,
                                     Value pixels) {
  const ClipImageSpec &image = tokens.tower;
  int64_t d = image.hiddenSize, side = tokens.side(), k = tokens.square(),
          squares = side / k;
  Value x =
      norm(image, imageStates(pixels, tokens.layers), "post_layernorm.weight");
  // Each k x k square's patches as consecutive rows (the grid is
  // row-major), the squares row by row.
  SmallVector<int64_t> order;
  for (int64_t py = 0; py < squares; ++py)
    for (int64_t px = 0; px < squares; ++px)
      for (int64_t ky = 0; ky < k; ++ky)
        for (int64_t kx = 0; kx < k; ++kx)
          order.push_back((py * k + ky) * side + px * k + kx);
  return GatherRowsOp::create(b, named("squares of patches"),
                              matrix(side * side, d), x,
                              b.getDenseI64ArrayAttr(order));
}

Value ClipIRBuilder::shuffledImageTokens(const ImageTokensSpec &tokens,
                                         Value pixels) {
  int64_t d = tokens.tower.hiddenSize, k = tokens.square(),
          rows = tokens.rows();
  // pixel_shuffle: a square's k * k patches' states side by side, the
  // square's rows' patches in order ([rows, k * k, d] -> [rows, k * k * d]).
  Value x = squaresTogether(tokens, pixels);
  Location loc = named("pixel shuffle");
  x = tensor::ExpandShapeOp::create(
      b, loc, RankedTensorType::get({rows, k * k, d}, b.getF32Type()), x,
      SmallVector<ReassociationIndices>{{0, 1}, {2}});
  x = tensor::CollapseShapeOp::create(
      b, loc, matrix(rows, k * k * d), x,
      SmallVector<ReassociationIndices>{{0}, {1, 2}});
  return declarations.unbiasedLinear(
      b, x, tokens.projector + "modality_projection.proj.weight",
      {tokens.textHidden});
}

Value ClipIRBuilder::pooledImageTokens(const ImageTokensSpec &tokens,
                                       Value pixels) {
  int64_t d = tokens.tower.hiddenSize, k = tokens.poolKernel,
          rows = tokens.rows();
  // The mean of each square's rows: nn.AvgPool2d(k).
  Value x = squaresTogether(tokens, pixels);
  Location loc = named("image pooling");
  auto lengthsType = RankedTensorType::get({rows}, b.getI32Type());
  Value lengths = arith::ConstantOp::create(
      b, loc, DenseElementsAttr::get(lengthsType, static_cast<int32_t>(k * k)));
  x = PoolOp::create(b, loc, matrix(rows, d),
                     PoolingKindAttr::get(b.getContext(), PoolingKind::mean), x,
                     lengths, UnitAttr());
  Value gamma = weight(tokens.projector + "mm_soft_emb_norm.weight", {d});
  x = RmsNormOp::create(
      b, named("projector norm"), x.getType(), x, gamma,
      b.getF32FloatAttr(static_cast<float>(tokens.projectorNormEpsilon)));
  return declarations.unbiasedLinear(
      b, x, tokens.projector + "mm_input_projection_weight",
      {tokens.textHidden});
}

Value ClipIRBuilder::imageTokens(const ImageTokensSpec &tokens, Value pixels) {
  if (tokens.poolKernel)
    return pooledImageTokens(tokens, pixels);
  if (tokens.pixelShuffle)
    return shuffledImageTokens(tokens, pixels);
  int64_t d = tokens.tower.hiddenSize, rows = tokens.rows();
  Value x = imageStates(pixels, tokens.layers);
  if (!tokens.keepClassToken)
    x = tensor::ExtractSliceOp::create(
        b, named("patch tokens"), matrix(rows, d), x, ValueRange(),
        ValueRange(), ValueRange(), b.getDenseI64ArrayAttr({1, 0}),
        b.getDenseI64ArrayAttr({rows, d}), b.getDenseI64ArrayAttr({1, 1}));
  x = linear(x, tokens.projector + "linear_1.weight", {tokens.textHidden},
             tokens.activation);
  return linear(x, tokens.projector + "linear_2.weight", {tokens.textHidden});
}

void ClipIRBuilder::entryPoint(llvm::StringRef name, Type input, InputRole role,
                               OutputRole output,
                               llvm::function_ref<Value(Value)> body) {
  entryPoint(name, input, role, {output},
             [&](Value in) { return SmallVector<Value>{body(in)}; });
}

void ClipIRBuilder::entryPoint(
    llvm::StringRef name, Type input, InputRole role,
    llvm::ArrayRef<OutputRole> outputs,
    llvm::function_ref<SmallVector<Value>(Value)> body) {
  MLIRContext *ctx = b.getContext();
  OpBuilder::InsertionGuard guard(b);
  // The result types are known once the body is built: start with none.
  auto function = func::FuncOp::create(b, named(name), name,
                                       b.getFunctionType({input}, {}));
  function.setArgAttr(0, kInputArgAttrName, InputRoleAttr::get(ctx, role));
  Block *entry = function.addEntryBlock();
  b.setInsertionPointToStart(entry);
  SmallVector<Value> results = body(entry->getArgument(0));
  func::ReturnOp::create(b, named(name), results);
  function.setType(b.getFunctionType({input}, ValueRange(results).getTypes()));
  for (auto [i, output] : llvm::enumerate(outputs))
    function.setResultAttr(i, kOutputResultAttrName,
                           OutputRoleAttr::get(ctx, output));
}

OwningOpRef<ModuleOp>
ClipIRBuilder::buildImageTokens(const ImageTokensSpec &tokens) {
  OwningOpRef<ModuleOp> module = ModuleOp::create(named(spec.family));
  b.setInsertionPointToEnd(module->getBody());
  const ClipImageSpec &image = tokens.tower;
  auto pixels = RankedTensorType::get(
      {image.channels, image.imageSize, image.imageSize}, b.getF32Type());
  if (tokens.newline.empty()) {
    entryPoint("encode_image", pixels, InputRole::features,
               OutputRole::hidden_states,
               [&](Value in) { return imageTokens(tokens, in); });
    return module;
  }
  // LLaVA-NeXT's newline row beside a tile's rows: the runtime lays the
  // tiles out with it (tfm_image_tokens).
  entryPoint("encode_image", pixels, InputRole::features,
             {OutputRole::hidden_states, OutputRole::embedding}, [&](Value in) {
               Value rows = imageTokens(tokens, in);
               Value newline =
                   declarations.read(b, tokens.newline, {tokens.textHidden});
               return SmallVector<Value>{rows, newline};
             });
  return module;
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
    const ClipImageSpec &image = *spec.image;
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

} // namespace

llvm::Expected<OwningOpRef<ModuleOp>> mlir::tfm::buildImageTokens(
    MLIRContext &context, const ImageTokensSpec &tokens,
    const WeightStore &weights, llvm::StringRef checkpoint,
    llvm::function_ref<bool(llvm::StringRef)> isIgnoredWeight) {
  context.loadDialect<TfmDialect, func::FuncDialect, arith::ArithDialect,
                      tensor::TensorDialect>();
  ClipSpec spec;
  spec.family = "image tower";
  spec.image = tokens.tower;
  ClipIRBuilder builder(context, spec, weights, checkpoint);
  OwningOpRef<ModuleOp> module = builder.buildImageTokens(tokens);
  return builder.declarations.finish(std::move(module), isIgnoredWeight);
}

llvm::Expected<OwningOpRef<ModuleOp>> mlir::tfm::buildClip(
    MLIRContext &context, const ClipSpec &spec, const WeightStore &weights,
    llvm::StringRef checkpoint,
    llvm::function_ref<bool(llvm::StringRef)> isIgnoredWeight) {
  context.loadDialect<TfmDialect, func::FuncDialect, arith::ArithDialect,
                      tensor::TensorDialect>();
  ClipIRBuilder builder(context, spec, weights, checkpoint);
  return builder.declarations.finish(builder.build(), isIgnoredWeight);
}
