//===- FuzzImage.cpp - an image model's input files -----------------------===//
//
// tfm_image_load_memory on any bytes: PNG or JPEG decoding (libpng,
// libjpeg-turbo; image_decode.c's checks around them), then resizing with
// each of Pillow's filters, cropping and normalizing as a ViT's
// preprocessor_config.json says, or cut into LLaVA-NeXT's tiles
// (tfm_image_tiles). The input's first byte picks the filter and whether
// the resize is to a fixed size, a shortest edge or tiles; the rest is the
// image file.
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzModelDesc.h"

#include <vector>

namespace {
constexpr int64_t kSide = 24; // the model's input: [3, 24, 24]
// Tiles' pinpoints (height, width), llava-v1.6's in 24 px tiles.
constexpr int64_t kPinpoints[] = {24, 48, 48, 24, 48, 48, 72, 24, 24, 72};
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  tfm_image_preprocessing preprocessing = {};
  preprocessing.resample = data[0] % 6;
  int mode = (data[0] / 6) % 3;
  if (mode == 1) {
    preprocessing.resize_height = preprocessing.resize_width = kSide;
  } else if (mode == 2) {
    preprocessing.shortest_edge = kSide;
    preprocessing.crop_height = preprocessing.crop_width = kSide;
    preprocessing.num_grid_pinpoints = 5;
    preprocessing.grid_pinpoints = kPinpoints;
  } else {
    preprocessing.shortest_edge = kSide + 8;
    preprocessing.crop_height = preprocessing.crop_width = kSide;
  }
  preprocessing.rescale = 1.0 / 255;
  preprocessing.normalize = 1;
  for (int c = 0; c < 3; ++c)
    preprocessing.mean[c] = preprocessing.std[c] = 0.5f;
  tfm_tensor_desc input = {};
  input.role = TFM_ROLE_FEATURES;
  input.dtype = TFM_DTYPE_F32;
  input.rank = 3;
  input.shape[0] = 3, input.shape[1] = kSide, input.shape[2] = kSide;
  tfm_entry_point entry = {};
  entry.name = "encode";
  entry.num_inputs = 1;
  entry.inputs = &input;
  tfm_model_desc desc = {};
  desc.image_preprocessing = &preprocessing;
  desc.num_entry_points = 1;
  desc.entry_points = &entry;
  tfm_model *model = tfm_fuzz::loadDescribedModel(desc);

  // An exact-size copy, so that reading past the file is caught.
  std::vector<uint8_t> file(data + 1, data + size);
  std::vector<float> pixels(3 * kSide * kSide);
  tfm_status status;
  if (mode == 2) {
    tfm_tensor tiles;
    int64_t grid[2], imageSize[2];
    if (tfm_image_tiles(model, file.data(), file.size(), &tiles, grid,
                        imageSize, &status) != TFM_OK) {
      if (!status.message[0])
        std::abort(); // a refusal says what is wrong
    } else {
      // As many tiles as the grid's and the whole.
      if (tiles.shape[0] != 1 + grid[0] * grid[1])
        std::abort();
      tfm_tensor_release(&tiles);
    }
  } else if (tfm_image_load_memory(
                 model, file.data(), file.size(), pixels.data(),
                 static_cast<int64_t>(pixels.size()), &status) != TFM_OK &&
             !status.message[0]) {
    std::abort(); // a refusal says what is wrong
  }
  tfm_model_free(model);
  return 0;
}
