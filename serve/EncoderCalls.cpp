//===- EncoderCalls.cpp - encoder calls shared by concurrent requests ---===//

#include "serve/EncoderCalls.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <string>

using namespace tfm::serve;

namespace {

/// Inputs one packed call takes at most: a bound on its buffers (the
/// runtime runs them in cache-sized groups anyway).
constexpr size_t kMaxInputsPerCall = 64;

/// How long a call waits for the requests of the previous call's clients.
constexpr std::chrono::microseconds kGatherWait{2000};

bool takesTokens(const tfm_entry_point *entry, bool packed, bool &types) {
  int32_t expected = packed ? 2 : 1;
  types = entry->num_inputs == expected + 1 &&
          entry->inputs[1].role == TFM_ROLE_TOKEN_TYPE_IDS;
  if (entry->num_inputs != expected + (types ? 1 : 0) ||
      entry->inputs[0].role != TFM_ROLE_TOKEN_IDS)
    return false;
  return !packed ||
         entry->inputs[entry->num_inputs - 1].role == TFM_ROLE_SEQUENCE_LENGTHS;
}

} // namespace

std::optional<EncoderEntry> tfm::serve::findEncoderEntry(const tfm_model *model,
                                                         const char *name) {
  EncoderEntry found;
  found.single = tfm_model_entry_point(model, name);
  if (!found.single || !takesTokens(found.single, false, found.takesTypes) ||
      found.single->num_outputs != 1 || found.single->outputs[0].rank != 1)
    return std::nullopt;
  std::string twin = std::string(name) + "_batch";
  const tfm_entry_point *packed = tfm_model_entry_point(model, twin.c_str());
  bool packedTypes = false;
  if (packed && takesTokens(packed, true, packedTypes) &&
      packedTypes == found.takesTypes && packed->num_outputs == 1 &&
      packed->outputs[0].rank == 2)
    found.packed = packed;
  return found;
}

std::optional<std::string> EncoderCalls::runOne(const EncoderInput &input,
                                                std::vector<float> &row) {
  std::vector<int32_t> zeros;
  const std::vector<int32_t> *types = &input.types;
  if (types->empty()) {
    zeros.assign(input.ids.size(), 0);
    types = &zeros;
  }
  int64_t n = int64_t(input.ids.size());
  tfm_tensor tensors[2] = {
      {const_cast<int32_t *>(input.ids.data()), TFM_DTYPE_I32, 1, {n}, nullptr},
      {const_cast<int32_t *>(types->data()), TFM_DTYPE_I32, 1, {n}, nullptr}};
  tfm_tensor output;
  tfm_status status;
  if (tfm_model_call(model, entry.single->name, tensors,
                     entry.takesTypes ? 2 : 1, nullptr, &output, 1,
                     &status) != TFM_OK)
    return std::string(status.message);
  const float *values = static_cast<const float *>(output.data);
  row.assign(values, values + output.shape[0]);
  tfm_tensor_release(&output);
  return std::nullopt;
}

std::optional<std::string>
EncoderCalls::runPacked(const std::vector<const EncoderInput *> &inputs,
                        std::vector<std::vector<float> *> &rows) {
  std::vector<int32_t> ids, types, lengths;
  for (const EncoderInput *input : inputs) {
    ids.insert(ids.end(), input->ids.begin(), input->ids.end());
    if (input->types.empty())
      types.insert(types.end(), input->ids.size(), 0);
    else
      types.insert(types.end(), input->types.begin(), input->types.end());
    lengths.push_back(int32_t(input->ids.size()));
  }
  int64_t tokens = int64_t(ids.size()), sequences = int64_t(lengths.size());
  std::vector<tfm_tensor> tensors = {
      {ids.data(), TFM_DTYPE_I32, 1, {tokens}, nullptr}};
  if (entry.takesTypes)
    tensors.push_back({types.data(), TFM_DTYPE_I32, 1, {tokens}, nullptr});
  tensors.push_back({lengths.data(), TFM_DTYPE_I32, 1, {sequences}, nullptr});
  tfm_tensor output;
  tfm_status status;
  if (tfm_model_call(model, entry.packed->name, tensors.data(),
                     int32_t(tensors.size()), nullptr, &output, 1,
                     &status) != TFM_OK)
    return std::string(status.message);
  const float *values = static_cast<const float *>(output.data);
  int64_t width = output.shape[1];
  for (size_t k = 0; k < rows.size(); ++k)
    rows[k]->assign(values + int64_t(k) * width,
                    values + int64_t(k + 1) * width);
  tfm_tensor_release(&output);
  return std::nullopt;
}

void EncoderCalls::runJobs(const std::vector<Job *> &jobs) {
  std::vector<const EncoderInput *> inputs;
  std::vector<std::vector<float> *> rows;
  std::vector<Job *> owners;
  for (Job *job : jobs) {
    for (size_t i = 0; i < job->count; ++i) {
      inputs.push_back(&job->inputs[i]);
      rows.push_back(&job->rows[i]);
      owners.push_back(job);
    }
  }
  for (size_t first = 0; first < inputs.size();) {
    size_t end = entry.packed
                     ? std::min(inputs.size(), first + kMaxInputsPerCall)
                     : first + 1;
    std::optional<std::string> error;
    if (entry.packed) {
      std::vector<const EncoderInput *> part(inputs.begin() + first,
                                             inputs.begin() + end);
      std::vector<std::vector<float> *> out(rows.begin() + first,
                                            rows.begin() + end);
      error = runPacked(part, out);
    } else {
      error = runOne(*inputs[first], *rows[first]);
    }
    ++calls;
    inputsRun += int64_t(end - first);
    // A failed call fails the requests whose inputs it held (an input is
    // checked before it gets here: a failure is the runtime's).
    for (size_t k = first; error && k < end; ++k)
      if (!owners[k]->error)
        owners[k]->error = error;
    first = end;
  }
}

std::optional<std::string>
EncoderCalls::run(const std::vector<EncoderInput> &inputs,
                  std::vector<std::vector<float>> &rows) {
  rows.assign(inputs.size(), {});
  // A big request goes in parts of one call each, every part queued behind
  // what waits by then: other requests run between its parts, not after
  // all of it.
  for (size_t first = 0; first < inputs.size(); first += kMaxInputsPerCall) {
    size_t count = std::min(kMaxInputsPerCall, inputs.size() - first);
    if (std::optional<std::string> error =
            runPart(&inputs[first], count, &rows[first]))
      return error;
  }
  return std::nullopt;
}

std::optional<std::string> EncoderCalls::runPart(const EncoderInput *inputs,
                                                 size_t count,
                                                 std::vector<float> *rows) {
  Job job{inputs, count, rows, std::nullopt};
  std::unique_lock<std::mutex> lock(mutex);
  waiting.push_back(&job);
  arrived.notify_all();
  while (!job.done) {
    if (running) {
      finished.wait(lock);
      continue;
    }
    // No call is running: this request runs every waiting one's inputs.
    // When the last call served several requests, their clients are
    // about to send their next ones: a moment's wait lets them join this
    // call instead of the next.
    running = true;
    if (lastJobs > 1 && waiting.size() < size_t(lastJobs))
      arrived.wait_for(lock, kGatherWait,
                       [&] { return waiting.size() >= size_t(lastJobs); });
    std::vector<Job *> jobs(waiting.begin(), waiting.end());
    lastJobs = int64_t(jobs.size());
    waiting.clear();
    lock.unlock();
    runJobs(jobs);
    lock.lock();
    for (Job *done : jobs)
      done->done = true;
    running = false;
    finished.notify_all();
  }
  return job.error;
}
