//===- AddedTokens.h - tokenizer_config.json's added tokens ----*- C++ -*-===//
//
// The added_tokens_decoder of a Hugging Face tokenizer_config.json, which
// every tokenizer reader of a folder consults: byte-level BPE's slow
// vocab.json lacks them (Qwen2's), SentencePiece models end before them
// (LLaVA's <image>), and all match them whole in text.
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_TOKENIZERS_ADDEDTOKENS_H
#define TFM_FRONTEND_TOKENIZERS_ADDEDTOKENS_H

#include "frontend/tokenizers/Tokenizer.h"

#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir::tfm {

/// An added token's matching flags (TokenizerVocab::specialTokenStrips):
/// its lstrip and rstrip, and whether it is text rather than special.
uint8_t addedTokenFlags(const llvm::json::Object &token);

/// One entry of tokenizer_config.json's added_tokens_decoder (id ->
/// token), as read; each reader checks what it needs of it.
struct ConfigAddedToken {
  std::string key;                    // the id as written, for messages
  int64_t id = -1;                    // -1: the key is not an id
  bool isObject = false;              // the value is a token object
  std::optional<std::string> content; // its content, where given
  uint8_t flags = 0;                  // addedTokenFlags
};

/// The entries of tokenizer_config.json's added_tokens_decoder in a
/// directory (none without the file or the field); `path` is set to the
/// file's, for messages.
llvm::Expected<std::vector<ConfigAddedToken>>
readConfigAddedTokens(llvm::StringRef directory, std::string &path);

/// A SentencePiece model's vocabulary `vocab`, read from `modelPath`, with
/// the added tokens its folder's tokenizer_config.json lists past its
/// pieces (llava-1.5's <image> and <pad> after LLaMA's 32000), as
/// transformers' LlamaTokenizer adds them: pieces of their own, matched
/// whole in text. Ids within the model's pieces are its own (control
/// pieces, already matched whole); an added id past the next free one is
/// refused.
llvm::Error addSentencePieceAddedTokens(llvm::StringRef modelPath,
                                        TokenizerVocab &vocab);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_TOKENIZERS_ADDEDTOKENS_H
