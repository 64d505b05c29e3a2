//===- ModelPackager.h - weights, tokenizer and link step -------*- C++ -*-===//
//
// Turns a compiled model object into an executable: writes the weight blob in
// the layout tfm-lower-to-linalg chose (embedded with .incbin, or a side file
// the runtime maps), the tokenizer blob, a generated C description of the
// model (tfm_model_abi.h), and links them with the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_MODELPACKAGER_H
#define TFM_CODEGEN_MODELPACKAGER_H

#include "mlir/IR/BuiltinOps.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <array>
#include <optional>
#include <string>
#include <vector>

namespace mlir::tfm {

/// Gives the f32 values of a weight by name (empty if unknown).
using WeightLookup = llvm::function_ref<llvm::ArrayRef<float>(llvm::StringRef)>;

struct TokenizerBlobInput {
  /// A tfm_tokenizer_kind (runtime/tfm_format.h).
  uint32_t kind = 0;
  std::vector<std::string> pieces;
  std::vector<float> scores;
  /// Byte-level BPE merges (left, right, merged) in rank order.
  std::vector<std::array<int32_t, 3>> merges;
};

struct ModelDescription {
  std::string name;
  /// Where it came from, for the generated header's comment.
  std::string source;
  int64_t hiddenSize = 0, numLayers = 0, numHeads = 0, numKVHeads = 0;
  int64_t vocabSize = 0, maxContext = 0;
  int32_t bosToken = -1, eosToken = -1;
  bool addBos = true;
  std::optional<TokenizerBlobInput> tokenizer;
  /// @prefill's cache [layers, 2, capacity, kv_heads, head_dim]; empty when
  /// compiled without a KV cache.
  std::vector<int64_t> cacheShape;
  /// Every layer's attention window (0: none).
  int64_t slidingWindow = 0;
};

enum class OutputKind { Executable, SharedLibrary, StaticLibrary };

struct LinkOptions {
  OutputKind kind = OutputKind::Executable;
  std::string outputPath;
  /// Libraries: the generated header's path, and the C identifier prefixing
  /// the model's symbols (the description is `<prefix>_model`).
  std::string headerPath;
  std::string prefix;
  /// Write weights to `<output>.weights` instead of embedding them.
  bool externalWeights = false;
  /// The C symbols of the generated functions (MLIR's C interface).
  std::string forwardSymbol = "_mlir_ciface_forward";
  std::string prefillSymbol = "_mlir_ciface_prefill";
  std::string decodeSymbol = "_mlir_ciface_decode";
  /// The C compiler driver used to link.
  std::string cc = "cc";
  /// Folder holding runtime/ headers, the runtime archives and the folder
  /// of the shared runtime (libtfmrt.so).
  std::string runtimeIncludeDir, runtimeLibrary, runtimeMainLibrary,
      runtimeLibraryDir;
};

/// Writes the weight blob of `module` (laid out by tfm-lower-to-linalg) to
/// `path` and returns its checksum.
llvm::Expected<uint64_t> writeWeightBlob(ModuleOp module, WeightLookup weights,
                                         llvm::StringRef path);

/// Serializes a tokenizer vocabulary in the runtime's blob format.
std::string serializeTokenizer(const TokenizerBlobInput &tokenizer);

/// Links `objectPath` (the compiled model) into an executable, a shared or
/// a static library (with its header).
llvm::Error linkModel(ModuleOp module, WeightLookup weights,
                      const ModelDescription &model, llvm::StringRef objectPath,
                      const LinkOptions &options);

/// The header of a model library: constants and the description's
/// declaration.
std::string generateModelHeader(const ModelDescription &model,
                                const LinkOptions &options);

} // namespace mlir::tfm

#endif // TFM_CODEGEN_MODELPACKAGER_H
