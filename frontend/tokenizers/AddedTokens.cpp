//===- AddedTokens.cpp - tokenizer_config.json's added tokens ------------===//
//
// See AddedTokens.h.
//
//===----------------------------------------------------------------------===//

#include "frontend/tokenizers/AddedTokens.h"
#include "frontend/formats/ErrorMessages.h"
#include "frontend/formats/JsonFile.h"

#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <algorithm>

using namespace mlir;
using namespace mlir::tfm;

uint8_t mlir::tfm::addedTokenFlags(const llvm::json::Object &token) {
  return uint8_t(token.getBoolean("lstrip").value_or(false)) |
         uint8_t(token.getBoolean("rstrip").value_or(false)) << 1 |
         (token.getBoolean("special").value_or(false)
              ? 0
              : TokenizerVocab::kAddedText);
}

llvm::Expected<std::vector<ConfigAddedToken>>
mlir::tfm::readConfigAddedTokens(llvm::StringRef directory, std::string &path) {
  llvm::SmallString<256> file(directory);
  llvm::sys::path::append(file, "tokenizer_config.json");
  path = file.str().str();
  std::vector<ConfigAddedToken> tokens;
  if (!llvm::sys::fs::exists(file))
    return tokens;
  llvm::Expected<llvm::json::Value> json = readJsonFile(file);
  if (!json)
    return json.takeError();
  const llvm::json::Object *config = json->getAsObject();
  const llvm::json::Object *added =
      config ? config->getObject("added_tokens_decoder") : nullptr;
  if (!added)
    return tokens;
  for (const auto &[key, value] : *added) {
    ConfigAddedToken entry;
    entry.key = key.str();
    int64_t id = -1;
    if (!llvm::StringRef(entry.key).getAsInteger(10, id) && id >= 0)
      entry.id = id;
    if (const llvm::json::Object *token = value.getAsObject()) {
      entry.isObject = true;
      if (std::optional<llvm::StringRef> content = token->getString("content"))
        entry.content = content->str();
      entry.flags = addedTokenFlags(*token);
    }
    tokens.push_back(std::move(entry));
  }
  return tokens;
}

llvm::Error mlir::tfm::addSentencePieceAddedTokens(llvm::StringRef modelPath,
                                                   TokenizerVocab &vocab) {
  std::string path;
  llvm::Expected<std::vector<ConfigAddedToken>> added =
      readConfigAddedTokens(llvm::sys::path::parent_path(modelPath), path);
  if (!added)
    return added.takeError();
  // In id order: each past the model's pieces is the next piece.
  std::sort(added->begin(), added->end(),
            [](const ConfigAddedToken &a, const ConfigAddedToken &b) {
              return a.id < b.id;
            });
  for (const ConfigAddedToken &token : *added) {
    if (token.id < 0 || !token.content)
      return makeError(path + ": added token '" + token.key +
                       "' needs a non-negative id and a content");
    int64_t next = int64_t(vocab.pieces.size());
    if (token.id < next)
      continue;
    if (token.id > next)
      return makeError(path + ": added token " + llvm::Twine(token.id) + " ('" +
                       *token.content + "') leaves ids from " +
                       llvm::Twine(next) + " without a token (" + modelPath +
                       " has " + llvm::Twine(next) + " pieces)");
    vocab.pieces.push_back(*token.content);
    if (!vocab.scores.empty())
      vocab.scores.push_back(0.0f);
    if (vocab.kind == TokenizerVocab::Kind::Unigram)
      vocab.unigram.pieceTypes.push_back(
          TokenizerVocab::UnigramOptions::Piece::UserDefined);
    vocab.specialTokens.push_back(int32_t(token.id));
    vocab.specialTokenStrips.push_back(token.flags);
  }
  return llvm::Error::success();
}
