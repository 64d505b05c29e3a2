//===- FuzzAudio.cpp - a speech model's input files -----------------------===//
//
// Every reader of audio files on any file: libsndfile's readers (WAV, FLAC,
// Ogg, ..., told apart by content) and audio.c's checks around them, mixing
// down and resampling with libsoxr to the model's rate, then
//   - tfm_audio_load's log-mel features, as a Whisper-like
//     preprocessor_config.json says;
//   - tfm_audio_load's Kaldi filterbank, as the Audio Spectrogram
//     Transformer's;
//   - tfm_audio_read's raw samples, as a Wav2Vec2 recognizer's (resampled
//     up to its longest clip and one more sample);
// each shrunk so that a run is quick (8 mel bins, 0.1 s chunks, 0.2 s
// clips).
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzFiles.h"
#include "test/fuzz/FuzzModelDesc.h"

#include <cstdlib>

namespace {

/// A refusal says what is wrong.
void checkRefusal(tfm_status_code code, const tfm_status &status) {
  if (code != TFM_OK && !status.message[0])
    std::abort();
}

/// Features through tfm_audio_load with `preprocessing`.
void loadFeatures(const std::string &path,
                  tfm_audio_preprocessing preprocessing, int64_t count) {
  tfm_model_desc desc = {};
  desc.audio_preprocessing = &preprocessing;
  tfm_model *model = tfm_fuzz::loadDescribedModel(desc);
  std::vector<float> features(static_cast<size_t>(count));
  tfm_status status;
  checkRefusal(tfm_audio_load(model, path.c_str(), features.data(), count,
                              &status),
               status);
  tfm_model_free(model);
}

/// Raw samples through tfm_audio_read, as a recognizer hears them.
void readSamples(const std::string &path) {
  tfm_waveform_input waveform = {};
  waveform.sampling_rate = 16000;
  waveform.min_samples = 400;
  waveform.frame_samples = 320;
  waveform.blank = -1;
  waveform.word_delimiter = -1;
  tfm_model_desc desc = {};
  desc.waveform = &waveform;
  desc.max_context = 3200;
  tfm_model *model = tfm_fuzz::loadDescribedModel(desc);
  float *samples = nullptr;
  int64_t n = 0;
  tfm_status status;
  checkRefusal(tfm_audio_read(model, path.c_str(), &samples, &n, &status),
               status);
  std::free(samples);
  tfm_model_free(model);
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string path = tfm_fuzz::writeFile(
      "audio", std::string_view(reinterpret_cast<const char *>(data), size));
  tfm_audio_preprocessing whisper = {};
  whisper.mel_bins = 8;
  whisper.sampling_rate = 16000;
  whisper.n_fft = 64;
  whisper.hop_length = 16;
  whisper.samples = 1600;
  loadFeatures(path, whisper, 8 * 1600 / 16);
  tfm_audio_preprocessing kaldi = {};
  kaldi.kaldi = 1;
  kaldi.mel_bins = 8;
  kaldi.sampling_rate = 16000;
  kaldi.n_fft = 512;
  kaldi.window_length = 400;
  kaldi.hop_length = 160;
  kaldi.frames = 10;
  kaldi.samples = 400 + 9 * 160;
  kaldi.normalize = 1;
  kaldi.mean = -4.27f;
  kaldi.std = 4.57f;
  loadFeatures(path, kaldi, 8 * 10);
  readSamples(path);
  return 0;
}
