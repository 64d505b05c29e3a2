//===- CharsMapTest.cpp - SentencePiece's character map, read in place ---===//
//
// tfm_chars_map_open's checks and tfm_chars_map_longest's matches on maps
// built by charsMapBlob; the real nmt_nfkc map runs in the T5 and Marian
// end-to-end tests.
//
//===----------------------------------------------------------------------===//

#include "test/runtime/RuntimeFixtures.h"

#include "runtime/tokenizer/chars_map.h"

#include <gtest/gtest.h>

#include <cstring>

namespace tfm_test {
namespace {

/// The open map of `blob` (kept by the caller), expected to be well formed.
tfm_chars_map openMap(const std::string &blob) {
  tfm_chars_map map;
  char why[160] = "";
  EXPECT_EQ(tfm_chars_map_open(&map, blob.data(), blob.size(), why, sizeof why),
            0)
      << why;
  return map;
}

/// Why `blob` is refused ("" when it is not).
std::string refusal(const std::string &blob) {
  tfm_chars_map map;
  char why[160] = "";
  if (tfm_chars_map_open(&map, blob.data(), blob.size(), why, sizeof why) == 0)
    return "";
  return why;
}

/// The replacement of the longest key starting `text`, and its length.
std::pair<std::string, size_t> longest(const tfm_chars_map &map,
                                       const std::string &text) {
  const char *replacement = nullptr;
  size_t length = 0;
  size_t matched = tfm_chars_map_longest(&map, text.data(), text.size(),
                                         &replacement, &length);
  if (!matched)
    return {"", 0};
  return {std::string(replacement, length), matched};
}

void setUnit(std::string &blob, size_t unit, uint32_t value) {
  std::memcpy(&blob[4 + 4 * unit], &value, 4);
}

uint32_t unitAt(const std::string &blob, size_t unit) {
  uint32_t value;
  std::memcpy(&value, &blob[4 + 4 * unit], 4);
  return value;
}

size_t unitCount(const std::string &blob) {
  uint32_t trieBytes;
  std::memcpy(&trieBytes, blob.data(), 4);
  return trieBytes / 4;
}

TEST(CharsMap, LongestKeyWins) {
  std::string blob = charsMapBlob(
      {{"a", "A"}, {"ab", "X"}, {"abc", ""}, {"b", "BB"}, {"\xEF\xAC\x81", "fi"}});
  tfm_chars_map map = openMap(blob);
  EXPECT_EQ(longest(map, "a"), std::make_pair(std::string("A"), size_t(1)));
  EXPECT_EQ(longest(map, "abd"), std::make_pair(std::string("X"), size_t(2)));
  // A key may delete what it matches.
  EXPECT_EQ(longest(map, "abcd"), std::make_pair(std::string(""), size_t(3)));
  EXPECT_EQ(longest(map, "ba"), std::make_pair(std::string("BB"), size_t(1)));
  EXPECT_EQ(longest(map, "\xEF\xAC\x81x"),
            std::make_pair(std::string("fi"), size_t(3)));
  // A prefix of a key is no match; neither is an unknown byte.
  EXPECT_EQ(longest(map, "\xEF\xAC").second, 0u);
  EXPECT_EQ(longest(map, "c").second, 0u);
  EXPECT_EQ(longest(map, "").second, 0u);
  // "b" -> "BB": two bytes of one.
  EXPECT_EQ(map.max_expansion, 2u);
}

TEST(CharsMap, EmptyMapMatchesNothing) {
  tfm_chars_map map = openMap("");
  EXPECT_EQ(longest(map, "abc").second, 0u);
  EXPECT_EQ(map.max_expansion, 1u);
}

TEST(CharsMap, ExpansionIsPerByteOfTheShortestKey) {
  // 64 bytes of one is the most; 130 bytes of a 3-byte key is 44 a byte.
  EXPECT_EQ(openMap(charsMapBlob({{"a", std::string(64, 'x')}})).max_expansion,
            64u);
  EXPECT_EQ(
      openMap(charsMapBlob({{"abc", std::string(130, 'x')}})).max_expansion,
      44u);
  EXPECT_EQ(refusal(charsMapBlob({{"a", std::string(65, 'x')}})),
            "a 1-byte key replaced by 65 bytes (at most 64 a byte)");
}

TEST(CharsMap, MalformedMapsAreRefused) {
  EXPECT_EQ(refusal("ab"), "2 bytes, shorter than its header");
  std::string blob = charsMapBlob({{"a", "b"}, {"c", "d"}});
  std::string header = blob.substr(0, 4);
  uint32_t trieBytes;
  std::memcpy(&trieBytes, header.data(), 4);
  // The trie's size: past the blob, not whole units, empty.
  std::string wrong = blob;
  uint32_t tooMany = uint32_t(blob.size());
  std::memcpy(&wrong[0], &tooMany, 4);
  EXPECT_EQ(refusal(wrong), "a trie of " + std::to_string(tooMany) +
                                " bytes in " + std::to_string(blob.size()) +
                                " bytes");
  wrong = blob;
  uint32_t ragged = trieBytes - 2;
  std::memcpy(&wrong[0], &ragged, 4);
  EXPECT_NE(refusal(wrong).find("a trie of"), std::string::npos);
  EXPECT_NE(refusal(std::string(4, '\0') + "x").find("a trie of 0 bytes"),
            std::string::npos);
  // Replacements must end in NUL (lookups read them with strlen).
  EXPECT_EQ(refusal(blob + "x"), "its replacements do not end in NUL");
  // A labelled root could be reached again as its own child.
  wrong = blob;
  setUnit(wrong, 0, unitAt(wrong, 0) | 'a');
  EXPECT_EQ(refusal(wrong), "its root has a label");
  // Key "a" ends at the root's child labelled 'a'; its value unit is at
  // that node's base.
  uint32_t root = unitAt(blob, 0);
  uint32_t base = (root >> 10) ^ 0;
  uint32_t nodeA = base ^ 'a';
  uint32_t node = unitAt(blob, nodeA);
  uint32_t valueAt = nodeA ^ (node >> 10);
  wrong = blob;
  setUnit(wrong, valueAt, (1u << 31) | 1000);
  EXPECT_EQ(refusal(wrong),
            "replacement 1000 (of the key at unit " + std::to_string(nodeA) +
                ") is past the map's 4 bytes of replacements");
  wrong = blob;
  setUnit(wrong, nodeA, (node & 0x3FF) | (uint32_t(trieBytes) << 10));
  EXPECT_EQ(refusal(wrong), "the value of the key at unit " +
                                std::to_string(nodeA) + " is past the trie");
}

TEST(CharsMap, CorruptUnitsNeverReadPastTheTrie) {
  // Every unit overwritten with every low byte pattern: opening may refuse,
  // and an opened map's lookups stay inside the blob (ASan watches).
  std::string blob = charsMapBlob({{"ab", "x"}, {"b", "yy"}, {"abc", "z"}});
  size_t units = unitCount(blob);
  for (size_t unit = 0; unit < units; ++unit)
    for (uint32_t value : {0u, 0xFFFFFFFFu, 0x100u, 0x7FFFFC00u, 0x80000061u,
                           0x261u, 0x3FFu << 10 | 0x162u}) {
      std::string wrong = blob;
      setUnit(wrong, unit, value);
      tfm_chars_map map;
      char why[160];
      if (tfm_chars_map_open(&map, wrong.data(), wrong.size(), why,
                             sizeof why) != 0)
        continue;
      for (const char *text : {"abc", "abcabc", "bbb", "\xFF\xFE", "ab"}) {
        const char *replacement = nullptr;
        size_t length = 0;
        size_t matched = tfm_chars_map_longest(&map, text, std::strlen(text),
                                               &replacement, &length);
        if (matched) {
          EXPECT_LE(length, map.max_expansion * matched);
        }
      }
    }
}

} // namespace
} // namespace tfm_test
