//===- GgufTokenizer.cpp - the tokenizer a GGUF file embeds -------------===//
//
// llama.cpp stores the tokenizer in the metadata: tokenizer.ggml.model
// names its kind, tokenizer.ggml.tokens the pieces by id, .scores their
// scores, .token_type each piece's SentencePiece type (1 normal,
// 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte) and, for
// byte-level BPE, .merges the merges in rank order ("a b"). "llama" is
// SentencePiece's BPE (pieces spelled with "▁"), "gpt2" GPT-2's byte-level
// BPE (pieces in its byte-to-unicode spelling).
//
//===----------------------------------------------------------------------===//

#include "frontend/ErrorMessages.h"
#include "frontend/Gguf.h"
#include "frontend/GgufModel.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

enum TokenType { kControl = 3, kUserDefined = 4 };

llvm::Expected<TokenizerVocab> sentencePieceBpe(const GgufFile &file,
                                                const GgufValue &tokens) {
  llvm::Expected<const GgufValue *> scores =
      file.array("tokenizer.ggml.scores", /*strings=*/false);
  if (!scores)
    return scores.takeError();
  if ((*scores)->numbers.size() != tokens.strings.size())
    return makeError(file.path() + ": tokenizer.ggml.scores has " +
                     llvm::Twine((*scores)->numbers.size()) +
                     " entries for " + llvm::Twine(tokens.strings.size()) +
                     " tokens");
  TokenizerVocab vocab;
  vocab.kind = TokenizerVocab::Kind::ScoreBpe;
  for (auto [piece, score] : llvm::zip(tokens.strings, (*scores)->numbers)) {
    vocab.pieces.push_back(replaceSentencePieceSpaces(piece));
    vocab.scores.push_back(float(score));
  }
  return vocab;
}

llvm::Expected<TokenizerVocab> byteLevelBpe(const GgufFile &file,
                                            const GgufValue &tokens) {
  // The pre-tokenizers runtime/tokenizer_bpe_split.c implements; others
  // split text differently.
  llvm::Expected<std::optional<llvm::StringRef>> pre =
      file.optionalString("tokenizer.ggml.pre");
  if (!pre)
    return pre.takeError();
  std::optional<GgufBpeSplit> split =
      bpeSplitOfGgufPre(pre->value_or("default"));
  if (!split)
    return makeError(file.path() + ": tokenizer.ggml.pre '" + **pre +
                     "' is not a pre-tokenizer tfmc implements (gpt-2, "
                     "llama-bpe, qwen2, deepseek-llm, deepseek-coder, falcon, "
                     "starcoder, refact, command-r and their aliases); pass "
                     "another --tokenizer");
  llvm::Expected<const GgufValue *> merges =
      file.array("tokenizer.ggml.merges", /*strings=*/true);
  if (!merges)
    return merges.takeError();
  std::vector<std::pair<std::string, int64_t>> spelled;
  for (auto [id, piece] : llvm::enumerate(tokens.strings))
    spelled.push_back({piece.str(), int64_t(id)});
  std::vector<std::pair<std::string, std::string>> pairs;
  for (auto [rank, merge] : llvm::enumerate((*merges)->strings)) {
    auto [left, right] = merge.split(' ');
    if (left.empty() || right.empty())
      return makeError(file.path() + ": tokenizer.ggml.merges entry " +
                       llvm::Twine(rank) + " ('" + merge +
                       "') is not two tokens separated by a space");
    pairs.push_back({left.str(), right.str()});
  }
  llvm::Expected<TokenizerVocab> vocab =
      byteLevelBpeFromSpellings(file.path(), spelled, pairs);
  if (!vocab)
    return vocab.takeError();
  vocab->bpeSplit = split->split;
  vocab->ignoreMerges = split->ignoreMerges;
  // Added tokens (control and user-defined) are matched whole in text, as
  // Hugging Face's added tokens are.
  if (const GgufValue *types = file.lookup("tokenizer.ggml.token_type")) {
    if (types->kind != GgufValue::Kind::Array ||
        types->numbers.size() != tokens.strings.size())
      return makeError(file.path() + ": tokenizer.ggml.token_type must be " +
                       "an array of " + llvm::Twine(tokens.strings.size()) +
                       " numbers, one per token");
    for (auto [id, type] : llvm::enumerate(types->numbers))
      if (type == kControl || type == kUserDefined) {
        vocab->specialTokens.push_back(int32_t(id));
        vocab->specialTokenStrips.push_back(0);
      }
  }
  return vocab;
}

} // namespace

llvm::Expected<std::optional<TokenizerVocab>>
mlir::tfm::readGgufTokenizer(const GgufFile &file) {
  llvm::Expected<std::optional<llvm::StringRef>> kind =
      file.optionalString("tokenizer.ggml.model");
  if (!kind)
    return kind.takeError();
  if (!*kind || **kind == "none" || **kind == "no_vocab")
    return std::nullopt;
  llvm::Expected<const GgufValue *> tokens =
      file.array("tokenizer.ggml.tokens", /*strings=*/true);
  if (!tokens)
    return tokens.takeError();
  if (**kind == "llama")
    return sentencePieceBpe(file, **tokens);
  if (**kind == "gpt2")
    return byteLevelBpe(file, **tokens);
  return makeError(file.path() + ": tokenizer.ggml.model '" + **kind +
                   "' is not supported (\"llama\" and \"gpt2\" are)");
}

llvm::Expected<TokenizerVocab>
mlir::tfm::readGgufTokenizerFile(llvm::StringRef path) {
  llvm::Expected<GgufFile> file = GgufFile::open(path);
  if (!file)
    return file.takeError();
  llvm::Expected<std::optional<TokenizerVocab>> vocab =
      readGgufTokenizer(*file);
  if (!vocab)
    return vocab.takeError();
  if (!*vocab)
    return makeError(path + ": the file has no tokenizer "
                            "(tokenizer.ggml.model)");
  return std::move(**vocab);
}
