//===- Seq2SeqTokenizers.cpp - T5's and Marian's SentencePiece tokenizers ===//
//
// The tokenizers of encoders that are SentencePiece Unigram models with
// their own id assignments (see Tokenizer.h): T5's spiece.model plus
// sentinel tokens, SigLIP's text tower's spiece.model with SiglipTokenizer's
// own text handling, and Marian's source.spm read through vocab.json. All
// end every text with </s>; BART's byte-level BPE is GPT-2's with
// RoBERTa's framing (ByteLevelBpe.cpp).
//
//===----------------------------------------------------------------------===//

#include "frontend/formats/ErrorMessages.h"
#include "frontend/formats/JsonFile.h"
#include "frontend/tokenizers/Tokenizer.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

using namespace mlir;
using namespace mlir::tfm;

namespace {

using PieceType = TokenizerVocab::UnigramOptions::Piece;

std::string pathIn(llvm::StringRef directory, llvm::StringRef file) {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, file);
  return path.str().str();
}

/// A folder's spiece.model, which must be a Unigram model (`family`'s, for
/// the message), and its tokenizer_config.json (empty without one).
struct SpieceFolder {
  TokenizerVocab vocab;
  llvm::json::Object config;
};
llvm::Expected<SpieceFolder> readSpieceFolder(llvm::StringRef directory,
                                              llvm::StringRef family) {
  std::string path = pathIn(directory, "spiece.model");
  llvm::Expected<TokenizerVocab> model = readSentencePieceModel(path);
  if (!model)
    return model.takeError();
  if (model->kind != TokenizerVocab::Kind::Unigram)
    return makeError(path + ": expected a Unigram model (" + family + "'s)");
  static const llvm::json::Object none;
  std::optional<llvm::json::Value> holder;
  llvm::Expected<const llvm::json::Object *> config = readOptionalJsonObject(
      pathIn(directory, "tokenizer_config.json"), &none, holder);
  if (!config)
    return config.takeError();
  return SpieceFolder{std::move(*model), **config};
}

/// Makes `id` a special token (matched whole in text) with `strips`.
void addSpecial(TokenizerVocab &vocab, int32_t id, uint8_t strips = 0) {
  vocab.specialTokens.push_back(id);
  vocab.specialTokenStrips.push_back(strips);
}

/// The id of piece `text`, or -1.
int32_t findPiece(const TokenizerVocab &vocab, llvm::StringRef text) {
  auto it = llvm::find(vocab.pieces, text);
  return it == vocab.pieces.end() ? -1 : int32_t(it - vocab.pieces.begin());
}

/// Makes </s> the separator that ends every text, and `specials` (those
/// the model has) special tokens with `strips`.
llvm::Error frameWithEndOfText(TokenizerVocab &vocab, llvm::StringRef path,
                               llvm::ArrayRef<llvm::StringRef> specials,
                               uint8_t strips) {
  int32_t eos = findPiece(vocab, "</s>");
  if (eos < 0)
    return makeError(path + ": the model has no </s> piece");
  vocab.framing.separator = eos;
  for (llvm::StringRef special : specials)
    if (int32_t id = findPiece(vocab, special); id >= 0)
      addSpecial(vocab, id, strips);
  return llvm::Error::success();
}

} // namespace

bool mlir::tfm::hasT5SentencePieceFiles(llvm::StringRef directory) {
  return llvm::sys::fs::exists(pathIn(directory, "spiece.model"));
}

/// Sentinel and padding ids beyond the model's own pieces that a T5
/// vocabulary may add whatever its pieces (T5: 100 sentinels and 28
/// padding ids after 32 000 pieces).
constexpr int64_t kMaxMadeUpTokens = 1024;

llvm::Expected<TokenizerVocab>
mlir::tfm::readT5SentencePiece(llvm::StringRef directory, int64_t vocabSize) {
  std::string path = pathIn(directory, "spiece.model");
  llvm::Expected<SpieceFolder> folder = readSpieceFolder(directory, "T5");
  if (!folder)
    return folder.takeError();
  int64_t extraIds = folder->config.getInteger("extra_ids").value_or(100);
  TokenizerVocab vocab = std::move(folder->vocab);
  int64_t modelPieces = vocab.pieces.size();
  // The ids past the model's pieces (sentinels, then the padding that
  // rounds T5's embedding up to a multiple of 128) are made up here, one
  // string each: a config claiming far more than the file has would size
  // them, not the file (2^31 of them: tens of gigabytes).
  if (vocabSize - modelPieces > modelPieces + kMaxMadeUpTokens)
    return makeError(path + ": the model's " + llvm::Twine(vocabSize) +
                     "-token vocabulary is more than twice the file's " +
                     llvm::Twine(modelPieces) +
                     " pieces: the ids past them (sentinels and padding) "
                     "would outnumber them");
  if (extraIds < 0 || modelPieces + extraIds > vocabSize)
    return makeError(path + ": " + llvm::Twine(modelPieces) + " pieces and " +
                     llvm::Twine(extraIds) +
                     " sentinel tokens do not fit the model's " +
                     llvm::Twine(vocabSize) + "-token vocabulary");
  // <extra_id_0> is the last sentinel id: T5Tokenizer's
  // vocab_size - 1 - N, matched whole and stripping spaces on both sides.
  for (int64_t id = modelPieces; id < vocabSize; ++id) {
    int64_t sentinel = modelPieces + extraIds - 1 - id;
    bool isSentinel = id < modelPieces + extraIds;
    vocab.pieces.push_back(
        isSentinel ? "<extra_id_" + std::to_string(sentinel) + ">" : "");
    vocab.scores.push_back(0.0f);
    vocab.unigram.pieceTypes.push_back(PieceType::Reserved);
    if (isSentinel)
      addSpecial(vocab, int32_t(id), /*strip left and right*/ 3);
  }
  if (llvm::Error err = frameWithEndOfText(
          vocab, path, {"</s>", "<unk>", "<pad>"}, /*strips=*/0))
    return std::move(err);
  return vocab;
}

llvm::Expected<TokenizerVocab>
mlir::tfm::readSiglipSentencePiece(llvm::StringRef directory,
                                   int64_t vocabSize) {
  std::string path = pathIn(directory, "spiece.model");
  llvm::Expected<SpieceFolder> folder = readSpieceFolder(directory, "SigLIP");
  if (!folder)
    return folder.takeError();
  TokenizerVocab vocab = std::move(folder->vocab);
  int64_t modelPieces = vocab.pieces.size();
  if (vocabSize < modelPieces || vocabSize - modelPieces > kMaxMadeUpTokens)
    return makeError(path + ": " + llvm::Twine(modelPieces) +
                     " pieces do not make the text model's " +
                     llvm::Twine(vocabSize) + "-token vocabulary");
  // An embedding larger than the pieces: ids that no text makes.
  for (int64_t id = modelPieces; id < vocabSize; ++id) {
    vocab.pieces.emplace_back();
    vocab.scores.push_back(0.0f);
    vocab.unigram.pieceTypes.push_back(PieceType::Reserved);
  }
  // SiglipTokenizer turns SentencePiece's dummy prefix off and writes its
  // own U+2581 before the text, which it lowercases and canonicalizes.
  vocab.unigram.addDummyPrefix = false;
  vocab.unigram.siglipText = true;
  vocab.unigram.lowercase =
      folder->config.getBoolean("do_lower_case").value_or(true);
  // Its AddedTokens (not <pad>, which it never uses) strip the spaces on
  // both sides.
  if (llvm::Error err =
          frameWithEndOfText(vocab, path, {"</s>", "<unk>"}, /*strips=*/3))
    return std::move(err);
  return vocab;
}

bool mlir::tfm::hasMarianSentencePieceFiles(llvm::StringRef directory) {
  return llvm::sys::fs::exists(pathIn(directory, "source.spm")) &&
         llvm::sys::fs::exists(pathIn(directory, "vocab.json"));
}

llvm::Expected<TokenizerVocab>
mlir::tfm::readMarianSentencePiece(llvm::StringRef directory) {
  std::string spmPath = pathIn(directory, "source.spm");
  llvm::Expected<TokenizerVocab> source = readSentencePieceModel(spmPath);
  if (!source)
    return source.takeError();
  if (source->kind != TokenizerVocab::Kind::Unigram)
    return makeError(spmPath + ": expected a Unigram model (Marian's)");
  std::string vocabPath = pathIn(directory, "vocab.json");
  llvm::Expected<llvm::json::Value> json = readJsonFile(vocabPath);
  if (!json)
    return json.takeError();
  const llvm::json::Object *entries = json->getAsObject();
  if (!entries || entries->empty())
    return makeError(vocabPath + ": expected an object of pieces and ids");

  // vocab.json's ids number the pieces; the source model lends each of its
  // pieces' score and type to the id vocab.json gives that piece. Ids are
  // dense in real files: one past twice the entries' count would size the
  // vocabulary by a number the file does not back (a 20-byte file asked for
  // 2^24 pieces), and is refused as T5's oversized vocabularies are.
  size_t size = 0;
  int64_t idLimit = 2 * int64_t(entries->size());
  for (const auto &[piece, id] : *entries) {
    std::optional<int64_t> value = id.getAsInteger();
    if (!value || *value < 0)
      return makeError(vocabPath + ": the id of '" + piece.str() +
                       "' is not a token id");
    if (*value >= idLimit)
      return makeError(vocabPath + ": piece '" + piece.str() + "' has id " +
                       std::to_string(*value) + ", past twice the " +
                       std::to_string(entries->size()) + " pieces");
    size = std::max(size, size_t(*value) + 1);
  }
  TokenizerVocab vocab;
  vocab.kind = TokenizerVocab::Kind::Unigram;
  // The character map (nmt_nfkc's: 235 KB) moves, not copies.
  std::string charsMap = std::move(source->unigram.charsMap);
  vocab.unigram = source->unigram;
  vocab.unigram.charsMap = std::move(charsMap);
  vocab.unigram.pieceTypes.assign(size, PieceType::Reserved);
  vocab.pieces.assign(size, "");
  vocab.scores.assign(size, 0.0f);
  llvm::StringMap<size_t> sourceIndex;
  for (auto [index, piece] : llvm::enumerate(source->pieces))
    sourceIndex.try_emplace(piece, index);
  for (const auto &[spelling, id] : *entries) {
    size_t at = size_t(*id.getAsInteger());
    vocab.pieces[at] = replaceSentencePieceSpaces(spelling);
    auto found = sourceIndex.find(vocab.pieces[at]);
    if (found == sourceIndex.end())
      continue;
    vocab.scores[at] = source->scores[found->second];
    vocab.unigram.pieceTypes[at] = source->unigram.pieceTypes[found->second];
  }
  int32_t unknown = findPiece(vocab, "<unk>"), eos = findPiece(vocab, "</s>");
  if (unknown < 0 || eos < 0)
    return makeError(vocabPath + ": expected <unk> and </s> among the pieces");
  vocab.unigram.unknown = unknown;
  vocab.framing.separator = eos;
  for (auto [id, piece] : llvm::enumerate(vocab.pieces)) {
    llvm::StringRef text(piece);
    bool languageCode = text.size() > 4 && text.starts_with(">>") &&
                        text.ends_with("<<");
    if (languageCode || text == "</s>" || text == "<unk>" || text == "<pad>")
      addSpecial(vocab, int32_t(id));
  }
  return vocab;
}
