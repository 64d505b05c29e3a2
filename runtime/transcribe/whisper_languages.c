/*===- whisper_languages.c - Whisper's language codes and names ------------===*
 *
 * The languages Whisper knows, code and English name, as openai/whisper's
 * whisper/tokenizer.py has them in LANGUAGES (same order), and the aliases
 * its TO_LANGUAGE_CODE adds. The runtime needs them for a --language given
 * as a name, and for verbose_json's "language", which OpenAI spells as the
 * English name.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/transcribe/transcribe_internal.h"

#include <stddef.h>
#include <string.h>
#include <strings.h>

typedef struct {
  const char *code;
  const char *name;
} WhisperLanguage;

/* LANGUAGES, in tokenizer.py's order (row by row). */
static const WhisperLanguage kLanguages[] = {
    {"en", "english"},     {"zh", "chinese"},    {"de", "german"},
    {"es", "spanish"},     {"ru", "russian"},    {"ko", "korean"},
    {"fr", "french"},      {"ja", "japanese"},   {"pt", "portuguese"},
    {"tr", "turkish"},     {"pl", "polish"},     {"ca", "catalan"},
    {"nl", "dutch"},       {"ar", "arabic"},     {"sv", "swedish"},
    {"it", "italian"},     {"id", "indonesian"}, {"hi", "hindi"},
    {"fi", "finnish"},     {"vi", "vietnamese"}, {"he", "hebrew"},
    {"uk", "ukrainian"},   {"el", "greek"},      {"ms", "malay"},
    {"cs", "czech"},       {"ro", "romanian"},   {"da", "danish"},
    {"hu", "hungarian"},   {"ta", "tamil"},      {"no", "norwegian"},
    {"th", "thai"},        {"ur", "urdu"},       {"hr", "croatian"},
    {"bg", "bulgarian"},   {"lt", "lithuanian"}, {"la", "latin"},
    {"mi", "maori"},       {"ml", "malayalam"},  {"cy", "welsh"},
    {"sk", "slovak"},      {"te", "telugu"},     {"fa", "persian"},
    {"lv", "latvian"},     {"bn", "bengali"},    {"sr", "serbian"},
    {"az", "azerbaijani"}, {"sl", "slovenian"},  {"kn", "kannada"},
    {"et", "estonian"},    {"mk", "macedonian"}, {"br", "breton"},
    {"eu", "basque"},      {"is", "icelandic"},  {"hy", "armenian"},
    {"ne", "nepali"},      {"mn", "mongolian"},  {"bs", "bosnian"},
    {"kk", "kazakh"},      {"sq", "albanian"},   {"sw", "swahili"},
    {"gl", "galician"},    {"mr", "marathi"},    {"pa", "punjabi"},
    {"si", "sinhala"},     {"km", "khmer"},      {"sn", "shona"},
    {"yo", "yoruba"},      {"so", "somali"},     {"af", "afrikaans"},
    {"oc", "occitan"},     {"ka", "georgian"},   {"be", "belarusian"},
    {"tg", "tajik"},       {"sd", "sindhi"},     {"gu", "gujarati"},
    {"am", "amharic"},     {"yi", "yiddish"},    {"lo", "lao"},
    {"uz", "uzbek"},       {"fo", "faroese"},    {"ht", "haitian creole"},
    {"ps", "pashto"},      {"tk", "turkmen"},    {"nn", "nynorsk"},
    {"mt", "maltese"},     {"sa", "sanskrit"},   {"lb", "luxembourgish"},
    {"my", "myanmar"},     {"bo", "tibetan"},    {"tl", "tagalog"},
    {"mg", "malagasy"},    {"as", "assamese"},   {"tt", "tatar"},
    {"haw", "hawaiian"},   {"ln", "lingala"},    {"ha", "hausa"},
    {"ba", "bashkir"},     {"jw", "javanese"},   {"su", "sundanese"},
    {"yue", "cantonese"},
};

/* TO_LANGUAGE_CODE's entries that are not a name in LANGUAGES. */
static const WhisperLanguage kAliases[] = {
    {"my", "burmese"},   {"ca", "valencian"},     {"nl", "flemish"},
    {"ht", "haitian"},   {"lb", "letzeburgesch"}, {"ps", "pushto"},
    {"pa", "panjabi"},   {"ro", "moldavian"},     {"ro", "moldovan"},
    {"si", "sinhalese"}, {"es", "castilian"},     {"zh", "mandarin"},
};

#define COUNT(a) (sizeof(a) / sizeof((a)[0]))

const char *tfm_whisper_language_name(const char *code) {
  if (!code)
    return NULL;
  for (size_t i = 0; i < COUNT(kLanguages); ++i)
    if (strcmp(kLanguages[i].code, code) == 0)
      return kLanguages[i].name;
  return NULL;
}

const char *tfm_whisper_language_code(const char *name) {
  if (!name)
    return NULL;
  for (size_t i = 0; i < COUNT(kLanguages); ++i)
    if (strcmp(kLanguages[i].code, name) == 0)
      return kLanguages[i].code;
  for (size_t i = 0; i < COUNT(kLanguages); ++i)
    if (strcasecmp(kLanguages[i].name, name) == 0)
      return kLanguages[i].code;
  for (size_t i = 0; i < COUNT(kAliases); ++i)
    if (strcasecmp(kAliases[i].name, name) == 0)
      return kAliases[i].code;
  return NULL;
}
