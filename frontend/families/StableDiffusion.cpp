//===- StableDiffusion.cpp - a diffusers pipeline folder as one module ---===//
//
// model_index.json names the pipeline and its components; each component
// folder has its config.json and weights. The text encoder is read as a
// CLIP text tower (Clip.cpp builds @encode_text), then the UNet's and the
// VAE's weights join the same store under their folder's name and
// DiffusionBuilder appends @denoise and @decode_latents. Every config value
// that would change the computation in a way not built here is refused by
// name.
//
//===----------------------------------------------------------------------===//

#include "frontend/families/StableDiffusion.h"
#include "frontend/builders/DiffusionBuilder.h"
#include "frontend/families/Clip.h"
#include "frontend/families/LdmCheckpoint.h"
#include "frontend/formats/ConfigReader.h"
#include "frontend/formats/ErrorMessages.h"
#include "frontend/formats/JsonFile.h"
#include "frontend/formats/Safetensors.h"
#include "frontend/tokenizers/Tokenizer.h"
#include "ir/DiffusionAttr.h"
#include "ir/TfmOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"

#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// The pipelines whose components are a CLIP text encoder, a
/// UNet2DConditionModel and an AutoencoderKL (inpainting's UNet takes 9
/// input channels: latents, mask, masked image's latents); SDXL's adds a
/// second text encoder with its projection, read by its UNet's text_time
/// conditioning.
constexpr llvm::StringLiteral kPipelines[] = {
    "StableDiffusionPipeline", "StableDiffusionImg2ImgPipeline",
    "StableDiffusionInpaintPipeline", "StableDiffusionXLPipeline"};

/// SDXL's second text encoder's tensors in the combined store.
constexpr llvm::StringLiteral kSecondTextPrefix = "text_encoder_2.";

std::string join(llvm::StringRef directory, llvm::StringRef name) {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, name);
  return path.str().str();
}

/// A component's config.json as a reader (kept alive by `json`).
llvm::Expected<ConfigReader> readComponentConfig(llvm::StringRef folder,
                                                 llvm::json::Value &json) {
  std::string path = join(folder, "config.json");
  llvm::Expected<llvm::json::Value> read = readJsonFile(path);
  if (!read)
    return read.takeError();
  json = std::move(*read);
  if (!json.getAsObject())
    return makeError(path + ": expected a JSON object");
  return ConfigReader(*json.getAsObject(), path);
}

/// A component's weights: `stem`.safetensors, else the fp16 variant
/// (`stem`.fp16.safetensors), into `store`. Returns the file read.
llvm::Expected<std::string> readComponentWeights(llvm::StringRef folder,
                                                 llvm::StringRef stem,
                                                 WeightStore &store) {
  std::string plain = join(folder, (stem + ".safetensors").str()),
              variant = join(folder, (stem + ".fp16.safetensors").str());
  std::string path = llvm::sys::fs::exists(plain)     ? plain
                     : llvm::sys::fs::exists(variant) ? variant
                                                      : "";
  if (path.empty())
    return makeError(folder + ": no " + stem + ".safetensors (or its fp16 "
                     "variant " + stem + ".fp16.safetensors); tfmc reads "
                     "safetensors, not .bin pickles");
  if (llvm::Error err = readSafetensorsFile(path, store))
    return std::move(err);
  return path;
}

/// One integer per stage: `key` as a list of `stages`, or one integer for
/// all (attention_head_dim, transformer_layers_per_block).
std::vector<int64_t> perStage(ConfigReader &config, llvm::StringRef key,
                              size_t stages, int64_t fallback) {
  const llvm::json::Value *value = config.raw().get(key);
  if (value && value->getAsArray())
    return config.positiveIntegers(key, stages, "block_out_channels");
  return std::vector<int64_t>(stages,
                              config.positiveInteger(key, fallback));
}

/// Refuses `key` unless it is absent, null or `expected`.
void expectString(ConfigReader &config, llvm::StringRef key,
                  llvm::StringRef expected) {
  const llvm::json::Value *value = config.raw().get(key);
  if (!value || value->kind() == llvm::json::Value::Null)
    return;
  std::string actual = config.string(key, expected);
  if (actual != expected)
    config.fail("unsupported config value " + key + " = '" + actual +
                "' (tfmc builds '" + expected + "')");
}

void readUNet(ConfigReader &config, UNetSpec &spec) {
  std::vector<int64_t> channels = config.positiveIntegers("block_out_channels");
  std::vector<std::string> down = config.strings("down_block_types"),
                           up = config.strings("up_block_types");
  size_t n = channels.size();
  if (down.size() != n || up.size() != n) {
    config.fail("down_block_types and up_block_types must list one block per "
                "block_out_channels entry (" + llvm::Twine(n) + ")");
    return;
  }
  std::vector<int64_t> heads = perStage(config, "attention_head_dim", n, 8);
  std::vector<int64_t> layers =
      perStage(config, "transformer_layers_per_block", n, 1);
  config.refuseUnlessAbsent("num_attention_heads",
                            "diffusers 0.27 reads attention_head_dim as the "
                            "heads");
  for (size_t i = 0; i < n; ++i) {
    bool cross = down[i] == "CrossAttnDownBlock2D";
    if (!cross && down[i] != "DownBlock2D")
      config.fail("unsupported down block '" + down[i] +
                  "' (CrossAttnDownBlock2D, DownBlock2D are)");
    // The up path mirrors the down path.
    const std::string &mirror = up[n - 1 - i];
    if (mirror != (cross ? "CrossAttnUpBlock2D" : "UpBlock2D"))
      config.fail("up block " + llvm::Twine(n - 1 - i) + " '" + mirror +
                  "' does not mirror down block " + llvm::Twine(i) + " '" +
                  down[i] + "'");
    spec.stages.push_back({channels[i], cross, heads[i], layers[i]});
  }
  spec.midHeads = heads.back();
  expectString(config, "mid_block_type", "UNetMidBlock2DCrossAttn");
  spec.inChannels = config.positiveInteger("in_channels", 4);
  spec.outChannels = config.positiveInteger("out_channels", 4);
  spec.height = spec.width = config.positiveInteger("sample_size", 64);
  spec.layersPerBlock = config.positiveInteger("layers_per_block", 2);
  spec.normGroups = config.positiveInteger("norm_num_groups", 32);
  spec.normEpsilon = config.positiveNumber("norm_eps", 1e-5);
  spec.crossAttentionDim = config.positiveInteger("cross_attention_dim", 1280);
  spec.linearProjection = config.boolean("use_linear_projection", false);
  spec.flipSinToCos = config.boolean("flip_sin_to_cos", true);
  spec.freqShift = config.number("freq_shift", 0);
  for (int64_t c : channels)
    if (c % spec.normGroups)
      config.fail("norm_num_groups " + llvm::Twine(spec.normGroups) +
                  " does not divide block_out_channels' " + llvm::Twine(c));
  // The additions tfmc does not build, each named.
  expectString(config, "act_fn", "silu");
  expectString(config, "time_embedding_type", "positional");
  expectString(config, "resnet_time_scale_shift", "default");
  expectString(config, "attention_type", "default");
  std::string added = config.string("addition_embed_type", "");
  if (config.raw().get("addition_embed_type") &&
      config.raw().get("addition_embed_type")->kind() ==
          llvm::json::Value::Null)
    added.clear();
  if (added == "text_time") {
    spec.textTime = true;
    spec.addTimeDim = config.positiveInteger("addition_time_embed_dim", 256);
    int64_t input =
        config.positiveInteger("projection_class_embeddings_input_dim", 2816);
    spec.pooledDim = input - 6 * spec.addTimeDim;
    if (spec.pooledDim <= 0)
      config.fail("projection_class_embeddings_input_dim " +
                  llvm::Twine(input) + " leaves no room for the pooled text "
                  "embedding beside 6 time ids of " +
                  llvm::Twine(spec.addTimeDim));
  } else if (!added.empty()) {
    config.fail("unsupported config value addition_embed_type = '" + added +
                "' (null or 'text_time' are)");
  }
  for (llvm::StringRef key :
       {"class_embed_type", "num_class_embeds", "encoder_hid_dim",
        "time_cond_proj_dim", "timestep_post_act", "only_cross_attention",
        "dual_cross_attention", "center_input_sample",
        "class_embeddings_concat", "cross_attention_norm",
        "resnet_skip_time_act", "mid_block_only_cross_attention",
        "reverse_transformer_layers_per_block"})
    config.refuseUnlessAbsent(key, "not in the UNets tfmc builds");
  for (llvm::StringRef key : {"conv_in_kernel", "conv_out_kernel"})
    if (config.integer(key, 3) != 3)
      config.fail("unsupported config value " + key + " (3 is built)");
  if (config.integer("downsample_padding", 1) != 1)
    config.fail("unsupported config value downsample_padding (1 is built)");
  if (config.number("resnet_out_scale_factor", 1.0) != 1.0)
    config.fail("unsupported config value resnet_out_scale_factor (1.0 is "
                "built)");
  // Three downsamplings per 8: the up path meets each skip at its size.
  int64_t multiple = int64_t(1) << (n - 1);
  if (spec.height % multiple)
    config.fail("sample_size " + llvm::Twine(spec.height) +
                " is not a multiple of " + llvm::Twine(multiple) +
                " (the UNet halves it " + llvm::Twine(n - 1) + " times)");
}

void readVae(ConfigReader &config, VaeSpec &spec, int64_t latentSize) {
  spec.blockChannels = config.positiveIntegers("block_out_channels");
  std::vector<std::string> up = config.strings("up_block_types");
  for (const std::string &type : up)
    if (type != "UpDecoderBlock2D")
      config.fail("unsupported up block '" + type +
                  "' (UpDecoderBlock2D is)");
  if (up.size() != spec.blockChannels.size())
    config.fail("up_block_types must list one block per block_out_channels "
                "entry");
  spec.inChannels = config.positiveInteger("in_channels", 3);
  spec.outChannels = config.positiveInteger("out_channels", 3);
  spec.latentChannels = config.positiveInteger("latent_channels", 4);
  spec.layersPerBlock = config.positiveInteger("layers_per_block", 1);
  spec.normGroups = config.positiveInteger("norm_num_groups", 32);
  spec.scalingFactor = config.positiveNumber("scaling_factor", 0.18215);
  spec.height = spec.width = latentSize;
  expectString(config, "act_fn", "silu");
  for (int64_t c : spec.blockChannels)
    if (c % spec.normGroups)
      config.fail("norm_num_groups " + llvm::Twine(spec.normGroups) +
                  " does not divide block_out_channels' " + llvm::Twine(c));
  if (!config.boolean("mid_block_add_attention", true))
    config.fail("unsupported config value mid_block_add_attention = false");
  config.refuseUnlessAbsent("latents_mean", "SDXL-refiner style latents "
                                            "statistics are not built");
}

/// scheduler_config.json's scalar fields as "key=value" lines, sorted by
/// key (tfm_diffusion_desc.scheduler_config), strings in double quotes,
/// numbers and true/false bare: the runtime's scheduler reads the keys it
/// knows. Arrays of betas are refused.
llvm::Expected<std::string> readSchedulerLines(llvm::StringRef folder) {
  std::string path = join(folder, "scheduler_config.json");
  llvm::Expected<llvm::json::Object> object = readJsonObjectFile(path);
  if (!object)
    return object.takeError();
  std::vector<std::string> keys;
  for (const auto &entry : *object)
    keys.push_back(entry.first.str());
  llvm::sort(keys);
  std::string lines;
  for (const std::string &key : keys) {
    const llvm::json::Value &value = *object->get(key);
    std::string text;
    if (std::optional<llvm::StringRef> s = value.getAsString()) {
      if (s->contains('\n') || s->contains('"'))
        return makeError(path + ": field '" + key + "' has a line break or "
                         "a quote in its value");
      text = "\"" + s->str() + "\"";
    } else if (std::optional<bool> flag = value.getAsBoolean()) {
      text = *flag ? "true" : "false";
    } else if (std::optional<int64_t> integer = value.getAsInteger()) {
      text = std::to_string(*integer);
    } else if (std::optional<double> number = value.getAsNumber()) {
      text = llvm::formatv("{0:e16}", *number).str();
    } else if (value.kind() == llvm::json::Value::Null) {
      continue;
    } else if (key == "trained_betas") {
      return makeError(path + ": trained_betas (a list of betas) is not "
                       "supported; give beta_start, beta_end and "
                       "beta_schedule");
    } else {
      continue; // lists the schedulers do not read (timesteps overrides)
    }
    lines += key + "=" + text + "\n";
  }
  if (lines.find("_class_name=") == std::string::npos)
    return makeError(path + ": no _class_name names the scheduler");
  return lines;
}

} // namespace

bool mlir::tfm::isDiffusionPipelineFolder(llvm::StringRef directory) {
  return llvm::sys::fs::exists(join(directory, "model_index.json")) &&
         !llvm::sys::fs::exists(join(directory, "config.json"));
}

std::string mlir::tfm::supportedDiffusionPipelines() {
  std::string names;
  for (llvm::StringRef name : kPipelines)
    names += (names.empty() ? "" : ", ") + name.str();
  return names;
}

llvm::Expected<LoadedModel>
mlir::tfm::loadDiffusionPipeline(MLIRContext &context,
                                 llvm::StringRef directory,
                                 const DiffusionOptions &diffusion,
                                 llvm::StringRef checkpoint) {
  std::string indexPath = join(directory, "model_index.json");
  llvm::Expected<llvm::json::Object> object = readJsonObjectFile(indexPath);
  if (!object)
    return object.takeError();
  ConfigReader pipeline(*object, indexPath);
  std::string className = pipeline.string("_class_name", "");
  if (llvm::Error err = pipeline.takeError())
    return std::move(err);
  if (!llvm::is_contained(kPipelines, llvm::StringRef(className)))
    return makeError(indexPath + ": unsupported pipeline '" + className +
                     "' (supported: " + supportedDiffusionPipelines() + ")");
  // SDXL's: its second text encoder and tokenizer, and whether an absent
  // negative prompt is zeros rather than the empty prompt's states.
  const llvm::json::Value *second = object->get("text_encoder_2");
  bool twoTextEncoders =
      second && second->kind() != llvm::json::Value::Null;
  bool forceZeros = pipeline.boolean("force_zeros_for_empty_prompt", false);
  if (llvm::Error err = pipeline.takeError())
    return std::move(err);

  // The components' configs.
  llvm::json::Value textJson = nullptr, unetJson = nullptr, vaeJson = nullptr;
  std::string textFolder = join(directory, "text_encoder"),
              unetFolder = join(directory, "unet"),
              vaeFolder = join(directory, "vae");
  llvm::Expected<ConfigReader> textConfig =
      readComponentConfig(textFolder, textJson);
  if (!textConfig)
    return textConfig.takeError();
  std::string textType = textConfig->string("model_type", "");
  if (textType != "clip_text_model")
    return makeError(textConfig->file() + ": the text encoder's model_type "
                     "is '" + textType + "' (clip_text_model is supported)");
  llvm::json::Value text2Json = nullptr;
  std::string text2Folder = join(directory, "text_encoder_2");
  std::optional<ConfigReader> text2Config;
  if (twoTextEncoders) {
    llvm::Expected<ConfigReader> read =
        readComponentConfig(text2Folder, text2Json);
    if (!read)
      return read.takeError();
    text2Config.emplace(std::move(*read));
    if (text2Config->string("model_type", "") != "clip_text_model" ||
        !llvm::is_contained(text2Config->strings("architectures"),
                            "CLIPTextModelWithProjection"))
      return makeError(text2Config->file() + ": the second text encoder "
                       "must be a clip_text_model's "
                       "CLIPTextModelWithProjection (its pooled, projected "
                       "state is SDXL's text_embeds)");
  }
  llvm::Expected<ConfigReader> unetConfig =
      readComponentConfig(unetFolder, unetJson);
  if (!unetConfig)
    return unetConfig.takeError();
  llvm::Expected<ConfigReader> vaeConfig =
      readComponentConfig(vaeFolder, vaeJson);
  if (!vaeConfig)
    return vaeConfig.takeError();
  UNetSpec unet;
  unet.prefix = "unet.";
  readUNet(*unetConfig, unet);
  if (llvm::Error err = unetConfig->takeError())
    return std::move(err);
  if (unet.textTime != twoTextEncoders)
    return makeError(unetConfig->file() +
                     (unet.textTime
                          ? ": the UNet's text_time conditioning needs a "
                            "second text encoder (model_index.json names no "
                            "text_encoder_2)"
                          : ": model_index.json names a text_encoder_2, but "
                            "the UNet has no text_time conditioning to read "
                            "its pooled state"));
  if (unet.textTime) {
    int64_t projection = text2Config->integer("projection_dim", 512);
    if (projection != unet.pooledDim)
      return makeError(unetConfig->file() + ": projection_class_embeddings_"
                       "input_dim leaves " + llvm::Twine(unet.pooledDim) +
                       " values for the pooled text embedding, but the second "
                       "text encoder's projection_dim is " +
                       llvm::Twine(projection));
  }
  VaeSpec vae;
  vae.prefix = "vae.";
  readVae(*vaeConfig, vae, unet.height);
  if (llvm::Error err = vaeConfig->takeError())
    return std::move(err);
  // --image-size: the latents are the image over the VAE's factor, and
  // the UNet halves them once per down stage.
  int64_t factor = int64_t(1) << vae.upsamplings();
  int64_t multiple = factor << (unet.stages.size() - 1);
  if (diffusion.height || diffusion.width) {
    if (diffusion.height <= 0 || diffusion.width <= 0 ||
        diffusion.height % multiple || diffusion.width % multiple)
      return makeError("--image-size " + llvm::Twine(diffusion.width) + "x" +
                       llvm::Twine(diffusion.height) + ": " + directory +
                       "'s pipeline takes sides that are multiples of " +
                       llvm::Twine(multiple) + " (the VAE's factor " +
                       llvm::Twine(factor) + " times the UNet's " +
                       llvm::Twine(multiple / factor) + ")");
    unet.height = vae.height = diffusion.height / factor;
    unet.width = vae.width = diffusion.width / factor;
  }
  if (vae.latentChannels != unet.outChannels)
    return makeError(vaeConfig->file() + ": latent_channels " +
                     llvm::Twine(vae.latentChannels) +
                     " is not the UNet's out_channels " +
                     llvm::Twine(unet.outChannels));

  // The weights: each component folder's, or a single-file checkpoint's
  // sorted into the same stores.
  LoadedModel model;
  WeightStore unetWeights, vaeWeights;
  std::string textSource, unetSource, vaeSource;
  if (!checkpoint.empty()) {
    WeightStore file;
    if (llvm::Error err = readSafetensorsFile(checkpoint, file))
      return std::move(err);
    if (!isLdmCheckpoint(file))
      return makeError(checkpoint + ": no model.diffusion_model.* tensors: "
                       "not a single-file Stable Diffusion checkpoint");
    LdmLayout layout;
    layout.unetLayersPerBlock = unet.layersPerBlock;
    for (size_t i = unet.stages.size(); i-- > 0;) // the up path's order
      layout.unetStageAttention.push_back(unet.stages[i].crossAttention);
    layout.vaeStages = int64_t(vae.blockChannels.size());
    layout.textLayers = textConfig->integer("num_hidden_layers", 12);
    layout.textProjection = llvm::is_contained(
        textConfig->strings("architectures"), "CLIPTextModelWithProjection");
    WeightStore text2Weights;
    if (twoTextEncoders)
      layout.text2Layers = text2Config->integer("num_hidden_layers", 12);
    if (llvm::Error err = splitLdmCheckpoint(
            std::move(file), checkpoint, layout, model.weights,
            twoTextEncoders ? &text2Weights : nullptr, unetWeights,
            vaeWeights, model.notes))
      return std::move(err);
    model.weights.absorb(std::move(text2Weights), kSecondTextPrefix);
    textSource = unetSource = vaeSource = checkpoint.str();
  } else {
    llvm::Expected<std::string> text =
        readComponentWeights(textFolder, "model", model.weights);
    if (!text)
      return text.takeError();
    llvm::Expected<std::string> unetFile = readComponentWeights(
        unetFolder, "diffusion_pytorch_model", unetWeights);
    if (!unetFile)
      return unetFile.takeError();
    llvm::Expected<std::string> vaeFile = readComponentWeights(
        vaeFolder, "diffusion_pytorch_model", vaeWeights);
    if (!vaeFile)
      return vaeFile.takeError();
    textSource = *text;
    if (twoTextEncoders) {
      WeightStore text2Weights;
      llvm::Expected<std::string> text2 =
          readComponentWeights(text2Folder, "model", text2Weights);
      if (!text2)
        return text2.takeError();
      model.weights.absorb(std::move(text2Weights), kSecondTextPrefix);
      textSource += ", " + *text2;
    }
    unetSource = *unetFile;
    vaeSource = *vaeFile;
  }

  // The text encoder: a CLIP text tower and its module (SDXL: both
  // towers'), its tokenizer.
  if (llvm::Error err =
          twoTextEncoders
              ? loadClipTextPair(context, *textConfig, *text2Config,
                                 kSecondTextPrefix, textSource, model)
              : loadClip(context, textType, *textConfig,
                         textConfig->strings("architectures"), textSource,
                         textConfig->file(), model))
    return std::move(err);
  std::string tokenizerFolder = join(directory, "tokenizer");
  llvm::Expected<TokenizerVocab> vocab =
      readTokenizerAt(tokenizerFolder, model.vocabSize);
  if (!vocab)
    return vocab.takeError();
  if (vocab->bpeSplit != TokenizerVocab::BpeSplit::Clip)
    return makeError(tokenizerFolder + ": the text encoder needs CLIP's "
                                       "tokenizer (CLIPTokenizer)");
  llvm::Expected<int32_t> pad =
      readPadToken(tokenizerFolder, *vocab, "<|endoftext|>");
  if (!pad)
    return pad.takeError();
  // SDXL's second tokenizer is the first's vocabulary and merges, padded
  // with its own token ("!"): the runtime tokenizes once, pads twice.
  int32_t pad2 = -1;
  if (twoTextEncoders) {
    std::string folder2 = join(directory, "tokenizer_2");
    llvm::Expected<TokenizerVocab> vocab2 =
        readTokenizerAt(folder2, model.vocabSize);
    if (!vocab2)
      return vocab2.takeError();
    if (vocab2->pieces != vocab->pieces || vocab2->scores != vocab->scores)
      return makeError(folder2 + ": the second tokenizer's vocabulary or "
                       "merges differ from the first's (tfmc tokenizes a "
                       "prompt once for both text encoders)");
    llvm::Expected<int32_t> padding =
        readPadToken(folder2, *vocab2, "<|endoftext|>");
    if (!padding)
      return padding.takeError();
    pad2 = *padding;
  }
  model.tokenizer = std::move(*vocab);
  model.tokenizerPath = tokenizerFolder;
  llvm::Expected<std::string> scheduler =
      readSchedulerLines(join(directory, "scheduler"));
  if (!scheduler)
    return scheduler.takeError();
  if (unet.crossAttentionDim != model.hiddenSize)
    return makeError(unetConfig->file() + ": cross_attention_dim " +
                     llvm::Twine(unet.crossAttentionDim) +
                     " is not the text encoder's hidden_size " +
                     llvm::Twine(model.hiddenSize));
  unet.textTokens = model.maxContext;

  // The UNet's and the VAE's weights beside the text encoder's.
  model.weights.absorb(std::move(unetWeights), unet.prefix);
  model.weights.absorb(std::move(vaeWeights), vae.prefix);
  vae.deprecatedAttentionNames = !model.weights.contains(
      "vae.decoder.mid_block.attentions.0.to_q.weight");
  context.loadDialect<linalg::LinalgDialect>();
  DiffusionIRBuilder builder(context, model.weights,
                             unetSource == vaeSource
                                 ? unetSource
                                 : unetSource + ", " + vaeSource,
                             "stable-diffusion");
  builder.buildDenoise(*model.module, unet);
  builder.buildDecodeLatents(*model.module, vae);
  builder.buildEncodeImage(*model.module, vae);
  // The text encoders' tensors were checked by their own reader.
  auto ignored = [](llvm::StringRef name) {
    return !(name.starts_with("unet.") || name.starts_with("vae."));
  };
  auto module = builder.declarations.finish(std::move(model.module), ignored);
  if (!module)
    return module.takeError();
  model.module = std::move(*module);
  model.family = "stable-diffusion";
  Builder attrs(&context);
  auto integer = [&](int64_t v) { return attrs.getI64IntegerAttr(v); };
  (*model.module)
      ->setAttr(kDiffusionAttrName,
                attrs.getDictionaryAttr({
                    attrs.getNamedAttr("latent_channels",
                                       integer(unet.outChannels)),
                    attrs.getNamedAttr("unet_in_channels",
                                       integer(unet.inChannels)),
                    attrs.getNamedAttr("latent_height", integer(unet.height)),
                    attrs.getNamedAttr("latent_width", integer(unet.width)),
                    attrs.getNamedAttr("vae_scale_factor",
                                       integer(int64_t(1) << vae.upsamplings())),
                    attrs.getNamedAttr("text_tokens", integer(unet.textTokens)),
                    attrs.getNamedAttr("pad_token", integer(*pad)),
                    attrs.getNamedAttr("pad_token_2", integer(pad2)),
                    attrs.getNamedAttr("force_zeros_for_empty_prompt",
                                       integer(forceZeros)),
                    attrs.getNamedAttr("scaling_factor",
                                       attrs.getF64FloatAttr(vae.scalingFactor)),
                    attrs.getNamedAttr("scheduler_config",
                                       attrs.getStringAttr(*scheduler)),
                }));
  return model;
}
