//===- Scheduler.cpp - the engine's thread and the requests' channels -----===//

#include "serve/Scheduler.h"

#include <algorithm>

using namespace tfm::serve;
using Clock = std::chrono::steady_clock;

const std::vector<double> tfm::serve::kTokenGapBuckets = {
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0};

Scheduler::Scheduler(tfm_engine *engine, int32_t maxSequences,
                     int32_t maxWaiting, int32_t maxDrafts)
    : engine(engine), maxSequences(maxSequences), maxWaiting(maxWaiting),
      maxDrafts(maxDrafts) {
  counters.tokenGapCounts.assign(kTokenGapBuckets.size() + 1, 0);
  thread = std::thread([this] { run(); });
}

Scheduler::~Scheduler() {
  {
    std::lock_guard<std::mutex> lock(mutex);
    stopping = true;
  }
  work.notify_all();
  thread.join();
}

std::shared_ptr<Completion>
Scheduler::submit(const tfm_engine_request &request, Refusal &refusal,
                  std::string &why) {
  std::unique_lock<std::mutex> lock(mutex);
  refusal = Refusal::None;
  if (live >= int64_t(maxSequences) + maxWaiting) {
    ++counters.requestsRejected;
    refusal = Refusal::Full;
    why = "the server is full: " + std::to_string(live) +
          " requests running or queued; try again later";
    return nullptr;
  }
  auto completion = std::make_shared<Completion>();
  tfm_status status;
  if (tfm_engine_submit(engine, &request, &completion->engineId, &status) !=
      TFM_OK) {
    ++counters.requestsRejected;
    refusal = Refusal::Invalid;
    why = status.message;
    return nullptr;
  }
  completion->promptTokens = request.prompt_count;
  byId[completion->engineId] = completion;
  ++live;
  ++counters.requestsAdmitted;
  lock.unlock();
  work.notify_one();
  return completion;
}

void Scheduler::cancel(const std::shared_ptr<Completion> &completion) {
  std::lock_guard<std::mutex> lock(mutex);
  auto found = byId.find(completion->engineId);
  if (found == byId.end())
    return; // finished meanwhile
  tfm_status status;
  tfm_engine_cancel(engine, completion->engineId, &status);
  byId.erase(found);
  lastToken.erase(completion->engineId);
  --live;
  ++counters.requestsCancelled;
}

SchedulerStats Scheduler::stats() {
  std::lock_guard<std::mutex> lock(mutex);
  SchedulerStats copy = counters;
  tfm_engine_get_stats(engine, &copy.engine);
  return copy;
}

void Scheduler::deliver(const tfm_engine_event *events, int32_t count,
                        Clock::time_point now, const std::string &error) {
  for (int32_t i = 0; i < count; ++i) {
    const tfm_engine_event &event = events[i];
    auto found = byId.find(event.id);
    if (found == byId.end())
      continue;
    std::shared_ptr<Completion> completion = found->second;
    if (event.token >= 0) {
      auto last = lastToken.find(event.id);
      if (last != lastToken.end()) {
        double gap = std::chrono::duration<double>(now - last->second).count();
        size_t bucket = std::lower_bound(kTokenGapBuckets.begin(),
                                         kTokenGapBuckets.end(), gap) -
                        kTokenGapBuckets.begin();
        ++counters.tokenGapCounts[bucket];
        counters.tokenGapSeconds += gap;
      }
      lastToken[event.id] = now;
    }
    {
      std::lock_guard<std::mutex> own(completion->mutex);
      if (event.token >= 0)
        completion->tokens.push_back(event.token);
      completion->drafted = event.drafted_tokens;
      completion->accepted = event.accepted_tokens;
      if (event.finish != TFM_FINISH_NONE) {
        completion->finished = true;
        completion->reason = event.finish;
        if (event.finish == TFM_FINISH_ERROR)
          completion->error = error;
      }
    }
    completion->changed.notify_all();
    if (event.finish != TFM_FINISH_NONE) {
      byId.erase(found);
      lastToken.erase(event.id);
      --live;
      ++counters.requestsFinished;
    }
  }
}

void Scheduler::run() {
  std::vector<tfm_engine_event> events((2 + size_t(maxDrafts)) *
                                       size_t(maxSequences));
  std::unique_lock<std::mutex> lock(mutex);
  for (;;) {
    work.wait(lock, [&] { return stopping || live > 0; });
    if (stopping)
      return;
    int32_t count = 0;
    tfm_status status;
    tfm_status_code code =
        tfm_engine_step(engine, events.data(), int32_t(events.size()), &count,
                        &status);
    deliver(events.data(), count, Clock::now(),
            code == TFM_OK ? std::string() : std::string(status.message));
    if (code != TFM_OK) {
      // A request that cannot go on had its error event; a model call that
      // failed (out of memory) is retried next step, after a pause.
      lock.unlock();
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
      lock.lock();
    } else {
      // Let submissions and cancellations in between steps.
      lock.unlock();
      std::this_thread::yield();
      lock.lock();
    }
  }
}
