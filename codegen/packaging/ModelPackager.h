//===- ModelPackager.h - weights, tokenizer and link step -------*- C++ -*-===//
//
// Turns a compiled model object into an executable: writes the weight blob in
// the layout tfm-lower-to-linalg chose (embedded with .incbin, or a side file
// the runtime maps), the tokenizer blob, a generated C description of the
// model (tfm_model_abi.h), and links them with the runtime.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_CODEGEN_PACKAGING_MODELPACKAGER_H
#define TFM_CODEGEN_PACKAGING_MODELPACKAGER_H

#include "mlir/IR/BuiltinOps.h"
#include "tfm/tfm_model_abi.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/Support/Error.h"

#include <array>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace mlir::tfm {

/// A weight as the packager reads it: a [rows, cols] matrix (the first dim
/// by the others), converted to f32 a few rows at a time, so that a model
/// is never held in memory whole.
struct WeightRows {
  int64_t rows = 0, cols = 0;
  /// Writes rows [begin, begin + count), row-major, to `out`.
  std::function<void(int64_t begin, int64_t count, float *out)> read;
  /// Called as rows [begin, end) have been written, and with (0, rows) at
  /// the end: the source may drop what it held for them.
  std::function<void(int64_t begin, int64_t end)> release;
  /// How the checkpoint stores it ("F32", "Q4_K": GGUF's names), and its
  /// rows [begin, begin + count) as stored, for formats the packager
  /// copies rather than encodes (q4_k); false where it cannot.
  std::string storedDtype;
  std::function<bool(int64_t begin, int64_t count, uint8_t *out)> readStored;
  /// The stored format's blocks along a row: elements and bytes (1 and the
  /// element's bytes for floats). A split by columns copies whole blocks.
  int64_t storedBlockElements = 1, storedBlockBytes = 4;
};

/// Gives a weight by name (nullopt if unknown).
using WeightLookup =
    llvm::function_ref<std::optional<WeightRows>(llvm::StringRef)>;

/// An input, output or cache of an entry point (tfm_model_abi.h): a
/// tfm_role, a tfm_dtype and a shape (-1: dynamic).
struct TensorDescription {
  int32_t role = 0, dtype = 0;
  std::vector<int64_t> shape;
  /// Caches: a tfm_cache_kind and the sliding window.
  int32_t cacheKind = 0;
  int64_t window = 0;
  /// Integer inputs: values must be below it (tfm_tensor_desc.bound).
  int64_t bound = 0;
  bool operator==(const TensorDescription &other) const {
    return role == other.role && dtype == other.dtype &&
           shape == other.shape && cacheKind == other.cacheKind &&
           window == other.window && bound == other.bound;
  }
};

/// An entry point as the runtime's table describes it, and how its
/// function's arguments map onto inputs and caches.
struct EntryPointDescription {
  std::string name;
  std::vector<TensorDescription> inputs, outputs;
  /// Indices into ModelDescription::caches.
  std::vector<int32_t> caches;
  /// For each argument of the function (after the weights): an input index
  /// (>= 0) or a cache as -1 - (index into `caches`).
  std::vector<int32_t> arguments;
};

struct ModelDescription {
  std::string name;
  /// Where it came from, for the generated header's comment.
  std::string source;
  int64_t hiddenSize = 0, numLayers = 0, numHeads = 0, numKVHeads = 0;
  int64_t vocabSize = 0, maxContext = 0;
  /// CLIP's similarity scale (tfm.logit_scale); 0: none.
  double logitScale = 0;
  /// SigLIP's score bias (tfm.logit_bias): its scores are sigmoids.
  std::optional<double> logitBias;
  /// The token texts are padded to the context with (tfm.text_pad_token).
  std::optional<int64_t> textPadToken;
  /// A vision-language model's image placeholder (tfm.image_token); -1:
  /// none.
  int64_t imageToken = -1;
  /// An image's rows attend to each other both ways
  /// (tfm.image_rows_bidirectional).
  bool imageRowsBidirectional = false;
  /// The tokens a processor writes around an image's tiles
  /// (tfm.image_tile_tokens: Idefics3's); empty: none.
  std::vector<int64_t> imageTileTokens;
  /// The code runs on an NVIDIA GPU (--target=cuda).
  bool cudaTarget = false;
  /// Bytes of weights a @decode step reads (tfm.decode_weight_bytes).
  uint64_t decodeWeightBytes = 0;
  int32_t bosToken = -1, eosToken = -1;
  /// Tokens that end generation besides eosToken (tfm_model_desc's
  /// stop_tokens).
  std::vector<int32_t> stopTokens;
  bool addBos = true;
  /// The tokenizer in the runtime's blob format (serializeTokenizer,
  /// frontend/tokenizers/Tokenizer.h); empty: none.
  std::string tokenizerBlob;
  std::string family;
  /// The chat template (Jinja source); empty: none.
  std::string chatTemplate;
  /// A classifier's class names by id.
  std::vector<std::string> labels;
  /// An image model's preprocessing (tfm_image_load).
  std::optional<tfm_image_preprocessing> imagePreprocessing;
  /// Its grid pinpoints (height, width pairs; LLaVA-NeXT's tiles), which
  /// the struct points at once written.
  std::vector<int64_t> imageGridPinpoints;
  /// A speech model's preprocessing (tfm_audio_load).
  std::optional<tfm_audio_preprocessing> audioPreprocessing;
  /// A waveform speech model's input and CTC decoding (tfm_transcribe).
  std::optional<tfm_waveform_input> waveform;
  /// A Stable Diffusion pipeline's constants (tfm.diffusion): the integers
  /// of kDiffusionIntegerFields in order, the VAE's scaling factor, the
  /// scheduler's "key=value" lines.
  struct Diffusion {
    std::vector<int64_t> integers;
    double scalingFactor = 0;
    std::string schedulerConfig;
  };
  std::optional<Diffusion> diffusion;
  /// An encoder-decoder's generation defaults; their token lists
  /// (suppressed, bad words, prompt, begin-suppressed, languages) and counts
  /// are written out from these vectors.
  std::optional<tfm_generation_defaults> generation;
  std::vector<int32_t> suppressedTokens, promptTokens, beginSuppressedTokens;
  std::vector<int32_t> badWordTokens, badWordLengths, languageTokens;
  /// Run-time LoRA adapter slots (tfm.lora; tfm_lora_desc).
  struct LoraTarget {
    std::string weight;
    int64_t inFeatures = 0, outFeatures = 0;
  };
  struct Lora {
    int64_t slots = 0, rank = 0;
    std::vector<LoraTarget> targets;
  };
  std::optional<Lora> lora;
  std::vector<EntryPointDescription> entryPoints;
  /// The model's caches (shared by the entry points that use them).
  std::vector<TensorDescription> caches;
  /// MPI processes the model runs as (tfmc --ranks, --pipeline-stages);
  /// 1: one.
  int64_t ranks = 1;
  /// Pipeline stages, one a rank (tfmc --pipeline-stages); 1: none.
  int64_t pipelineStages = 1;
};

enum class OutputKind { Executable, SharedLibrary, StaticLibrary };

#ifdef TFM_SANITIZER_LINKER
inline constexpr const char *kDefaultLinker = TFM_SANITIZER_LINKER;
#else
inline constexpr const char *kDefaultLinker = "cc";
#endif

struct LinkOptions {
  OutputKind kind = OutputKind::Executable;
  std::string outputPath;
  /// Libraries: the generated header's path, and the C identifier prefixing
  /// the model's symbols (the description is `<prefix>_model`).
  std::string headerPath;
  std::string prefix;
  /// Called as the weight blob is written: bytes written, bytes in all.
  std::function<void(uint64_t, uint64_t)> weightProgress;
  /// Write weights to `<output>.weights` instead of embedding them.
  bool externalWeights = false;
  /// The C compiler driver used to link: cc, or in a sanitizer build
  /// (TFM_SANITIZE), whose runtime is instrumented, the clang it was built
  /// with, linking the same sanitizers.
  std::string cc = kDefaultLinker;
  /// Folder holding the tfm/ headers, the runtime archives (libtfmrt.a, its
  /// command line libtfmrt_main.a, image and audio decoding
  /// libtfmrt_media.a) and the folder of the shared runtime (libtfmrt.so).
  std::string runtimeIncludeDir, runtimeLibrary, runtimeMainLibrary,
      runtimeMediaLibrary, runtimeLibraryDir;
  /// A model split over ranks: the ranks' side of the runtime
  /// (libtfmrt_mpi.a) and the MPI libraries it and the model's code call.
  std::string runtimeMpiLibrary;
  std::vector<std::string> mpiLibraries;
  /// The CUDA emulator's archive (libtfmcudaemu.a, --emit=cuda-emulator).
  std::string cudaEmulatorLibrary;
};

/// Writes the weight blob of `module` (laid out by tfm-lower-to-linalg) to
/// `path`, streaming it weight by weight, and returns its checksum. A model
/// split over ranks has one blob per rank: `rank`'s (RankWeights.h), and
/// the bytes of it every rank holds alike in `replicatedBytes`.
llvm::Expected<uint64_t>
writeWeightBlob(ModuleOp module, WeightLookup weights, llvm::StringRef path,
                const std::function<void(uint64_t, uint64_t)> &progress = {},
                int64_t rank = 0, uint64_t *replicatedBytes = nullptr);

/// Links `objectPath` (the compiled model) into an executable, a shared or
/// a static library (with its header).
llvm::Error linkModel(ModuleOp module, WeightLookup weights,
                      const ModelDescription &model, llvm::StringRef objectPath,
                      const LinkOptions &options);

/// Links `objectPath` (a model's kernels compiled for the host) with the
/// CUDA emulator into the shared library `options.outputPath`, a stand-in
/// for libcuda.so.1 (runtime/cuda/cuda_emulator.h).
llvm::Error linkCudaEmulator(llvm::StringRef objectPath,
                             const LinkOptions &options);

/// The header of a model library: constants and the description's
/// declaration.
std::string generateModelHeader(const ModelDescription &model,
                                const LinkOptions &options);

} // namespace mlir::tfm

#endif // TFM_CODEGEN_PACKAGING_MODELPACKAGER_H
