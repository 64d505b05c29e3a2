//===- Transcriptions.h - OpenAI's /v1/audio/transcriptions -----*- C++ -*-===//
//
// What tfm-serve accepts and answers on /v1/audio/transcriptions and
// /v1/audio/translations: OpenAI's multipart form (`file`, the audio;
// `model`; `response_format`; `temperature`; `language`; `prompt`;
// `timestamp_granularities[]`) for a speech recognizer (a CTC head:
// Wav2Vec2ForCTC, HubertForCTC: audio of any length in chunks, with word
// times), Whisper decoding one 30 s window, or
// Whisper with timestamp tokens, which transcribes audio of any length
// window by window (tfm_whisper_transcribe) into segments with times and
// so also answers in verbose_json's segments, srt and vtt, and translates.
// What a model cannot do is refused by name, not ignored: a CTC
// recognizer's language or prompt, word timestamps, a translation by a
// model without timestamps.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_SERVE_TRANSCRIPTIONS_H
#define TFM_SERVE_TRANSCRIPTIONS_H

#include "serve/OpenAiApi.h"

#include <map>
#include <optional>
#include <string>

namespace tfm::serve {

enum class TranscriptionFormat { Json, Text, VerboseJson, Srt, Vtt };

/// What hears the audio.
enum class SpeechModel {
  Ctc,              ///< greedy CTC decoding, one clip
  Whisper,          ///< Whisper's first 30 s, as its generation config says
  WhisperTimestamps ///< Whisper window by window, any length, timestamps
};

struct TranscriptionRequest {
  /// The uploaded file's bytes.
  std::string audio;
  TranscriptionFormat format = TranscriptionFormat::Json;
  /// Whisper's language (ISO 639-1, as its <|xx|> tokens spell it); empty:
  /// the model's own, or detected.
  std::string language;
  /// Whisper's previous text (the transcript before this audio), which
  /// conditions it; empty: none.
  std::string prompt;
  /// The first temperature of Whisper's windows (each falls back from
  /// there by 0.2 up to 1, OpenAI's "0 ... increase the temperature
  /// automatically"); the others decode at 0.
  double temperature = 0;
  /// /v1/audio/translations: into English.
  bool translate = false;
  /// A CTC recognizer's verbose_json with each word's times
  /// (timestamp_granularities[] "word").
  bool words = false;
};

/// Checks the form's fields (name -> value; the file's bytes under "file")
/// for `speech` and fills `out`; `translate` for /v1/audio/translations,
/// which only Whisper with timestamps answers.
std::optional<ApiError>
parseTranscriptionRequest(const std::map<std::string, std::string> &fields,
                          const ServedModel &model, SpeechModel speech,
                          bool translate, TranscriptionRequest &out);

/// The JSON response of one clip's text: {"text": ...}, or verbose_json's
/// {"task", "language", "duration", "text", "segments"} (one segment: the
/// clip).
nlohmann::ordered_json
transcriptionResponse(const std::string &text,
                      const TranscriptionRequest &request,
                      const std::string &language, double duration);

} // namespace tfm::serve

#endif // TFM_SERVE_TRANSCRIPTIONS_H
