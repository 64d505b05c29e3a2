//===- Tokenizer.cpp - tokenizer vocabularies read at compile time ------===//

#include "frontend/Tokenizer.h"
#include "frontend/ErrorMessages.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstring>

using namespace mlir;
using namespace mlir::tfm;

namespace {

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readFile(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return makeError("cannot read tokenizer '" + path +
                     "': " + buffer.getError().message());
  return std::move(*buffer);
}

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

std::string replaceSentencePieceSpaces(llvm::StringRef piece) {
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

} // namespace

llvm::Expected<TokenizerVocab> tfm::readLlama2cTokenizer(llvm::StringRef path,
                                                         int64_t vocabSize) {
  auto buffer = readFile(path);
  if (!buffer)
    return buffer.takeError();
  llvm::StringRef data = (*buffer)->getBuffer();
  size_t at = 4; // int32 max_token_length, recomputed by the runtime
  TokenizerVocab vocab;
  for (int64_t i = 0; i < vocabSize; ++i) {
    if (data.size() < at + 8)
      return makeError(path + ": truncated at token " + llvm::Twine(i) +
                       " of " + llvm::Twine(vocabSize) +
                       " (the model's vocabulary size)");
    float score;
    std::memcpy(&score, data.data() + at, 4);
    int32_t length = llvm::support::endian::read32le(data.data() + at + 4);
    at += 8;
    if (length < 0 || data.size() < at + length)
      return makeError(path + ": token " + llvm::Twine(i) + " has length " +
                       llvm::Twine(length) + " past the end of the file");
    vocab.pieces.push_back(data.substr(at, length).str());
    vocab.scores.push_back(score);
    at += length;
  }
  if (at != data.size())
    return makeError(path + ": " + llvm::Twine(data.size() - at) +
                     " bytes after the " + llvm::Twine(vocabSize) +
                     " tokens of the model's vocabulary: not this model's "
                     "tokenizer");
  return vocab;
}

llvm::Expected<TokenizerVocab>
mlir::tfm::readSentencePieceModel(llvm::StringRef path) {
  auto buffer = readFile(path);
  if (!buffer)
    return buffer.takeError();
  llvm::StringRef data = (*buffer)->getBuffer();
  auto *begin = reinterpret_cast<const uint8_t *>(data.data());
  ProtoReader model{begin, begin + data.size()};
  TokenizerVocab vocab;
  while (!model.done()) {
    uint64_t key = model.varint();
    unsigned field = key >> 3, wireType = key & 7;
    if (field != 1 || wireType != 2) { // 1: repeated SentencePiece pieces
      model.skip(wireType);
      continue;
    }
    llvm::StringRef message = model.bytes();
    auto *m = reinterpret_cast<const uint8_t *>(message.data());
    ProtoReader piece{m, m + message.size()};
    std::string text;
    float score = 0;
    while (!piece.done()) {
      uint64_t pieceKey = piece.varint();
      unsigned pieceField = pieceKey >> 3, pieceWire = pieceKey & 7;
      if (pieceField == 1 && pieceWire == 2) {
        text = replaceSentencePieceSpaces(piece.bytes());
      } else if (pieceField == 2 && pieceWire == 5 && !piece.done()) {
        if (piece.end - piece.at < 4) {
          piece.failed = true;
          break;
        }
        std::memcpy(&score, piece.at, 4);
        piece.at += 4;
      } else {
        piece.skip(pieceWire);
      }
    }
    if (piece.failed)
      return makeError(path + ": malformed piece " +
                       llvm::Twine(vocab.pieces.size()));
    vocab.pieces.push_back(std::move(text));
    vocab.scores.push_back(score);
  }
  if (model.failed)
    return makeError(path + ": malformed SentencePiece model (truncated or "
                            "not a protobuf)");
  if (vocab.pieces.empty())
    return makeError(path + ": no pieces: not a SentencePiece model");
  return vocab;
}
