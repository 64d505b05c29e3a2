//===- FuzzSafetensors.cpp - a safetensors checkpoint, header to values ---===//
//
// readSafetensorsCheckpoint on arbitrary files: the header length, its
// JSON, each tensor's dtype, shape and byte range, and a sharded index
// naming its shards. A checkpoint that reads has every tensor decoded to
// f32, so that an accepted range is one that can be read.
//
// The input's parts: model.safetensors.index.json (empty: none, and the
// next part is model.safetensors), then its two shards.
//
//===----------------------------------------------------------------------===//

#include "frontend/formats/Safetensors.h"
#include "frontend/formats/WeightStore.h"
#include "test/fuzz/FuzzErrors.h"
#include "test/fuzz/FuzzFiles.h"

namespace {
constexpr const char *kIndex = "model.safetensors.index.json";
constexpr const char *kShards[] = {"model-00001-of-00002.safetensors",
                                   "model-00002-of-00002.safetensors"};
} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::vector<std::string_view> parts = tfm_fuzz::splitParts(data, size, 3);
  tfm_fuzz::removeFile(kIndex);
  tfm_fuzz::removeFile("model.safetensors");
  for (const char *shard : kShards)
    tfm_fuzz::removeFile(shard);
  if (parts[0].empty()) {
    tfm_fuzz::writeFile("model.safetensors", parts[1]);
  } else {
    tfm_fuzz::writeFile(kIndex, parts[0]);
    tfm_fuzz::writeFile(kShards[0], parts[1]);
    tfm_fuzz::writeFile(kShards[1], parts[2]);
  }
  mlir::tfm::WeightStore store;
  if (llvm::Error error = mlir::tfm::readSafetensorsCheckpoint(
          tfm_fuzz::scratchDirectory(), store)) {
    tfm_fuzz::expectMessage(std::move(error));
    return 0;
  }
  for (const std::string &name : store.names())
    if (const mlir::tfm::WeightTensor *tensor = store.lookup(name))
      (void)tensor->toF32();
  return 0;
}
