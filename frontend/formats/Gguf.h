//===- Gguf.h - llama.cpp's GGUF container, read and checked ----*- C++ -*-===//
//
// A GGUF file (versions 2 and 3, little endian): "GGUF", a version, the
// tensor and metadata counts, metadata as typed key/value pairs, one
// record per tensor (name, dims innermost first, GGML type, offset), then
// the tensor data, aligned to general.alignment (default 32). Every count,
// length, dim, offset and size is checked against the file before it is
// used: a crafted header gets an error naming the field, never an
// allocation or read past the end.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FORMATS_GGUF_H
#define TFM_FRONTEND_FORMATS_GGUF_H

#include "frontend/formats/WeightStore.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::tfm {

/// A metadata value: a number (integers and booleans as `integer`, floats
/// as `real`), a string, or an array of numbers or strings. Strings are
/// views of the mapped file.
struct GgufValue {
  enum class Kind { Integer, Real, String, Array };
  Kind kind = Kind::Integer;
  int64_t integer = 0;
  double real = 0;
  llvm::StringRef string;
  /// Arrays: their elements, in `strings` (string arrays) or `numbers`.
  bool stringArray = false;
  /// An array of arrays, whose elements are checked but not kept.
  bool arrayOfArrays = false;
  std::vector<llvm::StringRef> strings;
  std::vector<double> numbers;
};

struct GgufTensor {
  std::string name;
  /// Outermost dim first, as the WeightStore holds tensors (GGUF lists
  /// them innermost first).
  std::vector<int64_t> shape;
  WeightFormat dtype;
  /// Bytes from the start of the file.
  uint64_t offset, bytes;
};

class GgufFile {
public:
  /// Maps and checks `path`.
  static llvm::Expected<GgufFile> open(llvm::StringRef path);

  const std::string &path() const { return filePath; }
  uint32_t version() const { return formatVersion; }
  const std::vector<GgufTensor> &tensors() const { return tensorList; }
  const uint8_t *bytes() const {
    return reinterpret_cast<const uint8_t *>(buffer->getBufferStart());
  }
  bool isMapped() const {
    return buffer->getBufferKind() == llvm::MemoryBuffer::MemoryBuffer_MMap;
  }
  /// Hands the mapping to a store whose tensors view it.
  std::unique_ptr<llvm::MemoryBuffer> releaseBuffer() {
    return std::move(buffer);
  }

  const GgufValue *lookup(llvm::StringRef key) const;
  /// Typed reads of metadata, with errors naming the key and the file:
  /// `integer` wants a non-negative integer at most `max`; the optional
  /// forms give nullopt for a missing key and fail only on a wrong type.
  llvm::Expected<int64_t> integer(llvm::StringRef key, int64_t max) const;
  llvm::Expected<std::optional<int64_t>> optionalInteger(llvm::StringRef key,
                                                         int64_t max) const;
  llvm::Expected<std::optional<double>> optionalReal(llvm::StringRef key) const;
  llvm::Expected<std::optional<llvm::StringRef>>
  optionalString(llvm::StringRef key) const;
  /// An array of `strings` or of numbers; error when missing or mistyped.
  llvm::Expected<const GgufValue *> array(llvm::StringRef key,
                                          bool strings) const;

private:
  std::string filePath;
  std::unique_ptr<llvm::MemoryBuffer> buffer;
  uint32_t formatVersion = 0;
  llvm::StringMap<GgufValue> metadata;
  std::vector<GgufTensor> tensorList;

  friend class GgufParser;
};

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FORMATS_GGUF_H
