//===- ImagePreprocessor.cpp - preprocessor_config.json as an attribute ---===//
//
// What transformers' image processors (ViTImageProcessor,
// DeiTImageProcessor and their kin) do to an image before the model sees
// it, read from preprocessor_config.json into #tfm.image_preprocessing,
// which the runtime's tfm_image_load follows. Fields the file leaves out
// take ViTImageProcessor's defaults; a size may be {"height", "width"},
// {"shortest_edge"} or one number (a square). The preprocessed image must
// be the model's input size.
//
//===----------------------------------------------------------------------===//

#include "frontend/formats/ImagePreprocessor.h"
#include "frontend/formats/CheckedAttributes.h"
#include "frontend/formats/ConfigReader.h"
#include "frontend/formats/JsonFile.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// A size field: {"height": h, "width": w}, {"shortest_edge": s} or n.
struct SizeField {
  int64_t height = 0, width = 0, shortestEdge = 0;
};

/// A number is a square, or with `numberIsShortestEdge` the shortest edge
/// (CLIPImageProcessor's `size`).
std::optional<SizeField> readSize(ConfigReader &config,
                                  const llvm::json::Object &file,
                                  llvm::StringRef key,
                                  bool numberIsShortestEdge = false) {
  const llvm::json::Value *value = file.get(key);
  if (!value || value->kind() == llvm::json::Value::Null)
    return std::nullopt;
  SizeField size;
  if (std::optional<int64_t> number = value->getAsInteger()) {
    if (numberIsShortestEdge)
      size.shortestEdge = *number;
    else
      size.height = size.width = *number;
    return size;
  }
  const llvm::json::Object *object = value->getAsObject();
  if (!object) {
    config.fail("field '" + key + "' must be a number or an object");
    return std::nullopt;
  }
  ConfigReader fields(*object, config.file());
  size.height = fields.integer("height", 0);
  size.width = fields.integer("width", 0);
  size.shortestEdge = fields.integer("shortest_edge", 0);
  for (const auto &entry : *object)
    if (entry.first != "height" && entry.first != "width" &&
        entry.first != "shortest_edge")
      config.fail("field '" + key + "': unsupported size '" +
                  entry.first.str() + "' (supported: height and width, "
                  "shortest_edge)");
  if (llvm::Error err = fields.takeError())
    config.fail(llvm::toString(std::move(err)));
  bool square = size.height > 0 && size.width > 0;
  if (square == (size.shortestEdge > 0))
    config.fail("field '" + key + "' must give height and width, or "
                "shortest_edge");
  return size;
}

/// Three floats (image_mean, image_std); a failure otherwise.
DenseF32ArrayAttr readTriple(MLIRContext &context, ConfigReader &config,
                             const llvm::json::Object &file,
                             llvm::StringRef key, float fallback) {
  SmallVector<float> values(3, fallback);
  if (const llvm::json::Value *value = file.get(key)) {
    const llvm::json::Array *array = value->getAsArray();
    if (!array || array->size() != 3) {
      config.fail("field '" + key + "' must be three numbers (R, G, B)");
    } else {
      for (size_t i = 0; i < 3; ++i) {
        std::optional<double> v = (*array)[i].getAsNumber();
        if (!v)
          config.fail("field '" + key + "' must be three numbers (R, G, B)");
        values[i] = float(v.value_or(fallback));
      }
    }
  }
  return DenseF32ArrayAttr::get(&context, values);
}

/// What every processor does to the pixels besides sizing them.
struct PixelSteps {
  int32_t resample;
  FloatAttr rescale;
  bool normalize;
  DenseF32ArrayAttr mean, std;
};

/// A preprocessor_config.json's resample (`defaultResample` where it
/// gives none), rescale_factor, image_mean and image_std; problems are
/// recorded in `config`.
PixelSteps readPixelSteps(MLIRContext &context, ConfigReader &config,
                          const llvm::json::Object &file,
                          int32_t defaultResample) {
  int64_t resample = config.integer("resample", defaultResample);
  if (resample < 0 || resample > 5)
    config.fail("resample " + llvm::Twine(resample) +
                " is not one of Pillow's filters (0 to 5)");
  double rescale = config.boolean("do_rescale", true)
                       ? config.number("rescale_factor", 1.0 / 255)
                       : 0.0;
  if (!(rescale >= 0.0))
    config.fail("rescale_factor must not be negative");
  PixelSteps steps{int32_t(resample),
                   FloatAttr::get(Float64Type::get(&context), rescale),
                   config.boolean("do_normalize", true),
                   readTriple(context, config, file, "image_mean", 0.5f),
                   readTriple(context, config, file, "image_std", 0.5f)};
  if (llvm::any_of(steps.std.asArrayRef(), [](float s) { return !(s > 0); }))
    config.fail("image_std must be positive");
  return steps;
}

/// `directory`'s preprocessor_config.json (its path into `path`), or none
/// where the folder has no such file.
llvm::Expected<std::optional<llvm::json::Object>>
readPreprocessorFile(llvm::StringRef directory,
                     llvm::SmallVectorImpl<char> &path) {
  path.assign(directory.begin(), directory.end());
  llvm::sys::path::append(path, "preprocessor_config.json");
  if (!llvm::sys::fs::exists(path))
    return std::nullopt;
  llvm::Expected<llvm::json::Object> file =
      readJsonObjectFile(llvm::StringRef(path.data(), path.size()));
  if (!file)
    return file.takeError();
  return std::optional<llvm::json::Object>(std::move(*file));
}

} // namespace

llvm::Expected<ImagePreprocessingAttr>
mlir::tfm::readImagePreprocessing(MLIRContext &context,
                                  llvm::StringRef directory, int64_t imageSize,
                                  bool sizeIsShortestEdge) {
  llvm::SmallString<256> path;
  llvm::Expected<std::optional<llvm::json::Object>> file =
      readPreprocessorFile(directory, path);
  if (!file)
    return file.takeError();
  if (!*file)
    return ImagePreprocessingAttr();
  ConfigReader config(**file, path.str().str());
  SizeField resize, crop;
  if (config.boolean("do_resize", true))
    resize = readSize(config, **file, "size", sizeIsShortestEdge)
                 .value_or(SizeField{imageSize, imageSize, 0});
  if (config.boolean("do_center_crop", false))
    if (std::optional<SizeField> size = readSize(config, **file, "crop_size"))
      crop = *size;
  if (crop.shortestEdge)
    config.fail("a crop_size is a height and a width");
  PixelSteps pixels = readPixelSteps(context, config, **file, /*resample=*/2);
  if (llvm::Error err = config.takeError())
    return std::move(err);
  // What comes out must be what the model takes.
  int64_t height = crop.height ? crop.height : resize.height;
  int64_t width = crop.width ? crop.width : resize.width;
  if (!crop.height && resize.shortestEdge)
    return makeError(path + ": resizing the shortest edge without a crop "
                            "gives images of varying size; the model takes " +
                     llvm::Twine(imageSize) + "x" + llvm::Twine(imageSize));
  if (height != imageSize || width != imageSize)
    return makeError(path + ": images preprocess to " + llvm::Twine(width) +
                     "x" + llvm::Twine(height) + ", but the model takes " +
                     llvm::Twine(imageSize) + "x" + llvm::Twine(imageSize) +
                     " (config.json's image_size)");
  return getCheckedAttr<ImagePreprocessingAttr>(
      path, &context, resize.height, resize.width, resize.shortestEdge,
      pixels.resample, crop.height, crop.width, pixels.rescale,
      pixels.normalize, pixels.mean, pixels.std, DenseI64ArrayAttr(),
      /*longestEdge=*/int64_t(0), /*splitTiles=*/false);
}

namespace {

/// A {"longest_edge": n} field (Idefics3's size and max_image_size); a
/// failure otherwise.
int64_t readLongestEdge(ConfigReader &config, llvm::StringRef key) {
  const llvm::json::Object *size = config.nested(key);
  if (!size) {
    config.fail("missing field '" + key + "' ({\"longest_edge\": n})");
    return 0;
  }
  std::optional<int64_t> edge = size->getInteger("longest_edge");
  if (size->size() != 1 || !edge || *edge <= 0) {
    config.fail("field '" + key +
                "' must be {\"longest_edge\": n}, n "
                "positive");
    return 0;
  }
  return *edge;
}

} // namespace

llvm::Expected<ImagePreprocessingAttr> mlir::tfm::readIdefics3Preprocessing(
    MLIRContext &context, llvm::StringRef directory, int64_t tileSize) {
  llvm::SmallString<256> path;
  llvm::Expected<std::optional<llvm::json::Object>> file =
      readPreprocessorFile(directory, path);
  if (!file)
    return file.takeError();
  if (!*file)
    return ImagePreprocessingAttr();
  ConfigReader config(**file, path.str().str());
  if (!config.boolean("do_resize", true))
    config.fail("do_resize false (images of any size) is not supported");
  int64_t longest = readLongestEdge(config, "size");
  int64_t tile = readLongestEdge(config, "max_image_size");
  bool split = config.boolean("do_image_splitting", true);
  // Idefics3ImageProcessor's default filter is Lanczos.
  PixelSteps pixels = readPixelSteps(context, config, **file, /*resample=*/1);
  if (llvm::Error err = config.takeError())
    return std::move(err);
  if (tile != tileSize)
    return makeError(path + ": max_image_size " + llvm::Twine(tile) +
                     " makes tiles the vision tower does not take (its "
                     "image_size is " +
                     llvm::Twine(tileSize) + ")");
  return getCheckedAttr<ImagePreprocessingAttr>(
      path, &context, /*resizeHeight=*/tile, /*resizeWidth=*/tile,
      /*shortestEdge=*/int64_t(0), pixels.resample,
      /*cropHeight=*/int64_t(0), /*cropWidth=*/int64_t(0), pixels.rescale,
      pixels.normalize, pixels.mean, pixels.std, DenseI64ArrayAttr(), longest,
      split);
}

namespace {

/// How a file that gives only the mean and std sizes its images.
enum class Sizing {
  clipCrop,     // the shortest edge, then a centered crop (bicubic)
  square,       // squashed to the square (bilinear)
  idefics3Tiles // the longest edge, then tiles and the whole (Lanczos)
};

/// A file's mean and std (three numbers each, the std positive) with its
/// sizing; `longestEdge` for Idefics3's tiles.
llvm::Expected<ImagePreprocessingAttr>
meanStdPreprocessing(MLIRContext &context, llvm::StringRef source,
                     int64_t imageSize, llvm::ArrayRef<float> mean,
                     llvm::ArrayRef<float> std, Sizing sizing,
                     int64_t longestEdge = 0) {
  if (mean.size() != 3 || std.size() != 3 ||
      llvm::any_of(std, [](float s) { return !(s > 0); }))
    return makeError(source + ": the image mean and std must be three "
                              "numbers each (R, G, B), the std positive");
  // Pillow's filter numbers.
  constexpr int32_t kLanczos = 1, kBilinear = 2, kBicubic = 3;
  bool crop = sizing == Sizing::clipCrop;
  int64_t square = crop ? 0 : imageSize, cropped = crop ? imageSize : 0;
  int32_t resample = crop                       ? kBicubic
                     : sizing == Sizing::square ? kBilinear
                                                : kLanczos;
  return getCheckedAttr<ImagePreprocessingAttr>(
      source, &context, /*resizeHeight=*/square, /*resizeWidth=*/square,
      /*shortestEdge=*/cropped, resample, cropped, cropped,
      FloatAttr::get(Float64Type::get(&context), 1.0 / 255),
      /*normalize=*/true, DenseF32ArrayAttr::get(&context, mean),
      DenseF32ArrayAttr::get(&context, std), DenseI64ArrayAttr(), longestEdge,
      /*splitTiles=*/sizing == Sizing::idefics3Tiles);
}

} // namespace

llvm::Expected<ImagePreprocessingAttr> mlir::tfm::idefics3ImagePreprocessing(
    MLIRContext &context, llvm::StringRef source, int64_t tileSize,
    int64_t longestEdge, llvm::ArrayRef<float> mean,
    llvm::ArrayRef<float> std) {
  return meanStdPreprocessing(context, source, tileSize, mean, std,
                              Sizing::idefics3Tiles, longestEdge);
}

llvm::Expected<ImagePreprocessingAttr>
mlir::tfm::clipImagePreprocessing(MLIRContext &context, llvm::StringRef source,
                                  int64_t imageSize, llvm::ArrayRef<float> mean,
                                  llvm::ArrayRef<float> std) {
  return meanStdPreprocessing(context, source, imageSize, mean, std,
                              Sizing::clipCrop);
}

llvm::Expected<ImagePreprocessingAttr> mlir::tfm::squareImagePreprocessing(
    MLIRContext &context, llvm::StringRef source, int64_t imageSize,
    llvm::ArrayRef<float> mean, llvm::ArrayRef<float> std) {
  return meanStdPreprocessing(context, source, imageSize, mean, std,
                              Sizing::square);
}

llvm::Expected<ImagePreprocessingAttr>
mlir::tfm::withGridPinpoints(ImagePreprocessingAttr preprocessing,
                             llvm::StringRef source,
                             llvm::ArrayRef<int64_t> pinpoints) {
  MLIRContext *context = preprocessing.getContext();
  return getCheckedAttr<ImagePreprocessingAttr>(
      source, context, preprocessing.getResizeHeight(),
      preprocessing.getResizeWidth(), preprocessing.getShortestEdge(),
      preprocessing.getResample(), preprocessing.getCropHeight(),
      preprocessing.getCropWidth(), preprocessing.getRescale(),
      preprocessing.getNormalize(), preprocessing.getMean(),
      preprocessing.getStd(), DenseI64ArrayAttr::get(context, pinpoints),
      /*longestEdge=*/int64_t(0), /*splitTiles=*/false);
}
