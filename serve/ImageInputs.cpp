//===- ImageInputs.cpp - images in a chat's messages ----------------------===//
//
// See ImageInputs.h. Data URLs are decoded with GnuTLS's base64 decoder
// (libmicrohttpd's TLS library, linked already).
//
//===----------------------------------------------------------------------===//

#include "serve/ImageInputs.h"
#include "tfm/tfm_runtime.h"

#include <gnutls/gnutls.h>

#include <algorithm>

using json = nlohmann::json;

namespace {

tfm::serve::ApiError badPart(const std::string &field,
                             const std::string &what) {
  return {400, "'" + field + "' " + what, field, ""};
}

} // namespace

std::optional<tfm::serve::ApiError>
tfm::serve::readImagePart(const json &part, const std::string &field,
                          std::string &bytes) {
  const json *image = part.contains("image_url") ? &part["image_url"] : nullptr;
  // {"url": "..."}, or the URL alone as some clients send it.
  const json *url = image && image->is_object() && image->contains("url")
                        ? &(*image)["url"]
                        : image;
  if (!url || !url->is_string())
    return badPart(field, "has an image_url part without a URL string "
                          "(expected {\"type\": \"image_url\", "
                          "\"image_url\": {\"url\": \"data:image/png;"
                          "base64,...\"}})");
  const std::string &text = url->get_ref<const std::string &>();
  if (text.rfind("data:", 0) != 0)
    return badPart(field, "has an image_url '" + text.substr(0, 64) +
                              "': a remote URL, which this server does not "
                              "fetch (send the image as a data: URL)");
  // "data:" + [type] + ";base64" before the comma.
  static constexpr size_t kShortest = sizeof("data:;base64") - 1;
  size_t comma = text.find(',');
  if (comma == std::string::npos || comma < kShortest ||
      text.compare(comma - 7, 7, ";base64") != 0)
    return badPart(field, "has an image_url data: URL that is not "
                          "base64 (data:image/...;base64,...)");
  gnutls_datum_t encoded = {
      reinterpret_cast<unsigned char *>(const_cast<char *>(text.data())) +
          comma + 1,
      unsigned(text.size() - comma - 1)};
  gnutls_datum_t decoded = {nullptr, 0};
  if (gnutls_base64_decode2(&encoded, &decoded) != GNUTLS_E_SUCCESS)
    return badPart(field, "has an image_url data: URL whose base64 does "
                          "not decode");
  bytes.assign(reinterpret_cast<const char *>(decoded.data), decoded.size);
  gnutls_free(decoded.data);
  return std::nullopt;
}

std::optional<tfm::serve::ApiError> tfm::serve::spliceImages(
    const ServedModel &model, const std::vector<std::string> &images,
    std::vector<int32_t> &ids, std::vector<float> &rows, int64_t &count) {
  count = 0;
  rows.clear();
  if (model.imageToken < 0)
    return std::nullopt;
  if (images.empty()) {
    int64_t given = std::count(ids.begin(), ids.end(), model.imageToken);
    if (given == 0)
      return std::nullopt;
    return ApiError{400,
                    "the prompt holds " + std::to_string(given) +
                        " image placeholders and no image: give each an "
                        "image_url content part",
                    "messages", ""};
  }
  std::vector<std::vector<int32_t>> each(images.size());
  size_t room = ids.size();
  for (size_t i = 0; i < images.size(); ++i) {
    std::string problem = model.encodeImage(images[i], rows, each[i]);
    if (!problem.empty())
      return ApiError{400, "image " + std::to_string(i) + ": " + problem,
                      "messages", "invalid_image"};
    count +=
        int64_t(std::count(each[i].begin(), each[i].end(), model.imageToken));
    room += each[i].size();
  }
  // One placeholder an image becomes the image's ids.
  std::vector<const int32_t *> starts;
  std::vector<int64_t> lengths;
  for (const std::vector<int32_t> &image : each) {
    starts.push_back(image.data());
    lengths.push_back(int64_t(image.size()));
  }
  tfm_status status;
  int64_t length = 0;
  std::vector<int32_t> widened(room);
  if (tfm_splice_image_ids(model.imageToken, ids.data(), int64_t(ids.size()),
                           starts.data(), lengths.data(), int64_t(each.size()),
                           widened.data(), int64_t(widened.size()), &length,
                           &status) != TFM_OK)
    return ApiError{400, status.message, "messages", ""};
  widened.resize(size_t(length));
  ids = std::move(widened);
  return std::nullopt;
}
