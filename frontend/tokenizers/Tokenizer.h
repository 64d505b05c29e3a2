//===- Tokenizer.h - compile-time tokenizers --------------------*- C++ -*-===//
//
// Tokenizer vocabularies read at compile time into one form that codegen
// embeds in the compiled model and the runtime's tokenizer uses:
// score-based BPE (llama2.c tokenizer.bin, SentencePiece BPE models),
// SentencePiece Unigram models (XLM-R's sentencepiece.bpe.model, T5's
// spiece.model), GPT-2's byte-level BPE (vocab.json + merges.txt, or
// tokenizer.json) and BERT's WordPiece (vocab.txt, or tokenizer.json with a
// WordPiece model).
//
//===----------------------------------------------------------------------===//

#ifndef TFM_FRONTEND_TOKENIZERS_TOKENIZER_H
#define TFM_FRONTEND_TOKENIZERS_TOKENIZER_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/Error.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/MemoryBuffer.h"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir::tfm {

struct TokenizerVocab {
  enum class Kind {
    /// Merge the adjacent pair whose result scores highest (SentencePiece).
    ScoreBpe,
    /// Merge the adjacent pair of lowest merge rank (GPT-2, over bytes).
    ByteLevelBpe,
    /// BERT: normalize, split on spaces and punctuation, then the longest
    /// vocabulary prefix first, continuations spelled "##piece".
    WordPiece,
    /// SentencePiece Unigram: normalize, then the segmentation whose pieces'
    /// scores sum highest (Viterbi).
    Unigram,
  };
  /// How a text encoder frames its input: `begin` A `separator`, and for a
  /// pair `begin` A `separator` x pairSeparators B `separator` with B's
  /// token type `secondType` (BERT: [CLS] A [SEP] B [SEP], types 0 then 1;
  /// RoBERTa: <s> A </s></s> B </s>, all type 0). A separator alone ends
  /// the text (Marian and T5: A </s>). Neither: no framing
  /// (decoders, which add a BOS instead).
  struct Framing {
    int32_t begin = -1, separator = -1;
    uint32_t pairSeparators = 1, secondType = 1;
  };
  /// WordPiece's normalization and word splitting (tokenizer_config.json's
  /// do_lower_case, strip_accents, tokenize_chinese_chars).
  struct WordPieceOptions {
    bool lowercase = true, stripAccents = true, splitCjk = true;
    int32_t unknown = -1;
    uint32_t maxCharsPerWord = 100;
    std::string continuationPrefix = "##";
  };
  /// ScoreBpe from a SentencePiece model: its normalizer's
  /// remove_extra_whitespaces (llama2.c's files do not say: off).
  bool removeExtraWhitespaces = false;
  /// A Unigram model's normalizer and lattice (SentencePiece's
  /// NormalizerSpec and piece types).
  struct UnigramOptions {
    /// SentencePiece piece types the lattice tells apart.
    enum class Piece : uint8_t {
      /// Not matched in text: control, unknown, byte and unused pieces.
      Reserved,
      Normal,
      /// Matched before normalization, and always preferred.
      UserDefined,
    };
    bool addDummyPrefix = true, removeExtraWhitespaces = true,
         escapeWhitespaces = true, byteFallback = false;
    /// SiglipTokenizer's Python around SentencePiece (tfm_format.h's
    /// TFM_UNIGRAM_LOWERCASE and TFM_UNIGRAM_SIGLIP_TEXT): the text
    /// lowercased (do_lower_case); U+2581 put before it and each text
    /// between special tokens canonicalized (canonicalize_text).
    bool lowercase = false, siglipText = false;
    int32_t unknown = -1;
    std::vector<Piece> pieceTypes;
    /// The precompiled character map (nmt_nfkc, ...) as SentencePiece
    /// stores it (runtime/tokenizer/chars_map.h: a trie of keys and their
    /// replacements; the longest key matching the text is replaced), checked;
    /// empty: none.
    std::string charsMap;
  };
  Kind kind = Kind::ScoreBpe;
  /// Token pieces as bytes; SentencePiece's "▁" is already a space, byte
  /// pieces keep their "<0xAB>" spelling; GPT-2's byte-to-unicode spelling is
  /// undone.
  std::vector<std::string> pieces;
  /// The id of the token spelled `piece` (the first), or none.
  std::optional<int64_t> idOf(llvm::StringRef piece) const {
    for (size_t id = 0; id < pieces.size(); ++id)
      if (pieces[id] == piece)
        return int64_t(id);
    return std::nullopt;
  }
  std::vector<float> scores;
  /// ByteLevelBpe: (left id, right id, merged id) in rank order.
  std::vector<std::array<int32_t, 3>> merges;
  /// ByteLevelBpe: the pre-tokenizer's pattern that splits text into the
  /// pieces merges work inside (runtime/include/tfm/tfm_format.h, TFM_BPE_SPLIT_*).
  enum class BpeSplit : uint8_t {
    Gpt2,
    Llama3,
    Qwen2,
    /// llama.cpp's staged splits (runtime/tokenizer/tokenizer_bpe_split.c).
    DeepseekLlm,
    DeepseekCoder,
    Falcon,
    /// StarCoder's, Refact's and Command R's: single digits, then GPT-2's.
    DigitsThenGpt2,
    /// CLIP's: lowercased, whitespace dropped, words ending in "</w>"
    /// tokens (tfm_format.h's TFM_BPE_SPLIT_CLIP).
    Clip,
    /// Qwen3.5's: Qwen2's with combining marks kept in letter runs.
    Qwen35,
    /// DeepSeek-V3's staged split (llama.cpp's "deepseek-v3").
    DeepseekV3,
    /// GPT-4o's (tiktoken's o200k: gpt-oss's, Llama 4's): words split at
    /// case.
    Gpt4o,
    /// Gemma 4's SentencePiece-style BPE: lines merged from characters,
    /// with "<0xAB>" byte fallback (tfm_format.h's TFM_BPE_SPLIT_GEMMA4).
    Gemma4,
  };
  BpeSplit bpeSplit = BpeSplit::Gpt2;
  /// ByteLevelBpe: a piece the pre-tokenizer splits off that is a token of
  /// its own is that token, merges or not (tokenizer.json's
  /// `model.ignore_merges`, Llama 3's; llama.cpp's Llama 3 pre-tokenizers).
  bool ignoreMerges = false;
  /// ByteLevelBpe: text is composed to NFC before splitting (tokenizer.json's
  /// NFC normalizer: Qwen2's, GPT-NeoX's, OLMo's).
  bool nfc = false;
  Framing framing;
  /// Tokens matched whole in the text before splitting ([MASK], <mask>):
  /// their piece is their spelling.
  std::vector<int32_t> specialTokens;
  /// Per special token: bit 0 strips the spaces before it, bit 1 those
  /// after it (Hugging Face's lstrip/rstrip; RoBERTa's <mask> has lstrip);
  /// bit 2 (kAddedText) marks an added token that is not special: matched
  /// whole, but shown when decoding (GPT-NeoX's runs of spaces).
  std::vector<uint8_t> specialTokenStrips;
  static constexpr uint8_t kAddedText = 4;
  WordPieceOptions wordPiece;
  UnigramOptions unigram;
  /// Text a prompt's text has replaced before it is tokenized, in order
  /// (a vision-language processor's expansion of its image placeholder:
  /// Gemma 3's "<start_of_image>").
  std::vector<std::pair<std::string, std::string>> promptReplacements;
};

/// The whole of a tokenizer file, or an error naming it.
llvm::Expected<std::unique_ptr<llvm::MemoryBuffer>>
readTokenizerFile(llvm::StringRef path);

/// llama2.c's tokenizer.bin, which holds `vocabSize` tokens.
llvm::Expected<TokenizerVocab> readLlama2cTokenizer(llvm::StringRef path,
                                                    int64_t vocabSize);

/// SentencePiece's tokenizer.model (a serialized ModelProto): score BPE for
/// BPE models, Unigram (with its normalizer) for Unigram models.
llvm::Expected<TokenizerVocab> readSentencePieceModel(llvm::StringRef path);

/// fairseq's dictionary over a SentencePiece model (XLM-R, mBART):
/// sentencepiece.bpe.model in `directory`, with ids <s> 0, <pad> 1, </s> 2,
/// <unk> 3, then the model's pieces from its fourth one shifted up by one,
/// then <mask>.
llvm::Expected<TokenizerVocab>
readFairseqSentencePiece(llvm::StringRef directory);

/// Whether `directory` holds fairseq's sentencepiece.bpe.model.
bool hasFairseqSentencePieceFiles(llvm::StringRef directory);

/// A SentencePiece piece with its "▁" (U+2581) spelled as a space.
std::string replaceSentencePieceSpaces(llvm::StringRef piece);

/// T5's tokenizer (T5Tokenizer) from a model directory's spiece.model: the
/// model's pieces and ids, then the sentinels <extra_id_N>
/// (tokenizer_config.json's extra_ids, 100 by default) from the highest id
/// down, matched whole in text and stripping the spaces around them;
/// reserved empty pieces up to `vocabSize`; every text ends with </s>.
llvm::Expected<TokenizerVocab> readT5SentencePiece(llvm::StringRef directory,
                                                   int64_t vocabSize);
bool hasT5SentencePieceFiles(llvm::StringRef directory);

/// The pad token of the tokenizer in `folder` (special_tokens_map.json's
/// pad_token, else tokenizer_config.json's), or `fallback` without one
/// (the tokenizer class's default: CLIPTokenizer's <|endoftext|>,
/// SiglipTokenizer's </s>). Stable Diffusion pads prompts with it, SigLIP
/// its texts.
llvm::Expected<int32_t> readPadToken(llvm::StringRef folder,
                                     const TokenizerVocab &vocab,
                                     llvm::StringRef fallback);

/// SigLIP's tokenizer (SiglipTokenizer) from a model directory's
/// spiece.model: its pieces and ids (reserved empty ones up to `vocabSize`
/// where the embedding is larger), SentencePiece's dummy prefix off and
/// SiglipTokenizer's own text handling on (UnigramOptions::siglipText,
/// lowercase unless tokenizer_config.json's do_lower_case is false);
/// </s> and <unk> matched whole, stripping the spaces around them; every
/// text ends with </s>.
llvm::Expected<TokenizerVocab>
readSiglipSentencePiece(llvm::StringRef directory, int64_t vocabSize);

/// Marian's tokenizer (MarianTokenizer) from a model directory: the source
/// side's segmentation (source.spm) with each piece's id from vocab.json,
/// whose pieces are the vocabulary (decoding the target side); </s>,
/// <unk>, <pad> and language codes (">>fra<<") matched whole; every text
/// ends with </s>. A source piece vocab.json lacks cannot be chosen.
llvm::Expected<TokenizerVocab>
readMarianSentencePiece(llvm::StringRef directory);
bool hasMarianSentencePieceFiles(llvm::StringRef directory);

/// GPT-2's byte-level BPE from a model directory: vocab.json + merges.txt,
/// or tokenizer.json. Returns a vocabulary without pieces when the directory
/// has neither.
llvm::Expected<TokenizerVocab> readByteLevelBpe(llvm::StringRef directory);

/// GPT-2's byte-level BPE from its vocabulary as spelled in its files
/// ((spelling, id); ids 0 to N - 1 each once) and its merges in rank order
/// (the two spellings merged); `source` names the file in messages.
/// `asWritten[i]` marks entries stored as their text rather than in GPT-2's
/// byte-level spelling: added tokens (tokenizer.json's added_tokens, a GGUF
/// file's control and user-defined tokens, such as MPT's runs of spaces);
/// empty: none.
/// How a BPE vocabulary spells its tokens' bytes: GPT-2's byte-to-unicode
/// characters, or SentencePiece's UTF-8 with "▁" for a space (Gemma 4's).
enum class BpeSpelling { ByteLevel, SentencePiece };
llvm::Expected<TokenizerVocab> byteLevelBpeFromSpellings(
    llvm::StringRef source,
    llvm::ArrayRef<std::pair<std::string, int64_t>> spelledVocab,
    llvm::ArrayRef<std::pair<std::string, std::string>> merges,
    llvm::ArrayRef<bool> asWritten = {},
    BpeSpelling spelling = BpeSpelling::ByteLevel);

/// BERT's WordPiece from a model directory: vocab.txt (with
/// tokenizer_config.json's options and special tokens), or tokenizer.json
/// with a "WordPiece" model.
llvm::Expected<TokenizerVocab> readWordPiece(llvm::StringRef directory);

/// Whether `directory` holds WordPiece files (vocab.txt, or tokenizer.json
/// whose model is WordPiece).
bool hasWordPieceFiles(llvm::StringRef directory);

/// Frames an encoder's text: [CLS]/[SEP] (WordPiece) or <s>/</s>
/// (byte-level BPE, RoBERTa's pair spelling), found by their spelling in
/// tokenizer_config.json (cls_token, sep_token, mask_token) or the family's
/// defaults; mask and unknown tokens become special tokens.
llvm::Error frameForEncoder(TokenizerVocab &vocab, llvm::StringRef directory);

/// The split of a tokenizer.json's "pre_tokenizer" (`path` names it in
/// messages): GPT-2's ByteLevel (or none given), or a Split by Llama 3's or
/// Qwen2's pattern before a ByteLevel that does not split; any other is
/// refused rather than split otherwise than the model was trained on.
llvm::Expected<TokenizerVocab::BpeSplit>
bpeSplitOfPreTokenizer(const llvm::json::Value *preTokenizer,
                       llvm::StringRef path);

/// What a GGUF file's tokenizer.ggml.pre names (llama.cpp's names:
/// "gpt-2", "llama-bpe", "qwen2", "deepseek-llm", ...): the split, and
/// whether llama.cpp ignores merges for it.
struct GgufBpeSplit {
  TokenizerVocab::BpeSplit split;
  bool ignoreMerges;
};
/// None for a name tfmc does not know.
std::optional<GgufBpeSplit> bpeSplitOfGgufPre(llvm::StringRef pre);

/// Whether `directory` holds byte-level BPE files (vocab.json + merges.txt,
/// or tokenizer.json), which readByteLevelBpe reads.
bool hasByteLevelBpeFiles(llvm::StringRef directory);

class GgufFile;

/// The tokenizer `file` embeds; nothing when it has none
/// (GgufTokenizer.cpp).
llvm::Expected<std::optional<TokenizerVocab>>
readGgufTokenizer(const GgufFile &file);

/// The tokenizer of the GGUF file at `path` (--tokenizer model.gguf).
llvm::Expected<TokenizerVocab> readGgufTokenizerFile(llvm::StringRef path);

/// Reads the tokenizer at `path` (what ModelAttr's `tokenizer` names): a
/// SentencePiece .model, a llama2.c tokenizer .bin, a GGUF file's embedded
/// tokenizer, or a byte-level BPE directory or tokenizer.json; checked to
/// have no more than `vocabSize` tokens (TokenizerFiles.cpp).
llvm::Expected<TokenizerVocab> readTokenizerAt(llvm::StringRef path,
                                               int64_t vocabSize);

/// `tokenizer` in the runtime's blob format, which a compiled model embeds
/// (TokenizerBlob.cpp).
std::string serializeTokenizer(const TokenizerVocab &tokenizer);

} // namespace mlir::tfm

#endif // TFM_FRONTEND_TOKENIZERS_TOKENIZER_H
