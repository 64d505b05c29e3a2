//===- Safetensors.cpp - reader of .safetensors files -------------------===//
//
// Format: an 8-byte little-endian header length N, N bytes of JSON mapping
// tensor names to {dtype, shape, data_offsets: [begin, end]} (offsets
// relative to the byte after the header), an optional "__metadata__" entry,
// then the data.
//
//===----------------------------------------------------------------------===//

#include "frontend/formats/Safetensors.h"
#include "frontend/formats/ErrorMessages.h"
#include "frontend/formats/JsonDepth.h"
#include "frontend/formats/JsonFile.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <cstring>
#include <set>

using namespace mlir;
using namespace mlir::tfm;
using llvm::Error;

namespace {

/// A dtype tfmc reads: a float's WeightFormat, or none for U8 (bytes kept
/// as stored: ByteTensor).
struct DtypeInfo {
  llvm::StringRef name;
  int64_t bytes;
  std::optional<WeightFormat> dtype;
};

std::optional<DtypeInfo> lookupDtype(llvm::StringRef name) {
  for (DtypeInfo info : {DtypeInfo{"F32", 4, WeightFormat::F32},
                         {"F16", 2, WeightFormat::F16},
                         {"BF16", 2, WeightFormat::BF16},
                         {"U8", 1, std::nullopt}})
    if (info.name == name)
      return info;
  return std::nullopt;
}

struct Entry {
  std::string name;
  std::string dtype;
  std::vector<int64_t> shape;
  uint64_t begin, end;
};

Error parseEntry(llvm::StringRef path, llvm::StringRef name,
                 const llvm::json::Value &value, uint64_t dataSize,
                 Entry &entry) {
  auto fail = [&](const llvm::Twine &what) {
    return makeError(path + ": tensor '" + name + "': " + what);
  };
  const llvm::json::Object *object = value.getAsObject();
  if (!object)
    return fail("expected a JSON object");
  std::optional<llvm::StringRef> dtype = object->getString("dtype");
  if (!dtype)
    return fail("missing string field 'dtype'");
  std::optional<DtypeInfo> info = lookupDtype(*dtype);
  if (!info)
    return fail("unsupported dtype '" + *dtype + "' (supported: F32, F16, BF16)");
  const llvm::json::Array *shape = object->getArray("shape");
  if (!shape)
    return fail("missing array field 'shape'");
  int64_t count = 1;
  for (const llvm::json::Value &d : *shape) {
    std::optional<int64_t> dim = d.getAsInteger();
    if (!dim || *dim < 0)
      return fail("shape entries must be non-negative integers");
    entry.shape.push_back(*dim);
    count *= *dim;
  }
  const llvm::json::Array *offsets = object->getArray("data_offsets");
  std::optional<int64_t> begin, end;
  if (offsets && offsets->size() == 2) {
    begin = (*offsets)[0].getAsInteger();
    end = (*offsets)[1].getAsInteger();
  }
  if (!begin || !end || *begin < 0 || *end < *begin)
    return fail("'data_offsets' must be two integers [begin, end], begin <= end");
  if (uint64_t(*end) > dataSize)
    return fail("data_offsets [" + llvm::Twine(*begin) + ", " + llvm::Twine(*end) +
                "] run past the end of the data (" + llvm::Twine(dataSize) +
                " bytes): the file is truncated");
  if (*end - *begin != count * info->bytes)
    return fail("shape " + formatShape(entry.shape) + " of " + *dtype +
                " needs " + llvm::Twine(count * info->bytes) +
                " bytes, data_offsets span " + llvm::Twine(*end - *begin));
  entry.name = name.str();
  entry.dtype = dtype->str();
  entry.begin = *begin;
  entry.end = *end;
  return Error::success();
}

} // namespace

Error mlir::tfm::readSafetensorsFile(llvm::StringRef path, WeightStore &store) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return makeError("cannot read '" + path + "': " +
                     buffer.getError().message());
  llvm::StringRef bytes = (*buffer)->getBuffer();
  if (bytes.size() < 8)
    return makeError(path + ": file of " + llvm::Twine(bytes.size()) +
                     " bytes is too short for a safetensors header");
  uint64_t headerSize = llvm::support::endian::read64le(bytes.data());
  if (headerSize > bytes.size() - 8)
    return makeError(path + ": header length " + llvm::Twine(headerSize) +
                     " exceeds the file size (" + llvm::Twine(bytes.size()) +
                     " bytes)");
  llvm::StringRef headerText = bytes.substr(8, headerSize);
  llvm::Expected<llvm::json::Value> header =
      parseBoundedJson(headerText, path, "JSON header");
  if (!header)
    return header.takeError();
  const llvm::json::Object *object = header->getAsObject();
  if (!object)
    return makeError(path + ": the JSON header must be an object");

  // Large files are mapped, not read: the tensors are views of the mapping.
  bool mapped =
      (*buffer)->getBufferKind() == llvm::MemoryBuffer::MemoryBuffer_MMap;
  uint64_t dataSize = bytes.size() - 8 - headerSize;
  const char *data = bytes.data() + 8 + headerSize;
  std::vector<Entry> entries;
  for (const auto &[key, value] : *object) {
    if (key == "__metadata__")
      continue;
    // Integer tensors are buffers saved with the parameters (Swin's
    // relative_position_index, position_ids), not weights: tfmc computes
    // what it needs of them itself, and names them if asked for one. U8
    // tensors are kept as bytes (gpt-oss's MXFP4 blocks).
    if (const llvm::json::Object *fields = value.getAsObject())
      if (std::optional<llvm::StringRef> dtype = fields->getString("dtype"))
        if (llvm::is_contained({"I64", "I32", "I16", "I8", "BOOL"}, *dtype)) {
          store.addIntegerBuffer(key, *dtype);
          continue;
        }
    Entry entry;
    if (Error err = parseEntry(path, key, value, dataSize, entry))
      return err;
    entries.push_back(std::move(entry));
  }
  // Sorted by position, each tensor must start at or after the previous end.
  std::sort(entries.begin(), entries.end(),
            [](const Entry &a, const Entry &b) { return a.begin < b.begin; });
  for (size_t i = 1; i < entries.size(); ++i)
    if (entries[i].begin < entries[i - 1].end && entries[i].end > entries[i].begin)
      return makeError(path + ": tensors '" + entries[i - 1].name + "' and '" +
                       entries[i].name + "' overlap");
  std::string source = llvm::sys::path::filename(path).str();
  for (Entry &entry : entries) {
    if (store.contains(entry.name))
      return makeError(path + ": tensor '" + entry.name +
                       "' appears in more than one file");
    const auto *at = reinterpret_cast<const uint8_t *>(data + entry.begin);
    std::optional<WeightFormat> dtype = lookupDtype(entry.dtype)->dtype;
    if (dtype)
      store.add(entry.name,
                WeightTensor::view(entry.shape, *dtype, at, mapped, source));
    else
      store.addByteTensor(entry.name, {entry.shape, at, mapped, source});
  }
  store.keepMapped(std::move(*buffer));
  return Error::success();
}

Error mlir::tfm::readSafetensorsCheckpoint(llvm::StringRef directory,
                                     WeightStore &store) {
  llvm::SmallString<256> single(directory), index(directory);
  llvm::sys::path::append(single, "model.safetensors");
  llvm::sys::path::append(index, "model.safetensors.index.json");
  if (llvm::sys::fs::exists(single))
    return readSafetensorsFile(single, store);
  if (!llvm::sys::fs::exists(index))
    return makeError(directory + ": no model.safetensors nor "
                                 "model.safetensors.index.json");
  llvm::Expected<llvm::json::Value> json = readJsonFile(index);
  if (!json)
    return json.takeError();
  const llvm::json::Object *weightMap =
      json->getAsObject() ? json->getAsObject()->getObject("weight_map")
                          : nullptr;
  if (!weightMap)
    return makeError(index + ": missing object field 'weight_map'");
  std::set<std::string> shards;
  for (const auto &[name, file] : *weightMap) {
    std::optional<llvm::StringRef> shard = file.getAsString();
    if (!shard || shard->contains('/') || shard->contains('\\'))
      return makeError(index + ": weight_map entry '" + name.str() +
                       "' must name a file of the directory");
    shards.insert(shard->str());
  }
  for (const std::string &shard : shards) {
    llvm::SmallString<256> path(directory);
    llvm::sys::path::append(path, shard);
    if (Error err = readSafetensorsFile(path, store))
      return err;
  }
  for (const auto &[name, file] : *weightMap)
    if (!store.contains(name.str()))
      return makeError(index + ": tensor '" + name.str() + "' is not in " +
                       *file.getAsString());
  return Error::success();
}
