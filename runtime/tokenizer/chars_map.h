/*===- chars_map.h - SentencePiece's precompiled character map ------------===//
 *
 * A Unigram model's normalizer (nmt_nfkc, ...) as SentencePiece stores it:
 * uint32 trie bytes, a Darts-clone double-array trie over the keys,
 * then the replacements, NUL-terminated. The runtime walks the trie in
 * place, as SentencePiece does; the compiler checks a model's map with the
 * same code, so a malformed map fails at compile time and a corrupt blob at
 * load, with the same words.
 *
 * Expanding the map into (key, replacement) rules instead costs 225 000
 * strings for nmt_nfkc (Darts-clone shares suffixes: 44 000 units reach
 * 262 000 paths): about a second to build, embed and sort again.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_TOKENIZER_CHARS_MAP_H
#define TFM_RUNTIME_TOKENIZER_CHARS_MAP_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Refused: a map whose replacement makes more than this many bytes of each
 * byte it replaces (encoding sizes its work by it). */
enum { TFM_CHARS_MAP_MAX_EXPANSION = 64 };

typedef struct {
  const unsigned char *units; /* unit_count little-endian uint32 units */
  uint32_t unit_count;
  const char *replacements;   /* NUL-terminated strings */
  uint32_t replacements_size; /* 0, or its last byte is NUL */
  /* The most bytes a replacement makes of one byte of its key (>= 1). */
  uint32_t max_expansion;
} tfm_chars_map;

/* Reads the map in blob[0..size) (kept by the caller; an empty blob is an
 * empty map) and checks every key the trie can reach: its value is in the
 * trie, and its replacement is in the blob and makes at most
 * TFM_CHARS_MAP_MAX_EXPANSION bytes of each of its bytes. Returns
 * 0, or -1 with why it is malformed written to why[0..why_size). Returns
 * -2 when out of memory (a few bytes per unit, freed before returning). */
int tfm_chars_map_open(tfm_chars_map *map, const void *blob, size_t size,
                       char *why, size_t why_size);

/* The longest key of the map that starts text[0..length): returns its
 * length (0: none) and sets its replacement. */
size_t tfm_chars_map_longest(const tfm_chars_map *map, const char *text,
                             size_t length, const char **replacement,
                             size_t *replacement_length);

#ifdef __cplusplus
}
#endif

#endif /* TFM_RUNTIME_TOKENIZER_CHARS_MAP_H */
