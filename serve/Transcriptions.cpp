//===- Transcriptions.cpp - OpenAI's /v1/audio/transcriptions ------------===//

#include "serve/Transcriptions.h"

#include <cstdlib>

using namespace tfm::serve;
using json = nlohmann::ordered_json;

std::optional<ApiError> tfm::serve::parseTranscriptionRequest(
    const std::map<std::string, std::string> &fields, const ServedModel &model,
    bool whisper, TranscriptionRequest &out) {
  const char *kind = whisper ? "Whisper" : "a CTC recognizer";
  for (const auto &[name, value] : fields) {
    if (name == "file") {
      out.audio = value;
    } else if (name == "model") {
      if (std::optional<ApiError> error =
              checkModelField(json{{"model", value}}, model))
        return error;
    } else if (name == "response_format") {
      if (value == "json" || value == "text" ||
          (whisper && value == "verbose_json"))
        out.format = value == "json"   ? TranscriptionFormat::Json
                     : value == "text" ? TranscriptionFormat::Text
                                       : TranscriptionFormat::VerboseJson;
      else
        return ApiError{400,
                        whisper ? "'response_format' must be \"json\", "
                                  "\"text\" or \"verbose_json\" (no "
                                  "subtitles: srt and vtt need timestamps)"
                                : "'response_format' must be \"json\" or "
                                  "\"text\" (a CTC recognizer has no "
                                  "segments or timestamps)",
                        "response_format", ""};
    } else if (name == "temperature") {
      char *end = nullptr;
      double t = std::strtod(value.c_str(), &end);
      if (end == value.c_str() || *end || t != 0)
        return ApiError{400,
                        std::string("'temperature' can only be 0: ") + kind +
                            (whisper ? " searches as its generation config "
                                       "says"
                                     : " decodes greedily"),
                        "temperature", ""};
    } else if (name == "language" && whisper) {
      bool code = value.size() >= 2 && value.size() <= 3;
      for (char c : value)
        code = code && c >= 'a' && c <= 'z';
      if (!code)
        return ApiError{400,
                        "'language' must be an ISO 639-1 code such as "
                        "\"en\", got \"" +
                            value + "\"",
                        "language", ""};
      out.language = value;
    } else if (name == "prompt" && whisper) {
      out.prompt = value;
    } else if (name == "language" || name == "prompt") {
      return ApiError{400,
                      "'" + name +
                          "' is not supported: a CTC recognizer hears one "
                          "language and takes no prompt",
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

json tfm::serve::transcriptionResponse(const std::string &text,
                                       const TranscriptionRequest &request,
                                       const std::string &language,
                                       double duration) {
  if (request.format != TranscriptionFormat::VerboseJson)
    return json{{"text", text}};
  json segment = {{"id", 0},         {"seek", 0},    {"start", 0.0},
                  {"end", duration}, {"text", text}, {"temperature", 0.0}};
  return json{{"task", "transcribe"},
              {"language", language},
              {"duration", duration},
              {"text", text},
              {"segments", json::array({segment})}};
}
