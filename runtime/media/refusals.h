/*===- refusals.h - what image and audio loading refuse, said once -*- C -*-===//
 *
 * tfm_image_load and tfm_audio_load refuse a model without the preprocessing
 * they follow. tfmc links image and audio decoding only into executables of
 * models that have it (cli/main_internal.h), so the command line of any
 * other says the same itself, from these formats (the model's name is the
 * argument).
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_MEDIA_REFUSALS_H
#define TFM_RUNTIME_MEDIA_REFUSALS_H

#define TFM_NO_IMAGE_PREPROCESSING                                             \
  "model '%s' was compiled without a preprocessor_config.json, so it "         \
  "cannot preprocess image files (give preprocessed pixels instead)"
#define TFM_NO_AUDIO_PREPROCESSING "model '%s' takes no audio"

#endif /* TFM_RUNTIME_MEDIA_REFUSALS_H */
