//===- EncoderCalls.h - encoder calls shared by concurrent requests -*- C++
//-*-===//
//
// How tfm-serve runs an encoder entry point (@embed, @embed_text,
// @classify) for many requests at once. Requests hand their inputs in and
// wait; whichever request finds no call running takes every input waiting
// and runs them as one call of the entry point's packed twin
// (@<name>_batch, tfm-pack-sequences: their tokens end to end, one GEMM
// over all of them), then hands each request its rows. While that call
// runs, new requests queue for the next one: the busier the server, the
// larger the calls. Without a twin (CLIP's text tower) inputs run one call
// each.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_SERVE_ENCODERCALLS_H
#define TFM_SERVE_ENCODERCALLS_H

#include "tfm/tfm_runtime.h"

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace tfm::serve {

/// One input of an encoder: token ids, and token types where the entry
/// point takes them (empty: zeros).
struct EncoderInput {
  std::vector<int32_t> ids, types;
};

/// The entry point an encoder is served through: token ids (and token
/// types) in, one row out per input.
struct EncoderEntry {
  const tfm_entry_point *single = nullptr;
  const tfm_entry_point *packed = nullptr; // @<name>_batch, or null
  bool takesTypes = false;
  /// The row's width: the embedding's dimensions, the labels.
  int64_t width() const { return single->outputs[0].shape[0]; }
};

/// `name` of `model` when it takes token ids (and token types) and returns
/// one vector, with its packed twin if it has one.
std::optional<EncoderEntry> findEncoderEntry(const tfm_model *model,
                                             const char *name);

class EncoderCalls {
public:
  EncoderCalls(tfm_model *model, EncoderEntry entry)
      : model(model), entry(entry) {}

  /// The rows of `inputs` (each within the model's context), in order; an
  /// error message if a call failed. Inputs past one call's go in turns
  /// with other requests'.
  std::optional<std::string> run(const std::vector<EncoderInput> &inputs,
                                 std::vector<std::vector<float>> &rows);

  /// Calls made and inputs run so far (/metrics).
  int64_t callCount() const { return calls; }
  int64_t inputCount() const { return inputsRun; }

private:
  struct Job {
    const EncoderInput *inputs;
    size_t count;
    std::vector<float> *rows; // `count` of them, filled by the call

    std::optional<std::string> error;
    bool done = false;
  };
  /// Runs `count` inputs (at most one call's) as one request waiting its
  /// turn with the others; fills `rows`.
  std::optional<std::string> runPart(const EncoderInput *inputs, size_t count,
                                     std::vector<float> *rows);
  /// Runs `jobs` (taken off the queue) as packed calls; fills their rows.
  void runJobs(const std::vector<Job *> &jobs);
  std::optional<std::string> runOne(const EncoderInput &input,
                                    std::vector<float> &row);
  std::optional<std::string>
  runPacked(const std::vector<const EncoderInput *> &inputs,
            std::vector<std::vector<float> *> &rows);

  tfm_model *model;
  EncoderEntry entry;
  std::mutex mutex;
  std::condition_variable finished, arrived;
  /// Requests the last call served: how many to wait a moment for.
  int64_t lastJobs = 0;
  std::deque<Job *> waiting;
  bool running = false;
  std::atomic<int64_t> calls{0}, inputsRun{0};
};

} // namespace tfm::serve

#endif // TFM_SERVE_ENCODERCALLS_H
