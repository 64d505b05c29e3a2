// main.cpp - a C++ program that links a model compiled by tfmc (the bundled
// sorter): RAII owners around the C API, a lambda as the token callback.
//
//   ./sorter_cpp "7 3 9 1 5 >"      prints   7 3 9 1 5 > 1 3 5 7 9
#include "sorter.h"

#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

struct ModelDeleter {
  void operator()(tfm_model *m) const { tfm_model_free(m); }
};
struct SessionDeleter {
  void operator()(tfm_session *s) const { tfm_session_free(s); }
};

void check(tfm_status_code code, const tfm_status &status) {
  if (code != TFM_OK)
    throw std::runtime_error(status.message);
}

} // namespace

int main(int argc, char **argv) {
  std::string prompt = argc > 1 ? argv[1] : "7 3 9 1 5 >";
  try {
    tfm_status status;
    tfm_model *raw = nullptr;
    check(tfm_model_load(&sorter_model, nullptr, &raw, &status), status);
    std::unique_ptr<tfm_model, ModelDeleter> model(raw);

    tfm_tokenizer *tokenizer = tfm_model_tokenizer(model.get(), &status);
    if (!tokenizer)
      throw std::runtime_error(status.message);
    std::vector<int32_t> ids(SORTER_MAX_CONTEXT);
    int64_t count = 0;
    check(tfm_tokenizer_encode(tokenizer, prompt.c_str(), SORTER_BOS_TOKEN,
                               ids.data(), ids.size(), &count, &status),
          status);
    if (count > SORTER_MAX_CONTEXT)
      throw std::runtime_error("the prompt is too long");

    tfm_session *rawSession = nullptr;
    check(tfm_session_new(model.get(), &rawSession, &status), status);
    // Declared after the model: destroyed first, as the API requires.
    std::unique_ptr<tfm_session, SessionDeleter> session(rawSession);

    std::string text;
    tfm_generate_options options{};
    options.max_new_tokens = 20;
    options.sampler = tfm_sampler_default_options();
    options.user = &text;
    options.on_token = [](void *user, int32_t, const char *piece,
                          size_t size) {
      static_cast<std::string *>(user)->append(piece, size);
      return 0;
    };
    tfm_generate_result result;
    check(tfm_generate(session.get(), ids.data(), count, &options, &result,
                       &status),
          status);
    std::cout << prompt << text << "\n";
    return 0;
  } catch (const std::exception &e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
