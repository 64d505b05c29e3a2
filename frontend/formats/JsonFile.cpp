//===- JsonFile.cpp - JSON files parsed once for all their readers -------===//

#include "frontend/formats/JsonFile.h"

#include <mutex>

using namespace mlir;
using namespace mlir::tfm;

llvm::Expected<std::shared_ptr<const llvm::json::Value>>
mlir::tfm::readSharedJsonFile(llvm::StringRef path) {
  static std::mutex mutex;
  static std::string lastBytes;
  static std::shared_ptr<const llvm::json::Value> lastValue;
  llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>> buffer =
      readJsonBytes(path);
  if (!buffer)
    return buffer.takeError();
  llvm::StringRef bytes = (*buffer)->getBuffer();
  std::lock_guard<std::mutex> lock(mutex);
  if (lastValue && bytes == lastBytes)
    return lastValue;
  llvm::Expected<llvm::json::Value> parsed = parseBoundedJson(bytes, path);
  if (!parsed)
    return parsed.takeError();
  lastBytes = bytes.str();
  lastValue = std::make_shared<const llvm::json::Value>(std::move(*parsed));
  return lastValue;
}
