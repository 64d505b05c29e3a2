//===- Images.h - OpenAI's /v1/images/generations ---------------*- C++ -*-===//
//
// What tfm-serve accepts and answers on /v1/images/generations for a
// Stable Diffusion pipeline (desc->diffusion): OpenAI's request (`prompt`,
// `n` up to 4, `size` only as compiled, `response_format` b64_json only:
// the server keeps no files to point a URL at) with the executable's
// knobs as extensions (`negative_prompt`, `steps`, `guidance_scale`,
// `seed`, `scheduler`), and its response of base64 PNGs. Fields it cannot
// honour are refused by name, not ignored. Apart from the server so that
// the parser is unit-tested (test/serve/ImagesTest.cpp).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_SERVE_IMAGES_H
#define TFM_SERVE_IMAGES_H

#include "serve/OpenAiApi.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace tfm::serve {

/// Images one request may ask for: each is a whole sampling loop.
constexpr int32_t kMaxImagesPerRequest = 4;
/// The most inference steps a request may ask for (diffusers takes any;
/// past this a request only holds the model longer).
constexpr int32_t kMaxImageSteps = 150;
/// classifier-free guidance's ceiling (UIs offer up to 20 or 30).
constexpr double kMaxGuidanceScale = 30;

/// A request's generation, with the executable's defaults (runtime/cli:
/// 50 steps, guidance 7.5, seed 0, the folder's scheduler).
struct ImageRequest {
  std::string prompt;
  /// The unconditional half; absent: the empty prompt's, or zeros where
  /// the pipeline says force_zeros_for_empty_prompt (SDXL).
  std::optional<std::string> negativePrompt;
  int32_t n = 1;              // image i is drawn from seed + i
  int32_t steps = 50;
  float guidance = 7.5f;
  uint64_t seed = 0;
  std::string scheduler; // "": the folder's scheduler_config.json
};

/// The size a pipeline was compiled for: its latents times the VAE's
/// scale factor.
struct ImageSize {
  int64_t width = 0, height = 0;
};
ImageSize compiledImageSize(const tfm_diffusion_desc &diffusion);

/// The scheduler names a request's `scheduler` may give: those
/// tfm_image_scheduler_names lists, aliases included ("pndm (plms)").
std::vector<std::string> imageSchedulerNames();

/// Parses and checks a body for `model`, a diffusion pipeline
/// (model.desc->diffusion not null).
std::optional<ApiError> parseImageRequest(const std::string &body,
                                          const ServedModel &model,
                                          ImageRequest &out);

/// The response: {"created": ..., "data": [{"b64_json": ...}, ...]}, one
/// object per PNG (its bytes), in order.
nlohmann::ordered_json imageResponse(const std::vector<std::string> &pngs,
                                     int64_t created);

} // namespace tfm::serve

#endif // TFM_SERVE_IMAGES_H
