//===- WeightStore.cpp - the weights a frontend read --------------------===//

#include "frontend/WeightStore.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::tfm;

int64_t WeightTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string mlir::tfm::formatShape(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

void WeightStore::add(llvm::StringRef name, WeightTensor tensor) {
  if (!tensors.count(name))
    order.push_back(name.str());
  tensors[name] = std::move(tensor);
}

const WeightTensor *WeightStore::lookup(llvm::StringRef name) const {
  auto it = tensors.find(name);
  return it == tensors.end() ? nullptr : &it->second;
}

WeightTensor WeightStore::take(llvm::StringRef name) {
  WeightTensor tensor = std::move(tensors[name]);
  tensors.erase(name);
  order.erase(std::remove(order.begin(), order.end(), name.str()),
              order.end());
  return tensor;
}
