//===- FuzzHttpBody.cpp - tfm-serve's completion requests on any bytes ----===//
//
// tfm-serve's request parsing and text streaming (serve/
// OpenAiApi.cpp): a body as /v1/completions and as /v1/chat/completions
// read it, checked against a model of 512 ids and 256 positions with a
// ChatML chat template, then, when accepted, its prompt ids streamed back
// through TextStream with its stop strings. The input's parts: the body,
// then a tokenizer blob (none, or one the runtime refuses: prompts must be
// ids, and chats are refused). An accepted request must be one the engine
// can run; a refused one must say why with a 4xx status.
//
//===----------------------------------------------------------------------===//

#include "serve/OpenAiApi.h"
#include "test/fuzz/FuzzFiles.h"
#include "test/fuzz/FuzzServedModel.h"

#include <algorithm>
#include <cstdlib>

using namespace tfm::serve;

namespace {

const char *const kChatMl =
    "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' "
    "+ message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if "
    "add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

void check(Endpoint endpoint, const std::string &body,
           const ServedModel &model) {
  const tfm_model_desc &desc = *model.desc;
  CompletionRequest request;
  std::optional<ApiError> error =
      parseCompletionRequest(endpoint, body, model, 7, request);
  if (error) {
    if (error->message.empty() || error->status < 400 || error->status > 499)
      std::abort();
    (void)jsonText(error->body());
    return;
  }
  if (request.prompt.empty() || request.maxTokens < 1 ||
      int64_t(request.prompt.size()) + request.maxTokens >
          model.contextPositions)
    std::abort();
  for (int32_t id : request.prompt)
    if (id < 0 || id >= desc.vocab_size)
      std::abort();
  // An image's rows, one a placeholder.
  if (request.imageRowCount != int64_t(request.imageRows.size() / 4) ||
      (request.imageRowCount &&
       std::count(request.prompt.begin(), request.prompt.end(),
                  model.imageToken) != request.imageRowCount))
    std::abort();
  TextStream text(model, request.stop, request.prompt.back());
  std::string out;
  for (int32_t id : request.prompt) {
    out += text.add(id);
    if (text.stopped())
      break;
  }
  out += text.flush();
  for (const std::string &stop : request.stop)
    if (out.find(stop) != std::string::npos)
      std::abort(); // a stop string is never part of the text
  (void)jsonText(completionResponse(
      request.endpoint, request.stream, "id", 0, "fuzz",
      completionChoice(request.endpoint, out, "stop", request.stream, true)));
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<std::string_view> parts = tfm_fuzz::splitParts(data, size, 2);
  tfm_fuzz::FuzzServedModel fuzzModel(parts[1], 256);
  ServedModel &model = fuzzModel.served;
  fuzzModel.desc.add_bos = 1;
  model.maxTokensPerRequest = 128;
  std::string parseError;
  model.chatTemplate = ChatTemplate::parse(kChatMl, parseError);
  if (!model.chatTemplate)
    std::abort();
  model.specialTokens = {{"bos_token", "<s>"}, {"eos_token", "</s>"}};
  std::string body(parts[0]);
  check(Endpoint::Completions, body, model);
  check(Endpoint::ChatCompletions, body, model);
  return 0;
}
