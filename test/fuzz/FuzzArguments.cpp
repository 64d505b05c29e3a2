//===- FuzzArguments.cpp - a compiled model's command line ----------------===//
//
// tfm_main_parse_options (runtime/cli/main_options.c) on any argv: the input's
// NUL-separated strings are the arguments after the program's name. What
// parses then has its id lists parsed as main.c parses them and its
// sampling options checked by tfm_sampler_new, as a run would.
//
//===----------------------------------------------------------------------===//

#include "runtime/cli/main_options.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace {

constexpr size_t kMaxArguments = 64;

void parseIdList(const char *flag, const char *text) {
  if (!text)
    return;
  long count = 0;
  int32_t *ids = tfm_main_parse_id_list("fuzz", flag, text, &count);
  if (ids && count < 0)
    std::abort();
  std::free(ids);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  // Each argument its own exact-size allocation, so that reading past one
  // is caught.
  std::vector<std::unique_ptr<char[]>> strings;
  std::vector<char *> argv;
  auto add = [&](const char *begin, size_t length) {
    strings.emplace_back(new char[length + 1]);
    std::memcpy(strings.back().get(), begin, length);
    strings.back()[length] = '\0';
    argv.push_back(strings.back().get());
  };
  add("model", 5);
  const char *text = reinterpret_cast<const char *>(data);
  for (size_t begin = 0; begin < size && argv.size() < kMaxArguments;) {
    const void *nul = std::memchr(text + begin, '\0', size - begin);
    size_t end = nul ? static_cast<const char *>(nul) - text : size;
    add(text + begin, end - begin);
    begin = end + 1;
  }
  int argc = static_cast<int>(argv.size());
  argv.push_back(nullptr);

  tfm_main_options options;
  if (tfm_main_parse_options(argc, argv.data(), &options) ==
      TFM_MAIN_OPTIONS_RUN) {
    parseIdList("--tokens", options.tokens);
    parseIdList("--force-tokens", options.forced_tokens);
    parseIdList("--suppress", options.suppress);
    parseIdList("--token-types", options.call.token_types);
    parseIdList("--decoder-tokens", options.call.decoder_tokens);
    tfm_sampler *sampler = nullptr;
    tfm_status status;
    if (tfm_sampler_new(&options.sampler, 32000, &sampler, &status) == TFM_OK)
      tfm_sampler_free(sampler);
    else if (!status.message[0])
      std::abort();
  }
  tfm_main_options_free(&options);
  return 0;
}
