/*===- main_options.c - a compiled model's command line, parsed ---------===//
 *
 * The options of main.c (main_options.h) and the id lists they carry.
 *
 *===----------------------------------------------------------------------===*/

#include "runtime/cli/main_options.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void tfm_main_usage(FILE *out, const char *argv0) {
  fprintf(
      out,
      "usage: %s [options]\n"
      "  --prompt TEXT          text to continue (default: start from BOS)\n"
      "  --prompt-file FILE     read the prompt text from FILE\n"
      "  --perplexity FILE      the model's perplexity on a text (JSON)\n"
      "  --tokens \"1 2 3\"       token ids to continue instead of text\n"
      "  -n N                   new tokens to generate (default 128)\n"
      "  --temperature T        0 (default) is greedy\n"
      "  --top-k K              sample among the K most likely (0: all)\n"
      "  --top-p P              sample within probability mass P (1: all)\n"
      "  --repetition-penalty R >1 discourages repeating tokens (1: off)\n"
      "  --seed S               sampling seed: same seed, same text\n"
      "  --stop TEXT            stop once TEXT is generated (repeatable)\n"
      "  --ignore-eos           do not stop at end-of-generation tokens\n"
      "  --grammar GBNF         constrain the text to a grammar (llama.cpp's\n"
      "                         GBNF, root rule `root`)\n"
      "  --grammar-file FILE    the same, read from FILE\n"
      "  --json-schema JSON     constrain the text to JSON a schema accepts\n"
      "  --json-schema-file FILE  the same, read from FILE\n"
      "  --force-tokens \"4 5\"   emit these ids instead of sampling (teacher\n"
      "                         forcing, to score a continuation)\n"
      "  --print-ids            print generated token ids instead of text\n"
      "  --tokenize             print the prompt's token ids and exit\n"
      "  --logits FILE          write the prompt's logits, f32 [positions, "
      "vocab]\n"
      "  --step-logits FILE     write the logits each new token was chosen\n"
      "                         from, f32 [new tokens, vocab]\n"
      "  --prompt-cache FILE    continue from the session FILE holds where\n"
      "                         the prompt starts with its tokens, and save\n"
      "                         the session there after generating\n"
      "  --stats                timing and memory as JSON on stderr\n"
      "  --warmup N             prefill the prompt N times first, untimed\n"
      "                         (benchmarks: steady-state figures)\n"
      "  --lookup-ngram N       speculative decoding: draft tokens that\n"
      "                         followed the last N tokens earlier in the\n"
      "                         text, checked at once (tfmc --speculative);\n"
      "                         the output is unchanged\n"
      "  --draft LIB            speculative decoding with a draft model:\n"
      "                         a smaller model of the same vocabulary\n"
      "                         (tfmc --emit=lib -o libNAME.so) drafts\n"
      "                         greedily; the output is unchanged\n"
      "  --draft-p-min P        stop drafting where the draft's top token\n"
      "                         is less likely than P (default 0.75)\n"
      "  --draft-max K          drafts a step at most (default 8)\n"
      "  --lora DIR[:SCALE]     generate with a PEFT LoRA adapter folder,\n"
      "                         loaded into a slot of a model compiled with\n"
      "                         tfmc --lora-slots (SCALE: 1)\n"
      "  IMAGE... [--pixels FILE]  a vision-language model's images (LLaVA):\n"
      "                         one for each image placeholder (<image>) of\n"
      "                         the prompt, in order; --image IMAGE is the\n"
      "                         same as IMAGE after the flags\n"
      "  --weights FILE         weights side file (overrides the default)\n"
      "  --call NAME            run entry point @NAME (encode, embed, ...);\n"
      "                         the default for models that do not generate:\n"
      "    --tokens \"1 2\" [--token-types \"0 1\"]  the input as ids, or\n"
      "    --global-attention \"1 0\"  with --tokens: Longformer's global\n"
      "                         tokens (none by default)\n"
      "    --decoder-tokens \"ids\"  an encoder-decoder's decoder ids\n"
      "                         (teacher forcing; --tokens is the source)\n"
      "  --text TEXT, --text-file FILE  an encoder-decoder's source (one\n"
      "                         per line), translated to text; --tokens\n"
      "                         \"ids\" gives its ids, --print-ids prints ids\n"
      "  --beams N              an encoder-decoder's beam search width\n"
      "                         (default 1: greedy or sampled)\n"
      "  --previous-text TEXT   Whisper's previous text (the transcript\n"
      "                         before this audio), which conditions it\n"
      "  --no-repeat-ngram N, --min-new-tokens N, --suppress \"ids\",\n"
      "  --forced-eos           an encoder-decoder's generation rules (as\n"
      "                         generation_config.json's, transformers')\n"
      "    --text TEXT [--text-pair TEXT]  text through the tokenizer\n"
      "    --text-file FILE     one text per line, one output per line\n"
      "    --batch N            at most N lines of --text-file (packed end\n"
      "                         to end) or N images per call, through\n"
      "                         @NAME_batch (default 32)\n"
      "    IMAGE...             an image model's inputs: PNG or JPEG files,\n"
      "                         preprocessed as preprocessor_config.json says\n"
      "    --preprocess         write the preprocessed images, f32 [3, H, W]\n"
      "  AUDIO...               a speech model's inputs (WAV, FLAC, ...):\n"
      "                         mono, resampled to its rate (Whisper: then\n"
      "                         log-mel as preprocessor_config.json says;\n"
      "                         --preprocess --output FILE writes them);\n"
      "                         one transcript per file\n"
      "    --pixels FILE        an image model's input, raw f32 [3, H, W]\n"
      "    --features FILE      a speech model's log-mel features, raw f32\n"
      "                         [mel bins, frames] (also for generation)\n"
      "    --truncate           cut text longer than the context\n"
      "    --tokenize           print the ids and token types, run nothing\n"
      "    --format F           text (default), json, or f32 (raw, stdout)\n"
      "    --output FILE        write the outputs as raw f32\n"
      "  Whisper transcribes audio of any length (30 s windows, timestamps):\n"
      "    AUDIO... [--format txt|json|srt|vtt] [--language L (detected)]\n"
      "    [--task transcribe|translate] [--initial-prompt TEXT]\n"
      "    [--temperature T (0)] [--temperature-increment X|off (0.2)]\n"
      "    [--compression-ratio-threshold X (2.4)] [--logprob-threshold X "
      "(-1)]\n"
      "    [--no-speech-threshold X (0.6)] (each threshold may be off)\n"
      "    [--no-condition-on-previous] [--seed S] [--max-audio-seconds S "
      "(10800)]\n"
      "    [--word-timestamps]  words with times (json), by the alignment "
      "heads\n"
      "  A speech recognizer (CTC) transcribes audio of any length:\n"
      "    AUDIO... [--format txt|json (words with times)]\n"
      "    [--chunk-seconds S (30 past its longest clip)] [--stride-seconds S "
      "(S/6)]\n"
      "  A diffusion pipeline (Stable Diffusion) draws an image:\n"
      "    --prompt TEXT -o OUT.png [--negative-prompt TEXT] [--steps N (50)]\n"
      "    [--guidance G (7.5)] [--seed S (0)] [--scheduler NAME]\n"
      "    [--width W --height H: the size it was compiled for]\n"
      "    --noise FILE         initial latents, raw f32 [4, H/8, W/8]\n"
      "    --init-image IMG [--strength F (0.8)]  image-to-image\n"
      "    --init-image IMG --mask MASK  inpainting (white is redrawn)\n"
      "    --output FILE        the image as raw f32 [H, W, 3] in [0, 1]\n",
      argv0);
}

/* Which modes read each flag (a bit per tfm_main_mode). */
enum {
  GENERATE = 1 << TFM_MAIN_MODE_GENERATE,
  SEQ2SEQ = 1 << TFM_MAIN_MODE_SEQ2SEQ,
  PERPLEXITY = 1 << TFM_MAIN_MODE_PERPLEXITY,
  CALL = 1 << TFM_MAIN_MODE_CALL,
  SIMILARITY = 1 << TFM_MAIN_MODE_SIMILARITY,
  TRANSCRIBE = 1 << TFM_MAIN_MODE_TRANSCRIBE,
  IMAGE = 1 << TFM_MAIN_MODE_IMAGE,
  WHISPER = 1 << TFM_MAIN_MODE_WHISPER,
  EVERY_MODE = GENERATE | SEQ2SEQ | PERPLEXITY | CALL | SIMILARITY |
               TRANSCRIBE | IMAGE | WHISPER
};
static const struct {
  const char *name; /* as spelled; "" for image and audio files */
  unsigned modes;
} flags[] = {
    {"--prompt", GENERATE | IMAGE},
    {"--prompt-file", GENERATE},
    {"--perplexity", PERPLEXITY},
    {"--tokens", GENERATE | SEQ2SEQ | CALL},
    {"-n", GENERATE | SEQ2SEQ},
    {"--temperature", GENERATE | SEQ2SEQ | WHISPER},
    {"--top-k", GENERATE | SEQ2SEQ},
    {"--top-p", GENERATE | SEQ2SEQ},
    {"--repetition-penalty", GENERATE | SEQ2SEQ},
    {"--seed", GENERATE | SEQ2SEQ | IMAGE | WHISPER},
    {"--stop", GENERATE},
    {"--ignore-eos", GENERATE | SEQ2SEQ},
    {"--grammar", GENERATE},
    {"--grammar-file", GENERATE},
    {"--json-schema", GENERATE},
    {"--json-schema-file", GENERATE},
    {"--force-tokens", GENERATE | SEQ2SEQ},
    {"--print-ids", GENERATE | SEQ2SEQ},
    {"--tokenize", GENERATE | SEQ2SEQ | CALL},
    /* CALL: an encoder-decoder's teacher-forced logits (main.c). */
    {"--logits", GENERATE | CALL},
    {"--step-logits", GENERATE | SEQ2SEQ},
    {"--prompt-cache", GENERATE},
    {"--stats", GENERATE},
    {"--warmup", GENERATE},
    {"--lookup-ngram", GENERATE},
    {"--draft-max", GENERATE},
    {"--draft", GENERATE},
    {"--draft-p-min", GENERATE},
    {"--lora", GENERATE},
    {"--weights", EVERY_MODE},
    {"--call", CALL},
    {"--token-types", CALL},
    {"--global-attention", CALL},
    {"--decoder-tokens", CALL},
    {"--text", SEQ2SEQ | CALL | SIMILARITY},
    {"--text-pair", CALL},
    {"--text-file", SEQ2SEQ | CALL | SIMILARITY},
    {"--beams", SEQ2SEQ},
    {"--no-repeat-ngram", SEQ2SEQ},
    {"--min-new-tokens", SEQ2SEQ},
    {"--suppress", SEQ2SEQ},
    {"--previous-text", SEQ2SEQ},
    {"--forced-eos", SEQ2SEQ},
    {"--batch", CALL},
    /* GENERATE: a vision-language model's image (main_vlm.c). */
    {"--pixels", GENERATE | SEQ2SEQ | CALL},
    {"--image", GENERATE | CALL | SIMILARITY},
    {"--features", SEQ2SEQ | CALL},
    {"--preprocess", SEQ2SEQ | CALL},
    {"--truncate", CALL},
    {"--format", CALL | WHISPER | TRANSCRIBE},
    {"--language", WHISPER},
    {"--task", WHISPER},
    {"--initial-prompt", WHISPER},
    {"--temperature-increment", WHISPER},
    {"--compression-ratio-threshold", WHISPER},
    {"--logprob-threshold", WHISPER},
    {"--no-speech-threshold", WHISPER},
    {"--no-condition-on-previous", WHISPER},
    {"--word-timestamps", WHISPER},
    {"--max-audio-seconds", WHISPER | TRANSCRIBE},
    {"--chunk-seconds", TRANSCRIBE},
    {"--stride-seconds", TRANSCRIBE},
    {"--output", SEQ2SEQ | CALL | IMAGE},
    {"--negative-prompt", IMAGE},
    {"--steps", IMAGE},
    {"--guidance", IMAGE},
    {"--width", IMAGE},
    {"--height", IMAGE},
    {"--scheduler", IMAGE},
    {"--noise", IMAGE},
    {"-o", IMAGE},
    {"--init-image", IMAGE},
    {"--strength", IMAGE},
    {"--mask", IMAGE},
    {"", GENERATE | SEQ2SEQ | CALL | SIMILARITY | TRANSCRIBE | WHISPER},
};

_Static_assert(sizeof flags / sizeof flags[0] <= 128,
               "tfm_main_options.given has a bit per flag");

/* Records that `arg` (a flag, or a file) was given. */
static void note_given(const char *arg, tfm_main_options *o) {
  const char *name = arg[0] == '-' ? arg : "";
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; ++i)
    if (!strcmp(flags[i].name, name))
      o->given[i / 64] |= (uint64_t)1 << (i % 64);
}

int tfm_main_refuse_unused(const char *argv0, const tfm_main_options *o,
                           tfm_main_mode mode) {
  static const char *const what[TFM_MAIN_MODE_COUNT] = {
      "when a decoder generates (from --prompt, --prompt-file or --tokens; "
      "--call NAME runs one entry point)",
      "when an encoder-decoder generates from --text, --text-file, --tokens "
      "or audio (--decoder-tokens \"ids\" teacher-forces @forward instead)",
      "with --perplexity, which reads only its text file",
      "when texts are compared with images (--text TEXT... or --text-file, "
      "and image files)",
      "when a speech recognizer transcribes audio files",
      "when an entry point runs on its inputs (--call, an encoder, or "
      "--decoder-tokens), writing its output as text, --format json or f32, "
      "or --output FILE",
      "when a diffusion pipeline draws an image (--prompt, -o out.png)",
      "when Whisper transcribes audio files window by window (--print-ids, "
      "--beams, -n, --previous-text and --force-tokens decode one window "
      "instead)"};
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; ++i)
    if ((o->given[i / 64] >> (i % 64) & 1) && !(flags[i].modes >> mode & 1)) {
      if (!*flags[i].name)
        fprintf(stderr, "%s: error: image or audio files do nothing %s\n",
                argv0, what[mode]);
      else
        fprintf(stderr, "%s: error: %s does nothing %s\n", argv0,
                flags[i].name, what[mode]);
      return 0;
    }
  return 1;
}

int tfm_main_flag_given(const tfm_main_options *o, const char *name) {
  for (size_t i = 0; i < sizeof flags / sizeof flags[0]; ++i)
    if (!strcmp(flags[i].name, name))
      return (int)(o->given[i / 64] >> (i % 64) & 1);
  return 0;
}

/* Parses a number option; returns 0 after reporting when it is not one. */
static int parse_number(const char *argv0, const char *flag, const char *text,
                        double *value) {
  char *end;
  errno = 0;
  *value = strtod(text, &end);
  if (errno || end == text || *end || isnan(*value)) {
    fprintf(stderr, "%s: error: %s expects a number, got '%s'\n", argv0, flag,
            text);
    return TFM_MAIN_OPTIONS_BAD;
  }
  return TFM_MAIN_OPTIONS_RUN;
}

/* Options whose value is kept as given (a pointer into argv), and the field
 * of tfm_main_options that holds it. */
static const struct {
  const char *name;
  size_t field; /* offsetof a `const char *` */
  int is_rule;  /* a generation rule (rules_given) */
} kTextOptions[] = {
    {"--prompt", offsetof(tfm_main_options, prompt), 0},
    {"--negative-prompt", offsetof(tfm_main_options, negative_prompt), 0},
    {"--scheduler", offsetof(tfm_main_options, scheduler), 0},
    {"--noise", offsetof(tfm_main_options, noise_path), 0},
    {"-o", offsetof(tfm_main_options, png_path), 0},
    {"--init-image", offsetof(tfm_main_options, init_image), 0},
    {"--mask", offsetof(tfm_main_options, mask), 0},
    {"--perplexity", offsetof(tfm_main_options, perplexity), 0},
    {"--prompt-file", offsetof(tfm_main_options, prompt_file), 0},
    {"--grammar", offsetof(tfm_main_options, grammar), 0},
    {"--grammar-file", offsetof(tfm_main_options, grammar_file), 0},
    {"--json-schema", offsetof(tfm_main_options, json_schema), 0},
    {"--json-schema-file", offsetof(tfm_main_options, json_schema_file), 0},
    {"--tokens", offsetof(tfm_main_options, tokens), 0},
    {"--force-tokens", offsetof(tfm_main_options, forced_tokens), 0},
    {"--logits", offsetof(tfm_main_options, logits_path), 0},
    {"--step-logits", offsetof(tfm_main_options, step_logits_path), 0},
    {"--prompt-cache", offsetof(tfm_main_options, prompt_cache_path), 0},
    {"--draft", offsetof(tfm_main_options, draft_path), 0},
    {"--lora", offsetof(tfm_main_options, lora), 0},
    {"--weights", offsetof(tfm_main_options, weights_path), 0},
    {"--call", offsetof(tfm_main_options, call.name), 0},
    {"--text-pair", offsetof(tfm_main_options, call.text_pair), 0},
    {"--pixels", offsetof(tfm_main_options, call.pixels), 0},
    {"--features", offsetof(tfm_main_options, call.pixels), 0},
    {"--text-file", offsetof(tfm_main_options, call.text_file), 0},
    {"--format", offsetof(tfm_main_options, call.format), 0},
    {"--token-types", offsetof(tfm_main_options, call.token_types), 0},
    {"--global-attention", offsetof(tfm_main_options, call.global_attention),
     0},
    {"--decoder-tokens", offsetof(tfm_main_options, call.decoder_tokens), 0},
    {"--previous-text", offsetof(tfm_main_options, previous_text), 0},
    {"--language", offsetof(tfm_main_options, language), 0},
    {"--task", offsetof(tfm_main_options, task), 0},
    {"--initial-prompt", offsetof(tfm_main_options, initial_prompt), 0},
    {"--suppress", offsetof(tfm_main_options, suppress), 1},
    {"--output", offsetof(tfm_main_options, call.output_path), 0},
};

/* Options without a value; returns whether `arg` is one (and sets it). */
static int parse_switch(const char *arg, tfm_main_options *o) {
  if (!strcmp(arg, "--print-ids"))
    o->print_ids = 1;
  else if (!strcmp(arg, "--truncate"))
    o->call.truncate = 1;
  else if (!strcmp(arg, "--preprocess"))
    o->call.preprocess = 1;
  else if (!strcmp(arg, "--tokenize"))
    o->call.tokenize = o->tokenize = 1;
  else if (!strcmp(arg, "--stats"))
    o->stats = 1;
  else if (!strcmp(arg, "--ignore-eos"))
    o->ignore_eos = 1;
  else if (!strcmp(arg, "--forced-eos"))
    o->rules.forced_eos = o->rules_given = 1;
  else if (!strcmp(arg, "--no-condition-on-previous"))
    o->no_condition_on_previous = 1;
  else if (!strcmp(arg, "--word-timestamps"))
    o->word_timestamps = 1;
  else
    return 0;
  return 1;
}

typedef enum {
  OPTION_UNKNOWN, /* not an option taking a value */
  OPTION_TAKEN,
  OPTION_BAD /* reported on stderr */
} option_outcome;

static option_outcome out_of_range(const char *argv0, const char *flag,
                                   const char *range, long long n) {
  fprintf(stderr, "%s: error: %s expects %s, got %lld\n", argv0, flag, range,
          n);
  return OPTION_BAD;
}

/* The options with a whole-number value. */
static option_outcome parse_integer_option(const char *argv0, const char *arg,
                                           const char *value,
                                           tfm_main_options *o) {
  static const char *const names[] = {"-n",
                                      "--top-k",
                                      "--seed",
                                      "--warmup",
                                      "--batch",
                                      "--beams",
                                      "--no-repeat-ngram",
                                      "--min-new-tokens",
                                      "--steps",
                                      "--width",
                                      "--height",
                                      "--lookup-ngram",
                                      "--draft-max"};
  int known = 0;
  for (size_t k = 0; k < sizeof names / sizeof *names; ++k)
    known |= !strcmp(arg, names[k]);
  if (!known)
    return OPTION_UNKNOWN;
  char *end;
  errno = 0;
  long long n = strtoll(value, &end, 10);
  if (errno || *end || end == value || n < 0) {
    fprintf(stderr, "%s: error: %s expects a non-negative integer, got '%s'\n",
            argv0, arg, value);
    return OPTION_BAD;
  }
  if (!strcmp(arg, "-n")) {
    o->new_tokens = (long)n;
    o->new_tokens_given = 1;
  } else if (!strcmp(arg, "--steps")) {
    if (n < 1 || n > 1000)
      return out_of_range(argv0, arg, "1 to 1000", n);
    o->steps = (long)n;
  } else if (!strcmp(arg, "--width")) {
    o->width = (long)n;
  } else if (!strcmp(arg, "--height")) {
    o->height = (long)n;
  } else if (!strcmp(arg, "--top-k")) {
    o->sampler.top_k = (int32_t)n;
  } else if (!strcmp(arg, "--warmup")) {
    o->warmup = (long)n;
  } else if (!strcmp(arg, "--lookup-ngram")) {
    if (n < 1 || n > 64)
      return out_of_range(argv0, arg, "1 to 64", n);
    o->lookup_ngram = (int32_t)n;
  } else if (!strcmp(arg, "--draft-max")) {
    if (n < 1 || n > 64)
      return out_of_range(argv0, arg, "1 to 64", n);
    o->draft_max = (int32_t)n;
  } else if (!strcmp(arg, "--batch")) {
    if (n < 1 || n > 65536)
      return out_of_range(argv0, arg, "1 to 65536", n);
    o->call.batch = (int)n;
  } else if (!strcmp(arg, "--beams")) {
    if (n < 1 || n > 64)
      return out_of_range(argv0, arg, "1 to 64", n);
    o->beams = (int)n;
  } else if (!strcmp(arg, "--no-repeat-ngram")) {
    o->rules.no_repeat_ngram_size = (int32_t)n;
    o->rules_given = 1;
  } else if (!strcmp(arg, "--min-new-tokens")) {
    o->rules.min_new_tokens = (int64_t)n;
    o->rules_given = 1;
  } else {
    o->sampler.seed = (uint64_t)n;
  }
  return OPTION_TAKEN;
}

/* Whisper's long-form thresholds (a number, or "off") and limits. */
static option_outcome parse_transcript_option(const char *argv0,
                                              const char *arg,
                                              const char *value,
                                              tfm_main_options *o) {
  double *threshold =
      !strcmp(arg, "--compression-ratio-threshold")
          ? &o->compression_ratio_threshold
      : !strcmp(arg, "--logprob-threshold")   ? &o->logprob_threshold
      : !strcmp(arg, "--no-speech-threshold") ? &o->no_speech_threshold
                                              : NULL;
  if (!threshold && strcmp(arg, "--temperature-increment") &&
      strcmp(arg, "--max-audio-seconds") && strcmp(arg, "--chunk-seconds") &&
      strcmp(arg, "--stride-seconds"))
    return OPTION_UNKNOWN;
  if (threshold && !strcmp(value, "off")) {
    *threshold = NAN;
    return OPTION_TAKEN;
  }
  if (!strcmp(arg, "--temperature-increment") && !strcmp(value, "off")) {
    o->temperature_increment = 0; /* the first temperature alone */
    return OPTION_TAKEN;
  }
  double number;
  if (!parse_number(argv0, arg, value, &number))
    return OPTION_BAD;
  const char *range = NULL;
  if (threshold == &o->no_speech_threshold && !(number >= 0 && number <= 1))
    range = "0 to 1, or off";
  else if (threshold == &o->compression_ratio_threshold && !(number > 0))
    range = "more than 0, or off";
  else if (!strcmp(arg, "--temperature-increment") &&
           !(number > 0 && number <= 1))
    range = "more than 0 and at most 1, or off";
  else if (!strcmp(arg, "--max-audio-seconds") &&
           !(number > 0 && number <= 86400))
    range = "more than 0 and at most 86400 (a day)";
  else if (!strcmp(arg, "--chunk-seconds") && !(number > 0 && number <= 3600))
    range = "more than 0 and at most 3600";
  else if (!strcmp(arg, "--stride-seconds") && !(number >= 0 && number <= 600))
    range = "0 to 600";
  if (range) {
    fprintf(stderr, "%s: error: %s expects %s, got %g\n", argv0, arg, range,
            number);
    return OPTION_BAD;
  }
  if (threshold)
    *threshold = number;
  else if (!strcmp(arg, "--temperature-increment"))
    o->temperature_increment = (float)number;
  else if (!strcmp(arg, "--chunk-seconds"))
    o->chunk_seconds = number;
  else if (!strcmp(arg, "--stride-seconds"))
    o->stride_seconds = number;
  else
    o->max_audio_seconds = number;
  return OPTION_TAKEN;
}

/* The options with a real value. */
static option_outcome parse_real_option(const char *argv0, const char *arg,
                                        const char *value,
                                        tfm_main_options *o) {
  option_outcome transcript = parse_transcript_option(argv0, arg, value, o);
  if (transcript != OPTION_UNKNOWN)
    return transcript;
  if (strcmp(arg, "--strength") && strcmp(arg, "--guidance") &&
      strcmp(arg, "--temperature") && strcmp(arg, "--top-p") &&
      strcmp(arg, "--repetition-penalty") && strcmp(arg, "--draft-p-min"))
    return OPTION_UNKNOWN;
  double number;
  if (!parse_number(argv0, arg, value, &number))
    return OPTION_BAD;
  if (!strcmp(arg, "--strength")) {
    if (!(number > 0 && number <= 1)) {
      fprintf(stderr,
              "%s: error: --strength expects more than 0 and at "
              "most 1, got %g\n",
              argv0, number);
      return OPTION_BAD;
    }
    o->strength = (float)number;
  } else if (!strcmp(arg, "--guidance")) {
    if (!(number >= 0 && number <= 100)) {
      fprintf(stderr, "%s: error: --guidance expects 0 to 100, got %g\n", argv0,
              number);
      return OPTION_BAD;
    }
    o->guidance = (float)number;
  } else if (!strcmp(arg, "--temperature")) {
    o->sampler.temperature = (float)number;
  } else if (!strcmp(arg, "--top-p")) {
    o->sampler.top_p = (float)number;
  } else if (!strcmp(arg, "--draft-p-min")) {
    if (!(number >= 0 && number <= 1)) {
      fprintf(stderr, "%s: error: --draft-p-min expects 0 to 1, got %g\n",
              argv0, number);
      return OPTION_BAD;
    }
    o->draft_p_min = (float)number;
    o->draft_p_min_given = 1;
  } else {
    o->sampler.repetition_penalty = (float)number;
  }
  return OPTION_TAKEN;
}

/* An option followed by its value; `capacity` bounds the lists (--text:
 * argc). */
/* An input file (an image, or audio), given as --image FILE or after the
 * flags, in order; 0 after reporting. */
static int add_input_file(const char *argv0, const char *path, int capacity,
                          tfm_main_options *o) {
  if (!o->call.images &&
      !(o->call.images = malloc(sizeof(char *) * (size_t)capacity))) {
    fprintf(stderr, "%s: error: out of memory\n", argv0);
    return 0;
  }
  o->call.images[o->call.image_count++] = path;
  return 1;
}

static option_outcome parse_valued_option(const char *argv0, const char *arg,
                                          const char *value, int capacity,
                                          tfm_main_options *o) {
  for (size_t k = 0; k < sizeof kTextOptions / sizeof *kTextOptions; ++k)
    if (!strcmp(arg, kTextOptions[k].name)) {
      *(const char **)((char *)o + kTextOptions[k].field) = value;
      o->rules_given |= kTextOptions[k].is_rule;
      return OPTION_TAKEN;
    }
  if (!strcmp(arg, "--image"))
    return add_input_file(argv0, value, capacity, o) ? OPTION_TAKEN
                                                     : OPTION_BAD;
  if (!strcmp(arg, "--text")) {
    if (!o->texts && !(o->texts = malloc(sizeof(char *) * capacity))) {
      fprintf(stderr, "%s: error: out of memory\n", argv0);
      return OPTION_BAD;
    }
    o->call.text = o->texts[o->text_count++] = value;
    return OPTION_TAKEN;
  }
  if (!strcmp(arg, "--stop")) {
    if (o->stop_count == TFM_MAIN_MAX_STOP_STRINGS) {
      fprintf(stderr, "%s: error: at most %d --stop strings\n", argv0,
              TFM_MAIN_MAX_STOP_STRINGS);
      return OPTION_BAD;
    }
    o->stop[o->stop_count++] = value;
    return OPTION_TAKEN;
  }
  option_outcome outcome = parse_integer_option(argv0, arg, value, o);
  if (outcome == OPTION_UNKNOWN)
    outcome = parse_real_option(argv0, arg, value, o);
  return outcome;
}

/* What cannot be given together. */
static int options_agree(const char *argv0, const tfm_main_options *o) {
  if (!!o->grammar + !!o->grammar_file + !!o->json_schema +
          !!o->json_schema_file >
      1) {
    fprintf(stderr,
            "%s: error: give one of --grammar, --grammar-file, "
            "--json-schema and --json-schema-file\n",
            argv0);
    return 0;
  }
  if ((o->draft_max || o->draft_p_min_given) && !o->lookup_ngram &&
      !o->draft_path) {
    fprintf(stderr,
            "%s: error: %s sets speculative decoding's drafts: give "
            "--lookup-ngram or --draft too\n",
            argv0, o->draft_max ? "--draft-max" : "--draft-p-min");
    return 0;
  }
  if (o->lookup_ngram && o->draft_path) {
    fprintf(stderr, "%s: error: give one of --lookup-ngram and --draft\n",
            argv0);
    return 0;
  }
  if (!!o->prompt + !!o->prompt_file + !!o->tokens > 1) {
    fprintf(stderr,
            "%s: error: give one of --prompt, --prompt-file and --tokens\n",
            argv0);
    return 0;
  }
  return 1;
}

tfm_main_options_result tfm_main_parse_options(int argc, char **argv,
                                               tfm_main_options *o) {
  memset(o, 0, sizeof *o);
  o->new_tokens = 128;
  o->length_penalty = 1.0f;
  o->sampler = tfm_sampler_default_options();
  o->draft_p_min = 0.75f; /* llama.cpp's --draft-p-min default */
  o->guidance = 7.5f; /* diffusers' StableDiffusionPipeline default */
  /* OpenAI's transcribe defaults. */
  o->temperature_increment = 0.2f;
  o->compression_ratio_threshold = 2.4;
  o->logprob_threshold = -1.0;
  o->no_speech_threshold = 0.6;
  o->max_audio_seconds = 3 * 3600;
  o->stride_seconds = -1; /* a sixth of the chunk */
  for (int i = 1; i < argc; ++i) {
    const char *arg = argv[i];
    const char *value = i + 1 < argc ? argv[i + 1] : NULL;
    note_given(arg, o);
    if (arg[0] != '-') {
      /* Image files (PNG, JPEG) for an image model, audio files for a
       * speech model. */
      if (!add_input_file(argv[0], arg, argc, o))
        return TFM_MAIN_OPTIONS_BAD;
      continue;
    }
    if (!strcmp(arg, "--help") || !strcmp(arg, "-h"))
      return TFM_MAIN_OPTIONS_HELP;
    if (parse_switch(arg, o))
      continue;
    if (!value) {
      fprintf(stderr, "%s: error: unknown or incomplete option '%s'\n",
              argv[0], arg);
      tfm_main_usage(stderr, argv[0]);
      return TFM_MAIN_OPTIONS_BAD;
    }
    switch (parse_valued_option(argv[0], arg, value, argc, o)) {
    case OPTION_TAKEN:
      ++i;
      continue;
    case OPTION_BAD:
      return TFM_MAIN_OPTIONS_BAD;
    case OPTION_UNKNOWN:
      fprintf(stderr, "%s: error: unknown option '%s'\n", argv[0], arg);
      tfm_main_usage(stderr, argv[0]);
      return TFM_MAIN_OPTIONS_BAD;
    }
  }
  return options_agree(argv[0], o) ? TFM_MAIN_OPTIONS_RUN
                                   : TFM_MAIN_OPTIONS_BAD;
}

void tfm_main_options_free(tfm_main_options *o) {
  free(o->texts);
  o->texts = NULL;
  o->text_count = 0;
  free(o->call.images);
  o->call.images = NULL;
  o->call.image_count = 0;
}

/* Parses "1 2 3" into ids (writing at most `capacity`); returns the count,
 * or -1 after reporting. */
long tfm_main_parse_ids(const char *argv0, const char *flag, const char *text,
                        int32_t *ids, long capacity) {
  long n = 0;
  const char *at = text;
  for (;;) {
    while (*at == ' ' || *at == ',' || *at == '\t')
      ++at;
    if (!*at)
      return n;
    char *end;
    errno = 0;
    long value = strtol(at, &end, 10);
    if (end == at || errno || value < INT32_MIN || value > INT32_MAX) {
      fprintf(stderr, "%s: error: %s: '%s' is not a token id (at offset %ld)\n",
              argv0, flag, at, (long)(at - text));
      return -1;
    }
    if (n < capacity)
      ids[n] = (int32_t)value;
    ++n;
    at = end;
  }
}

int32_t *tfm_main_parse_id_list(const char *argv0, const char *flag,
                                const char *text, long *count) {
  *count = tfm_main_parse_ids(argv0, flag, text, NULL, 0);
  if (*count < 0)
    return NULL;
  int32_t *ids = calloc((size_t)*count + 1, sizeof *ids);
  if (!ids) {
    fprintf(stderr, "%s: error: out of memory\n", argv0);
    return NULL;
  }
  tfm_main_parse_ids(argv0, flag, text, ids, *count);
  return ids;
}
