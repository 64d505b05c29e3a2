//===- Llama2c.cpp - reader of llama2.c checkpoints ---------------------===//
//
// Format (little endian): 7 int32 `dim, hidden_dim, n_layers, n_heads,
// n_kv_heads, vocab_size, seq_len` (negative vocab_size: a separate
// classifier at the end), then f32 tensors in a fixed order, two legacy RoPE
// tables to skip, and the classifier if not shared. RoPE rotates
// interleaved pairs; RMSNorm epsilon is 1e-5.
//
//===----------------------------------------------------------------------===//

#include "frontend/families/Llama2c.h"
#include "frontend/builders/DecoderBuilder.h"
#include "frontend/formats/ErrorMessages.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <cstring>

using namespace mlir;
using namespace mlir::tfm;

namespace {

struct Llama2cHeader {
  int32_t dim, hiddenDim, numLayers, numHeads, numKVHeads, vocabSize, seqLen;
};

DecoderSpec llama2cSpec(const Llama2cHeader &h) {
  DecoderSpec spec;
  spec.family = "llama2.c";
  spec.vocabSize = h.vocabSize < 0 ? -int64_t(h.vocabSize) : h.vocabSize;
  spec.hiddenSize = h.dim;
  spec.numLayers = h.numLayers;
  spec.numHeads = h.numHeads;
  spec.numKVHeads = h.numKVHeads;
  spec.intermediateSize = h.hiddenDim;
  spec.maxContext = h.seqLen;
  spec.rmsNorm = true;
  spec.normEpsilon = 1e-5;
  spec.ropeTheta = 10000.0;
  spec.ropeStyle = mlir::tfm::RopeStyle::interleaved;
  spec.gatedMlp = true;
  spec.activation = mlir::tfm::ActivationKind::silu;
  // Meta's names, which llama2.c's export follows.
  spec.tokenEmbedding = "tok_embeddings.weight";
  spec.finalNorm = "norm.weight";
  spec.lmHead = h.vocabSize < 0 ? "output.weight" : "";
  spec.layer = {"layers.{}.attention_norm.weight",
                "layers.{}.attention.wq.weight",
                "layers.{}.attention.wk.weight",
                "layers.{}.attention.wv.weight",
                "layers.{}.attention.wo.weight",
                "layers.{}.ffn_norm.weight",
                "layers.{}.feed_forward.w3.weight",
                "layers.{}.feed_forward.w1.weight",
                "layers.{}.feed_forward.w2.weight"};
  return spec;
}

} // namespace

llvm::Expected<LoadedModel> tfm::loadLlama2cModel(mlir::MLIRContext &context,
                                                  llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return makeError("cannot read '" + path +
                     "': " + buffer.getError().message());
  llvm::StringRef data = (*buffer)->getBuffer();
  if (data.size() < sizeof(Llama2cHeader))
    return makeError(path + ": " + llvm::Twine(data.size()) +
                     " bytes is too short for a llama2.c header (28 bytes)");
  Llama2cHeader h;
  std::memcpy(&h, data.data(), sizeof h);
  DecoderSpec spec = llama2cSpec(h);
  if (llvm::Error err = validateDecoderSpec(spec, path))
    return std::move(err);

  // Walk the tensors in file order, checking the size as we go.
  LoadedModel model;
  int64_t dim = spec.hiddenSize, hidden = spec.intermediateSize,
          layers = spec.numLayers, kvDim = spec.numKVHeads * spec.headDim();
  size_t at = sizeof h;
  std::string source = llvm::sys::path::filename(path).str();
  // In 128 bits: each size is below 2^31 (validateDecoderSpec), so these
  // products of up to four cannot overflow, whatever the header says.
  auto expectedBytes = [&]() -> __int128 {
    __int128 floats = __int128(spec.vocabSize) * dim +
                      __int128(layers) * dim * 2 +
                      __int128(layers) * dim * dim * 2 +
                      __int128(layers) * kvDim * dim * 2 +
                      __int128(layers) * hidden * dim * 3 + dim +
                      __int128(spec.maxContext) * spec.headDim();
    if (!spec.lmHead.empty())
      floats += __int128(spec.vocabSize) * dim;
    return sizeof h + 4 * floats;
  };
  __int128 expected = expectedBytes();
  if (__int128(data.size()) != expected) {
    std::string implied =
        expected > __int128(UINT64_MAX)
            ? std::string("more than 2^64")
            : std::to_string(static_cast<uint64_t>(expected));
    return makeError(path + ": the header (dim " + llvm::Twine(dim) +
                     ", " + llvm::Twine(layers) + " layers, vocab " +
                     llvm::Twine(spec.vocabSize) + ") implies " + implied +
                     " bytes, the file has " + llvm::Twine(data.size()) +
                     (__int128(data.size()) < expected ? " (truncated)" : ""));
  }
  // The tensors are views of the (mapped) file, which the store keeps.
  bool mapped =
      (*buffer)->getBufferKind() == llvm::MemoryBuffer::MemoryBuffer_MMap;
  auto read = [&](std::vector<int64_t> shape) {
    WeightTensor t = WeightTensor::view(
        std::move(shape), WeightFormat::F32,
        reinterpret_cast<const uint8_t *>(data.data() + at), mapped, source);
    at += 4 * t.numElements();
    return t;
  };
  // Per-layer tensors are stored stacked: [L, ...].
  auto readStacked = [&](const std::string &pattern,
                         std::vector<int64_t> shape) {
    for (int64_t l = 0; l < layers; ++l)
      model.weights.add(layerWeightName(pattern, l), read(shape));
  };
  const LayerWeightNames &n = spec.layer;
  model.weights.add(spec.tokenEmbedding, read({spec.vocabSize, dim}));
  readStacked(n.attnNorm, {dim});
  readStacked(n.query, {dim, dim});
  readStacked(n.key, {kvDim, dim});
  readStacked(n.value, {kvDim, dim});
  readStacked(n.output, {dim, dim});
  readStacked(n.mlpNorm, {dim});
  readStacked(n.gate, {hidden, dim});
  readStacked(n.down, {dim, hidden});
  readStacked(n.up, {hidden, dim});
  model.weights.add(spec.finalNorm, read({dim}));
  at += 4 * spec.maxContext * spec.headDim(); // legacy RoPE tables
  if (!spec.lmHead.empty())
    model.weights.add(spec.lmHead, read({spec.vocabSize, dim}));
  model.weights.keepMapped(std::move(*buffer));

  auto module = buildDecoder(context, spec, model.weights, path,
                             [](llvm::StringRef) { return false; });
  if (!module)
    return module.takeError();
  model.module = std::move(*module);
  recordDecoderShape(model, spec);
  model.family = "llama";
  model.bosToken = 1;
  model.eosToken = 2;

  // llama2.c keeps the tokenizer beside the checkpoint as tokenizer.bin.
  llvm::SmallString<256> tokenizer(llvm::sys::path::parent_path(path));
  llvm::sys::path::append(tokenizer, "tokenizer.bin");
  if (llvm::sys::fs::exists(tokenizer)) {
    auto vocab = readTokenizerAt(tokenizer, spec.vocabSize);
    if (!vocab)
      return vocab.takeError();
    model.tokenizer = std::move(*vocab);
    model.tokenizerPath = tokenizer.str().str();
  }
  return model;
}
