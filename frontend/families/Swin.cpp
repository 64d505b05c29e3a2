//===- Swin.cpp - Swin Transformer configs ------------------------------===//
//
// transformers' SwinModel and SwinForImageClassification from Hugging Face
// folders: the config as a SwinSpec, checked to tile into windows without
// padding (SwinBuilder.cpp makes the IR), and the image preprocessing.
//
//===----------------------------------------------------------------------===//

#include "frontend/families/Swin.h"
#include "frontend/builders/SwinBuilder.h"
#include "frontend/formats/ErrorMessages.h"
#include "frontend/formats/ImagePreprocessor.h"

#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::tfm;

llvm::Error mlir::tfm::loadSwin(MLIRContext &context, ConfigReader &config,
                                ArrayRef<std::string> architectures,
                                std::vector<std::string> labels,
                                llvm::StringRef checkpoint,
                                llvm::StringRef configPath,
                                LoadedModel &model) {
  SwinSpec spec;
  spec.imageSize = config.integer("image_size", 224);
  spec.patchSize = config.integer("patch_size", 4);
  spec.channels = config.integer("num_channels", 3);
  spec.embedDim = config.integer("embed_dim", 96);
  spec.window = config.integer("window_size", 7);
  spec.depths = config.positiveIntegers("depths");
  spec.heads = config.positiveIntegers("num_heads");
  spec.mlpRatio = config.number("mlp_ratio", 4.0);
  spec.normEpsilon = config.number("layer_norm_eps", 1e-5);
  spec.activation = config.activation("hidden_act", "gelu");
  config.refuseUnlessAbsent("use_absolute_embeddings",
                            "absolute position embeddings");
  if (!config.boolean("qkv_bias", true))
    config.fail("qkv_bias false is not supported (every projection has a "
                "bias here)");
  if (!config.boolean("patch_norm", true))
    config.fail("patch_norm false is not supported");
  if (llvm::Error err = config.takeError())
    return err;
  if (spec.depths.size() != spec.heads.size())
    return makeError(configPath + ": depths and num_heads list " +
                     llvm::Twine(spec.depths.size()) + " and " +
                     llvm::Twine(spec.heads.size()) + " stages");
  if (spec.imageSize <= 0 || spec.patchSize <= 0 || spec.channels <= 0 ||
      spec.embedDim <= 0 || spec.window <= 0 ||
      spec.imageSize % spec.patchSize)
    return makeError(configPath + ": sizes must be positive, patch_size "
                                  "dividing image_size");
  for (size_t s = 0; s < spec.depths.size(); ++s) {
    int64_t R = spec.resolution(s);
    if (R <= 0 || (s + 1 < spec.depths.size() && R % 2) ||
        R % spec.windowAt(s) || spec.width(s) % spec.heads[s])
      return makeError(
          configPath + ": stage " + llvm::Twine(s) + " (" + llvm::Twine(R) +
          " x " + llvm::Twine(R) + " tokens of " + llvm::Twine(spec.width(s)) +
          ") needs windows of window_size that tile it, an even size to "
          "merge and a width num_heads divides (tfmc does not pad)");
  }
  std::string architecture = architectures.empty() ? "" : architectures.front();
  if (architecture == "SwinForImageClassification") {
    spec.labels = int64_t(labels.size());
    if (spec.labels <= 0)
      return makeError(configPath + ": a classifier needs id2label");
  } else if (!architecture.empty() && architecture != "SwinModel") {
    return makeError(configPath + ": the " + architecture +
                     " head of swin is not supported yet");
  }
  if (model.weights.contains("swin.embeddings.norm.weight"))
    spec.prefix = "swin.";

  // The relative position tables are read into each block's window bias
  // (and their index, where a checkpoint stores it as floats, recomputed);
  // the masked-image-modeling token is training's.
  auto ignored = [&](llvm::StringRef n) {
    return n.ends_with("relative_position_bias_table") ||
           n.ends_with("relative_position_index") ||
           n.starts_with(spec.prefix + "embeddings.mask_token");
  };
  auto module = buildSwin(context, spec, model.weights, checkpoint, ignored);
  if (!module)
    return module.takeError();
  model.module = std::move(*module);
  model.family = "swin";
  model.addBos = false;
  if (spec.labels)
    model.labels = std::move(labels);
  int64_t lastR = spec.resolution(spec.depths.size() - 1);
  model.maxContext = lastR * lastR;
  llvm::Expected<ImagePreprocessingAttr> preprocessing = readImagePreprocessing(
      context, llvm::sys::path::parent_path(configPath), spec.imageSize);
  if (!preprocessing)
    return preprocessing.takeError();
  model.imagePreprocessing = *preprocessing;
  model.hiddenSize = spec.width(spec.depths.size() - 1);
  model.numLayers = 0;
  for (int64_t depth : spec.depths)
    model.numLayers += depth;
  model.numHeads = model.numKVHeads = spec.heads.back();
  return llvm::Error::success();
}
