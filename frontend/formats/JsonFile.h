//===- JsonFile.h - reading JSON files with located errors ------*- C++ -*-===//
//
// config.json, tokenizer files and safetensors indexes are all read the same
// way: a missing file, malformed JSON and nesting too deep to parse
// (JsonDepth.h) are user errors naming the file.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FORMATS_JSONFILE_H
#define TFM_FRONTEND_FORMATS_JSONFILE_H

#include "frontend/formats/ErrorMessages.h"
#include "frontend/formats/JsonDepth.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <memory>

namespace mlir::tfm {

/// The bytes of `path`; the error names the file.
inline llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readJsonBytes(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return makeError("cannot read '" + path +
                     "': " + buffer.getError().message());
  return std::move(*buffer);
}

/// Reads and parses `path`; the error names the file and, for bad JSON, the
/// position (or the depth, for nesting past kMaxJsonDepth).
inline llvm::Expected<llvm::json::Value> readJsonFile(llvm::StringRef path) {
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      readJsonBytes(path);
  if (!buffer)
    return buffer.takeError();
  return parseBoundedJson((*buffer)->getBuffer(), path);
}

/// The JSON object `path` holds; any other value is an error naming it.
inline llvm::Expected<llvm::json::Object>
readJsonObjectFile(llvm::StringRef path) {
  llvm::Expected<llvm::json::Value> json = readJsonFile(path);
  if (!json)
    return json.takeError();
  llvm::json::Object *object = json->getAsObject();
  if (!object)
    return makeError(path + ": expected a JSON object");
  return std::move(*object);
}

/// `path` parsed, shared with every other reader of the same bytes. A
/// directory's tokenizer.json (Qwen2's is 7 MB) is read by the BOS rule,
/// the WordPiece probe and the BPE reader, each of which parsed it again.
/// The last file parsed is kept with its bytes; the file is read every time
/// and parsed again when its bytes differ, so a rewritten file (as the
/// fuzzers rewrite one path) is never answered from the cache.
llvm::Expected<std::shared_ptr<const llvm::json::Value>>
readSharedJsonFile(llvm::StringRef path);

/// The JSON object in `path`, which `holder` keeps, or `fallback` when
/// there is no such file; malformed JSON or another value is an error.
inline llvm::Expected<const llvm::json::Object *>
readOptionalJsonObject(llvm::StringRef path, const llvm::json::Object *fallback,
                       std::optional<llvm::json::Value> &holder) {
  if (!llvm::sys::fs::exists(path))
    return fallback;
  llvm::Expected<llvm::json::Value> json = readJsonFile(path);
  if (!json)
    return json.takeError();
  holder = std::move(*json);
  if (const llvm::json::Object *object = holder->getAsObject())
    return object;
  return makeError(path + ": expected a JSON object");
}

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FORMATS_JSONFILE_H
