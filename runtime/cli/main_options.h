/*===- main_options.h - a compiled model's command line, parsed ---------===//
 *
 * What main.c runs, as parsed from argv: apart from main() so that the
 * parser can be tested and fuzzed (test/fuzz/FuzzArguments.c) without a
 * model linked in.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_CLI_MAIN_OPTIONS_H
#define TFM_RUNTIME_CLI_MAIN_OPTIONS_H

#include "runtime/cli/main_internal.h"

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

enum { TFM_MAIN_MAX_STOP_STRINGS = 16 };

/* What a compiled model's command line does, as main.c decides from the
 * model and the flags; each reads some flags and refuses the rest
 * (tfm_main_refuse_unused), so that no flag is accepted and ignored. */
typedef enum {
  TFM_MAIN_MODE_GENERATE,   /* a decoder continues a prompt */
  TFM_MAIN_MODE_SEQ2SEQ,    /* an encoder-decoder generates from a source */
  TFM_MAIN_MODE_PERPLEXITY, /* --perplexity FILE */
  TFM_MAIN_MODE_SIMILARITY, /* CLIP: texts against images */
  TFM_MAIN_MODE_TRANSCRIBE, /* a speech recognizer: audio files' text */
  TFM_MAIN_MODE_CALL,       /* one entry point (--call, encoders, teacher
                               forcing with --decoder-tokens) */
  TFM_MAIN_MODE_IMAGE,      /* a diffusion pipeline draws --prompt */
  TFM_MAIN_MODE_WHISPER,    /* Whisper transcribes audio of any length */
  TFM_MAIN_MODE_COUNT
} tfm_main_mode;

typedef struct {
  const char *prompt;
  const char *prompt_file;
  const char *tokens;
  const char *forced_tokens;
  long new_tokens;
  int print_ids;
  int tokenize;
  const char *logits_path;
  const char *step_logits_path;
  const char *prompt_cache_path; /* --prompt-cache: a saved session */
  int stats;
  long warmup;
  int32_t lookup_ngram, draft_max; /* speculative decoding (0: off) */
  const char *draft_path;          /* --draft: a draft model's library */
  float draft_p_min;               /* --draft-p-min (default 0.75) */
  int draft_p_min_given;
  const char *lora; /* --lora DIR[:SCALE]: a run-time LoRA adapter */
  const char *weights_path;
  tfm_call_options call;
  /* Every --text given, in order (call.text is the last): CLIP compares
   * several with its images. */
  const char **texts;
  int text_count;
  tfm_sampler_options sampler;
  const char *stop[TFM_MAIN_MAX_STOP_STRINGS];
  int stop_count;
  int ignore_eos;
  const char *grammar, *grammar_file; /* --grammar, --grammar-file */
  const char *json_schema, *json_schema_file; /* --json-schema(-file) */
  int beams; /* an encoder-decoder's beam search (1: greedy) */
  int new_tokens_given, rules_given; /* -n; any generation rule flag */
  float length_penalty;              /* a beam search's (default 1) */
  int early_stopping;
  tfm_generation_rules rules; /* an encoder-decoder's (suppressed: below) */
  const char *suppress;       /* --suppress "ids" */
  const char *previous_text;  /* --previous-text TEXT (Whisper's) */
  const char *perplexity;     /* --perplexity FILE */
  /* A diffusion pipeline's image (main_image.c). */
  const char *negative_prompt, *scheduler, *noise_path, *png_path;
  const char *init_image, *mask; /* image-to-image, inpainting */
  long steps, width, height;
  float guidance, strength;
  /* Whisper's long-form transcription (--format, --language, ...). */
  const char *language, *task, *initial_prompt;
  float temperature_increment; /* OpenAI's temperature_increment_on_fallback */
  double compression_ratio_threshold, logprob_threshold, no_speech_threshold;
  int no_condition_on_previous;
  int word_timestamps; /* --word-timestamps */
  double max_audio_seconds;
  /* A CTC recognizer's chunks (0: whole, or 30 s past its longest clip)
   * and strides (negative: a sixth of the chunk). */
  double chunk_seconds, stride_seconds;
  /* The flags given: bit i % 64 of word i / 64 for main_options.c's
   * flags[i]. */
  uint64_t given[2];
} tfm_main_options;

typedef enum {
  TFM_MAIN_OPTIONS_BAD = 0, /* reported on stderr with the usage */
  TFM_MAIN_OPTIONS_RUN = 1,
  TFM_MAIN_OPTIONS_HELP = 2 /* --help: print the usage, run nothing */
} tfm_main_options_result;

/* Parses argv into `o` (defaults where absent). Option values point into
 * argv; `o` owns only its list of image/audio files
 * (tfm_main_options_free), also after a failure. */
tfm_main_options_result tfm_main_parse_options(int argc, char **argv,
                                               tfm_main_options *o);
void tfm_main_options_free(tfm_main_options *o);

/* The diffusion mode (main_image.c): draws --prompt into -o's PNG and/or
 * --output's raw f32. Returns the exit status. */
int tfm_main_image(const char *argv0, tfm_model *model,
                   const tfm_main_options *o);

/* Reports the first flag given that `mode` does not read, with what to use
 * instead; returns 0 then, 1 when every flag given acts. */
int tfm_main_refuse_unused(const char *argv0, const tfm_main_options *o,
                           tfm_main_mode mode);

/* The transcription mode (main_transcribe.c): a speech recognizer (CTC)
 * prints each audio file's transcript. Returns the exit status. */
int tfm_main_transcribe(const char *argv0, tfm_model *model,
                        const tfm_main_options *o);

/* --format's transcript format (txt, json, srt, vtt); 0 after reporting
 * another (main_whisper.c). */
int tfm_main_transcript_format(const char *argv0, const char *name,
                               tfm_transcript_format *format);

/* Whether flag `name` was given. */
int tfm_main_flag_given(const tfm_main_options *o, const char *name);

/* Whisper's long-form mode (main_whisper.c): whether it runs (a Whisper
 * model with timestamp tokens, audio files, no single-window flag), and
 * the transcripts it prints. Returns the exit status. */
int tfm_main_is_whisper_long_form(const tfm_model *model,
                                  const tfm_main_options *o);
int tfm_main_whisper(const char *argv0, tfm_model *model,
                     const tfm_main_options *o);

/* The options, one a line, to `out`. */
void tfm_main_usage(FILE *out, const char *argv0);

#ifdef __cplusplus
}
#endif

#endif /* TFM_RUNTIME_CLI_MAIN_OPTIONS_H */
