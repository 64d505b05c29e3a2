//===- TokenizerFiles.cpp - the tokenizer at a path -----------------------===//
//
// Which reader a tokenizer path takes: a folder's files (WordPiece,
// SentencePiece of T5, Marian or fairseq, byte-level BPE), tokenizer.json,
// a SentencePiece .model, a GGUF file or a llama2.c tokenizer.bin.
//
//===----------------------------------------------------------------------===//

#include "frontend/formats/ErrorMessages.h"
#include "frontend/formats/JsonFile.h"
#include "frontend/tokenizers/AddedTokens.h"
#include "frontend/tokenizers/Tokenizer.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace mlir::tfm;

/// WordPiece and CLIP's BPE are encoders'; byte-level BPE is when it has
/// RoBERTa's <s> and </s> or tokenizer_config.json names a CLS token, as
/// GPT-2's does not.
static bool isEncoderTokenizer(const TokenizerVocab &vocab,
                               llvm::StringRef directory) {
  if (vocab.kind == TokenizerVocab::Kind::WordPiece ||
      (vocab.kind == TokenizerVocab::Kind::ByteLevelBpe &&
       vocab.bpeSplit == TokenizerVocab::BpeSplit::Clip))
    return true;
  auto has = [&](llvm::StringRef piece) {
    return llvm::is_contained(vocab.pieces, piece);
  };
  if (has("<s>") && has("</s>"))
    return true;
  llvm::SmallString<256> config(directory);
  llvm::sys::path::append(config, "tokenizer_config.json");
  if (!llvm::sys::fs::exists(config))
    return false;
  llvm::Expected<llvm::json::Value> json = readJsonFile(config);
  if (!json) {
    llvm::consumeError(json.takeError());
    return false;
  }
  return json->getAsObject() && json->getAsObject()->get("cls_token");
}

llvm::Expected<TokenizerVocab> mlir::tfm::readTokenizerAt(llvm::StringRef path,
                                                          int64_t vocabSize) {
  if (!llvm::sys::fs::exists(path))
    return makeError("tokenizer '" + path + "' does not exist");
  llvm::Expected<TokenizerVocab> vocab =
      [&]() -> llvm::Expected<TokenizerVocab> {
    if (llvm::sys::fs::is_directory(path)) {
      // Encoder-decoders' SentencePiece folders end their texts
      // themselves.
      if (hasT5SentencePieceFiles(path))
        return readT5SentencePiece(path, vocabSize);
      if (hasMarianSentencePieceFiles(path))
        return readMarianSentencePiece(path);
      llvm::Expected<TokenizerVocab> vocab =
          hasWordPieceFiles(path)              ? readWordPiece(path)
          : hasFairseqSentencePieceFiles(path) ? readFairseqSentencePiece(path)
                                               : readByteLevelBpe(path);
      // An encoder's folder frames its text ([CLS] ... [SEP]).
      if (vocab && isEncoderTokenizer(*vocab, path))
        if (llvm::Error err = frameForEncoder(*vocab, path))
          return std::move(err);
      return vocab;
    }
    if (llvm::sys::path::filename(path) == "tokenizer.json")
      return readByteLevelBpe(llvm::sys::path::parent_path(path));
    if (path.ends_with(".model")) {
      llvm::Expected<TokenizerVocab> model = readSentencePieceModel(path);
      if (model)
        if (llvm::Error err = addSentencePieceAddedTokens(path, *model))
          return std::move(err);
      return model;
    }
    if (path.ends_with(".gguf"))
      return readGgufTokenizerFile(path);
    return readLlama2cTokenizer(path, vocabSize);
  }();
  if (!vocab)
    return vocab.takeError();
  if (vocab->pieces.empty())
    return makeError(
        "tokenizer '" + path +
        "': no vocab.txt, vocab.json + merges.txt, tokenizer.json, "
        "sentencepiece.bpe.model, spiece.model or source.spm + "
        "vocab.json there");
  // Checkpoints pad their embedding tables past the tokenizer (to a
  // multiple of 64 or 128: Qwen2, Pythia, Phi-2, OLMo); the rows past it
  // are ids no text encodes to, and decode to nothing if sampled
  // (tfm_tokenizer_decode returns NULL past the tokenizer's pieces).
  if (int64_t(vocab->pieces.size()) > vocabSize)
    return makeError(path + ": tokenizer has " +
                     llvm::Twine(vocab->pieces.size()) +
                     " tokens, more than the model's vocabulary of " +
                     llvm::Twine(vocabSize) +
                     " (tfmc takes a tokenizer no larger than the embedding "
                     "table)");
  return vocab;
}

llvm::Expected<int32_t> mlir::tfm::readPadToken(llvm::StringRef folder,
                                                const TokenizerVocab &vocab,
                                                llvm::StringRef fallback) {
  for (llvm::StringRef file :
       {"special_tokens_map.json", "tokenizer_config.json"}) {
    llvm::SmallString<256> path(folder);
    llvm::sys::path::append(path, file);
    if (!llvm::sys::fs::exists(path))
      continue;
    llvm::Expected<llvm::json::Value> json = readJsonFile(path);
    if (!json)
      return json.takeError();
    const llvm::json::Object *object = json->getAsObject();
    const llvm::json::Value *pad = object ? object->get("pad_token") : nullptr;
    if (!pad || pad->kind() == llvm::json::Value::Null)
      continue;
    std::optional<llvm::StringRef> spelling = pad->getAsString();
    if (!spelling && pad->getAsObject())
      spelling = pad->getAsObject()->getString("content");
    if (!spelling)
      return makeError(path + ": pad_token must be a string or an object "
                              "with its content");
    if (std::optional<int64_t> id = vocab.idOf(*spelling))
      return int32_t(*id);
    return makeError(path + ": pad_token '" + *spelling +
                     "' is not in the tokenizer's vocabulary");
  }
  if (std::optional<int64_t> id = vocab.idOf(fallback))
    return int32_t(*id);
  return makeError(folder + ": no pad_token, and no " + fallback +
                   " to pad texts with");
}
