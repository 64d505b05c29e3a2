//===- ByteLevelBpe.cpp - GPT-2 tokenizer files -------------------------===//
//
// GPT-2 spells each byte of a token as one printable unicode character
// ("bytes_to_unicode": printable Latin-1 maps to itself, the other bytes to
// U+0100 onwards). The reader undoes that, so that the runtime works on raw
// bytes, and turns merges ("a b" lines, rank = order) into id triples.
//
//===----------------------------------------------------------------------===//

#include "frontend/formats/ErrorMessages.h"
#include "frontend/formats/JsonFile.h"
#include "frontend/tokenizers/AddedTokens.h"
#include "frontend/tokenizers/Tokenizer.h"

#include "llvm/ADT/SmallString.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/ConvertUTF.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <set>

using namespace mlir;
using namespace mlir::tfm;

namespace {

/// GPT-2's bytes_to_unicode, inverted: code point -> byte.
llvm::DenseMap<uint32_t, uint8_t> unicodeToByte() {
  llvm::DenseMap<uint32_t, uint8_t> map;
  uint32_t next = 256;
  for (uint32_t b = 0; b < 256; ++b) {
    bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) ||
                     (b >= 0xAE && b <= 0xFF);
    map[printable ? b : next++] = uint8_t(b);
  }
  return map;
}

/// Decodes a token's GPT-2 spelling into its bytes.
std::optional<std::string>
decodeSpelling(llvm::StringRef spelling,
               const llvm::DenseMap<uint32_t, uint8_t> &table) {
  std::string bytes;
  const auto *at = reinterpret_cast<const llvm::UTF8 *>(spelling.begin());
  const auto *end = reinterpret_cast<const llvm::UTF8 *>(spelling.end());
  while (at < end) {
    llvm::UTF32 codePoint;
    if (llvm::convertUTF8Sequence(&at, end, &codePoint, llvm::strictConversion) !=
        llvm::conversionOK)
      return std::nullopt;
    auto it = table.find(codePoint);
    if (it == table.end())
      return std::nullopt;
    bytes += char(it->second);
  }
  return bytes;
}

/// The pre-tokenizer patterns of Llama 3 and Qwen2 as their tokenizer.json
/// files spell them (runtime/tokenizer/tokenizer_byte_level_bpe.c matches them).
constexpr llvm::StringLiteral kLlama3Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
    "\\s+(?!\\S)|\\s+";
constexpr llvm::StringLiteral kQwen2Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|"
    "\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
    "\\s+(?!\\S)|\\s+";
/// Qwen3.5's: Qwen2's with combining marks (\p{M}) in the letter runs.
constexpr llvm::StringLiteral kQwen35Pattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|"
    "\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|"
    "\\s+(?!\\S)|\\s+";

/// GPT-4o's (tiktoken's o200k; gpt-oss's tokenizer.json).
constexpr llvm::StringLiteral kGpt4oPattern =
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*"
    "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
    "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+"
    "[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|"
    "\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|"
    "\\s+(?!\\S)|\\s+";

struct RawBpe {
  std::vector<std::pair<std::string, int64_t>> vocab; // spelling, id
  std::vector<std::pair<std::string, std::string>> merges;
  /// A tokenizer.json's split, read with its vocabulary.
  std::optional<TokenizerVocab::BpeSplit> split;
  /// tokenizer.json's model.ignore_merges (Llama 3's).
  bool ignoreMerges = false;
  /// tokenizer.json's normalizer is NFC.
  bool nfc = false;
  /// Added tokens: id, TokenizerVocab::specialTokenStrips flags.
  std::vector<std::pair<int64_t, uint8_t>> added;
  /// Per vocab entry: an added token, stored as its text.
  llvm::SmallVector<bool> asWritten;
};

llvm::Error readVocabObject(const llvm::json::Object *object,
                            llvm::StringRef path, RawBpe &raw) {
  if (!object)
    return makeError(path + ": the vocabulary must be a JSON object");
  for (const auto &[spelling, id] : *object) {
    std::optional<int64_t> value = id.getAsInteger();
    if (!value || *value < 0)
      return makeError(path + ": token '" + spelling.str() +
                       "' has no non-negative integer id");
    raw.vocab.push_back({spelling.str(), *value});
  }
  return llvm::Error::success();
}

llvm::Error readMergesText(llvm::StringRef path, RawBpe &raw) {
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer)
    return makeError("cannot read '" + path +
                     "': " + buffer.getError().message());
  llvm::SmallVector<llvm::StringRef> lines;
  (*buffer)->getBuffer().split(lines, '\n', -1, false);
  for (auto [number, line] : llvm::enumerate(lines)) {
    line = line.rtrim("\r");
    if (line.starts_with("#version") || line.empty())
      continue;
    auto [left, right] = line.split(' ');
    if (left.empty() || right.empty() || right.contains(' '))
      return makeError(path + ":" + llvm::Twine(number + 1) +
                       ": expected two tokens separated by one space");
    raw.merges.push_back({left.str(), right.str()});
  }
  return llvm::Error::success();
}

/// Whether `object` is the {"String": text} pattern of a Replace or Split.
bool isStringPattern(const llvm::json::Object &object, llvm::StringRef text) {
  const llvm::json::Object *pattern = object.getObject("pattern");
  return pattern && pattern->getString("String") ==
                        std::optional<llvm::StringRef>(text);
}

/// Whether a byte-fallback BPE's tokenizer.json is Gemma 4's pipeline
/// (transformers' GemmaTokenizer): a normalizer that replaces " " by "▁"
/// and nothing else, and no pre-tokenizer or the Split on " " that the
/// normalizer leaves nothing to split. Its BPE then runs over the whole
/// text; no Gemma 4 merge joins a newline to another character, so lines
/// merged apart are the same (llama.cpp's gemma4 split, the runtime's).
bool isGemma4Pipeline(const llvm::json::Object &tokenizer) {
  const llvm::json::Object *normalizer = tokenizer.getObject("normalizer");
  if (!normalizer ||
      normalizer->getString("type") != std::optional<llvm::StringRef>("Replace") ||
      !isStringPattern(*normalizer, " ") ||
      normalizer->getString("content") !=
          std::optional<llvm::StringRef>("\xe2\x96\x81"))
    return false;
  const llvm::json::Value *pre = tokenizer.get("pre_tokenizer");
  if (!pre || pre->kind() == llvm::json::Value::Null)
    return true;
  const llvm::json::Object *split = pre->getAsObject();
  return split &&
         split->getString("type") == std::optional<llvm::StringRef>("Split") &&
         isStringPattern(*split, " ");
}

/// The split of tokenizer.json `json` (read from `path`) and whether its
/// normalizer composes to NFC: none or NFC (GPT-NeoX's, OLMo's, Qwen2's);
/// Qwen2's split always has NFC (the runtime composes for it); Qwen3.5's
/// has none.
llvm::Expected<std::pair<TokenizerVocab::BpeSplit, bool>>
tokenizerJsonSplit(const llvm::json::Value &json, llvm::StringRef path) {
  const llvm::json::Object *object = json.getAsObject();
  // CLIP's: a BPE whose words end in "</w>" (its own split and normalizer,
  // NFC, whitespace runs one space, lowercase, which the runtime applies).
  const llvm::json::Object *model =
      object ? object->getObject("model") : nullptr;
  std::optional<llvm::StringRef> suffix =
      model ? model->getString("end_of_word_suffix") : std::nullopt;
  if (suffix && *suffix == "</w>")
    return std::make_pair(TokenizerVocab::BpeSplit::Clip, true);
  if (suffix && !suffix->empty())
    return makeError(path +
                     ": a BPE end_of_word_suffix other than CLIP's "
                     "\"</w>\" is not supported (got \"" +
                     *suffix + "\")");
  // Gemma 4's: byte fallback, spaces spelled "▁" by the normalizer.
  if (model && model->getBoolean("byte_fallback").value_or(false)) {
    if (isGemma4Pipeline(*object))
      return std::make_pair(TokenizerVocab::BpeSplit::Gemma4, false);
    return makeError(path + ": a BPE with byte_fallback is supported as "
                            "Gemma 4's (a Replace normalizer of \" \" by "
                            "\"\u2581\" and no pre-tokenizer, or a Split on "
                            "\" \"); others need their tokenizer.model");
  }
  llvm::Expected<TokenizerVocab::BpeSplit> split = bpeSplitOfPreTokenizer(
      object ? object->get("pre_tokenizer") : nullptr, path);
  if (!split)
    return split.takeError();
  const llvm::json::Value *normalizer =
      object ? object->get("normalizer") : nullptr;
  bool none = !normalizer || normalizer->kind() == llvm::json::Value::Null;
  bool nfc = normalizer && normalizer->getAsObject() &&
             normalizer->getAsObject()->getString("type") ==
                 std::optional<llvm::StringRef>("NFC");
  bool qwen2 = *split == TokenizerVocab::BpeSplit::Qwen2;
  if (!(none || nfc) || (qwen2 && !nfc))
    return makeError(path + ": a byte-level BPE normalizer other than " +
                     (qwen2 ? "NFC with Qwen2's pre-tokenizer"
                            : "none or NFC") +
                     " is not supported");
  return std::make_pair(*split, nfc);
}

/// tokenizer.json of Hugging Face's fast tokenizers, model type BPE.
llvm::Error readTokenizerJson(llvm::StringRef path, RawBpe &raw) {
  llvm::Expected<std::shared_ptr<const llvm::json::Value>> shared =
      readSharedJsonFile(path);
  if (!shared)
    return shared.takeError();
  const llvm::json::Value *json = shared->get();
  const llvm::json::Object *model =
      json->getAsObject() ? json->getAsObject()->getObject("model") : nullptr;
  if (!model || model->getString("type") != std::optional<llvm::StringRef>("BPE"))
    return makeError(path + ": expected a \"model\" of type \"BPE\"");
  llvm::Expected<std::pair<TokenizerVocab::BpeSplit, bool>> split =
      tokenizerJsonSplit(*json, path);
  if (!split)
    return split.takeError();
  raw.split = split->first;
  raw.nfc = split->second;
  raw.ignoreMerges = model->getBoolean("ignore_merges").value_or(false);
  if (llvm::Error err = readVocabObject(model->getObject("vocab"), path, raw))
    return err;
  const llvm::json::Array *merges = model->getArray("merges");
  if (!merges)
    return makeError(path + ": missing array \"model.merges\"");
  for (const llvm::json::Value &merge : *merges) {
    // Either "a b" or ["a", "b"].
    if (std::optional<llvm::StringRef> text = merge.getAsString()) {
      auto [left, right] = text->split(' ');
      raw.merges.push_back({left.str(), right.str()});
    } else if (const llvm::json::Array *pair = merge.getAsArray();
               pair && pair->size() == 2 && (*pair)[0].getAsString() &&
               (*pair)[1].getAsString()) {
      raw.merges.push_back({(*pair)[0].getAsString()->str(),
                            (*pair)[1].getAsString()->str()});
    } else {
      return makeError(path + ": a merge must be \"a b\" or [\"a\", \"b\"]");
    }
  }
  // Added tokens (e.g. <|endoftext|>) are part of the vocabulary too.
  if (const llvm::json::Array *added =
          json->getAsObject()->getArray("added_tokens"))
    for (const llvm::json::Value &token : *added)
      if (const llvm::json::Object *t = token.getAsObject())
        if (auto content = t->getString("content"))
          if (auto id = t->getInteger("id")) {
            raw.vocab.push_back({content->str(), *id});
            raw.asWritten.resize(raw.vocab.size(), false);
            raw.asWritten.back() = true;
            raw.added.push_back({*id, addedTokenFlags(*t)});
          }
  return llvm::Error::success();
}

/// A slow tokenizer's vocab.json lacks the added tokens
/// tokenizer_config.json lists (Qwen2's <|endoftext|> and <|im_start|>,
/// past vocab.json's ids): they join the vocabulary as written, where
/// vocab.json has no token of their id.
llvm::Error addConfigAddedTokens(llvm::ArrayRef<ConfigAddedToken> added,
                                 llvm::StringRef path, RawBpe &raw) {
  std::set<int64_t> ids;
  for (const auto &entry : raw.vocab)
    ids.insert(entry.second);
  for (const ConfigAddedToken &token : added) {
    if (token.id < 0 || !token.content)
      return makeError(path + ": added token '" + token.key +
                       "' needs a non-negative id and a content");
    if (ids.count(token.id))
      continue;
    raw.vocab.push_back({*token.content, token.id});
    raw.asWritten.resize(raw.vocab.size(), false);
    raw.asWritten.back() = true;
  }
  return llvm::Error::success();
}

/// The added tokens of tokenizer_config.json's added_tokens_decoder
/// (<|endoftext|>, Whisper's task tokens, Qwen2's <tool_call>): matched
/// whole in text, with their lstrip/rstrip; the special ones skipped when
/// output is shown.
llvm::Error addSpecialTokens(llvm::ArrayRef<ConfigAddedToken> added,
                             llvm::StringRef path, TokenizerVocab &vocab) {
  for (const ConfigAddedToken &token : added) {
    if (!token.isObject || token.id < 0 ||
        token.id >= int64_t(vocab.pieces.size()))
      return makeError(path + ": added token '" + token.key +
                       "' is not an id of the vocabulary");
    if (llvm::is_contained(vocab.specialTokens, int32_t(token.id)))
      continue;
    vocab.specialTokens.push_back(int32_t(token.id));
    vocab.specialTokenStrips.push_back(token.flags);
  }
  return llvm::Error::success();
}

/// A directory's split and NFC normalization: its tokenizer.json's
/// pre-tokenizer and normalizer; without one, tokenizer_config.json's
/// tokenizer_class (Qwen2's slow tokenizer splits by its own pattern, after
/// NFC; CLIP's by its own), else GPT-2's.
llvm::Expected<std::pair<TokenizerVocab::BpeSplit, bool>>
directoryBpeSplit(llvm::StringRef directory) {
  llvm::SmallString<256> path(directory);
  llvm::sys::path::append(path, "tokenizer.json");
  if (llvm::sys::fs::exists(path)) {
    llvm::Expected<std::shared_ptr<const llvm::json::Value>> json =
        readSharedJsonFile(path);
    if (!json)
      return json.takeError();
    return tokenizerJsonSplit(**json, path);
  }
  path = directory;
  llvm::sys::path::append(path, "tokenizer_config.json");
  if (!llvm::sys::fs::exists(path))
    return std::make_pair(TokenizerVocab::BpeSplit::Gpt2, false);
  llvm::Expected<llvm::json::Value> json = readJsonFile(path);
  if (!json)
    return json.takeError();
  const llvm::json::Object *config = json->getAsObject();
  std::optional<llvm::StringRef> tokenizerClass =
      config ? config->getString("tokenizer_class") : std::nullopt;
  if (tokenizerClass && tokenizerClass->starts_with("CLIPTokenizer"))
    return std::make_pair(TokenizerVocab::BpeSplit::Clip, true);
  bool qwen2 = tokenizerClass && tokenizerClass->starts_with("Qwen2Tokenizer");
  return std::make_pair(qwen2 ? TokenizerVocab::BpeSplit::Qwen2
                              : TokenizerVocab::BpeSplit::Gpt2,
                        qwen2);
}

} // namespace

llvm::Expected<TokenizerVocab::BpeSplit>
mlir::tfm::bpeSplitOfPreTokenizer(const llvm::json::Value *preTokenizer,
                                  llvm::StringRef path) {
  using Split = TokenizerVocab::BpeSplit;
  if (!preTokenizer || preTokenizer->kind() == llvm::json::Value::Null)
    return Split::Gpt2;
  auto refuse = [&](const llvm::Twine &what) {
    return makeError(path + ": pre_tokenizer " + what +
                     " is not a split tfmc implements (GPT-2's ByteLevel, "
                     "a Split by Llama 3's, Qwen2's, Qwen3.5's or GPT-4o's "
                     "pattern before a ByteLevel that does not split, or "
                     "StarCoder's individual Digits before GPT-2's "
                     "ByteLevel)");
  };
  // ByteLevel: `splits` says whether it applies GPT-2's pattern itself.
  auto isByteLevel = [](const llvm::json::Object *o, bool splits) {
    return o && o->getString("type") == std::optional<llvm::StringRef>("ByteLevel") &&
           !o->getBoolean("add_prefix_space").value_or(false) &&
           o->getBoolean("use_regex").value_or(true) == splits;
  };
  const llvm::json::Object *object = preTokenizer->getAsObject();
  if (!object)
    return refuse("(not an object)");
  if (isByteLevel(object, true))
    return Split::Gpt2;
  std::optional<llvm::StringRef> type = object->getString("type");
  const llvm::json::Array *parts =
      type == std::optional<llvm::StringRef>("Sequence")
          ? object->getArray("pretokenizers")
          : nullptr;
  // StarCoder's: single digits apart, then GPT-2's split.
  if (parts && parts->size() == 2 &&
      isByteLevel((*parts)[1].getAsObject(), true)) {
    const llvm::json::Object *digits = (*parts)[0].getAsObject();
    if (digits &&
        digits->getString("type") == std::optional<llvm::StringRef>("Digits") &&
        digits->getBoolean("individual_digits").value_or(false))
      return Split::DigitsThenGpt2;
  }
  if (parts && parts->size() == 2 &&
      isByteLevel((*parts)[1].getAsObject(), false)) {
    const llvm::json::Object *split = (*parts)[0].getAsObject();
    const llvm::json::Object *pattern =
        split ? split->getObject("pattern") : nullptr;
    std::optional<llvm::StringRef> regex =
        pattern ? pattern->getString("Regex") : std::nullopt;
    if (split && regex &&
        split->getString("type") == std::optional<llvm::StringRef>("Split") &&
        split->getString("behavior").value_or("Isolated") == "Isolated" &&
        !split->getBoolean("invert").value_or(false)) {
      if (*regex == kLlama3Pattern)
        return Split::Llama3;
      if (*regex == kQwen2Pattern)
        return Split::Qwen2;
      if (*regex == kQwen35Pattern)
        return Split::Qwen35;
      if (*regex == kGpt4oPattern)
        return Split::Gpt4o;
      return refuse("Split by '" + *regex + "'");
    }
  }
  return refuse("'" + type.value_or("(no type)") + "'");
}

std::optional<GgufBpeSplit> mlir::tfm::bpeSplitOfGgufPre(llvm::StringRef pre) {
  // llama.cpp's names for its pre-tokenizer types (src/llama-vocab.cpp,
  // llama_vocab::impl::load: each type's expressions and whether it
  // ignores merges). "gpt-neox" is GPT-NeoX's tokenizer.json, a ByteLevel
  // pre-tokenizer with GPT-2's expression.
  using Split = TokenizerVocab::BpeSplit;
  return llvm::StringSwitch<std::optional<GgufBpeSplit>>(pre)
      .Cases({"gpt-2", "default", "phi-2", "olmo", "mpt", "gpt-neox"},
             GgufBpeSplit{Split::Gpt2, false})
      .Cases({"llama3", "llama-v3", "llama-bpe", "falcon3", "pixtral"},
             GgufBpeSplit{Split::Llama3, true})
      .Cases({"smaug-bpe", "glm4", "chatglm-bpe"},
             GgufBpeSplit{Split::Llama3, false})
      .Cases({"qwen2", "deepseek-r1-qwen", "stablelm2"},
             GgufBpeSplit{Split::Qwen2, false})
      .Case("qwen35", GgufBpeSplit{Split::Qwen35, false})
      .Case("deepseek-llm", GgufBpeSplit{Split::DeepseekLlm, false})
      .Case("deepseek-coder", GgufBpeSplit{Split::DeepseekCoder, false})
      .Case("deepseek-v3", GgufBpeSplit{Split::DeepseekV3, false})
      .Cases({"gpt-4o", "llama4"}, GgufBpeSplit{Split::Gpt4o, false})
      .Case("falcon", GgufBpeSplit{Split::Falcon, false})
      .Cases({"starcoder", "refact", "command-r"},
             GgufBpeSplit{Split::DigitsThenGpt2, false})
      .Default(std::nullopt);
}

llvm::Expected<TokenizerVocab> mlir::tfm::byteLevelBpeFromSpellings(
    llvm::StringRef source,
    llvm::ArrayRef<std::pair<std::string, int64_t>> spelledVocab,
    llvm::ArrayRef<std::pair<std::string, std::string>> merges,
    llvm::ArrayRef<bool> asWritten, BpeSpelling spelling) {
  TokenizerVocab vocab;
  vocab.kind = TokenizerVocab::Kind::ByteLevelBpe;
  int64_t size = 0;
  for (const auto &[spelling, id] : spelledVocab) {
    if (id < 0)
      return makeError(source + ": token '" + spelling + "' has id " +
                       llvm::Twine(id) + ", below 0");
    size = std::max(size, id + 1);
  }
  // N entries hold at most ids 0 to N-1 (added tokens may repeat an id), so
  // a larger id means a missing one: found before anything is sized by the
  // largest id (a crafted 2^40 would allocate terabytes).
  std::vector<bool> seen(std::min<size_t>(size, spelledVocab.size()), false);
  for (const auto &entry : spelledVocab)
    if (size_t(entry.second) < seen.size())
      seen[entry.second] = true;
  for (size_t id = 0; id < seen.size(); ++id)
    if (!seen[id])
      return makeError(source + ": no token has id " + llvm::Twine(id) +
                       " (ids must be 0 to " + llvm::Twine(size - 1) + ")");
  vocab.pieces.assign(size, "");
  vocab.scores.assign(size, 0.0f);
  auto table = unicodeToByte();
  llvm::StringMap<int32_t> idOf;
  for (auto [index, entry] : llvm::enumerate(spelledVocab)) {
    const auto &[written, id] = entry;
    if (index < asWritten.size() && asWritten[index]) {
      vocab.pieces[id] = written;
      continue;
    }
    std::optional<std::string> bytes =
        spelling == BpeSpelling::SentencePiece
            ? replaceSentencePieceSpaces(written)
            : decodeSpelling(written, table);
    if (!bytes)
      return makeError(source + ": token '" + written +
                       "' is not in GPT-2's byte-level spelling");
    vocab.pieces[id] = *bytes;
    idOf[written] = int32_t(id);
  }
  for (auto [rank, merge] : llvm::enumerate(merges)) {
    auto left = idOf.find(merge.first), right = idOf.find(merge.second),
         merged = idOf.find(merge.first + merge.second);
    if (left == idOf.end() || right == idOf.end() || merged == idOf.end())
      return makeError(source + ": merge " + llvm::Twine(rank + 1) + " ('" +
                       merge.first + "' '" + merge.second +
                       "') uses a token missing from the vocabulary");
    vocab.merges.push_back({left->second, right->second, merged->second});
  }
  return vocab;
}

bool mlir::tfm::hasByteLevelBpeFiles(llvm::StringRef directory) {
  auto exists = [&](llvm::StringRef name) {
    llvm::SmallString<256> path(directory);
    llvm::sys::path::append(path, name);
    return llvm::sys::fs::exists(path);
  };
  return (exists("vocab.json") && exists("merges.txt")) ||
         exists("tokenizer.json");
}

llvm::Expected<TokenizerVocab>
mlir::tfm::readByteLevelBpe(llvm::StringRef directory) {
  auto inDirectory = [&](llvm::StringRef name) {
    llvm::SmallString<256> path(directory);
    llvm::sys::path::append(path, name);
    return path.str().str();
  };
  std::string vocabPath = inDirectory("vocab.json"),
              mergesPath = inDirectory("merges.txt"),
              jsonPath = inDirectory("tokenizer.json");
  RawBpe raw;
  std::string source;
  // tokenizer_config.json's added tokens, read once: they extend a slow
  // tokenizer's vocabulary, and every tokenizer matches them whole.
  std::string configPath;
  std::vector<ConfigAddedToken> configAdded;
  auto readConfigAdded = [&]() -> llvm::Error {
    llvm::Expected<std::vector<ConfigAddedToken>> added =
        readConfigAddedTokens(directory, configPath);
    if (!added)
      return added.takeError();
    configAdded = std::move(*added);
    return llvm::Error::success();
  };
  if (llvm::sys::fs::exists(vocabPath) && llvm::sys::fs::exists(mergesPath)) {
    llvm::Expected<llvm::json::Value> vocab = readJsonFile(vocabPath);
    if (!vocab)
      return vocab.takeError();
    if (llvm::Error err = readVocabObject(vocab->getAsObject(), vocabPath, raw))
      return std::move(err);
    if (llvm::Error err = readMergesText(mergesPath, raw))
      return std::move(err);
    // A slow tokenizer's added tokens (Whisper's <|startoftranscript|>,
    // languages, tasks) extend the vocabulary.
    std::string addedPath = inDirectory("added_tokens.json");
    if (llvm::sys::fs::exists(addedPath)) {
      llvm::Expected<llvm::json::Value> added = readJsonFile(addedPath);
      if (!added)
        return added.takeError();
      if (llvm::Error err =
              readVocabObject(added->getAsObject(), addedPath, raw))
        return std::move(err);
    }
    if (llvm::Error err = readConfigAdded())
      return std::move(err);
    if (llvm::Error err = addConfigAddedTokens(configAdded, configPath, raw))
      return std::move(err);
    source = vocabPath;
  } else if (llvm::sys::fs::exists(jsonPath)) {
    if (llvm::Error err = readTokenizerJson(jsonPath, raw))
      return std::move(err);
    if (llvm::Error err = readConfigAdded())
      return std::move(err);
    source = jsonPath;
  } else {
    return TokenizerVocab{}; // no tokenizer files: ids only
  }

  llvm::Expected<TokenizerVocab> vocab = byteLevelBpeFromSpellings(
      source, raw.vocab, raw.merges, raw.asWritten,
      raw.split == TokenizerVocab::BpeSplit::Gemma4 ? BpeSpelling::SentencePiece
                                                    : BpeSpelling::ByteLevel);
  if (!vocab)
    return vocab.takeError();
  if (!raw.split) {
    llvm::Expected<std::pair<TokenizerVocab::BpeSplit, bool>> split =
        directoryBpeSplit(directory);
    if (!split)
      return split.takeError();
    raw.split = split->first;
    raw.nfc = split->second;
  }
  vocab->bpeSplit = *raw.split;
  vocab->ignoreMerges = raw.ignoreMerges;
  vocab->nfc = raw.nfc || vocab->bpeSplit == TokenizerVocab::BpeSplit::Qwen2;
  // tokenizer.json's added tokens are matched whole, as the fast tokenizer
  // matches them (GPT-2's <|endoftext|>, with no tokenizer_config.json
  // entry).
  for (auto [id, flags] : raw.added)
    if (!llvm::is_contained(vocab->specialTokens, int32_t(id))) {
      vocab->specialTokens.push_back(int32_t(id));
      vocab->specialTokenStrips.push_back(flags);
    }
  if (llvm::Error err = addSpecialTokens(configAdded, configPath, *vocab))
    return std::move(err);
  return vocab;
}
