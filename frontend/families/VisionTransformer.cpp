//===- VisionTransformer.cpp - ViT, DeiT and AST as tfm IR --------------===//
//
// transformers' ViTModel / DeiTModel and their image classifiers, and the
// Audio Spectrogram Transformer (ASTModel, ASTForAudioClassification): a
// DeiT over a [mel bins, frames] filterbank in overlapping patches
// (16x16 every 10 by default), its head on the mean of the class and
// distillation tokens:
//   x = [cls; (distillation;) patches(pixels)·Wpᵀ + bp] + positions
//   per layer (pre-norm):
//     x = x + Wo·attention(LN1(x))      (bidirectional)
//     x = x + W2·gelu(W1·LN2(x))
//   x = LN(x)
// @encode(pixels [C, H, W]) returns x; @classify returns the class logits
// of the first token (DeiT with a teacher: the mean of the class token's
// and the distillation token's heads; AST: LN and a dense layer on the mean
// of the two tokens).
//
//===----------------------------------------------------------------------===//

#include "frontend/families/VisionTransformer.h"
#include "frontend/ErrorMessages.h"
#include "frontend/builders/CheckedAttributes.h"
#include "frontend/builders/DecoderSpec.h"
#include "frontend/builders/ModelIRBuilder.h"
#include "frontend/families/FamilyTable.h"
#include "frontend/families/Swin.h"
#include "frontend/formats/JsonFile.h"
#include "ir/TfmOps.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Path.h"

#include <cmath>

using namespace mlir;
using namespace mlir::tfm;

namespace {

struct VisionSpec {
  std::string family, prefix; // "vit." / "deit." in classifiers' checkpoints
  int64_t hiddenSize = 0, numLayers = 0, numHeads = 0, intermediateSize = 0,
          height = 0, width = 0, patchSize = 0, channels = 3;
  /// Overlapping patches (AST): the rows and columns between patches; 0:
  /// the patch size.
  int64_t strideY = 0, strideX = 0;
  /// AST's input is the [mel bins, frames] filterbank, one channel.
  bool spectrogram = false;
  double normEpsilon = 1e-12;
  ActivationKind activation = ActivationKind::gelu;
  bool distillationToken = false;
  /// Heads: none (@encode), `classifier` on the class token, DeiT's
  /// teacher pair averaged, or AST's MLP head on the two tokens' mean.
  enum class Head {
    None,
    Class,
    ClassAndDistillation,
    TokensMean
  } head = Head::None;
  int64_t labels = 0;

  int64_t stepY() const { return strideY ? strideY : patchSize; }
  int64_t stepX() const { return strideX ? strideX : patchSize; }
  int64_t patches() const {
    return ((height - patchSize) / stepY() + 1) *
           ((width - patchSize) / stepX() + 1);
  }
  int64_t tokens() const { return patches() + 1 + (distillationToken ? 1 : 0); }
};

class VisionIRBuilder : public ModelIRBuilder {
public:
  VisionIRBuilder(MLIRContext &context, const VisionSpec &spec,
                  const WeightStore &weights, llvm::StringRef checkpoint)
      : ModelIRBuilder(context, weights, checkpoint, spec.family),
        spec(spec) {}

  OwningOpRef<ModuleOp> build();

private:
  RankedTensorType matrix(int64_t rows, int64_t columns) {
    return RankedTensorType::get({rows, columns}, b.getF32Type());
  }
  std::string name(llvm::StringRef suffix) { return spec.prefix + suffix.str(); }
  Value norm(Value x, const std::string &n) {
    return declarations.biasedLayerNorm(b, x, n, spec.hiddenSize,
                                        spec.normEpsilon);
  }
  /// Row `row` of x ([tokens, n]) as a [n] vector.
  Value row(Value x, int64_t row) {
    int64_t n = cast<RankedTensorType>(x.getType()).getDimSize(1);
    return tensor::ExtractSliceOp::create(
        b, x.getLoc(), RankedTensorType::get({n}, b.getF32Type()), x,
        ValueRange(), ValueRange(), ValueRange(),
        b.getDenseI64ArrayAttr({row, 0}), b.getDenseI64ArrayAttr({1, n}),
        b.getDenseI64ArrayAttr({1, 1}));
  }
  Value embeddings(Value pixels);
  Value layer(Value x, int64_t index);

  const VisionSpec &spec;
};

Value VisionIRBuilder::embeddings(Value pixels) {
  Location loc = named("embeddings");
  int64_t d = spec.hiddenSize, p = spec.patchSize, c = spec.channels,
          n = spec.patches(), tokens = spec.tokens();
  // The stride-p convolution: a GEMM over the flattened patches with the
  // [d, C, p, p] kernel read as [d, C·p·p].
  if (spec.spectrogram) // [mel bins, frames] as a one-channel image
    pixels = tensor::ExpandShapeOp::create(
        b, loc,
        RankedTensorType::get({1, spec.height, spec.width}, b.getF32Type()),
        pixels, SmallVector<ReassociationIndices>{{0, 1}, {2}});
  DenseI64ArrayAttr strides =
      spec.strideY || spec.strideX
          ? b.getDenseI64ArrayAttr({spec.stepY(), spec.stepX()})
          : DenseI64ArrayAttr();
  Value patches = PatchesOp::create(b, loc, matrix(n, c * p * p), pixels,
                                    b.getI64IntegerAttr(p), strides);
  std::string projection = name("embeddings.patch_embeddings.projection.weight");
  Value kernel =
      declarations.readAs(b, projection, {d, c, p, p}, {d, c * p * p});
  Value x = LinearOp::create(b, loc, matrix(n, d), patches, kernel,
                             weight(biasName(projection), {d}),
                             ActivationKindAttr(), UnitAttr());
  SmallVector<Value> rows = {declarations.readAs(
      b, name("embeddings.cls_token"), {1, 1, d}, {1, d})};
  if (spec.distillationToken)
    rows.push_back(declarations.readAs(
        b, name("embeddings.distillation_token"), {1, 1, d}, {1, d}));
  rows.push_back(x);
  x = ConcatOp::create(b, loc, matrix(tokens, d), rows);
  Value positions = declarations.readAs(
      b, name("embeddings.position_embeddings"), {1, tokens, d}, {tokens, d});
  return AddOp::create(b, loc, x, positions);
}

Value VisionIRBuilder::layer(Value x, int64_t index) {
  auto n = [&](llvm::StringRef what) {
    return name(("encoder.layer." + llvm::Twine(index) + "." + what).str());
  };
  int64_t heads = spec.numHeads, headDim = spec.hiddenSize / heads,
          d = spec.hiddenSize;
  Value h = norm(x, n("layernorm_before.weight"));
  Value q = linear(h, n("attention.attention.query.weight"), {heads, headDim});
  Value k = linear(h, n("attention.attention.key.weight"), {heads, headDim});
  Value v = linear(h, n("attention.attention.value.weight"), {heads, headDim});
  Value attended = AttentionOp::create(
      b, named("layer " + llvm::Twine(index) + " attention"), q.getType(), q, k,
      v, /*bias=*/Value(), /*lengths=*/Value(), /*relative_bias=*/Value(),
      /*sinks=*/Value(), b.getF32FloatAttr(1.0 / std::sqrt(double(headDim))),
      /*causal=*/UnitAttr(), /*window=*/IntegerAttr(),
      /*max_distance=*/IntegerAttr(), /*softcap=*/FloatAttr());
  x = AddOp::create(b, x.getLoc(), x,
                    linear(attended, n("attention.output.dense.weight"), {d}));
  h = norm(x, n("layernorm_after.weight"));
  h = linear(h, n("intermediate.dense.weight"), {spec.intermediateSize},
             spec.activation);
  return AddOp::create(b, x.getLoc(), x, linear(h, n("output.dense.weight"), {d}));
}

OwningOpRef<ModuleOp> VisionIRBuilder::build() {
  OwningOpRef<ModuleOp> module = ModuleOp::create(named(spec.family));
  b.setInsertionPointToEnd(module->getBody());
  MLIRContext *ctx = b.getContext();
  auto pixelsType =
      spec.spectrogram
          ? RankedTensorType::get({spec.height, spec.width}, b.getF32Type())
          : RankedTensorType::get({spec.channels, spec.height, spec.width},
                                  b.getF32Type());
  bool classifies = spec.head != VisionSpec::Head::None;
  Type result = classifies
                    ? Type(RankedTensorType::get({spec.labels}, b.getF32Type()))
                    : Type(matrix(spec.tokens(), spec.hiddenSize));
  llvm::StringRef entryName = classifies ? "classify" : "encode";
  auto function = func::FuncOp::create(b, named(entryName), entryName,
                                       b.getFunctionType({pixelsType}, {result}));
  function.setArgAttr(0, kInputArgAttrName,
                      InputRoleAttr::get(ctx, InputRole::features));
  function.setResultAttr(0, kOutputResultAttrName,
                         OutputRoleAttr::get(ctx, classifies
                                                      ? OutputRole::logits
                                                      : OutputRole::hidden_states));
  Block *entry = function.addEntryBlock();
  b.setInsertionPointToStart(entry);
  Value x = embeddings(entry->getArgument(0));
  for (int64_t i = 0; i < spec.numLayers; ++i)
    x = layer(x, i);
  x = norm(x, name("layernorm.weight"));
  Location at = named("classifier");
  if (spec.head == VisionSpec::Head::Class) {
    // Position-wise, so the head runs on every token and keeps the first.
    x = row(linear(x, "classifier.weight", {spec.labels}), 0);
  } else if (spec.head == VisionSpec::Head::ClassAndDistillation) {
    Value cls = row(linear(x, "cls_classifier.weight", {spec.labels}), 0);
    Value distilled =
        row(linear(x, "distillation_classifier.weight", {spec.labels}), 1);
    auto half = arith::ConstantOp::create(
        b, at, DenseElementsAttr::get(cast<ShapedType>(result), 0.5f));
    x = MulOp::create(b, at, AddOp::create(b, at, cls, distilled), half);
  } else if (spec.head == VisionSpec::Head::TokensMean) {
    // (h[0] + h[1]) / 2, then ASTMLPHead: LayerNorm and a dense layer.
    int64_t d = spec.hiddenSize;
    Value tokens = tensor::ExtractSliceOp::create(
        b, at, matrix(2, d), x, ValueRange(), ValueRange(), ValueRange(),
        b.getDenseI64ArrayAttr({0, 0}), b.getDenseI64ArrayAttr({2, d}),
        b.getDenseI64ArrayAttr({1, 1}));
    Value mean = PoolOp::create(
        b, at, RankedTensorType::get({d}, b.getF32Type()),
        PoolingKindAttr::get(ctx, PoolingKind::mean), tokens,
        /*lengths=*/Value(), UnitAttr());
    Value pooled = tensor::ExpandShapeOp::create(
        b, at, matrix(1, d), mean, SmallVector<ReassociationIndices>{{0, 1}});
    pooled = declarations.biasedLayerNorm(b, pooled, "classifier.layernorm.weight",
                                          d, spec.normEpsilon);
    x = tensor::CollapseShapeOp::create(
        b, at, result, linear(pooled, "classifier.dense.weight", {spec.labels}),
        SmallVector<ReassociationIndices>{{0, 1}});
  }
  func::ReturnOp::create(b, at, x);
  return module;
}

/// ASTFeatureExtractor's preprocessor_config.json: Kaldi filterbanks of
/// `melBins` x `frames` (the model's num_mel_bins and max_length), 25 ms
/// windows every 10 ms at 16 kHz (400 and 160 samples: the extractor's,
/// whatever the rate), a 512-point FFT.
llvm::Expected<AudioPreprocessingAttr>
readFilterbankPreprocessing(MLIRContext &context, llvm::StringRef directory,
                            int64_t melBins, int64_t frames) {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, "preprocessor_config.json");
  llvm::json::Object none;
  std::optional<llvm::json::Value> holder;
  llvm::Expected<const llvm::json::Object *> fields =
      readOptionalJsonObject(path, &none, holder);
  if (!fields)
    return fields.takeError();
  int64_t rate = (*fields)->getInteger("sampling_rate").value_or(16000);
  int64_t bins = (*fields)->getInteger("num_mel_bins").value_or(128);
  int64_t length = (*fields)->getInteger("max_length").value_or(1024);
  if (bins != melBins || length != frames)
    return makeError(path + ": the features are " + llvm::Twine(bins) +
                     " mel bins x " + llvm::Twine(length) +
                     " frames; the model takes " + llvm::Twine(melBins) +
                     " x " + llvm::Twine(frames) +
                     " (num_mel_bins, max_length)");
  bool normalize = (*fields)->getBoolean("do_normalize").value_or(true);
  double mean = (*fields)->getNumber("mean").value_or(-4.2677393);
  double std = (*fields)->getNumber("std").value_or(4.5689974);
  const int64_t window = 400, hop = 160, nFft = 512;
  Builder b(&context);
  return getCheckedAttr<AudioPreprocessingAttr>(
      path, &context, melBins, rate, nFft, hop, (frames - 1) * hop + window,
      /*kaldi=*/true, window, frames, normalize, b.getF32FloatAttr(mean),
      b.getF32FloatAttr(std));
}

} // namespace

namespace {

/// A vision family: config.json's model_type, whether Swin's reader
/// (Swin.cpp) reads it, else the ViT reader here with what differs: a
/// distillation token (DeiT's), patches of a spectrogram (AST: a DeiT
/// over a filterbank), and the scope its checkpoints keep the model under.
struct VisionFamily {
  llvm::StringLiteral modelType;
  bool swin;
  bool distillationToken;
  bool spectrogram;
  llvm::StringLiteral scope;
};

/// Every vision family, in the order messages list them.
const VisionFamily kVisionFamilies[] = {
    {"vit", false, false, false, "vit"},
    {"deit", false, true, false, "deit"},
    {"swin", true, false, false, "swin"},
    {"audio-spectrogram-transformer", false, true, true,
     "audio_spectrogram_transformer"},
};

} // namespace

bool mlir::tfm::isVisionFamily(llvm::StringRef modelType) {
  return findFamily(kVisionFamilies, &VisionFamily::modelType, modelType) !=
         nullptr;
}

std::string mlir::tfm::supportedVisionFamilies() {
  return familyNames(kVisionFamilies, &VisionFamily::modelType);
}

llvm::Error mlir::tfm::loadVisionTransformer(
    MLIRContext &context, llvm::StringRef modelType, ConfigReader &config,
    ArrayRef<std::string> architectures, std::vector<std::string> labels,
    llvm::StringRef checkpoint, llvm::StringRef configPath,
    LoadedModel &model) {
  const VisionFamily &family =
      *findFamily(kVisionFamilies, &VisionFamily::modelType, modelType);
  if (family.swin)
    return loadSwin(context, config, architectures, std::move(labels),
                    checkpoint, configPath, model);
  const WeightStore &weights = model.weights;
  VisionSpec spec;
  spec.family = modelType.str();
  spec.hiddenSize = config.integer("hidden_size");
  spec.numLayers = config.integer("num_hidden_layers");
  spec.numHeads = config.integer("num_attention_heads");
  spec.intermediateSize = config.integer("intermediate_size");
  bool ast = family.spectrogram;
  spec.spectrogram = ast;
  spec.patchSize = config.integer("patch_size", 16);
  if (ast) {
    // The filterbank [num_mel_bins, max_length] in patches every
    // frequency_stride bins and time_stride frames.
    spec.height = config.integer("num_mel_bins", 128);
    spec.width = config.integer("max_length", 1024);
    spec.strideY = config.integer("frequency_stride", 10);
    spec.strideX = config.integer("time_stride", 10);
    spec.channels = 1;
  } else {
    spec.height = spec.width = config.integer("image_size", 224);
    spec.channels = config.integer("num_channels", 3);
  }
  spec.normEpsilon = config.number("layer_norm_eps", 1e-12);
  spec.activation = config.activation("hidden_act", "gelu");
  if (!config.boolean("qkv_bias", true))
    config.fail("qkv_bias false is not supported (every projection has a "
                "bias here)");
  if (llvm::Error err = config.takeError())
    return std::move(err);
  if (spec.hiddenSize <= 0 || spec.numLayers <= 0 || spec.numHeads <= 0 ||
      spec.intermediateSize <= 0 || spec.channels <= 0 ||
      spec.patchSize <= 0 || spec.height <= 0 || spec.width <= 0 ||
      (ast && (spec.strideY <= 0 || spec.strideX <= 0)))
    return makeError(configPath + ": sizes must be positive");
  if (spec.hiddenSize % spec.numHeads)
    return makeError(configPath + ": hidden_size " +
                     llvm::Twine(spec.hiddenSize) +
                     " is not a multiple of num_attention_heads " +
                     llvm::Twine(spec.numHeads));
  if (ast && (spec.height < spec.patchSize || spec.width < spec.patchSize))
    return makeError(configPath + ": patch_size " +
                     llvm::Twine(spec.patchSize) + " does not fit the " +
                     llvm::Twine(spec.height) + " x " + llvm::Twine(spec.width) +
                     " filterbank (num_mel_bins x max_length)");
  if (!ast && spec.height % spec.patchSize)
    return makeError(configPath + ": patch_size " +
                     llvm::Twine(spec.patchSize) + " does not divide image_size " +
                     llvm::Twine(spec.height));

  // The architecture picks the head; the checkpoint's prefix follows it.
  std::string architecture = architectures.empty() ? "" : architectures.front();
  spec.distillationToken = family.distillationToken;
  if (architecture == "ViTForImageClassification" ||
      architecture == "DeiTForImageClassification") {
    spec.head = VisionSpec::Head::Class;
  } else if (architecture == "DeiTForImageClassificationWithTeacher") {
    spec.head = VisionSpec::Head::ClassAndDistillation;
  } else if (architecture == "ASTForAudioClassification") {
    spec.head = VisionSpec::Head::TokensMean;
  } else if (!architecture.empty() && architecture != "ViTModel" &&
             architecture != "DeiTModel" && architecture != "ASTModel") {
    return makeError(configPath + ": the " + architecture + " head of " +
                     modelType + " is not supported yet");
  }
  spec.labels = int64_t(labels.size());
  if (spec.head != VisionSpec::Head::None && spec.labels <= 0)
    return makeError(configPath + ": a classifier needs id2label");
  std::string prefix = family.scope.str() + ".";
  if (weights.lookup(prefix + "embeddings.cls_token"))
    spec.prefix = prefix;

  context.loadDialect<TfmDialect, func::FuncDialect, arith::ArithDialect,
                      tensor::TensorDialect>();
  VisionIRBuilder builder(context, spec, weights, checkpoint);
  // ViTModel's pooler (dense + tanh on the class token) is not an output
  // here; its weights may stay unused.
  auto ignored = [&](llvm::StringRef n) {
    return n.starts_with(spec.prefix + "pooler.");
  };
  auto module = builder.declarations.finish(builder.build(), ignored);
  if (!module)
    return module.takeError();
  model.module = std::move(*module);
  model.family = spec.family;
  model.addBos = false;
  if (spec.head != VisionSpec::Head::None)
    model.labels = std::move(labels);
  model.maxContext = spec.tokens();
  llvm::StringRef directory = llvm::sys::path::parent_path(configPath);
  if (ast) {
    llvm::Expected<AudioPreprocessingAttr> audio =
        readFilterbankPreprocessing(context, directory, spec.height,
                                    spec.width);
    if (!audio)
      return audio.takeError();
    model.audioPreprocessing = *audio;
  } else {
    llvm::Expected<ImagePreprocessingAttr> preprocessing =
        readImagePreprocessing(context, directory, spec.height);
    if (!preprocessing)
      return preprocessing.takeError();
    model.imagePreprocessing = *preprocessing;
  }
  model.hiddenSize = spec.hiddenSize;
  model.numLayers = spec.numLayers;
  model.numHeads = model.numKVHeads = spec.numHeads;
  return llvm::Error::success();
}

