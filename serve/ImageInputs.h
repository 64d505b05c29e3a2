//===- ImageInputs.h - images in a chat's messages -------------*- C++ -*-===//
//
// A vision-language model's chat request may give images as OpenAI's
// content parts, {"type": "image_url", "image_url": {"url": "data:...;
// base64,..."}}: each becomes the model's placeholder in the message's text
// (where the part is), and its file becomes the placeholder's rows
// (@encode_image's), which the engine runs at those positions. Remote URLs
// are refused by name: the server fetches nothing.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_SERVE_IMAGEINPUTS_H
#define TFM_SERVE_IMAGEINPUTS_H

#include "serve/OpenAiApi.h"

#include <nlohmann/json.hpp>

#include <optional>
#include <string>
#include <vector>

namespace tfm::serve {

/// An image_url part's file, its data: URL decoded into `bytes`; `field`
/// names the part in messages.
std::optional<ApiError> readImagePart(const nlohmann::json &part,
                                      const std::string &field,
                                      std::string &bytes);

/// The images' rows, in order, for the prompt's placeholders: one
/// placeholder an image replaced by the image's ids (its rows'
/// placeholders, with Idefics3's tokens around its tiles), or one a row as
/// given.
/// `rows` receives them end to end ([count, hidden]).
std::optional<ApiError> spliceImages(const ServedModel &model,
                                     const std::vector<std::string> &images,
                                     std::vector<int32_t> &ids,
                                     std::vector<float> &rows, int64_t &count);

} // namespace tfm::serve

#endif // TFM_SERVE_IMAGEINPUTS_H
