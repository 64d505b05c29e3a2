//===- FuzzModel.cpp - a model description, as tfmc loads it --------------===//
//
// One libFuzzer target per kind of model input (TFM_FUZZ_MODEL, set by
// CMakeLists.txt), each through the frontend's entry point, loadModel, as
// `tfmc PATH` runs it: header and metadata checks, the family's config
// reading, the tensor table against the config, the tokenizer, and the tfm
// module built from it all. A model that loads then has every weight
// decoded to f32, so that each accepted byte range and dtype is read.
//
//   gguf:     the input is model.gguf (llama.cpp's container), and where
//             it has a second part, the mmproj file beside it (tfmc
//             --mmproj)
//   llama2c:  the input is model.bin (a llama2.c checkpoint)
//   hf:       config.json, model.safetensors, then any of a Hugging Face
//             directory's other files as (name, content) parts; a PEFT
//             adapter's two files among them are written to a folder
//             beside it and merged (tfmc --lora)
//
//===----------------------------------------------------------------------===//

#include "frontend/ModelLoader.h"
#include "test/fuzz/FuzzErrors.h"
#include "test/fuzz/FuzzFiles.h"

#include "mlir/IR/MLIRContext.h"

#include <algorithm>
#include <string_view>

using namespace mlir;

namespace {

/// The files of a model directory the frontend reads besides config.json
/// and model.safetensors; other names in an input are skipped.
constexpr std::string_view kDirectoryFiles[] = {
    "generation_config.json", "preprocessor_config.json",
    "tokenizer_config.json",  "tokenizer.json",
    "vocab.json",             "merges.txt",
    "vocab.txt",              "tokenizer.model",
    "spiece.model",           "special_tokens_map.json",
};

/// A LoRA adapter's files, written to kAdapterFolder when an input names
/// them.
constexpr std::string_view kAdapterFiles[] = {"adapter_config.json",
                                              "adapter_model.safetensors"};
constexpr std::string_view kAdapterFolder = "adapter";

template <size_t N>
bool isOneOf(std::string_view name, const std::string_view (&names)[N]) {
  return std::find(std::begin(names), std::end(names), name) != std::end(names);
}

/// Writes the input's files; returns the model's path, in `adapter` the
/// adapter folder's where the input has adapter files, and in `mmproj`
/// an mmproj file's where a GGUF input has a second part.
std::string writeModel(const uint8_t *data, size_t size, std::string &adapter,
                       std::string &mmproj) {
  std::string_view kind = TFM_FUZZ_MODEL;
  std::string_view bytes(reinterpret_cast<const char *>(data), size);
  if (kind == "gguf") {
    std::vector<std::string_view> parts = tfm_fuzz::splitAllParts(data, size);
    if (parts.size() >= 2)
      mmproj = tfm_fuzz::writeFile("mmproj.gguf", parts[1]);
    return tfm_fuzz::writeFile("model.gguf", parts[0]);
  }
  if (kind == "llama2c")
    return tfm_fuzz::writeFile("model.bin", bytes);
  std::string folder =
      tfm_fuzz::scratchDirectory() + "/" + std::string(kAdapterFolder);
  mkdir(folder.c_str(), 0700);
  auto inFolder = [](std::string_view name) {
    return std::string(kAdapterFolder) + "/" + std::string(name);
  };
  for (std::string_view name : kDirectoryFiles)
    tfm_fuzz::removeFile(name);
  for (std::string_view name : kAdapterFiles)
    tfm_fuzz::removeFile(inFolder(name));
  std::vector<std::string_view> parts = tfm_fuzz::splitAllParts(data, size);
  parts.resize(std::max<size_t>(parts.size(), 2));
  tfm_fuzz::writeFile("config.json", parts[0]);
  tfm_fuzz::writeFile("model.safetensors", parts[1]);
  for (size_t i = 2; i + 1 < parts.size(); i += 2) {
    if (isOneOf(parts[i], kDirectoryFiles))
      tfm_fuzz::writeFile(parts[i], parts[i + 1]);
    if (isOneOf(parts[i], kAdapterFiles)) {
      tfm_fuzz::writeFile(inFolder(parts[i]), parts[i + 1]);
      adapter = folder;
    }
  }
  return tfm_fuzz::scratchDirectory();
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string adapter, mmproj;
  std::string path = writeModel(data, size, adapter, mmproj);
  MLIRContext context(MLIRContext::Threading::DISABLED);
  std::vector<tfm::LoraAdapterSpec> adapters;
  if (!adapter.empty())
    adapters.push_back({adapter, 0.5});
  llvm::Expected<tfm::LoadedModel> model =
      tfm::loadModel(context, path, "", "", {}, adapters, mmproj);
  if (!model) {
    tfm_fuzz::expectMessage(model.takeError());
    return 0;
  }
  for (const std::string &name : model->weights.names())
    if (const tfm::WeightTensor *tensor = model->weights.lookup(name))
      (void)tensor->toF32();
  return 0;
}
