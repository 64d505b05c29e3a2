//===- WeightStore.h - the weights a frontend read --------------*- C++ -*-===//
//
// Named tensors as the frontends find them in checkpoints: views of the
// mapped files, in their stored dtype (F32, F16, BF16), never copied into
// memory whole. A frontend that needs a tensor in another layout (GPT-2's
// transposed Conv1D weights, GPT-NeoX's fused Q/K/V, Gemma's 1 + w) makes
// a view that selects rows, transposes or adds a constant; the packager
// reads the views row by row into the weight blob and then lets the kernel
// drop the pages it read, so that compiling a model holds a few rows of it
// at a time rather than all of it. The IR refers to the tensors by name
// (tfm.weight_decl).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_FORMATS_WEIGHTSTORE_H
#define TFM_FRONTEND_FORMATS_WEIGHTSTORE_H

#include "ir/WeightFormat.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstdint>
#include <memory>
#include <string>
#include <optional>
#include <vector>

namespace mlir::tfm {

// A tensor's elements are stored in a WeightFormat (ir/WeightFormat.h: the
// table of formats): floats, or GGML's blocks (GGUF files). Those kept as
// block panels have block kernels; Q5_0, Q5_1, Q2_K, Q3_K, IQ4_NL and IQ4_XS
// are read (decoded to f32, frontend/formats/StoredDtypes.h) and
// requantized to int8 (checkpointDtype).

/// A tensor of bytes as a checkpoint stores it (safetensors' U8), which no
/// builder reads as a weight: gpt-oss's MXFP4 blocks and exponents, which
/// a family pairs into an MXFP4 WeightTensor (WeightTensor::mxfp4Pair).
struct ByteTensor {
  std::vector<int64_t> shape;
  const uint8_t *data = nullptr;
  bool inMappedFile = false;
  std::string source;
};

/// A tensor seen as the matrix [rows(), cols()]: its first dim by the
/// product of the others (a 1-D tensor is a column). Element (r, c) is the
/// stored element rowIndex(r)·rowStride + c·colStride, plus `addend`.
/// A block dtype's rows are whole blocks, read whole: its views may select
/// rows but not transpose or add.
class WeightTensor {
public:
  WeightTensor() = default;
  /// A row-major tensor of `dtype` at `data`, which the store keeps alive;
  /// `inMappedFile`: `data` is a file mapping (releasePages may drop it).
  static WeightTensor view(std::vector<int64_t> shape, WeightFormat dtype,
                           const uint8_t *data, bool inMappedFile,
                           std::string source);
  /// The [rows, cols] MXFP4 matrix whose blocks Hugging Face stores in two
  /// tensors (gpt-oss's `*_blocks` [..., cols / 32, 16] and `*_scales`
  /// [..., cols / 32]: 16 bytes of E2M1 codes a block, element 2j in the
  /// low nibble of byte j and 2j + 1 in its high one, and an E8M0 exponent
  /// byte). It reads as GGUF's MXFP4 (its blocks reassembled on read), so
  /// the packager copies them as a GGUF file's.
  static WeightTensor mxfp4Pair(int64_t rows, int64_t cols,
                                const ByteTensor &codes,
                                const ByteTensor &exponents);
  /// A tensor a frontend computed.
  static WeightTensor fromValues(std::vector<int64_t> shape,
                                 std::vector<float> values,
                                 std::string source);

  const std::vector<int64_t> &shape() const { return dims; }
  WeightFormat dtype() const { return storedDtype; }
  /// Where it came from, for messages ("model.safetensors").
  const std::string &source() const { return origin; }
  int64_t numElements() const;
  int64_t rows() const { return dims.empty() ? 1 : dims[0]; }
  int64_t cols() const { return numElements() / std::max<int64_t>(rows(), 1); }

  /// Writes rows [begin, begin + count) as f32, row-major, to `out`.
  void readRows(int64_t begin, int64_t count, float *out) const;
  /// Copies rows [begin, begin + count) as stored
  /// (checkpointStoredBytes(dtype(), cols()) bytes each: a block dtype's
  /// blocks) to `out`; false for a view that transposes or adds, or values a
  /// frontend computed.
  bool readStoredRows(int64_t begin, int64_t count, uint8_t *out) const;
  /// All elements as f32 (tests, small tensors).
  std::vector<float> toF32() const;

  /// Views of this tensor. `selectRows`: the rows listed, as `shape`
  /// (whose leading dim is the list's length); `transposeRows`: a stored
  /// [in, out] matrix read as [out, in], rows [begin, end) of that;
  /// `plus`: every element plus `value`.
  WeightTensor selectRows(std::vector<int64_t> rowList,
                          std::vector<int64_t> shape) const;
  WeightTensor transposeRows(int64_t begin, int64_t end) const;
  /// The stored [blocks · blockRows, in] matrix seen as blocks of
  /// `blockRows` rows: of each block, rows [first, first + count) read
  /// transposed ([in, count]), the blocks stacked: [blocks · in, count]
  /// (MLA's per-head key up-projection, absorbed into the query). A plain
  /// float tensor's view only.
  WeightTensor transposeRowBlocks(int64_t blockRows, int64_t first,
                                  int64_t count) const;
  WeightTensor plus(float value) const;
  /// Element (r, c) of the view, `shape` ([rows] or [rows, cols]), is
  /// stored element offset + r·rowStep + c·colStep: stacked experts stored
  /// [in, out] with gate and up interleaved (gpt-oss's gate_up_proj) read
  /// as one expert's [out, in] gate or up. A plain float tensor's view only.
  WeightTensor strided(std::vector<int64_t> shape, int64_t offset,
                       int64_t rowStep, int64_t colStep) const;
  /// The tensor with its two leading dims seen as one ([E, r, c] as
  /// [E·r, c]: stacked experts' rows, each expert's own), so that
  /// selectRows can pick rows within an expert. A plain view only (no
  /// rows selected, nothing transposed or added).
  WeightTensor mergeLeadingDims() const;

  /// Tells the kernel that the stored bytes will not be read soon: pages
  /// of a file mapping leave this process's resident set (they stay in the
  /// page cache). Reading again is correct, only slower. Does nothing for
  /// memory that is not a file mapping.
  void releasePages() const;
  /// The same for the stored bytes of rows [begin, end) where they are
  /// contiguous (a row-major tensor, or a slice of one); else nothing.
  void releaseRows(int64_t begin, int64_t end) const;

private:
  std::vector<int64_t> dims;
  WeightFormat storedDtype = WeightFormat::F32;
  std::string origin;
  const uint8_t *data = nullptr;
  /// The stored tensor's bytes, for releasePages.
  int64_t storedBytes = 0;
  bool mapped = false;
  int64_t rowStride = 0, colStride = 1;
  /// Stored row of each logical row; empty: the identity.
  std::shared_ptr<const std::vector<int64_t>> rowIndex;
  float addend = 0;
  /// Values a frontend computed (fromValues).
  std::shared_ptr<const std::vector<float>> owned;
  /// mxfp4Pair's exponent bytes (one a block; `data` holds the codes, 16
  /// bytes a block); null for a tensor stored in one piece.
  const uint8_t *exponents = nullptr;
  bool exponentsMapped = false;

  /// Writes the stored blocks of elements [first, first + count) (whole
  /// blocks of the view's stored tensor) to `out` as dtype() lays them out.
  void copyStoredElements(int64_t first, int64_t count, uint8_t *out) const;

  int64_t storedRow(int64_t row) const {
    return rowIndex ? (*rowIndex)[row] : row;
  }
};

/// Formats a shape as "[a, b]".
std::string formatShape(const std::vector<int64_t> &shape);

class WeightStore {
public:
  void add(llvm::StringRef name, WeightTensor tensor);
  bool contains(llvm::StringRef name) const { return tensors.count(name); }
  const WeightTensor *lookup(llvm::StringRef name) const;
  /// Why tensor `name` of `checkpoint` cannot be a weight of `shape`: it is
  /// missing, or has another shape (`expectation` says whose shape is
  /// right: "the gpt2 config implies"); nothing when it can.
  std::optional<std::string> mismatch(llvm::StringRef checkpoint,
                                      llvm::StringRef name,
                                      const std::vector<int64_t> &shape,
                                      const llvm::Twine &expectation) const;
  /// Removes and returns a tensor (for frontends that split or transpose).
  WeightTensor take(llvm::StringRef name);
  /// Names in insertion order.
  const std::vector<std::string> &names() const { return order; }
  /// Whether some matrix (rank 2 or more) is stored in another dtype than
  /// f32, which the compiler then keeps (tfm-quantize-weights' dtype
  /// "checkpoint").
  bool hasNarrowMatrices() const;
  /// The block dtype (GGUF's Q8_0, Q4_K, ...) of the first matrix stored in
  /// blocks, if any: what only the CPU's kernels read.
  std::optional<WeightFormat> firstBlockDtype() const;
  /// A tensor of integers (or booleans) the reader left out: a buffer
  /// saved with the parameters (Swin's relative_position_index), which no
  /// builder reads as a weight; named with its dtype if one asks for it.
  void addIntegerBuffer(llvm::StringRef name, llvm::StringRef dtype) {
    integerBuffers[name] = dtype.str();
  }
  /// Whether the reader left out integer tensor `name`.
  bool hasIntegerBuffer(llvm::StringRef name) const {
    return integerBuffers.count(name);
  }
  /// A byte tensor (safetensors' U8) the reader kept aside as stored, also
  /// counted as an integer buffer; lookupBytes finds it.
  void addByteTensor(llvm::StringRef name, ByteTensor tensor) {
    addIntegerBuffer(name, "U8");
    byteTensors[name] = std::move(tensor);
  }
  const ByteTensor *lookupBytes(llvm::StringRef name) const {
    auto it = byteTensors.find(name);
    return it == byteTensors.end() ? nullptr : &it->second;
  }
  /// Moves every tensor of `other` here, named `prefix` + its name, with
  /// the mapped files they view (a pipeline's components, each read from
  /// its own folder, in one store).
  void absorb(WeightStore &&other, llvm::StringRef prefix);
  /// Keeps the files `other` mapped (its tensors, views of them, moved
  /// elsewhere), dropping the rest of it.
  void keepFilesOf(WeightStore &&other);
  /// Keeps a checkpoint file mapped for the tensors that view it.
  void keepMapped(std::unique_ptr<llvm::MemoryBuffer> file) {
    files.push_back(std::move(file));
  }

private:
  llvm::StringMap<WeightTensor> tensors;
  llvm::StringMap<std::string> integerBuffers;
  llvm::StringMap<ByteTensor> byteTensors;
  std::vector<std::string> order;
  std::vector<std::unique_ptr<llvm::MemoryBuffer>> files;
};

} // namespace mlir::tfm

#endif // TFM_FRONTEND_FORMATS_WEIGHTSTORE_H
