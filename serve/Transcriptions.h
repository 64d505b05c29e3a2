//===- Transcriptions.h - OpenAI's /v1/audio/transcriptions -----*- C++ -*-===//
//
// What tfm-serve accepts and answers on /v1/audio/transcriptions for a
// speech recognizer (a CTC head: Wav2Vec2ForCTC, HubertForCTC) or Whisper:
// OpenAI's multipart form (`file`, the audio; `model`; `response_format`
// json or text, and for Whisper verbose_json; `temperature` 0, as greedy
// CTC decoding and Whisper's configured search are; Whisper's `language`)
// and its response. A CTC recognizer has no language to condition on, and
// neither takes a `prompt` yet: such fields are refused, not ignored.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_SERVE_TRANSCRIPTIONS_H
#define TFM_SERVE_TRANSCRIPTIONS_H

#include "serve/OpenAiApi.h"

#include <map>
#include <optional>
#include <string>

namespace tfm::serve {

enum class TranscriptionFormat { Json, Text, VerboseJson };

struct TranscriptionRequest {
  /// The uploaded file's bytes.
  std::string audio;
  TranscriptionFormat format = TranscriptionFormat::Json;
  /// Whisper's language (ISO 639-1, as its <|xx|> tokens spell it); empty:
  /// the model's own.
  std::string language;
  /// Whisper's previous text (the transcript before this audio), which
  /// conditions it; empty: none.
  std::string prompt;
};

/// Checks the form's fields (name -> value; the file's bytes under "file")
/// and fills `out`; `whisper` says the model is Whisper (which takes a
/// language and has verbose_json), not a CTC recognizer.
std::optional<ApiError>
parseTranscriptionRequest(const std::map<std::string, std::string> &fields,
                          const ServedModel &model, bool whisper,
                          TranscriptionRequest &out);

/// The JSON response: {"text": ...}, or verbose_json's {"task",
/// "language", "duration", "text", "segments"} (one segment: the clip).
nlohmann::ordered_json
transcriptionResponse(const std::string &text,
                      const TranscriptionRequest &request,
                      const std::string &language, double duration);

} // namespace tfm::serve

#endif // TFM_SERVE_TRANSCRIPTIONS_H
