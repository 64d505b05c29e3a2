/*===- tfm_model_abi.h - what a compiled model exports -----------*- C -*-===//
 *
 * The contract between tfmc's generated code and the runtime: a versioned
 * description of the model (tfm_model_desc) with a table of its entry
 * points, each with its input, output and cache descriptors, a generated
 * call that returns a status, and the function itself. Entry points follow
 * MLIR's C interface (`llvm.emit_c_interface`): memrefs are passed as
 * pointers to descriptors, and the result descriptor (from
 * _mlir_memref_to_llvm_alloc (buffer_cache.h), owned by the caller) comes
 * first.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_MODEL_ABI_H
#define TFM_MODEL_ABI_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  void *allocated;
  void *aligned;
  int64_t offset;
  int64_t sizes[1];
  int64_t strides[1];
} tfm_memref1d;

typedef struct {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[1];
  int64_t strides[1];
} tfm_memref1d_f32;

typedef struct {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[2];
  int64_t strides[2];
} tfm_memref2d_f32;

typedef struct {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[3];
  int64_t strides[3];
} tfm_memref3d_f32;

typedef struct {
  float *allocated;
  float *aligned;
  int64_t offset;
  int64_t sizes[5];
  int64_t strides[5];
} tfm_memref5d_f32;

/* The version of this contract. A compiled model records the version it
 * was generated for; tfm_model_load refuses another (TFM_ERROR_ABI). Bump
 * it on any change to the structures below or to the generated calls. */
#define TFM_ABI_VERSION 34

/* What libtfmrt.so exports: the API of tfm_runtime.h and what generated
 * code calls (the kernels, the allocation functions, the call frame); the
 * rest of the runtime is hidden (built with -fvisibility=hidden). */
#define TFM_EXPORT __attribute__((visibility("default")))

/* A memref descriptor of any rank and element type, as MLIR's C interface
 * lays it out. */
#define TFM_MEMREF(T, RANK)                                                   \
  struct {                                                                    \
    T *allocated;                                                             \
    T *aligned;                                                               \
    int64_t offset;                                                           \
    int64_t sizes[RANK];                                                      \
    int64_t strides[RANK];                                                    \
  }

/* What an entry point's argument or result carries (tfm.input, tfm.output
 * in the IR). */
typedef enum {
  TFM_ROLE_TOKEN_IDS = 0,      /* int32 [n] */
  TFM_ROLE_FEATURES = 1,       /* f32, any rank */
  TFM_ROLE_START_POSITION = 2, /* int64 scalar */
  TFM_ROLE_CACHE_SLOT = 3,     /* int64 scalar */
  TFM_ROLE_TOKEN_TYPE_IDS = 4, /* int32 [n]: segments (BERT's token types),
                                  as many as the token ids */
  /* int32 [sequences]: the lengths of the sequences packed end to end in
   * the token ids (an @<name>_batch entry point, tfm-pack-sequences); each
   * at least 1 and at most max_context, summing to the token count. */
  TFM_ROLE_SEQUENCE_LENGTHS = 5,
  /* int32 [n]: an encoder-decoder's decoder ids (the source ids are
   * TFM_ROLE_TOKEN_IDS): teacher forcing, or the tokens generated so far. */
  TFM_ROLE_DECODER_TOKEN_IDS = 6,
  /* int64 scalar: how many source positions an encoder-decoder's
   * cross-attention cache holds (what @encode was given). */
  TFM_ROLE_ENCODED_LENGTH = 7,
  /* int32 [n]: each row's position (@decode_batch: one token of each of n
   * sequences; @prefill_batch: each token of its chunks), in [0, the
   * cache's capacity). */
  TFM_ROLE_POSITIONS = 8,
  /* int32 [n]: which sequence of the batched cache each row
   * (@decode_batch) or each chunk (@prefill_batch) reads and appends to, in
   * [0, the cache's sequences), no two the same. */
  TFM_ROLE_CACHE_SEQUENCES = 9,
  /* int32 [chunks]: @prefill_batch's chunks, each at least one token of
   * one sequence at consecutive positions, packed end to end in the token
   * ids (summing to the token count). */
  TFM_ROLE_CHUNK_LENGTHS = 10,
  /* int32 [n], as many as the token ids: nonzero marks a global token,
   * which attends to and is attended by every token (Longformer's
   * global_attention_mask); the others attend within their window. */
  TFM_ROLE_GLOBAL_ATTENTION = 11,
  TFM_ROLE_LOGITS = 16,        /* f32 [positions, vocab]; [sequences, labels]
                                  from a packed classifier */
  TFM_ROLE_HIDDEN_STATES = 17, /* f32 [positions, hidden] */
  TFM_ROLE_EMBEDDING = 18,     /* f32 [hidden]; [sequences, hidden] packed */
  /* f32 [positions, heads, source positions]: cross-attention probabilities
   * of a Whisper decoder's alignment heads (@align) */
  TFM_ROLE_ALIGNMENT_WEIGHTS = 19
} tfm_role;

/* TFM_DTYPE_I8: bytes, an int8 KV cache's (rows of codes and their f32
 * scale, tfm.quantize_rows); TFM_DTYPE_BF16 and TFM_DTYPE_F16: a bf16 or
 * f16 KV cache's values. */
typedef enum {
  TFM_DTYPE_F32 = 0,
  TFM_DTYPE_I32 = 1,
  TFM_DTYPE_I64 = 2,
  TFM_DTYPE_I8 = 3,
  TFM_DTYPE_BF16 = 4,
  TFM_DTYPE_F16 = 5
} tfm_dtype;

/* Bytes of one element of `dtype`. */
static inline int64_t tfm_dtype_bytes(int32_t dtype) {
  switch (dtype) {
  case TFM_DTYPE_I64:
    return 8;
  case TFM_DTYPE_I8:
    return 1;
  case TFM_DTYPE_BF16:
  case TFM_DTYPE_F16:
    return 2;
  default:
    return 4;
  }
}

/* State an entry point keeps between calls (tfm.cache in the IR). */
typedef enum {
  TFM_CACHE_SELF_ATTENTION = 0,  /* keys and values of the tokens so far */
  TFM_CACHE_CROSS_ATTENTION = 1, /* keys and values of an encoder's output */
  /* Each windowed layer's ring of its window's last positions, rewritten
   * in place (position p at row p mod its window): beside a batched
   * self-attention cache of the other layers where layers' windows differ,
   * [-1, rings, 2, window, kv_heads, head_dim]; and beside @prefill's
   * cache, [rings, 2, window, kv_heads, head_dim], where the windowed
   * layers' keys are of another shape than the others' (Gemma 4). */
  TFM_CACHE_SELF_ATTENTION_RINGS = 2,
  /* Recurrent layers' states (Gated DeltaNet's), f32 [elements] a session's
   * or [-1, elements] batched: rewritten in place by each call, read as
   * zeros by a call at position 0, so never shared between sequences. */
  TFM_CACHE_RECURRENT_STATE = 3
} tfm_cache_kind;

#define TFM_MAX_RANK 6

/* One input or output of an entry point: its role, dtype and shape (-1: a
 * dimension given at the call; rank 0: a scalar). */
typedef struct {
  int32_t role;  /* tfm_role */
  int32_t dtype; /* tfm_dtype */
  int32_t rank;
  int64_t shape[TFM_MAX_RANK];
  /* Integer inputs that index a table (token ids, token types): every
   * value must be in [0, bound), checked before the call; 0: unchecked. */
  int64_t bound;
} tfm_tensor_desc;

/* One cache of the model: a tensor that the runtime allocates per session
 * and entry points update in place. A self-attention cache is [layers, 2,
 * capacity, kv_heads, head_dim] (static; where layers' windows differ, the
 * first dimension counts planes, windowed layers sharing them as rings of
 * their window); @decode_batch's is [-1, layers, 2, capacity, kv_heads,
 * head_dim], as many sequences as its caller allocates (where layers'
 * windows differ, its first dimension after the sequences counts the
 * layers without a window, and a TFM_CACHE_SELF_ATTENTION_RINGS cache
 * beside it holds the others). A latent cache (multi-head latent
 * attention, whose values are the leading columns of its keys) has one
 * plane a layer, [layers, 1, capacity, 1, width]. */
typedef struct {
  int32_t kind;  /* tfm_cache_kind */
  int32_t dtype; /* tfm_dtype */
  int32_t rank;
  int64_t shape[TFM_MAX_RANK];
  /* Sliding-window attention in every layer (0: none): the runtime then
   * keeps only the last window - 1 positions when the cache is full. */
  int64_t window;
} tfm_cache_desc;

/* A tensor passed to or returned by an entry point. `data` points at the
 * elements (an int64 for a scalar). Outputs are allocated by the model and
 * released with tfm_tensor_release (tfm_runtime.h), which `owner` is for. */
typedef struct {
  void *data;
  int32_t dtype; /* tfm_dtype */
  int32_t rank;
  int64_t shape[TFM_MAX_RANK];
  void *owner;
} tfm_tensor;

/* The generated call of an entry point: `inputs` in the order of the entry
 * point's inputs, `caches` the model's caches the entry point uses (in the
 * order of its `caches` list), `outputs` filled in. Returns a
 * tfm_status_code: TFM_OK, or TFM_ERROR_OUT_OF_MEMORY when the generated
 * code could not allocate (everything it had allocated is released). Shapes
 * and values are checked by the caller (tfm_model_call), not here. */
typedef int32_t (*tfm_entry_call_fn)(const tfm_memref1d *weights,
                                     const tfm_tensor *inputs,
                                     tfm_tensor *const *caches,
                                     tfm_tensor *outputs);

typedef struct {
  const char *name; /* "forward", "prefill", "decode", "encode", ... */
  int32_t num_inputs;
  const tfm_tensor_desc *inputs;
  int32_t num_outputs;
  const tfm_tensor_desc *outputs;
  int32_t num_caches;
  const int32_t *caches; /* indices into tfm_model_desc.caches */
  tfm_entry_call_fn call;
  /* The function itself (MLIR's C interface), for the runtime's own fast
   * paths that know its signature: language models' sessions call
   * @prefill and @decode as tfm_prefill_fn, @forward as tfm_forward_fn. */
  void (*function)(void);
} tfm_entry_point;

/* @forward: logits of every position of `tokens`. */
typedef void (*tfm_forward_fn)(tfm_memref2d_f32 *logits,
                               tfm_memref1d *weights, tfm_memref1d *tokens);

/* @prefill and @decode (tfm-kv-cache): `tokens` at positions [start, start
 * + n), their keys and values appended to `cache` in place at slots [slot,
 * slot + n), attending over slots [0, slot + n); logits of the last
 * position ([1, vocab]). @decode takes exactly one token. */
typedef void (*tfm_prefill_fn)(tfm_memref2d_f32 *logits,
                               tfm_memref1d *weights, tfm_memref1d *tokens,
                               int64_t start, int64_t slot,
                               tfm_memref5d_f32 *cache);

/* @prefill_embeddings of a vision-language model takes, in place of
 * `tokens`, f32 rows [n, hidden] (an image's tokens) as a
 * tfm_memref2d_f32, its other arguments those of the model's @prefill. */

/* @prefill and @decode of a model with recurrent layers: as
 * tfm_prefill_fn, and the sequence's recurrent states (f32 [elements],
 * TFM_CACHE_RECURRENT_STATE) updated in place, read as zeros where start
 * is 0. */
typedef void (*tfm_prefill_state_fn)(tfm_memref2d_f32 *logits,
                                     tfm_memref1d *weights,
                                     tfm_memref1d *tokens, int64_t start,
                                     int64_t slot, tfm_memref5d_f32 *cache,
                                     tfm_memref1d *state);

/* @prefill and @decode of a model whose windowed layers' keys differ from
 * the others' (Gemma 4's sliding layers): as tfm_prefill_fn, and those
 * layers' rings (TFM_CACHE_SELF_ATTENTION_RINGS, [rings, 2, window,
 * kv_heads, head_dim], position p at row p mod the layer's window). */
typedef void (*tfm_prefill_rings_fn)(tfm_memref2d_f32 *logits,
                                     tfm_memref1d *weights,
                                     tfm_memref1d *tokens, int64_t start,
                                     int64_t slot, tfm_memref5d_f32 *cache,
                                     tfm_memref5d_f32 *rings);
/* Both: the rings, then the recurrent states. */
typedef void (*tfm_prefill_rings_state_fn)(
    tfm_memref2d_f32 *logits, tfm_memref1d *weights, tfm_memref1d *tokens,
    int64_t start, int64_t slot, tfm_memref5d_f32 *cache,
    tfm_memref5d_f32 *rings, tfm_memref1d *state);

/* How an image model's input is made from a decoded RGB image (its
 * preprocessor_config.json, as transformers' image processors apply it):
 * resize with one of Pillow's filters, center crop, rescale the 0-255
 * values, normalize each channel; the result is f32 [3, height, width]. */
typedef enum {
  TFM_RESAMPLE_NEAREST = 0, /* Pillow's Image.Resampling numbers */
  TFM_RESAMPLE_LANCZOS = 1,
  TFM_RESAMPLE_BILINEAR = 2,
  TFM_RESAMPLE_BICUBIC = 3,
  TFM_RESAMPLE_BOX = 4,
  TFM_RESAMPLE_HAMMING = 5
} tfm_resample;

typedef struct {
  /* Resize to resize_height x resize_width, or (when those are 0) so that
   * the shorter side is shortest_edge; all 0: no resize. */
  int64_t resize_height, resize_width, shortest_edge;
  int32_t resample; /* tfm_resample */
  /* Then the center crop_height x crop_width (0: none). */
  int64_t crop_height, crop_width;
  double rescale; /* values times this (0: not rescaled) */
  int32_t normalize; /* then (value - mean[c]) / std[c] */
  float mean[3], std[3];
  /* LLaVA-NeXT's any-resolution tiles (image_grid_pinpoints): an image is
   * the whole of it squashed to shortest_edge square, then the crops of
   * it resized into the best of these sizes and padded centred, each
   * preprocessed as above (tfm_image_tiles). 0 and NULL: one image. */
  int32_t num_grid_pinpoints;
  const int64_t *grid_pinpoints; /* [num_grid_pinpoints][2]: height, width */
  /* Idefics3's (SmolVLM's) images: first resized so that the longer side
   * is longest_edge, keeping the aspect (its processor's rounding); then
   * with split_tiles resized to multiples of the square resize_height, cut
   * into tiles of that row by row and squashed to one more, last
   * (tfm_image_tiles); without, squashed to the square. 0: none. */
  int64_t longest_edge;
  int32_t split_tiles;
} tfm_image_preprocessing;

/* How a speech model's input is made from audio (its
 * preprocessor_config.json): mono samples at sampling_rate become f32
 * features [mel_bins, frames]. WhisperFeatureExtractor (kaldi 0): the
 * samples padded or cut to `samples`, log-mel features of frames =
 * samples / hop_length (tfm_log_mel). ASTFeatureExtractor (kaldi 1):
 * Kaldi-style log filterbanks of window_length-sample frames every
 * hop_length (an n_fft-point FFT), padded with zeros or cut to `frames`,
 * then with `normalize` (x - mean) / (2 std) (tfm_kaldi_fbank); `samples`
 * is what the frames span. */
typedef struct {
  int64_t mel_bins, sampling_rate, n_fft, hop_length, samples;
  int32_t kaldi, normalize;
  int64_t window_length, frames;
  float mean, std;
} tfm_audio_preprocessing;

/* A speech model that hears raw samples (Wav2Vec2, HuBERT): its entry
 * point takes mono f32 samples at sampling_rate (at least min_samples, its
 * feature encoder's receptive field; at most the model's max_context) and
 * returns a row per frame_samples samples. A recognizer (a CTC head,
 * `blank` >= 0; -1 otherwise) returns [frames, labels] logits, its labels
 * being the CTC vocabulary; greedy decoding (tfm_ctc_decode) merges
 * repeated labels, drops `blank`, spells `word_delimiter` (-1: none) as a
 * space, with `clean_up` joins contractions and punctuation to the word
 * before and with `lowercase` lowercases. */
typedef struct {
  int64_t sampling_rate, min_samples, frame_samples;
  int32_t blank, word_delimiter;
  int32_t clean_up, lowercase;
} tfm_waveform_input;

/* An encoder-decoder's generation defaults, from its generation_config.json
 * (or config.json): what transformers' generate() does unless told
 * otherwise. */
typedef struct {
  int32_t num_beams;            /* 1: greedy */
  int64_t max_new_tokens;       /* max_length less the start token; 0: none */
  int64_t min_new_tokens;       /* min_length less the start token */
  int32_t no_repeat_ngram_size; /* 0: off */
  int32_t forced_eos;           /* forced_eos_token_id is the eos token */
  int32_t forced_bos;           /* forced_bos_token_id; -1: none */
  float length_penalty;
  int32_t early_stopping;
  int32_t num_suppressed;       /* bad_words_ids of one token, suppress_tokens */
  const int32_t *suppressed;
  int32_t num_bad_words;        /* bad_words_ids of several tokens: */
  const int32_t *bad_word_lengths; /* their lengths, */
  const int32_t *bad_words;        /* their tokens end to end */
  int32_t num_prompt;           /* forced_decoder_ids after the start token */
  const int32_t *prompt;        /* -1: a null, the language detected */
  int32_t num_begin_suppressed; /* begin_suppress_tokens */
  const int32_t *begin_suppressed;
  /* Whisper's special tokens (-1: none): <|notimestamps|> (the timestamps
   * follow it; <|nospeech|> comes right before it), the latest first
   * timestamp (max_initial_timestamp_index), <|startofprev|>, the tasks
   * (task_to_id), and the languages (lang_to_id's ids, in id order). */
  int32_t no_timestamps, max_initial_timestamp, start_of_previous;
  int32_t transcribe, translate;
  int32_t num_languages;
  const int32_t *languages;
  /* Word timestamps (@align, the alignment heads' weights): the median
   * filter's width over the frames (config.json's median_filter_width). */
  int32_t median_filter_width;
} tfm_generation_defaults;

/* A Stable Diffusion pipeline's constants (tfm_image_generate): the
 * latents @denoise and @decode_latents take ([latent_channels,
 * latent_height, latent_width]; the UNet reads unet_in_channels, 9 for
 * inpainting), the image's size over theirs (vae_scale_factor), the VAE's
 * scaling_factor, the text encoder's tokens and the pad token prompts are
 * padded with, and the folder's scheduler_config.json: its scalar fields
 * as "key=value" lines, strings in double quotes, numbers and true/false
 * bare (runtime/diffusion reads the keys it knows). */
typedef struct {
  int64_t latent_channels, unet_in_channels, latent_height, latent_width;
  int64_t vae_scale_factor, text_tokens, pad_token;
  /* SDXL: the second tokenizer's pad token (-1: one text encoder), and
   * whether a negative prompt left out is zeros (the pipeline's
   * force_zeros_for_empty_prompt) rather than the empty prompt's states. */
  int64_t pad_token_2, force_zeros_for_empty_prompt;
  float scaling_factor;
  const char *scheduler_config;
} tfm_diffusion_desc;

/* Everything the runtime needs to know about one compiled model; tfmc
 * generates one constant instance per model. */
typedef enum {
  TFM_WEIGHTS_NOT_APPENDED = 0,
  TFM_WEIGHTS_APPENDED_TO_EXECUTABLE = 1, /* read from /proc/self/exe */
  TFM_WEIGHTS_APPENDED_TO_LIBRARY = 2     /* the shared object (dladdr) */
} tfm_weights_appended;

/* Run-time LoRA adapters (tfmc --lora-slots): the projections whose
 * outputs take the update of the adapter their row runs with, each by its
 * checkpoint weight's name and features. A slot holds, for each target in
 * turn, A [rank, in] and then B [out, rank] (an adapter of a lower rank
 * padded with zeros, B times the adapter's scale); tfm_rt_lora
 * (runtime_kernels.h) reads them. */
#define TFM_LORA_MAX_SLOTS 64
#define TFM_LORA_MAX_RANK 256
typedef struct {
  const char *weight; /* "model.layers.0.self_attn.q_proj.weight" */
  int64_t in_features, out_features;
} tfm_lora_target;

typedef struct {
  int32_t slots; /* adapters loaded at once */
  int32_t rank;  /* the largest rank a slot holds */
  int32_t num_targets;
  const tfm_lora_target *targets;
} tfm_lora_desc;

/* What a model's code runs on (tfmc --target). */
typedef enum {
  TFM_TARGET_CPU = 0,
  /* NVIDIA GPUs: the entry points launch kernels through the CUDA driver
   * (cuda_driver.h); the weights and caches live in GPU memory, which the
   * runtime allocates; inputs and outputs are host memory, as on the CPU. */
  TFM_TARGET_CUDA = 1
} tfm_target;

typedef struct tfm_model_desc {
  /* First, so that any runtime can read it: TFM_ABI_VERSION. */
  uint32_t abi_version;
  int32_t target; /* tfm_target */
  const char *name;
  const char *family; /* config.json's model_type */
  int64_t vocab_size;
  int64_t max_context;
  int32_t bos_token; /* -1: none */
  int32_t eos_token; /* -1: none */
  /* Whether encoded prompts start with BOS (LLaMA's tokenizers do, GPT-2's
   * does not). */
  int32_t add_bos;
  /* Where the weights are: embedded (`weights`; static libraries), in a
   * side file (`weights_file`, relative paths resolved beside the
   * executable), or appended to the file that holds this description
   * (`weights_appended`, tfm_format.h). */
  const uint8_t *weights;
  const char *weights_file;
  tfm_weights_appended weights_appended;
  uint64_t weights_size;
  uint64_t weights_checksum;
  /* Bytes of weights one @decode step reads: every matrix it multiplies
   * by, in its stored format, and one row of each table it only looks up
   * (0: no @decode). What bounds a decode step by memory bandwidth. */
  uint64_t decode_weight_bytes;
  /* Tokenizer blob (tfm_format.h), or NULL when compiled without one. */
  const uint8_t *tokenizer;
  uint64_t tokenizer_size;
  /* The chat template (Jinja source: tokenizer_config.json's
   * chat_template), or NULL. tfm-serve renders conversations with it. */
  const char *chat_template;
  /* A classifier's class names by id (a config's id2label), which index
   * the last dimension of its logits; 0 and NULL otherwise. */
  int32_t num_labels;
  const char *const *labels;
  /* An image model's preprocessing (tfm_image_load), or NULL. */
  const tfm_image_preprocessing *image_preprocessing;
  /* An encoder-decoder's generation defaults, or NULL. */
  const tfm_generation_defaults *generation;
  /* A speech model's preprocessing (tfm_audio_load), or NULL. */
  const tfm_audio_preprocessing *audio_preprocessing;
  int32_t num_entry_points;
  const tfm_entry_point *entry_points;
  int32_t num_caches;
  const tfm_cache_desc *caches;
  /* Tensor parallelism or pipeline stages (tfmc --ranks,
   * --pipeline-stages): the MPI processes the model runs
   * as (0 or 1: one). Each rank's weights are a section of the weights
   * file (or of what is appended), `rank_stride` bytes after the previous
   * rank's, `weights_size` bytes each, with its own checksum
   * (`weights_checksum` is rank 0's). `replicated_weights_size` of them
   * are alike on every rank (embeddings, norms, the LM head); the rest is
   * the rank's part of the split. */
  int32_t ranks;
  uint64_t rank_stride;
  const uint64_t *rank_checksums;
  uint64_t replicated_weights_size;
  /* CLIP: the scale of its text-image similarities, exp(logit_scale)
   * (logits_per_image = scale · cosine); 0 for other models. */
  float logit_scale;
  /* A speech model's samples and a recognizer's decoding
   * (tfm_transcribe), or NULL. */
  const tfm_waveform_input *waveform;
  /* A Stable Diffusion pipeline's constants, or NULL. */
  const tfm_diffusion_desc *diffusion;
  /* Tokens that end generation besides eos_token: a config's and its
   * generation_config.json's other eos_token_ids (Llama 3 Instruct's
   * <|eot_id|>, Gemma's <end_of_turn>, gpt-oss's <|call|>), GGUF's eot and
   * eom tokens; 0 and NULL: none (tfm_ends_generation). */
  int32_t num_stop_tokens;
  const int32_t *stop_tokens;
  /* Slots for LoRA adapters loaded at run time (tfmc --lora-slots), or
   * NULL. */
  const tfm_lora_desc *lora;
  /* Pipeline stages (tfmc --pipeline-stages), each a group of ranks /
   * pipeline_stages consecutive ranks (its tensor-parallel ranks, tfmc
   * --ranks); 0 or 1: none. */
  int32_t pipeline_stages;
  /* A vision-language model's image placeholder (tfmc's tfm.image_token):
   * the id whose positions in a prompt take an image's rows (@encode_image)
   * through @prefill_embeddings; read only where the model has that entry
   * point. */
  int32_t image_token;
  /* 1 where an image's rows attend to each other both ways (Gemma 3):
   * the rows of one image must then run in one @prefill_embeddings call
   * (or one step of the engine), which the runtime keeps to; 0: causal
   * rows, which may run in any chunks. */
  int32_t image_rows_bidirectional;
  /* 1 where the model's processor writes tokens of its own around an
   * image's rows (SmolVLM, Idefics3; tfm_image_prompt_ids), which
   * image_tile_tokens names: the token around each tile
   * (<fake_token_around_image>) and the one before the whole image
   * (<global-img>). 0: an image is its rows' placeholders alone. */
  int32_t image_tiles_marked;
  int32_t image_tile_tokens[2];
  /* SigLIP: its text-image scores are each pair's own
   * sigmoid(logit_scale · cosine + logit_bias) (sigmoid_scores 1), not
   * CLIP's softmax over the texts; and the texts the runtime tokenizes for
   * it are padded to max_context with text_pad_token (pad_texts 1), as its
   * processor is called (padding="max_length"): its text tower pools its
   * last position. */
  int32_t sigmoid_scores;
  float logit_bias;
  int32_t pad_texts;
  int32_t text_pad_token;
} tfm_model_desc;

/* What generated entry points call around the model's code (runtime,
 * call_frame.c): allocations made between begin and end are recorded, and
 * a failing one jumps back to `jump` (set by the generated call with
 * setjmp) after releasing them, so that an allocation failure becomes a
 * status instead of a write through NULL. Not for applications. */
typedef struct tfm_call_frame tfm_call_frame;
TFM_EXPORT tfm_call_frame *tfm_call_begin(void *jump);
TFM_EXPORT void tfm_call_end(tfm_call_frame *frame);

#ifdef __cplusplus
}
#endif

#endif /* TFM_MODEL_ABI_H */
