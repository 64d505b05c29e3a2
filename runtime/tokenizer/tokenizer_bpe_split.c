/*===- tokenizer_bpe_split.c - byte-level BPE's pre-tokenizer splits ----===//
 *
 * Byte-level BPE first splits text into the pieces its merges work inside,
 * by its pre-tokenizer's regular expressions, matched here by hand:
 *
 * - GPT-2's (GPT-2, RoBERTa, BART, Whisper, Phi-2, OLMo, MPT, GPT-NeoX)
 *     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * - Llama 3's (tiktoken's cl100k; Qwen2's takes one digit at a time, \p{N})
 *     (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *      ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *   and GPT-4o's (o200k), words split at case (gpt4o_pretoken_length):
 *     [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+
 *     (?i:'s|...)?|[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+
 *     [\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|...)?|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|
 *     \s*[\r\n]+|\s+(?!\S)|\s+
 *   and Qwen3.5's, Qwen2's with combining marks in the letter runs and out
 *   of the other-character runs: [^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+ and
 *    ?[^\s\p{L}\p{M}\p{N}]+[\r\n]* (a mark alone, or marks after a
 *   character that is not a letter, start a letter run, as the regular
 *   expression's optional prefix and its backtracking give)
 * - and the staged splits of llama.cpp's pre-tokenizer types (its
 *   src/llama-vocab.cpp, from the models' tokenizer.json Sequence of Split
 *   pre-tokenizers), where each expression in turn splits every piece of
 *   the one before, matches and the text between them both becoming pieces
 *   (Hugging Face's "Isolated"):
 *     DeepSeek LLM:   [\r\n] | \s?[its letters]+ | \s?[ASCII and
 *                     fullwidth punctuation]+ | \s+$ | [CJK, Hangul]+ | \p{N}+
 *     DeepSeek Coder: [\r\n] | \s?\p{L}+ | \s?\p{P}+ | [CJK, Hangul]+ | \p{N}
 *     Falcon:         [\p{P}$+<=>^~|`]+ | GPT-2's | [0-9]{3}
 *     StarCoder, Refact, Command R: \p{N} | GPT-2's
 *     DeepSeek-V3:    \p{N}{1,3} | [CJK, Hiragana, Katakana]+ |
 *                     an ASCII punctuation mark and ASCII letters,
 *                     [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+,
 *                      ?[\p{P}\p{S}]+[\r\n]*, then whitespace as Llama 3's
 * - CLIP's, over text its encoder normalized (NFC, whitespace runs one
 *   space, lowercase), whitespace dropped:
 *     's|'t|'re|'ve|'m|'ll|'d|\p{L}+|\p{N}|[^\s\p{L}\p{N}]+
 * - Gemma 4's lines, llama.cpp's split of SentencePiece-style BPE (merges
 *   run over whole lines of characters, not words):
 *     [^\n]+|\n+
 *
 * Character classes come from utf8proc (letters L*, numbers N*,
 * punctuation P*, whitespace as Unicode's White_Space); bytes that are not
 * UTF-8 count as "other", one byte each.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/tokenizer/tokenizer_internal.h"

#include <stdlib.h>
#include <string.h>
#include <utf8proc.h>

typedef enum {
  CLASS_LETTER,
  CLASS_DIGIT,
  CLASS_SPACE,
  CLASS_OTHER,
  CLASS_MARK /* classify_marks only: Mn, Mc, Me */
} char_class;

int tfm_is_white_space(int32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 ||
         cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) ||
         cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

/* The code point at text[at] and its size in bytes (one byte of "other",
 * code point -1, where the text is not UTF-8). */
static int32_t code_point(const char *text, size_t length, size_t at,
                          size_t *size) {
  utf8proc_int32_t cp;
  utf8proc_ssize_t n =
      utf8proc_iterate((const uint8_t *)text + at, length - at, &cp);
  if (n <= 0) {
    *size = 1;
    return -1;
  }
  *size = (size_t)n;
  return cp;
}

static int is_letter(int32_t cp) {
  utf8proc_category_t c = utf8proc_category(cp);
  return cp >= 0 && c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_LO;
}

static int is_number(int32_t cp) {
  utf8proc_category_t c = utf8proc_category(cp);
  return cp >= 0 && c >= UTF8PROC_CATEGORY_ND && c <= UTF8PROC_CATEGORY_NO;
}

/* The class of the character at text[at] and its length in bytes. */
static char_class classify(const char *text, size_t length, size_t at,
                           size_t *size) {
  int32_t cp = code_point(text, length, at, size);
  if (tfm_is_white_space(cp))
    return CLASS_SPACE;
  if (is_letter(cp))
    return CLASS_LETTER;
  return is_number(cp) ? CLASS_DIGIT : CLASS_OTHER;
}

/* classify, with combining marks a class of their own (Qwen3.5's). */
static char_class classify_marks(const char *text, size_t length, size_t at,
                                 size_t *size) {
  char_class cls = classify(text, length, at, size);
  if (cls != CLASS_OTHER)
    return cls;
  int32_t cp = code_point(text, length, at, size);
  utf8proc_category_t c = utf8proc_category(cp);
  return cp >= 0 && c >= UTF8PROC_CATEGORY_MN && c <= UTF8PROC_CATEGORY_ME
             ? CLASS_MARK
             : CLASS_OTHER;
}

static int is_newline(char c) { return c == '\r' || c == '\n'; }

/* Length of the contraction ('s 't 're 've 'm 'll 'd) at text[at], in
 * either case when `any_case` (ASCII letters, as llama.cpp reads Llama
 * 3's "(?i:...)"); 0 when none starts there. */
static size_t contraction_length(const char *text, size_t length, size_t at,
                                 int any_case) {
  static const char *const contractions[] = {"s", "t", "re", "ve",
                                             "m", "ll", "d"};
  if (text[at] != '\'')
    return 0;
  for (size_t i = 0; i < sizeof contractions / sizeof *contractions; ++i) {
    size_t n = 0;
    while (contractions[i][n] && at + 1 + n < length) {
      char c = text[at + 1 + n];
      if (any_case && c >= 'A' && c <= 'Z')
        c = (char)(c - 'A' + 'a');
      if (c != contractions[i][n])
        break;
      ++n;
    }
    if (!contractions[i][n])
      return 1 + n;
  }
  return 0;
}

/* Where the run of `cls` characters starting at text[at] ends. */
static size_t run_end(const char *text, size_t length, size_t at,
                      char_class cls) {
  size_t size;
  while (at < length && classify(text, length, at, &size) == cls)
    at += size;
  return at;
}

/* A whitespace run from text[at]: "\s+(?!\S)|\s+", so that when a word
 * follows, the run's last character stays for the word, unless the run is
 * that one character. `through_newline`: "\s*[\r\n]+" first, the run up
 * to its last newline (Llama 3's). */
static size_t space_length(const char *text, size_t length, size_t at,
                           int through_newline) {
  size_t end = at, last = at, size;
  size_t after_newline = 0;
  while (end < length && classify(text, length, end, &size) == CLASS_SPACE) {
    if (is_newline(text[end]))
      after_newline = end + 1;
    last = end;
    end += size;
  }
  if (through_newline && after_newline)
    return after_newline - at;
  if (end < length && last > at)
    end = last;
  return end - at;
}

/* Length of GPT-2's pre-token starting at text[at]. */
static size_t gpt2_pretoken_length(const char *text, size_t length,
                                   size_t at) {
  size_t contraction = contraction_length(text, length, at, 0);
  if (contraction)
    return contraction;
  /* " ?X+" for X letters, digits or other: an optional space, one class. */
  size_t start = at, size, next_size;
  if (text[at] == ' ' && at + 1 < length &&
      classify(text, length, at + 1, &next_size) != CLASS_SPACE)
    ++start;
  char_class cls = classify(text, length, start, &size);
  if (cls != CLASS_SPACE)
    return run_end(text, length, start + size, cls) - at;
  return space_length(text, length, at, 0);
}

/* Where the run of letters (and, with `marks`, combining marks) starting
 * at text[at] ends. */
static size_t letters_end(const char *text, size_t length, size_t at,
                          int marks) {
  size_t size;
  while (at < length) {
    char_class cls = marks ? classify_marks(text, length, at, &size)
                           : classify(text, length, at, &size);
    if (cls != CLASS_LETTER && cls != CLASS_MARK)
      break;
    at += size;
  }
  return at;
}

/* \p{N}{1,max}: where at most `max` numbers from text[at] end. */
static size_t numbers_end(const char *text, size_t length, size_t at,
                          size_t max) {
  size_t size;
  for (size_t i = 0; i < max && at < length &&
                     is_number(code_point(text, length, at, &size));
       ++i)
    at += size;
  return at;
}

/* The tail of Llama 3's expression and its relatives' from text[at]:
 * " ?[^\s\p{L}\p{N}]+[\r\n]*", other characters after an optional space,
 * then any newlines (`marks`: marks are not other, Qwen3.5's; `slash`:
 * [\r\n/]* after them, GPT-4o's), else Llama 3's whitespace. */
static size_t others_or_space_length(const char *text, size_t length,
                                     size_t at, int marks, int slash) {
  char_class (*kind)(const char *, size_t, size_t, size_t *) =
      marks ? classify_marks : classify;
  size_t start = at, size, next_size;
  if (text[at] == ' ' && at + 1 < length &&
      kind(text, length, at + 1, &next_size) == CLASS_OTHER)
    start = at + 1;
  if (kind(text, length, start, &size) == CLASS_OTHER) {
    size_t end = start + size;
    while (end < length && kind(text, length, end, &size) == CLASS_OTHER)
      end += size;
    while (end < length && (is_newline(text[end]) || (slash && text[end] == '/')))
      ++end;
    return end - at;
  }
  return space_length(text, length, at, 1);
}

/* Length of Llama 3's pre-token starting at text[at]; `max_digits`: 3
 * (Llama 3) or 1 (Qwen2, Qwen3.5); `marks`: combining marks join letter
 * runs and leave other-character runs (Qwen3.5). */
static size_t llama3_pretoken_length(const char *text, size_t length,
                                     size_t at, size_t max_digits,
                                     int marks) {
  size_t contraction = contraction_length(text, length, at, 1);
  if (contraction)
    return contraction;
  size_t size, next_size;
  char_class cls = marks ? classify_marks(text, length, at, &size)
                         : classify(text, length, at, &size);
  /* [^\r\n\p{L}\p{N}]?\p{L}+: letters, after one character that is
   * neither a letter, a digit nor a newline (Qwen3.5: [\p{L}\p{M}]+). */
  if (cls == CLASS_LETTER || cls == CLASS_MARK)
    return letters_end(text, length, at + size, marks) - at;
  if (cls != CLASS_DIGIT && !is_newline(text[at]) && at + size < length) {
    char_class next = marks ? classify_marks(text, length, at + size, &next_size)
                            : classify(text, length, at + size, &next_size);
    if (next == CLASS_LETTER || next == CLASS_MARK)
      return letters_end(text, length, at + size + next_size, marks) - at;
  }
  /* \p{N}{1,max_digits} */
  if (cls == CLASS_DIGIT)
    return numbers_end(text, length, at, max_digits) - at;
  return others_or_space_length(text, length, at, marks, 0);
}

/* CLIP's: 's|'t|'re|'ve|'m|'ll|'d|\p{L}+|\p{N}|[^\s\p{L}\p{N}]+ over
 * lowercased text, whitespace its own pieces (which the encoder drops):
 * no piece carries a space. */
static size_t clip_pretoken_length(const char *text, size_t length, size_t at) {
  size_t size;
  size_t contraction = contraction_length(text, length, at, 0);
  if (contraction)
    return contraction;
  char_class cls = classify(text, length, at, &size);
  if (cls == CLASS_DIGIT)
    return size;
  return run_end(text, length, at, cls) - at;
}

/* GPT-4o's letter classes: "upper" ([\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]) and
 * "lower" ([\p{Ll}\p{Lm}\p{Lo}\p{M}]); modifier and other letters and
 * marks are both. */
static int is_upper_class(int32_t cp) {
  utf8proc_category_t c = utf8proc_category(cp);
  return cp >= 0 && c != UTF8PROC_CATEGORY_LL && c >= UTF8PROC_CATEGORY_LU &&
         c <= UTF8PROC_CATEGORY_ME;
}

static int is_lower_class(int32_t cp) {
  utf8proc_category_t c = utf8proc_category(cp);
  return cp >= 0 && c != UTF8PROC_CATEGORY_LU && c != UTF8PROC_CATEGORY_LT &&
         c >= UTF8PROC_CATEGORY_LL && c <= UTF8PROC_CATEGORY_ME;
}

/* Length of the run of characters in `in` from text[at] (0: none). */
static size_t class_run(const char *text, size_t length, size_t at,
                        int (*in)(int32_t)) {
  size_t end = at, size;
  while (end < length && in(code_point(text, length, end, &size)))
    end += size;
  return end - at;
}

/* Where the run of characters in `in` from text[at] ends. */
static size_t run_of(const char *text, size_t length, size_t at,
                     int (*in)(int32_t)) {
  return at + class_run(text, length, at, in);
}

/* GPT-4o's first two alternatives from text[start], without the prefix
 * character: "upper"* "lower"+ (the regular expression backtracks into the
 * upper run for a character that is lower too), else "upper"+ "lower"*;
 * where the word ends, or 0. */
static size_t gpt4o_word_end(const char *text, size_t length, size_t start,
                             int second) {
  size_t upper_end = run_of(text, length, start, is_upper_class), size;
  if (!second) {
    if (upper_end < length &&
        is_lower_class(code_point(text, length, upper_end, &size)))
      return run_of(text, length, upper_end, is_lower_class);
    /* Backtracking: the last upper-run character that is lower too starts
     * a lower run one character long (the one after it is not lower). */
    size_t last = 0, found = 0;
    for (size_t at = start; at < upper_end; at += size)
      if (is_lower_class(code_point(text, length, at, &size))) {
        last = at + size;
        found = 1;
      }
    return found ? last : 0;
  }
  return upper_end > start ? run_of(text, length, upper_end, is_lower_class)
                           : 0;
}

/* Length of GPT-4o's pre-token starting at text[at]. */
static size_t gpt4o_pretoken_length(const char *text, size_t length,
                                    size_t at) {
  size_t size, end = 0;
  int32_t cp = code_point(text, length, at, &size);
  /* [^\r\n\p{L}\p{N}]? before either word form, tried with it first. */
  int prefix = !is_newline(text[at]) && !is_letter(cp) && !is_number(cp) &&
               at + size < length;
  for (int second = 0; second < 2 && !end; ++second) {
    if (prefix)
      end = gpt4o_word_end(text, length, at + size, second);
    if (!end)
      end = gpt4o_word_end(text, length, at, second);
  }
  if (end) {
    size_t contraction = contraction_length(text, length, end, 1);
    return end + contraction - at;
  }
  if (is_number(cp))
    return numbers_end(text, length, at, 3) - at;
  return others_or_space_length(text, length, at, 0, 1);
}

/* Gemma 4's: [^\n]+|\n+, a line or a run of newlines. */
static size_t line_pretoken_length(const char *text, size_t length,
                                   size_t at) {
  int newline = text[at] == '\n';
  size_t end = at + 1;
  while (end < length && (text[end] == '\n') == newline)
    ++end;
  return end - at;
}

/* The length of the one-expression split's piece at text[at]. */
static size_t pretoken_length(uint32_t split, const char *text, size_t length,
                              size_t at) {
  switch (split) {
  case TFM_BPE_SPLIT_CLIP:
    return clip_pretoken_length(text, length, at);
  case TFM_BPE_SPLIT_LLAMA3:
    return llama3_pretoken_length(text, length, at, 3, 0);
  case TFM_BPE_SPLIT_QWEN2:
    return llama3_pretoken_length(text, length, at, 1, 0);
  case TFM_BPE_SPLIT_QWEN35:
    return llama3_pretoken_length(text, length, at, 1, 1);
  case TFM_BPE_SPLIT_GEMMA4:
    return line_pretoken_length(text, length, at);
  case TFM_BPE_SPLIT_GPT4O:
    return gpt4o_pretoken_length(text, length, at);
  default:
    return gpt2_pretoken_length(text, length, at);
  }
}

/*===-- staged splits --------------------------------------------------===*/

/* The expressions of the staged splits. Each matcher returns the length of
 * its expression's match starting at text[at] (the text ending at
 * `length`, a piece's end), or 0 when none starts there. */
typedef enum {
  MATCH_NEWLINE,          /* [\r\n] */
  MATCH_DEEPSEEK_LETTERS, /* \s?[A-Za-zµÀ-ÖØ-öø-ƺ...]+ (kDeepseekLetters) */
  MATCH_ASCII_PUNCTUATION, /* \s?[!-/:-~！-／：-～‘-‟　-。]+ */
  MATCH_TRAILING_SPACE,   /* \s+$ */
  MATCH_CJK,              /* [一-龥ࠀ-一가-퟿]+ */
  MATCH_NUMBERS,          /* \p{N}+ */
  MATCH_NUMBER,           /* \p{N} */
  MATCH_LETTERS,          /* \s?\p{L}+ */
  MATCH_PUNCTUATION,      /* \s?\p{P}+ */
  MATCH_FALCON_PUNCTUATION, /* [\p{P}\$\+<=>\^~\|`]+ */
  MATCH_GPT2,             /* GPT-2's expression */
  MATCH_THREE_DIGITS,     /* [0-9][0-9][0-9] */
  MATCH_NUMBERS_UP_TO_3,  /* \p{N}{1,3} */
  MATCH_CJK_KANA,         /* [一-龥぀-ゟ゠-ヿ]+ */
  MATCH_DEEPSEEK3_WORDS,  /* deepseek3_word_length's expression */
  MATCH_END
} matcher;

static const matcher kDeepseekLlm[] = {
    MATCH_NEWLINE, MATCH_DEEPSEEK_LETTERS, MATCH_ASCII_PUNCTUATION,
    MATCH_TRAILING_SPACE, MATCH_CJK, MATCH_NUMBERS, MATCH_END};
static const matcher kDeepseekCoder[] = {
    MATCH_NEWLINE, MATCH_LETTERS, MATCH_PUNCTUATION, MATCH_CJK, MATCH_NUMBER,
    MATCH_END};
static const matcher kFalcon[] = {MATCH_FALCON_PUNCTUATION, MATCH_GPT2,
                                  MATCH_THREE_DIGITS, MATCH_END};
static const matcher kDigitsThenGpt2[] = {MATCH_NUMBER, MATCH_GPT2, MATCH_END};
static const matcher kDeepseekV3[] = {MATCH_NUMBERS_UP_TO_3, MATCH_CJK_KANA,
                                      MATCH_DEEPSEEK3_WORDS, MATCH_END};

/* DeepSeek LLM's letters, as its tokenizer.json's expression spells them
 * ([A-Za-zµÀ-ÖØ-öø-ƺ...]): mostly cased letters, but not exactly
 * (Armenian's capitals and not its small letters, ʕ and not ʔ), so the
 * ranges are kept as published. */
static const int32_t kDeepseekLetters[][2] = {
    {0x41, 0x5A}, {0x61, 0x7A}, {0xB5, 0xB5}, {0xC0, 0xD6}, {0xD8, 0xF6},
    {0xF8, 0x1BA}, {0x1BC, 0x1BF}, {0x1C4, 0x293}, {0x295, 0x2AF},
    {0x370, 0x373}, {0x376, 0x377}, {0x37B, 0x37D}, {0x37F, 0x37F},
    {0x386, 0x386}, {0x388, 0x38A}, {0x38C, 0x38C}, {0x38E, 0x3A1},
    {0x3A3, 0x3F5}, {0x3F7, 0x481}, {0x48A, 0x52F}, {0x531, 0x556},
    {0x10A0, 0x10C5}, {0x13A0, 0x13F5}, {0x13F8, 0x13FD}, {0x1C90, 0x1CBA},
    {0x1CBD, 0x1CBF}, {0x1D00, 0x1D2B}, {0x1D6B, 0x1D77}, {0x1D79, 0x1D9A},
    {0x1E00, 0x1F15}, {0x1F18, 0x1F1D}, {0x1F20, 0x1F45}, {0x1F48, 0x1F4D},
    {0x1F50, 0x1F57}, {0x1F59, 0x1F59}, {0x1F5B, 0x1F5B}, {0x1F5D, 0x1F5D},
    {0x1F5F, 0x1F7D}, {0x1F80, 0x1FB4}, {0x1FB6, 0x1FBC}, {0x1FBE, 0x1FBE},
    {0x1FC2, 0x1FC4}, {0x1FC6, 0x1FCC}, {0x1FD0, 0x1FD3}, {0x1FD6, 0x1FDB},
    {0x1FE0, 0x1FEC}, {0x1FF2, 0x1FF4}, {0x1FF6, 0x1FFC}, {0x2102, 0x2102},
    {0x2107, 0x2107}, {0x210A, 0x2113}, {0x2115, 0x2115}, {0x2119, 0x211D},
    {0x2124, 0x2124}, {0x2126, 0x2126}, {0x2128, 0x2128}, {0x212A, 0x212D},
    {0x212F, 0x2134}, {0x2139, 0x2139}, {0x213C, 0x213F}, {0x2145, 0x2149},
    {0x214E, 0x214E}, {0x2183, 0x2184}, {0x2C00, 0x2C7B}, {0x2C7E, 0x2CE4},
    {0x2CEB, 0x2CEE}, {0x2CF2, 0x2CF3}, {0xA640, 0xA66D}, {0xA680, 0xA69B},
    {0xA722, 0xA76F}, {0xA771, 0xA787}, {0xA78B, 0xA78E}, {0xAB70, 0xABBF},
    {0xFB00, 0xFB06}, {0xFB13, 0xFB17}, {0xFF21, 0xFF3A}, {0xFF41, 0xFF5A},
    {0x10400, 0x1044F}, {0x104B0, 0x104D3}, {0x104D8, 0x104FB},
    {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF},
    {0x1E900, 0x1E943},
};

static int compare_range(const void *key, const void *element) {
  int32_t cp = *(const int32_t *)key;
  const int32_t *range = element;
  return cp < range[0] ? -1 : cp > range[1] ? 1 : 0;
}

static int is_deepseek_letter(int32_t cp) {
  return bsearch(&cp, kDeepseekLetters,
                 sizeof kDeepseekLetters / sizeof kDeepseekLetters[0],
                 sizeof kDeepseekLetters[0], compare_range) != NULL;
}

static int is_punctuation(int32_t cp) {
  utf8proc_category_t c = utf8proc_category(cp);
  return cp >= 0 && c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}

static int is_ascii_punctuation(int32_t cp) {
  return (cp >= '!' && cp <= '/') || (cp >= ':' && cp <= '~') ||
         (cp >= 0xFF01 && cp <= 0xFF0F) || (cp >= 0xFF1A && cp <= 0xFF5E) ||
         (cp >= 0x2018 && cp <= 0x201F) || (cp >= 0x3000 && cp <= 0x3002);
}

static int is_cjk(int32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FA5) || (cp >= 0x0800 && cp <= 0x4E00) ||
         (cp >= 0xAC00 && cp <= 0xD7FF);
}

static int is_cjk_kana(int32_t cp) {
  return (cp >= 0x4E00 && cp <= 0x9FA5) || (cp >= 0x3040 && cp <= 0x30FF);
}

static int is_symbol(int32_t cp) {
  utf8proc_category_t c = utf8proc_category(cp);
  return cp >= 0 && c >= UTF8PROC_CATEGORY_SM && c <= UTF8PROC_CATEGORY_SO;
}

static int is_punctuation_or_symbol(int32_t cp) {
  return is_punctuation(cp) || is_symbol(cp);
}

static int is_letter_or_mark(int32_t cp) {
  utf8proc_category_t c = utf8proc_category(cp);
  return cp >= 0 && c >= UTF8PROC_CATEGORY_LU && c <= UTF8PROC_CATEGORY_ME;
}

static int is_ascii_letter(char c) {
  return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z');
}

static int is_falcon_punctuation(int32_t cp) {
  return is_punctuation(cp) || (cp >= 0 && cp < 128 && strchr("$+<=>^~|`", cp));
}


/* "\s?X+": one optional whitespace character, then a run of X. */
static size_t space_then_run(const char *text, size_t length, size_t at,
                             int (*in)(int32_t)) {
  size_t size;
  size_t start = at;
  if (tfm_is_white_space(code_point(text, length, at, &size)) &&
      at + size < length)
    start += size;
  size_t run = class_run(text, length, start, in);
  return run ? start + run - at : 0;
}

/* DeepSeek-V3's last stage from text[at] (0: none starts there):
 *   [!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+
 *   | [^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+ |  ?[\p{P}\p{S}]+[\r\n]*
 *   | \s*[\r\n]+ | \s+(?!\S) | \s+
 * (digits and other characters start none: they stay pieces of their
 * own). */
static size_t deepseek3_word_length(const char *text, size_t length,
                                    size_t at) {
  size_t size, next_size, end;
  int32_t cp = code_point(text, length, at, &size);
  if (cp > ' ' && cp < 0x7F && !is_ascii_letter((char)cp) &&
      !(cp >= '0' && cp <= '9') && at + 1 < length &&
      is_ascii_letter(text[at + 1])) {
    for (end = at + 1; end < length && is_ascii_letter(text[end]);)
      ++end;
    return end - at;
  }
  /* Letters and marks, after one character that is none of a newline, a
   * letter, punctuation or a symbol (a mark counts as either). */
  if (!is_newline(text[at]) && !is_letter(cp) &&
      !is_punctuation_or_symbol(cp) && at + size < length &&
      is_letter_or_mark(code_point(text, length, at + size, &next_size)))
    return class_run(text, length, at + size, is_letter_or_mark) + size;
  if (is_letter_or_mark(cp))
    return class_run(text, length, at, is_letter_or_mark);
  size_t start = at;
  if (text[at] == ' ' && at + 1 < length &&
      is_punctuation_or_symbol(code_point(text, length, at + 1, &next_size)))
    start = at + 1;
  size_t run = class_run(text, length, start, is_punctuation_or_symbol);
  if (run) {
    for (end = start + run; end < length && is_newline(text[end]);)
      ++end;
    return end - at;
  }
  return tfm_is_white_space(cp) ? space_length(text, length, at, 1) : 0;
}

static size_t match_at(matcher m, const char *text, size_t length, size_t at) {
  size_t size;
  switch (m) {
  case MATCH_NEWLINE:
    return is_newline(text[at]) ? 1 : 0;
  case MATCH_DEEPSEEK_LETTERS:
    return space_then_run(text, length, at, is_deepseek_letter);
  case MATCH_ASCII_PUNCTUATION:
    return space_then_run(text, length, at, is_ascii_punctuation);
  case MATCH_TRAILING_SPACE: {
    size_t run = class_run(text, length, at, tfm_is_white_space);
    return at + run == length ? run : 0;
  }
  case MATCH_CJK:
    return class_run(text, length, at, is_cjk);
  case MATCH_NUMBERS:
    return class_run(text, length, at, is_number);
  case MATCH_NUMBER:
    return is_number(code_point(text, length, at, &size)) ? size : 0;
  case MATCH_LETTERS:
    return space_then_run(text, length, at, is_letter);
  case MATCH_PUNCTUATION:
    return space_then_run(text, length, at, is_punctuation);
  case MATCH_FALCON_PUNCTUATION:
    return class_run(text, length, at, is_falcon_punctuation);
  case MATCH_GPT2:
    return gpt2_pretoken_length(text, length, at);
  case MATCH_THREE_DIGITS:
    return at + 3 <= length && text[at] >= '0' && text[at] <= '9' &&
                   text[at + 1] >= '0' && text[at + 1] <= '9' &&
                   text[at + 2] >= '0' && text[at + 2] <= '9'
               ? 3
               : 0;
  case MATCH_NUMBERS_UP_TO_3:
    return numbers_end(text, length, at, 3) - at;
  case MATCH_CJK_KANA:
    return class_run(text, length, at, is_cjk_kana);
  case MATCH_DEEPSEEK3_WORDS:
    return deepseek3_word_length(text, length, at);
  case MATCH_END:
    break;
  }
  return 0;
}

/* Splits each piece of `ends[0, count)` by `m`: its matches and the text
 * between them become pieces, written to `out`; returns their count. */
static int64_t split_pieces(matcher m, const char *text, const size_t *ends,
                            int64_t count, size_t *out) {
  int64_t n = 0;
  size_t begin = 0;
  for (int64_t p = 0; p < count; begin = ends[p++]) {
    size_t end = ends[p], unmatched = begin, size;
    for (size_t at = begin; at < end;) {
      size_t match = match_at(m, text, end, at);
      if (!match) {
        code_point(text, end, at, &size);
        at += size;
        continue;
      }
      if (unmatched < at)
        out[n++] = at;
      at += match;
      out[n++] = at;
      unmatched = at;
    }
    if (unmatched < end)
      out[n++] = end;
  }
  return n;
}

static const matcher *stages_of(uint32_t split) {
  switch (split) {
  case TFM_BPE_SPLIT_DEEPSEEK_LLM: return kDeepseekLlm;
  case TFM_BPE_SPLIT_DEEPSEEK_CODER: return kDeepseekCoder;
  case TFM_BPE_SPLIT_FALCON: return kFalcon;
  case TFM_BPE_SPLIT_DIGITS_THEN_GPT2: return kDigitsThenGpt2;
  case TFM_BPE_SPLIT_DEEPSEEK_V3: return kDeepseekV3;
  default: return NULL;
  }
}

int64_t tfm_bpe_split(const tfm_tokenizer *t, const char *text, size_t length,
                      size_t *ends) {
  uint32_t split = t->bpe_split;
  const matcher *stages = stages_of(split);
  int64_t n = 0;
  if (!stages) {
    for (size_t at = 0; at < length; at = ends[n++])
      ends[n] = at + pretoken_length(split, text, length, at);
    return n;
  }
  /* The whole text is the first piece; each stage splits the pieces of the
   * one before, ping-ponging between `ends` and a second array. */
  size_t *other = malloc((length + 1) * sizeof *other);
  if (!other)
    return -1;
  size_t *from = ends, *to = other;
  if (length)
    from[n++] = length;
  for (const matcher *m = stages; *m != MATCH_END; ++m) {
    n = split_pieces(*m, text, from, n, to);
    size_t *swap = from;
    from = to;
    to = swap;
  }
  if (from != ends)
    memcpy(ends, from, (size_t)n * sizeof *ends);
  free(other);
  return n;
}
