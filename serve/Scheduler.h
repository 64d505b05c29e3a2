//===- Scheduler.h - the engine's thread and the requests' channels -------===//
//
// HTTP handlers run on the server's threads; the batch engine (runtime/
// tfm_engine.h) is used by one thread at a time. The scheduler owns the
// engine and a thread that steps it while there is work, and hands each
// request's tokens to the handler waiting for them through a Completion.
// A handler that stops listening (its client went away) cancels, which
// frees the request's KV blocks before the next step.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_SERVE_SCHEDULER_H
#define TFM_SERVE_SCHEDULER_H

#include "tfm/tfm_engine.h"

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace tfm::serve {

/// One request's results as the engine produces them.
struct Completion {
  std::mutex mutex;
  std::condition_variable changed;
  std::vector<int32_t> tokens; // every new token so far
  bool finished = false;
  tfm_finish_reason reason = TFM_FINISH_NONE;
  std::string error; // for TFM_FINISH_ERROR
  int64_t engineId = -1;
  int64_t promptTokens = 0;
  int64_t drafted = 0, accepted = 0; // speculative decoding's, so far
};

/// Counters for /metrics.
struct SchedulerStats {
  tfm_engine_stats engine{};
  uint64_t requestsAdmitted = 0, requestsRejected = 0, requestsCancelled = 0;
  uint64_t requestsFinished = 0;
  /// Time between a request's consecutive tokens: counts per bucket
  /// (upper bounds kTokenGapBuckets, then +Inf), and their sum.
  std::vector<uint64_t> tokenGapCounts;
  double tokenGapSeconds = 0;
};

/// Upper bounds (seconds) of the time-per-output-token histogram.
extern const std::vector<double> kTokenGapBuckets;

class Scheduler {
public:
  /// `maxWaiting`: requests queued beyond the engine's max_sequences before
  /// new ones are refused (HTTP 503).
  /// `maxDrafts`: the engine's max_drafts (a step's events grow with it).
  Scheduler(tfm_engine *engine, int32_t maxSequences, int32_t maxWaiting,
            int32_t maxDrafts = 0);
  ~Scheduler();

  enum class Refusal { None, Full, Invalid };
  /// Queues `request`; on refusal, `why` says what (Invalid: the engine's
  /// message about the request; Full: the queue is).
  std::shared_ptr<Completion> submit(const tfm_engine_request &request,
                                     Refusal &refusal, std::string &why);
  /// Drops a request that has not finished; its blocks are freed at once.
  void cancel(const std::shared_ptr<Completion> &completion);
  SchedulerStats stats();

private:
  void run();
  void deliver(const tfm_engine_event *events, int32_t count,
               std::chrono::steady_clock::time_point now,
               const std::string &error);

  tfm_engine *engine;
  int32_t maxSequences, maxWaiting, maxDrafts;
  std::mutex mutex; // guards everything below and the engine
  std::condition_variable work;
  bool stopping = false;
  int64_t live = 0; // submitted, not finished or cancelled
  std::map<int64_t, std::shared_ptr<Completion>> byId;
  std::map<int64_t, std::chrono::steady_clock::time_point> lastToken;
  SchedulerStats counters;
  std::thread thread;
};

} // namespace tfm::serve

#endif // TFM_SERVE_SCHEDULER_H
