//===- SpecialTokensTest.cpp - the special tokens' byte trie ------------===//
//
// runtime/tokenizer/special_tokens.c: the longest spelling a text starts with, among
// spellings that share prefixes, repeat, are empty or run past the text.
//
//===----------------------------------------------------------------------===//

extern "C" {
#include "runtime/tokenizer/special_tokens.h"
}

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

namespace {

struct Trie {
  tfm_special_trie trie;
  explicit Trie(const std::vector<std::string> &spellings) {
    std::vector<const char *> data;
    std::vector<uint32_t> lengths;
    for (const std::string &s : spellings) {
      data.push_back(s.data());
      lengths.push_back(uint32_t(s.size()));
    }
    EXPECT_TRUE(tfm_special_trie_build(&trie, uint32_t(spellings.size()),
                                       data.data(), lengths.data()));
  }
  ~Trie() { tfm_special_trie_free(&trie); }
  int64_t longest(const std::string &text) const {
    return tfm_special_trie_longest(&trie, text.data(), text.size());
  }
};

TEST(SpecialTokens, LongestSpellingTheTextStartsWith) {
  Trie t({"<", "<|im_start|>", "<|", "", "[MASK]", "<|im_start|>", "<|im_end|>"});
  EXPECT_EQ(t.longest("<|im_start|>user"), 1); // the first of two equal ones
  EXPECT_EQ(t.longest("<|im_end|>"), 6);
  EXPECT_EQ(t.longest("<|im_sta"), 2);         // past the text: a shorter one
  EXPECT_EQ(t.longest("<x"), 0);
  EXPECT_EQ(t.longest("[MASK"), -1);
  EXPECT_EQ(t.longest("x<|"), -1);             // only at the start
  EXPECT_EQ(t.longest(""), -1);                // the empty one never matches
  EXPECT_EQ(t.longest(std::string("[MASK]\0", 7)), 4);
}

TEST(SpecialTokens, ManySpellingsSharingEveryPrefix) {
  // 10 000 spellings "<t0>".."<t9999>": every byte a branch point.
  std::vector<std::string> spellings;
  for (int i = 0; i < 10000; ++i)
    spellings.push_back("<t" + std::to_string(i) + ">");
  Trie t(spellings);
  for (int i : {0, 7, 42, 999, 1000, 9999})
    EXPECT_EQ(t.longest("<t" + std::to_string(i) + "> rest"), i);
  EXPECT_EQ(t.longest("<t10000>"), -1);
  EXPECT_EQ(t.longest("<t12"), -1);
}

TEST(SpecialTokens, EmptyTrie) {
  Trie t({});
  EXPECT_EQ(t.longest("anything"), -1);
}

} // namespace
