//===- FuzzModelDesc.h - a model description without a model ----*- C++ -*-===//
//
// The runtime's image and audio loaders read their preprocessing from the
// loaded model's description. The fuzz targets load a description made
// here, as tfmc would generate it, with a few bytes of weights and no code:
// enough for tfm_image_load and tfm_audio_load, which never call the model.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TEST_FUZZ_FUZZMODELDESC_H
#define TFM_TEST_FUZZ_FUZZMODELDESC_H

#include "tfm/tfm_format.h"
#include "tfm/tfm_runtime.h"

#include <cstdlib>

namespace tfm_fuzz {

/// `desc` (its preprocessing and entry points filled in) with the fields
/// every model has, loaded; aborts when the runtime refuses it.
inline tfm_model *loadDescribedModel(tfm_model_desc &desc) {
  static const uint8_t weights[16] = {1, 2, 3};
  desc.abi_version = TFM_ABI_VERSION;
  desc.name = "fuzz";
  desc.family = "fuzz";
  desc.bos_token = desc.eos_token = -1;
  desc.weights = weights;
  desc.weights_size = sizeof weights;
  desc.weights_checksum = tfm_weights_checksum(weights, sizeof weights);
  tfm_model *model = nullptr;
  tfm_status status;
  if (tfm_model_load(&desc, nullptr, &model, &status) != TFM_OK)
    std::abort();
  return model;
}

} // namespace tfm_fuzz

#endif // TFM_TEST_FUZZ_FUZZMODELDESC_H
