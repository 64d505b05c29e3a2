//===- ImagePatchesTest.cpp - Qwen2.5-VL's image patches and windows -----===//
//
// runtime/media/image_patches.c against test/e2e/vlm/make_qwen25vl_goldens.py
// (transformers 4.49's Qwen2VLImageProcessor and Qwen2.5-VL's
// get_window_index, transcribed; its output copied to
// Inputs/qwen25vl): smart_resize's sizes for 30 images, among them ties
// that round to even and sizes that leave a side no patch; image0.png's
// patches bit for bit (decoded, Pillow's bicubic to the smart size,
// rescaled, normalized with CLIP's mean and std, the frame repeated, in
// merge-square order); the windows of two grids, partial ones included.
//
//===----------------------------------------------------------------------===//

extern "C" {
#include "runtime/media/image_internal.h"
}

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

namespace {

std::vector<uint8_t> readBytes(const std::string &name) {
  std::ifstream in(std::string(TFM_QWEN25VL_GOLDENS) + "/" + name,
                   std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

/// A golden file of little-endian `T`s.
template <typename T> std::vector<T> readValues(const std::string &name) {
  std::vector<uint8_t> bytes = readBytes(name);
  std::vector<T> values(bytes.size() / sizeof(T));
  std::memcpy(values.data(), bytes.data(), values.size() * sizeof(T));
  return values;
}

/// The processor's settings in the goldens' preprocessor_config.json.
constexpr int64_t kPatch = 14, kMerge = 2, kFrames = 2;
constexpr int64_t kMinPixels = 3136, kMaxPixels = 18816;

TEST(ImagePatches, SmartResizeSizes) {
  std::vector<int32_t> cases =
      readValues<int32_t>("smart_resize_cases.i32.bin");
  ASSERT_EQ(cases.size(), 30u * 7);
  for (size_t i = 0; i < cases.size(); i += 7) {
    int64_t height = cases[i], width = cases[i + 1], factor = cases[i + 2];
    int64_t outHeight = 0, outWidth = 0;
    tfm_status status;
    tfm_status_code code =
        tfm_smart_resize(height, width, factor, cases[i + 3], cases[i + 4],
                         &outHeight, &outWidth, &status);
    std::string what = std::to_string(height) + "x" + std::to_string(width);
    if (cases[i + 5] <= 0 || cases[i + 6] <= 0) {
      // transformers raises (-1) or leaves a side of 0 patches: refused.
      EXPECT_EQ(code, TFM_ERROR_IMAGE) << what;
      continue;
    }
    ASSERT_EQ(code, TFM_OK) << what << ": " << status.message;
    EXPECT_EQ(outHeight, cases[i + 5]) << what;
    EXPECT_EQ(outWidth, cases[i + 6]) << what;
  }
}

TEST(ImagePatches, SmartResizeRefusals) {
  int64_t height, width;
  tfm_status status;
  EXPECT_EQ(tfm_smart_resize(27, 100, 28, kMinPixels, kMaxPixels, &height,
                             &width, &status),
            TFM_ERROR_IMAGE);
  EXPECT_NE(std::string(status.message).find("at least 28"), std::string::npos);
  EXPECT_EQ(tfm_smart_resize(28, 6000, 28, kMinPixels, kMaxPixels, &height,
                             &width, &status),
            TFM_ERROR_IMAGE);
  EXPECT_NE(std::string(status.message).find("beyond 200"), std::string::npos);
}

TEST(ImagePatches, PatchesOfAnImage) {
  std::vector<uint8_t> file = readBytes("image0.png");
  ASSERT_FALSE(file.empty());
  tfm_rgb_image image = {};
  char error[256];
  ASSERT_TRUE(
      tfm_decode_image(file.data(), file.size(), &image, error, sizeof error))
      << error;
  int64_t height = 0, width = 0;
  tfm_status status;
  ASSERT_EQ(tfm_smart_resize(image.height, image.width, kPatch * kMerge,
                             kMinPixels, kMaxPixels, &height, &width, &status),
            TFM_OK);
  EXPECT_EQ(height, 112);
  EXPECT_EQ(width, 140);
  tfm_rgb_image resized = {};
  ASSERT_TRUE(tfm_resize_rgb(&image, width, height, /*bicubic*/ 3, &resized));
  tfm_image_preprocessing p = {};
  p.rescale = 1.0 / 255;
  p.normalize = 1;
  const float mean[3] = {0.48145466f, 0.4578275f, 0.40821073f};
  const float std[3] = {0.26862954f, 0.26130258f, 0.27577711f};
  for (int c = 0; c < 3; ++c) {
    p.mean[c] = mean[c];
    p.std[c] = std[c];
  }
  int64_t rows = (height / kPatch) * (width / kPatch);
  int64_t columns = 3 * kFrames * kPatch * kPatch;
  std::vector<float> patches(size_t(rows * columns));
  tfm_image_patches(&resized, &p, kPatch, kMerge, kFrames, patches.data());
  std::vector<float> golden = readValues<float>("img0_pixel_values.f32.bin");
  ASSERT_EQ(golden.size(), patches.size());
  size_t differing = 0;
  for (size_t i = 0; i < golden.size(); ++i)
    differing += golden[i] != patches[i];
  EXPECT_EQ(differing, 0u) << "of " << golden.size() << " values";
  std::free(image.pixels);
  std::free(resized.pixels);
}

/// tfm_patch_windows of a grid against the goldens' window_index and
/// cu_window_seqlens, from `first` of them (a later image's, offset).
void expectWindows(int64_t gridH, int64_t gridW,
                   const std::vector<int32_t> &index,
                   const std::vector<int32_t> &cumulative, size_t firstSquare,
                   size_t firstWindow) {
  int64_t squares = (gridH / kMerge) * (gridW / kMerge);
  std::vector<int64_t> order(static_cast<size_t>(squares));
  std::vector<int64_t> lengths(static_cast<size_t>(squares));
  // The goldens' tower: window_size 56 px, 2 merge squares a side.
  int64_t windows = tfm_patch_windows(gridH, gridW, kMerge, /*window=*/2,
                                      order.data(), lengths.data());
  for (int64_t k = 0; k < squares; ++k)
    EXPECT_EQ(order[size_t(k)] + int64_t(firstSquare),
              index[firstSquare + size_t(k)])
        << "square " << k;
  ASSERT_EQ(size_t(windows) + firstWindow + 1, cumulative.size());
  for (int64_t w = 0; w < windows; ++w)
    EXPECT_EQ(lengths[size_t(w)], cumulative[firstWindow + size_t(w) + 1] -
                                      cumulative[firstWindow + size_t(w)])
        << "window " << w;
}

TEST(ImagePatches, Windows) {
  // image0: 8 x 10 patches, 4 x 5 squares: windows of 2 x 2 squares, the
  // last column of windows one square wide.
  expectWindows(8, 10, readValues<int32_t>("img0_vision_window_index.i32.bin"),
                readValues<int32_t>("img0_vision_cu_window_seqlens.i32.bin"), 0,
                0);
  // Two images in one call: the second (6 x 14 patches, 3 x 7 squares:
  // partial windows at the bottom and the right) after the first's 20
  // squares and 6 windows.
  std::vector<int32_t> grids = readValues<int32_t>("p2_image_grid_thw.i32.bin");
  ASSERT_EQ(grids.size(), 6u);
  expectWindows(
      grids[4], grids[5], readValues<int32_t>("p2_vision_window_index.i32.bin"),
      readValues<int32_t>("p2_vision_cu_window_seqlens.i32.bin"), 20, 6);
}

} // namespace
