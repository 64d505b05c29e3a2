//===- Gguf.cpp - llama.cpp's GGUF container, read and checked ----------===//

#include "frontend/formats/Gguf.h"
#include "frontend/formats/ErrorMessages.h"
#include "frontend/formats/StoredDtypes.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/MathExtras.h"

#include <algorithm>
#include <cstring>
#include <limits>

using namespace mlir;
using namespace mlir::tfm;
using llvm::Error;

namespace {

constexpr uint32_t kMagic = 0x46554747; // "GGUF" read little endian
constexpr uint64_t kDefaultAlignment = 32;
/// Limits well past any real model that keep sizes far from overflowing.
constexpr uint64_t kMaxDims = 4;
constexpr int64_t kMaxElements = int64_t(1) << 40;
constexpr int kMaxArrayNesting = 3;

enum ValueType : uint32_t {
  Uint8, Int8, Uint16, Int16, Uint32, Int32, Float32, Bool, String, Array,
  Uint64, Int64, Float64, NumValueTypes
};

/// Bytes of a value of `type` that is not a string or an array.
uint64_t scalarBytes(uint32_t type) {
  switch (type) {
  case Uint8: case Int8: case Bool: return 1;
  case Uint16: case Int16: return 2;
  case Uint32: case Int32: case Float32: return 4;
  default: return 8;
  }
}

/// GGML's type names by number, for messages about types tfmc lacks.
const char *ggmlTypeName(uint32_t type) {
  static const char *names[] = {
      "F32",     "F16",    "Q4_0",    "Q4_1",  "Q4_2",   "Q4_3",   "Q5_0",
      "Q5_1",    "Q8_0",   "Q8_1",    "Q2_K",  "Q3_K",   "Q4_K",   "Q5_K",
      "Q6_K",    "Q8_K",   "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL",
      "IQ3_S",   "IQ2_S",  "IQ4_XS",  "I8",    "I16",    "I32",    "I64",
      "F64",     "IQ1_M",  "BF16",    "Q4_0_4_4", "Q4_0_4_8", "Q4_0_8_8",
      "TQ1_0",   "TQ2_0",  "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8",
      "MXFP4",   "NVFP4",  "Q1_0",    "Q2_0"};
  return type < std::size(names) ? names[type] : nullptr;
}

} // namespace

namespace mlir::tfm {

/// Reads a GGUF file front to back, checking each field against the bytes
/// left before using it.
class GgufParser {
public:
  explicit GgufParser(GgufFile &file)
      : file(file), data(file.buffer->getBuffer()) {}

  Error parse() {
    uint32_t magic, version;
    if (Error err = readU32(magic, "the magic"))
      return err;
    if (magic != kMagic)
      return makeError(file.filePath + ": not a GGUF file (it does not start "
                                       "with \"GGUF\")");
    if (Error err = readU32(version, "the version"))
      return err;
    if (version == 0x02000000 || version == 0x03000000)
      return fail("big-endian GGUF files are not supported");
    if (version != 2 && version != 3)
      return fail("GGUF version " + llvm::Twine(version) +
                  " is not supported (versions 2 and 3 are)");
    file.formatVersion = version;
    uint64_t tensorCount, metadataCount;
    if (Error err = readU64(tensorCount, "the tensor count"))
      return err;
    if (Error err = readU64(metadataCount, "the metadata count"))
      return err;
    // Every GGUF file has general.architecture; a count of 0 would read
    // the pairs as tensor records.
    if (metadataCount == 0)
      return makeError(file.filePath + ": the metadata count (at byte 16) "
                                       "is 0, but a GGUF file holds at "
                                       "least general.architecture");
    // A metadata pair takes at least 13 bytes, a tensor record 32.
    if (metadataCount > left() / 13)
      return fail("metadata count " + llvm::Twine(metadataCount) +
                  " cannot fit in the " + llvm::Twine(left()) +
                  " bytes left");
    for (uint64_t i = 0; i < metadataCount; ++i)
      if (Error err = readPair(i))
        return err;
    if (tensorCount > left() / 32)
      return fail("tensor count " + llvm::Twine(tensorCount) +
                  " cannot fit in the " + llvm::Twine(left()) +
                  " bytes left");
    for (uint64_t i = 0; i < tensorCount; ++i)
      if (Error err = readTensorRecord(i)) {
        // The first record is where metadata read out of step (an array
        // or a count short of what the file holds) shows: say where the
        // pairs were taken to end.
        if (i != 0 || lastKey.empty())
          return err;
        return makeError(llvm::toString(std::move(err)) +
                         "; the tensor records were taken to start after "
                         "metadata '" + lastKey + "' at byte " +
                         llvm::Twine(lastKeyAt) +
                         ": does every count before them match the file?");
      }
    return placeTensorData();
  }

private:
  GgufFile &file;
  llvm::StringRef data;
  uint64_t at = 0;
  /// The last metadata pair read and where it starts, for messages about
  /// what follows it.
  llvm::StringRef lastKey;
  uint64_t lastKeyAt = 0;

  uint64_t left() const { return data.size() - at; }

  Error fail(const llvm::Twine &what) const {
    return makeError(file.filePath + ": " + what + " (at byte " +
                     llvm::Twine(at) + ")");
  }
  Error need(uint64_t bytes, const llvm::Twine &what) const {
    if (bytes <= left())
      return Error::success();
    return fail(what + " needs " + llvm::Twine(bytes) + " bytes, " +
                llvm::Twine(left()) + " are left (truncated file?)");
  }
  template <typename T> Error readInt(T &value, const llvm::Twine &what) {
    if (Error err = need(sizeof(T), what))
      return err;
    value = llvm::support::endian::read<T, llvm::endianness::little>(
        data.data() + at);
    at += sizeof(T);
    return Error::success();
  }
  Error readU32(uint32_t &v, const llvm::Twine &what) { return readInt(v, what); }
  Error readU64(uint64_t &v, const llvm::Twine &what) { return readInt(v, what); }
  Error readString(llvm::StringRef &s, const llvm::Twine &what) {
    uint64_t length;
    if (Error err = readU64(length, what + "'s length"))
      return err;
    if (Error err = need(length, what))
      return err;
    s = data.substr(at, length);
    at += length;
    return Error::success();
  }

  Error readPair(uint64_t index) {
    uint64_t start = at;
    llvm::StringRef key;
    if (Error err = readString(key, "metadata key " + llvm::Twine(index)))
      return err;
    // Keys are ASCII names (the GGUF spec's lower_snake_case, dot
    // separated): anything else is the bytes of a value the reader was not
    // told about, an array or a count that claims fewer than it holds.
    if (Error err = checkKey(key, index, start))
      return err;
    uint32_t type;
    if (Error err = readU32(type, "the type of '" + key + "'"))
      return err;
    GgufValue value;
    if (Error err = readValue(type, value, key, 0))
      return err;
    if (!file.metadata.try_emplace(key, std::move(value)).second)
      return fail("metadata key '" + key + "' appears twice");
    lastKey = key;
    lastKeyAt = start;
    return Error::success();
  }

  /// Refuses key `index` (read at byte `start`) unless it is a GGUF key.
  Error checkKey(llvm::StringRef key, uint64_t index, uint64_t start) {
    bool valid = !key.empty() && key.size() <= 65535 &&
                 llvm::all_of(key, [](char c) {
                   return llvm::isAlnum(c) || c == '_' || c == '.' || c == '-';
                 });
    if (valid)
      return Error::success();
    std::string shown = key.take_front(32).str();
    for (char &c : shown)
      if (!llvm::isPrint(c))
        c = '?';
    if (key.size() > 32)
      shown += "...";
    std::string previous;
    if (!lastKey.empty())
      previous = (": the value of '" + lastKey + "' at byte " +
                  llvm::Twine(lastKeyAt) + " may hold more than its count says")
                     .str();
    return makeError(file.filePath + ": metadata key " + llvm::Twine(index) +
                     " at byte " + llvm::Twine(start) + " ('" + shown +
                     "') is not a GGUF key (ASCII letters, digits, '_', '-' "
                     "and '.')" +
                     previous);
  }

  /// One value of `type` into `out` (nested arrays are checked and
  /// skipped: no LLaMA key uses them).
  Error readValue(uint32_t type, GgufValue &out, llvm::StringRef key,
                  int depth) {
    if (type >= NumValueTypes)
      return fail("metadata '" + key + "' has unknown value type " +
                  llvm::Twine(type));
    if (type == String) {
      out.kind = GgufValue::Kind::String;
      return readString(out.string, "metadata '" + key + "'");
    }
    if (type == Array)
      return readArray(out, key, depth);
    uint64_t bytes = scalarBytes(type);
    if (Error err = need(bytes, "metadata '" + key + "'"))
      return err;
    const char *p = data.data() + at;
    at += bytes;
    using namespace llvm::support::endian;
    switch (type) {
    case Uint8: case Bool: out.integer = uint8_t(*p); break;
    case Int8: out.integer = int8_t(*p); break;
    case Uint16: out.integer = read16le(p); break;
    case Int16: out.integer = int16_t(read16le(p)); break;
    case Uint32: out.integer = read32le(p); break;
    case Int32: out.integer = int32_t(read32le(p)); break;
    case Int64: out.integer = int64_t(read64le(p)); break;
    case Uint64:
      // Past int64: saturated, so that range checks refuse it.
      out.integer = int64_t(std::min<uint64_t>(
          read64le(p), std::numeric_limits<int64_t>::max()));
      break;
    case Float32: {
      uint32_t bits = read32le(p);
      float f;
      std::memcpy(&f, &bits, 4);
      out.kind = GgufValue::Kind::Real;
      out.real = f;
      return Error::success();
    }
    case Float64: {
      uint64_t bits = read64le(p);
      std::memcpy(&out.real, &bits, 8);
      out.kind = GgufValue::Kind::Real;
      return Error::success();
    }
    }
    out.kind = GgufValue::Kind::Integer;
    out.real = double(out.integer);
    return Error::success();
  }

  Error readArray(GgufValue &out, llvm::StringRef key, int depth) {
    if (depth >= kMaxArrayNesting)
      return fail("metadata '" + key + "' nests arrays more than " +
                  llvm::Twine(kMaxArrayNesting) + " deep");
    uint32_t elementType;
    uint64_t count;
    if (Error err = readU32(elementType, "the element type of '" + key + "'"))
      return err;
    if (Error err = readU64(count, "the length of '" + key + "'"))
      return err;
    if (elementType >= NumValueTypes)
      return fail("metadata '" + key + "' has unknown element type " +
                  llvm::Twine(elementType));
    // Every element takes at least this many bytes: refuse counts the
    // file cannot hold before reserving anything.
    uint64_t minBytes = elementType == String || elementType == Array
                            ? 8
                            : scalarBytes(elementType);
    if (count > left() / minBytes)
      return fail("metadata '" + key + "' claims " + llvm::Twine(count) +
                  " elements, more than the " + llvm::Twine(left()) +
                  " bytes left can hold");
    out.kind = GgufValue::Kind::Array;
    out.stringArray = elementType == String;
    out.arrayOfArrays = elementType == Array;
    if (out.stringArray)
      out.strings.reserve(count);
    else if (elementType != Array)
      out.numbers.reserve(count);
    for (uint64_t i = 0; i < count; ++i) {
      GgufValue element;
      if (Error err = readValue(elementType, element, key, depth + 1))
        return err;
      if (out.stringArray)
        out.strings.push_back(element.string);
      else if (elementType != Array)
        out.numbers.push_back(element.kind == GgufValue::Kind::Real
                                  ? element.real
                                  : double(element.integer));
    }
    return Error::success();
  }

  Error readTensorRecord(uint64_t index) {
    uint64_t start = at;
    llvm::StringRef name;
    if (Error err = readString(name, "the name of tensor " + llvm::Twine(index)))
      return err;
    // A metadata key where a tensor's name should be: the header's
    // metadata count is short of the pairs the file holds.
    if (isMetadataKey(name))
      return makeError(file.filePath + ": tensor record " +
                       llvm::Twine(index) + " at byte " + llvm::Twine(start) +
                       " is named '" + name +
                       "', a metadata key: the file holds more metadata "
                       "pairs than the header's count says");
    GgufTensor tensor;
    tensor.name = name.str();
    std::string where = ("tensor '" + name + "'").str();
    uint32_t rank;
    if (Error err = readU32(rank, where + "'s rank"))
      return err;
    if (rank == 0 || rank > kMaxDims)
      return fail(where + " has " + llvm::Twine(rank) +
                  " dims (1 to 4 are valid)");
    int64_t elements = 1;
    for (uint32_t d = 0; d < rank; ++d) {
      uint64_t dim;
      if (Error err = readU64(dim, where + "'s dims"))
        return err;
      if (dim == 0 || dim > uint64_t(kMaxElements) ||
          elements > kMaxElements / int64_t(dim))
        return fail(where + " has dim " + llvm::Twine(dim) +
                    (dim ? ", too many elements" : ", which is empty"));
      elements *= int64_t(dim);
      tensor.shape.insert(tensor.shape.begin(), int64_t(dim));
    }
    uint32_t type;
    if (Error err = readU32(type, where + "'s type"))
      return err;
    std::optional<WeightFormat> dtype = formatOfGgmlType(type);
    if (!dtype) {
      const char *known = ggmlTypeName(type);
      std::string read;
      for (const WeightFormatTraits &row : kWeightFormats)
        if (isCheckpointFormat(row.format))
          read += (read.empty() ? "" : ", ") + std::string(row.checkpointName);
      return fail(where + " has GGML type " +
                  (known ? llvm::Twine(known) : llvm::Twine(type)) +
                  (known ? ", which tfmc does not read (it reads " + read +
                               "); requantize the model with llama-quantize"
                         : llvm::Twine(", which is not a GGML type")));
    }
    tensor.dtype = *dtype;
    int64_t blockElements = checkpointBlockElements(*dtype);
    if (tensor.shape.back() % blockElements != 0)
      return fail(where + " has " + llvm::Twine(tensor.shape.back()) +
                  " elements per row, not a multiple of " +
                  checkpointName(*dtype) + "'s block of " +
                  llvm::Twine(blockElements));
    tensor.bytes = uint64_t(checkpointStoredBytes(*dtype, elements));
    if (Error err = readU64(tensor.offset, where + "'s offset"))
      return err;
    for (const GgufTensor &other : file.tensorList)
      if (other.name == tensor.name)
        return fail("tensor '" + name + "' appears twice");
    file.tensorList.push_back(std::move(tensor));
    return Error::success();
  }

  /// Whether `name` is in a metadata namespace (general., tokenizer., or
  /// the architecture's), where no tensor's name is.
  bool isMetadataKey(llvm::StringRef name) const {
    if (name.starts_with("general.") || name.starts_with("tokenizer."))
      return true;
    auto arch = file.metadata.find("general.architecture");
    return arch != file.metadata.end() &&
           arch->second.kind == GgufValue::Kind::String &&
           !arch->second.string.empty() &&
           name.starts_with((arch->second.string + ".").str());
  }

  /// Data follows the records at the next multiple of the alignment; each
  /// tensor's offset is relative to it.
  Error placeTensorData() {
    uint64_t alignment = kDefaultAlignment;
    if (const GgufValue *value = file.lookup("general.alignment")) {
      if (value->kind != GgufValue::Kind::Integer || value->integer <= 0 ||
          value->integer > (1 << 20) || !llvm::isPowerOf2_64(value->integer))
        return makeError(file.filePath +
                         ": general.alignment must be a power of two up to "
                         "2^20");
      alignment = uint64_t(value->integer);
    }
    uint64_t dataStart = llvm::alignTo(at, alignment);
    uint64_t dataBytes = dataStart <= data.size() ? data.size() - dataStart : 0;
    if (!file.tensorList.empty() && dataStart > data.size())
      return makeError(file.filePath + ": the file ends before its tensor "
                                       "data (truncated?)");
    for (GgufTensor &tensor : file.tensorList) {
      if (tensor.offset % alignment != 0)
        return makeError(file.filePath + ": tensor '" + tensor.name +
                         "' is at offset " + llvm::Twine(tensor.offset) +
                         ", not a multiple of the alignment " +
                         llvm::Twine(alignment));
      if (tensor.offset > dataBytes || tensor.bytes > dataBytes - tensor.offset)
        return makeError(
            file.filePath + ": tensor '" + tensor.name + "' (" +
            checkpointName(tensor.dtype) + ", " + llvm::Twine(tensor.bytes) +
            " bytes at offset " + llvm::Twine(tensor.offset) +
            ") runs past the end of the file's " + llvm::Twine(dataBytes) +
            " bytes of tensor data (truncated?)");
      tensor.offset += dataStart;
    }
    // No two tensors share bytes.
    std::vector<const GgufTensor *> byOffset;
    for (const GgufTensor &tensor : file.tensorList)
      byOffset.push_back(&tensor);
    llvm::sort(byOffset, [](const GgufTensor *a, const GgufTensor *b) {
      return a->offset < b->offset;
    });
    for (size_t i = 1; i < byOffset.size(); ++i)
      if (byOffset[i - 1]->offset + byOffset[i - 1]->bytes >
          byOffset[i]->offset)
        return makeError(file.filePath + ": tensors '" +
                         byOffset[i - 1]->name + "' and '" +
                         byOffset[i]->name + "' overlap");
    return Error::success();
  }
};

} // namespace mlir::tfm

llvm::Expected<GgufFile> GgufFile::open(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return makeError("cannot read '" + path +
                     "': " + buffer.getError().message());
  GgufFile file;
  file.filePath = path.str();
  file.buffer = std::move(*buffer);
  if (Error err = GgufParser(file).parse())
    return std::move(err);
  return std::move(file);
}

const GgufValue *GgufFile::lookup(llvm::StringRef key) const {
  auto it = metadata.find(key);
  return it == metadata.end() ? nullptr : &it->second;
}

llvm::Expected<std::optional<int64_t>>
GgufFile::optionalInteger(llvm::StringRef key, int64_t max) const {
  const GgufValue *value = lookup(key);
  if (!value)
    return std::nullopt;
  if (value->kind != GgufValue::Kind::Integer)
    return makeError(filePath + ": metadata '" + key +
                     "' must be an integer");
  if (value->integer < 0 || value->integer > max)
    return makeError(filePath + ": metadata '" + key + "' is " +
                     llvm::Twine(value->integer) + ", outside 0 to " +
                     llvm::Twine(max));
  return value->integer;
}

llvm::Expected<int64_t> GgufFile::integer(llvm::StringRef key,
                                          int64_t max) const {
  llvm::Expected<std::optional<int64_t>> value = optionalInteger(key, max);
  if (!value)
    return value.takeError();
  if (!*value)
    return makeError(filePath + ": metadata '" + key + "' is missing");
  return **value;
}

llvm::Expected<std::optional<double>>
GgufFile::optionalReal(llvm::StringRef key) const {
  const GgufValue *value = lookup(key);
  if (!value)
    return std::nullopt;
  if (value->kind != GgufValue::Kind::Real &&
      value->kind != GgufValue::Kind::Integer)
    return makeError(filePath + ": metadata '" + key + "' must be a number");
  return value->real;
}

llvm::Expected<std::optional<llvm::StringRef>>
GgufFile::optionalString(llvm::StringRef key) const {
  const GgufValue *value = lookup(key);
  if (!value)
    return std::nullopt;
  if (value->kind != GgufValue::Kind::String)
    return makeError(filePath + ": metadata '" + key + "' must be a string");
  return value->string;
}

llvm::Expected<const GgufValue *> GgufFile::array(llvm::StringRef key,
                                                  bool strings) const {
  const GgufValue *value = lookup(key);
  if (!value)
    return makeError(filePath + ": metadata '" + key + "' is missing");
  if (value->kind != GgufValue::Kind::Array || value->stringArray != strings ||
      value->arrayOfArrays)
    return makeError(filePath + ": metadata '" + key + "' must be an array of " +
                     (strings ? "strings" : "numbers"));
  return value;
}
