//===- WeightStore.h - the weights a frontend read --------------*- C++ -*-===//
//
// Named f32 tensors, as the frontends read them from checkpoints (F16 and
// BF16 converted, Conv1D layouts transposed). The IR refers to them by name
// through tfm.weight; codegen packs them into the weight blob.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_WEIGHTSTORE_H
#define TFM_FRONTEND_WEIGHTSTORE_H

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::tfm {

struct WeightTensor {
  std::vector<int64_t> shape;
  std::vector<float> values;
  /// Where it came from, for messages ("model.safetensors").
  std::string source;

  int64_t numElements() const;
};

/// Formats a shape as "[a, b]".
std::string formatShape(const std::vector<int64_t> &shape);

class WeightStore {
public:
  void add(llvm::StringRef name, WeightTensor tensor);
  bool contains(llvm::StringRef name) const { return tensors.count(name); }
  const WeightTensor *lookup(llvm::StringRef name) const;
  /// Removes and returns a tensor (for frontends that split or transpose).
  WeightTensor take(llvm::StringRef name);
  /// Names in insertion order.
  const std::vector<std::string> &names() const { return order; }

private:
  llvm::StringMap<WeightTensor> tensors;
  std::vector<std::string> order;
};

} // namespace mlir::tfm

#endif // TFM_FRONTEND_WEIGHTSTORE_H
