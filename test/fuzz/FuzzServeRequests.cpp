//===- FuzzServeRequests.cpp - tfm-serve's other endpoints on any bytes ---===//
//
// The requests tfm-serve reads besides completions (FuzzHttpBody.cpp): a
// body as /v1/embeddings, /classify and /rerank read it, and as a
// multipart upload (serve/Multipart.cpp) whose fields
// /v1/audio/transcriptions checks for Whisper and for a CTC recognizer, and
// a body as /v1/images/generations reads it for a diffusion pipeline.
// The model: 512 ids, 64 positions. The input's parts: the body, the
// upload's Content-Type, then a tokenizer blob (none, or one the runtime
// refuses: inputs must be ids). An accepted request must be one the
// encoder can run; a refused one must say why with a 4xx status.
//
//===----------------------------------------------------------------------===//

#include "serve/Classification.h"
#include "serve/Embeddings.h"
#include "serve/Images.h"
#include "serve/Multipart.h"
#include "serve/Transcriptions.h"
#include "test/fuzz/FuzzFiles.h"
#include "test/fuzz/FuzzServedModel.h"

#include <algorithm>
#include <cstdlib>

using namespace tfm::serve;

namespace {

constexpr int64_t kContext = 64;

void checkRefusal(const std::optional<ApiError> &error) {
  if (error->message.empty() || error->status < 400 || error->status > 499)
    std::abort();
}

void checkIds(const std::vector<int32_t> &ids, const ServedModel &model) {
  if (ids.empty() || int64_t(ids.size()) > kContext)
    std::abort();
  for (int32_t id : ids)
    if (id < 0 || id >= model.desc->vocab_size)
      std::abort();
}

void checkEncoderBodies(const std::string &body, const ServedModel &model) {
  EmbeddingRequest embedding;
  if (auto error = parseEmbeddingRequest(body, model, 8, kContext, embedding))
    checkRefusal(error);
  else if (embedding.inputs.empty() ||
           embedding.inputs.size() > kMaxInputsPerRequest)
    std::abort();
  for (const std::vector<int32_t> &ids : embedding.inputs)
    checkIds(ids, model);

  ClassificationRequest classification;
  if (auto error =
          parseClassificationRequest(body, model, kContext, classification))
    checkRefusal(error);
  for (const EncoderInput &input : classification.inputs)
    checkIds(input.ids, model);

  RerankRequest rerank;
  if (auto error = parseRerankRequest(body, model, kContext, rerank)) {
    checkRefusal(error);
    return;
  }
  if (rerank.pairs.size() != rerank.documents.size() || rerank.topN < 1 ||
      rerank.topN > int64_t(rerank.documents.size()))
    std::abort();
  for (const EncoderInput &pair : rerank.pairs)
    checkIds(pair.ids, model);
}

void checkUpload(const std::string &contentType, const std::string &body,
                 const ServedModel &model) {
  std::map<std::string, std::string> fields;
  if (std::optional<std::string> malformed =
          parseMultipartForm(contentType, body, fields)) {
    if (malformed->empty())
      std::abort();
    return;
  }
  for (const auto &[name, value] : fields)
    if (name.empty() || value.size() > body.size())
      std::abort();
  for (SpeechModel speech :
       {SpeechModel::Ctc, SpeechModel::Whisper, SpeechModel::WhisperTimestamps})
    for (bool translate : {false, true}) {
      TranscriptionRequest request;
      if (auto error = parseTranscriptionRequest(fields, model, speech,
                                                 translate, request))
        checkRefusal(error);
      else if (request.audio.empty())
        std::abort();
    }
}

/// The body as /v1/images/generations reads it for a 96x64 pipeline.
void checkImageBody(const std::string &body, tfm_fuzz::FuzzServedModel &fuzz) {
  static const tfm_diffusion_desc diffusion = {
      4, 4, 8, 12, 8, 77, 0, -1, 0, 0.18215f, "_class_name=\"PNDMScheduler\"\n"};
  fuzz.desc.diffusion = &diffusion;
  ImageRequest request;
  std::optional<ApiError> error = parseImageRequest(body, fuzz.served, request);
  fuzz.desc.diffusion = nullptr;
  if (error) {
    checkRefusal(error);
    return;
  }
  if (request.n < 1 || request.n > kMaxImagesPerRequest || request.steps < 1 ||
      request.steps > kMaxImageSteps || !(request.guidance >= 0) ||
      request.guidance > kMaxGuidanceScale)
    std::abort();
  std::vector<std::string> names = imageSchedulerNames();
  if (!request.scheduler.empty() &&
      std::find(names.begin(), names.end(), request.scheduler) == names.end())
    std::abort();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<std::string_view> parts = tfm_fuzz::splitParts(data, size, 3);
  tfm_fuzz::FuzzServedModel fuzzModel(parts[2], kContext);
  const ServedModel &model = fuzzModel.served;
  std::string body(parts[0]);
  checkEncoderBodies(body, model);
  checkUpload(std::string(parts[1]), body, model);
  checkImageBody(body, fuzzModel);
  return 0;
}
