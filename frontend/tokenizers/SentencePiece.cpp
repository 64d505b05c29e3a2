//===- SentencePiece.cpp - SentencePiece models read at compile time ----===//
//
// Reads SentencePiece's ModelProto (protobuf wire format, parsed here: the
// runtime takes no protobuf dependency) into a TokenizerVocab: BPE models
// become score BPE, Unigram models keep their piece types and normalizer.
// The normalizer's precompiled character map (a Darts double-array trie) is
// embedded as it is, checked here by the runtime's own reader
// (runtime/tokenizer/chars_map.h) so that a malformed map fails at compile time.
//
//===----------------------------------------------------------------------===//

#include "frontend/formats/ErrorMessages.h"
#include "frontend/tokenizers/Tokenizer.h"
#include "runtime/tokenizer/chars_map.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

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

/// The precompiled character map, checked as the runtime will read it.
llvm::Expected<std::string> checkCharsMap(llvm::StringRef path,
                                          std::string blob) {
  tfm_chars_map map;
  char why[160];
  switch (tfm_chars_map_open(&map, blob.data(), blob.size(), why, sizeof why)) {
  case 0:
    return blob;
  case -2:
    return makeError(path + ": out of memory checking precompiled_charsmap");
  default:
    return makeError(path + ": malformed precompiled_charsmap: " + why);
  }
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
  auto charsMap = checkCharsMap(path, std::move(model->precompiledCharsMap));
  if (!charsMap)
    return charsMap.takeError();
  options.charsMap = std::move(*charsMap);
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
