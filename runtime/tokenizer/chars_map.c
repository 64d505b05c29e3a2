/*===- chars_map.c - SentencePiece's precompiled character map ------------===//
 *
 * Checks and walks a Darts-clone double-array trie in place (chars_map.h).
 * A unit is a little-endian uint32: the low byte and bit 31 are its label
 * (bit 31 set: a value unit, whose low 31 bits are the value), bit 8 says a
 * key ends at this node (its value is in the unit at the node's children's
 * base, label 0), and bits 10.. are the offset from the node to that base
 * (shifted left by 8 more when bit 9 is set). The child labelled c of a node
 * whose children's base is b is the unit at b ^ c, if its label is c.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/tokenizer/chars_map.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint32_t unit_at(const tfm_chars_map *map, uint32_t i) {
  const unsigned char *p = map->units + 4 * (size_t)i;
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
         (uint32_t)p[3] << 24;
}

static uint32_t label_of(uint32_t unit) { return unit & ((1u << 31) | 0xFF); }

static uint32_t offset_of(uint32_t unit) {
  return (unit >> 10) << ((unit & (1u << 9)) >> 6);
}

static int has_value(uint32_t unit) { return (unit >> 8) & 1; }

static uint32_t value_of(uint32_t unit) { return unit & 0x7FFFFFFFu; }

/* The base of the children of the node at `node`, or unit_count when it
 * has none (a base past the trie has no units to be children). */
static uint32_t children_base(const tfm_chars_map *map, uint32_t node) {
  uint32_t base = node ^ offset_of(unit_at(map, node));
  return base < map->unit_count ? base : map->unit_count;
}

static int malformed(char *why, size_t why_size, const char *format, ...) {
  va_list args;
  va_start(args, format);
  if (why_size)
    vsnprintf(why, why_size, format, args);
  va_end(args);
  return -1;
}

/* The children of every base, grouped as a counting sort groups them: the
 * units labelled c (1..255) at p belong to base p ^ c. */
typedef struct {
  uint32_t *first; /* base b's children: children[first[b] .. first[b+1]) */
  uint32_t *children;
} child_lists;

static int group_children(const tfm_chars_map *map, child_lists *lists) {
  uint32_t n = map->unit_count;
  lists->first = calloc((size_t)n + 1, sizeof *lists->first);
  lists->children = malloc(((size_t)n + 1) * sizeof *lists->children);
  if (!lists->first || !lists->children)
    return -2;
  for (uint32_t p = 0; p < n; ++p) {
    uint32_t label = label_of(unit_at(map, p));
    if (label >= 1 && label <= 255 && (p ^ label) < n)
      ++lists->first[(p ^ label) + 1];
  }
  for (uint32_t b = 0; b < n; ++b)
    lists->first[b + 1] += lists->first[b];
  for (uint32_t p = 0; p < n; ++p) {
    uint32_t label = label_of(unit_at(map, p));
    if (label >= 1 && label <= 255 && (p ^ label) < n)
      lists->children[lists->first[p ^ label]++] = p;
  }
  /* Filling advanced each start to the next base's: shift them back. */
  for (uint32_t b = n; b > 0; --b)
    lists->first[b] = lists->first[b - 1];
  lists->first[0] = 0;
  return 0;
}

/* Visits every node the lookup can reach, breadth first so that each is
 * met first at its shortest key, and checks the value of each key that
 * ends there. */
static int check_keys(tfm_chars_map *map, const child_lists *lists,
                      uint32_t *depth, uint32_t *queue, char *why,
                      size_t why_size) {
  uint32_t n = map->unit_count, head = 0, tail = 0;
  for (uint32_t i = 0; i < n; ++i)
    depth[i] = UINT32_MAX;
  depth[0] = 0;
  queue[tail++] = 0;
  while (head < tail) {
    uint32_t node = queue[head++];
    uint32_t base = children_base(map, node);
    if (node != 0 && has_value(unit_at(map, node))) {
      if (base == n)
        return malformed(why, why_size,
                         "the value of the key at unit %u is past the trie",
                         node);
      uint32_t value = value_of(unit_at(map, base));
      if (value >= map->replacements_size)
        return malformed(why, why_size,
                         "replacement %u (of the key at unit %u) is past "
                         "the map's %u bytes of replacements",
                         value, node, map->replacements_size);
      size_t length = strlen(map->replacements + value);
      size_t expansion = (length + depth[node] - 1) / depth[node];
      if (expansion > TFM_CHARS_MAP_MAX_EXPANSION)
        return malformed(why, why_size,
                         "a %u-byte key replaced by %zu bytes (at most %d "
                         "a byte)",
                         depth[node], length, TFM_CHARS_MAP_MAX_EXPANSION);
      if (expansion > map->max_expansion)
        map->max_expansion = (uint32_t)expansion;
    }
    if (base == n)
      continue;
    for (uint32_t i = lists->first[base]; i < lists->first[base + 1]; ++i) {
      uint32_t child = lists->children[i];
      if (depth[child] == UINT32_MAX) {
        depth[child] = depth[node] + 1;
        queue[tail++] = child;
      }
    }
  }
  return 0;
}

int tfm_chars_map_open(tfm_chars_map *map, const void *blob, size_t size,
                       char *why, size_t why_size) {
  memset(map, 0, sizeof *map);
  map->max_expansion = 1;
  if (size == 0)
    return 0;
  const unsigned char *bytes = blob;
  if (size < 4)
    return malformed(why, why_size, "%zu bytes, shorter than its header",
                     size);
  if (size > UINT32_MAX)
    return malformed(why, why_size, "%zu bytes, over 4 GB", size);
  uint32_t trie_bytes = (uint32_t)bytes[0] | (uint32_t)bytes[1] << 8 |
                        (uint32_t)bytes[2] << 16 | (uint32_t)bytes[3] << 24;
  if (trie_bytes == 0 || trie_bytes % 4 || trie_bytes > size - 4)
    return malformed(why, why_size, "a trie of %u bytes in %zu bytes",
                     trie_bytes, size);
  map->units = bytes + 4;
  map->unit_count = trie_bytes / 4;
  map->replacements = (const char *)bytes + 4 + trie_bytes;
  map->replacements_size = (uint32_t)(size - 4 - trie_bytes);
  /* A labelled root could be its own descendant, reached unchecked. */
  if (label_of(unit_at(map, 0)) != 0)
    return malformed(why, why_size, "its root has a label");
  if (map->replacements_size &&
      map->replacements[map->replacements_size - 1] != '\0')
    return malformed(why, why_size, "its replacements do not end in NUL");

  child_lists lists = {0};
  uint32_t *depth = malloc((size_t)map->unit_count * sizeof *depth);
  uint32_t *queue = malloc((size_t)map->unit_count * sizeof *queue);
  int result = -2;
  if (depth && queue && group_children(map, &lists) == 0)
    result = check_keys(map, &lists, depth, queue, why, why_size);
  free(lists.first);
  free(lists.children);
  free(depth);
  free(queue);
  return result;
}

size_t tfm_chars_map_longest(const tfm_chars_map *map, const char *text,
                             size_t length, const char **replacement,
                             size_t *replacement_length) {
  uint32_t n = map->unit_count;
  if (n == 0)
    return 0;
  size_t longest = 0;
  uint32_t base = children_base(map, 0);
  for (size_t i = 0; i < length && base < n; ++i) {
    unsigned char byte = (unsigned char)text[i];
    uint32_t node = base ^ byte;
    if (node >= n || label_of(unit_at(map, node)) != byte)
      break;
    base = children_base(map, node);
    if (has_value(unit_at(map, node)) && base < n) {
      uint32_t value = value_of(unit_at(map, base));
      if (value < map->replacements_size) {
        longest = i + 1;
        *replacement = map->replacements + value;
      }
    }
  }
  if (longest)
    *replacement_length = strlen(*replacement);
  return longest;
}
