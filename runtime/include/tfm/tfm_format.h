/*===- tfm_format.h - formats shared by codegen and the runtime -*- C -*-===//
 *
 * The byte formats that tfmc writes at compile time and the runtime reads:
 * the weight checksum and the tokenizer blob. Plain C with static inline
 * functions so that the C++ compiler and the C runtime share one definition.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_FORMAT_H
#define TFM_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Checksum of the weight blob: FNV-1a over 64-bit little-endian words (the
 * tail zero-padded), word i into lane i % 4, the four lanes then folded
 * by FNV-1a and the size xored in. One lane's multiplications are a
 * chain (6 GB/s on a Zen 2: 0.7 s of loading a 4.4 GB model); four
 * independent ones run at memory speed. Computed as the blob is written
 * (tfmc: tfm_checksum_update a piece at a time) or over all of it (the
 * loader: tfm_weights_checksum), with the same result. */
enum { TFM_CHECKSUM_LANES = 4 };
#define TFM_FNV_OFFSET 14695981039346656037ull
#define TFM_FNV_PRIME 1099511628211ull
typedef struct {
  uint64_t lane[TFM_CHECKSUM_LANES];
  uint64_t size;    /* bytes seen */
  uint64_t partial; /* the bytes of an unfinished word, little endian */
} tfm_checksum;

static inline void tfm_checksum_init(tfm_checksum *c) {
  for (int i = 0; i < TFM_CHECKSUM_LANES; ++i)
    c->lane[i] = TFM_FNV_OFFSET;
  c->size = 0;
  c->partial = 0;
}

/* Folds the word that ends at byte c->size (a multiple of 8). */
static inline void tfm_checksum_word(tfm_checksum *c, uint64_t word) {
  uint64_t *lane = &c->lane[(c->size / 8 - 1) % TFM_CHECKSUM_LANES];
  *lane = (*lane ^ word) * TFM_FNV_PRIME;
}

static inline void tfm_checksum_update(tfm_checksum *c, const uint8_t *data,
                                       uint64_t size) {
  while (size > 0) {
    if (c->size % 8 != 0 || size < 8) { /* a byte of an unfinished word */
      c->partial |= (uint64_t)*data << (8 * (c->size % 8));
      ++data, --size, ++c->size;
      if (c->size % 8 == 0) {
        tfm_checksum_word(c, c->partial);
        c->partial = 0;
      }
      continue;
    }
    if (c->size / 8 % TFM_CHECKSUM_LANES != 0 || size < 32) { /* a word */
      uint64_t word;
      memcpy(&word, data, 8);
      data += 8, size -= 8, c->size += 8;
      tfm_checksum_word(c, word);
      continue;
    }
    /* Runs of four words from lane 0 on, a word per lane. */
    uint64_t l0 = c->lane[0], l1 = c->lane[1], l2 = c->lane[2], l3 = c->lane[3];
    for (; size >= 32; data += 32, size -= 32, c->size += 32) {
      uint64_t w[4];
      memcpy(w, data, 32);
      l0 = (l0 ^ w[0]) * TFM_FNV_PRIME;
      l1 = (l1 ^ w[1]) * TFM_FNV_PRIME;
      l2 = (l2 ^ w[2]) * TFM_FNV_PRIME;
      l3 = (l3 ^ w[3]) * TFM_FNV_PRIME;
    }
    c->lane[0] = l0, c->lane[1] = l1, c->lane[2] = l2, c->lane[3] = l3;
  }
}

static inline uint64_t tfm_checksum_final(const tfm_checksum *c) {
  tfm_checksum last = *c;
  if (last.size % 8 != 0) { /* the tail, zero-padded */
    last.size += 8 - last.size % 8;
    tfm_checksum_word(&last, last.partial);
  }
  uint64_t hash = TFM_FNV_OFFSET;
  for (int i = 0; i < TFM_CHECKSUM_LANES; ++i)
    hash = (hash ^ last.lane[i]) * TFM_FNV_PRIME;
  return hash ^ c->size;
}

static inline uint64_t tfm_weights_checksum(const uint8_t *data, uint64_t size) {
  tfm_checksum c;
  tfm_checksum_init(&c);
  tfm_checksum_update(&c, data, size);
  return tfm_checksum_final(&c);
}

/* Weights appended to a linked executable or shared library (assemblers
 * and linkers hold a section's bytes in memory, so a multi-GB .incbin
 * would cost the compile that much): the blob starts at a file offset
 * aligned to TFM_APPENDED_ALIGNMENT after the linked image, and the file
 * ends with this trailer (little endian), which the loader checks against
 * the model's description. Loaders ignore bytes past the last segment;
 * `strip` drops them, and the model is then refused at load. */
#define TFM_APPENDED_MAGIC "TFMWTS01"
#define TFM_APPENDED_ALIGNMENT (2u << 20)
typedef struct {
  char magic[8];
  uint64_t offset; /* of the blob, from the start of the file */
  uint64_t size;
  uint64_t checksum; /* tfm_weights_checksum of the blob */
} tfm_appended_trailer;

/* Tokenizer blob (little endian): "TFMTOK02", uint32 kind, uint32
 * vocab_size; the encoder framing: int32 begin, int32 separator (-1: none;
 * a separator without a begin token ends the text: Marian's, T5's </s>),
 * uint32 pair separators, uint32 the second segment's token type; uint32
 * special token count and per special token int32 id, uint32 strip flags
 * (TFM_TOKENIZER_STRIP_*); then per token: float32 score, uint32 byte
 * length, the piece's bytes. Then by kind: byte-level BPE: uint32 merge
 * count and per merge (in rank order) uint32 left id, right id, merged id;
 * WordPiece: uint32 flags (TFM_WORDPIECE_*), int32 unknown id, uint32 max
 * characters per word, uint32 length and bytes of the continuation prefix;
 * Unigram: uint32 flags (TFM_UNIGRAM_*), int32 unknown id, one uint8 piece
 * type per token (TFM_UNIGRAM_PIECE_*), uint32 length and bytes of the
 * normalizer's precompiled character map (runtime/tokenizer/chars_map.h; 0:
 * none); score BPE: uint32 flags (TFM_SCORE_BPE_*), which blobs written before
 * it existed lack (read as 0). Then, in blobs that have them, a prompt's text
 * replacements: uint32 count and per replacement uint32 length and bytes of the
 * text, uint32 length and bytes of what replaces it, applied left to right
 * before anything else (a vision-language processor's placeholder expansion:
 * Gemma 3's "<start_of_image>" becomes "\n\n<start_of_image>", 256 image
 * tokens, "<end_of_image>\n\n", so that the text around it tokenizes as the
 * processor's does).
 * Pieces are raw bytes: ' ' for SentencePiece's U+2581, "<0xAB>" for
 * byte-fallback tokens, GPT-2's byte-to-unicode spelling undone. */
#define TFM_TOKENIZER_MAGIC "TFMTOK03"
#define TFM_TOKENIZER_MAGIC_SIZE 8

typedef enum {
  /* llama2.c / SentencePiece: merge the pair whose result scores highest. */
  TFM_TOKENIZER_SCORE_BPE = 0,
  /* GPT-2: merge the pair of lowest rank, over the bytes of each pre-token. */
  TFM_TOKENIZER_BYTE_LEVEL_BPE = 1,
  /* BERT: normalize, split words, longest vocabulary prefix first. */
  TFM_TOKENIZER_WORDPIECE = 2,
  /* SentencePiece Unigram: normalize, then the segmentation of highest
   * total score (Viterbi). */
  TFM_TOKENIZER_UNIGRAM = 3
} tfm_tokenizer_kind;

/* A special token's strip flags: drop the whitespace before / after it. */
enum {
  TFM_TOKENIZER_STRIP_LEFT = 1,
  TFM_TOKENIZER_STRIP_RIGHT = 2,
  /* An added token that is text, not special (GPT-NeoX's runs of spaces):
   * matched whole like the others, but shown when decoding. */
  TFM_TOKENIZER_ADDED_TEXT = 4
};

/* WordPiece normalization switches. */
enum {
  TFM_WORDPIECE_LOWERCASE = 1,
  TFM_WORDPIECE_STRIP_ACCENTS = 2,
  TFM_WORDPIECE_SPLIT_CJK = 4
};

/* Unigram normalizer switches (SentencePiece's NormalizerSpec) and byte
 * fallback (unknown characters as "<0xAB>" tokens instead of unknown). */
enum {
  /* SentencePiece's remove_extra_whitespaces: leading and trailing spaces
   * dropped, runs of spaces made one, before the dummy prefix. */
  TFM_SCORE_BPE_REMOVE_EXTRA_WHITESPACES = 1,
  TFM_UNIGRAM_ADD_DUMMY_PREFIX = 1,
  TFM_UNIGRAM_REMOVE_EXTRA_WHITESPACES = 2,
  TFM_UNIGRAM_ESCAPE_WHITESPACES = 4,
  TFM_UNIGRAM_BYTE_FALLBACK = 8,
  /* The text lowercased first (a slow tokenizer's do_lower_case; utf8proc's
   * simple mapping), special tokens included. */
  TFM_UNIGRAM_LOWERCASE = 16,
  /* SiglipTokenizer's text: U+2581 in the text made a space and one put
   * before it (which the disabled dummy prefix would have been); each text
   * between special tokens canonicalized (canonicalize_text: ASCII
   * punctuation removed, whitespace runs one space, stripped) before the
   * normalizer. */
  TFM_UNIGRAM_SIGLIP_TEXT = 32
};

/* Byte-level BPE's split of text into pieces before merging, after the
 * merges in the blob (a blob without it splits as GPT-2): the regular
 * expression of the model's pre-tokenizer, as tokenizer_byte_level_bpe.c
 * spells them out. */
enum {
  /* GPT-2's: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|...
   * (GPT-2, RoBERTa, BART, Whisper, Phi-2, OLMo). */
  TFM_BPE_SPLIT_GPT2 = 0,
  /* Llama 3's (tiktoken's cl100k): (?i:'s|...)|[^\r\n\p{L}\p{N}]?\p{L}+|
   * \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
  TFM_BPE_SPLIT_LLAMA3 = 1,
  /* Qwen2's: Llama 3's with one digit a piece (\p{N}). */
  TFM_BPE_SPLIT_QWEN2 = 2,
  /* llama.cpp's staged splits (tokenizer_bpe_split.c spells them out). */
  TFM_BPE_SPLIT_DEEPSEEK_LLM = 3,
  TFM_BPE_SPLIT_DEEPSEEK_CODER = 4,
  TFM_BPE_SPLIT_FALCON = 5,
  /* StarCoder's, Refact's, Command R's: single digits, then GPT-2's. */
  TFM_BPE_SPLIT_DIGITS_THEN_GPT2 = 6,
  /* CLIP's: text normalized (NFC, whitespace runs one space, lowercase),
   * split by 's|'t|'re|'ve|'m|'ll|'d|\p{L}+|\p{N}|[^\s\p{L}\p{N}]+ with
   * whitespace dropped; a piece's last byte starts as its token with
   * "</w>" appended (the end of a word), which decoding shows as a space. */
  TFM_BPE_SPLIT_CLIP = 7,
  /* Qwen3.5's: Qwen2's with combining marks (\p{M}) kept in letter runs,
   * [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+, and out of the other-character
   * runs, ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*; unlike Qwen2's, no NFC
   * implied (its tokenizer.json has no normalizer: a decomposed "é"
   * stays two tokens, as llama.cpp's test vectors have it). */
  TFM_BPE_SPLIT_QWEN35 = 8,
  /* Gemma 4's SentencePiece-style BPE (llama.cpp's "gemma4"): pieces are
   * lines, [^\n]+|\n+ (a run of newlines that is a token is that token);
   * merges start from the characters of the text, not its bytes, and a
   * character without a token of its own falls back to its bytes'
   * "<0xAB>" tokens; U+2581 in the text is a space, as the normalizer that
   * spells spaces U+2581 leaves it. */
  TFM_BPE_SPLIT_GEMMA4 = 9,
  /* DeepSeek-V3's (llama.cpp's "deepseek-v3"; Kimi's and GLM's differ),
   * staged: digits in threes, CJK and kana runs, then words with marks
   * (tokenizer_bpe_split.c spells it out). */
  TFM_BPE_SPLIT_DEEPSEEK_V3 = 10,
  /* GPT-4o's (tiktoken's o200k; gpt-oss's, llama.cpp's "gpt-4o"): words
   * split where lowercase turns to uppercase, with their contraction,
   * \p{N}{1,3}, other characters and a trailing "/" or newlines, then
   * whitespace as Llama 3's (tokenizer_bpe_split.c spells it out). */
  TFM_BPE_SPLIT_GPT4O = 11,
  TFM_BPE_SPLIT_LAST = TFM_BPE_SPLIT_GPT4O,
  /* Or'ed into the split: a piece that is a token of its own is that token,
   * merges or not (tokenizer.json's ignore_merges). */
  TFM_BPE_IGNORE_MERGES = 1u << 16,
  /* Or'ed into the split: text is composed to NFC first (tokenizer.json's
   * NFC normalizer: GPT-NeoX's, OLMo's; Qwen2's split implies it). */
  TFM_BPE_NFC = 1u << 17
};

/* Unigram piece types: reserved pieces (control, unknown, byte, unused) are
 * never matched in text; user-defined ones are matched before
 * normalization and always preferred. */
enum {
  TFM_UNIGRAM_PIECE_RESERVED = 0,
  TFM_UNIGRAM_PIECE_NORMAL = 1,
  TFM_UNIGRAM_PIECE_USER_DEFINED = 2
};

#ifdef __cplusplus
}
#endif

#endif /* TFM_FORMAT_H */
