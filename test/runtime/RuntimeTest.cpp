//===- RuntimeTest.cpp - unit tests of the C runtime --------------------===//
//
// The runtime's behaviour without generated code: a fake model whose
// forward writes known logits, tokenizer blobs built here, and every error
// path of the public API (NULL handles, ids out of range, context overflow,
// mismatched weights).
//
//===----------------------------------------------------------------------===//

extern "C" {
#include "runtime/core/buffer_cache.h"
}
#include "test/runtime/RuntimeFixtures.h"
#include "tfm/tfm_format.h"
#include "tfm/tfm_runtime.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <csetjmp>
#include <cstring>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

using namespace tfm_test;

TEST(Checksum, EveryByteAndTheSizeCount) {
  std::vector<uint8_t> data(37, 7);
  uint64_t base = tfm_weights_checksum(data.data(), data.size());
  for (size_t i = 0; i < data.size(); ++i) {
    data[i] ^= 1;
    EXPECT_NE(tfm_weights_checksum(data.data(), data.size()), base) << i;
    data[i] ^= 1;
  }
  data.push_back(0);
  EXPECT_NE(tfm_weights_checksum(data.data(), data.size()), base);
}

/// tfmc checksums the blob a piece at a time as it writes it, the loader
/// all at once: pieces of any sizes (across words and four-word runs) give
/// the checksum of the whole.
TEST(Checksum, PiecesGiveTheWhole) {
  std::vector<uint8_t> data(3000);
  for (size_t i = 0; i < data.size(); ++i)
    data[i] = uint8_t(i * 131 + 7);
  for (size_t size : {size_t(0), size_t(5), size_t(8), size_t(31), size_t(32),
                      size_t(33), size_t(1000), size_t(2999)})
    for (size_t piece : {size_t(1), size_t(3), size_t(8), size_t(13),
                         size_t(32), size_t(77)}) {
      tfm_checksum c;
      tfm_checksum_init(&c);
      for (size_t at = 0; at < size; at += piece)
        tfm_checksum_update(&c, data.data() + at, std::min(piece, size - at));
      EXPECT_EQ(tfm_checksum_final(&c), tfm_weights_checksum(data.data(), size))
          << "size " << size << " in pieces of " << piece;
    }
}

TEST(Model, ForwardCopiesTheLogitsOfEveryPosition) {
  tfm_model_desc desc = fakeDesc();
  tfm_model *model = nullptr;
  tfm_status status;
  ASSERT_EQ(tfm_model_load(&desc, nullptr, &model, &status), TFM_OK)
      << status.message;
  int32_t tokens[] = {3, 0, 4};
  float logits[3 * kVocab];
  ASSERT_EQ(tfm_forward(model, tokens, 3, logits, &status), TFM_OK);
  EXPECT_EQ(logits[0], 30.0f);
  EXPECT_EQ(logits[kVocab + 2], 2.0f);
  EXPECT_EQ(logits[2 * kVocab + 4], 44.0f);
  EXPECT_EQ(tfm_argmax(logits + 2 * kVocab, kVocab), 4);
  tfm_model_free(model);
}

TEST(Model, RejectsBadArguments) {
  tfm_model_desc desc = fakeDesc();
  tfm_model *model = nullptr;
  tfm_status status;
  EXPECT_EQ(tfm_model_load(nullptr, nullptr, &model, &status),
            TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(status.message, "tfm_model_load: NULL model");
  ASSERT_EQ(tfm_model_load(&desc, nullptr, &model, &status), TFM_OK);
  float logits[8 * kVocab];
  int32_t tokens[8] = {0, 1, 2, 3, 4, 0, 1, 2};
  EXPECT_EQ(tfm_forward(nullptr, tokens, 1, logits, &status),
            TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(status.message, "tfm_forward: NULL model");
  EXPECT_EQ(tfm_forward(model, tokens, 0, logits, &status),
            TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_EQ(tfm_forward(model, tokens, 5, logits, &status),
            TFM_ERROR_CONTEXT_OVERFLOW);
  EXPECT_STREQ(status.message,
               "5 tokens exceed the maximum context of model 'fake' (4)");
  int32_t bad[] = {0, 5};
  EXPECT_EQ(tfm_forward(model, bad, 2, logits, &status),
            TFM_ERROR_OUT_OF_RANGE);
  EXPECT_STREQ(status.message,
               "token id 5 at position 1 is out of range [0, 5)");
  tfm_model_free(model);
  tfm_model_free(nullptr); // a no-op, like free(NULL)
}

TEST(Generate, GreedyThroughASessionAndRejectsAnEmptyPrompt) {
  // The fake model has no KV cache: sessions fall back to @forward, whose
  // last row makes the largest logit the last token's (id * 10 + 4): 4.
  tfm_model_desc desc = fakeDesc();
  tfm_model *model = nullptr;
  tfm_session *session = nullptr;
  tfm_status status;
  ASSERT_EQ(tfm_model_load(&desc, nullptr, &model, &status), TFM_OK);
  ASSERT_EQ(tfm_session_new(model, &session, &status), TFM_OK);
  tfm_generate_options options = {};
  options.max_new_tokens = 2;
  options.sampler = tfm_sampler_default_options();
  tfm_generate_result result;
  int32_t prompt[] = {3};
  EXPECT_EQ(tfm_generate(session, prompt, 0, &options, &result, &status),
            TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(status.message,
               "tfm_generate: expected at least one prompt token, got 0");
  EXPECT_EQ(tfm_session_length(session), 0);
  ASSERT_EQ(tfm_generate(session, prompt, 1, &options, &result, &status),
            TFM_OK)
      << status.message;
  EXPECT_EQ(result.generated_tokens, 2);
  ASSERT_EQ(tfm_session_length(session), 3);
  EXPECT_EQ(tfm_session_tokens(session)[1], 4);
  EXPECT_EQ(tfm_session_tokens(session)[2], 4);
  tfm_session_free(session);
  tfm_model_free(model);
}

TEST(Model, RefusesAnotherAbiVersion) {
  tfm_model_desc desc = fakeDesc();
  desc.abi_version = TFM_ABI_VERSION + 1;
  desc.name = nullptr; // nothing past the version may be read
  tfm_model *model = nullptr;
  tfm_status status;
  EXPECT_EQ(tfm_model_load(&desc, nullptr, &model, &status), TFM_ERROR_ABI);
  EXPECT_EQ(model, nullptr);
  std::string expected =
      "ABI version " + std::to_string(TFM_ABI_VERSION + 1) +
      ", this runtime has version " + std::to_string(TFM_ABI_VERSION);
  EXPECT_NE(std::string(status.message).find(expected), std::string::npos)
      << status.message;
}

TEST(Model, CallsAnyEntryPointByName) {
  tfm_model_desc desc = fakeDesc();
  tfm_model *model = nullptr;
  ASSERT_EQ(tfm_model_load(&desc, nullptr, &model, nullptr), TFM_OK);
  int32_t ids[2] = {3, 4};
  tfm_tensor input = {ids, TFM_DTYPE_I32, 1, {2}, nullptr};
  tfm_tensor output;
  tfm_status status;
  ASSERT_EQ(tfm_model_call(model, "forward", &input, 1, nullptr, &output, 1,
                           &status),
            TFM_OK)
      << status.message;
  EXPECT_EQ(output.rank, 2);
  EXPECT_EQ(output.shape[0], 2);
  EXPECT_EQ(static_cast<float *>(output.data)[kVocab + 1], 41.0f);
  tfm_tensor_release(&output);
  EXPECT_EQ(output.data, nullptr);

  EXPECT_EQ(tfm_model_call(model, "encode", &input, 1, nullptr, &output, 1,
                           &status),
            TFM_ERROR_NOT_FOUND);
  EXPECT_STREQ(status.message, "model 'fake' has no entry point @encode");
  tfm_tensor floats = {ids, TFM_DTYPE_F32, 1, {2}, nullptr};
  EXPECT_EQ(tfm_model_call(model, "forward", &floats, 1, nullptr, &output, 1,
                           &status),
            TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(status.message, "input 0 of @forward: expected a rank-1 i32 "
                               "tensor, got rank 1 f32");
  int32_t bad[2] = {3, 9};
  tfm_tensor badIds = {bad, TFM_DTYPE_I32, 1, {2}, nullptr};
  EXPECT_EQ(tfm_model_call(model, "forward", &badIds, 1, nullptr, &output, 1,
                           &status),
            TFM_ERROR_OUT_OF_RANGE);
  EXPECT_STREQ(status.message, "input 0 of @forward: token id 9 at position "
                               "1 is out of range [0, 5)");
  int32_t many[5] = {};
  tfm_tensor tooLong = {many, TFM_DTYPE_I32, 1, {5}, nullptr};
  EXPECT_EQ(tfm_model_call(model, "forward", &tooLong, 1, nullptr, &output, 1,
                           &status),
            TFM_ERROR_CONTEXT_OVERFLOW);
  EXPECT_EQ(tfm_model_call(model, "forward", &input, 2, nullptr, &output, 1,
                           &status),
            TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(status.message, "@forward takes 1 inputs and returns 1 "
                               "outputs, got 2 and 1");
  tfm_model_free(model);
}

TEST(Model, ChecksTheLengthsOfPackedSequences) {
  tfm_model_desc desc = fakeDesc();
  tfm_model *model = nullptr;
  ASSERT_EQ(tfm_model_load(&desc, nullptr, &model, nullptr), TFM_OK);
  // Six tokens in three sequences: more than the context (4) in all, but
  // no sequence longer than it.
  int32_t ids[6] = {1, 2, 3, 4, 0, 1};
  int32_t lengths[3] = {3, 1, 2};
  tfm_tensor inputs[2] = {{ids, TFM_DTYPE_I32, 1, {6}, nullptr},
                          {lengths, TFM_DTYPE_I32, 1, {3}, nullptr}};
  tfm_tensor output;
  tfm_status status;
  ASSERT_EQ(tfm_model_call(model, "forward_batch", inputs, 2, nullptr, &output,
                           1, &status),
            TFM_OK)
      << status.message;
  tfm_tensor_release(&output);
  lengths[2] = 1;
  EXPECT_EQ(tfm_model_call(model, "forward_batch", inputs, 2, nullptr,
                           &output, 1, &status),
            TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(status.message, "input 1 of @forward_batch: sequence lengths "
                               "sum to 5, but there are 6 tokens");
  lengths[1] = 0;
  EXPECT_EQ(tfm_model_call(model, "forward_batch", inputs, 2, nullptr,
                           &output, 1, &status),
            TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(status.message,
               "input 1 of @forward_batch: sequence 1 has 0 tokens, expected "
               "1 to 4 (the maximum context of model 'fake')");
  lengths[0] = 5;
  lengths[1] = 1;
  lengths[2] = 0;
  EXPECT_EQ(tfm_model_call(model, "forward_batch", inputs, 2, nullptr,
                           &output, 1, &status),
            TFM_ERROR_CONTEXT_OVERFLOW);
  // An empty batch.
  inputs[0].shape[0] = inputs[1].shape[0] = 0;
  EXPECT_EQ(tfm_model_call(model, "forward_batch", inputs, 2, nullptr,
                           &output, 1, &status),
            TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(status.message, "input 0 of @forward_batch: dimension 0 is "
                               "empty (an empty batch or sequence)");
  tfm_model_free(model);
}

TEST(Model, AllocationFailureIsAStatus) {
  tfm_model_desc desc = fakeDesc();
  tfm_model *model = nullptr;
  ASSERT_EQ(tfm_model_load(&desc, nullptr, &model, nullptr), TFM_OK);
  int32_t ids[3] = {1, 2, 3};
  tfm_tensor input = {ids, TFM_DTYPE_I32, 1, {3}, nullptr};
  tfm_tensor output;
  tfm_status status;
  tfm_buffer_fail_after(0);
  EXPECT_EQ(tfm_model_call(model, "forward", &input, 1, nullptr, &output, 1,
                           &status),
            TFM_ERROR_OUT_OF_MEMORY);
  EXPECT_STREQ(status.message, "@forward of model 'fake' ran out of memory");
  // The next call succeeds: nothing was left half done.
  EXPECT_EQ(tfm_model_call(model, "forward", &input, 1, nullptr, &output, 1,
                           &status),
            TFM_OK);
  tfm_tensor_release(&output);
  tfm_model_free(model);
}

TEST(Model, ChecksEmbeddedAndSideFileWeights) {
  tfm_model_desc desc = fakeDesc();
  desc.weights_checksum ^= 1;
  tfm_model *model = nullptr;
  tfm_status status;
  EXPECT_EQ(tfm_model_load(&desc, nullptr, &model, &status),
            TFM_ERROR_WEIGHTS);
  EXPECT_NE(std::string(status.message).find("does not match"),
            std::string::npos);
  EXPECT_EQ(model, nullptr);

  // A side file with the right bytes loads; a short one does not.
  desc = fakeDesc();
  char path[] = "/tmp/tfm-runtime-test-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(write(fd, kWeights, sizeof kWeights), ssize_t(sizeof kWeights));
  close(fd);
  desc.weights = nullptr;
  desc.weights_file = path;
  ASSERT_EQ(tfm_model_load(&desc, nullptr, &model, &status), TFM_OK)
      << status.message;
  tfm_model_free(model);
  ASSERT_EQ(truncate(path, 8), 0);
  EXPECT_EQ(tfm_model_load(&desc, nullptr, &model, &status),
            TFM_ERROR_WEIGHTS);
  EXPECT_NE(std::string(status.message).find("has 8 bytes"),
            std::string::npos);
  unlink(path);
  EXPECT_EQ(tfm_model_load(&desc, nullptr, &model, &status),
            TFM_ERROR_WEIGHTS);
  EXPECT_NE(std::string(status.message).find("cannot open weights file"),
            std::string::npos);
}

TEST(ScoreBpe, MergesByScoreWithDummyPrefixAndByteFallback) {
  // 0 <unk>, 1 <s>, 2 </s>, 3-4 bytes, then pieces; "ab" outscores "bc".
  std::string blob = tokenizerBlob(
      TFM_TOKENIZER_SCORE_BPE,
      {{"<unk>", 0}, {"\n<s>\n", 0}, {"\n</s>\n", 0}, {"<0x21>", 0},
       {"<0xC3>", 0}, {" ", -1}, {"a", -2}, {"b", -2}, {"c", -2},
       {"ab", -1}, {"bc", -1.5}, {" ab", -0.5}, {"<0xA9>", 0}});
  tfm_tokenizer *t = parse(blob);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(encode(t, "abc", 1), (std::vector<int32_t>{1, 11, 8}));
  // '!' and 'é' (C3 A9) are not pieces: byte fallback.
  EXPECT_EQ(encode(t, "c!\xc3\xa9", -1), (std::vector<int32_t>{5, 8, 3, 4, 12}));
  EXPECT_EQ(encode(t, "", 1), (std::vector<int32_t>{1}));
  size_t size;
  // The dummy space is dropped after BOS, kept elsewhere.
  const char *piece = tfm_tokenizer_decode(t, 1, 11, 1, &size);
  EXPECT_EQ(std::string(piece, size), "ab");
  piece = tfm_tokenizer_decode(t, 8, 11, 1, &size);
  EXPECT_EQ(std::string(piece, size), " ab");
  piece = tfm_tokenizer_decode(t, 8, 3, 1, &size);
  EXPECT_EQ(std::string(piece, size), "!");
  EXPECT_EQ(tfm_tokenizer_decode(t, 0, 13, 1, &size), nullptr);
  tfm_tokenizer_free(t);
}

TEST(Tokenizer, ReplacesPromptTextFirst) {
  // Gemma 3's processor writes "<img>" as "\n<img><i><i></img>\n" before
  // tokenizing: the newline then merges with the text's ("\n\n").
  EncoderTokenizer encoder;
  encoder.specials = {{3, 0}, {4, 0}, {5, 0}};
  encoder.promptReplacements = {{"<img>", "\n<img><i><i></img>\n"}};
  std::string blob = tokenizerBlob(TFM_TOKENIZER_BYTE_LEVEL_BPE,
                                   {{"\n", 0},
                                    {"a", 0},
                                    {"\n\n", 0},
                                    {"<img>", 0},
                                    {"<i>", 0},
                                    {"</img>", 0}},
                                   {{0, 0, 2}}, encoder);
  tfm_tokenizer *t = parse(blob);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(encode(t, "a\n<img>a<img>", -1),
            (std::vector<int32_t>{1, 2, 3, 4, 4, 5, 0, 1, 0, 3, 4, 4, 5, 0}));
  EXPECT_EQ(encode(t, "a", -1), (std::vector<int32_t>{1}));
  tfm_tokenizer_free(t);
  // A replacement cut short is refused by name.
  blob.resize(blob.size() - 3);
  tfm_status status;
  EXPECT_EQ(tfm_tokenizer_new(reinterpret_cast<const uint8_t *>(blob.data()),
                              blob.size(), &t, &status),
            TFM_ERROR_TOKENIZER);
  EXPECT_STREQ(status.message,
               "tokenizer blob: truncated prompt replacement 0");
  // Replacements that would grow a prompt by more than 16 MB (a hostile
  // tokenizer's) are refused by name, before anything that large exists.
  EncoderTokenizer growing;
  growing.promptReplacements = {{"a", std::string(1 << 20, 'a')}};
  t = parse(
      tokenizerBlob(TFM_TOKENIZER_BYTE_LEVEL_BPE, {{"a", 0}}, {}, growing));
  ASSERT_NE(t, nullptr);
  int64_t count = 0;
  EXPECT_EQ(tfm_tokenizer_encode(t, std::string(17, 'a').c_str(), -1, nullptr,
                                 0, &count, &status),
            TFM_ERROR_TOKENIZER);
  EXPECT_STREQ(status.message, "the tokenizer's prompt replacements would "
                               "make the text more than 16 MB longer");
  tfm_tokenizer_free(t);
}

TEST(ByteLevelBpe, MergesByRankWithinPretokens) {
  // Bytes " ", "a", "b", "!" then merges ranked: "ab" before " a".
  std::string blob = tokenizerBlob(
      TFM_TOKENIZER_BYTE_LEVEL_BPE,
      {{" ", 0}, {"a", 0}, {"b", 0}, {"!", 0}, {"ab", 0}, {" a", 0},
       {" ab", 0}},
      {{1, 2, 4}, {0, 1, 5}, {0, 4, 6}});
  tfm_tokenizer *t = parse(blob);
  ASSERT_NE(t, nullptr);
  // " ab" is one pre-token: "ab" (rank 0) then " "+"ab" (rank 2).
  EXPECT_EQ(encode(t, "ab ab!", -1), (std::vector<int32_t>{4, 6, 3}));
  // Two spaces: the first stays alone, the second joins the word.
  EXPECT_EQ(encode(t, "a  a", -1), (std::vector<int32_t>{1, 0, 5}));
  size_t size;
  const char *piece = tfm_tokenizer_decode(t, 1, 6, -1, &size);
  EXPECT_EQ(std::string(piece, size), " ab");
  tfm_tokenizer_free(t);
}

TEST(ByteLevelBpe, SplitsTextByTheBlobsRule) {
  // Bytes "1" "2" "3" "4", then merges ranked: "34" before "12".
  std::string blob = tokenizerBlob(
      TFM_TOKENIZER_BYTE_LEVEL_BPE,
      {{"1", 0}, {"2", 0}, {"3", 0}, {"4", 0}, {"34", 0}, {"12", 0}},
      {{2, 3, 4}, {0, 1, 5}});
  auto withSplit = [&](uint32_t split) {
    return blob + std::string(reinterpret_cast<const char *>(&split), 4);
  };
  using Ids = std::vector<int32_t>;
  // GPT-2's (also a blob without the rule): the digits are one piece.
  for (const std::string &gpt2 : {blob, withSplit(TFM_BPE_SPLIT_GPT2)}) {
    tfm_tokenizer *t = parse(gpt2);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(encode(t, "1234", -1), (Ids{5, 4}));
    tfm_tokenizer_free(t);
  }
  // Llama 3's: three digits at most, so "34" cannot form.
  tfm_tokenizer *t = parse(withSplit(TFM_BPE_SPLIT_LLAMA3));
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(encode(t, "1234", -1), (Ids{5, 2, 3}));
  tfm_tokenizer_free(t);
  // Qwen2's: one digit a piece; text composed to NFC first, and refused
  // where NFC would lengthen it (U+0958 decomposes into two characters).
  t = parse(withSplit(TFM_BPE_SPLIT_QWEN2));
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(encode(t, "1234", -1), (Ids{0, 1, 2, 3}));
  int32_t ids[8];
  int64_t count;
  tfm_status status;
  EXPECT_EQ(tfm_tokenizer_encode(t, "\xe0\xa5\x98", -1, ids, 8, &count,
                                 &status),
            TFM_ERROR_TOKENIZER);
  EXPECT_STREQ(status.message, "the text's NFC form (6 bytes) is longer than "
                               "the text (3 bytes), which this tokenizer does "
                               "not encode");
  tfm_tokenizer_free(t);
  // A rule the runtime does not know is refused at load.
  std::string unknown = withSplit(TFM_BPE_SPLIT_LAST + 1);
  t = nullptr;
  EXPECT_EQ(tfm_tokenizer_new(reinterpret_cast<const uint8_t *>(unknown.data()),
                              unknown.size(), &t, &status),
            TFM_ERROR_TOKENIZER);
  EXPECT_EQ(t, nullptr);
  EXPECT_EQ(std::string(status.message),
            "tokenizer blob: unknown split rule " +
                std::to_string(TFM_BPE_SPLIT_LAST + 1));
}

TEST(ByteLevelBpe, Qwen35KeepsCombiningMarksInLetterRuns) {
  // Devanagari HA (U+0939, a letter) and the vowel sign I (U+093F, a
  // combining mark, Mc), their bytes merged up to the syllable.
  std::string ha = "\xe0\xa4\xb9", i = "\xe0\xa4\xbf";
  std::string blob = tokenizerBlob(
      TFM_TOKENIZER_BYTE_LEVEL_BPE,
      {{"\xe0", 0}, {"\xa4", 0}, {"\xb9", 0}, {"\xbf", 0}, {" ", 0},
       {"\xe0\xa4", 0}, {ha, 0}, {i, 0}, {ha + i, 0}},
      {{0, 1, 5}, {5, 2, 6}, {5, 3, 7}, {6, 7, 8}});
  auto withSplit = [&](uint32_t split) {
    return blob + std::string(reinterpret_cast<const char *>(&split), 4);
  };
  using Ids = std::vector<int32_t>;
  // Qwen2's: the mark is not a letter, so it starts a piece of its own.
  tfm_tokenizer *t = parse(withSplit(TFM_BPE_SPLIT_QWEN2));
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(encode(t, (ha + i).c_str(), -1), (Ids{6, 7}));
  tfm_tokenizer_free(t);
  // Qwen3.5's: [\p{L}\p{M}]+ keeps the syllable whole; a mark after a
  // space joins it ([^\r\n\p{L}\p{N}]? before the run), and marks alone
  // are a run of their own.
  t = parse(withSplit(TFM_BPE_SPLIT_QWEN35));
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(encode(t, (ha + i).c_str(), -1), (Ids{8}));
  EXPECT_EQ(encode(t, (ha + i + " " + i + ha + i).c_str(), -1),
            (Ids{8, 4, 7, 8}));
  EXPECT_EQ(encode(t, (i + i).c_str(), -1), (Ids{7, 7}));
  tfm_tokenizer_free(t);
}

TEST(ByteLevelBpe, Gemma4MergesLinesOfCharactersWithByteFallback) {
  // Pieces as the frontend stores them ("▁" a space); "\n\n\n" is a token
  // no merge reaches, "é" has none (its bytes' <0xAB> tokens stand in).
  std::string euro = "\xe2\x82\xac";
  std::string blob = tokenizerBlob(
      TFM_TOKENIZER_BYTE_LEVEL_BPE,
      {{" ", 0}, {"a", 0}, {"b", 0}, {"\n", 0}, {"\n\n\n", 0}, {"ab", 0},
       {" ab", 0}, {"<0xC3>", 0}, {"<0xA9>", 0}, {euro, 0}, {"\n\n", 0}},
      {{1, 2, 5}, {0, 5, 6}, {3, 3, 10}});
  uint32_t split = TFM_BPE_SPLIT_GEMMA4;
  blob += std::string(reinterpret_cast<const char *>(&split), 4);
  tfm_tokenizer *t = parse(blob);
  ASSERT_NE(t, nullptr);
  using Ids = std::vector<int32_t>;
  // Merges run over a whole line, across its spaces; a run of newlines
  // that is a token is that token, another is merged.
  EXPECT_EQ(encode(t, "ab ab\n\n\nab", -1), (Ids{5, 6, 4, 5}));
  EXPECT_EQ(encode(t, "b\n\n\n\na", -1), (Ids{2, 10, 10, 1}));
  // A character is one token where it has one, else its bytes'.
  EXPECT_EQ(encode(t, ("\xc3\xa9" + euro).c_str(), -1), (Ids{7, 8, 9}));
  // U+2581 in the text is a space, as the normalizer leaves it.
  EXPECT_EQ(encode(t, "\xe2\x96\x81" "ab", -1), (Ids{6}));
  // A byte without a <0xAB> token is refused by name.
  int32_t ids[8];
  int64_t count;
  tfm_status status;
  EXPECT_EQ(tfm_tokenizer_encode(t, "\xc3\xa8", -1, ids, 8, &count, &status),
            TFM_ERROR_TOKENIZER);
  EXPECT_STREQ(status.message, "byte 0xA8 at offset 1 of the text has no "
                               "token (no <0xA8> byte-fallback token)");
  // Decoding shows a byte token as its byte.
  size_t size;
  const char *piece = tfm_tokenizer_decode(t, 1, 7, -1, &size);
  ASSERT_EQ(size, 1u);
  EXPECT_EQ(piece[0], '\xc3');
  tfm_tokenizer_free(t);
}

/// Encodes a text (and a second one) as an encoder's input.
std::pair<std::vector<int32_t>, std::vector<int32_t>>
encodeText(tfm_tokenizer *t, const char *first, const char *second = nullptr) {
  int32_t ids[64], types[64];
  int64_t count = 0;
  tfm_status status;
  EXPECT_EQ(tfm_tokenizer_encode_text(t, first, second, ids, types, 64, &count,
                                      &status),
            TFM_OK)
      << status.message;
  return {std::vector<int32_t>(ids, ids + count),
          std::vector<int32_t>(types, types + count)};
}

TEST(WordPiece, NormalizesSplitsAndFramesLikeBert) {
  // 0 [UNK] 1 [CLS] 2 [SEP] 3 [MASK] 4 hello 5 ##s 6 , 7 cafe 8 中 9 un
  // 10 ##aff 11 ##able 12 !
  EncoderTokenizer encoder;
  encoder.begin = 1;
  encoder.separator = 2;
  encoder.specials = {{0, 0}, {1, 0}, {2, 0}, {3, 0}};
  encoder.maxCharsPerWord = 9;
  std::string blob = tokenizerBlob(
      TFM_TOKENIZER_WORDPIECE,
      {{"[UNK]", 0}, {"[CLS]", 0}, {"[SEP]", 0}, {"[MASK]", 0}, {"hello", 0},
       {"##s", 0}, {",", 0}, {"cafe", 0}, {"\xe4\xb8\xad", 0}, {"un", 0},
       {"##aff", 0}, {"##able", 0}, {"!", 0}},
      {}, encoder);
  tfm_tokenizer *t = parse(blob);
  ASSERT_NE(t, nullptr);
  using Ids = std::vector<int32_t>;
  // Lowercasing, accent stripping (Caf\u00e9), punctuation, CJK spacing,
  // control characters dropped, a word with no split is [UNK].
  EXPECT_EQ(encodeText(t, "HELLOs,Caf\xc3\xa9\x01\xe4\xb8\xadunaffable!xyz")
                .first,
            (Ids{1, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0, 2}));
  // Longer than 9 characters: [UNK] without trying pieces.
  EXPECT_EQ(encodeText(t, "hellohello").first, (Ids{1, 0, 2}));
  // Special tokens stay whole; a pair's second segment is type 1.
  auto [ids, types] = encodeText(t, "hello [MASK]!", "hellos");
  EXPECT_EQ(ids, (Ids{1, 4, 3, 12, 2, 4, 5, 2}));
  EXPECT_EQ(types, (Ids{0, 0, 0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(encodeText(t, "").first, (Ids{1, 2}));
  // Not UTF-8: refused with the offset.
  int32_t out[8];
  int64_t count;
  tfm_status status;
  EXPECT_EQ(tfm_tokenizer_encode_text(t, "ab\xff", nullptr, out, nullptr, 8,
                                      &count, &status),
            TFM_ERROR_TOKENIZER);
  EXPECT_STREQ(status.message,
               "the text is not UTF-8 (byte 0xFF at offset 2)");
  tfm_tokenizer_free(t);
}

TEST(ByteLevelBpe, FramesRobertaPairsAndStripsBeforeMask) {
  // 0 <s> 1 </s> 2 <mask> then bytes " ", "a" and the merge " a".
  EncoderTokenizer encoder;
  encoder.begin = 0;
  encoder.separator = 1;
  encoder.pairSeparators = 2;
  encoder.secondType = 0;
  encoder.specials = {{0, 0}, {1, 0}, {2, TFM_TOKENIZER_STRIP_LEFT}};
  std::string blob = tokenizerBlob(
      TFM_TOKENIZER_BYTE_LEVEL_BPE,
      {{"<s>", 0}, {"</s>", 0}, {"<mask>", 0}, {" ", 0}, {"a", 0}, {" a", 0}},
      {{3, 4, 5}}, encoder);
  tfm_tokenizer *t = parse(blob);
  ASSERT_NE(t, nullptr);
  auto [ids, types] = encodeText(t, "a <mask> a", "a");
  EXPECT_EQ(ids, (std::vector<int32_t>{0, 4, 2, 5, 1, 1, 4, 1}));
  EXPECT_EQ(types, std::vector<int32_t>(8, 0));
  tfm_tokenizer_free(t);
  // A decoder's tokenizer has no framing.
  t = parse(tokenizerBlob(TFM_TOKENIZER_SCORE_BPE, {{"a", 0}}));
  int32_t out[4];
  int64_t count;
  tfm_status status;
  EXPECT_EQ(tfm_tokenizer_encode_text(t, "a", nullptr, out, nullptr, 4, &count,
                                      &status),
            TFM_ERROR_TOKENIZER);
  tfm_tokenizer_free(t);
}

TEST(Unigram, ViterbiOverNormalizedText) {
  // 0 <unk> (reserved), then pieces; " ab" + "c" (-3) beats " a" + "bc"
  // (-3.5) and " " + "abc" (-4); "x" and "y" are unknown.
  EncoderTokenizer options;
  options.unknown = 0;
  options.pieceTypes = {TFM_UNIGRAM_PIECE_RESERVED};
  options.rules = {{"\xEF\xAC\x81", "fi"}, {"\t", " "}};
  std::string blob = tokenizerBlob(
      TFM_TOKENIZER_UNIGRAM,
      {{"<unk>", 0}, {" ", -2}, {" ab", -1}, {" a", -1.5}, {"bc", -2},
       {"c", -2}, {"abc", -2}, {"fi", -1}, {" fi", -0.5}, {"b", -3}},
      {}, options);
  tfm_tokenizer *t = parse(blob);
  ASSERT_NE(t, nullptr);
  EXPECT_EQ(encode(t, "abc", -1), (std::vector<int32_t>{2, 5}));
  // Extra whitespace goes; the ligature and the tab are normalized.
  EXPECT_EQ(encode(t, " \t abc\t\xEF\xAC\x81  ", -1),
            (std::vector<int32_t>{2, 5, 8}));
  // A run of unknown characters is one <unk>.
  EXPECT_EQ(encode(t, "abxyc", -1), (std::vector<int32_t>{2, 0, 5}));
  EXPECT_EQ(encode(t, "   ", -1), (std::vector<int32_t>{}));
  tfm_tokenizer_free(t);
}

TEST(Tokenizer, RejectsMalformedBlobs) {
  tfm_tokenizer *t = nullptr;
  tfm_status status;
  const uint8_t junk[] = "not a tokenizer";
  EXPECT_EQ(tfm_tokenizer_new(junk, sizeof junk, &t, &status),
            TFM_ERROR_TOKENIZER);
  EXPECT_STREQ(status.message,
               "tokenizer blob: bad magic (not a tfmc tokenizer)");
  std::string blob = tokenizerBlob(TFM_TOKENIZER_SCORE_BPE, {{"a", 0}, {"b", 0}});
  blob.resize(blob.size() - 1);
  EXPECT_EQ(tfm_tokenizer_new(reinterpret_cast<const uint8_t *>(blob.data()),
                              blob.size(), &t, &status),
            TFM_ERROR_TOKENIZER);
  EXPECT_STREQ(status.message, "tokenizer blob: truncated at token 1 of 2");
  // Counts are checked against the bytes left before anything is allocated
  // for them (fuzz-tokenizer found a merge count of 2^29 allocated first).
  blob.resize(blob.size() - 2);
  EXPECT_EQ(tfm_tokenizer_new(reinterpret_cast<const uint8_t *>(blob.data()),
                              blob.size(), &t, &status),
            TFM_ERROR_TOKENIZER);
  EXPECT_STREQ(status.message,
               "tokenizer blob: 2 tokens do not fit in its 51 bytes");
  blob = tokenizerBlob(TFM_TOKENIZER_BYTE_LEVEL_BPE, {{"a", 0}}, {{0, 0, 0}});
  blob.resize(blob.size() - 1);
  EXPECT_EQ(tfm_tokenizer_new(reinterpret_cast<const uint8_t *>(blob.data()),
                              blob.size(), &t, &status),
            TFM_ERROR_TOKENIZER);
  EXPECT_STREQ(status.message, "tokenizer blob: 1 merges do not fit");
  // A BOS past the vocabulary is refused, not written as an id that does
  // not decode (fuzz-tokenizer).
  blob = tokenizerBlob(TFM_TOKENIZER_SCORE_BPE, {{"a", 0}, {"b", 0}});
  ASSERT_EQ(tfm_tokenizer_new(reinterpret_cast<const uint8_t *>(blob.data()),
                              blob.size(), &t, &status),
            TFM_OK);
  int64_t count = 0;
  EXPECT_EQ(tfm_tokenizer_encode(t, "a", 2, nullptr, 0, &count, &status),
            TFM_ERROR_INVALID_ARGUMENT);
  EXPECT_STREQ(status.message, "tfm_tokenizer_encode: BOS 2 is not a token "
                               "(vocabulary of 2)");
  EXPECT_EQ(tfm_tokenizer_encode(t, "a", 1, nullptr, 0, &count, &status),
            TFM_OK);
  tfm_tokenizer_free(t);
  blob = tokenizerBlob(TFM_TOKENIZER_BYTE_LEVEL_BPE, {{"a", 0}}, {{0, 0, 7}});
  EXPECT_EQ(tfm_tokenizer_new(reinterpret_cast<const uint8_t *>(blob.data()),
                              blob.size(), &t, &status),
            TFM_ERROR_TOKENIZER);
  EXPECT_STREQ(status.message,
               "tokenizer blob: merge 0 refers to an id past the vocabulary");
  EncoderTokenizer encoder;
  encoder.unknown = 5;
  blob = tokenizerBlob(TFM_TOKENIZER_WORDPIECE, {{"a", 0}}, {}, encoder);
  EXPECT_EQ(tfm_tokenizer_new(reinterpret_cast<const uint8_t *>(blob.data()),
                              blob.size(), &t, &status),
            TFM_ERROR_TOKENIZER);
  EXPECT_STREQ(status.message,
               "tokenizer blob: the unknown token 5 is not a token");
  blob.resize(blob.size() - 4);
  EXPECT_EQ(tfm_tokenizer_new(reinterpret_cast<const uint8_t *>(blob.data()),
                              blob.size(), &t, &status),
            TFM_ERROR_TOKENIZER);
  EXPECT_STREQ(status.message,
               "tokenizer blob: truncated WordPiece options");
  encoder.unknown = 0;
  encoder.rules = {{"a", "b"}};
  blob = tokenizerBlob(TFM_TOKENIZER_UNIGRAM, {{"a", 0}}, {}, encoder);
  blob.resize(blob.size() - 2);
  EXPECT_EQ(tfm_tokenizer_new(reinterpret_cast<const uint8_t *>(blob.data()),
                              blob.size(), &t, &status),
            TFM_ERROR_TOKENIZER);
  EXPECT_STREQ(status.message, "tokenizer blob: truncated character map");
  // Encoding sizes its work by the largest expansion: one past the bound is
  // a corrupt blob.
  encoder.rules = {{"a", std::string(65, 'b')}};
  blob = tokenizerBlob(TFM_TOKENIZER_UNIGRAM, {{"a", 0}}, {}, encoder);
  EXPECT_EQ(tfm_tokenizer_new(reinterpret_cast<const uint8_t *>(blob.data()),
                              blob.size(), &t, &status),
            TFM_ERROR_TOKENIZER);
  EXPECT_STREQ(status.message,
               "tokenizer blob: malformed character map: a 1-byte key "
               "replaced by 65 bytes (at most 64 a byte)");
  encoder.rules = {{"a", std::string(64, 'b')}};
  blob = tokenizerBlob(TFM_TOKENIZER_UNIGRAM, {{"a", 0}}, {}, encoder);
  ASSERT_EQ(tfm_tokenizer_new(reinterpret_cast<const uint8_t *>(blob.data()),
                              blob.size(), &t, &status),
            TFM_OK);
  tfm_tokenizer_free(t);
}

} // namespace
