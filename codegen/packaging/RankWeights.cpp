//===- RankWeights.cpp - one rank's part of a split model's weights ------===//

#include "codegen/packaging/RankWeights.h"
#include "ir/TfmSharding.h"

#include <memory>
#include <vector>

using namespace mlir;
using namespace mlir::tfm;

RankWeights::RankWeights(ModuleOp module)
    : parts(module->getAttrOfType<DictionaryAttr>(kRankWeightsAttrName)),
      weightSources(
          module->getAttrOfType<DictionaryAttr>(kRankWeightSourcesAttrName)) {}

bool RankWeights::isReplicated(llvm::StringRef name) const {
  return (!parts || !parts.get(name)) &&
         (!weightSources || !weightSources.get(name));
}

llvm::StringRef RankWeights::source(llvm::StringRef name, int64_t rank) const {
  auto sources =
      weightSources ? weightSources.getAs<ArrayAttr>(name) : ArrayAttr();
  if (!sources || rank < 0 || rank >= int64_t(sources.size()))
    return name;
  return cast<StringAttr>(sources[rank]).getValue();
}

static llvm::Error partError(llvm::StringRef name, const llvm::Twine &why) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(),
                                 "weight '" + name +
                                     "' split over ranks: " + why);
}

llvm::Expected<WeightRows>
RankWeights::part(llvm::StringRef name, WeightRows whole, int64_t rank) const {
  auto split = parts ? parts.getAs<DenseI64ArrayAttr>(name) : nullptr;
  if (!split)
    return whole;
  // MPI ranks come in groups of the tensor-parallel ranks (one group a
  // pipeline stage): the part is the one of the rank's place in its group.
  int64_t axis = split[0], ranks = split[1];
  rank %= ranks;
  if (axis < 0) {
    if (rank == 0)
      return whole;
    // The others hold zeros: the all-reduce adds the bias once.
    WeightRows zeros = whole;
    zeros.read = [cols = whole.cols](int64_t, int64_t count, float *out) {
      std::fill(out, out + count * cols, 0.0f);
    };
    zeros.release = [](int64_t, int64_t) {};
    zeros.readStored = nullptr;
    return zeros;
  }
  if (axis == 0) {
    // Rows [rank * part, (rank + 1) * part): a contiguous run of the
    // checkpoint's rows, stored blocks included.
    if (whole.rows % ranks != 0)
      return partError(name, llvm::Twine(whole.rows) + " rows over " +
                                 llvm::Twine(ranks) + " ranks");
    int64_t part = whole.rows / ranks, first = rank * part;
    WeightRows rows = whole;
    rows.rows = part;
    rows.read = [whole, first](int64_t begin, int64_t count, float *out) {
      whole.read(first + begin, count, out);
    };
    rows.release = [whole, first](int64_t begin, int64_t end) {
      whole.release(first + begin, first + end);
    };
    if (whole.readStored)
      rows.readStored = [whole, first](int64_t begin, int64_t count,
                                       uint8_t *out) {
        return whole.readStored(first + begin, count, out);
      };
    return rows;
  }
  if (axis != 1)
    return partError(name, "only a matrix's rows or columns are split");
  // Columns [rank * part, (rank + 1) * part) of every row: whole rows read,
  // the rank's columns kept; as stored too, where the part is whole blocks
  // (a GGUF K-quant's row-parallel projection keeps its blocks as the file
  // has them).
  if (whole.cols % ranks != 0)
    return partError(name, llvm::Twine(whole.cols) + " columns over " +
                               llvm::Twine(ranks) + " ranks");
  int64_t part = whole.cols / ranks, first = rank * part;
  WeightRows columns = whole;
  columns.cols = part;
  auto scratch = std::make_shared<std::vector<float>>();
  columns.read = [whole, part, first, scratch](int64_t begin, int64_t count,
                                               float *out) {
    scratch->resize(count * whole.cols);
    whole.read(begin, count, scratch->data());
    for (int64_t r = 0; r < count; ++r)
      std::copy_n(scratch->data() + r * whole.cols + first, part,
                  out + r * part);
  };
  int64_t block = whole.storedBlockElements;
  if (!whole.readStored || block < 1 || part % block != 0) {
    // Blocks the split would cut: the part is encoded from its values.
    columns.readStored = nullptr;
    columns.storedDtype = "F32";
    columns.storedBlockElements = 1;
    columns.storedBlockBytes = 4;
    return columns;
  }
  int64_t blockBytes = whole.storedBlockBytes;
  int64_t rowBytes = whole.cols / block * blockBytes;
  int64_t partBytes = part / block * blockBytes;
  int64_t firstByte = first / block * blockBytes;
  auto stored = std::make_shared<std::vector<uint8_t>>();
  columns.readStored = [whole, rowBytes, partBytes, firstByte,
                        stored](int64_t begin, int64_t count, uint8_t *out) {
    stored->resize(count * rowBytes);
    if (!whole.readStored(begin, count, stored->data()))
      return false;
    for (int64_t r = 0; r < count; ++r)
      std::copy_n(stored->data() + r * rowBytes + firstByte, partBytes,
                  out + r * partBytes);
    return true;
  };
  return columns;
}
