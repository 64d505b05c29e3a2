/*===- tfm_format.h - formats shared by codegen and the runtime -*- C -*-===//
 *
 * The byte formats that tfmc writes at compile time and the runtime reads:
 * the weight checksum and the tokenizer blob. Plain C with static inline
 * functions so that the C++ compiler and the C runtime share one definition.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_TFM_FORMAT_H
#define TFM_RUNTIME_TFM_FORMAT_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Checksum of the weight blob: FNV-1a over 64-bit little-endian words (the
 * tail zero-padded), fast enough to verify hundreds of MB at load time. */
static inline uint64_t tfm_weights_checksum(const uint8_t *data, uint64_t size) {
  uint64_t hash = 14695981039346656037ull;
  uint64_t i = 0;
  for (; i + 8 <= size; i += 8) {
    uint64_t word;
    memcpy(&word, data + i, 8);
    hash = (hash ^ word) * 1099511628211ull;
  }
  if (i < size) {
    uint64_t word = 0;
    memcpy(&word, data + i, (size_t)(size - i));
    hash = (hash ^ word) * 1099511628211ull;
  }
  return hash ^ size;
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
 * normalizer's precompiled character map (runtime/chars_map.h; 0: none);
 * score BPE: uint32 flags (TFM_SCORE_BPE_*), which blobs
 * written before it existed lack (read as 0).
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
enum { TFM_TOKENIZER_STRIP_LEFT = 1, TFM_TOKENIZER_STRIP_RIGHT = 2 };

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
  TFM_UNIGRAM_BYTE_FALLBACK = 8
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

#endif /* TFM_RUNTIME_TFM_FORMAT_H */
