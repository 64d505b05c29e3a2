//===- RuntimeFixtures.cpp - a fake model and tokenizer blobs for tests --===//

#include "test/runtime/RuntimeFixtures.h"

extern "C" {
#include "runtime/core/buffer_cache.h"
}

#include <gtest/gtest.h>

#include <algorithm>
#include <csetjmp>
#include <map>

namespace tfm_test {

/// logits[i, v] = token[i] * 10 + v, so tests can see what ran.
extern "C" void fakeForward(tfm_memref2d_f32 *logits, tfm_memref1d *weights,
                            tfm_memref1d *tokens) {
  int64_t n = tokens->sizes[0];
  auto *ids = static_cast<const int32_t *>(tokens->aligned);
  // Allocated as generated code does: the runtime releases it.
  float *data = static_cast<float *>(
      _mlir_memref_to_llvm_alloc(n * kVocab * sizeof(float)));
  for (int64_t i = 0; i < n; ++i)
    for (int64_t v = 0; v < kVocab; ++v)
      data[i * kVocab + v] = float(ids[i] * 10 + v);
  *logits = {data, data, 0, {n, kVocab}, {kVocab, 1}};
}

extern const uint8_t kWeights[16];
const uint8_t kWeights[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13};

/// The fake's generated call: fakeForward inside a call frame, as tfmc
/// generates it (codegen/packaging/EntryPointTable.cpp).
extern "C" int32_t callFakeForward(const tfm_memref1d *weights,
                                   const tfm_tensor *inputs,
                                   tfm_tensor *const *, tfm_tensor *outputs) {
  jmp_buf jump;
  if (setjmp(jump))
    return TFM_ERROR_OUT_OF_MEMORY;
  tfm_call_frame *frame = tfm_call_begin(&jump);
  int64_t n = inputs[0].shape[0];
  tfm_memref1d tokens = {inputs[0].data, inputs[0].data, 0, {n}, {1}};
  tfm_memref2d_f32 logits;
  fakeForward(&logits, const_cast<tfm_memref1d *>(weights), &tokens);
  tfm_call_end(frame);
  outputs[0] = {logits.aligned, TFM_DTYPE_F32, 2, {n, kVocab}, logits.allocated};
  return TFM_OK;
}

const tfm_tensor_desc kForwardInputs[] = {
    {TFM_ROLE_TOKEN_IDS, TFM_DTYPE_I32, 1, {-1}, kVocab}};
const tfm_tensor_desc kForwardOutputs[] = {
    {TFM_ROLE_LOGITS, TFM_DTYPE_F32, 2, {-1, kVocab}}};
/// A packed twin (tfm-pack-sequences) of @forward: token ids and the
/// lengths of the sequences in them; the fake runs them as one sequence.
const tfm_tensor_desc kPackedInputs[] = {
    {TFM_ROLE_TOKEN_IDS, TFM_DTYPE_I32, 1, {-1}, kVocab},
    {TFM_ROLE_SEQUENCE_LENGTHS, TFM_DTYPE_I32, 1, {-1}, 0}};
const tfm_entry_point kEntryPoints[] = {
    {"forward", 1, kForwardInputs, 1, kForwardOutputs, 0, nullptr,
     callFakeForward, reinterpret_cast<void (*)(void)>(fakeForward)},
    {"forward_batch", 2, kPackedInputs, 1, kForwardOutputs, 0, nullptr,
     callFakeForward, nullptr}};

tfm_model_desc fakeDesc() {
  tfm_model_desc desc = {};
  desc.abi_version = TFM_ABI_VERSION;
  desc.name = "fake";
  desc.vocab_size = kVocab;
  desc.max_context = 4;
  desc.bos_token = 1;
  desc.eos_token = 2;
  desc.add_bos = 1;
  desc.weights = kWeights;
  desc.weights_size = sizeof kWeights;
  desc.weights_checksum = tfm_weights_checksum(kWeights, sizeof kWeights);
  desc.num_entry_points = 2;
  desc.entry_points = kEntryPoints;
  return desc;
}

std::string tokenizerBlob(uint32_t kind,
                          const std::vector<std::pair<std::string, float>> &pieces,
                          const std::vector<std::array<uint32_t, 3>> &merges,
                          const EncoderTokenizer &encoder) {
  std::string blob(TFM_TOKENIZER_MAGIC, TFM_TOKENIZER_MAGIC_SIZE);
  auto u32 = [&](uint32_t v) { blob.append(reinterpret_cast<char *>(&v), 4); };
  u32(kind);
  u32(pieces.size());
  u32(encoder.begin);
  u32(encoder.separator);
  u32(encoder.pairSeparators);
  u32(encoder.secondType);
  u32(encoder.specials.size());
  for (auto [id, strips] : encoder.specials) {
    u32(id);
    u32(strips);
  }
  for (const auto &[piece, score] : pieces) {
    blob.append(reinterpret_cast<const char *>(&score), 4);
    u32(piece.size());
    blob += piece;
  }
  if (kind == TFM_TOKENIZER_BYTE_LEVEL_BPE) {
    u32(merges.size());
    for (const auto &m : merges)
      for (uint32_t id : m)
        u32(id);
  }
  if (kind == TFM_TOKENIZER_WORDPIECE) {
    u32(encoder.wordPieceFlags);
    u32(encoder.unknown);
    u32(encoder.maxCharsPerWord);
    u32(2);
    blob += "##";
  }
  if (kind == TFM_TOKENIZER_UNIGRAM) {
    u32(encoder.unigramFlags);
    u32(encoder.unknown);
    for (size_t i = 0; i < pieces.size(); ++i)
      blob += char(i < encoder.pieceTypes.size() ? encoder.pieceTypes[i]
                                                 : uint8_t(TFM_UNIGRAM_PIECE_NORMAL));
    std::string map = charsMapBlob(encoder.rules);
    u32(map.size());
    blob += map;
  }
  if (!encoder.promptReplacements.empty()) {
    if (kind == TFM_TOKENIZER_SCORE_BPE || kind == TFM_TOKENIZER_BYTE_LEVEL_BPE)
      u32(0); // score BPE's flags, byte-level BPE's split: none
    u32(encoder.promptReplacements.size());
    for (const auto &[text, replacement] : encoder.promptReplacements) {
      u32(text.size());
      blob += text;
      u32(replacement.size());
      blob += replacement;
    }
  }
  return blob;
}

std::string charsMapBlob(
    const std::vector<std::pair<std::string, std::string>> &rules) {
  if (rules.empty())
    return "";
  // The trie of the keys; a node's value indexes the replacements.
  struct Node {
    std::map<unsigned char, size_t> children;
    int64_t value = -1;
  };
  std::vector<Node> nodes(1);
  std::string replacements;
  for (const auto &[key, replacement] : rules) {
    size_t node = 0;
    for (unsigned char byte : key) {
      auto [child, added] = nodes[node].children.try_emplace(byte, nodes.size());
      if (added)
        nodes.emplace_back();
      node = child->second;
    }
    nodes[node].value = int64_t(replacements.size());
    replacements += replacement;
    replacements += '\0';
  }
  // Placed breadth first: each node's children go at the first base b no
  // other node has, where b (its value, label 0) and b ^ c for each child
  // label c are free.
  std::vector<uint32_t> units(1, 0);
  std::vector<bool> baseTaken;
  std::vector<bool> used(1, true); // the root
  std::vector<uint32_t> position(nodes.size(), 0);
  std::vector<size_t> queue{0};
  for (size_t next = 0; next < queue.size(); ++next) {
    const Node &node = nodes[queue[next]];
    auto isFree = [&](uint32_t unit) {
      return unit >= used.size() || !used[unit];
    };
    uint32_t base = 1;
    for (;; ++base) {
      bool fits = (base >= baseTaken.size() || !baseTaken[base]) &&
                  (node.value < 0 || isFree(base));
      for (const auto &[label, child] : node.children)
        fits = fits && isFree(base ^ label);
      if (fits)
        break;
    }
    units.resize(std::max<size_t>(units.size(), (base | 0xFF) + 1), 0);
    used.resize(units.size(), false);
    baseTaken.resize(units.size(), false);
    baseTaken[base] = true;
    uint32_t here = position[queue[next]];
    units[here] |= (here ^ base) << 10 | (node.value >= 0 ? 1u << 8 : 0);
    if (node.value >= 0) {
      units[base] = uint32_t(node.value) | 1u << 31;
      used[base] = true;
    }
    for (const auto &[label, child] : node.children) {
      position[child] = base ^ label;
      units[base ^ label] = label;
      used[base ^ label] = true;
      queue.push_back(child);
    }
  }
  std::string blob;
  uint32_t trieBytes = uint32_t(units.size() * 4);
  blob.append(reinterpret_cast<const char *>(&trieBytes), 4);
  blob.append(reinterpret_cast<const char *>(units.data()), trieBytes);
  return blob + replacements;
}

tfm_tokenizer *parse(const std::string &blob) {
  tfm_tokenizer *tokenizer = nullptr;
  tfm_status status;
  EXPECT_EQ(tfm_tokenizer_new(reinterpret_cast<const uint8_t *>(blob.data()),
                              blob.size(), &tokenizer, &status),
            TFM_OK)
      << status.message;
  return tokenizer;
}

std::vector<int32_t> encode(tfm_tokenizer *t, const char *text, int32_t bos) {
  int32_t ids[64];
  int64_t count = 0;
  tfm_status status;
  EXPECT_EQ(tfm_tokenizer_encode(t, text, bos, ids, 64, &count, &status),
            TFM_OK)
      << status.message;
  return std::vector<int32_t>(ids, ids + count);
}

} // namespace tfm_test
