//===- ThreadPoolTest.cpp - tfm_rt_parallel_loop's splitting -----------===//
//
// What generated parallel loops rely on (tfm-parallelize-loops): every
// iteration runs exactly once, loops too small to share run inline in one
// call on the caller's thread, large ones are split into several chunks,
// and no iteration count or cost overflows the work estimate.
//
//===----------------------------------------------------------------------===//

extern "C" {
#include "runtime/core/thread_pool.h"
}

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <mutex>
#include <thread>
#include <vector>

namespace {

/// What the body saw: how often each iteration ran, and the chunks.
struct Record {
  explicit Record(int64_t n) : visits(n) {}
  std::vector<std::atomic<int>> visits;
  std::mutex lock;
  std::vector<std::pair<int64_t, int64_t>> chunks;
  std::vector<std::thread::id> threads;
};

void recordChunk(void *context, int64_t begin, int64_t end, int /*thread*/) {
  auto *record = static_cast<Record *>(context);
  for (int64_t i = begin; i < end; ++i)
    record->visits[i].fetch_add(1);
  std::lock_guard<std::mutex> guard(record->lock);
  record->chunks.push_back({begin, end});
  record->threads.push_back(std::this_thread::get_id());
}

void expectEachOnce(const Record &record) {
  for (size_t i = 0; i < record.visits.size(); ++i)
    ASSERT_EQ(record.visits[i].load(), 1) << "iteration " << i;
}

TEST(ParallelLoop, SmallLoopRunsInlineInOneCall) {
  Record record(10);
  tfm_rt_parallel_loop(10, /*iteration_cost=*/3, recordChunk, &record);
  expectEachOnce(record);
  ASSERT_EQ(record.chunks.size(), 1u);
  EXPECT_EQ(record.chunks[0], std::make_pair(int64_t(0), int64_t(10)));
  EXPECT_EQ(record.threads[0], std::this_thread::get_id());
}

TEST(ParallelLoop, LargeLoopIsSplitIntoChunks) {
  const int64_t n = 4096;
  Record record(n);
  tfm_rt_parallel_loop(n, /*iteration_cost=*/1000, recordChunk, &record);
  expectEachOnce(record);
  if (tfm_thread_count() > 1) {
    EXPECT_GT(record.chunks.size(), 2u);
  }
  for (auto [begin, end] : record.chunks)
    EXPECT_LT(begin, end);
}

TEST(ParallelLoop, ChunksAreNotSmallerThanTheMinimumWork) {
  // 512 iterations of 64 operations: chunks of at least 8192 operations
  // are at least 128 iterations (the last may be shorter).
  Record record(512);
  tfm_rt_parallel_loop(512, /*iteration_cost=*/64, recordChunk, &record);
  expectEachOnce(record);
  int64_t shortChunks = 0;
  for (auto [begin, end] : record.chunks)
    shortChunks += end - begin < 128;
  EXPECT_LE(shortChunks, 1);
}

TEST(ParallelLoop, HugeCostDoesNotOverflow) {
  Record record(3);
  tfm_rt_parallel_loop(3, INT64_MAX / 2, recordChunk, &record);
  expectEachOnce(record);
  if (tfm_thread_count() > 1) {
    EXPECT_EQ(record.chunks.size(), 3u);
  }
}

TEST(ParallelLoop, NoIterationsNoCalls) {
  Record record(0);
  tfm_rt_parallel_loop(0, 1000, recordChunk, &record);
  tfm_rt_parallel_loop(-5, 1000, recordChunk, &record);
  EXPECT_TRUE(record.chunks.empty());
}

} // namespace
