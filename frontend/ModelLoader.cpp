//===- ModelLoader.cpp - read a model description into tfm IR -----------===//

#include "frontend/ModelLoader.h"
#include "frontend/families/Clip.h"
#include "frontend/families/DecoderFamilies.h"
#include "frontend/families/EncoderFamilies.h"
#include "frontend/families/GgufModel.h"
#include "frontend/families/Llama2c.h"
#include "frontend/families/Llava.h"
#include "frontend/families/Mmproj.h"
#include "frontend/families/Seq2SeqFamilies.h"
#include "frontend/families/StableDiffusion.h"
#include "frontend/families/VisionTransformer.h"
#include "frontend/families/Wav2Vec2.h"
#include "frontend/formats/CheckedAttributes.h"
#include "frontend/formats/ErrorMessages.h"
#include "frontend/tokenizers/ChatTemplates.h"
#include "ir/StopTokensAttr.h"
#include "ir/TfmOps.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::tfm;

llvm::Expected<LoadedModel> mlir::tfm::loadModel(
    mlir::MLIRContext &context, llvm::StringRef path,
    llvm::StringRef tokenizerPath, llvm::StringRef chatTemplatePath,
    DiffusionOptions diffusion, llvm::ArrayRef<LoraAdapterSpec> adapters,
    llvm::StringRef mmprojPath) {
  if (!mmprojPath.empty() && !path.ends_with(".gguf"))
    return makeError("--mmproj is llama.cpp's image side of a GGUF text "
                     "model; '" +
                     path + "' is not a .gguf file");
  llvm::Expected<LoadedModel> model = [&]() -> llvm::Expected<LoadedModel> {
    if (llvm::sys::fs::is_directory(path))
      return loadHuggingFaceModel(context, path, diffusion, adapters);
    if (!adapters.empty() && !path.ends_with(".gguf"))
      return makeError("--lora merges PEFT LoRA adapters into a Hugging Face "
                       "decoder folder's weights, and GGUF LoRA files into a "
                       "GGUF model's; '" +
                       path + "' is neither");
    if (!diffusion.configFolder.empty()) {
      if (!path.ends_with(".safetensors"))
        return makeError("--config-folder is for a single-file Stable "
                         "Diffusion checkpoint (.safetensors), not '" +
                         path + "'");
      return loadDiffusionPipeline(context, diffusion.configFolder,
                                   diffusion, path);
    }
    if (diffusion.height || diffusion.width)
      return makeError("--image-size is for a diffusion pipeline folder (" +
                       path + " is a file)");
    if (path.ends_with(".safetensors"))
      return makeError("model '" + path + "': a single .safetensors file is "
                       "read as a Stable Diffusion checkpoint with "
                       "--config-folder DIR (a diffusers folder's configs "
                       "and tokenizer); other models are folders");
    if (!llvm::sys::fs::exists(path))
      return makeError("model '" + path + "' does not exist");
    if (path.ends_with(".bin"))
      return loadLlama2cModel(context, path);
    if (path.ends_with(".gguf"))
      return loadGgufModel(context, path,
                           /*withTokenizer=*/tokenizerPath.empty(), adapters);
    return makeError("model '" + path +
                     "': expected a Hugging Face model directory, a llama2.c "
                     ".bin checkpoint, a .gguf file or a .mlir file");
  }();
  if (!model)
    return model;
  if (!tokenizerPath.empty()) {
    // An explicit tokenizer replaces the one found beside the model.
    llvm::Expected<TokenizerVocab> vocab =
        readTokenizerAt(tokenizerPath, model->vocabSize);
    if (!vocab)
      return vocab.takeError();
    model->tokenizer = std::move(*vocab);
    model->tokenizerPath = tokenizerPath.str();
  }
  // After the tokenizer, whose `<image>` is the placeholder.
  if (!mmprojPath.empty())
    if (llvm::Error err = addMmprojImageTokens(context, mmprojPath, *model))
      return std::move(err);
  // An explicit template replaces the checkpoint's (a GGUF file's was read
  // with it; a directory's is read here, unless replaced).
  llvm::Expected<std::string> chatTemplate =
      !chatTemplatePath.empty() ? readChatTemplateFile(chatTemplatePath)
      : llvm::sys::fs::is_directory(path)
          ? readHuggingFaceChatTemplate(path)
          : llvm::Expected<std::string>(model->chatTemplate);
  if (!chatTemplate)
    return chatTemplate.takeError();
  model->chatTemplate = std::move(*chatTemplate);
  if (llvm::Error err = describeModel(*model, path))
    return std::move(err);
  return model;
}

static ArrayAttr labelsAttr(MLIRContext *context,
                            const std::vector<std::string> &labels) {
  if (labels.empty())
    return ArrayAttr();
  SmallVector<Attribute> names;
  for (const std::string &label : labels)
    names.push_back(StringAttr::get(context, label));
  return ArrayAttr::get(context, names);
}

/// Drops a special token the model's vocabulary does not have, with a
/// note. transformers loads such configs (tiny test models keep GPT-2's
/// 50256 with a vocabulary of a few hundred): an EOS it can never sample
/// never ends generation, and a BOS it cannot embed is never added here.
/// An id below -1 (none) is no token at all: an error.
static llvm::Error dropSpecialTokenOutside(LoadedModel &model,
                                           llvm::StringRef source,
                                           llvm::StringRef name,
                                           int32_t &token) {
  if (token < -1)
    return makeError(source + ": " + name + " " + llvm::Twine(token) +
                     " is not a token id (0 to " +
                     llvm::Twine(model.vocabSize - 1) +
                     ", or null for none)");
  if (token < 0 || token < model.vocabSize)
    return llvm::Error::success();
  model.notes.push_back(
      (source + ": " + name + " " + llvm::Twine(token) + " is not in the " +
       llvm::Twine(model.vocabSize) + "-token vocabulary; tfmc ignores it (" +
       (name.starts_with("bos") ? "no BOS is added"
                                : "generation stops at its length limit") +
       ")")
          .str());
  token = -1;
  return llvm::Error::success();
}

llvm::Error mlir::tfm::describeModel(LoadedModel &model, llvm::StringRef path) {
  MLIRContext *context = model.module->getContext();
  std::string tokenizer;
  if (model.tokenizer && !model.tokenizerPath.empty()) {
    // Absolute, so that the module compiles from any folder.
    llvm::SmallString<256> tokenizerPath(model.tokenizerPath);
    llvm::sys::fs::make_absolute(tokenizerPath);
    tokenizer = tokenizerPath.str().str();
  }
  // A directory's special tokens come from its config.json.
  llvm::SmallString<256> source(path);
  if (llvm::sys::fs::is_directory(path))
    llvm::sys::path::append(source, "config.json");
  if (llvm::Error err = dropSpecialTokenOutside(model, source, "bos_token_id",
                                                model.bosToken))
    return err;
  if (llvm::Error err = dropSpecialTokenOutside(model, source, "eos_token_id",
                                                model.eosToken))
    return err;
  // Other ids that end generation, in the vocabulary and not EOS itself.
  SmallVector<int32_t> stops;
  for (int64_t id : model.stopTokens)
    if (id >= 0 && id < model.vocabSize && id != model.eosToken &&
        !llvm::is_contained(stops, int32_t(id)))
      stops.push_back(int32_t(id));
  if (!stops.empty())
    (*model.module)->setAttr(kStopTokensAttrName,
                             DenseI32ArrayAttr::get(context, stops));
  llvm::Expected<ModelAttr> attr = getCheckedAttr<ModelAttr>(
      path, context, llvm::StringRef(model.family), model.vocabSize,
      model.maxContext, model.bosToken, model.eosToken,
      model.addBos && model.bosToken >= 0, llvm::StringRef(tokenizer),
      model.hiddenSize, model.numLayers, model.numHeads,
      model.numKVHeads, labelsAttr(context, model.labels),
      model.imagePreprocessing, model.generation, model.audioPreprocessing,
      model.waveform, llvm::StringRef(model.chatTemplate));
  if (!attr)
    return attr.takeError();
  (*model.module)->setAttr(kModelAttrName, *attr);
  return llvm::Error::success();
}

llvm::Expected<ModelAttr> mlir::tfm::withChatTemplate(
    ModelAttr m, llvm::StringRef chatTemplate,
    llvm::StringRef chatTemplatePath) {
  return getCheckedAttr<ModelAttr>(
      chatTemplatePath, m.getContext(), m.getFamily(), m.getVocabSize(),
      m.getMaxContext(), m.getBosToken(), m.getEosToken(), m.getAddBos(),
      m.getTokenizer(), m.getHiddenSize(), m.getNumLayers(), m.getNumHeads(),
      m.getNumKvHeads(), m.getLabels(), m.getImage(), m.getGeneration(),
      m.getAudio(), m.getWaveform(), chatTemplate);
}

std::string mlir::tfm::supportedModelsSummary() {
  return "Models (Hugging Face model_type; GGUF general.architecture):\n"
         "  decoders: " +
         supportedDecoderFamilies() +
         "\n"
         "  encoders: " +
         supportedEncoderFamilies() +
         "\n"
         "  vision: " +
         supportedVisionFamilies() +
         "\n"
         "  text and image (CLIP): " +
         supportedClipFamilies() +
         "\n"
         "  images in the conversation: " +
         supportedLlavaFamilies() +
         "\n"
         "  speech recognition (CTC): " +
         supportedSpeechFamilies() +
         "\n"
         "  encoder-decoders: " +
         supportedSeq2SeqFamilies() +
         "\n"
         "  GGUF: " +
         supportedGgufArchitectureNames() + "\n";
}
