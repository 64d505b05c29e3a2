//===- Transcriptions.cpp - OpenAI's /v1/audio/transcriptions ------------===//

#include "serve/Transcriptions.h"

#include <cstdlib>

using namespace tfm::serve;
using json = nlohmann::ordered_json;

namespace {

/// `response_format`, as far as `speech` can answer it.
std::optional<ApiError> readFormat(const std::string &value, SpeechModel speech,
                                   TranscriptionFormat &format) {
  static const std::pair<const char *, TranscriptionFormat> formats[] = {
      {"json", TranscriptionFormat::Json},
      {"text", TranscriptionFormat::Text},
      {"verbose_json", TranscriptionFormat::VerboseJson},
      {"srt", TranscriptionFormat::Srt},
      {"vtt", TranscriptionFormat::Vtt}};
  // json, text and verbose_json; subtitles need segments with times,
  // which only Whisper with timestamp tokens has.
  size_t allowed = speech == SpeechModel::WhisperTimestamps ? 5 : 3;
  for (size_t i = 0; i < allowed; ++i)
    if (value == formats[i].first) {
      format = formats[i].second;
      return std::nullopt;
    }
  const char *message =
      speech == SpeechModel::Ctc
          ? "'response_format' must be \"json\", \"text\" or "
            "\"verbose_json\" (no subtitles: a CTC recognizer's transcript "
            "has words, not segments)"
      : speech == SpeechModel::Whisper
          ? "'response_format' must be \"json\", \"text\" or "
            "\"verbose_json\" (no subtitles: srt and vtt need timestamps, "
            "which this model's generation config has no tokens for)"
          : "'response_format' must be \"json\", \"text\", "
            "\"verbose_json\", \"srt\" or \"vtt\"";
  return ApiError{400, message, "response_format", ""};
}

std::optional<ApiError> readTemperature(const std::string &value,
                                        SpeechModel speech, double &out) {
  char *end = nullptr;
  double t = std::strtod(value.c_str(), &end);
  bool number = end != value.c_str() && !*end;
  if (speech == SpeechModel::WhisperTimestamps) {
    if (number && t >= 0 && t <= 1) {
      out = t;
      return std::nullopt;
    }
    return ApiError{400, "'temperature' must be a number from 0 to 1",
                    "temperature", ""};
  }
  if (number && t == 0)
    return std::nullopt;
  return ApiError{400,
                  std::string("'temperature' can only be 0: ") +
                      (speech == SpeechModel::Whisper
                           ? "Whisper without timestamp tokens searches as "
                             "its generation config says"
                           : "a CTC recognizer decodes greedily"),
                  "temperature", ""};
}

/// One of `timestamp_granularities[]`: words (a CTC recognizer's, and
/// Whisper's where it was compiled with alignment heads: @align) or
/// segments (Whisper's with timestamp tokens).
std::optional<ApiError> readGranularity(const std::string &name,
                                        const std::string &value,
                                        SpeechModel speech,
                                        const ServedModel &model,
                                        TranscriptionRequest &out) {
  if (value != "word" && value != "segment")
    return ApiError{400,
                    "'timestamp_granularities' must be \"word\" or "
                    "\"segment\"",
                    name, ""};
  bool aligns = false;
  for (int32_t i = 0; model.desc && i < model.desc->num_entry_points; ++i)
    aligns |= std::string(model.desc->entry_points[i].name) == "align";
  if (value == "word" &&
      (speech == SpeechModel::Ctc ||
       (speech == SpeechModel::WhisperTimestamps && aligns))) {
    out.words = true;
    return std::nullopt;
  }
  if (value == "segment" && speech == SpeechModel::WhisperTimestamps)
    return std::nullopt;
  std::string why =
      speech == SpeechModel::Ctc
          ? "a CTC recognizer's transcript has words, not segments"
      : speech == SpeechModel::Whisper
          ? "Whisper without timestamp tokens gives no timestamps"
          : "it was compiled without alignment heads (generation_config."
            "json's alignment_heads, which place words), or split over "
            "ranks";
  return ApiError{400,
                  "'timestamp_granularities' \"" + value + "\" for model '" +
                      model.name + "': " + why,
                  name, ""};
}

std::optional<ApiError> readLanguage(const std::string &value,
                                     std::string &out) {
  bool code = value.size() >= 2 && value.size() <= 3;
  for (char c : value)
    code = code && c >= 'a' && c <= 'z';
  if (!code)
    return ApiError{400,
                    "'language' must be an ISO 639-1 code such as \"en\", "
                    "got \"" +
                        value + "\"",
                    "language", ""};
  out = value;
  return std::nullopt;
}

} // namespace

std::optional<ApiError> tfm::serve::parseTranscriptionRequest(
    const std::map<std::string, std::string> &fields, const ServedModel &model,
    SpeechModel speech, bool translate, TranscriptionRequest &out) {
  if (translate && speech != SpeechModel::WhisperTimestamps)
    return ApiError{400,
                    "model '" + model.name +
                        "' does not translate: only Whisper with timestamp "
                        "tokens (generation_config.json's "
                        "no_timestamps_token_id) does",
                    "model", ""};
  out.translate = translate;
  bool whisper = speech != SpeechModel::Ctc;
  for (const auto &[name, value] : fields) {
    std::optional<ApiError> error;
    if (name == "file") {
      out.audio = value;
    } else if (name == "model") {
      error = checkModelField(json{{"model", value}}, model);
    } else if (name == "response_format") {
      error = readFormat(value, speech, out.format);
    } else if (name == "temperature") {
      error = readTemperature(value, speech, out.temperature);
    } else if (name == "language" && whisper && !translate) {
      error = readLanguage(value, out.language);
    } else if (name == "prompt" && whisper) {
      out.prompt = value;
    } else if (name == "language" && translate) {
      error = ApiError{400,
                       "'language' is not a field of translations: the "
                       "audio's language is detected, the text is English",
                       name, ""};
    } else if (name == "language" || name == "prompt") {
      error = ApiError{400,
                       "'" + name +
                           "' is not supported: a CTC recognizer hears one "
                           "language and takes no prompt",
                       name, ""};
    } else if (name == "timestamp_granularities[]" ||
               name == "timestamp_granularities") {
      // The array's items, one a line (parseMultipartForm).
      for (size_t at = 0; !error && at <= value.size();) {
        size_t end = std::min(value.find('\n', at), value.size());
        error = readGranularity(name, value.substr(at, end - at), speech, model,
                                out);
        at = end + 1;
      }
    } else {
      error = ApiError{400, "unknown field '" + name + "'", name, ""};
    }
    if (error)
      return error;
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
