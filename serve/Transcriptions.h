//===- Transcriptions.h - OpenAI's /v1/audio/transcriptions -----*- C++ -*-===//
//
// What tfm-serve accepts and answers on /v1/audio/transcriptions for a
// speech recognizer (a CTC head: Wav2Vec2ForCTC, HubertForCTC): OpenAI's
// multipart form (`file`, the audio; `model`; `response_format` json or
// text; `temperature` 0, as greedy CTC decoding is) and its response. A
// recognizer has no language or prompt to condition on: such fields are
// refused, not ignored.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_SERVE_TRANSCRIPTIONS_H
#define TFM_SERVE_TRANSCRIPTIONS_H

#include "serve/OpenAiApi.h"

#include <map>
#include <optional>
#include <string>

namespace tfm::serve {

struct TranscriptionRequest {
  /// The uploaded file's bytes.
  std::string audio;
  /// response_format "text": the transcript as text/plain.
  bool plainText = false;
};

/// Checks the form's fields (name -> value; the file's bytes under "file")
/// and fills `out`.
std::optional<ApiError>
parseTranscriptionRequest(const std::map<std::string, std::string> &fields,
                          const ServedModel &model, TranscriptionRequest &out);

/// The JSON response: {"text": ...}.
nlohmann::ordered_json transcriptionResponse(const std::string &text);

} // namespace tfm::serve

#endif // TFM_SERVE_TRANSCRIPTIONS_H
