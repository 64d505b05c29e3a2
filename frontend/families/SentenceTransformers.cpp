//===- SentenceTransformers.cpp - sentence-transformers directories -----===//
//
// A sentence-transformers model is a Hugging Face encoder directory with
// modules.json listing what follows the transformer: Pooling (its
// config.json in the module's folder says which pooling) and Normalize.
// Modules tfmc does not build (Dense projections, ...) are refused by name.
//
//===----------------------------------------------------------------------===//

#include "frontend/families/EncoderFamilies.h"
#include "frontend/formats/ErrorMessages.h"
#include "frontend/formats/JsonFile.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// The pooling a 1_Pooling/config.json asks for: exactly one of its modes.
llvm::Error readPooling(llvm::StringRef path, EncoderSpec &spec) {
  llvm::Expected<llvm::json::Object> config = readJsonObjectFile(path);
  if (!config)
    return config.takeError();
  struct Mode {
    const char *key;
    std::optional<PoolingKind> kind; // none: not supported
  };
  const Mode modes[] = {{"pooling_mode_cls_token", PoolingKind::cls},
                        {"pooling_mode_mean_tokens", PoolingKind::mean},
                        {"pooling_mode_max_tokens", PoolingKind::max},
                        {"pooling_mode_mean_sqrt_len_tokens", std::nullopt},
                        {"pooling_mode_weightedmean_tokens", std::nullopt},
                        {"pooling_mode_lasttoken", std::nullopt}};
  std::vector<std::string> chosen;
  for (const Mode &mode : modes) {
    if (!config->getBoolean(mode.key).value_or(false))
      continue;
    chosen.push_back(mode.key);
    if (!mode.kind)
      return makeError(path + ": unsupported pooling '" + mode.key +
                       "' (supported: cls, mean, max)");
    spec.pooling = mode.kind;
  }
  if (chosen.size() != 1)
    return makeError(path + ": expected exactly one pooling mode, got " +
                     llvm::Twine(chosen.size()) +
                     " (concatenated poolings are not supported)");
  if (std::optional<int64_t> width =
          config->getInteger("word_embedding_dimension");
      width && *width != spec.hiddenSize)
    return makeError(path + ": word_embedding_dimension is " +
                     llvm::Twine(*width) + ", the model's hidden size " +
                     llvm::Twine(spec.hiddenSize));
  return llvm::Error::success();
}

} // namespace

llvm::Error mlir::tfm::readSentenceTransformerModules(
    llvm::StringRef directory, EncoderSpec &spec) {
  llvm::SmallString<256> modulesPath(directory);
  llvm::sys::path::append(modulesPath, "modules.json");
  if (!llvm::sys::fs::exists(modulesPath))
    return llvm::Error::success();
  llvm::Expected<llvm::json::Value> json = readJsonFile(modulesPath);
  if (!json)
    return json.takeError();
  const llvm::json::Array *modules = json->getAsArray();
  if (!modules)
    return makeError(modulesPath + ": expected a JSON array of modules");
  for (const llvm::json::Value &entry : *modules) {
    const llvm::json::Object *module = entry.getAsObject();
    std::optional<llvm::StringRef> type =
        module ? module->getString("type") : std::nullopt;
    std::optional<llvm::StringRef> path =
        module ? module->getString("path") : std::nullopt;
    if (!type || !path)
      return makeError(modulesPath +
                       ": each module needs a string 'type' and 'path'");
    llvm::StringRef kind = type->rsplit('.').second;
    if (kind.empty())
      kind = *type;
    if (kind == "Transformer") {
      if (!path->empty())
        return makeError(modulesPath + ": the Transformer module is in '" +
                         *path + "', expected the model's own folder");
    } else if (kind == "Pooling") {
      llvm::SmallString<256> config(directory);
      llvm::sys::path::append(config, *path, "config.json");
      if (llvm::Error err = readPooling(config, spec))
        return err;
    } else if (kind == "Normalize") {
      spec.normalize = true;
    } else {
      return makeError(modulesPath + ": unsupported module '" + *type +
                       "' (supported: Transformer, Pooling, Normalize)");
    }
  }
  if (!spec.pooling)
    return makeError(modulesPath + ": no Pooling module: a sentence "
                                   "embedder needs one");
  return llvm::Error::success();
}
