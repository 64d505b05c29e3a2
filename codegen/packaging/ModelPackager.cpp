//===- ModelPackager.cpp - weights, tokenizer and link step -------------===//

#include "codegen/packaging/ModelPackager.h"
#include "codegen/linalg/Passes.h"
#include "codegen/linalg/WeightFormats.h"
#include "codegen/packaging/EntryPointTable.h"
#include "codegen/packaging/RankWeights.h"
#include "codegen/packaging/WeightEncoding.h"
#include "ir/DiffusionAttr.h"
#include "tfm/tfm_format.h"
#include "tfm/tfm_model_abi.h"
#include "tfm/weight_formats.h"

#include "mlir/IR/BuiltinAttributes.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Alignment.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/Parallel.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/raw_ostream.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>

using namespace mlir;
using namespace mlir::tfm;

namespace {

llvm::Error makeError(const llvm::Twine &message) {
  return llvm::createStringError(llvm::inconvertibleErrorCode(), message);
}

llvm::Error writeFile(llvm::StringRef path, llvm::StringRef bytes) {
  std::error_code ec;
  llvm::raw_fd_ostream out(path, ec, llvm::sys::fs::OF_None);
  if (ec)
    return makeError("cannot write '" + path + "': " + ec.message());
  out << bytes;
  out.close();
  if (out.has_error())
    return makeError("cannot write '" + path + "': " +
                     out.error().message());
  return llvm::Error::success();
}

/// Segments aligned to 2 MiB in the file and in memory (the kernel then
/// loads the binary at a 2 MiB boundary): embedded weights (static
/// libraries; appended ones are mapped so by the runtime) keep the same
/// offset modulo 2 MiB in memory as in the file's page cache, whose large
/// folios then map as physically contiguous runs the CPU's TLB can
/// coalesce. At 4 KiB alignment, a cold pass over the weights ran 3-4x
/// slower in the GEMMs (measured on a Zen 5 VM). Shared libraries get the
/// same from glibc's loader, which honours the segments' alignment.
constexpr const char *kHugeSegments = "-Wl,-z,max-page-size=0x200000";
/// A sanitizer build's runtime needs the sanitizers' own runtime linked;
/// elsewhere, none (the flag that says so, so that the command is one list).
#ifdef TFM_SANITIZER_LINKER
constexpr const char *kSanitizers = "-fsanitize=address,undefined";
#else
constexpr const char *kSanitizers = "-fno-sanitize=all";
#endif

/// Writes a file front to back, computing tfm_weights_checksum on the way.
class BlobWriter {
public:
  explicit BlobWriter(llvm::StringRef path)
      : out(path, ec, llvm::sys::fs::OF_None), path(path) {}

  llvm::Error status() {
    if (ec)
      return makeError("cannot write '" + path + "': " + ec.message());
    if (out.has_error())
      return makeError("cannot write '" + path + "': " +
                       out.error().message());
    return llvm::Error::success();
  }
  uint64_t position() const { return written; }

  void write(const void *data, size_t size) {
    const uint8_t *bytes = static_cast<const uint8_t *>(data);
    out.write(reinterpret_cast<const char *>(bytes), size);
    written += size;
    tfm_checksum_update(&checksum, bytes, size);
  }
  void zerosTo(uint64_t offset) {
    static const uint8_t zeros[4096] = {};
    while (written < offset)
      write(zeros, std::min<uint64_t>(sizeof zeros, offset - written));
  }
  /// The checksum of everything written (tfm_format.h).
  uint64_t finish() {
    out.close();
    return tfm_checksum_final(&checksum);
  }

private:
  std::error_code ec;
  llvm::raw_fd_ostream out;
  std::string path;
  uint64_t written = 0;
  tfm_checksum checksum = initialChecksum();

  static tfm_checksum initialChecksum() {
    tfm_checksum c;
    tfm_checksum_init(&c);
    return c;
  }
};

/// Writes the [rows, cols] matrix `weight` as panels of `format`
/// (runtime/include/tfm/weight_formats.h): a group of panels' rows (about 8 MiB) read,
/// encoded on every core, and written in order at a time. Quantizing is
/// what a compile spends its time on: int4 tries 22 scales a block (the
/// 1.1B LLaMA shape took 107 s on one core of two).
void writePanels(const WeightRows &weight, WeightFormat format,
                 BlobWriter &out) {
  int64_t height = panelRows(format);
  int64_t group = std::max<int64_t>(
      1, (8 << 20) / std::max<int64_t>(1, height * weight.cols * 4));
  std::vector<float> rows(group * height * weight.cols);
  std::vector<std::vector<uint8_t>> panels(group);
  for (int64_t first = 0; first < weight.rows; first += group * height) {
    int64_t count = std::min<int64_t>(group * height, weight.rows - first);
    std::fill(rows.begin(), rows.end(), 0.0f);
    weight.read(first, count, rows.data());
    int64_t used = (count + height - 1) / height;
    llvm::parallelFor(0, used, [&](size_t p) {
      panels[p].clear();
      encodePanel(format, rows.data() + p * height * weight.cols,
                  weight.cols, panels[p]);
    });
    for (int64_t p = 0; p < used; ++p)
      out.write(panels[p].data(), panels[p].size());
    weight.release(first, first + count);
  }
}

/// Writes `weight`, stored in Q4_K, Q5_K, Q6_K or MXFP4 (`format`), as
/// q4_k, q5_k, q6_k or mxfp4 panels: the file's blocks rearranged
/// (encodeCheckpointPanel), a group of panels at a time.
llvm::Error writeCheckpointPanels(llvm::StringRef name,
                                  const WeightRows &weight, WeightFormat format,
                                  BlobWriter &out) {
  std::string stored = checkpointName(format);
  if (weight.storedDtype != stored || !weight.readStored ||
      weight.cols % checkpointBlockElements(format) != 0)
    return makeError("weight '" + name + "' is declared " + formatName(format) +
                     ", which only a tensor stored in " + stored +
                     " can be (its checkpoint stores " + weight.storedDtype +
                     ")");
  int64_t height = TFM_BLOCK_PANEL_ROWS;
  int64_t rowBytes = weight.cols / checkpointBlockElements(format) *
                     checkpointBlockBytes(format);
  int64_t group = std::max<int64_t>(1, (8 << 20) / (height * rowBytes));
  std::vector<uint8_t> rows(group * height * rowBytes);
  std::vector<uint8_t> panel;
  for (int64_t first = 0; first < weight.rows; first += group * height) {
    int64_t count = std::min<int64_t>(group * height, weight.rows - first);
    std::fill(rows.begin(), rows.end(), 0);
    if (!weight.readStored(first, count, rows.data()))
      return makeError("internal error: the " + stored + " blocks of weight '" +
                       name + "' cannot be read as stored");
    for (int64_t p = 0; p < (count + height - 1) / height; ++p) {
      panel.clear();
      encodeCheckpointPanel(format, rows.data() + p * height * rowBytes,
                            weight.cols, panel);
      out.write(panel.data(), panel.size());
    }
    weight.release(first, first + count);
  }
  return llvm::Error::success();
}

/// Writes `weight` row-major in `format` (f32, bf16, f16), a block of rows
/// at a time.
void writeRows(const WeightRows &weight, WeightFormat format, BlobWriter &out) {
  int64_t block = std::max<int64_t>(1, (1 << 16) / std::max<int64_t>(weight.cols, 1));
  std::vector<float> rows(block * weight.cols);
  std::vector<uint8_t> bytes;
  for (int64_t first = 0; first < weight.rows; first += block) {
    int64_t count = std::min<int64_t>(block, weight.rows - first);
    weight.read(first, count, rows.data());
    bytes.clear();
    encodeRowMajor(format, rows.data(), count * weight.cols, bytes);
    out.write(bytes.data(), bytes.size());
    weight.release(first, first + count);
  }
}

/// Escapes `"` and `\` for a C (or GNU assembler) string.
std::string escapeQuoted(llvm::StringRef text) {
  std::string out;
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    out += c;
  }
  return out;
}

/// `text` as a C string literal: any bytes but NUL (which would end it
/// early; callers refuse it), one line of source per line of text.
std::string cStringLiteral(llvm::StringRef text) {
  std::string out = "\"";
  for (unsigned char c : text) {
    switch (c) {
    case '"': out += "\\\""; break;
    case '\\': out += "\\\\"; break;
    case '\t': out += "\\t"; break;
    case '?': out += "\\?"; break; // never a trigraph
    case '\n': out += "\\n\"\n    \""; break;
    default:
      if (c < 0x20 || c == 0x7f) // octal: \ooo
        out += {'\\', char('0' + (c >> 6)), char('0' + (c >> 3 & 7)),
                char('0' + (c & 7))};
      else
        out += char(c);
    }
  }
  return out + "\"";
}

/// Static libraries embed their weights (.incbin): the application's link
/// places them. Executables and shared libraries get them appended after
/// linking (appendWeights), which the assembler and linker never hold in
/// memory.
bool embedsWeights(const LinkOptions &options) {
  return !options.externalWeights &&
         options.kind == OutputKind::StaticLibrary;
}

/// Bytes from one rank's weights to the next's in the weights file (or
/// what is appended): each rank's section starts aligned, so it maps as
/// the one blob of a model that is not split does.
uint64_t rankStride(uint64_t size) {
  return llvm::alignTo(size, TFM_APPENDED_ALIGNMENT);
}

/// Copies the file `blobPath` into `out` at `offset`, through the kernel
/// (copy_file_range) where it can. Returns the step that failed, or "".
std::string copyBlob(llvm::StringRef blobPath, int out, uint64_t offset,
                     uint64_t size) {
  int in = ::open(blobPath.str().c_str(), O_RDONLY | O_CLOEXEC);
  if (in < 0)
    return ("open '" + blobPath + "'").str();
  // The padding before it is a hole: ftruncate extends without writing.
  if (::ftruncate(out, off_t(offset)) != 0 ||
      ::lseek(out, off_t(offset), SEEK_SET) < 0) {
    ::close(in);
    return "pad";
  }
  uint64_t copied = 0;
  while (copied < size) {
    ssize_t n = ::copy_file_range(in, nullptr, out, nullptr, size - copied, 0);
    if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EINVAL ||
                  errno == EOPNOTSUPP) && copied == 0) {
      // File systems without copy_file_range: through a small buffer.
      std::vector<char> buffer(1 << 20);
      while (copied < size) {
        ssize_t r = ::read(in, buffer.data(),
                           std::min<uint64_t>(buffer.size(), size - copied));
        if (r <= 0 || ::write(out, buffer.data(), size_t(r)) != r) {
          ::close(in);
          return "copy";
        }
        copied += uint64_t(r);
      }
      break;
    }
    if (n <= 0) {
      ::close(in);
      return "copy";
    }
    copied += uint64_t(n);
  }
  ::close(in);
  return "";
}

/// Appends the blobs at `blobPaths` (one per rank, `size` bytes each) to
/// the linked `outputPath` at an aligned offset, a rank stride apart, then
/// the trailer the runtime finds them by (tfm_format.h). With `trailer`
/// false, `outputPath` is a weights file of the sections alone.
llvm::Error writeSections(llvm::StringRef outputPath,
                          llvm::ArrayRef<std::string> blobPaths, uint64_t size,
                          uint64_t checksum, bool trailer) {
  auto fail = [&](const llvm::Twine &what) {
    return makeError("cannot " +
                     llvm::Twine(trailer ? "append the weights to" : "write") +
                     " '" + outputPath + "': " + what + ": " +
                     std::strerror(errno));
  };
  int flags = trailer ? O_WRONLY | O_CLOEXEC
                      : O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
  int out = ::open(outputPath.str().c_str(), flags, 0644);
  if (out < 0)
    return fail("open");
  auto finish = [&](llvm::Error err) {
    if (::close(out) != 0 && !err)
      return fail("close");
    return err;
  };
  off_t end = trailer ? ::lseek(out, 0, SEEK_END) : 0;
  if (end < 0)
    return finish(fail("seek"));
  uint64_t offset = llvm::alignTo(uint64_t(end), TFM_APPENDED_ALIGNMENT);
  for (size_t r = 0; r < blobPaths.size(); ++r) {
    std::string failed =
        copyBlob(blobPaths[r], out, offset + r * rankStride(size), size);
    if (!failed.empty())
      return finish(fail(failed));
  }
  if (!trailer)
    return finish(llvm::Error::success());
  tfm_appended_trailer appended = {};
  std::memcpy(appended.magic, TFM_APPENDED_MAGIC, sizeof appended.magic);
  appended.offset = offset;
  appended.size = rankStride(size) * (blobPaths.size() - 1) + size;
  appended.checksum = checksum;
  if (::write(out, &appended, sizeof appended) != ssize_t(sizeof appended))
    return finish(fail("write the trailer"));
  return finish(llvm::Error::success());
}

/// The generated C file: embedded blobs (.incbin) and the model description.
/// The weight blobs written: one per rank (one for a model not split).
struct WrittenWeights {
  uint64_t size = 0;
  std::vector<uint64_t> checksums;
  /// Bytes every rank holds alike.
  uint64_t replicated = 0;
};

/// The blobs the model embeds (its weights, its tokenizer), assembled in:
/// no multi-hundred-MB C array for the compiler.
void writeEmbeddedBlobs(llvm::raw_ostream &os, const ModelDescription &model,
                        const LinkOptions &options, llvm::StringRef weightsPath,
                        llvm::StringRef tokenizerPath) {
  auto embed = [&](llvm::StringRef symbol, llvm::StringRef path) {
    // The path is an assembler string inside a C string: escaped twice.
    os << "__asm__(\".section .rodata." << symbol
       << ",\\\"a\\\",@progbits\\n\"\n"
       << "        \".balign 64\\n\"\n"
       << "        \"" << symbol << ":\\n\"\n"
       << "        \".incbin \\\"" << escapeQuoted(escapeQuoted(path))
       << "\\\"\\n\"\n"
       << "        \".previous\\n\");\n"
       << "extern const uint8_t " << symbol
       << "[] __attribute__((visibility(\"hidden\")));\n";
  };
  if (embedsWeights(options))
    embed("tfm_weights_blob", weightsPath);
  if (!model.tokenizerBlob.empty())
    embed("tfm_tokenizer_blob", tokenizerPath);
}

/// The statics the description points at for a model's inputs and
/// outputs: class labels, stop tokens, image and audio preprocessing, a
/// waveform's input, a diffusion pipeline.
void writeInputStatics(llvm::raw_ostream &os, const ModelDescription &model) {
  if (!model.labels.empty()) {
    os << "static const char *const tfm_labels[] = {";
    for (const std::string &label : model.labels)
      os << cStringLiteral(label) << ", ";
    os << "};\n";
  }
  if (const std::optional<tfm_image_preprocessing> &image =
          model.imagePreprocessing) {
    auto floats = [&](const float *values) {
      std::string text;
      for (int c = 0; c < 3; ++c)
        text += (c ? ", " : "") + llvm::formatv("{0:e9}f", values[c]).str();
      return text;
    };
    const std::vector<int64_t> &pinpoints = model.imageGridPinpoints;
    if (!pinpoints.empty()) {
      os << "static const int64_t tfm_image_pinpoints[] = {";
      for (size_t i = 0; i < pinpoints.size(); ++i)
        os << (i ? ", " : "") << pinpoints[i];
      os << "};\n";
    }
    os << "static const tfm_image_preprocessing tfm_image = {\n"
       << "    .resize_height = " << image->resize_height
       << ", .resize_width = " << image->resize_width
       << ", .shortest_edge = " << image->shortest_edge << ",\n"
       << "    .resample = " << image->resample
       << ", .crop_height = " << image->crop_height
       << ", .crop_width = " << image->crop_width << ",\n"
       << "    .rescale = " << llvm::formatv("{0:e17}", image->rescale)
       << ", .normalize = " << image->normalize << ",\n"
       << "    .mean = {" << floats(image->mean) << "}, .std = {"
       << floats(image->std) << "},\n"
       << "    .num_grid_pinpoints = " << pinpoints.size() / 2
       << ", .grid_pinpoints = "
       << (pinpoints.empty() ? "0" : "tfm_image_pinpoints") << ",\n"
       << "    .longest_edge = " << image->longest_edge
       << ", .split_tiles = " << image->split_tiles << "};\n";
  }
  if (const std::optional<tfm_audio_preprocessing> &audio =
          model.audioPreprocessing)
    os << "static const tfm_audio_preprocessing tfm_audio = {\n"
       << "    .mel_bins = " << audio->mel_bins
       << ", .sampling_rate = " << audio->sampling_rate
       << ", .n_fft = " << audio->n_fft
       << ", .hop_length = " << audio->hop_length
       << ", .samples = " << audio->samples << ",\n"
       << "    .kaldi = " << audio->kaldi
       << ", .normalize = " << audio->normalize
       << ", .window_length = " << audio->window_length
       << ", .frames = " << audio->frames << ",\n"
       << "    .mean = " << llvm::formatv("{0:e9}f", audio->mean)
       << ", .std = " << llvm::formatv("{0:e9}f", audio->std) << "};\n";
  if (!model.stopTokens.empty()) {
    os << "static const int32_t tfm_stop_tokens[] = {";
    for (auto [i, token] : llvm::enumerate(model.stopTokens))
      os << (i ? ", " : "") << token;
    os << "};\n";
  }
  if (const std::optional<ModelDescription::Lora> &lora = model.lora) {
    os << "static const tfm_lora_target tfm_lora_targets[] = {\n";
    for (const ModelDescription::LoraTarget &target : lora->targets)
      os << "    {" << cStringLiteral(target.weight) << ", "
         << target.inFeatures << ", " << target.outFeatures << "},\n";
    os << "};\nstatic const tfm_lora_desc tfm_lora = {" << lora->slots << ", "
       << lora->rank << ", " << lora->targets.size()
       << ", tfm_lora_targets};\n";
  }
  if (const std::optional<ModelDescription::Diffusion> &d = model.diffusion) {
    os << "static const tfm_diffusion_desc tfm_diffusion = {\n   ";
    for (size_t i = 0; i < d->integers.size(); ++i)
      os << " ." << kDiffusionIntegerFields[i] << " = " << d->integers[i]
         << ",";
    os << "\n    .scaling_factor = "
       << llvm::formatv("{0:e9}f", d->scalingFactor) << ",\n"
       << "    .scheduler_config = " << cStringLiteral(d->schedulerConfig)
       << "};\n";
  }
  if (const std::optional<tfm_waveform_input> &w = model.waveform)
    os << "static const tfm_waveform_input tfm_waveform = {\n"
       << "    .sampling_rate = " << w->sampling_rate
       << ", .min_samples = " << w->min_samples
       << ", .frame_samples = " << w->frame_samples << ",\n"
       << "    .blank = " << w->blank
       << ", .word_delimiter = " << w->word_delimiter
       << ", .clean_up = " << w->clean_up
       << ", .lowercase = " << w->lowercase << "};\n";
}

/// An encoder-decoder's generation defaults, each token list a static
/// array (or a null pointer when empty).
void writeGenerationDefaults(llvm::raw_ostream &os,
                             const ModelDescription &model) {
  const std::optional<tfm_generation_defaults> &g = model.generation;
  if (!g)
    return;
  // Each token list as a static array, or a null pointer when empty.
  auto tokens = [&](const char *name, const std::vector<int32_t> &list) {
    if (list.empty())
      return std::string("0");
    os << "static const int32_t " << name << "[] = {";
    for (int32_t token : list)
      os << token << ", ";
    os << "};\n";
    return std::string(name);
  };
  std::string suppressed = tokens("tfm_suppressed", model.suppressedTokens);
  std::string prompt = tokens("tfm_prompt", model.promptTokens);
  std::string beginSuppressed =
      tokens("tfm_begin_suppressed", model.beginSuppressedTokens);
  std::string badWords = tokens("tfm_bad_words", model.badWordTokens);
  std::string badWordLengths =
      tokens("tfm_bad_word_lengths", model.badWordLengths);
  std::string languages = tokens("tfm_languages", model.languageTokens);
  os << "static const tfm_generation_defaults tfm_generation = {\n"
     << "    .num_beams = " << g->num_beams
     << ", .max_new_tokens = " << g->max_new_tokens
     << ", .min_new_tokens = " << g->min_new_tokens << ",\n"
     << "    .no_repeat_ngram_size = " << g->no_repeat_ngram_size
     << ", .forced_eos = " << g->forced_eos
     << ", .forced_bos = " << g->forced_bos
     << ", .length_penalty = " << llvm::formatv("{0:e9}f", g->length_penalty)
     << ", .early_stopping = " << g->early_stopping << ",\n"
     << "    .num_suppressed = " << model.suppressedTokens.size()
     << ", .suppressed = " << suppressed << ",\n"
     << "    .num_bad_words = " << model.badWordLengths.size()
     << ", .bad_word_lengths = " << badWordLengths
     << ", .bad_words = " << badWords << ",\n"
     << "    .num_prompt = " << model.promptTokens.size()
     << ", .prompt = " << prompt << ",\n"
     << "    .num_begin_suppressed = " << model.beginSuppressedTokens.size()
     << ", .begin_suppressed = " << beginSuppressed << ",\n"
     << "    .no_timestamps = " << g->no_timestamps
     << ", .max_initial_timestamp = " << g->max_initial_timestamp
     << ", .start_of_previous = " << g->start_of_previous
     << ", .transcribe = " << g->transcribe << ", .translate = " << g->translate
     << ",\n"
     << "    .num_languages = " << model.languageTokens.size()
     << ", .languages = " << languages << ",\n"
     << "    .median_filter_width = " << g->median_filter_width << "};\n";
}

/// tfm_model_desc itself, named `descSymbol` (exported from a library).
void writeModelDesc(llvm::raw_ostream &os, const ModelDescription &model,
                    const LinkOptions &options, const WrittenWeights &written,
                    llvm::StringRef weightsPath, uint64_t tokenizerBytes,
                    llvm::StringRef descSymbol, bool library) {
  os << "\n"
     << (library ? "__attribute__((visibility(\"default\"))) " : "")
     << "const tfm_model_desc " << descSymbol << " = {\n"
     << "    .abi_version = TFM_ABI_VERSION,\n"
     << "    .target = " << (model.cudaTarget ? "TFM_TARGET_CUDA" : "TFM_TARGET_CPU")
     << ",\n"
     << "    .name = " << cStringLiteral(model.name) << ",\n"
     << "    .family = " << cStringLiteral(model.family) << ",\n"
     << "    .vocab_size = " << model.vocabSize << ",\n"
     << "    .max_context = " << model.maxContext << ",\n"
     << "    .bos_token = " << model.bosToken << ",\n"
     << "    .eos_token = " << model.eosToken << ",\n"
     << "    .add_bos = " << (model.addBos ? 1 : 0) << ",\n";
  if (options.externalWeights)
    os << "    .weights = 0,\n    .weights_file = "
       << cStringLiteral(llvm::sys::path::filename(weightsPath)) << ",\n";
  else if (embedsWeights(options))
    os << "    .weights = tfm_weights_blob,\n    .weights_file = 0,\n";
  else
    os << "    .weights = 0,\n    .weights_file = 0,\n"
       << "    .weights_appended = "
       << (options.kind == OutputKind::Executable
               ? "TFM_WEIGHTS_APPENDED_TO_EXECUTABLE"
               : "TFM_WEIGHTS_APPENDED_TO_LIBRARY")
       << ",\n";
  os << "    .weights_size = " << written.size << "ull,\n"
     << "    .weights_checksum = " << written.checksums[0] << "ull,\n"
     << "    .decode_weight_bytes = " << model.decodeWeightBytes << "ull,\n";
  if (!model.tokenizerBlob.empty())
    os << "    .tokenizer = tfm_tokenizer_blob,\n"
       << "    .tokenizer_size = " << tokenizerBytes << "ull,\n";
  else
    os << "    .tokenizer = 0,\n    .tokenizer_size = 0,\n";
  os << "    .chat_template = "
     << (model.chatTemplate.empty() ? "0"
                                    : cStringLiteral(model.chatTemplate))
     << ",\n";
  os << "    .num_labels = " << model.labels.size() << ",\n"
     << "    .labels = " << (model.labels.empty() ? "0" : "tfm_labels")
     << ",\n"
     << "    .image_preprocessing = "
     << (model.imagePreprocessing ? "&tfm_image" : "0") << ",\n"
     << "    .generation = " << (model.generation ? "&tfm_generation" : "0")
     << ",\n"
     << "    .audio_preprocessing = "
     << (model.audioPreprocessing ? "&tfm_audio" : "0") << ",\n";
  os << "    .num_entry_points = " << model.entryPoints.size() << ",\n"
     << "    .entry_points = tfm_entry_points,\n"
     << "    .num_caches = " << model.caches.size() << ",\n"
     << "    .caches = " << (model.caches.empty() ? "0" : "tfm_caches")
     << ",\n";
  if (model.ranks > 1)
    os << "    .ranks = " << model.ranks << ",\n"
       << "    .rank_stride = " << rankStride(written.size) << "ull,\n"
       << "    .rank_checksums = tfm_rank_checksums,\n"
       << "    .replicated_weights_size = " << written.replicated << "ull,\n";
  if (model.pipelineStages > 1)
    os << "    .pipeline_stages = " << model.pipelineStages << ",\n";
  if (model.logitScale > 0)
    os << "    .logit_scale = " << llvm::formatv("{0:e9}f", model.logitScale)
       << ",\n";
  if (model.logitBias)
    os << "    .sigmoid_scores = 1,\n"
       << "    .logit_bias = " << llvm::formatv("{0:e9}f", *model.logitBias)
       << ",\n";
  if (model.textPadToken)
    os << "    .pad_texts = 1,\n"
       << "    .text_pad_token = " << *model.textPadToken << ",\n";
  if (model.imageToken >= 0)
    os << "    .image_token = " << model.imageToken << ",\n";
  if (model.imageRowsBidirectional)
    os << "    .image_rows_bidirectional = 1,\n";
  if (model.imageTileTokens.size() == 2)
    os << "    .image_tiles_marked = 1,\n"
       << "    .image_tile_tokens = {" << model.imageTileTokens[0] << ", "
       << model.imageTileTokens[1] << "},\n";
  if (model.waveform)
    os << "    .waveform = &tfm_waveform,\n";
  if (model.diffusion)
    os << "    .diffusion = &tfm_diffusion,\n";
  if (!model.stopTokens.empty())
    os << "    .num_stop_tokens = " << model.stopTokens.size() << ",\n"
       << "    .stop_tokens = tfm_stop_tokens,\n";
  if (model.lora)
    os << "    .lora = &tfm_lora,\n";
  os << "};\n";
}

std::string
generateModelSource(const ModelDescription &model, const LinkOptions &options,
                    const WrittenWeights &written, llvm::StringRef weightsPath,
                    llvm::StringRef tokenizerPath, uint64_t tokenizerBytes) {
  std::string source;
  llvm::raw_string_ostream os(source);
  os << "/* Generated by tfmc: the description of model '" << model.name
     << "'. */\n#include \"tfm/tfm_model_abi.h\"\n\n";
  writeEmbeddedBlobs(os, model, options, weightsPath, tokenizerPath);
  // Entry points are `_mlir_ciface_<prefix>_<name>` in a library.
  std::string symbolPrefix =
      "_mlir_ciface_" +
      (options.kind == OutputKind::Executable ? "" : options.prefix + "_");
  os << "\n";
  writeInputStatics(os, model);
  writeGenerationDefaults(os, model);
  writeEntryPointTable(model, symbolPrefix, os);
  // Executables use the description main.c expects; libraries export
  // <prefix>_model and nothing else.
  bool library = options.kind != OutputKind::Executable;
  std::string descSymbol =
      library ? options.prefix + "_model" : "tfm_builtin_model";
  // A split model in an archive pulls libtfmrt_mpi's ranks.o into the
  // application's link, which refers to it only weakly otherwise (ranks.h).
  if (model.ranks > 1 && options.kind == OutputKind::StaticLibrary)
    os << "extern void tfm_ranks_join(void);\n"
       << "__attribute__((used)) static void (*const tfm_needs_ranks)(void) = "
          "tfm_ranks_join;\n";
  if (model.ranks > 1) {
    os << "static const uint64_t tfm_rank_checksums[] = {";
    for (uint64_t checksum : written.checksums)
      os << checksum << "ull, ";
    os << "};\n";
  }
  writeModelDesc(os, model, options, written, weightsPath, tokenizerBytes,
                 descSymbol, library);
  return source;
}

} // namespace

llvm::Expected<uint64_t> mlir::tfm::writeWeightBlob(
    ModuleOp module, WeightLookup weights, llvm::StringRef path,
    const std::function<void(uint64_t, uint64_t)> &progress, int64_t rank,
    uint64_t *replicatedBytes) {
  auto layout = module->getAttrOfType<DictionaryAttr>(kWeightLayoutAttrName);
  auto bytes = module->getAttrOfType<IntegerAttr>(kWeightBytesAttrName);
  if (!layout || !bytes)
    return makeError("internal error: the module has no weight layout (run "
                     "tfm-lower-to-linalg first)");
  auto panels = module->getAttrOfType<DictionaryAttr>(kWeightPanelsAttrName);
  auto formats =
      module->getAttrOfType<DictionaryAttr>(kWeightFormatsAttrName);
  // Front to back: weights in the order of their offsets.
  std::vector<std::pair<int64_t, StringRef>> order;
  for (NamedAttribute entry : layout)
    order.push_back({cast<IntegerAttr>(entry.getValue()).getInt(),
                     entry.getName().getValue()});
  llvm::sort(order);
  BlobWriter out(path);
  uint64_t replicated = 0;
  RankWeights split(module);
  for (auto [offset, name] : order) {
    std::optional<WeightRows> weight = weights(split.source(name, rank));
    if (weight) {
      llvm::Expected<WeightRows> part = split.part(name, *weight, rank);
      if (!part)
        return part.takeError();
      weight = *part;
    }
    uint64_t start = std::max<uint64_t>(out.position(), offset);
    auto shape = panels ? panels.getAs<DenseI64ArrayAttr>(name)
                        : DenseI64ArrayAttr();
    if (!weight || uint64_t(offset) < out.position() ||
        (shape && (weight->rows != shape[0] || weight->cols != shape[1])))
      return makeError("internal error: no data for weight '" + name + "'");
    WeightFormat format = WeightFormat::F32;
    if (auto formatName = formats ? formats.getAs<StringAttr>(name) : nullptr)
      format = parseFormatName(formatName.getValue()).value_or(format);
    if (isBlockFormat(format) && !shape)
      return makeError("internal error: weight '" + name +
                       "' in blocks is not recorded as panels");
    out.zerosTo(offset);
    if (isCopiedFromCheckpoint(format)) {
      if (llvm::Error err = writeCheckpointPanels(name, *weight, format, out))
        return std::move(err);
    } else if (shape)
      writePanels(*weight, format, out);
    else
      writeRows(*weight, format, out);
    weight->release(0, weight->rows);
    if (split.isReplicated(name))
      replicated += out.position() - start;
    if (progress)
      progress(out.position(), bytes.getInt());
  }
  if (out.position() > uint64_t(bytes.getInt()))
    return makeError("internal error: the weights overrun the layout");
  out.zerosTo(bytes.getInt());
  uint64_t checksum = out.finish();
  if (llvm::Error err = out.status())
    return std::move(err);
  if (replicatedBytes)
    *replicatedBytes = replicated;
  return checksum;
}

namespace {

/// The capacity of the model's self-attention cache (0: none).
int64_t kvCacheCapacity(const ModelDescription &model) {
  for (const TensorDescription &cache : model.caches)
    if (cache.cacheKind == TFM_CACHE_SELF_ATTENTION && cache.shape.size() == 5)
      return cache.shape[2];
  return 0;
}

} // namespace

std::string mlir::tfm::generateModelHeader(const ModelDescription &model,
                                           const LinkOptions &options) {
  std::string macro = llvm::StringRef(options.prefix).upper();
  std::string header;
  llvm::raw_string_ostream os(header);
  os << "/* " << llvm::sys::path::filename(options.headerPath)
     << " - the compiled model '" << model.name << "' (generated by tfmc";
  if (!model.source.empty())
    os << " from " << model.source;
  os << ").\n"
     << " *\n"
     << " * Link lib" << model.name << " and the tfmc runtime (libtfmrt), then:\n"
     << " *\n"
     << " *   tfm_model *model;  tfm_status status;\n"
     << " *   if (tfm_model_load(&" << options.prefix
     << "_model, NULL, &model, &status) != TFM_OK) ...\n"
     << " *\n"
     << " * and use the API of runtime/include/tfm/tfm_runtime.h (sessions, generation,\n"
     << " * tokenizer). The description is constant and may be shared by any\n"
     << " * number of threads and models.\n"
     << " */\n\n"
     << "#ifndef " << macro << "_MODEL_H\n#define " << macro << "_MODEL_H\n\n"
     << "#include \"tfm/tfm_runtime.h\"\n\n"
     << "#define " << macro << "_VOCAB_SIZE " << model.vocabSize << "\n"
     << "#define " << macro << "_MAX_CONTEXT " << model.maxContext << "\n"
     << "#define " << macro << "_KV_CACHE_CAPACITY "
     << kvCacheCapacity(model) << "\n"
     << "#define " << macro << "_HIDDEN_SIZE " << model.hiddenSize << "\n"
     << "#define " << macro << "_NUM_LAYERS " << model.numLayers << "\n"
     << "#define " << macro << "_NUM_HEADS " << model.numHeads << "\n"
     << "#define " << macro << "_NUM_KV_HEADS " << model.numKVHeads << "\n"
     << "#define " << macro << "_BOS_TOKEN " << model.bosToken
     << " /* -1: none */\n"
     << "#define " << macro << "_EOS_TOKEN " << model.eosToken
     << " /* -1: none */\n\n"
     << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n"
     << "/* What tfm_model_load needs to know about '" << model.name
     << "'. */\n"
     << "extern const tfm_model_desc " << options.prefix << "_model;\n\n"
     << "#ifdef __cplusplus\n}\n#endif\n\n#endif /* " << macro
     << "_MODEL_H */\n";
  return header;
}

namespace {

/// Runs a program, reporting its failure with `what`.
llvm::Error runTool(llvm::StringRef what, llvm::StringRef program,
                    llvm::ArrayRef<llvm::StringRef> args) {
  llvm::ErrorOr<std::string> path = llvm::sys::findProgramByName(program);
  if (!path)
    return makeError("cannot find '" + program + "' for " + what);
  std::string message;
  int rc = llvm::sys::ExecuteAndWait(*path, args, std::nullopt, {}, 0, 0,
                                     &message);
  if (rc != 0)
    return makeError(what + " failed (" + program + " exited with " +
                     llvm::Twine(rc) + (message.empty() ? "" : ": " + message) +
                     ")");
  return llvm::Error::success();
}

} // namespace

llvm::Error mlir::tfm::linkModel(ModuleOp module, WeightLookup weights,
                                 const ModelDescription &model,
                                 llvm::StringRef objectPath,
                                 const LinkOptions &options) {
  llvm::SmallString<128> workDir;
  if (std::error_code ec =
          llvm::sys::fs::createUniqueDirectory("tfmc-link", workDir))
    return makeError("cannot create a temporary folder: " + ec.message());
  auto inWorkDir = [&](llvm::StringRef name) {
    llvm::SmallString<128> path(workDir);
    llvm::sys::path::append(path, name);
    return path.str().str();
  };
  // Everything runs in a lambda so that the folder goes away on any path.
  llvm::Error result = [&]() -> llvm::Error {
    std::string weightsPath = options.externalWeights
                                  ? options.outputPath + ".weights"
                                  : inWorkDir("weights.bin");
    // A model split over ranks: a blob per rank, then sections of one file.
    WrittenWeights written;
    std::vector<std::string> blobPaths;
    for (int64_t rank = 0; rank < model.ranks; ++rank) {
      blobPaths.push_back(model.ranks == 1
                              ? weightsPath
                              : inWorkDir("weights." + std::to_string(rank) +
                                          ".bin"));
      llvm::Expected<uint64_t> checksum =
          writeWeightBlob(module, weights, blobPaths.back(),
                          options.weightProgress, rank, &written.replicated);
      if (!checksum)
        return checksum.takeError();
      written.checksums.push_back(*checksum);
    }
    written.size = uint64_t(
        module->getAttrOfType<IntegerAttr>(kWeightBytesAttrName).getInt());
    if (model.ranks > 1 && (options.externalWeights || embedsWeights(options)))
      if (llvm::Error err = writeSections(weightsPath, blobPaths, written.size,
                                          written.checksums[0],
                                          /*trailer=*/false))
        return err;
    std::string tokenizerPath = inWorkDir("tokenizer.bin");
    const std::string &tokenizerBlob = model.tokenizerBlob;
    if (!tokenizerBlob.empty())
      if (llvm::Error err = writeFile(tokenizerPath, tokenizerBlob))
        return err;
    std::string sourcePath = inWorkDir("model.c");
    if (llvm::Error err = writeFile(
            sourcePath, generateModelSource(model, options, written,
                                            weightsPath,
                                            tokenizerPath,
                                            tokenizerBlob.size())))
      return err;
    if (options.kind != OutputKind::Executable)
      if (llvm::Error err = writeFile(options.headerPath,
                                      generateModelHeader(model, options)))
        return err;

    std::string include = "-I" + options.runtimeIncludeDir;
    auto appendUnlessExternal = [&](llvm::Error linked) -> llvm::Error {
      if (linked || options.externalWeights)
        return linked;
      return writeSections(options.outputPath, blobPaths, written.size,
                           written.checksums[0], /*trailer=*/true);
    };
    switch (options.kind) {
    case OutputKind::Executable: {
      llvm::SmallVector<llvm::StringRef> args = {
          options.cc, "-O2", kSanitizers, kHugeSegments, "-o",
          options.outputPath, objectPath, sourcePath, include,
          options.runtimeMainLibrary};
      // The command line refers to image and audio loading weakly
      // (cli/main_internal.h): only a model that takes images or audio
      // pulls them in, with the libraries they decode with.
      bool media = model.imagePreprocessing || model.audioPreprocessing ||
                   model.waveform || model.diffusion;
      if (media)
        args.append(
            {"-Wl,--undefined=tfm_image_load",
             "-Wl,--undefined=tfm_image_tokens",
             "-Wl,--undefined=tfm_audio_load", "-Wl,--undefined=tfm_audio_read",
             "-Wl,--undefined=tfm_image_write_png",
             "-Wl,--undefined=tfm_image_read", options.runtimeMediaLibrary});
      // A model split over ranks: libtfmrt_mpi, which the core refers to
      // weakly (runtime/core/ranks.h), and MPI.
      if (model.ranks > 1)
        args.append({"-Wl,--undefined=tfm_ranks_join",
                     options.runtimeMpiLibrary});
      // A model with @verify may load a draft model's library (--draft):
      // the whole runtime is linked in and exported, so the draft's code
      // binds to this executable's kernels, thread pool and allocation
      // counts instead of a second runtime from libtfmrt.so, whose idle
      // workers would spin against these on the same cores.
      bool takesDraft =
          llvm::any_of(model.entryPoints, [](const EntryPointDescription &e) {
            return e.name == "verify";
          });
      if (takesDraft)
        args.append({"-Wl,--export-dynamic", "-Wl,--whole-archive",
                     options.runtimeLibrary, "-Wl,--no-whole-archive"});
      else
        args.push_back(options.runtimeLibrary);
      args.append({"-lopenblas", "-lutf8proc", "-lz"});
      if (model.ranks > 1)
        for (const std::string &library : options.mpiLibraries)
          args.push_back(library);
      if (media)
        args.append({"-lpng", "-ljpeg", "-lfftw3", "-lsndfile", "-lsoxr"});
      args.push_back("-lm");
      return appendUnlessExternal(runTool(
          "linking '" + options.outputPath + "'", options.cc, args));
    }
    case OutputKind::SharedLibrary: {
      // The runtime is shared too: one copy however many models load. It
      // runs split models where tfmc has MPI; their code calls MPI itself.
      std::string libraryDir = "-L" + options.runtimeLibraryDir;
      std::string rpath = "-Wl,-rpath," + options.runtimeLibraryDir;
      llvm::SmallVector<llvm::StringRef> args = {options.cc,
                                                 "-O2",
                                                 kSanitizers,
                                                 "-shared",
                                                 "-fPIC",
                                                 kHugeSegments,
                                                 "-fvisibility=hidden",
                                                 "-o",
                                                 options.outputPath,
                                                 objectPath,
                                                 sourcePath,
                                                 include,
                                                 libraryDir,
                                                 rpath,
                                                 "-ltfmrt"};
      if (model.ranks > 1)
        for (const std::string &library : options.mpiLibraries)
          args.push_back(library);
      args.push_back("-lm");
      return appendUnlessExternal(
          runTool("linking '" + options.outputPath + "'", options.cc, args));
    }
    case OutputKind::StaticLibrary: {
      // The model alone: applications link the runtime once.
      std::string dataObject = inWorkDir("model_data.o");
      if (llvm::Error err = runTool(
              "compiling the model description", options.cc,
              {options.cc, "-O2", "-fPIC", "-fvisibility=hidden", "-c", "-o",
               dataObject, sourcePath, include}))
        return err;
      llvm::sys::fs::remove(options.outputPath);
      return runTool("archiving '" + options.outputPath + "'", "ar",
                     {"ar", "rcs", options.outputPath, objectPath, dataObject});
    }
    }
    llvm_unreachable("unknown output kind");
  }();
  llvm::sys::fs::remove_directories(workDir);
  return result;
}

llvm::Error mlir::tfm::linkCudaEmulator(llvm::StringRef objectPath,
                                        const LinkOptions &options) {
  return runTool("linking '" + options.outputPath + "'", options.cc,
                 {options.cc, "-O2", kSanitizers, "-shared", "-fPIC", "-o",
                  options.outputPath, objectPath, options.cudaEmulatorLibrary,
                  "-lm"});
}
