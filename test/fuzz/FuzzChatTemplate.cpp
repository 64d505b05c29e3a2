//===- FuzzChatTemplate.cpp - chat templates and conversations on any bytes ===//
//
// A chat template comes from a model file and a conversation from a client:
// tfm-serve's Jinja subset (serve/jinja/ChatTemplate.h) parses the
// input's first part as a template and, when it parses, renders it with the
// second part as the conversation (a JSON array of messages; a fixed one
// when it is not). Refusals must say where and why; a render must stay
// within its bounds.
//
//===----------------------------------------------------------------------===//

#include "serve/jinja/ChatTemplate.h"
#include "test/fuzz/FuzzFiles.h"

#include <cstdlib>

using tfm::serve::ChatTemplate;
using json = nlohmann::ordered_json;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<std::string_view> parts = tfm_fuzz::splitParts(data, size, 2);
  std::string error;
  auto parsed = ChatTemplate::parse(std::string(parts[0]), error);
  if (!parsed) {
    if (error.rfind("line ", 0) != 0)
      std::abort(); // a refusal names the place
    return 0;
  }
  json messages = json::parse(parts[1], nullptr, /*allow_exceptions=*/false);
  if (messages.is_discarded() || !messages.is_array())
    messages = json::array({{{"role", "system"}, {"content", "Be brief."}},
                            {{"role", "user"}, {"content", "Hi!"}}});
  json variables = {{"messages", messages},
                    {"add_generation_prompt", true},
                    {"bos_token", "<s>"},
                    {"eos_token", "</s>"}};
  std::string out;
  ChatTemplate::Failure failure;
  if (parsed->render(variables, out, failure, error)) {
    if (out.size() > (size_t(16) << 20))
      std::abort();
  } else if (failure == ChatTemplate::Failure::Invalid &&
             error.rfind("line ", 0) != 0) {
    std::abort();
  }
  return 0;
}
