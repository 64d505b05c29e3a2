/*===- tokenizer_internal.h - the tokenizer's state (runtime-internal) ----===//
 *
 * Shared by tokenizer.c (parsing, dispatch, decoding) and the encoders:
 * tokenizer_score_bpe.c, tokenizer_byte_level_bpe.c, tokenizer_wordpiece.c,
 * tokenizer_unigram.c.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_TOKENIZER_TOKENIZER_INTERNAL_H
#define TFM_RUNTIME_TOKENIZER_TOKENIZER_INTERNAL_H

#include "runtime/core/status.h"
#include "runtime/tokenizer/chars_map.h"
#include "runtime/tokenizer/special_tokens.h"
#include "tfm/tfm_format.h"

typedef struct {
  const char *piece;
  uint32_t length;
  int32_t id;
} tfm_sorted_piece;

typedef struct {
  uint64_t pair; /* left << 32 | right */
  uint32_t rank;
  int32_t merged;
} tfm_merge;

struct tfm_tokenizer {
  tfm_tokenizer_kind kind;
  /* tokenizer_derived.h's object (the grammars' vocabulary trie); read and
   * set with atomic builtins. */
  struct tfm_tokenizer_derived *derived;
  uint32_t vocab_size;
  char **pieces; /* NUL-terminated copies */
  uint32_t *lengths;
  float *scores;
  tfm_sorted_piece *sorted; /* by bytes, for lookups */
  uint32_t max_length;
  /* Score BPE, Unigram and Gemma 4's BPE: the id of "<0xAB>"; GPT-2's
   * byte-level BPE: the id of the byte's one-byte piece. -1 where there is
   * none. */
  int32_t byte_tokens[256];
  /* CLIP's split: the byte's token with "</w>" appended, which a word's
   * last byte starts as (-1: none); the pieces as decoded, "</w>" shown as
   * a space (NULL for other tokenizers). */
  int32_t word_end_tokens[256];
  char **shown;
  uint32_t *shown_lengths;
  tfm_merge *merges; /* byte-level BPE, sorted by pair */
  uint32_t merge_count;
  uint32_t bpe_split; /* byte-level BPE: TFM_BPE_SPLIT_* */
  int bpe_ignore_merges; /* a piece that is a token is that token */
  int bpe_nfc;           /* text is composed to NFC first */
  /* An encoder's framing (tfm_format.h); frame_begin < 0: none. */
  int32_t frame_begin, frame_separator;
  uint32_t pair_separators, second_type;
  /* Special tokens matched whole in text, with TFM_TOKENIZER_STRIP_* flags. */
  uint32_t special_count;
  uint32_t special_sorted_count; /* those without TFM_TOKENIZER_ADDED_TEXT */
  int32_t *special_ids;
  uint32_t *special_strips;
  int32_t *special_ids_sorted; /* ascending, added text left out:
                                  tfm_tokenizer_is_special's
                                  binary search (a decoder asks per token) */
  tfm_special_trie special_trie; /* their spellings, for encoding's scan */
  /* WordPiece: TFM_WORDPIECE_* flags, the unknown token, the longest word
   * (in characters) split into pieces, the continuation prefix ("##"). */
  uint32_t wordpiece_flags;
  int32_t unknown;
  uint32_t max_chars_per_word;
  char *continuation;
  uint32_t continuation_length;
  /* Unigram (the unknown token is `unknown`): TFM_UNIGRAM_* flags, per
   * token a TFM_UNIGRAM_PIECE_* type, the normalizer's character map (read
   * in place from its copy of the blob), the lowest and highest score of a
   * normal piece, and how many normalized bytes one input byte can become
   * (at least 1). */
  uint32_t unigram_flags;
  uint32_t score_bpe_flags;
  uint8_t *piece_types;
  int has_user_defined;
  char *chars_map_blob;
  tfm_chars_map chars_map;
  float min_score, max_score;
  uint32_t max_expansion;
  /* A prompt's text replacements (tfm_format.h), applied before
   * tokenizing: replaced[i] becomes replacements[i]; 0: none. */
  uint32_t replacement_count;
  char **replaced, **replacements;
};

/* The id of the piece with these bytes, or -1. */
int32_t tfm_tokenizer_lookup(const tfm_tokenizer *t, const char *bytes,
                             uint32_t length);

/* Narrows sorted[*lo, *hi), entries that share their first `depth` bytes
 * and are at least that long, to those whose byte at `depth` is `byte`.
 * Returns the index of the entry exactly depth + 1 bytes long, or -1. Walking
 * depth 0, 1, ... over a text finds every entry that is a prefix of it,
 * shortest first, in O(log n) per byte. */
int64_t tfm_sorted_narrow(const tfm_sorted_piece *sorted, size_t *lo,
                          size_t *hi, uint32_t depth, unsigned char byte);

/* Encoders: write the ids of `text` (without BOS) to `out`, which has room
 * for one id per byte plus one, and set *count. */
tfm_status_code tfm_score_bpe_encode(const tfm_tokenizer *t, const char *text,
                                     size_t length, int32_t *out,
                                     int64_t *count, tfm_status *status);
/* WordPiece writes at most `capacity` ids (fails beyond). */
tfm_status_code tfm_wordpiece_encode(const tfm_tokenizer *t, const char *text,
                                     size_t length, int32_t *out,
                                     int64_t capacity, int64_t *count,
                                     tfm_status *status);
/* Unigram writes at most `capacity` ids (fails beyond). */
tfm_status_code tfm_unigram_encode(const tfm_tokenizer *t, const char *text,
                                   size_t length, int32_t *out,
                                   int64_t capacity, int64_t *count,
                                   tfm_status *status);
tfm_status_code tfm_byte_level_bpe_encode(const tfm_tokenizer *t,
                                          const char *text, size_t length,
                                          int32_t *out, int64_t *count,
                                          tfm_status *status);

/* Whether `cp` is Unicode's White_Space (regular expressions' \s), which
 * the byte-level splits and CLIP's normalizer treat alike
 * (tokenizer_bpe_split.c). */
int tfm_is_white_space(int32_t cp);

/* Whether code point `c` is whitespace as Python's str.isspace() (and a
 * str pattern's \s) sees it, which transformers' lstrip/rstrip of special
 * tokens and SiglipTokenizer's canonicalize_text use. */
int tfm_is_python_space(uint32_t c);

/* Whether a Unigram tokenizer changes its whole text before its special
 * tokens are found (TFM_UNIGRAM_LOWERCASE, TFM_UNIGRAM_SIGLIP_TEXT), and
 * that text: a new string of *prepared bytes, or NULL out of memory. */
int tfm_unigram_prepares(const tfm_tokenizer *t);
char *tfm_unigram_prepare(const tfm_tokenizer *t, const char *text,
                          size_t length, size_t *prepared);

/* Splits text[0, length) into the pieces byte-level BPE merges inside, by
 * t's pre-tokenizer (tokenizer_bpe_split.c): writes each piece's end to
 * `ends` (room for `length` of them) and returns their count, or -1 when
 * out of memory. */
int64_t tfm_bpe_split(const tfm_tokenizer *t, const char *text, size_t length,
                      size_t *ends);

/* Whether tokens `left` and `right` merge, into `merged` with `priority`
 * (the highest merges first); `scratch` has room for two pieces. */
typedef int (*tfm_pair_merge)(const tfm_tokenizer *t, int32_t left,
                              int32_t right, char *scratch, double *priority,
                              int32_t *merged);
/* The merge loop's arrays, grown to the longest run of tokens merged
 * (one allocation for all of a text's pieces; zero-initialize it). */
typedef struct tfm_merge_workspace {
  int64_t *next, *prev;
  struct tfm_merge_candidate *heap;
  char *scratch;
  int64_t capacity;
} tfm_merge_workspace;
/* Room for `n` tokens; 0 when out of memory. */
int tfm_merge_workspace_reserve(tfm_merge_workspace *w,
                                const tfm_tokenizer *t, int64_t n);
void tfm_merge_workspace_free(tfm_merge_workspace *w);
/* Merges the best adjacent pair of `work[0, n)` until none merges
 * (tokenizer_merges.c; `w` has room for `n`); returns the token count. */
int64_t tfm_merge_best_pairs(const tfm_tokenizer *t, tfm_merge_workspace *w,
                             int32_t *work, int64_t n, tfm_pair_merge find);

#endif /* TFM_RUNTIME_TOKENIZER_TOKENIZER_INTERNAL_H */
