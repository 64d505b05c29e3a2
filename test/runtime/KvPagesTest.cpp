//===- KvPagesTest.cpp - the paged KV cache's choice of block sizes -------===//
//
// tfm_kv_pages_new rounds the block size asked for up to whole pages that
// divide the capacity. Asked for more than the capacity it searched
// forever (tfm-serve --block-positions 513 on a 512-position model hung):
// every size from 0 to past the capacity, over capacities and position
// sizes that are and are not whole pages, must end, in a block that divides
// the capacity and is at least what was asked, or in a refusal naming both.
//
//===----------------------------------------------------------------------===//

extern "C" {
#include "runtime/engine/kv_pages.h"
}

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

namespace {

TEST(KvPages, EveryBlockSizeEndsInABlockOrARefusal) {
  std::vector<int64_t> asked = {0, 1, 2, 3, 7, 8, 9, 31, 32, 33, 255, 256};
  for (int64_t capacity : {1, 2, 7, 8, 48, 64, 100, 512, 1024, 4096}) {
    // 4 and 32 bytes a position: whole pages every 1024 and 128 positions
    // (blocks are mapped); 12 and 48: every 1024 and 256; 1000: never.
    for (int64_t positionBytes : {4, 12, 32, 48, 1000, 4096}) {
      std::vector<int64_t> sizes = asked;
      for (int64_t near : {capacity - 1, capacity, capacity + 1, 2 * capacity,
                           int64_t{INT32_MAX}})
        sizes.push_back(near);
      for (int64_t wanted : sizes) {
        tfm_kv_pages_options options = {
            2,     2, capacity, positionBytes, 2 * 2 * capacity * positionBytes,
            wanted};
        tfm_kv_pages *pages = nullptr;
        tfm_status status;
        tfm_status_code code = tfm_kv_pages_new(&options, &pages, &status);
        SCOPED_TRACE("capacity " + std::to_string(capacity) + ", " +
                     std::to_string(positionBytes) + " bytes a position, " +
                     std::to_string(wanted) + " positions asked");
        if (wanted > capacity) {
          EXPECT_EQ(code, TFM_ERROR_INVALID_ARGUMENT);
          EXPECT_EQ(std::string(status.message),
                    "blocks of " + std::to_string(wanted) +
                        " positions are more than the " +
                        std::to_string(capacity) + " positions of a sequence");
          continue;
        }
        ASSERT_EQ(code, TFM_OK) << status.message;
        int64_t block = tfm_kv_pages_block_positions(pages);
        EXPECT_GE(block, wanted > 0 ? wanted : 1);
        EXPECT_LE(block, capacity);
        tfm_kv_pages_free(pages);
      }
    }
  }
}

// Keys and values of the same tokens computed in another space (another
// LoRA adapter) are not shared: a prefix is found only in its own space.
TEST(KvPages, PrefixesAreSharedWithinTheirSpaceOnly) {
  // 1024 positions of 4 bytes: a block of 1024 positions fills a page.
  tfm_kv_pages_options options = {2, 2, 2048, 4, 2 * 2 * 2048 * 4 * 2, 1024};
  tfm_kv_pages *pages = nullptr;
  tfm_status status;
  ASSERT_EQ(tfm_kv_pages_new(&options, &pages, &status), TFM_OK)
      << status.message;
  int64_t block = tfm_kv_pages_block_positions(pages);
  std::vector<int32_t> tokens(2 * block, 7);
  ASSERT_EQ(tfm_kv_pages_reserve(pages, 0, 2 * block, &status), TFM_OK)
      << status.message;
  tfm_kv_prefix published = {tokens.data(), nullptr, 0, /*space=*/3};
  tfm_kv_pages_publish(pages, 0, &published, 2 * block);
  int64_t n = int64_t(tokens.size());
  for (int32_t space : {0, 2}) {
    tfm_kv_prefix other = {tokens.data(), nullptr, 0, space};
    EXPECT_EQ(tfm_kv_pages_share_prefix(pages, 1, &other, n, n), 0) << space;
  }
  EXPECT_EQ(tfm_kv_pages_share_prefix(pages, 1, &published, n, n), 2 * block);
  tfm_kv_pages_free(pages);
}

// Placeholders of the same token whose rows differ (two images) are told
// apart by their row keys: a prefix is shared as far as the rows agree.
TEST(KvPages, PrefixesKeyImageRows) {
  tfm_kv_pages_options options = {3, 2, 4096, 4, 3 * 2 * 4096 * 4 * 2, 1024};
  tfm_kv_pages *pages = nullptr;
  tfm_status status;
  ASSERT_EQ(tfm_kv_pages_new(&options, &pages, &status), TFM_OK)
      << status.message;
  int64_t block = tfm_kv_pages_block_positions(pages);
  // Block 0 text, block 1 an image's rows (keyed), block 2 text again.
  std::vector<int32_t> tokens(3 * block, 5);
  std::vector<uint64_t> keys(3 * block, 0);
  for (int64_t i = block; i < 2 * block; ++i)
    keys[i] = 0x1234 + uint64_t(i);
  ASSERT_EQ(tfm_kv_pages_reserve(pages, 0, 3 * block, &status), TFM_OK)
      << status.message;
  tfm_kv_prefix image = {tokens.data(), keys.data(), int64_t(keys.size()), 0};
  tfm_kv_pages_publish(pages, 0, &image, 3 * block);
  int64_t n = 3 * block;
  EXPECT_EQ(tfm_kv_pages_share_prefix(pages, 1, &image, n, n), 3 * block);
  tfm_kv_pages_release(pages, 1);
  // Another image: its first row differs.
  std::vector<uint64_t> other = keys;
  other[block] ^= 1;
  tfm_kv_prefix another = {tokens.data(), other.data(), n, 0};
  EXPECT_EQ(tfm_kv_pages_share_prefix(pages, 1, &another, n, n), block);
  tfm_kv_pages_release(pages, 1);
  // The same rows in another order are another image.
  std::swap(other[block], other[block + 1]);
  other[block + 1] ^= 1;
  EXPECT_EQ(tfm_kv_pages_share_prefix(pages, 1, &another, n, n), block);
  tfm_kv_pages_release(pages, 1);
  // Tokens alone (no keys): the text block only.
  tfm_kv_prefix text = {tokens.data(), nullptr, 0, 0};
  EXPECT_EQ(tfm_kv_pages_share_prefix(pages, 2, &text, n, n), block);
  // Keys that end before the positions do: the rest are tokens alone.
  tfm_kv_prefix shorter = {tokens.data(), keys.data(), 2 * block, 0};
  tfm_kv_pages_release(pages, 2);
  EXPECT_EQ(tfm_kv_pages_share_prefix(pages, 2, &shorter, n, n), 3 * block);
  tfm_kv_pages_free(pages);
}

} // namespace
