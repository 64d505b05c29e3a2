//===- ApiArgumentsTest.cpp - every public entry refuses bad arguments ---===//
//
// tfm_runtime.h promises that no function crashes on bad input: NULL
// handles and pointers, negative or zero lengths, buffers too small, ids
// out of range, calls in the wrong state. This sweeps every declared
// function with each of those against the fake model (RuntimeFixtures.h)
// and checks the status code, and that the message names the function or
// what is wrong. Under the sanitizer build (scripts/test.sh --sanitize)
// an out-of-bounds access is a failure too.
//
//===----------------------------------------------------------------------===//

#include "test/runtime/RuntimeFixtures.h"
#include "tfm/tfm_runtime.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

namespace {

using namespace tfm_test;

/// The fake model with a session and a tokenizer, loaded per test.
class ApiArguments : public ::testing::Test {
protected:
  void SetUp() override {
    desc = fakeDesc();
    ASSERT_EQ(tfm_model_load(&desc, nullptr, &model, &status), TFM_OK)
        << status.message;
    ASSERT_EQ(tfm_session_new(model, &session, &status), TFM_OK)
        << status.message;
    tokenizer = parse(tokenizerBlob(
        TFM_TOKENIZER_SCORE_BPE,
        {{"<unk>", 0}, {"<s>", 0}, {"</s>", 0}, {"a", -1}, {"b", -2}}));
    ASSERT_NE(tokenizer, nullptr);
  }
  void TearDown() override {
    tfm_tokenizer_free(tokenizer);
    tfm_session_free(session);
    tfm_model_free(model);
  }

  /// Expects `code` to be `expected` with a message containing `words`.
  void expectRefused(tfm_status_code code, tfm_status_code expected,
                     const std::string &words) {
    EXPECT_EQ(code, expected) << status.message;
    EXPECT_EQ(status.code, expected);
    EXPECT_NE(std::string(status.message).find(words), std::string::npos)
        << "message: " << status.message << "\nexpected to contain: "
        << words;
  }

  tfm_model_desc desc;
  tfm_model *model = nullptr;
  tfm_session *session = nullptr;
  tfm_tokenizer *tokenizer = nullptr;
  tfm_status status;
  float logits[8 * kVocab];
  int32_t ids[8] = {1, 3, 4, 0, 1, 2, 3, 4};
};

TEST_F(ApiArguments, ModelLoadAndQueries) {
  tfm_model *other = nullptr;
  expectRefused(tfm_model_load(nullptr, nullptr, &other, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_model_load");
  expectRefused(tfm_model_load(&desc, nullptr, nullptr, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_model_load");
  // A status is optional everywhere.
  EXPECT_EQ(tfm_model_load(nullptr, nullptr, &other, nullptr),
            TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tfm_model_get_desc(nullptr), nullptr);
  EXPECT_EQ(tfm_model_entry_point(nullptr, "forward"), nullptr);
  EXPECT_EQ(tfm_model_entry_point(model, nullptr), nullptr);
  EXPECT_EQ(tfm_model_entry_point(model, "no such entry"), nullptr);
  tfm_model_free(nullptr);
}

TEST_F(ApiArguments, MemoryAndRanks) {
  tfm_rank_stats stats[2];
  expectRefused(tfm_model_rank_stats(nullptr, stats, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_model_rank_stats: NULL model");
  expectRefused(tfm_model_rank_stats(model, nullptr, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_model_rank_stats: NULL out");
  // The fake model runs in one process.
  expectRefused(tfm_model_rank_stats(model, stats, &status),
                TFM_ERROR_INVALID_ARGUMENT, "is not split over ranks");
  EXPECT_GE(tfm_activation_peak_bytes(), 0);
}

TEST_F(ApiArguments, Forward) {
  expectRefused(tfm_forward(nullptr, ids, 1, logits, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_forward");
  expectRefused(tfm_forward(model, nullptr, 1, logits, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_forward");
  expectRefused(tfm_forward(model, ids, 1, nullptr, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_forward");
  expectRefused(tfm_forward(model, ids, -1, logits, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_forward");
  int32_t bad[] = {1, -1};
  expectRefused(tfm_forward(model, bad, 2, logits, &status),
                TFM_ERROR_OUT_OF_RANGE, "token id -1 at position 1");
}

TEST_F(ApiArguments, ModelCall) {
  tfm_tensor input = {ids, TFM_DTYPE_I32, 1, {2}, nullptr};
  tfm_tensor output = {};
  expectRefused(tfm_model_call(nullptr, "forward", &input, 1, nullptr, &output,
                               1, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_model_call");
  expectRefused(tfm_model_call(model, nullptr, &input, 1, nullptr, &output, 1,
                               &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_model_call");
  expectRefused(tfm_model_call(model, "forward", nullptr, 1, nullptr, &output,
                               1, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_model_call");
  expectRefused(tfm_model_call(model, "forward", &input, 1, nullptr, nullptr,
                               1, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_model_call");
  expectRefused(tfm_model_call(model, "forward", &input, 1, nullptr, &output,
                               0, &status),
                TFM_ERROR_INVALID_ARGUMENT, "output");
  expectRefused(tfm_model_call(model, "forward", &input, -1, nullptr, &output,
                               1, &status),
                TFM_ERROR_INVALID_ARGUMENT, "input");
  tfm_tensor noData = {nullptr, TFM_DTYPE_I32, 1, {2}, nullptr};
  expectRefused(tfm_model_call(model, "forward", &noData, 1, nullptr, &output,
                               1, &status),
                TFM_ERROR_INVALID_ARGUMENT, "input");
  tfm_tensor negative = {ids, TFM_DTYPE_I32, 1, {-2}, nullptr};
  expectRefused(tfm_model_call(model, "forward", &negative, 1, nullptr,
                               &output, 1, &status),
                TFM_ERROR_INVALID_ARGUMENT, "input");
  tfm_tensor rank = {ids, TFM_DTYPE_I32, 9, {2}, nullptr};
  expectRefused(tfm_model_call(model, "forward", &rank, 1, nullptr, &output, 1,
                               &status),
                TFM_ERROR_INVALID_ARGUMENT, "input");
  tfm_tensor_release(nullptr);
  tfm_tensor released = {};
  tfm_tensor_release(&released);
}

TEST_F(ApiArguments, Sessions) {
  tfm_session *other = nullptr;
  expectRefused(tfm_session_new(nullptr, &other, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_session_new");
  expectRefused(tfm_session_new(model, nullptr, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_session_new");
  tfm_session_free(nullptr);
  tfm_session_reset(nullptr);
  EXPECT_EQ(tfm_session_length(nullptr), 0);
  EXPECT_EQ(tfm_session_capacity(nullptr), 0);
  EXPECT_EQ(tfm_session_tokens(nullptr), nullptr);
  EXPECT_EQ(tfm_session_model(nullptr), nullptr);

  expectRefused(tfm_prefill(nullptr, ids, 1, logits, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_prefill");
  expectRefused(tfm_prefill(session, nullptr, 1, logits, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_prefill");
  expectRefused(tfm_prefill(session, ids, 1, nullptr, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_prefill");
  expectRefused(tfm_prefill(session, ids, 0, logits, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_prefill");
  expectRefused(tfm_prefill(session, ids, -3, logits, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_prefill");
  expectRefused(tfm_prefill(session, ids, 5, logits, &status),
                TFM_ERROR_CONTEXT_OVERFLOW, "capacity of 4");
  // tfm_decode is tfm_prefill of one token, and says so.
  expectRefused(tfm_decode(nullptr, 1, logits, &status),
                TFM_ERROR_INVALID_ARGUMENT, "NULL session");
  expectRefused(tfm_decode(session, 1, nullptr, &status),
                TFM_ERROR_INVALID_ARGUMENT, "NULL logits");
  expectRefused(tfm_decode(session, kVocab, logits, &status),
                TFM_ERROR_OUT_OF_RANGE, "token id 5");
  // Nothing was appended by any refused call; the session still works
  // until it is full, then refuses.
  EXPECT_EQ(tfm_session_length(session), 0);
  ASSERT_EQ(tfm_prefill(session, ids, 4, logits, &status), TFM_OK);
  expectRefused(tfm_decode(session, 1, logits, &status),
                TFM_ERROR_CONTEXT_OVERFLOW, "capacity of 4");
  EXPECT_EQ(tfm_session_length(session), 4);
}

TEST_F(ApiArguments, Sampler) {
  tfm_sampler *sampler = nullptr;
  tfm_sampler_options options = tfm_sampler_default_options();
  expectRefused(tfm_sampler_new(nullptr, kVocab, &sampler, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_sampler_new");
  expectRefused(tfm_sampler_new(&options, kVocab, nullptr, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_sampler_new");
  expectRefused(tfm_sampler_new(&options, 0, &sampler, &status),
                TFM_ERROR_INVALID_ARGUMENT, "vocab");
  options.temperature = NAN;
  expectRefused(tfm_sampler_new(&options, kVocab, &sampler, &status),
                TFM_ERROR_INVALID_ARGUMENT, "temperature");
  options = tfm_sampler_default_options();
  options.top_k = -1;
  expectRefused(tfm_sampler_new(&options, kVocab, &sampler, &status),
                TFM_ERROR_INVALID_ARGUMENT, "top-k");
  tfm_sampler_free(nullptr);
  // Sampling without a sampler, logits or a history that is not there
  // picks nothing (-1).
  float values[kVocab] = {0, 1, 5, 2, 3};
  EXPECT_EQ(tfm_sampler_sample(nullptr, values, nullptr, 0), -1);
  options = tfm_sampler_default_options();
  ASSERT_EQ(tfm_sampler_new(&options, kVocab, &sampler, &status), TFM_OK);
  EXPECT_EQ(tfm_sampler_sample(sampler, nullptr, nullptr, 0), -1);
  EXPECT_EQ(tfm_sampler_sample(sampler, values, nullptr, 3), -1);
  EXPECT_EQ(tfm_sampler_sample(sampler, values, ids, -1), -1);
  EXPECT_EQ(tfm_sampler_sample(sampler, values, nullptr, 0), 2);
  tfm_sampler_free(sampler);
  EXPECT_EQ(tfm_argmax(nullptr, 3), -1);
  EXPECT_EQ(tfm_argmax(values, 0), -1);
  EXPECT_EQ(tfm_argmax(values, kVocab), 2);
}

TEST_F(ApiArguments, Generate) {
  tfm_generate_options options = {};
  options.max_new_tokens = 1;
  options.sampler = tfm_sampler_default_options();
  tfm_generate_result result;
  int32_t prompt[] = {1};
  expectRefused(tfm_generate(nullptr, prompt, 1, &options, &result, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_generate");
  expectRefused(tfm_generate(session, nullptr, 1, &options, &result, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_generate");
  expectRefused(tfm_generate(session, prompt, 1, nullptr, &result, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_generate");
  expectRefused(tfm_generate(session, prompt, -1, &options, &result, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_generate");
  options.max_new_tokens = -1;
  expectRefused(tfm_generate(session, prompt, 1, &options, &result, &status),
                TFM_ERROR_INVALID_ARGUMENT, "max_new_tokens");
  options.max_new_tokens = 1;
  options.stop_string_count = 1; // but no strings (checked before the
                                 // missing tokenizer)
  expectRefused(tfm_generate(session, prompt, 1, &options, &result, &status),
                TFM_ERROR_INVALID_ARGUMENT, "stop");
  options.stop_string_count = -1;
  expectRefused(tfm_generate(session, prompt, 1, &options, &result, &status),
                TFM_ERROR_INVALID_ARGUMENT, "stop");
  options.stop_string_count = 0;
  options.forced_count = 2; // but no tokens
  expectRefused(tfm_generate(session, prompt, 1, &options, &result, &status),
                TFM_ERROR_INVALID_ARGUMENT, "forced");
  options.forced_count = 0;
  options.sampler.top_p = 2;
  expectRefused(tfm_generate(session, prompt, 1, &options, &result, &status),
                TFM_ERROR_INVALID_ARGUMENT, "top-p");
  EXPECT_EQ(tfm_session_length(session), 0);
  // The result is optional.
  options.sampler = tfm_sampler_default_options();
  EXPECT_EQ(tfm_generate(session, prompt, 1, &options, nullptr, &status),
            TFM_OK)
      << status.message;
}

TEST_F(ApiArguments, Seq2Seq) {
  tfm_generate_options options = {};
  options.max_new_tokens = 2;
  options.sampler = tfm_sampler_default_options();
  int32_t out[4];
  int64_t count = 0;
  int32_t source[] = {3, 4};
  expectRefused(tfm_seq2seq_generate(nullptr, source, 2, &options, out, 4,
                                     &count, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_seq2seq_generate");
  expectRefused(tfm_seq2seq_generate(model, nullptr, 2, &options, out, 4,
                                     &count, &status),
                TFM_ERROR_INVALID_ARGUMENT, "NULL source");
  expectRefused(tfm_seq2seq_generate(model, source, 2, nullptr, out, 4,
                                     &count, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_seq2seq_generate");
  expectRefused(tfm_seq2seq_generate(model, source, 2, &options, nullptr, 4,
                                     &count, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_seq2seq_generate");
  expectRefused(tfm_seq2seq_generate(model, source, 2, &options, out, 4,
                                     nullptr, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_seq2seq_generate");
  expectRefused(tfm_seq2seq_generate(model, source, 2, &options, out, -1,
                                     &count, &status),
                TFM_ERROR_INVALID_ARGUMENT, "capacity");
  options.forced_count = -1;
  expectRefused(tfm_seq2seq_generate(model, source, 2, &options, out, 4,
                                     &count, &status),
                TFM_ERROR_INVALID_ARGUMENT, "forced tokens");
  options.forced_count = 0;
  tfm_generation_rules rules = {};
  rules.suppressed_count = 3; // but no list
  expectRefused(tfm_seq2seq_generate_with_rules(model, source, 2, &options,
                                                &rules, out, 4, &count,
                                                &status),
                TFM_ERROR_INVALID_ARGUMENT, "suppressed");
  rules.suppressed_count = 0;
  int32_t word[] = {3, 4}, length[] = {0};
  rules.bad_words = word;
  rules.bad_word_lengths = length;
  rules.bad_word_count = 1;
  expectRefused(tfm_seq2seq_generate_with_rules(model, source, 2, &options,
                                                &rules, out, 4, &count,
                                                &status),
                TFM_ERROR_INVALID_ARGUMENT, "bad word 0 has 0 tokens");
  // The fake is a decoder: it has no @encode.
  expectRefused(tfm_seq2seq_generate(model, source, 2, &options, out, 4,
                                     &count, &status),
                TFM_ERROR_NOT_FOUND, "encode");
  tfm_tensor tensor = {source, TFM_DTYPE_I32, 1, {2}, nullptr};
  expectRefused(tfm_seq2seq_generate_from(model, nullptr, &options, nullptr,
                                          out, 4, &count, &status),
                TFM_ERROR_INVALID_ARGUMENT, "source");
  expectRefused(tfm_seq2seq_generate_from(nullptr, &tensor, &options, nullptr,
                                          out, 4, &count, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_seq2seq_generate");
  expectRefused(tfm_seq2seq_generate_with_rules(nullptr, source, 2, &options,
                                                nullptr, out, 4, &count,
                                                &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_seq2seq_generate");
  tfm_beam_options beams = {2, 2, 1.0f, 0, nullptr};
  expectRefused(tfm_seq2seq_beam_search(nullptr, source, 2, &beams, out, 4,
                                        &count, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_seq2seq_beam_search");
  expectRefused(tfm_seq2seq_beam_search(model, source, 2, nullptr, out, 4,
                                        &count, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_seq2seq_beam_search");
  expectRefused(tfm_seq2seq_beam_search(model, source, 2, &beams, nullptr, 4,
                                        &count, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_seq2seq_beam_search");
  expectRefused(tfm_seq2seq_beam_search(model, source, 2, &beams, out, 4,
                                        nullptr, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_seq2seq_beam_search");
  beams.num_beams = 0;
  expectRefused(tfm_seq2seq_beam_search(model, source, 2, &beams, out, 4,
                                        &count, &status),
                TFM_ERROR_INVALID_ARGUMENT, "beam");
  beams.num_beams = 2;
  expectRefused(tfm_seq2seq_beam_search_from(model, nullptr, &beams, out, 4,
                                             &count, &status),
                TFM_ERROR_INVALID_ARGUMENT, "source");
  expectRefused(tfm_seq2seq_beam_search(model, source, 2, &beams, out, 4,
                                        &count, &status),
                TFM_ERROR_NOT_FOUND, "encode");
}

TEST_F(ApiArguments, Tokenizer) {
  tfm_tokenizer *other = nullptr;
  const uint8_t blob[4] = {};
  expectRefused(tfm_tokenizer_new(nullptr, 16, &other, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_tokenizer_new");
  expectRefused(tfm_tokenizer_new(blob, sizeof blob, nullptr, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_tokenizer_new");
  expectRefused(tfm_tokenizer_new(blob, sizeof blob, &other, &status),
                TFM_ERROR_TOKENIZER, "tokenizer");
  tfm_tokenizer_free(nullptr);
  // The fake model was compiled without one.
  expectRefused(tfm_model_tokenizer(model, &status) ? TFM_OK
                                                    : status.code,
                TFM_ERROR_TOKENIZER, "without a tokenizer");
  EXPECT_EQ(tfm_model_tokenizer(nullptr, &status), nullptr);
  EXPECT_EQ(status.code, TFM_ERROR_INVALID_ARGUMENT);

  int64_t count = 0;
  int32_t out[8];
  expectRefused(tfm_tokenizer_encode(nullptr, "ab", 1, out, 8, &count,
                                     &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_tokenizer_encode");
  expectRefused(tfm_tokenizer_encode(tokenizer, nullptr, 1, out, 8, &count,
                                     &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_tokenizer_encode");
  expectRefused(tfm_tokenizer_encode(tokenizer, "ab", 1, out, 8, nullptr,
                                     &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_tokenizer_encode");
  expectRefused(tfm_tokenizer_encode(tokenizer, "ab", 1, nullptr, 8, &count,
                                     &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_tokenizer_encode");
  expectRefused(tfm_tokenizer_encode(tokenizer, "ab", 1, out, -1, &count,
                                     &status),
                TFM_ERROR_INVALID_ARGUMENT, "capacity");
  // Capacity 0 with no buffer asks for the count alone.
  EXPECT_EQ(tfm_tokenizer_encode(tokenizer, "ab", 1, nullptr, 0, &count,
                                 &status),
            TFM_OK)
      << status.message;
  EXPECT_GT(count, 0);
  expectRefused(tfm_tokenizer_encode_text(nullptr, "ab", nullptr, out,
                                          nullptr, 8, &count, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_tokenizer_encode_text");
  expectRefused(tfm_tokenizer_encode_text(tokenizer, nullptr, nullptr, out,
                                          nullptr, 8, &count, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_tokenizer_encode_text");
  expectRefused(tfm_tokenizer_encode_text(tokenizer, "ab", nullptr, out,
                                          nullptr, 8, nullptr, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_tokenizer_encode_text");
  EXPECT_EQ(tfm_tokenizer_is_special(nullptr, 1), 0);
  EXPECT_EQ(tfm_tokenizer_is_special(tokenizer, -1), 0);
  EXPECT_EQ(tfm_tokenizer_is_special(tokenizer, 1 << 30), 0);
  size_t size = 7;
  EXPECT_EQ(tfm_tokenizer_decode(nullptr, -1, 3, -1, &size), nullptr);
  EXPECT_EQ(tfm_tokenizer_decode(tokenizer, -1, -1, -1, &size), nullptr);
  EXPECT_EQ(tfm_tokenizer_decode(tokenizer, -1, 3, -1, nullptr), nullptr);
  // A previous id out of range is as if there were none.
  ASSERT_NE(tfm_tokenizer_decode(tokenizer, 1 << 30, 3, -1, &size), nullptr);
  EXPECT_EQ(size, 1u);
}

TEST_F(ApiArguments, AudioAndImages) {
  float buffer[16];
  const uint8_t bytes[8] = {0x89, 'P', 'N', 'G'};
  expectRefused(tfm_audio_load(nullptr, "x.wav", buffer, 16, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_audio_load");
  expectRefused(tfm_audio_load(model, nullptr, buffer, 16, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_audio_load");
  expectRefused(tfm_audio_load(model, "x.wav", nullptr, 16, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_audio_load");
  expectRefused(tfm_audio_load(model, "x.wav", buffer, 16, &status),
                TFM_ERROR_NOT_FOUND, "audio");
  expectRefused(tfm_log_mel(nullptr, buffer, 16, buffer, 16, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_log_mel");
  expectRefused(tfm_log_mel(model, nullptr, 16, buffer, 16, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_log_mel");
  expectRefused(tfm_log_mel(model, buffer, -1, buffer, 16, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_log_mel");
  expectRefused(tfm_image_load(nullptr, "x.png", buffer, 16, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_image_load");
  expectRefused(tfm_image_load(model, nullptr, buffer, 16, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_image_load");
  expectRefused(tfm_image_load(model, "x.png", nullptr, 16, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_image_load");
  expectRefused(tfm_image_load_memory(nullptr, bytes, 8, buffer, 16, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_image_load");
  expectRefused(tfm_image_load_memory(model, nullptr, 8, buffer, 16, &status),
                TFM_ERROR_INVALID_ARGUMENT, "tfm_image_load");
  expectRefused(tfm_image_load_memory(model, bytes, 8, buffer, 16, &status),
                TFM_ERROR_NOT_FOUND, "image");
}

} // namespace
