//===- WeightStore.cpp - the weights a frontend read --------------------===//

#include "frontend/formats/WeightStore.h"
#include "frontend/formats/StoredDtypes.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/Process.h"

#include <algorithm>
#include <cassert>
#include <cstring>
#include <sys/mman.h>

using namespace mlir;
using namespace mlir::tfm;

WeightTensor WeightTensor::view(std::vector<int64_t> shape, WeightFormat dtype,
                                const uint8_t *data, bool inMappedFile,
                                std::string source) {
  WeightTensor t;
  t.dims = std::move(shape);
  t.storedDtype = dtype;
  t.origin = std::move(source);
  t.data = data;
  t.mapped = inMappedFile;
  t.storedBytes = checkpointStoredBytes(dtype, t.numElements());
  t.rowStride = t.cols();
  return t;
}

WeightTensor WeightTensor::mxfp4Pair(int64_t rows, int64_t cols,
                                     const ByteTensor &codes,
                                     const ByteTensor &exponents) {
  WeightTensor t = view({rows, cols}, WeightFormat::MXFP4, codes.data,
                        codes.inMappedFile, codes.source);
  t.storedBytes = rows * cols / 2;
  t.exponents = exponents.data;
  t.exponentsMapped = exponents.inMappedFile;
  return t;
}

WeightTensor WeightTensor::fromValues(std::vector<int64_t> shape,
                                      std::vector<float> values,
                                      std::string source) {
  WeightTensor t;
  t.dims = std::move(shape);
  t.origin = std::move(source);
  t.owned = std::make_shared<const std::vector<float>>(std::move(values));
  t.data = reinterpret_cast<const uint8_t *>(t.owned->data());
  t.storedBytes = t.owned->size() * sizeof(float);
  t.rowStride = t.cols();
  return t;
}

int64_t WeightTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : dims)
    n *= d;
  return n;
}

void WeightTensor::copyStoredElements(int64_t first, int64_t count,
                                      uint8_t *out) const {
  if (!exponents) {
    std::memcpy(out, data + checkpointStoredBytes(storedDtype, first),
                checkpointStoredBytes(storedDtype, count));
    return;
  }
  // GGUF's block_mxfp4 from Hugging Face's two tensors: the exponent, then
  // byte j holding elements j (low nibble) and j + 16 (high), where the
  // codes tensor's byte j holds elements 2j and 2j + 1.
  constexpr int64_t kBlock = 32, kBlockBytes = 17;
  for (int64_t b = first / kBlock; b < (first + count) / kBlock;
       ++b, out += kBlockBytes) {
    const uint8_t *codes = data + b * (kBlock / 2);
    auto code = [&](int element) {
      return (codes[element / 2] >> (4 * (element % 2))) & 0x0F;
    };
    out[0] = exponents[b];
    for (int j = 0; j < kBlock / 2; ++j)
      out[1 + j] = uint8_t(code(j) | code(j + kBlock / 2) << 4);
  }
}

void WeightTensor::readRows(int64_t begin, int64_t count, float *out) const {
  int64_t columns = cols();
  std::vector<uint8_t> paired(
      exponents ? checkpointStoredBytes(storedDtype, columns) : 0);
  for (int64_t r = begin; r < begin + count; ++r, out += columns) {
    int64_t first = storedRow(r) * rowStride;
    if (colStride == 1) {
      // A run of stored elements (a row of whole blocks for block dtypes).
      const uint8_t *stored = data + checkpointStoredBytes(storedDtype, first);
      if (exponents) {
        copyStoredElements(first, columns, paired.data());
        stored = paired.data();
      }
      decodeStoredElements(storedDtype, stored, columns, out);
      if (addend != 0)
        for (int64_t c = 0; c < columns; ++c)
          out[c] += addend;
      continue;
    }
    for (int64_t c = 0; c < columns; ++c) {
      int64_t at = first + c * colStride;
      float value;
      decodeStoredElements(storedDtype,
                           data + checkpointStoredBytes(storedDtype, at), 1,
                           &value);
      out[c] = value + addend;
    }
  }
}

bool WeightTensor::readStoredRows(int64_t begin, int64_t count,
                                  uint8_t *out) const {
  if (owned || colStride != 1 || addend != 0)
    return false;
  int64_t rowBytes = checkpointStoredBytes(storedDtype, cols());
  for (int64_t r = begin; r < begin + count; ++r, out += rowBytes)
    copyStoredElements(storedRow(r) * rowStride, cols(), out);
  return true;
}

std::vector<float> WeightTensor::toF32() const {
  std::vector<float> values(numElements());
  readRows(0, rows(), values.data());
  return values;
}

WeightTensor WeightTensor::selectRows(std::vector<int64_t> rowList,
                                      std::vector<int64_t> shape) const {
  WeightTensor t = *this;
  if (rowIndex)
    for (int64_t &row : rowList)
      row = (*rowIndex)[row];
  t.rowIndex = std::make_shared<const std::vector<int64_t>>(std::move(rowList));
  t.dims = std::move(shape);
  return t;
}

WeightTensor WeightTensor::mergeLeadingDims() const {
  assert(dims.size() >= 3 && !rowIndex && colStride == 1 && addend == 0 &&
         "mergeLeadingDims of a view that is not plain");
  WeightTensor t = *this;
  t.dims.erase(t.dims.begin());
  t.dims[0] *= dims[0];
  t.rowStride = t.cols();
  return t;
}

WeightTensor WeightTensor::transposeRows(int64_t begin, int64_t end) const {
  // Stored [in, out]: logical (o, i) is stored (i, o).
  int64_t in = dims[0];
  WeightTensor t = *this;
  t.dims = {end - begin, in};
  t.rowStride = colStride;
  t.colStride = rowStride;
  std::vector<int64_t> rowList;
  for (int64_t o = begin; o < end; ++o)
    rowList.push_back(o);
  t.rowIndex = std::make_shared<const std::vector<int64_t>>(std::move(rowList));
  return t;
}

WeightTensor WeightTensor::transposeRowBlocks(int64_t blockRows, int64_t first,
                                              int64_t count) const {
  // Logical (b·in + j, i) is stored (b·blockRows + first + i, j): a row of
  // the view steps down the stored rows (colStride `in`), and its start is
  // an element offset (rowStride 1).
  int64_t in = cols(), blocks = rows() / blockRows;
  WeightTensor t = *this;
  t.dims = {blocks * in, count};
  t.rowStride = 1;
  t.colStride = rowStride;
  std::vector<int64_t> rowList;
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t j = 0; j < in; ++j)
      rowList.push_back((b * blockRows + first) * rowStride + j);
  t.rowIndex = std::make_shared<const std::vector<int64_t>>(std::move(rowList));
  return t;
}

WeightTensor WeightTensor::strided(std::vector<int64_t> shape, int64_t offset,
                                   int64_t rowStep, int64_t colStep) const {
  assert(!rowIndex && colStride == 1 && addend == 0 && !owned &&
         checkpointBlockElements(storedDtype) == 1 &&
         "strided view of a view that is not plain");
  // Row r starts at element offset + r·rowStep (rowStride 1 makes the row
  // index an element offset).
  WeightTensor t = *this;
  t.dims = std::move(shape);
  t.rowStride = 1;
  t.colStride = colStep;
  std::vector<int64_t> rowList;
  for (int64_t r = 0; r < t.dims[0]; ++r)
    rowList.push_back(offset + r * rowStep);
  t.rowIndex = std::make_shared<const std::vector<int64_t>>(std::move(rowList));
  return t;
}

WeightTensor WeightTensor::plus(float value) const {
  WeightTensor t = *this;
  t.addend += value;
  return t;
}

namespace {

/// Drops the whole pages inside [first, first + size) from the resident
/// set: a neighbour's pages may still be wanted.
void releaseMappedBytes(const uint8_t *first, int64_t size) {
  uintptr_t page = llvm::sys::Process::getPageSizeEstimate();
  uintptr_t begin =
      (reinterpret_cast<uintptr_t>(first) + page - 1) / page * page;
  uintptr_t end = (reinterpret_cast<uintptr_t>(first) + size) / page * page;
  if (end > begin)
    ::madvise(reinterpret_cast<void *>(begin), end - begin, MADV_DONTNEED);
}

} // namespace

void WeightTensor::releasePages() const {
  if (mapped)
    releaseMappedBytes(data, storedBytes);
  if (exponents && exponentsMapped)
    releaseMappedBytes(exponents, storedBytes / 16);
}

void WeightTensor::releaseRows(int64_t begin, int64_t end) const {
  if (!mapped || colStride != 1 || begin >= end)
    return;
  int64_t first = storedRow(begin), last = storedRow(end - 1);
  if (last - first != end - 1 - begin)
    return; // not a run of stored rows
  if (exponents) { // half a byte an element, and a byte per 32
    releaseMappedBytes(data + first * rowStride / 2,
                       (last + 1 - first) * rowStride / 2);
    if (exponentsMapped)
      releaseMappedBytes(exponents + first * rowStride / 32,
                         (last + 1 - first) * rowStride / 32);
    return;
  }
  releaseMappedBytes(
      data + checkpointStoredBytes(storedDtype, first * rowStride),
      checkpointStoredBytes(storedDtype, (last + 1 - first) * rowStride));
}

std::string mlir::tfm::formatShape(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::optional<std::string>
WeightStore::mismatch(llvm::StringRef checkpoint, llvm::StringRef name,
                      const std::vector<int64_t> &shape,
                      const llvm::Twine &expectation) const {
  const WeightTensor *tensor = lookup(name);
  if (auto skipped = integerBuffers.find(name);
      !tensor && skipped != integerBuffers.end())
    return (checkpoint + ": tensor '" + name + "': unsupported dtype '" +
            skipped->second + "' (supported: F32, F16, BF16)")
        .str();
  if (!tensor)
    return (checkpoint + ": missing tensor '" + name + "' (shape " +
            formatShape(shape) + ")")
        .str();
  if (tensor->shape() != shape)
    return (checkpoint + ": tensor '" + name + "' has shape " +
            formatShape(tensor->shape()) + ", " + expectation + " " +
            formatShape(shape))
        .str();
  return std::nullopt;
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

bool WeightStore::hasNarrowMatrices() const {
  return llvm::any_of(order, [&](const std::string &name) {
    const WeightTensor &tensor = tensors.find(name)->second;
    return tensor.shape().size() >= 2 && tensor.dtype() != WeightFormat::F32;
  });
}

std::optional<WeightFormat> WeightStore::firstBlockDtype() const {
  for (const std::string &name : order) {
    const WeightTensor &tensor = tensors.find(name)->second;
    if (tensor.shape().size() >= 2 &&
        checkpointBlockElements(tensor.dtype()) > 1)
      return tensor.dtype();
  }
  return std::nullopt;
}

void WeightStore::absorb(WeightStore &&other, llvm::StringRef prefix) {
  for (const std::string &name : other.order)
    add((prefix + name).str(), std::move(other.tensors[name]));
  for (const auto &buffer : other.integerBuffers)
    integerBuffers[(prefix + buffer.getKey()).str()] = buffer.getValue();
  for (auto &bytes : other.byteTensors)
    byteTensors[(prefix + bytes.getKey()).str()] = std::move(bytes.getValue());
  for (auto &file : other.files)
    files.push_back(std::move(file));
  other = WeightStore();
}

void WeightStore::keepFilesOf(WeightStore &&other) {
  for (auto &file : other.files)
    files.push_back(std::move(file));
  other = WeightStore();
}

WeightTensor WeightStore::take(llvm::StringRef name) {
  WeightTensor tensor = std::move(tensors[name]);
  tensors.erase(name);
  order.erase(std::remove(order.begin(), order.end(), name.str()),
              order.end());
  return tensor;
}
