//===- FuzzAudio.cpp - a speech model's input files -----------------------===//
//
// tfm_audio_load on any file: libsndfile's readers (WAV, FLAC, Ogg, ...,
// told apart by content) and audio.c's checks around them, mixing down,
// resampling with libsoxr to the model's rate, and log-mel features as a
// Whisper-like preprocessor_config.json says (shrunk, so that a run is
// quick: 8 mel bins, 0.1 s chunks).
//
//===----------------------------------------------------------------------===//

#include "test/fuzz/FuzzFiles.h"
#include "test/fuzz/FuzzModelDesc.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  tfm_audio_preprocessing preprocessing = {};
  preprocessing.mel_bins = 8;
  preprocessing.sampling_rate = 16000;
  preprocessing.n_fft = 64;
  preprocessing.hop_length = 16;
  preprocessing.samples = 1600;
  tfm_model_desc desc = {};
  desc.audio_preprocessing = &preprocessing;
  tfm_model *model = tfm_fuzz::loadDescribedModel(desc);

  std::string path = tfm_fuzz::writeFile(
      "audio", std::string_view(reinterpret_cast<const char *>(data), size));
  std::vector<float> features(8 * 1600 / 16);
  tfm_status status;
  if (tfm_audio_load(model, path.c_str(), features.data(),
                     static_cast<int64_t>(features.size()),
                     &status) != TFM_OK &&
      !status.message[0])
    std::abort(); // a refusal says what is wrong
  tfm_model_free(model);
  return 0;
}
