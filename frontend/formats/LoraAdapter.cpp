//===- LoraAdapter.cpp - PEFT LoRA adapters merged into a checkpoint ------===//
//
// See LoraAdapter.h. PEFT saves an adapter's tensors under the wrapped
// model's names with the adapter's name removed:
// "base_model.model.<module>.lora_A.weight" ([r, in]) and ".lora_B.weight"
// ([out, r]) for a linear layer, ".lora_embedding_A" ([r, vocab]) and
// ".lora_embedding_B" ([dim, r]) for an embedding, and a module listed in
// modules_to_save as its whole tensors ("base_model.model.lm_head.weight").
//
//===----------------------------------------------------------------------===//

#include "frontend/formats/LoraAdapter.h"
#include "frontend/formats/ConfigReader.h"
#include "frontend/formats/ErrorMessages.h"
#include "frontend/formats/Gguf.h"
#include "frontend/formats/JsonFile.h"
#include "frontend/formats/Safetensors.h"
#include "tfm/half_floats.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Regex.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>

using namespace mlir::tfm;

namespace {

constexpr llvm::StringLiteral kWrapped = "base_model.model.";

/// What adapter_config.json says about the merge.
struct LoraConfig {
  double alpha = 8; // PEFT's default lora_alpha
  bool rsLora = false, fanInFanOut = false;
  /// alpha_pattern: a module name's suffix and its own alpha.
  std::vector<std::pair<std::string, double>> alphaPatterns;
};

llvm::Expected<LoraConfig> readLoraConfig(llvm::StringRef path) {
  llvm::Expected<llvm::json::Object> object = readJsonObjectFile(path);
  if (!object)
    return object.takeError();
  ConfigReader config(*object, path.str());
  std::string method = config.string("peft_type", "LORA");
  if (method != "LORA")
    config.fail("peft_type '" + method +
                "' is not LORA (tfmc merges LoRA adapters only)");
  config.refuseUnlessAbsent("use_dora", "DoRA's magnitude vectors are not "
                                        "merged");
  config.refuseUnlessAbsent("lora_bias", "LoRA's own biases are not merged");
  config.refuseUnlessAbsent("layer_replication",
                            "replicated layers are not built");
  std::string bias = config.string("bias", "none");
  if (bias != "none")
    config.fail("bias '" + bias +
                "' is not supported (trained biases are not merged; 'none' "
                "is)");
  LoraConfig lora;
  lora.alpha = config.number("lora_alpha", lora.alpha);
  lora.rsLora = config.boolean("use_rslora", false);
  lora.fanInFanOut = config.boolean("fan_in_fan_out", false);
  if (const llvm::json::Object *patterns = config.nested("alpha_pattern"))
    for (const auto &[key, value] : *patterns) {
      std::optional<double> alpha = value.getAsNumber();
      if (!alpha)
        config.fail("alpha_pattern['" + key.str() + "'] must be a number");
      lora.alphaPatterns.push_back({key.str(), alpha.value_or(0)});
    }
  if (llvm::Error err = config.takeError())
    return std::move(err);
  return lora;
}

/// The alpha of module `name`: alpha_pattern's first key that ends it at a
/// dot (PEFT's match of `.*\.{key}$`), else lora_alpha.
double alphaOf(const LoraConfig &config, llvm::StringRef name) {
  for (const auto &[key, alpha] : config.alphaPatterns)
    if (llvm::Regex("^(.*\\.)?" + key + "$").match(name))
      return alpha;
  return config.alpha;
}

/// One adapted module's low-rank factors, as stored.
struct LowRankPair {
  const WeightTensor *down = nullptr, *up = nullptr; // A [r, in], B [out, r]
  std::string downName, upName;
  bool embedding = false;
};

/// `values` as `dtype` stores them (a float dtype).
void encodeRow(WeightFormat dtype, const float *values, int64_t count,
               uint8_t *out) {
  if (dtype == WeightFormat::F32) {
    std::memcpy(out, values, size_t(count) * sizeof(float));
    return;
  }
  for (int64_t i = 0; i < count; ++i) {
    uint16_t bits = dtype == WeightFormat::BF16 ? tfm_float_to_bf16(values[i])
                                                : tfm_float_to_f16(values[i]);
    std::memcpy(out + 2 * i, &bits, 2);
  }
}

/// `base` + factor · B·A as a tensor of `base`'s dtype held by `store`:
/// a stored row is one output's weights, or with `transposed` (GPT-2's
/// Conv1D weights [in, out], and embeddings [vocab, dim], whose factors
/// PEFT keeps as for [out, in]) one input's.
WeightTensor mergedTensor(const WeightTensor &base, const std::vector<float> &a,
                          const std::vector<float> &b, int64_t rank,
                          double factor, bool transposed, WeightStore &store,
                          const std::string &source) {
  int64_t rows = base.rows(), cols = base.cols();
  int64_t inner = transposed ? rows : cols; // A's columns
  size_t rowBytes = size_t(checkpointStoredBytes(base.dtype(), cols));
  std::unique_ptr<llvm::WritableMemoryBuffer> bytes =
      llvm::WritableMemoryBuffer::getNewUninitMemBuffer(rowBytes * rows,
                                                        source);
  auto *out = reinterpret_cast<uint8_t *>(bytes->getBufferStart());
  // Summed in double and rounded once to the stored dtype, as a merge in
  // higher precision would be (the update's r products are not rounded
  // one by one).
  std::vector<float> row(cols);
  std::vector<double> sum(cols);
  for (int64_t r = 0; r < rows; ++r) {
    base.readRows(r, 1, row.data());
    std::fill(sum.begin(), sum.end(), 0.0);
    for (int64_t k = 0; k < rank; ++k) {
      if (!transposed) { // row r += factor · B[r, k] · A[k, :]
        double weight = b[r * rank + k];
        const float *down = &a[k * inner];
        for (int64_t c = 0; c < cols; ++c)
          sum[c] += weight * down[c];
        continue;
      }
      // row r (input r) += factor · A[k, r] · B[:, k]
      double weight = a[k * inner + r];
      for (int64_t c = 0; c < cols; ++c)
        sum[c] += weight * b[c * rank + k];
    }
    for (int64_t c = 0; c < cols; ++c)
      row[c] = float(row[c] + factor * sum[c]);
    encodeRow(base.dtype(), row.data(), cols, out + r * rowBytes);
  }
  WeightTensor merged = WeightTensor::view(base.shape(), base.dtype(), out,
                                           /*inMappedFile=*/false, source);
  store.keepMapped(std::move(bytes));
  return merged;
}

/// The base checkpoint's name for the adapter's `name`: the same, or
/// without its first component where only that is found (an adapter of a
/// head model, "transformer.h.0.attn.c_attn.weight", over a checkpoint
/// saved with the base model's names, "h.0.attn.c_attn.weight", as
/// GPT-2's published files are).
std::string baseName(const WeightStore &store, llvm::StringRef name) {
  if (store.contains(name))
    return name.str();
  llvm::StringRef inner = name.split('.').second;
  if (!inner.empty() && store.contains(inner))
    return inner.str();
  return name.str();
}

/// 0.5, 1, 1e-06: as printf's %g writes it.
std::string shortNumber(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%g", value);
  return text;
}

bool isFloatDtype(WeightFormat dtype) {
  return dtype == WeightFormat::F32 || dtype == WeightFormat::F16 ||
         dtype == WeightFormat::BF16;
}

/// Merges B·A (`down` [r, in], `up` [out, r], named as the adapter file
/// names them) times `factor` over `r` into `store`'s `target` ([out, in],
/// or [in, out] where `transposed`), after checking that it is a float
/// matrix they factor. `factorOf(r)`: the scale of the update.
llvm::Error mergePair(WeightStore &store, const std::string &target,
                      const WeightTensor &down, const std::string &downName,
                      const WeightTensor &up, const std::string &upName,
                      bool transposed,
                      llvm::function_ref<double(int64_t)> factorOf,
                      const std::string &file) {
  const WeightTensor *base = store.lookup(target);
  if (!base)
    return makeError(file + ": the base checkpoint has no '" + target +
                     "' for the adapter's '" + downName + "'");
  if (base->shape().size() != 2 || !isFloatDtype(base->dtype()))
    return makeError(
        file + ": base tensor '" + target + "' (" + formatShape(base->shape()) +
        ", " + checkpointName(base->dtype()) +
        ") is not a float matrix, which a merge would have to requantize: "
        "apply the adapter at run time instead (tfmc --lora-slots, then "
        "the model's --lora)");
  // The factors as PEFT keeps them for [out, in]: a transposed base is
  // stored [in, out] (an embedding: [vocab, dim], its A over the vocab).
  int64_t out = transposed ? base->cols() : base->rows();
  int64_t in = transposed ? base->rows() : base->cols();
  int64_t rank = down.shape().empty() ? 0 : down.shape()[0];
  if (down.shape() != std::vector<int64_t>{rank, in} ||
      up.shape() != std::vector<int64_t>{out, rank} || rank <= 0)
    return makeError(
        file + ": '" + downName + "' " + formatShape(down.shape()) + " and '" +
        upName + "' " + formatShape(up.shape()) + " do not factor base '" +
        target + "' " + formatShape(base->shape()) + " (expected [r, " +
        llvm::Twine(in) + "] and [" + llvm::Twine(out) + ", r])");
  WeightTensor merged = mergedTensor(*base, down.toF32(), up.toF32(), rank,
                                     factorOf(rank), transposed, store, file);
  store.add(target, std::move(merged));
  return llvm::Error::success();
}

} // namespace

llvm::Expected<LoraAdapterSpec>
mlir::tfm::parseLoraArgument(llvm::StringRef argument) {
  LoraAdapterSpec spec;
  spec.directory = argument.str();
  auto [directory, scale] = argument.rsplit(':');
  double value = 0;
  if (!scale.empty() && scale.size() != argument.size() &&
      llvm::to_float(scale, value)) {
    if (!std::isfinite(value))
      return makeError("--lora " + argument + ": the scale must be finite");
    spec.directory = directory.str();
    spec.scale = value;
  }
  if (spec.directory.empty())
    return makeError("--lora " + argument + ": no adapter folder");
  return spec;
}

llvm::Expected<std::vector<std::string>>
mlir::tfm::mergeLoraAdapter(const LoraAdapterSpec &adapter, WeightStore &store,
                            std::vector<std::string> &notes) {
  llvm::SmallString<256> configPath(adapter.directory), weightsPath;
  llvm::sys::path::append(configPath, "adapter_config.json");
  if (llvm::StringRef(adapter.directory).ends_with(".gguf") &&
      llvm::sys::fs::is_regular_file(adapter.directory))
    return makeError("--lora: '" + adapter.directory +
                     "' is a GGUF LoRA file, whose tensors carry llama.cpp's "
                     "names: merge it into a model read from GGUF");
  if (!llvm::sys::fs::is_directory(adapter.directory))
    return makeError("--lora: '" + adapter.directory +
                     "' is not a PEFT adapter folder (adapter_config.json "
                     "and adapter_model.safetensors)");
  llvm::Expected<LoraConfig> config = readLoraConfig(configPath);
  if (!config)
    return config.takeError();
  weightsPath = adapter.directory;
  llvm::sys::path::append(weightsPath, "adapter_model.safetensors");
  if (!llvm::sys::fs::exists(weightsPath))
    return makeError(
        adapter.directory +
        ": no adapter_model.safetensors (an adapter_model.bin, a PyTorch "
        "pickle, is not read: save it with safe_serialization=True)");
  WeightStore tensors;
  if (llvm::Error err = readSafetensorsFile(weightsPath, tensors))
    return std::move(err);
  std::string file = weightsPath.str().str();

  std::map<std::string, LowRankPair> pairs;
  std::vector<std::pair<std::string, const WeightTensor *>> saved;
  for (const std::string &name : tensors.names()) {
    llvm::StringRef key(name);
    if (!key.consume_front(kWrapped))
      return makeError(file + ": tensor '" + name + "' is not under '" +
                       kWrapped +
                       "' (the names PEFT saves an adapter's tensors under)");
    const WeightTensor *tensor = tensors.lookup(name);
    auto factor = [&](llvm::StringRef suffix, bool up, bool embedding) {
      if (!key.ends_with(suffix))
        return false;
      LowRankPair &pair = pairs[key.drop_back(suffix.size()).str()];
      (up ? pair.up : pair.down) = tensor;
      (up ? pair.upName : pair.downName) = name;
      pair.embedding = embedding;
      return true;
    };
    if (factor(".lora_A.weight", false, false) ||
        factor(".lora_B.weight", true, false) ||
        factor(".lora_embedding_A", false, true) ||
        factor(".lora_embedding_B", true, true))
      continue;
    if (key.contains("lora_"))
      return makeError(file + ": tensor '" + name +
                       "' is not a LoRA factor tfmc merges (lora_A/lora_B "
                       "weights, lora_embedding_A/B)");
    saved.push_back({key.str(), tensor});
  }
  if (pairs.empty() && saved.empty())
    return makeError(file + ": no LoRA tensors");

  std::vector<std::string> changed;
  for (auto &[module, pair] : pairs) {
    std::string target = baseName(store, module + ".weight");
    if (!pair.down || !pair.up)
      return makeError(file + ": module '" + module + "' has lora_" +
                       (pair.down ? "A" : "B") + " but no lora_" +
                       (pair.down ? "B" : "A"));
    double alpha = alphaOf(*config, module);
    auto factorOf = [&](int64_t rank) {
      return adapter.scale * alpha /
             (config->rsLora ? std::sqrt(double(rank)) : double(rank));
    };
    if (llvm::Error err = mergePair(
            store, target, *pair.down, pair.downName, *pair.up, pair.upName,
            pair.embedding || config->fanInFanOut, factorOf, file))
      return std::move(err);
    changed.push_back(target);
  }
  size_t mergedCount = changed.size();
  for (const auto &[savedName, tensor] : saved) {
    std::string name = baseName(store, savedName);
    const WeightTensor *base = store.lookup(name);
    if (!base)
      return makeError(file + ": the base checkpoint has no '" + name +
                       "' for the adapter's saved module tensor");
    if (base->shape() != tensor->shape())
      return makeError(file + ": saved module tensor '" + name + "' is " +
                       formatShape(tensor->shape()) + ", the base's " +
                       formatShape(base->shape()));
    store.add(name, *tensor);
    changed.push_back(name);
  }
  store.keepFilesOf(std::move(tensors));
  notes.push_back(adapter.directory + ": merged LoRA into " +
                  std::to_string(mergedCount) + " weights" +
                  (saved.empty()
                       ? ""
                       : ", replaced " + std::to_string(saved.size()) +
                             " with the adapter's saved modules") +
                  " (scale " + shortNumber(adapter.scale) + ")");
  return changed;
}

llvm::Expected<std::vector<std::string>>
mlir::tfm::mergeGgufLoraAdapter(const LoraAdapterSpec &adapter,
                                WeightStore &store,
                                std::vector<std::string> &notes) {
  const std::string &path = adapter.directory;
  if (llvm::sys::fs::is_directory(path))
    return makeError("--lora: '" + path +
                     "' is a PEFT folder, whose tensors carry Hugging Face "
                     "names; a model read from GGUF takes llama.cpp's GGUF "
                     "LoRA files (convert_lora_to_gguf.py)");
  llvm::Expected<GgufFile> file = GgufFile::open(path);
  if (!file)
    return file.takeError();
  llvm::Expected<std::optional<llvm::StringRef>> type =
      file->optionalString("general.type");
  if (!type)
    return type.takeError();
  llvm::Expected<std::optional<llvm::StringRef>> kind =
      file->optionalString("adapter.type");
  if (!kind)
    return kind.takeError();
  if (*type != std::optional<llvm::StringRef>("adapter") ||
      *kind != std::optional<llvm::StringRef>("lora"))
    return makeError(path + ": not a LoRA adapter (general.type 'adapter', "
                            "adapter.type 'lora'): a model's GGUF file?");
  llvm::Expected<std::optional<double>> alpha =
      file->optionalReal("adapter.lora.alpha");
  if (!alpha)
    return alpha.takeError();
  std::string source = llvm::sys::path::filename(path).str();
  // W.lora_a [r, in] and W.lora_b [out, r] by W.
  std::map<std::string, std::pair<const GgufTensor *, const GgufTensor *>>
      pairs;
  for (const GgufTensor &tensor : file->tensors()) {
    llvm::StringRef name(tensor.name);
    bool down = name.ends_with(".lora_a");
    if (!down && !name.ends_with(".lora_b"))
      return makeError(path + ": tensor '" + tensor.name +
                       "' is not a LoRA A or B matrix (NAME.lora_a, "
                       "NAME.lora_b)");
    auto &pair = pairs[name.drop_back(7).str()];
    (down ? pair.first : pair.second) = &tensor;
  }
  if (pairs.empty())
    return makeError(path + ": no LoRA tensors");
  std::vector<std::string> changed;
  for (const auto &[target, pair] : pairs) {
    if (!pair.first || !pair.second)
      return makeError(path + ": '" + target + "' has lora_" +
                       (pair.first ? "a" : "b") + " but no lora_" +
                       (pair.first ? "b" : "a"));
    auto view = [&](const GgufTensor *t) {
      return WeightTensor::view(t->shape, t->dtype, file->bytes() + t->offset,
                                file->isMapped(), source);
    };
    // llama.cpp's scale: alpha / r where the file gives alpha.
    auto factorOf = [&](int64_t rank) {
      return *alpha && **alpha != 0 ? adapter.scale * **alpha / double(rank)
                                    : double(adapter.scale);
    };
    if (llvm::Error err =
            mergePair(store, target, view(pair.first), pair.first->name,
                      view(pair.second), pair.second->name,
                      /*transposed=*/false, factorOf, path))
      return std::move(err);
    changed.push_back(target);
  }
  notes.push_back(path + ": merged LoRA into " +
                  std::to_string(changed.size()) + " weights (scale " +
                  shortNumber(adapter.scale) + ")");
  return changed;
}
