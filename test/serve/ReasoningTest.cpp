//===- ReasoningTest.cpp - a thinking model's reasoning apart ------------===//
//
// serve/Reasoning.cpp: the markers found by their spellings, and each
// generated token's part (answer, reasoning, markup) after the prompts
// Qwen3's, DeepSeek-R1's and gpt-oss's templates end with.
//
//===----------------------------------------------------------------------===//

#include "serve/Reasoning.h"

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

using namespace tfm::serve;

namespace {

/// A vocabulary of the spellings given, id = index.
struct Vocabulary {
  std::vector<std::string> spellings;
  int32_t operator[](const std::string &text) const {
    for (size_t i = 0; i < spellings.size(); ++i)
      if (spellings[i] == text)
        return int32_t(i);
    ADD_FAILURE() << "no token '" << text << "'";
    return -1;
  }
  std::vector<int32_t> ids(const std::vector<std::string> &texts) const {
    std::vector<int32_t> out;
    for (const std::string &t : texts)
      out.push_back((*this)[t]);
    return out;
  }
  TokenSpelling spell() const {
    return [this](int32_t id) {
      return id >= 0 && size_t(id) < spellings.size() ? spellings[size_t(id)]
                                                      : std::string();
    };
  }
  ReasoningMarkers markers() const {
    return findReasoningMarkers(int64_t(spellings.size()), spell());
  }
};

const Vocabulary kThink{{"<s>", "<think>", "</think>", "\n", "Hi", " there",
                         "<|im_start|>", "assistant", "<thinking>",
                         "think"}};
const Vocabulary kGemma4{{"<bos>", "<|turn>", "<turn|>", "<|channel>",
                          "<channel|>", "<|think|>", "thought", "\n",
                          "model", "Hi", " there", "user", "tool"}};
const Vocabulary kHarmony{{"<|start|>", "<|channel|>", "<|message|>",
                           "<|end|>", "<|return|>", "assistant", "analysis",
                           "final", "commentary", " to=functions.f", "x",
                           "y", "user", "<|constrain|>", "json"}};

/// Each output token's part after `prompt`, as letters: C content, R
/// reasoning, M markup.
std::string parts(const Vocabulary &vocab, const std::vector<std::string> &prompt,
                  const std::vector<std::string> &output) {
  ReasoningRouter router(vocab.markers(), vocab.ids(prompt), vocab.spell());
  std::string out;
  for (int32_t token : vocab.ids(output)) {
    TokenPart part = router.route(token);
    out += part == TokenPart::Content     ? 'C'
           : part == TokenPart::Reasoning ? 'R'
                                          : 'M';
  }
  return out;
}

TEST(Reasoning, MarkersFoundByTheirSpellings) {
  ReasoningMarkers think = kThink.markers();
  EXPECT_EQ(think.thinkOpen, 1);
  EXPECT_EQ(think.thinkClose, 2);
  EXPECT_TRUE(think.think());
  EXPECT_FALSE(think.harmony());
  EXPECT_STREQ(think.name(), "think");
  ReasoningMarkers harmony = kHarmony.markers();
  EXPECT_EQ(harmony.start, 0);
  EXPECT_EQ(harmony.channel, 1);
  EXPECT_EQ(harmony.message, 2);
  EXPECT_EQ(harmony.end, 3);
  EXPECT_STREQ(harmony.name(), "harmony");
  // A vocabulary without them (or with only one of a pair) marks nothing.
  Vocabulary plain{{"<s>", "<think>", "a"}};
  EXPECT_FALSE(plain.markers().any());
  EXPECT_STREQ(plain.markers().name(), "none");
}

TEST(Reasoning, ThinkTagsTheModelWrites) {
  // Qwen3 with thinking on: the model opens <think> itself.
  EXPECT_EQ(parts(kThink, {"<|im_start|>", "assistant", "\n"},
                  {"<think>", "\n", "Hi", "\n", "</think>", "\n", " there"}),
            "MRRRMCC");
  // Tokens that only look like a marker are text.
  EXPECT_EQ(parts(kThink, {"Hi"}, {"<thinking>", "think", "Hi"}), "CCC");
}

TEST(Reasoning, PromptsThatOpenOrCloseThinking) {
  // DeepSeek-R1's template ends with "<think>\n": the model starts inside.
  EXPECT_EQ(parts(kThink, {"Hi", "<think>", "\n"},
                  {"Hi", "</think>", " there"}),
            "RMC");
  // Qwen3 with enable_thinking false: an empty block before the answer.
  EXPECT_EQ(parts(kThink, {"Hi", "<think>", "\n", "</think>", "\n"},
                  {"Hi", " there"}),
            "CC");
  // An earlier turn's thinking, closed, leaves the answer state.
  EXPECT_EQ(parts(kThink, {"<think>", "Hi", "</think>", "Hi"}, {"Hi"}), "C");
}

TEST(Reasoning, Gemma4ThoughtChannel) {
  EXPECT_STREQ(kGemma4.markers().name(), "gemma4");
  // Thinking on: the prompt ends with "<|turn>model\n"; the model opens
  // the thought channel, whose name line is markup.
  EXPECT_EQ(parts(kGemma4, {"<bos>", "<|turn>", "user", "\n", "Hi", "<turn|>",
                            "\n", "<|turn>", "model", "\n"},
                  {"<|channel>", "thought", "\n", "Hi", " there", "<channel|>",
                   "Hi", "<turn|>"}),
            "MMMRRMCC");
  // Thinking off: the prompt ends with an empty thought channel.
  EXPECT_EQ(parts(kGemma4, {"<|turn>", "model", "\n", "<|channel>", "thought",
                            "\n", "<channel|>"},
                  {"Hi", " there", "<channel|>", "Hi"}),
            "CCMC");
  // Another channel's text is not output.
  EXPECT_EQ(parts(kGemma4, {"<|turn>", "model", "\n"},
                  {"<|channel>", "tool", "\n", "Hi", "<channel|>", "Hi"}),
            "MMMMMC");
}

TEST(Reasoning, HarmonyChannels) {
  // gpt-oss's prompt ends with <|start|>assistant: the model writes the
  // channel of each message; analysis is reasoning, final the answer.
  std::vector<std::string> prompt = {"<|start|>", "user", "<|message|>", "x",
                                     "<|end|>", "<|start|>", "assistant"};
  EXPECT_EQ(parts(kHarmony, prompt,
                  {"<|channel|>", "analysis", "<|message|>", "x", "y",
                   "<|end|>", "<|start|>", "assistant", "<|channel|>",
                   "final", "<|message|>", "y", "<|return|>"}),
            "MMMRRMMMMMMCC");
  // A commentary message (a preamble, or a tool call's header with its
  // recipient and constraint) is output, not reasoning.
  EXPECT_EQ(parts(kHarmony, prompt,
                  {"<|channel|>", "commentary", " to=functions.f",
                   "<|constrain|>", "json", "<|message|>", "x"}),
            "MMMMMMC");
  // A prompt whose assistant turn already names its channel.
  EXPECT_EQ(parts(kHarmony,
                  {"<|start|>", "assistant", "<|channel|>", "analysis",
                   "<|message|>"},
                  {"x", "<|end|>"}),
            "RM");
  // Text outside any message (a model that ignores the format) is output.
  EXPECT_EQ(parts(kHarmony, {"<|start|>", "user", "<|message|>", "x",
                             "<|end|>"},
                  {"x", "y"}),
            "CC");
}

} // namespace
