//===- Tokenizer.h - tokenizer vocabularies read at compile time -*- C++ -*-===//
//
// Tokenizer vocabularies read at compile time into one form that codegen
// embeds in the compiled model and the runtime's tokenizer uses:
// score-based BPE (llama2.c tokenizer.bin, SentencePiece tokenizer.model)
// and GPT-2's byte-level BPE (vocab.json + merges.txt, or tokenizer.json).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_TOKENIZER_H
#define TFM_FRONTEND_TOKENIZER_H

#include "llvm/Support/Error.h"

#include <array>
#include <cstdint>
#include <string>
#include <vector>

namespace mlir::tfm {

struct TokenizerVocab {
  enum class Kind {
    /// Merge the adjacent pair whose result scores highest (SentencePiece).
    ScoreBpe,
    /// Merge the adjacent pair of lowest merge rank (GPT-2, over bytes).
    ByteLevelBpe,
  };
  Kind kind = Kind::ScoreBpe;
  /// Token pieces as bytes; SentencePiece's "▁" is already a space, byte
  /// pieces keep their "<0xAB>" spelling; GPT-2's byte-to-unicode spelling is
  /// undone.
  std::vector<std::string> pieces;
  std::vector<float> scores;
  /// ByteLevelBpe: (left id, right id, merged id) in rank order.
  std::vector<std::array<int32_t, 3>> merges;
};

/// llama2.c's tokenizer.bin, which holds `vocabSize` tokens.
llvm::Expected<TokenizerVocab> readLlama2cTokenizer(llvm::StringRef path,
                                                    int64_t vocabSize);

/// SentencePiece's tokenizer.model (a serialized ModelProto).
llvm::Expected<TokenizerVocab> readSentencePieceModel(llvm::StringRef path);

/// GPT-2's byte-level BPE from a model directory: vocab.json + merges.txt,
/// or tokenizer.json. Returns a vocabulary without pieces when the directory
/// has neither.
llvm::Expected<TokenizerVocab> readByteLevelBpe(llvm::StringRef directory);

/// Whether `directory` holds byte-level BPE files (vocab.json + merges.txt,
/// or tokenizer.json), which readByteLevelBpe reads.
bool hasByteLevelBpeFiles(llvm::StringRef directory);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_TOKENIZER_H
