//===- VisionTransformer.cpp - ViT, DeiT and AST configs ----------------===//
//
// ViT, DeiT and the Audio Spectrogram Transformer from Hugging Face folders:
// each family's config as a VisionSpec (VisionBuilder.cpp makes the IR), its
// head from `architectures`, and its preprocessing (preprocessor_config.json
// as image or filterbank features). Swin has its own reader (Swin.cpp).
//
//===----------------------------------------------------------------------===//

#include "frontend/families/VisionTransformer.h"
#include "frontend/builders/VisionBuilder.h"
#include "frontend/families/FamilyTable.h"
#include "frontend/families/Swin.h"
#include "frontend/formats/CheckedAttributes.h"
#include "frontend/formats/ErrorMessages.h"
#include "frontend/formats/ImagePreprocessor.h"
#include "frontend/formats/JsonFile.h"

#include "mlir/IR/Builders.h"

#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

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

  // ViTModel's pooler (dense + tanh on the class token) is not an output
  // here; its weights may stay unused.
  auto ignored = [&](llvm::StringRef n) {
    return n.starts_with(spec.prefix + "pooler.");
  };
  auto module =
      buildVisionTransformer(context, spec, weights, checkpoint, ignored);
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

