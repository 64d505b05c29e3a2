/*===- main_internal.h - what the executable's two modes share ----------===*/

#ifndef TFM_RUNTIME_CLI_MAIN_INTERNAL_H
#define TFM_RUNTIME_CLI_MAIN_INTERNAL_H

#include "runtime/media/refusals.h"
#include "tfm/tfm_runtime.h"

#include <stddef.h>
#include <stdint.h>

/* Image and audio loading live in libtfmrt_media, which tfmc links only into
 * the executables of models that take images or audio (forcing these in
 * with --undefined): the command line refers to them weakly, so that a text
 * model's executable links none of libpng, libjpeg, libsndfile, libsoxr and
 * fftw. Elsewhere they are NULL, and the command line says so. */
#pragma weak tfm_image_load
#pragma weak tfm_image_tokens
#pragma weak tfm_audio_load
#pragma weak tfm_audio_read
#pragma weak tfm_audio_read_all
#pragma weak tfm_log_mel_all
#pragma weak tfm_image_write_png
#pragma weak tfm_image_read

#ifdef __cplusplus
extern "C" {
#endif

/* Parses "1 2 3" (spaces, tabs or commas between) into `ids` (at most
 * `capacity` stored); returns how many there were, or -1 after reporting
 * what is not an id (`flag` names the option). */
long tfm_main_parse_ids(const char *argv0, const char *flag, const char *text,
                        int32_t *ids, long capacity);

/* tfm_main_parse_ids into a new array (room for one more id, zeroed):
 * NULL after reporting a bad id or running out of memory. */
int32_t *tfm_main_parse_id_list(const char *argv0, const char *flag,
                                const char *text, long *count);
/* Writes `count` floats, little endian; 0 on failure. */
int tfm_main_write_floats(const char *path, const float *values, size_t count);

/* The raw little-endian f32 file `path` of exactly `shape` (malloc'd), or
 * NULL after saying what it holds instead ("'PATH' has N bytes; WHAT f32
 * [shape] (M bytes)"). */
float *tfm_main_read_f32_file(const char *argv0, const char *path,
                              const int64_t *shape, int32_t rank,
                              const char *what);

/* The raw little-endian f32 file `path` as the features input of `entry`
 * (its whole shape; malloc'd), or NULL after reporting a missing file or
 * a wrong size. */
float *tfm_main_read_features(const char *argv0, const tfm_entry_point *entry,
                              const char *path);

/* Prints "ARGV0: error: MESSAGE" to stderr; returns the exit status 1. */
int tfm_main_fail(const char *argv0, const char *message);

/* Reads a whole file into a NUL-terminated string (malloc'd), or NULL. */
char *tfm_main_read_text_file(const char *path);

/* --draft PATH: the model of the library tfmc built at `path` (it exports
 * NAME_model for libNAME.so), loaded through this runtime into *model;
 * *library is the dlopen handle, to close after freeing the model.
 * Nonzero after reporting what failed. */
int tfm_main_load_draft(const char *argv0, const char *path, void **library,
                        tfm_model **model);

/* --lora DIR[:SCALE]: loads the adapter into `model`'s slots; nonzero
 * after reporting what failed. */
int tfm_main_load_lora(const char *argv0, tfm_model *model,
                       const char *argument, int32_t *adapter);

/* What the generic mode runs, from the command line. */
typedef struct {
  const char *name;                   /* the entry point */
  const char *tokens, *token_types;   /* ids, "1 2 3" */
  const char *global_attention;       /* with --tokens: "1 0 0" */
  const char *decoder_tokens;         /* an encoder-decoder's decoder ids */
  const char *text, *text_pair;       /* text through the tokenizer */
  const char *text_file;              /* one input per line */
  const char *pixels;                 /* raw f32 image, preprocessed */
  const char **images;                /* PNG or JPEG files, in order */
  int image_count;
  int preprocess;                     /* write the preprocessed image only */
  const char *output_path;            /* raw f32 of every output */
  const char *format;                 /* text (default), json or f32 */
  int tokenize;                       /* print ids and types, run nothing */
  int truncate;                       /* cut text past the context */
  int batch;                          /* --text-file lines per call (0: 32) */
} tfm_call_options;

/* Whether `model` takes images in its prompts (a vision-language model:
 * @encode_image and @prefill_embeddings). */
int tfm_main_takes_images(tfm_model *model);

/* The images of the command line (`call`'s files, then --pixels) encoded
 * and given to `session`, and the prompt *ids (n of them, malloc'd)
 * widened where it holds one placeholder an image (main_vlm.c); a prompt
 * with placeholders and no image is refused. Nonzero after reporting. */
int tfm_main_prompt_images(const char *argv0, tfm_model *model,
                           tfm_session *session, const tfm_call_options *call,
                           int32_t **ids, int64_t *n);

/* The generic mode (main_call.c): runs an entry point on token ids (types
 * default to zeros) or on text, and writes its output to `output_path` (raw
 * f32) or prints it (as text or one JSON array per input). Returns the exit
 * status. */
/* The encoder-decoder mode (main_seq2seq.c): generates from a source. */
typedef struct {
  const char *tokens;           /* the source ids */
  const char *text, *text_file; /* or text: one source, one per line */
  const char *features;         /* or raw f32 features (Whisper's log-mel) */
  const char **audio;           /* or audio files, one output line each */
  int audio_count;
  int preprocess;               /* write the features of audio, run nothing */
  const char *output_path;      /* where --preprocess writes them */
  int print_ids;                /* ids even where there is a tokenizer */
  int tokenize;                 /* print each source's ids, run nothing */
  long new_tokens;              /* -n */
  tfm_sampler_options sampler;
  int ignore_eos;
  const char *step_logits_path; /* each step's logits, f32 [steps, vocab] */
  const char *forced_tokens;    /* --force-tokens: teacher forcing */
  int beams;                    /* --beams: beam search past 1 */
  tfm_generation_rules rules;   /* suppressed ids from `suppress` if given */
  const char *suppress;         /* --suppress "ids" */
  const char *previous_text;    /* --previous-text TEXT (Whisper's) */
  float length_penalty;         /* a beam search's */
  int early_stopping;
} tfm_seq2seq_command;
int tfm_main_seq2seq(const char *argv0, tfm_model *model,
                     const tfm_seq2seq_command *command);

/* --perplexity (main_perplexity.c): a decoder's perplexity on the text file
 * `path`, printed as JSON. Returns the exit status. */
int tfm_main_perplexity(const char *argv0, tfm_model *model,
                        const char *path);

int tfm_main_call(const char *argv0, tfm_model *model,
                  const tfm_call_options *options);

/* The similarity mode (main_similarity.c): a model with @embed_text and
 * @embed_image (CLIPModel) compares each image with every text. */
typedef struct {
  const char *const *texts; /* --text, in order */
  int text_count;
  const char *text_file; /* and one text per line */
  const char **images;
  int image_count;
} tfm_similarity_options;
/* Whether `model` compares texts with images. */
int tfm_main_is_similarity(const tfm_model *model);
/* A text's `count` ids padded to the model's context where the model's
 * texts are (desc->pad_texts: SigLIP's); `ids` has room for max_context
 * of them. Returns the new count. */
int64_t tfm_main_pad_text(const tfm_model_desc *desc, int32_t *ids,
                          int64_t count);
int tfm_main_similarity(const char *argv0, tfm_model *model,
                        const tfm_similarity_options *options);

/* Whether `model` is a speech recognizer (CTC), whose transcripts
 * main_transcribe.c prints (tfm_main_transcribe, main_options.h). */
int tfm_main_is_transcription(const tfm_model *model);

#ifdef __cplusplus
}
#endif

#endif /* TFM_RUNTIME_CLI_MAIN_INTERNAL_H */
