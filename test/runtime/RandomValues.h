//===- RandomValues.h - inputs for the kernel tests ----------*- C++ -*-===//
//
// Uniform values in [-range, range) from a fixed seed: the kernel tests'
// activations and weights, the same on every run.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_TEST_RUNTIME_RANDOMVALUES_H
#define TFM_TEST_RUNTIME_RANDOMVALUES_H

#include <random>
#include <vector>

namespace tfm_test {

inline std::vector<float> randomValues(size_t n, unsigned seed,
                                       float range = 2.0f) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-range, range);
  std::vector<float> values(n);
  for (float &x : values)
    x = dist(rng);
  return values;
}

} // namespace tfm_test

#endif // TFM_TEST_RUNTIME_RANDOMVALUES_H
