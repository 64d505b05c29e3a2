//===- Images.cpp - OpenAI's /v1/images/generations ----------------------===//

#include "serve/Images.h"

#include <algorithm>
#include <cmath>
#include <set>

using namespace tfm::serve;
using json = nlohmann::ordered_json;

namespace {

ApiError badField(const std::string &field, const std::string &what) {
  return {400, "'" + field + "' " + what, field, ""};
}

/// The field's value, or null when absent: optional fields may be given
/// as null, as some clients send what they leave unset.
json fieldValue(const json &request, const char *field) {
  auto found = request.find(field);
  return found == request.end() ? json() : *found;
}

/// An integer field within [low, high] (a number without a fraction, as
/// JSON writers may spell 30 as 30.0); `what` follows the range in the
/// message.
std::optional<ApiError> readInteger(const json &request, const char *field,
                                    int64_t low, int64_t high,
                                    const std::string &what, int64_t &out) {
  json value = fieldValue(request, field);
  if (value.is_null())
    return std::nullopt;
  double number = value.is_number() ? value.get<double>() : NAN;
  if (!value.is_number() || number != std::floor(number) || number < low ||
      number > high)
    return badField(field, "must be an integer from " + std::to_string(low) +
                               " to " + std::to_string(high) + what + ", got " +
                               value.dump());
  out = int64_t(number);
  return std::nullopt;
}

std::string sizeText(ImageSize size) {
  return std::to_string(size.width) + "x" + std::to_string(size.height);
}

} // namespace

ImageSize tfm::serve::compiledImageSize(const tfm_diffusion_desc &d) {
  return {d.latent_width * d.vae_scale_factor,
          d.latent_height * d.vae_scale_factor};
}

std::vector<std::string> tfm::serve::imageSchedulerNames() {
  // "ddim, pndm (plms), ...": each entry a name and maybe an alias.
  std::vector<std::string> names;
  std::string list = tfm_image_scheduler_names(), name;
  for (char c : list + ",") {
    if (c == ',' || c == ' ' || c == '(' || c == ')') {
      if (!name.empty())
        names.push_back(name);
      name.clear();
    } else {
      name += c;
    }
  }
  return names;
}

std::optional<ApiError> tfm::serve::parseImageRequest(const std::string &body,
                                                      const ServedModel &model,
                                                      ImageRequest &out) {
  json request;
  if (std::optional<ApiError> error = parseRequestObject(body, request))
    return error;
  static const std::set<std::string> known = {"model",
                                              "prompt",
                                              "n",
                                              "size",
                                              "response_format",
                                              "user",
                                              "negative_prompt",
                                              "steps",
                                              "guidance_scale",
                                              "seed",
                                              "scheduler"};
  for (auto &[key, value] : request.items())
    if (!known.count(key))
      return ApiError{400, "unknown field '" + key + "'", key, ""};
  if (std::optional<ApiError> error = checkModelField(request, model))
    return error;

  auto prompt = request.find("prompt");
  if (prompt == request.end())
    return ApiError{400, "'prompt' is required", "prompt", ""};
  if (!prompt->is_string())
    return badField("prompt", "must be a string");
  out.prompt = prompt->get<std::string>();
  json negative = fieldValue(request, "negative_prompt");
  if (!negative.is_null() && !negative.is_string())
    return badField("negative_prompt", "must be a string");
  if (negative.is_string())
    out.negativePrompt = negative.get<std::string>();

  int64_t n = out.n, steps = out.steps;
  if (auto error = readInteger(request, "n", 1, kMaxImagesPerRequest,
                               " (the images one request may ask for)", n))
    return error;
  if (auto error = readInteger(request, "steps", 1, kMaxImageSteps, "", steps))
    return error;
  out.n = int32_t(n);
  out.steps = int32_t(steps);

  ImageSize compiled = compiledImageSize(*model.desc->diffusion);
  json size = fieldValue(request, "size");
  if (!size.is_null() && size != json(sizeText(compiled)))
    return badField("size", "must be \"" + sizeText(compiled) +
                                "\": this pipeline was compiled for " +
                                sizeText(compiled) +
                                " images (tfmc --image-size WIDTHxHEIGHT "
                                "compiles another size), got " +
                                size.dump());

  json format = fieldValue(request, "response_format");
  if (format == json("url"))
    return badField("response_format",
                    "must be \"b64_json\": tfm-serve keeps no files to give "
                    "a URL of");
  if (!format.is_null() && format != json("b64_json"))
    return badField("response_format",
                    "must be \"b64_json\", got " + format.dump());

  json guidance = fieldValue(request, "guidance_scale");
  if (!guidance.is_null()) {
    if (!guidance.is_number() || guidance.get<double>() < 0 ||
        guidance.get<double>() > kMaxGuidanceScale)
      return badField("guidance_scale",
                      "must be a number from 0 to " +
                          std::to_string(int(kMaxGuidanceScale)) + ", got " +
                          guidance.dump());
    out.guidance = guidance.get<float>();
  }

  json seed = fieldValue(request, "seed");
  if (!seed.is_null()) {
    // torch's manual_seed takes the whole unsigned 64-bit range.
    if (!seed.is_number_unsigned() &&
        !(seed.is_number_integer() && seed.get<int64_t>() >= 0))
      return badField("seed",
                      "must be a non-negative integer, got " + seed.dump());
    out.seed = seed.get<uint64_t>();
  }

  json scheduler = fieldValue(request, "scheduler");
  if (!scheduler.is_null()) {
    std::vector<std::string> names = imageSchedulerNames();
    if (!scheduler.is_string() ||
        std::find(names.begin(), names.end(), scheduler.get<std::string>()) ==
            names.end())
      return badField("scheduler",
                      "must be one of " +
                          std::string(tfm_image_scheduler_names()) + ", got " +
                          scheduler.dump());
    out.scheduler = scheduler.get<std::string>();
  }
  return std::nullopt;
}

json tfm::serve::imageResponse(const std::vector<std::string> &pngs,
                               int64_t created) {
  json data = json::array();
  for (const std::string &png : pngs)
    data.push_back({{"b64_json", base64(png)}});
  return {{"created", created}, {"data", std::move(data)}};
}
