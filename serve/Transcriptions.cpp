//===- Transcriptions.cpp - OpenAI's /v1/audio/transcriptions ------------===//

#include "serve/Transcriptions.h"

#include <cstdlib>

using namespace tfm::serve;
using json = nlohmann::ordered_json;

std::optional<ApiError> tfm::serve::parseTranscriptionRequest(
    const std::map<std::string, std::string> &fields, const ServedModel &model,
    TranscriptionRequest &out) {
  for (const auto &[name, value] : fields) {
    if (name == "file") {
      out.audio = value;
    } else if (name == "model") {
      if (std::optional<ApiError> error =
              checkModelField(json{{"model", value}}, model))
        return error;
    } else if (name == "response_format") {
      if (value != "json" && value != "text")
        return ApiError{400,
                        "'response_format' must be \"json\" or \"text\" "
                        "(a CTC recognizer has no segments or timestamps)",
                        "response_format", ""};
      out.plainText = value == "text";
    } else if (name == "temperature") {
      char *end = nullptr;
      double t = std::strtod(value.c_str(), &end);
      if (end == value.c_str() || *end || t != 0)
        return ApiError{400,
                        "'temperature' can only be 0: a CTC recognizer "
                        "decodes greedily",
                        "temperature", ""};
    } else if (name == "language" || name == "prompt") {
      return ApiError{400,
                      "'" + name + "' is not supported: a CTC recognizer "
                      "hears one language and takes no prompt",
                      name, ""};
    } else {
      return ApiError{400, "unknown field '" + name + "'", name, ""};
    }
  }
  if (!fields.count("file"))
    return ApiError{400, "'file' is required (the audio, as a multipart "
                         "form's file)",
                    "file", ""};
  if (out.audio.empty())
    return ApiError{400, "'file' is empty", "file", ""};
  return std::nullopt;
}

json tfm::serve::transcriptionResponse(const std::string &text) {
  return json{{"text", text}};
}
