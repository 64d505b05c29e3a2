//===- GgufTokenizer.cpp - the tokenizer a GGUF file embeds -------------===//
//
// llama.cpp stores the tokenizer in the metadata: tokenizer.ggml.model
// names its kind, tokenizer.ggml.tokens the pieces by id, .scores their
// scores, .token_type each piece's SentencePiece type (1 normal,
// 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte) and, for
// byte-level BPE, .merges the merges in rank order ("a b"). "llama" is
// SentencePiece's BPE (pieces spelled with "▁"), "gpt2" GPT-2's byte-level
// BPE (pieces in its byte-to-unicode spelling), "gemma4" a BPE with merges
// over pieces spelled as SentencePiece's, "bert" BERT's WordPiece in
// llama.cpp's "phantom space" spelling: a word's first piece is "▁piece",
// a continuation ("##piece") is "piece", a [SPECIAL] token is as written.
//
//===----------------------------------------------------------------------===//

#include "frontend/formats/ErrorMessages.h"
#include "frontend/formats/Gguf.h"
#include "frontend/tokenizers/Tokenizer.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

enum TokenType { kControl = 3, kUserDefined = 4 };

/// tokenizer.ggml.token_type, checked to hold one type per token; null
/// where the file has none.
llvm::Expected<const GgufValue *> tokenTypes(const GgufFile &file,
                                             const GgufValue &tokens) {
  const GgufValue *types = file.lookup("tokenizer.ggml.token_type");
  if (types && (types->kind != GgufValue::Kind::Array ||
                types->numbers.size() != tokens.strings.size()))
    return makeError(file.path() + ": tokenizer.ggml.token_type must be " +
                     "an array of " + llvm::Twine(tokens.strings.size()) +
                     " numbers, one per token");
  return types;
}

/// Whether token `id` is an added one (control or user-defined): matched
/// whole in text, as Hugging Face's added tokens are.
bool isAddedToken(const GgufValue *types, size_t id) {
  return types && (types->numbers[id] == kControl ||
                   types->numbers[id] == kUserDefined);
}

/// Marks `vocab`'s added tokens to be matched whole in text, as llama.cpp
/// parses special tokens: user-defined ones are text (shown when
/// decoding), control ones not.
void markAddedTokens(TokenizerVocab &vocab, const GgufValue *types,
                     size_t count) {
  for (size_t id = 0; id < count; ++id)
    if (isAddedToken(types, id)) {
      vocab.specialTokens.push_back(int32_t(id));
      vocab.specialTokenStrips.push_back(
          types->numbers[id] == kUserDefined ? TokenizerVocab::kAddedText : 0);
    }
}

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
  llvm::Expected<const GgufValue *> types = tokenTypes(file, tokens);
  if (!types)
    return types.takeError();
  TokenizerVocab vocab;
  vocab.kind = TokenizerVocab::Kind::ScoreBpe;
  for (auto [piece, score] : llvm::zip(tokens.strings, (*scores)->numbers)) {
    vocab.pieces.push_back(replaceSentencePieceSpaces(piece));
    vocab.scores.push_back(float(score));
  }
  // LLaVA's <image>, chat models' <|im_start|>: one token each.
  markAddedTokens(vocab, *types, tokens.strings.size());
  return vocab;
}

/// The split of a "gpt2" tokenizer: tokenizer.ggml.pre's, where
/// runtime/tokenizer/tokenizer_bpe_split.c implements it (others split text
/// differently).
llvm::Expected<GgufBpeSplit> byteLevelSplit(const GgufFile &file) {
  llvm::Expected<std::optional<llvm::StringRef>> pre =
      file.optionalString("tokenizer.ggml.pre");
  if (!pre)
    return pre.takeError();
  std::optional<GgufBpeSplit> split =
      bpeSplitOfGgufPre(pre->value_or("default"));
  if (!split)
    return makeError(file.path() + ": tokenizer.ggml.pre '" + **pre +
                     "' is not a pre-tokenizer tfmc implements (gpt-2, "
                     "llama-bpe, glm4, qwen2, qwen35, gpt-4o, deepseek-llm, "
                     "deepseek-coder, deepseek-v3, falcon, starcoder, refact, "
                     "command-r and their aliases); pass another --tokenizer");
  return *split;
}

/// A BPE with merges: "gpt2" (GPT-2's byte-level spelling, split by
/// tokenizer.ggml.pre) or "gemma4" (SentencePiece's spelling, "▁" a space,
/// split into lines, with "<0xAB>" byte fallback; llama.cpp ignores any
/// tokenizer.ggml.pre for it).
llvm::Expected<TokenizerVocab> bpeWithMerges(const GgufFile &file,
                                             const GgufValue &tokens,
                                             bool gemma4) {
  llvm::Expected<GgufBpeSplit> split =
      gemma4 ? llvm::Expected<GgufBpeSplit>(
                   GgufBpeSplit{TokenizerVocab::BpeSplit::Gemma4, false})
             : byteLevelSplit(file);
  if (!split)
    return split.takeError();
  llvm::Expected<const GgufValue *> merges =
      file.array("tokenizer.ggml.merges", /*strings=*/true);
  if (!merges)
    return merges.takeError();
  // Control and user-defined tokens are stored as their text, not in
  // GPT-2's byte-level spelling (llama.cpp's token_to_piece): MPT's runs
  // of spaces are spaces.
  llvm::Expected<const GgufValue *> types = tokenTypes(file, tokens);
  if (!types)
    return types.takeError();
  auto isAdded = [&](size_t id) { return isAddedToken(*types, id); };
  std::vector<std::pair<std::string, int64_t>> spelled;
  llvm::SmallVector<bool> asWritten;
  for (auto [id, piece] : llvm::enumerate(tokens.strings)) {
    spelled.push_back({piece.str(), int64_t(id)});
    asWritten.push_back(isAdded(id));
  }
  std::vector<std::pair<std::string, std::string>> pairs;
  for (auto [rank, merge] : llvm::enumerate((*merges)->strings)) {
    // The separator is the first space after the first character, as
    // llama.cpp reads it (a token of one space may come first).
    size_t separator = merge.find(' ', 1);
    llvm::StringRef left = merge.take_front(separator);
    llvm::StringRef right = separator == llvm::StringRef::npos
                                ? llvm::StringRef()
                                : merge.drop_front(separator + 1);
    if (left.empty() || right.empty())
      return makeError(file.path() + ": tokenizer.ggml.merges entry " +
                       llvm::Twine(rank) + " ('" + merge +
                       "') is not two tokens separated by a space");
    pairs.push_back({left.str(), right.str()});
  }
  llvm::Expected<TokenizerVocab> vocab = byteLevelBpeFromSpellings(
      file.path(), spelled, pairs, asWritten,
      gemma4 ? BpeSpelling::SentencePiece : BpeSpelling::ByteLevel);
  if (!vocab)
    return vocab.takeError();
  vocab->bpeSplit = split->split;
  vocab->ignoreMerges = split->ignoreMerges;
  markAddedTokens(*vocab, *types, tokens.strings.size());
  return vocab;
}

/// BERT's WordPiece (llama.cpp's convert_hf_to_gguf.py writes BERT, and
/// BERT-based embedders such as bge and all-MiniLM, so), normalized as
/// uncased BERT is (lowercase, accents stripped, CJK characters apart:
/// GGUF keeps no tokenizer_config.json) and framed [CLS] ... [SEP].
llvm::Expected<TokenizerVocab> wordPiece(const GgufFile &file,
                                         const GgufValue &tokens) {
  TokenizerVocab vocab;
  vocab.kind = TokenizerVocab::Kind::WordPiece;
  constexpr llvm::StringLiteral kPhantomSpace = "\xe2\x96\x81"; // ▁
  for (llvm::StringRef token : tokens.strings) {
    if (token.consume_front(kPhantomSpace))
      vocab.pieces.push_back(token.str());
    else if (token.starts_with("[") && token.ends_with("]"))
      vocab.pieces.push_back(token.str());
    else
      vocab.pieces.push_back("##" + token.str());
  }
  vocab.scores.assign(vocab.pieces.size(), 0.0f);
  auto id = [&](llvm::StringRef key,
                llvm::StringRef fallback) -> llvm::Expected<int32_t> {
    llvm::Expected<std::optional<int64_t>> value =
        file.optionalInteger(key, int64_t(vocab.pieces.size()) - 1);
    if (!value)
      return value.takeError();
    if (*value)
      return int32_t(**value);
    auto found = llvm::find(vocab.pieces, fallback);
    if (found == vocab.pieces.end())
      return makeError(file.path() + ": no " + key + " and no '" + fallback +
                       "' token");
    return int32_t(found - vocab.pieces.begin());
  };
  llvm::Expected<int32_t> unknown = id("tokenizer.ggml.unknown_token_id", "[UNK]");
  if (!unknown)
    return unknown.takeError();
  // llama.cpp spells the key "seperator".
  llvm::Expected<int32_t> begin = id("tokenizer.ggml.cls_token_id", "[CLS]");
  if (!begin)
    return begin.takeError();
  llvm::Expected<int32_t> separator =
      id("tokenizer.ggml.seperator_token_id", "[SEP]");
  if (!separator)
    return separator.takeError();
  vocab.wordPiece.unknown = *unknown;
  vocab.framing.begin = *begin;
  vocab.framing.separator = *separator;
  // Control and user-defined tokens ([CLS], [MASK], ...) are matched whole
  // in text; [unusedN] are normal tokens, split as text is.
  llvm::Expected<const GgufValue *> types = tokenTypes(file, tokens);
  if (!types)
    return types.takeError();
  for (size_t i = 0; i < tokens.strings.size(); ++i)
    if (isAddedToken(*types, i)) {
      vocab.specialTokens.push_back(int32_t(i));
      vocab.specialTokenStrips.push_back(0);
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
  if (**kind == "gpt2" || **kind == "gemma4")
    return bpeWithMerges(file, **tokens, **kind == "gemma4");
  if (**kind == "bert")
    return wordPiece(file, **tokens);
  return makeError(file.path() + ": tokenizer.ggml.model '" + **kind +
                   "' is not supported (\"llama\", \"gpt2\", \"gemma4\" "
                   "and \"bert\" are)");
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
