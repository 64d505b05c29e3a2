//===- SentencePiece.cpp - SentencePiece models read at compile time ----===//
//
// Reads SentencePiece's ModelProto (protobuf wire format, parsed here: the
// runtime takes no protobuf dependency) into a TokenizerVocab: BPE models
// become score BPE, Unigram models keep their piece types and normalizer.
// The normalizer's precompiled character map is a Darts double-array trie;
// it is expanded here into plain (from, to) rules so that the runtime needs
// no trie format and a malformed map fails at compile time.
//
//===----------------------------------------------------------------------===//

#include "frontend/ErrorMessages.h"
#include "frontend/Tokenizer.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/Endian.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>
#include <functional>
#include <cstring>

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// A cursor over protobuf wire format, enough for SentencePiece's ModelProto.
struct ProtoReader {
  const uint8_t *at, *end;
  bool failed = false;

  bool done() const { return at >= end || failed; }
  uint64_t varint() {
    uint64_t value = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (at >= end) {
        failed = true;
        return 0;
      }
      uint8_t byte = *at++;
      value |= uint64_t(byte & 0x7f) << shift;
      if (!(byte & 0x80))
        return value;
    }
    failed = true;
    return 0;
  }
  /// Reads a length-delimited field's bytes.
  llvm::StringRef bytes() {
    uint64_t length = varint();
    if (failed || length > uint64_t(end - at)) {
      failed = true;
      return {};
    }
    llvm::StringRef s(reinterpret_cast<const char *>(at), length);
    at += length;
    return s;
  }
  void skip(unsigned wireType) {
    switch (wireType) {
    case 0: varint(); break;
    case 1: advance(8); break;
    case 2: bytes(); break;
    case 5: advance(4); break;
    default: failed = true;
    }
  }
  void advance(size_t n) {
    if (n > size_t(end - at))
      failed = true;
    else
      at += n;
  }
};

} // namespace

std::string mlir::tfm::replaceSentencePieceSpaces(llvm::StringRef piece) {
  std::string out;
  static const llvm::StringRef space = "\xe2\x96\x81"; // U+2581 "▁"
  while (!piece.empty()) {
    if (piece.consume_front(space)) {
      out += ' ';
    } else {
      out += piece.front();
      piece = piece.drop_front();
    }
  }
  return out;
}

namespace {


/// ModelProto.SentencePiece.Type.
enum SentencePieceType : unsigned {
  kNormal = 1,
  kUnknown = 2,
  kControl = 3,
  kUserDefined = 4,
  kUnused = 5,
  kByte = 6,
};

/// TrainerSpec.ModelType.
enum ModelType : unsigned { kUnigram = 1, kBpe = 2, kWord = 3, kChar = 4 };

/// The fields of a ModelProto the tokenizer needs, with protobuf's defaults.
struct SentencePieceModel {
  struct Piece {
    std::string text;
    float score = 0;
    unsigned type = kNormal;
  };
  std::vector<Piece> pieces;
  unsigned modelType = kUnigram;
  bool byteFallback = false, whitespaceAsSuffix = false;
  bool addDummyPrefix = true, removeExtraWhitespaces = true,
       escapeWhitespaces = true;
  std::string precompiledCharsMap;
};

bool readFloat(ProtoReader &reader, float &value) {
  if (reader.end - reader.at < 4)
    return false;
  std::memcpy(&value, reader.at, 4);
  reader.at += 4;
  return true;
}

/// Parses one field's bytes as a sub-message, calling `field(reader, number,
/// wireType)` per field; it returns false to have the field skipped.
template <typename Fn>
bool readMessage(llvm::StringRef bytes, Fn field) {
  auto *begin = reinterpret_cast<const uint8_t *>(bytes.data());
  ProtoReader reader{begin, begin + bytes.size()};
  while (!reader.done()) {
    uint64_t key = reader.varint();
    if (!field(reader, unsigned(key >> 3), unsigned(key & 7)))
      reader.skip(key & 7);
  }
  return !reader.failed;
}

llvm::Expected<SentencePieceModel> parseModel(llvm::StringRef path,
                                              llvm::StringRef data) {
  SentencePieceModel model;
  bool piecesOk = true;
  auto piece = [&](ProtoReader &r, unsigned number, unsigned wire) {
    SentencePieceModel::Piece &p = model.pieces.back();
    if (number == 1 && wire == 2)
      p.text = replaceSentencePieceSpaces(r.bytes());
    else if (number == 2 && wire == 5)
      r.failed |= !readFloat(r, p.score);
    else if (number == 3 && wire == 0)
      p.type = unsigned(r.varint());
    else
      return false;
    return true;
  };
  auto trainer = [&](ProtoReader &r, unsigned number, unsigned wire) {
    if (wire != 0)
      return false;
    if (number == 3)
      model.modelType = unsigned(r.varint());
    else if (number == 35)
      model.byteFallback = r.varint() != 0;
    else if (number == 24)
      model.whitespaceAsSuffix = r.varint() != 0;
    else
      return false;
    return true;
  };
  auto normalizer = [&](ProtoReader &r, unsigned number, unsigned wire) {
    if (number == 2 && wire == 2)
      model.precompiledCharsMap = r.bytes().str();
    else if (number == 3 && wire == 0)
      model.addDummyPrefix = r.varint() != 0;
    else if (number == 4 && wire == 0)
      model.removeExtraWhitespaces = r.varint() != 0;
    else if (number == 5 && wire == 0)
      model.escapeWhitespaces = r.varint() != 0;
    else
      return false;
    return true;
  };
  bool parsed = readMessage(data, [&](ProtoReader &r, unsigned number,
                                      unsigned wire) {
    if (wire != 2 || number < 1 || number > 3)
      return false;
    llvm::StringRef bytes = r.bytes();
    if (number == 1) {
      model.pieces.emplace_back();
      piecesOk &= readMessage(bytes, piece);
    } else if (number == 2) {
      r.failed |= !readMessage(bytes, trainer);
    } else {
      r.failed |= !readMessage(bytes, normalizer);
    }
    return true;
  });
  if (!piecesOk)
    return makeError(path + ": malformed piece " +
                     llvm::Twine(model.pieces.size() - 1));
  if (!parsed)
    return makeError(path + ": malformed SentencePiece model (truncated or "
                            "not a protobuf)");
  if (model.pieces.empty())
    return makeError(path + ": no pieces: not a SentencePiece model");
  return model;
}

/// Expands the precompiled character map (<uint32 trie size><Darts
/// double-array trie><NUL-terminated replacements>) into (from, to) rules by
/// walking every path of the trie.
llvm::Expected<std::vector<std::pair<std::string, std::string>>>
expandCharsMap(llvm::StringRef path, llvm::StringRef blob) {
  std::vector<std::pair<std::string, std::string>> rules;
  if (blob.empty())
    return rules;
  auto malformed = [&](const llvm::Twine &why) {
    return makeError(path + ": malformed precompiled_charsmap: " + why);
  };
  if (blob.size() < 4)
    return malformed("shorter than its header");
  uint32_t trieBytes = llvm::support::endian::read32le(blob.data());
  if (trieBytes % 4 || trieBytes > blob.size() - 4)
    return malformed("a trie of " + llvm::Twine(trieBytes) + " bytes in " +
                     llvm::Twine(blob.size()) + " bytes");
  size_t units = trieBytes / 4;
  auto unitAt = [&](size_t i) {
    return llvm::support::endian::read32le(blob.data() + 4 + 4 * i);
  };
  llvm::StringRef replacements = blob.drop_front(4 + trieBytes);
  // A Darts unit: bit 8 says the key ending here has a value (in the unit at
  // the child base), the low byte and bit 31 are the label, bits 10.. the
  // offset to the children (shifted by 8 more when bit 9 is set).
  auto offsetOf = [](uint32_t unit) {
    return (unit >> 10) << ((unit & (1u << 9)) >> 6);
  };
  // Each unit's children, found in one pass: a unit at p labelled b (bit 31
  // clear, low byte b != 0) is the child b of the node whose children start
  // at p ^ b. Testing all 255 labels at every node instead costs 255 reads
  // a node, seconds for nmt_nfkc's map in a sanitizer build.
  std::vector<uint32_t> firstChild(units + 1, 0), children(units);
  auto labelOf = [](uint32_t unit) { return unit & ((1u << 31) | 0xFF); };
  for (size_t p = 0; p < units; ++p)
    if (uint32_t label = labelOf(unitAt(p)); label && label < 256)
      ++firstChild[(p ^ label) + 1];
  for (size_t base = 0; base < units; ++base)
    firstChild[base + 1] += firstChild[base];
  std::vector<uint32_t> filled(firstChild.begin(), firstChild.end() - 1);
  for (size_t p = 0; p < units; ++p)
    if (uint32_t label = labelOf(unitAt(p)); label && label < 256)
      children[filled[p ^ label]++] = p;
  // In label order, as the rules were always listed.
  for (size_t base = 0; base < units; ++base)
    std::sort(children.begin() + firstChild[base],
              children.begin() + firstChild[base + 1],
              [&](uint32_t a, uint32_t b) { return (a ^ base) < (b ^ base); });

  // Every rule ends at a unit with a value: reserving that many (more when
  // suffixes are shared) spares most of the vector's regrowth (a copy of
  // every rule so far, each time).
  size_t valued = 0;
  for (size_t p = 0; p < units; ++p)
    valued += (unitAt(p) >> 8) & 1;
  rules.reserve(valued);

  constexpr size_t kMaxKeyBytes = 64;
  // Darts-clone shares common suffixes (a DAWG), so a node may be reached
  // on several paths; a crafted map could multiply them past any memory.
  // Legitimate maps (nmt_nfkc: a 4 MB expansion) stay far below the limit.
  constexpr size_t kMaxPaths = size_t(1) << 22;
  size_t paths = 0;
  std::string key;
  std::function<llvm::Error(size_t)> walk = [&](size_t base) -> llvm::Error {
    if (key.size() > kMaxKeyBytes)
      return malformed("a key longer than " + llvm::Twine(kMaxKeyBytes) +
                       " bytes (a cycle?)");
    if (base >= units)
      return llvm::Error::success(); // no unit has children there
    for (uint32_t i = firstChild[base]; i < firstChild[base + 1]; ++i) {
      size_t child = children[i];
      uint32_t unit = unitAt(child);
      if (++paths > kMaxPaths)
        return malformed("more than " + llvm::Twine(kMaxPaths) +
                         " paths through the trie");
      size_t next = child ^ offsetOf(unit);
      if (next >= units)
        return malformed("a child past the trie");
      key.push_back(char(labelOf(unit)));
      if ((unit >> 8) & 1) {
        uint32_t value = unitAt(next) & ((1u << 31) - 1);
        size_t end = value < replacements.size()
                         ? replacements.find('\0', value)
                         : llvm::StringRef::npos;
        if (end == llvm::StringRef::npos)
          return malformed("replacement " + llvm::Twine(value) +
                           " is past the map or not NUL-terminated");
        rules.emplace_back(key, replacements.slice(value, end).str());
      }
      if (llvm::Error err = walk(next))
        return err;
      key.pop_back();
    }
    return llvm::Error::success();
  };
  if (units == 0)
    return malformed("an empty trie");
  if (llvm::Error err = walk(offsetOf(unitAt(0))))
    return std::move(err);
  return rules;
}

using PieceType = TokenizerVocab::UnigramOptions::Piece;

PieceType latticeType(unsigned type) {
  switch (type) {
  case kNormal: return PieceType::Normal;
  case kUserDefined: return PieceType::UserDefined;
  default: return PieceType::Reserved;
  }
}

} // namespace

llvm::Expected<TokenizerVocab>
mlir::tfm::readSentencePieceModel(llvm::StringRef path) {
  auto buffer = readTokenizerFile(path);
  if (!buffer)
    return buffer.takeError();
  llvm::Expected<SentencePieceModel> model =
      parseModel(path, (*buffer)->getBuffer());
  if (!model)
    return model.takeError();
  TokenizerVocab vocab;
  for (SentencePieceModel::Piece &piece : model->pieces) {
    vocab.pieces.push_back(std::move(piece.text));
    vocab.scores.push_back(piece.score);
  }
  if (model->modelType == kBpe) {
    // llama2.c's encoding of SentencePiece BPE. Its control, unknown and
    // user-defined pieces (<s>, </s>, <unk>) are matched whole in text, as
    // transformers' LlamaTokenizer matches its added tokens (no stripping
    // around them): a chat template's rendered "<s>[INST]" starts with BOS.
    vocab.removeExtraWhitespaces = model->removeExtraWhitespaces;
    for (auto [id, piece] : llvm::enumerate(model->pieces))
      if (piece.type == kControl || piece.type == kUnknown ||
          piece.type == kUserDefined) {
        vocab.specialTokens.push_back(int32_t(id));
        vocab.specialTokenStrips.push_back(0);
      }
    return vocab;
  }
  if (model->modelType != kUnigram)
    return makeError(path + ": SentencePiece model type " +
                     llvm::Twine(model->modelType) +
                     " (word or character) is not supported; Unigram and BPE "
                     "are");
  if (model->whitespaceAsSuffix)
    return makeError(path + ": treat_whitespace_as_suffix is not supported");
  vocab.kind = TokenizerVocab::Kind::Unigram;
  TokenizerVocab::UnigramOptions &options = vocab.unigram;
  options.addDummyPrefix = model->addDummyPrefix;
  options.removeExtraWhitespaces = model->removeExtraWhitespaces;
  options.escapeWhitespaces = model->escapeWhitespaces;
  options.byteFallback = model->byteFallback;
  for (auto [id, piece] : llvm::enumerate(model->pieces)) {
    options.pieceTypes.push_back(latticeType(piece.type));
    if (piece.type == kUnknown && options.unknown < 0)
      options.unknown = int32_t(id);
  }
  if (options.unknown < 0)
    return makeError(path + ": the Unigram model has no unknown piece");
  auto rules = expandCharsMap(path, model->precompiledCharsMap);
  if (!rules)
    return rules.takeError();
  options.normalization = std::move(*rules);
  return vocab;
}

static std::string fairseqModelPath(llvm::StringRef directory) {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, "sentencepiece.bpe.model");
  return path.str().str();
}

bool mlir::tfm::hasFairseqSentencePieceFiles(llvm::StringRef directory) {
  return llvm::sys::fs::exists(fairseqModelPath(directory));
}

llvm::Expected<TokenizerVocab>
mlir::tfm::readFairseqSentencePiece(llvm::StringRef directory) {
  std::string path = fairseqModelPath(directory);
  llvm::Expected<TokenizerVocab> model = readSentencePieceModel(path);
  if (!model)
    return model.takeError();
  if (model->kind != TokenizerVocab::Kind::Unigram)
    return makeError(path + ": expected a Unigram model for fairseq's "
                            "dictionary (XLM-R's)");
  // fairseq's dictionary: its four specials, then the model's pieces from
  // the fourth on (the model's <unk> <s> </s> are the specials), one up.
  constexpr size_t kShadowed = 3;
  if (model->pieces.size() <= kShadowed)
    return makeError(path + ": fewer pieces than fairseq's specials");
  TokenizerVocab vocab = std::move(*model);
  TokenizerVocab::UnigramOptions &options = vocab.unigram;
  auto splice = [&](auto &values, auto... specials) {
    values.erase(values.begin(), values.begin() + kShadowed);
    values.insert(values.begin(), {specials...});
  };
  splice(vocab.pieces, std::string("<s>"), std::string("<pad>"),
         std::string("</s>"), std::string("<unk>"));
  splice(vocab.scores, 0.0f, 0.0f, 0.0f, 0.0f);
  splice(options.pieceTypes, PieceType::Reserved, PieceType::Reserved,
         PieceType::Reserved, PieceType::Reserved);
  vocab.pieces.push_back("<mask>");
  vocab.scores.push_back(0.0f);
  options.pieceTypes.push_back(PieceType::Reserved);
  options.unknown = 3;
  return vocab;
}
