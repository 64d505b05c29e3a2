//===- Tokenizer.cpp - tokenizer files; llama2.c's tokenizer.bin --------===//

#include "frontend/tokenizers/Tokenizer.h"
#include "frontend/formats/ErrorMessages.h"

#include "llvm/Support/Endian.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cstring>

using namespace mlir;
using namespace mlir::tfm;

llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
mlir::tfm::readTokenizerFile(llvm::StringRef path) {
  auto buffer = llvm::MemoryBuffer::getFile(path, /*IsText=*/false,
                                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return makeError("cannot read tokenizer '" + path +
                     "': " + buffer.getError().message());
  return std::move(*buffer);
}

llvm::Expected<TokenizerVocab> tfm::readLlama2cTokenizer(llvm::StringRef path,
                                                         int64_t vocabSize) {
  auto buffer = readTokenizerFile(path);
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
