//===- Mmproj.cpp - LLaVA's image side from an mmproj file ---------------===//
//
// See Mmproj.h. The file is read as the model it was converted from
// (transformers' LlavaForConditionalGeneration), which is where tfmc and
// llama.cpp's mtmd part (the upstream issues numbered below):
//   - the tower runs every block the file holds: the converter keeps the
//     blocks up to LLaVA's vision_feature_layer (-2: 23 of CLIP ViT-L's 24)
//     and writes that count; mtmd runs one fewer unless
//     clip.vision.feature_layer is given (llama.cpp #25817);
//   - the class token is the first row, its position embedding the first
//     (mtmd appends it last, so that it drops patch 0 and keeps the class
//     token: #25814);
//   - the projector's GELU is exact (transformers' "gelu"), not tanh's;
//   - the image is preprocessed as llava-hf's CLIPImageProcessor does
//     (shortest edge, center crop), not letterboxed.
// The legacy converter names CLIP's fc1 "ffn_down" and fc2 "ffn_up"; the
// shapes say which is which, as mtmd decides. LLaVA-NeXT's files
// (image_grid_pinpoints, mm_patch_merge_type spatial_unpad,
// model.image_newline) are tiled and laid out as its folder's model does
// (tfm_image_tiles, tfm_image_tokens).
//
// Gemma 3's files (clip.projector_type "gemma3", convert_hf_to_gguf.py
// --mmproj's Gemma3VisionModel) hold a SigLIP tower (every block,
// post_ln), the pooling factor (clip.vision.projector.scale_factor, 4
// unless given), mm.soft_emb_norm (stored as 1 + w) and
// mm.input_projection ([vision, text], used as x @ W). They are read as
// the folder's Gemma3ForConditionalGeneration (Gemma3Vision.h): the tower's
// GELU the tanh approximation, images resized square (mtmd letterboxes),
// the prompt's <start_of_image> expanded as Gemma3Processor writes it (mtmd
// adds no "\n\n"), an image's rows attending both ways.
//
// SmolVLM's and Idefics3's (clip.projector_type "idefics3",
// convert_hf_to_gguf.py --mmproj's SmolVLMModel) hold a SigLIP tower, the
// pixel shuffle's factor (clip.vision.projector.scale_factor) and
// mm.model.fc ([text, vision * factor^2]), and the processor's longest
// edge (clip.vision.preproc_image_size). They are read as the folder's
// Idefics3ForConditionalGeneration (Idefics3.h): the same tiles (mtmd cuts
// them alike, Lanczos), the same tokens around them, but an image of one
// tile is that tile alone, as transformers' processor has it (mtmd adds
// the whole image after it).
//
//===----------------------------------------------------------------------===//

#include "frontend/families/Mmproj.h"
#include "frontend/families/Gemma3Vision.h"
#include "frontend/families/Idefics3.h"
#include "frontend/families/Llava.h"
#include "frontend/formats/ErrorMessages.h"
#include "frontend/formats/Gguf.h"
#include "frontend/formats/ImagePreprocessor.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Path.h"

#include <cmath>
#include <cstring>

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// The projector types of llama.cpp's clip.projector_type tfmc reads:
/// LLaVA's MLP, Gemma 3's pooled SigLIP states, Idefics3's pixel-shuffled
/// ones.
constexpr llvm::StringLiteral kMlpProjector = "mlp";
constexpr llvm::StringLiteral kGemma3Projector = "gemma3";
constexpr llvm::StringLiteral kIdefics3Projector = "idefics3";

/// A tensor of the mmproj file as the model's folder names it, under
/// `tower` and kLlavaProjector; "" for a name neither LLaVA's file nor
/// Gemma 3's has. `fc1Up`: whether ffn_up is CLIP's fc1 (else ffn_down
/// is).
std::string folderName(llvm::StringRef name, llvm::StringRef tower,
                       bool fc1Up) {
  static const std::pair<llvm::StringLiteral, llvm::StringLiteral> kTower[] = {
      {"v.class_embd", "embeddings.class_embedding"},
      {"v.patch_embd.weight", "embeddings.patch_embedding.weight"},
      {"v.patch_embd.bias", "embeddings.patch_embedding.bias"},
      {"v.position_embd.weight", "embeddings.position_embedding.weight"},
      {"v.pre_ln.", "pre_layrnorm."},
      {"v.post_ln.", "post_layernorm."}};
  for (const auto &[from, to] : kTower)
    if (name == from || (from.ends_with(".") && name.starts_with(from)))
      return (tower + to + name.drop_front(from.size())).str();
  if (name == "model.image_newline")
    return kLlavaImageNewline.str();
  if (name == "mm.input_projection.weight")
    return (kLlavaProjector + "mm_input_projection_weight").str();
  if (name == "mm.soft_emb_norm.weight")
    return (kLlavaProjector + "mm_soft_emb_norm.weight").str();
  if (name == "mm.model.fc.weight")
    return (kLlavaProjector + "modality_projection.proj.weight").str();
  for (const auto &[from, to] :
       {std::pair{"mm.0.", "linear_1."}, std::pair{"mm.2.", "linear_2."}})
    if (name.starts_with(from))
      return (kLlavaProjector + to + name.drop_front(strlen(from))).str();
  llvm::StringRef rest = name;
  unsigned block = 0;
  if (!rest.consume_front("v.blk.") || rest.consumeInteger(10, block) ||
      !rest.consume_front("."))
    return "";
  const std::pair<llvm::StringRef, llvm::StringRef> kParts[] = {
      {"attn_q.", "self_attn.q_proj."},
      {"attn_k.", "self_attn.k_proj."},
      {"attn_v.", "self_attn.v_proj."},
      {"attn_out.", "self_attn.out_proj."},
      {"ln1.", "layer_norm1."},
      {"ln2.", "layer_norm2."},
      {"ffn_up.", fc1Up ? "mlp.fc1." : "mlp.fc2."},
      {"ffn_down.", fc1Up ? "mlp.fc2." : "mlp.fc1."}};
  for (const auto &[from, to] : kParts)
    if (rest.starts_with(from))
      return (tower + "encoder.layers." + llvm::Twine(block) + "." + to +
              rest.drop_front(from.size()))
          .str();
  return "";
}

/// The mmproj file's hyperparameters, into `image`.
llvm::Error readTower(const GgufFile &file, ImageTokensSpec &image) {
  ClipImageSpec &tower = image.tower;
  constexpr int64_t kLargest = int64_t(1) << 20;
  auto read = [&](llvm::StringRef key, int64_t &into) -> llvm::Error {
    llvm::Expected<int64_t> value = file.integer(key, kLargest);
    if (!value)
      return value.takeError();
    if (*value == 0)
      return makeError(file.path() + ": " + key + " is 0");
    into = *value;
    return llvm::Error::success();
  };
  for (auto [key, into] :
       {std::pair{"clip.vision.image_size", &tower.imageSize},
        std::pair{"clip.vision.patch_size", &tower.patchSize},
        std::pair{"clip.vision.embedding_length", &tower.hiddenSize},
        std::pair{"clip.vision.feed_forward_length", &tower.intermediateSize},
        std::pair{"clip.vision.attention.head_count", &tower.numHeads},
        std::pair{"clip.vision.block_count", &tower.numLayers}})
    if (llvm::Error err = read(key, *into))
      return err;
  if (tower.imageSize % tower.patchSize || tower.hiddenSize % tower.numHeads)
    return makeError(file.path() + ": clip.vision.image_size " +
                     llvm::Twine(tower.imageSize) + " is no whole number of " +
                     llvm::Twine(tower.patchSize) + "-pixel patches, or the " +
                     llvm::Twine(tower.hiddenSize) +
                     "-wide tower no whole "
                     "number of its " +
                     llvm::Twine(tower.numHeads) + " heads");
  llvm::Expected<std::optional<double>> epsilon =
      file.optionalReal("clip.vision.attention.layer_norm_epsilon");
  if (!epsilon)
    return epsilon.takeError();
  tower.normEpsilon = epsilon->value_or(1e-5);
  // CLIP ViT-L's quick_gelu unless the file says GELU (use_gelu).
  llvm::Expected<std::optional<int64_t>> gelu =
      file.optionalInteger("clip.use_gelu", 1);
  llvm::Expected<std::optional<int64_t>> silu =
      file.optionalInteger("clip.use_silu", 1);
  if (!gelu)
    return gelu.takeError();
  if (!silu)
    return silu.takeError();
  if (silu->value_or(0))
    return makeError(file.path() + ": clip.use_silu: a tower with SiLU "
                                   "blocks is not LLaVA 1.5's CLIP tower");
  tower.activation =
      gelu->value_or(0) ? ActivationKind::gelu : ActivationKind::quick_gelu;
  // The blocks that run: clip.vision.feature_layer's one entry, else every
  // block the file holds (see the file comment).
  image.layers = tower.numLayers;
  if (const GgufValue *layers = file.lookup("clip.vision.feature_layer")) {
    if (layers->kind != GgufValue::Kind::Array || layers->stringArray ||
        layers->numbers.size() != 1 || layers->numbers[0] < 1 ||
        layers->numbers[0] > double(tower.numLayers) ||
        layers->numbers[0] != std::floor(layers->numbers[0]))
      return makeError(file.path() +
                       ": clip.vision.feature_layer must be one "
                       "block count from 1 to " +
                       llvm::Twine(tower.numLayers) +
                       " (several layers' states side by side are not "
                       "supported)");
    image.layers = int64_t(layers->numbers[0]);
  }
  return llvm::Error::success();
}

/// LLaVA-NeXT's tiles (clip.vision.image_grid_pinpoints, with
/// mm_patch_merge_type "spatial_unpad") as height, width pairs, read as its
/// folder's LlavaNextForConditionalGeneration tiles and lays them out;
/// none for LLaVA 1.5's one tile. The file's pairs are width, height, as
/// LLaVA's own select_best_resolution and mtmd read them (transformers'
/// are height, width): the order decides which of two pinpoints that
/// keep as much of an image wins.
llvm::Error readTiling(const GgufFile &file, int64_t tileSize,
                       std::vector<int64_t> &pinpoints) {
  llvm::Expected<std::optional<llvm::StringRef>> merge =
      file.optionalString("clip.vision.mm_patch_merge_type");
  if (!merge)
    return merge.takeError();
  const GgufValue *grid = file.lookup("clip.vision.image_grid_pinpoints");
  if (!grid) {
    if (merge->value_or("flat") != "flat")
      return makeError(file.path() + ": clip.vision.mm_patch_merge_type '" +
                       **merge + "' without image_grid_pinpoints");
    return llvm::Error::success();
  }
  if (merge->value_or("flat") != "spatial_unpad")
    return makeError(file.path() + ": clip.vision.mm_patch_merge_type '" +
                     merge->value_or("flat") +
                     "' with image_grid_pinpoints: tfmc reads LLaVA-NeXT's "
                     "'spatial_unpad' (tiles cut to the image's aspect)");
  bool valid = grid->kind == GgufValue::Kind::Array && !grid->stringArray &&
               !grid->numbers.empty() && grid->numbers.size() % 2 == 0;
  for (double size : valid ? grid->numbers : std::vector<double>())
    valid = valid && size > 0 && size == std::floor(size) &&
            int64_t(size) % tileSize == 0;
  for (size_t i = 0; valid && i < grid->numbers.size(); i += 2) {
    pinpoints.push_back(int64_t(grid->numbers[i + 1]));
    pinpoints.push_back(int64_t(grid->numbers[i]));
  }
  if (!valid)
    return makeError(file.path() +
                     ": clip.vision.image_grid_pinpoints must be height, "
                     "width pairs of multiples of the " +
                     llvm::Twine(tileSize) + "-pixel tiles");
  // clip.vision.image_crop_resolution and image_split_resolution (224 in
  // llava-v1.6's configs) are not read: LLaVA's anyres tiles at the
  // tower's size whatever they say, and so does mtmd.
  return llvm::Error::success();
}

/// clip.vision.image_mean or image_std: three numbers.
llvm::Expected<std::vector<float>> readTriple(const GgufFile &file,
                                              llvm::StringRef key) {
  llvm::Expected<const GgufValue *> value = file.array(key, /*strings=*/false);
  if (!value)
    return value.takeError();
  if ((*value)->numbers.size() != 3)
    return makeError(file.path() + ": " + key +
                     " must be three numbers "
                     "(R, G, B)");
  return std::vector<float>((*value)->numbers.begin(), (*value)->numbers.end());
}

/// The text model's piece `spelling` (LLaVA's `<image>` placeholder,
/// Gemma 3's `<image_soft_token>` and the tokens around it); `why` says
/// what it is for.
llvm::Expected<int64_t> findToken(const LoadedModel &model,
                                  llvm::StringRef path,
                                  llvm::StringRef spelling,
                                  llvm::StringRef why) {
  if (model.tokenizer)
    if (std::optional<int64_t> id = model.tokenizer->idOf(spelling))
      return *id;
  return makeError("--mmproj " + path +
                   ": the text model's vocabulary has no '" + spelling +
                   "' token " + why);
}

/// The squares of patches a row stands for: Gemma 3's average pooling
/// (clip.vision.projector.scale_factor, 4 unless given, as mtmd reads it)
/// or Idefics3's pixel shuffle (the factor required: mtmd's default of 1
/// fails).
llvm::Error readSquares(const GgufFile &file, bool gemma3,
                        ImageTokensSpec &image) {
  llvm::Expected<std::optional<int64_t>> factor =
      file.optionalInteger("clip.vision.projector.scale_factor", 1 << 20);
  if (!factor)
    return factor.takeError();
  if (!gemma3 && !*factor)
    return makeError(file.path() +
                     ": clip.vision.projector.scale_factor is missing (the "
                     "pixel shuffle's squares of patches)");
  int64_t side = image.side(), kernel = factor->value_or(4);
  if (kernel <= 0 || side % kernel)
    return makeError(file.path() + ": clip.vision.projector.scale_factor " +
                     llvm::Twine(kernel) + " does not divide the " +
                     llvm::Twine(side) + " x " + llvm::Twine(side) +
                     " patches of the tower");
  (gemma3 ? image.poolKernel : image.pixelShuffle) = kernel;
  image.projectorNormEpsilon = image.tower.normEpsilon;
  // SigLIP's GELU is the tanh approximation (gelu_pytorch_tanh), which the
  // file's use_gelu says as it says transformers' exact one for LLaVA's.
  image.tower.activation = ActivationKind::gelu_tanh;
  return llvm::Error::success();
}

/// Gemma 3's tokens in the text model's vocabulary: the rows'
/// placeholder and the processor's tokens around them.
llvm::Error findGemma3Tokens(const LoadedModel &model, llvm::StringRef path,
                             Gemma3VisionSpec &spec) {
  for (auto [into, spelling] :
       {std::pair{&spec.imageToken, "<image_soft_token>"},
        std::pair{&spec.beginToken, "<start_of_image>"},
        std::pair{&spec.endToken, "<end_of_image>"}}) {
    llvm::Expected<int64_t> id =
        findToken(model, path, spelling,
                  "(Gemma 3's GGUF files keep <start_of_image>, "
                  "<image_soft_token> and <end_of_image>)");
    if (!id)
      return id.takeError();
    *into = *id;
  }
  return llvm::Error::success();
}

/// Idefics3's tiles: the processor's longest edge
/// (clip.vision.preproc_image_size; mtmd takes another path without it),
/// then tiles of the tower's size.
llvm::Expected<ImagePreprocessingAttr>
readIdefics3Tiles(MLIRContext &context, const GgufFile &file, int64_t tileSize,
                  llvm::ArrayRef<float> mean, llvm::ArrayRef<float> std) {
  llvm::Expected<std::optional<int64_t>> longest =
      file.optionalInteger("clip.vision.preproc_image_size", 1 << 16);
  if (!longest)
    return longest.takeError();
  if (!*longest || **longest <= 0)
    return makeError(file.path() +
                     ": clip.vision.preproc_image_size (the processor's "
                     "longest edge, size.longest_edge) is missing or 0");
  return idefics3ImagePreprocessing(context, file.path(), tileSize, **longest,
                                    mean, std);
}

} // namespace

llvm::Error mlir::tfm::addMmprojImageTokens(MLIRContext &context,
                                            llvm::StringRef path,
                                            LoadedModel &model) {
  llvm::Expected<GgufFile> file = GgufFile::open(path);
  if (!file)
    return file.takeError();
  llvm::Expected<std::optional<llvm::StringRef>> architecture =
      file->optionalString("general.architecture");
  if (!architecture)
    return architecture.takeError();
  if (!*architecture || **architecture != "clip")
    return makeError(path + ": general.architecture is '" +
                     architecture->value_or("(none)") +
                     "', not 'clip': an mmproj file holds llama.cpp's image "
                     "side of a model");
  llvm::Expected<std::optional<llvm::StringRef>> projector =
      file->optionalString("clip.projector_type");
  if (!projector)
    return projector.takeError();
  bool gemma3 = projector->value_or("") == kGemma3Projector;
  bool idefics3 = projector->value_or("") == kIdefics3Projector;
  if (!gemma3 && !idefics3 && projector->value_or("") != kMlpProjector)
    return makeError(
        path + ": clip.projector_type '" + projector->value_or("(none)") +
        "' is not supported (tfmc reads '" + kMlpProjector + "', LLaVA's, '" +
        kGemma3Projector + "' and '" + kIdefics3Projector + "')");
  llvm::Expected<std::optional<int64_t>> hasVision =
      file->optionalInteger("clip.has_vision_encoder", 1);
  if (!hasVision)
    return hasVision.takeError();
  if (!hasVision->value_or(1))
    return makeError(path + ": clip.has_vision_encoder is false: the file "
                            "has no image tower");

  ImageTokensSpec image;
  image.tower.siglip = gemma3 || idefics3;
  if (llvm::Error err = readTower(*file, image))
    return err;
  if (image.tower.siglip)
    if (llvm::Error err = readSquares(*file, gemma3, image))
      return err;
  std::vector<int64_t> pinpoints;
  if (llvm::Error err = readTiling(*file, image.tower.imageSize, pinpoints))
    return err;
  if (!pinpoints.empty())
    image.newline = kLlavaImageNewline.str();
  image.tower.prefix = (kLlavaVisionTower + "vision_model.").str();
  image.projector = kLlavaProjector.str();
  image.textHidden = model.hiddenSize;
  image.activation = ActivationKind::gelu;
  image.keepClassToken = false;

  // fc1 is [intermediate, hidden] whatever the file calls it.
  bool fc1Up = true;
  for (const GgufTensor &tensor : file->tensors())
    if (tensor.name == "v.blk.0.ffn_up.weight")
      fc1Up = !(tensor.shape.size() == 2 &&
                tensor.shape[0] == image.tower.hiddenSize &&
                tensor.shape[1] == image.tower.intermediateSize &&
                image.tower.hiddenSize != image.tower.intermediateSize);
  std::string source = llvm::sys::path::filename(path).str();
  // The file's names by the folder's, for the builder's messages.
  std::vector<std::pair<std::string, std::string>> fileNames;
  // The projector's output, whose width must be the text model's: LLaVA's
  // mm.2 [text, hidden], Idefics3's mm.model.fc [text, vision * factor^2],
  // Gemma 3's x @ W [vision, text].
  llvm::StringRef output = gemma3     ? "mm.input_projection.weight"
                           : idefics3 ? "mm.model.fc.weight"
                                      : "mm.2.weight";
  size_t outputDim = gemma3 ? 1 : 0;
  for (const GgufTensor &tensor : file->tensors()) {
    std::string name = folderName(tensor.name, image.tower.prefix, fc1Up);
    fileNames.push_back({name, tensor.name});
    if (name.empty() || (name == kLlavaImageNewline && pinpoints.empty()))
      return makeError(path + ": tensor '" + tensor.name +
                       "' is not one of LLaVA's, Gemma 3's or Idefics3's "
                       "image side (v.* of its tower, mm.0 and mm.2, "
                       "mm.input_projection and mm.soft_emb_norm, or "
                       "mm.model.fc of its projector, LLaVA-NeXT's "
                       "model.image_newline)");
    if (model.weights.contains(name))
      return makeError(path + ": tensor '" + tensor.name + "' is given twice");
    if (tensor.name == output && (tensor.shape.size() != 2 ||
                                  tensor.shape[outputDim] != model.hiddenSize))
      return makeError(
          path + ": the projector's output (" + output + ", [" +
          llvm::join(
              llvm::map_range(tensor.shape,
                              [](int64_t d) { return std::to_string(d); }),
              ", ") +
          "]) is not the text model's width " + llvm::Twine(model.hiddenSize) +
          ": the mmproj file is another model's");
    model.weights.add(name, WeightTensor::view(tensor.shape, tensor.dtype,
                                               file->bytes() + tensor.offset,
                                               file->isMapped(), source));
  }

  llvm::Expected<std::vector<float>> mean =
      readTriple(*file, "clip.vision.image_mean");
  if (!mean)
    return mean.takeError();
  llvm::Expected<std::vector<float>> std =
      readTriple(*file, "clip.vision.image_std");
  if (!std)
    return std.takeError();
  // Preprocessed as the folder's processor does: CLIPImageProcessor's
  // crop for LLaVA, Gemma3ImageProcessor's square resize,
  // Idefics3ImageProcessor's tiles.
  llvm::Expected<ImagePreprocessingAttr> preprocessing =
      gemma3 ? squareImagePreprocessing(context, path, image.tower.imageSize,
                                        *mean, *std)
      : idefics3 ? readIdefics3Tiles(context, *file, image.tower.imageSize,
                                     *mean, *std)
                 : clipImagePreprocessing(context, path, image.tower.imageSize,
                                          *mean, *std);
  if (preprocessing && !pinpoints.empty())
    preprocessing = withGridPinpoints(*preprocessing, path, pinpoints);
  if (!preprocessing)
    return preprocessing.takeError();
  llvm::Error err = llvm::Error::success();
  if (idefics3) {
    Idefics3Spec spec;
    spec.image = image;
    llvm::Expected<int64_t> imageToken =
        findToken(model, path, "<image>",
                  "to stand for a tile's rows in a prompt (Idefics3's GGUF "
                  "files keep it)");
    if (!imageToken)
      return imageToken.takeError();
    spec.imageToken = *imageToken;
    model.weights.keepMapped(file->releaseBuffer());
    err = addIdefics3Image(context, spec, path, *preprocessing, model);
  } else if (gemma3) {
    Gemma3VisionSpec spec;
    spec.image = image;
    if (llvm::Error missing = findGemma3Tokens(model, path, spec))
      return missing;
    model.weights.keepMapped(file->releaseBuffer());
    err = addGemma3Image(context, spec, path, *preprocessing, model);
  } else {
    llvm::Expected<int64_t> imageToken =
        findToken(model, path, "<image>",
                  "to stand for an image's rows in a prompt (LLaVA's GGUF "
                  "files keep it at 32000)");
    if (!imageToken)
      return imageToken.takeError();
    model.weights.keepMapped(file->releaseBuffer());
    err = addImageTokens(context, image, *imageToken, path, *preprocessing,
                         model);
  }
  if (!err)
    return err;
  // "tensor 'vision_tower....q_proj.weight' has shape ..." names the
  // file's tensor: "tensor 'v.blk.0.attn_q.weight' (LLaVA's '...')".
  std::string message = llvm::toString(std::move(err));
  for (const auto &[folderName, fileName] : fileNames) {
    std::string quoted = "'" + folderName + "'";
    size_t at = message.find(quoted);
    if (at != std::string::npos) {
      message.replace(at, quoted.size(),
                      "'" + fileName + "' (LLaVA's " + quoted + ")");
      return makeError(message);
    }
  }
  // A tensor the file lacks: say how its names map.
  return makeError(message +
                   (gemma3 ? " (an mmproj file names the tower's tensors v.*, "
                             "the projector's mm.input_projection and "
                             "mm.soft_emb_norm)"
                           : " (an mmproj file names the tower's tensors "
                             "v.*, the projector's linear_1 mm.0 and "
                             "linear_2 mm.2)"));
}
