//===- Tokenizer.h - tokenizer vocabularies read at compile time -*- C++ -*-===//
//
// Score-based BPE vocabularies (llama2.c tokenizer.bin, SentencePiece
// tokenizer.model) read into one form that codegen embeds in the compiled
// model and the runtime's tokenizer uses.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_TOKENIZER_H
#define TFM_FRONTEND_TOKENIZER_H

#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir::tfm {

struct TokenizerVocab {
  /// Token pieces as bytes; SentencePiece's "▁" is already a space, byte
  /// pieces keep their "<0xAB>" spelling.
  std::vector<std::string> pieces;
  std::vector<float> scores;
};

/// llama2.c's tokenizer.bin, which holds `vocabSize` tokens.
llvm::Expected<TokenizerVocab> readLlama2cTokenizer(llvm::StringRef path,
                                                    int64_t vocabSize);

/// SentencePiece's tokenizer.model (a serialized ModelProto).
llvm::Expected<TokenizerVocab> readSentencePieceModel(llvm::StringRef path);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_TOKENIZER_H
