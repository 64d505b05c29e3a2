//===- WordPiece.cpp - BERT's tokenizer files and encoder framing -------===//
//
// WordPiece vocabularies come as vocab.txt (one piece per line, id = line)
// with tokenizer_config.json's normalization switches, or as a fast
// tokenizer's tokenizer.json ("model": {"type": "WordPiece"} with a
// BertNormalizer). Both become one TokenizerVocab; the runtime
// (tokenizer_wordpiece.c) does the splitting.
//
// Framing is shared with RoBERTa's byte-level BPE: an encoder wraps its text
// in [CLS] ... [SEP] (or <s> ... </s>) and keeps special tokens whole.
//
//===----------------------------------------------------------------------===//

#include "frontend/formats/ErrorMessages.h"
#include "frontend/formats/JsonFile.h"
#include "frontend/tokenizers/Tokenizer.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

std::string inDirectory(llvm::StringRef directory, llvm::StringRef name) {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, name);
  return path.str().str();
}

/// tokenizer_config.json as an object, or an empty one when absent.
llvm::Expected<llvm::json::Object> readTokenizerConfig(llvm::StringRef dir) {
  std::string path = inDirectory(dir, "tokenizer_config.json");
  if (!llvm::sys::fs::exists(path))
    return llvm::json::Object();
  llvm::Expected<llvm::json::Value> json = readJsonFile(path);
  if (!json)
    return json.takeError();
  if (!json->getAsObject())
    return makeError(path + ": expected a JSON object");
  return std::move(*json->getAsObject());
}

/// A special token's spelling: "[CLS]" or {"content": "[CLS]", ...}.
std::optional<llvm::StringRef> tokenSpelling(const llvm::json::Value *value) {
  if (!value)
    return std::nullopt;
  if (std::optional<llvm::StringRef> text = value->getAsString())
    return text;
  if (const llvm::json::Object *object = value->getAsObject())
    return object->getString("content");
  return std::nullopt;
}

/// vocab.txt: one piece per line; the line number is the id.
llvm::Error readVocabText(llvm::StringRef path, TokenizerVocab &vocab) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return makeError("cannot read '" + path +
                     "': " + buffer.getError().message());
  llvm::SmallVector<llvm::StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n', -1, /*KeepEmpty=*/true);
  if (!lines.empty() && lines.back().empty())
    lines.pop_back(); // the final newline
  for (llvm::StringRef line : lines)
    vocab.pieces.push_back(line.rtrim("\r").str());
  if (vocab.pieces.empty())
    return makeError(path + ": no pieces");
  return llvm::Error::success();
}

/// tokenizer.json whose model is WordPiece.
llvm::Error readWordPieceJson(llvm::StringRef path, TokenizerVocab &vocab) {
  llvm::Expected<std::shared_ptr<const llvm::json::Value>> json =
      readSharedJsonFile(path);
  if (!json)
    return json.takeError();
  const llvm::json::Object *root = (*json)->getAsObject();
  const llvm::json::Object *model = root ? root->getObject("model") : nullptr;
  if (!model ||
      model->getString("type") != std::optional<llvm::StringRef>("WordPiece"))
    return makeError(path + ": expected a \"model\" of type \"WordPiece\"");
  const llvm::json::Object *pieces = model->getObject("vocab");
  if (!pieces)
    return makeError(path + ": missing object \"model.vocab\"");
  std::vector<std::pair<std::string, int64_t>> entries;
  int64_t size = 0;
  for (const auto &[piece, id] : *pieces) {
    std::optional<int64_t> value = id.getAsInteger();
    if (!value || *value < 0)
      return makeError(path + ": piece '" + piece.str() +
                       "' has no non-negative integer id");
    // Ids are 0 .. pieces - 1: one past them leaves one of those missing,
    // and must not size the vocabulary (2^44 ids: tens of terabytes).
    if (*value >= int64_t(pieces->size()))
      return makeError(path + ": piece '" + piece.str() + "' has id " +
                       llvm::Twine(*value) + ", past the " +
                       llvm::Twine(pieces->size()) +
                       " pieces (ids are 0 to their count - 1)");
    entries.push_back({piece.str(), *value});
    size = std::max(size, *value + 1);
  }
  vocab.pieces.assign(size, "");
  std::vector<bool> seen(size, false);
  for (auto &[piece, id] : entries) {
    if (seen[id])
      return makeError(path + ": two pieces have id " + llvm::Twine(id));
    seen[id] = true;
    vocab.pieces[id] = std::move(piece);
  }
  for (int64_t id = 0; id < size; ++id)
    if (!seen[id])
      return makeError(path + ": no piece has id " + llvm::Twine(id));
  TokenizerVocab::WordPieceOptions &options = vocab.wordPiece;
  if (auto prefix = model->getString("continuing_subword_prefix"))
    options.continuationPrefix = prefix->str();
  if (auto maxChars = model->getInteger("max_input_chars_per_word"))
    options.maxCharsPerWord = uint32_t(std::max<int64_t>(*maxChars, 0));
  if (const llvm::json::Object *normalizer = root->getObject("normalizer")) {
    if (normalizer->getString("type") !=
        std::optional<llvm::StringRef>("BertNormalizer"))
      return makeError(path + ": only a \"BertNormalizer\" normalizer is "
                              "supported with WordPiece");
    options.lowercase = normalizer->getBoolean("lowercase").value_or(true);
    options.splitCjk =
        normalizer->getBoolean("handle_chinese_chars").value_or(true);
    // null: follow lowercasing, as the slow tokenizer does.
    options.stripAccents = normalizer->getBoolean("strip_accents")
                               .value_or(options.lowercase);
  }
  return llvm::Error::success();
}

int32_t idOf(const TokenizerVocab &vocab, llvm::StringRef piece) {
  for (auto [id, candidate] : llvm::enumerate(vocab.pieces))
    if (candidate == piece)
      return int32_t(id);
  return -1;
}

} // namespace

bool mlir::tfm::hasWordPieceFiles(llvm::StringRef directory) {
  if (llvm::sys::fs::exists(inDirectory(directory, "vocab.txt")))
    return true;
  std::string json = inDirectory(directory, "tokenizer.json");
  if (!llvm::sys::fs::exists(json))
    return false;
  llvm::Expected<std::shared_ptr<const llvm::json::Value>> value =
      readSharedJsonFile(json);
  if (!value) {
    llvm::consumeError(value.takeError());
    return false;
  }
  const llvm::json::Object *root = (*value)->getAsObject();
  const llvm::json::Object *model = root ? root->getObject("model") : nullptr;
  return model && model->getString("type") ==
                      std::optional<llvm::StringRef>("WordPiece");
}

llvm::Expected<TokenizerVocab>
mlir::tfm::readWordPiece(llvm::StringRef directory) {
  TokenizerVocab vocab;
  vocab.kind = TokenizerVocab::Kind::WordPiece;
  std::string text = inDirectory(directory, "vocab.txt");
  llvm::Expected<llvm::json::Object> config = readTokenizerConfig(directory);
  if (!config)
    return config.takeError();
  if (llvm::sys::fs::exists(text)) {
    if (llvm::Error err = readVocabText(text, vocab))
      return std::move(err);
    // The slow tokenizer's switches; strip_accents null follows lowercasing.
    TokenizerVocab::WordPieceOptions &options = vocab.wordPiece;
    options.lowercase = config->getBoolean("do_lower_case").value_or(true);
    options.stripAccents =
        config->getBoolean("strip_accents").value_or(options.lowercase);
    options.splitCjk =
        config->getBoolean("tokenize_chinese_chars").value_or(true);
  } else if (llvm::Error err = readWordPieceJson(
                 inDirectory(directory, "tokenizer.json"), vocab)) {
    return std::move(err);
  }
  std::string unknown =
      tokenSpelling(config->get("unk_token")).value_or("[UNK]").str();
  vocab.wordPiece.unknown = idOf(vocab, unknown);
  if (vocab.wordPiece.unknown < 0)
    return makeError(directory + ": the unknown token '" + unknown +
                     "' is not in the vocabulary");
  vocab.scores.assign(vocab.pieces.size(), 0.0f);
  return vocab;
}

llvm::Error mlir::tfm::frameForEncoder(TokenizerVocab &vocab,
                                       llvm::StringRef directory) {
  llvm::Expected<llvm::json::Object> config = readTokenizerConfig(directory);
  if (!config)
    return config.takeError();
  bool wordPiece = vocab.kind == TokenizerVocab::Kind::WordPiece;
  auto spelling = [&](llvm::StringRef key, llvm::StringRef fallback) {
    return tokenSpelling(config->get(key)).value_or(fallback).str();
  };
  std::string begin = spelling("cls_token", wordPiece ? "[CLS]" : "<s>"),
              separator = spelling("sep_token", wordPiece ? "[SEP]" : "</s>");
  // CLIP frames with its start and end of text, as RoBERTa's processor.
  if (vocab.kind == TokenizerVocab::Kind::ByteLevelBpe &&
      vocab.bpeSplit == TokenizerVocab::BpeSplit::Clip) {
    begin = spelling("bos_token", "<|startoftext|>");
    separator = spelling("eos_token", "<|endoftext|>");
  }
  TokenizerVocab::Framing &framing = vocab.framing;
  framing.begin = idOf(vocab, begin);
  framing.separator = idOf(vocab, separator);
  if (framing.begin < 0 || framing.separator < 0)
    return makeError(directory + ": the encoder's framing tokens '" + begin +
                     "' and '" + separator + "' are not both in the vocabulary");
  // RoBERTa separates a pair with </s></s>; BERT's second segment is type 1.
  framing.pairSeparators = wordPiece ? 1 : 2;
  framing.secondType = wordPiece ? 1 : 0;

  // Special tokens, matched whole in text: the config's added_tokens_decoder
  // or tokenizer.json's added_tokens (with their lstrip/rstrip), else the
  // named special tokens.
  vocab.specialTokens.clear();
  vocab.specialTokenStrips.clear();
  auto addSpecial = [&](llvm::StringRef piece, bool lstrip, bool rstrip) {
    int32_t id = idOf(vocab, piece);
    if (id >= 0 && !llvm::is_contained(vocab.specialTokens, id)) {
      vocab.specialTokens.push_back(id);
      vocab.specialTokenStrips.push_back(uint8_t(lstrip) | uint8_t(rstrip) << 1);
    }
  };
  auto addSpecialObject = [&](const llvm::json::Value &value) {
    if (const llvm::json::Object *token = value.getAsObject())
      if (auto content = token->getString("content");
          content && token->getBoolean("special").value_or(false))
        addSpecial(*content, token->getBoolean("lstrip").value_or(false),
                   token->getBoolean("rstrip").value_or(false));
  };
  // A fast tokenizer's tokenizer.json lists them as "added_tokens".
  std::string fastPath = inDirectory(directory, "tokenizer.json");
  std::shared_ptr<const llvm::json::Value> fast;
  if (!config->getObject("added_tokens_decoder") &&
      llvm::sys::fs::exists(fastPath)) {
    llvm::Expected<std::shared_ptr<const llvm::json::Value>> json =
        readSharedJsonFile(fastPath);
    if (!json)
      return json.takeError();
    fast = std::move(*json);
  }
  const llvm::json::Array *fastAdded =
      fast && fast->getAsObject() ? fast->getAsObject()->getArray("added_tokens")
                                  : nullptr;
  if (const llvm::json::Object *added =
          config->getObject("added_tokens_decoder")) {
    for (const auto &entry : *added)
      addSpecialObject(entry.second);
  } else if (fastAdded) {
    for (const llvm::json::Value &entry : *fastAdded)
      addSpecialObject(entry);
  } else {
    for (const char *key :
         {"cls_token", "sep_token", "pad_token", "unk_token", "mask_token"})
      if (auto piece = tokenSpelling(config->get(key)))
        addSpecial(*piece, false, false);
    addSpecial(begin, false, false);
    addSpecial(separator, false, false);
  }
  return llvm::Error::success();
}
