/*===- tfm_runtime.h - the tfmc runtime C API --------------------*- C -*-===//
 *
 * Loading a compiled model (its weights verified against the checksum it was
 * compiled with), sessions holding a KV cache, generation with sampling, and
 * tokenization. The contract of every function:
 *
 * Errors: no function aborts or exits on bad input. Functions returning
 *   tfm_status_code fill the optional `status` (may be NULL) with the code
 *   and a message that says what and where; on failure their outputs are
 *   untouched unless documented otherwise. NULL handles are reported as
 *   TFM_ERROR_INVALID_ARGUMENT; *_free(NULL) does nothing.
 * Ownership: whoever calls *_new / *_load owns the result and frees it with
 *   the matching *_free. Pointers the API returns (descriptions, tokenizers,
 *   token arrays, decoded pieces) are owned by the object they come from and
 *   live as long as it does.
 * Lifetimes: a session must be freed before its model; using a session or
 *   tokenizer of a freed model is undefined (not detected).
 * Threads: a model (and its tokenizer) may be used from any number of
 *   threads at once; a session or a sampler by one thread at a time.
 *   Different sessions share nothing but the read-only weights.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_H
#define TFM_RUNTIME_H

#include "tfm/tfm_model_abi.h"

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Every function declared here is exported from libtfmrt.so. */
#pragma GCC visibility push(default)

typedef enum {
  TFM_OK = 0,
  TFM_ERROR_INVALID_ARGUMENT = 1, /* NULL handle, bad option value */
  TFM_ERROR_OUT_OF_RANGE = 2,     /* token id outside the vocabulary */
  TFM_ERROR_CONTEXT_OVERFLOW = 3, /* sequence longer than the max context */
  TFM_ERROR_WEIGHTS = 4,          /* missing or mismatched weights file */
  TFM_ERROR_TOKENIZER = 5,        /* no tokenizer, or a malformed one */
  TFM_ERROR_OUT_OF_MEMORY = 6,
  TFM_ERROR_IO = 7,
  TFM_ERROR_ABI = 8,              /* model built for another runtime ABI */
  TFM_ERROR_NOT_FOUND = 9,        /* no such entry point */
  TFM_ERROR_IMAGE = 10,           /* unreadable, malformed or unsupported image */
  TFM_ERROR_AUDIO = 11,           /* unreadable, malformed or unsupported audio */
  TFM_ERROR_DEVICE = 12           /* a --target=cuda model without a usable
                                     GPU, or a GPU error */
} tfm_status_code;

typedef struct {
  tfm_status_code code;
  char message[512];
} tfm_status;

typedef struct tfm_model tfm_model;
typedef struct tfm_session tfm_session;
typedef struct tfm_tokenizer tfm_tokenizer;

/* Loads `desc` (a generated NAME_model): its embedded weights, or the side
 * file (`weights_path` when not NULL, else desc->weights_file beside the
 * executable) mapped read-only. Fails with TFM_ERROR_ABI when the model was
 * generated for another version of this contract (TFM_ABI_VERSION), with
 * TFM_ERROR_WEIGHTS when the file is missing or its size or checksum
 * differs from what the model was compiled with. `desc` must outlive the
 * model (generated ones are static). */
tfm_status_code tfm_model_load(const tfm_model_desc *desc,
                               const char *weights_path, tfm_model **model,
                               tfm_status *status);
/* Checks that the file at `path` holds the whole ELF image its headers
 * describe (an ELF header of this machine's kind, the program headers,
 * every segment and the section headers within the file's size), before a
 * program dlopens it: dlopen maps a library cut short inside its image and
 * the process dies of SIGBUS at the first touch of a missing page.
 * TFM_ERROR_IO names the file, its size and the size its image needs (or
 * what else is wrong with it); a file cut only in the weights appended
 * after the image passes, and tfm_model_load refuses it. */
tfm_status_code tfm_model_library_check(const char *path, tfm_status *status);
/* Frees the model and its tokenizer; unmaps a side file. */
void tfm_model_free(tfm_model *model);
/* The description the model was loaded from (sizes, special tokens). */
const tfm_model_desc *tfm_model_get_desc(const tfm_model *model);
/* Whether `token` ends generation: eos_token, or one of stop_tokens. */
int tfm_ends_generation(const tfm_model_desc *desc, int32_t token);

/* Runs @forward over `tokens[0..n)` (no cache) and writes the logits of
 * every position to `logits` ([n, vocab], caller-allocated). Checks ids
 * (TFM_ERROR_OUT_OF_RANGE) and length (TFM_ERROR_CONTEXT_OVERFLOW) first.
 * Thread-safe. */
tfm_status_code tfm_forward(tfm_model *model, const int32_t *tokens, int64_t n,
                            float *logits, tfm_status *status);

/*===--------------------------------------------------------------------===
 * Memory and ranks: what a program reports beside its timings (the command
 * line's --stats, a server's metrics).
 *===--------------------------------------------------------------------===*/

/* The most bytes the compiled code of this process has had allocated at
 * once, all models together: activations, the scratch of calls in progress
 * and their outputs (not weights, caches or sessions). */
int64_t tfm_activation_peak_bytes(void);

/* One rank of a model split over MPI ranks (tfmc --ranks,
 * --pipeline-stages). */
typedef struct {
  uint64_t weights_bytes; /* the weights it maps: its part and the
                             replicated ones (desc->replicated_weights_size) */
  int64_t peak_rss_bytes;
  int64_t all_reduces;       /* MPI_Allreduce calls of the model's code */
  double all_reduce_seconds; /* time in them */
  int64_t stage_transfers;   /* pipeline stages' rows sent and received */
  double stage_seconds;      /* time in them, waiting for the other stage
                                included */
  double call_seconds;       /* time in the model's code, the waits above
                                included: less them, the rank's own work, which
                                shows how evenly the split shares it */
} tfm_rank_stats;

/* Rank 0 of a split model (the process that runs the program): every
 * rank's figures, `out` holding desc->ranks entries, gathered from the
 * other ranks (which answer between calls). TFM_ERROR_INVALID_ARGUMENT for
 * a model that is not split. */
tfm_status_code tfm_model_rank_stats(const tfm_model *model,
                                     tfm_rank_stats *out, tfm_status *status);

/*===--------------------------------------------------------------------===
 * Any entry point: encoders, classifiers, @forward, ... The description's
 * table (desc->entry_points) says what each takes and returns.
 *===--------------------------------------------------------------------===*/

/* The entry point called `name`, or NULL. */
const tfm_entry_point *tfm_model_entry_point(const tfm_model *model,
                                             const char *name);

/* Calls entry point `name` with `inputs` (its num_inputs, in order, of the
 * dtype and rank it declares; token ids are checked against the vocabulary
 * and lengths against the maximum context) and the tensors of the caches
 * it lists (`caches[i]` for its caches[i]; NULL when it has none), and
 * fills `outputs` (its num_outputs), which the caller releases with
 * tfm_tensor_release. Errors: TFM_ERROR_NOT_FOUND, TFM_ERROR_INVALID_ARGUMENT
 * (counts, dtypes, shapes, naming the input), TFM_ERROR_OUT_OF_RANGE,
 * TFM_ERROR_CONTEXT_OVERFLOW, TFM_ERROR_OUT_OF_MEMORY (the call allocated
 * nothing that is kept). Thread-safe for different caches. */
tfm_status_code tfm_model_call(tfm_model *model, const char *name,
                               const tfm_tensor *inputs, int32_t num_inputs,
                               tfm_tensor *const *caches, tfm_tensor *outputs,
                               int32_t num_outputs, tfm_status *status);
/* Frees an output of tfm_model_call; NULL or released tensors are fine. */
void tfm_tensor_release(tfm_tensor *tensor);

/*===--------------------------------------------------------------------===
 * Sessions: one conversation's KV cache and token history. Sessions of one
 * model are independent; one session must not be used by two threads at
 * once. A session must be freed before its model.
 *===--------------------------------------------------------------------===*/

/* A session with an empty KV cache of the capacity the model was compiled
 * with (--max-context): the cache is allocated here, zeroed. */
tfm_status_code tfm_session_new(tfm_model *model, tfm_session **session,
                                tfm_status *status);
void tfm_session_free(tfm_session *session);
/* Forgets every position (the cache is overwritten from position 0). */
void tfm_session_reset(tfm_session *session);
/* Positions held: the tokens prefilled and decoded so far. */
int64_t tfm_session_length(const tfm_session *session);
/* Positions the session can hold (the KV cache capacity). */
int64_t tfm_session_capacity(const tfm_session *session);
const int32_t *tfm_session_tokens(const tfm_session *session);
tfm_model *tfm_session_model(const tfm_session *session);

/* Replaces what `to` holds with what `from` holds (its tokens, KV rows and
 * a hybrid model's recurrent states), both sessions of one model: a prompt
 * prefilled once and continued in several sessions (parallel samples, a
 * shared system prompt). */
tfm_status_code tfm_session_copy(tfm_session *to, const tfm_session *from,
                                 tfm_status *status);
/* Keeps the first `length` positions (at most the session's length), e.g.
 * the part of a new prompt that matches what the session holds. KV rows
 * are kept as they are; a recurrent state (which has folded in every
 * position), windowed layers' rings cut back by more than a position, and
 * a sliding window that has slid cannot go back, so the next prefill
 * recomputes them from the kept tokens. Within the last tfm_verify's
 * positions they can: the rings' rows it overwrote are put back, and the
 * states go back to before it, the positions kept run again by the next
 * call. */
tfm_status_code tfm_session_truncate(tfm_session *session, int64_t length,
                                     tfm_status *status);
/* Positions whose KV rows and states are current: the session's length, or
 * fewer where the next prefill recomputes the rest first (after a
 * truncation that could not keep them, or a failed call of a hybrid
 * model: 0). */
int64_t tfm_session_cached(const tfm_session *session);
/* Writes what the session holds to `path`, for tfm_session_load to read
 * back into a session of the same model (by name and the shapes of its
 * vocabulary, cache and states, which a mismatched file fails on) on the
 * same machine: the prompt cache of the command line (--prompt-cache). A
 * failed load leaves the session empty. Not for --target=cuda models or
 * models split over ranks yet (refused by name). */
tfm_status_code tfm_session_save(const tfm_session *session, const char *path,
                                 tfm_status *status);
tfm_status_code tfm_session_load(tfm_session *session, const char *path,
                                 tfm_status *status);

/* Appends `tokens[0..n)` and writes the logits of the last one to `logits`
 * ([vocab]). Models compiled without a KV cache recompute the whole
 * sequence. Nothing is written when the ids or the length are invalid. */
tfm_status_code tfm_prefill(tfm_session *session, const int32_t *tokens,
                            int64_t n, float *logits, tfm_status *status);
/* tfm_prefill of one token. */
tfm_status_code tfm_decode(tfm_session *session, int32_t token, float *logits,
                           tfm_status *status);
/* A vision-language model (tfmc's llava folders): `count` rows
 * [count, hidden] of an image's tokens, as its @encode_image returns them,
 * for the next `count` placeholder tokens (desc->image_token) that
 * tfm_prefill and tfm_generate take; a placeholder met with no row
 * waiting is a token like any other (one the model generates). The
 * session keeps the rows with its positions (copied, truncated and reset
 * with them; a session holding rows is not saved to a file). Several
 * images: one call each, in the prompt's order. */
tfm_status_code tfm_session_add_image(tfm_session *session, const float *rows,
                                      int64_t count, tfm_status *status);
/* The ids that stand for one image of `rows` rows in a prompt, the
 * placeholder desc->image_token where each row goes: `rows` placeholders,
 * or, for a model whose processor writes tokens of its own around an
 * image's tiles (desc->image_tiles_marked: SmolVLM's, Idefics3's), its
 * layout for `grid` (tiles down and across, as tfm_image_tokens
 * gives; 0 x 0: one image): each tile's <fake_token_around_image>
 * <row_r_col_c> and rows, "\n" after each row of tiles, then "\n"
 * <fake_token_around_image><global-img>, the whole image's rows and
 * <fake_token_around_image>, tokenized by the model's tokenizer. At most
 * `capacity` ids are written; `*count` is how many there are. Rows that
 * the grid's tiles do not share evenly, or a grid past the tokenizer's
 * <row_r_col_c> tokens, are TFM_ERROR_INVALID_ARGUMENT. */
tfm_status_code tfm_image_prompt_ids(tfm_model *model, const int64_t grid[2],
                                     int64_t rows, int32_t *ids,
                                     int64_t capacity, int64_t *count,
                                     tfm_status *status);
/* A prompt's image placeholders (`placeholder`: desc->image_token) matched
 * to its images, whose ids (tfm_image_prompt_ids) are
 * `image_ids[i][0..image_lengths[i])`: a prompt with one placeholder an
 * image (as chat templates write them) has each replaced by its image's
 * ids; one holding every image's placeholders already (as later
 * processors expand them) is as given. Writes the prompt to `out` (at
 * most `capacity` ids; `*count` is its length, also past the capacity; n
 * plus the images' ids always suffice). Counts that match neither way are
 * TFM_ERROR_INVALID_ARGUMENT, naming them; so are placeholders with no
 * image. */
tfm_status_code tfm_splice_image_ids(int32_t placeholder, const int32_t *ids,
                                     int64_t n, const int32_t *const *image_ids,
                                     const int64_t *image_lengths,
                                     int64_t images, int32_t *out,
                                     int64_t capacity, int64_t *count,
                                     tfm_status *status);
/* Appends `tokens[0..n)` in one call of the model's @verify (tfmc
 * --speculative) and writes every one's logits to `logits` ([n, vocab]):
 * a speculative step's drafted tokens checked at once. Rejected ones are
 * dropped with tfm_session_truncate, which keeps the rows before them
 * (and takes windowed layers' rings and recurrent states back: it keeps
 * what the call overwrites first, rings where n is at most their window).
 * TFM_ERROR_NOT_FOUND for a model compiled without @verify. */
tfm_status_code tfm_verify(tfm_session *session, const int32_t *tokens,
                           int64_t n, float *logits, tfm_status *status);

/*===--------------------------------------------------------------------===
 * LoRA adapters at run time (models compiled with tfmc --lora-slots)
 *===--------------------------------------------------------------------===*/

/* Loads the PEFT adapter folder at `path` (adapter_config.json and
 * adapter_model.safetensors), or a GGUF LoRA file of llama.cpp's there
 * (for a model read from GGUF: its weights' names; each B scaled by
 * adapter.lora.alpha / r), into a free slot of `model` and sets
 * *adapter to its id (1 and up, never reused) for tfm_session_set_lora,
 * tfm_generate_options.lora and the engine's requests. Its update is
 * scaled by `scale` (1: as trained) times lora_alpha / r (lora_alpha / √r
 * with use_rslora; alpha_pattern's per module). Refused, naming the file
 * and what: a model without slots, no free slot, a rank above the slots',
 * a module the model was not compiled to adapt (tfmc --lora-targets),
 * shapes of another model, and what run-time adapters do not apply
 * (DoRA, trained biases, modules_to_save, LoRA on embeddings: tfmc --lora
 * merges those). Thread-safe. */
tfm_status_code tfm_lora_load(tfm_model *model, const char *path, float scale,
                              int32_t *adapter, tfm_status *status);
/* Frees the adapter's slot; refused while a session or an engine request
 * runs with it. */
tfm_status_code tfm_lora_unload(tfm_model *model, int32_t adapter,
                                tfm_status *status);
/* Adapters the model holds at once (0: compiled without slots). */
int32_t tfm_model_lora_slots(const tfm_model *model);
/* Runs the session's next calls with `adapter` (0: none). A change empties
 * the session, whose rows were computed with the other. */
tfm_status_code tfm_session_set_lora(tfm_session *session, int32_t adapter,
                                     tfm_status *status);
/* The adapter the session runs with (0: none). */
int32_t tfm_session_lora(const tfm_session *session);

/*===--------------------------------------------------------------------===
 * Sampling and generation
 *===--------------------------------------------------------------------===*/

typedef struct {
  float temperature;        /* 0: greedy (argmax) */
  int32_t top_k;            /* keep the k most likely; 0: all */
  float top_p;              /* keep the smallest set of mass >= p; 1: all */
  float repetition_penalty; /* > 1 discourages tokens already present; 1: off */
  uint64_t seed;            /* same seed, same tokens */
} tfm_sampler_options;

/* Greedy decoding, no penalty. */
tfm_sampler_options tfm_sampler_default_options(void);

/* A sampler owns its random state: reusing one continues its sequence.
 * Options out of range are TFM_ERROR_INVALID_ARGUMENT, named. */
typedef struct tfm_sampler tfm_sampler;
tfm_status_code tfm_sampler_new(const tfm_sampler_options *options,
                                int64_t vocab_size, tfm_sampler **sampler,
                                tfm_status *status);
void tfm_sampler_free(tfm_sampler *sampler);
/* Picks the next token from `logits` (modified in place), penalizing the
 * ids in `history[0..n)`; -1 for a NULL sampler or logits, a negative n, or
 * n > 0 without a history. */
int32_t tfm_sampler_sample(tfm_sampler *sampler, float *logits,
                           const int32_t *history, int64_t n);

/* Constrained generation: a grammar in llama.cpp's GBNF (rules `name ::=
 * ...` with `root` the whole output; string literals, character classes,
 * `.`, groups, `| * + ? {m,n}`, `#` comments) that the generated text must
 * match. A grammar holds every token's bytes and a trie of them; a matcher
 * follows one sequence through it. The mask sets to -INFINITY the logits
 * of the tokens that cannot come next: the text ones the grammar does not
 * admit (a token may end inside a UTF-8 character the next one finishes),
 * the model's end-of-generation tokens unless the grammar may end there,
 * and every other special token. A grammar and its matchers are used by
 * one thread at a time (the masks are cached in the grammar). */
typedef struct tfm_grammar tfm_grammar;
typedef struct tfm_grammar_matcher tfm_grammar_matcher;
/* Parses `gbnf` for a model's tokenizer and description (its vocabulary,
 * BOS and end-of-generation tokens). A malformed grammar is
 * TFM_ERROR_INVALID_ARGUMENT, its message "grammar: line L, column C:
 * what"; an undefined rule, a missing root and left recursion are refused
 * so too. */
tfm_status_code tfm_grammar_new(const char *gbnf,
                                const tfm_tokenizer *tokenizer,
                                const tfm_model_desc *desc,
                                tfm_grammar **grammar, tfm_status *status);
void tfm_grammar_free(tfm_grammar *grammar);
/* A matcher at the grammar's start; free it before its grammar. */
tfm_status_code tfm_grammar_matcher_new(tfm_grammar *grammar,
                                        tfm_grammar_matcher **matcher,
                                        tfm_status *status);
void tfm_grammar_matcher_free(tfm_grammar_matcher *matcher);
/* Masks `logits` ([vocab]) as above; returns how many tokens stay allowed
 * (0: none can follow), -1 for a NULL argument, out of memory, or a
 * grammar too ambiguous to follow (it reads the text in more than 8192
 * ways at once, as an alternation of more than 8192 strings does at its
 * start): tfm_grammar_matcher_failure says which. */
int64_t tfm_grammar_matcher_mask(tfm_grammar_matcher *matcher, float *logits);
/* Why the matcher's last mask failed, as its status:
 * TFM_ERROR_OUT_OF_MEMORY, or TFM_ERROR_INVALID_ARGUMENT saying how the
 * grammar is too ambiguous to follow; TFM_OK where it did not fail. */
tfm_status_code tfm_grammar_matcher_failure(const tfm_grammar_matcher *matcher,
                                            tfm_status *status);
/* Moves the matcher past `token`; TFM_ERROR_INVALID_ARGUMENT (nothing
 * changed) where the grammar does not allow it. */
tfm_status_code tfm_grammar_matcher_accept(tfm_grammar_matcher *matcher,
                                           int32_t token, tfm_status *status);
/* Whether the text so far is a whole match (generation may end). */
int tfm_grammar_matcher_may_end(const tfm_grammar_matcher *matcher);
/* Greedy decoding under the grammar: the token of the highest logit the
 * grammar allows (ties: the lowest id, as tfm_argmax), accepted by the
 * matcher. The best few are checked first, so the mask (a walk of the
 * vocabulary's trie) is computed, into `logits`, only where none of them
 * is allowed. Returns -1 where the grammar allows no token, `*allowed`
 * (if given) then the mask's count: 0, or -1 out of memory. */
int32_t tfm_grammar_matcher_accept_greedy(tfm_grammar_matcher *matcher,
                                          float *logits, int64_t *allowed);
/* The GBNF of the JSON texts a JSON Schema accepts (*gbnf malloc'd: free()
 * it), white space between tokens bounded: `type` (one or a list),
 * `properties`/`required` (required ones first, then the others in the
 * schema's order) with no other properties unless the object names none
 * and allows them (`additionalProperties` true or {}), `enum`, `const`,
 * `items`, `prefixItems` (a tuple, `items` false), `minItems`/`maxItems`,
 * `anyOf`/`oneOf`, `allOf` (one schema, or object schemas merged),
 * `$ref` to "#", "#/$defs/..." or "#/definitions/..." (recursive ones
 * too), strings' `minLength`/`maxLength`, `format` (date, time, date-time,
 * uuid) and `pattern` (a regex subset: schema_terms.h), integers'
 * `minimum`/`maximum`/`exclusiveMinimum`/`exclusiveMaximum`, numbers' too
 * where the bounds are whole numbers; annotations (title, description,
 * default, examples, ...) are read past. Any other keyword, and JSON that
 * is not one, is TFM_ERROR_INVALID_ARGUMENT with its JSON path: "json
 * schema: at $.properties.n: the keyword 'multipleOf' is not supported". */
tfm_status_code tfm_json_schema_to_gbnf(const char *schema, char **gbnf,
                                        tfm_status *status);
/* Several schemas in one grammar (a tool call's choice among functions'
 * parameters): schema i's JSON texts are rule `rules[i]`, each schema's
 * "$ref"s its own; no `root` rule is written (the caller's grammar around
 * them names them). Rule names the caller writes must not be ones this
 * makes: names of primitives ("value", "string", "space", ...) and of
 * parts ("<rule>-...", "def-..."). Errors say which schema ("json schema:
 * schema 1: at $.properties.x: ..."). */
tfm_status_code tfm_json_schemas_to_gbnf(const char *const *schemas,
                                         const char *const *rules,
                                         size_t count, char **gbnf,
                                         tfm_status *status);

typedef enum {
  TFM_STOP_LENGTH = 0,   /* max_new_tokens generated */
  TFM_STOP_EOS = 1,      /* the model produced its end-of-sequence token */
  TFM_STOP_STRING = 2,   /* the text ends with one of the stop strings */
  TFM_STOP_CALLBACK = 3, /* on_token asked to stop */
  TFM_STOP_GRAMMAR = 4   /* the grammar's match is whole and nothing may
                            follow it (the model has no end token) */
} tfm_stop_reason;

typedef struct {
  int64_t max_new_tokens;
  tfm_sampler_options sampler;
  /* Stop when the generated text contains one of these (the text streamed
   * includes it). Needs the model's tokenizer. */
  const char *const *stop_strings;
  int32_t stop_string_count;
  int ignore_eos; /* keep going past the end-of-sequence token */
  /* Teacher forcing: emit these tokens instead of sampling (e.g. to score a
   * known continuation through on_logits); max_new_tokens is ignored. */
  const int32_t *forced_tokens;
  int64_t forced_count;
  /* Called for each new token with its text (empty without a tokenizer);
   * a non-zero return stops generation. May be NULL. */
  int (*on_token)(void *user, int32_t token, const char *text, size_t size);
  /* Called with the logits each new token is sampled from (before the
   * repetition penalty), e.g. for log-probabilities. May be NULL. */
  void (*on_logits)(void *user, const float *logits, int64_t vocab_size);
  void *user;
  /* The grammar the generated text must match (NULL: none); sampled
   * tokens only, not forced ones, are constrained. Generation stops at an
   * end-of-generation token the grammar allows, or where its match is
   * whole and nothing may follow. */
  tfm_grammar *grammar;
  /* Speculative decoding (a model compiled with tfmc --speculative): each
   * step drafts up to draft_max tokens by prompt lookup (the continuation
   * of the latest earlier occurrence of the last lookup_ngram tokens, or
   * of fewer), writes them with the chosen token through @verify, and
   * keeps those the model then chooses itself. Tokens are chosen from the
   * model's logits as without drafts (greedy, sampled, forced or under a
   * grammar alike), so the output is the same; rejected drafts are
   * dropped from the cache. 0: off. */
  int32_t lookup_ngram;
  int32_t draft_max; /* 0: 8 */
  /* Speculative decoding with a draft model instead of prompt lookup: a
   * session of a smaller model with the same vocabulary (its tokens must
   * spell what the target's spell, and it must hold as many positions as
   * the generation needs), loaded through this runtime. Each step it
   * continues the text greedily for up to draft_max tokens, stopping
   * where its most likely token's probability falls below draft_p_min,
   * and the model verifies them as above. The draft session follows the
   * model's text (what it holds of it is kept between calls; the rest is
   * prefilled). NULL: none. */
  tfm_session *draft;
  float draft_p_min; /* 0: no threshold */
  /* The LoRA adapter to generate with (tfm_lora_load; 0: none): the
   * session is set to it (tfm_session_set_lora), so a session that held
   * text of another adapter starts over. */
  int32_t lora;
} tfm_generate_options;

typedef struct {
  int64_t prompt_tokens, generated_tokens;
  double prefill_seconds, decode_seconds;
  tfm_stop_reason stop_reason;
  /* Speculative decoding: tokens drafted, and how many of them the model
   * chose (each saved a @decode call). */
  int64_t drafted_tokens, accepted_tokens;
} tfm_generate_result;

/* Prefills `prompt[0..n)` (n >= 1) after what the session holds, then samples up to
 * max_new_tokens tokens, decoding each kept one (an end-of-sequence token
 * is not kept), so that the session holds the whole text afterwards. Fails
 * before running anything when the session cannot hold prompt +
 * max_new_tokens more positions. `result` may be NULL. */
tfm_status_code tfm_generate(tfm_session *session, const int32_t *prompt,
                             int64_t n, const tfm_generate_options *options,
                             tfm_generate_result *result, tfm_status *status);

/* Encoder-decoders (compiled with tfm-kv-cache: @encode, @decode): encodes
 * `source[0..n)` once, then generates from the model's decoder start token
 * (its bos_token) up to max_new_tokens tokens, stopping after the
 * end-of-sequence token (kept) unless ignore_eos; forced_tokens teacher-
 * forces instead. The new tokens go to `out` (at most `capacity` stored;
 * *count says how many there were). Uses max_new_tokens, sampler,
 * ignore_eos, forced_tokens, on_token (with empty text) and on_logits of
 * `options`. */
tfm_status_code tfm_seq2seq_generate(tfm_model *model, const int32_t *source,
                                     int64_t n,
                                     const tfm_generate_options *options,
                                     int32_t *out, int64_t capacity,
                                     int64_t *count, tfm_status *status);

/* What an encoder-decoder may generate next, as generation_config.json's
 * no_repeat_ngram_size, bad_words_ids (single tokens), min_new_tokens and
 * forced_eos_token_id say (transformers' logits processors). Zeroed: no
 * rule. */
typedef struct {
  int32_t no_repeat_ngram_size; /* no n-gram twice; 0: off */
  int64_t min_new_tokens;       /* no end-of-sequence before this many */
  int forced_eos;               /* the last step ends the sequence */
  /* The first new token is `forced_bos` (forced_bos_token_id: mBART's
   * target language), where has_forced_bos. */
  int has_forced_bos;
  int32_t forced_bos;
  const int32_t *suppressed;    /* never generated */
  int32_t suppressed_count;
  /* Bad words of several tokens (bad_words_ids): `bad_word_count` words
   * of bad_word_lengths[i] tokens, end to end in `bad_words`; a word's
   * last token is banned right after its other tokens. */
  const int32_t *bad_words;
  const int32_t *bad_word_lengths;
  int32_t bad_word_count;
  /* Forced right after the decoder start token, before the new tokens
   * (Whisper's language, task and no-timestamps tokens; generate()'s
   * decoder_input_ids). */
  const int32_t *prompt;
  int32_t prompt_count;
  /* Never the first token after the prompt (begin_suppress_tokens). */
  const int32_t *begin_suppressed;
  int32_t begin_suppressed_count;
  /* Decoded before the decoder start token, conditioning what follows
   * without being part of it: Whisper's previous text (<|startofprev|>
   * and the text's tokens, generate()'s prompt_ids;
   * tfm_seq2seq_previous_text). */
  const int32_t *previous;
  int32_t previous_count;
  /* A -1 in `prompt` is the likeliest of these tokens at its step (the
   * raw logits', before any rule): Whisper's language, detected as
   * detect_language does when generation_config forces a null there. */
  const int32_t *languages;
  int32_t language_count;
} tfm_generation_rules;

typedef struct {
  int32_t num_beams;      /* beam width */
  int64_t max_new_tokens; /* the longest output */
  float length_penalty;   /* scores are sum log p / length^length_penalty */
  int early_stopping;     /* stop once num_beams hypotheses have ended */
  const tfm_generation_rules *rules; /* may be NULL */
} tfm_beam_options;

/* tfm_seq2seq_generate with `rules` applied to each step's logits before
 * the sampler picks (NULL: as tfm_seq2seq_generate). */
tfm_status_code tfm_seq2seq_generate_with_rules(
    tfm_model *model, const int32_t *source, int64_t n,
    const tfm_generate_options *options, const tfm_generation_rules *rules,
    int32_t *out, int64_t capacity, int64_t *count, tfm_status *status);

/* tfm_seq2seq_generate_with_rules from any source @encode takes: token ids
 * (i32 [n]) or a speech model's log-mel features (f32 [mel bins, frames],
 * tfm_log_mel). */
tfm_status_code tfm_seq2seq_generate_from(
    tfm_model *model, const tfm_tensor *source,
    const tfm_generate_options *options, const tfm_generation_rules *rules,
    int32_t *out, int64_t capacity, int64_t *count, tfm_status *status);

/* The rules of the model's generation_config.json (all zero, forced_bos
 * -1, without one): what generate() applies unless told otherwise. */
void tfm_generation_rules_defaults(const tfm_model *model,
                                   tfm_generation_rules *rules);

/* An encoder-decoder's new tokens ids[0..count) as text: its end-of-sequence
 * token and the tokenizer's special tokens skipped, each piece spelled
 * after the one before (from the decoder start token), as
 * decode(skip_special_tokens=True). *text is malloc'd (NUL-terminated; the
 * caller frees it); *length (when not NULL) receives its bytes, which a
 * byte token may make hold a NUL. */
tfm_status_code tfm_seq2seq_decode_text(const tfm_model *model,
                                        const tfm_tokenizer *tokenizer,
                                        const int32_t *ids, int64_t count,
                                        char **text, size_t *length,
                                        tfm_status *status);

/* Whisper's previous-text prompt for `text`, as its `prompt` conditions a
 * transcript: <|startofprev|>, then the tokens of " " + text (whitespace
 * at its ends trimmed), at most the last half of the decoder's context less
 * one of them (OpenAI's n_ctx // 2 - 1). *ids is malloc'd (the caller
 * frees it), for tfm_generation_rules.previous. Fails naming the model
 * where its tokenizer has no <|startofprev|>. */
tfm_status_code tfm_seq2seq_previous_text(tfm_model *model, const char *text,
                                          int32_t **ids, int32_t *count,
                                          tfm_status *status);

/* An encoder-decoder's output for `source` (token ids, or a speech model's
 * log-mel features; see tfm_seq2seq_generate_from) as text, generated as
 * its generation_config.json says: `rules` (NULL: the defaults above;
 * Whisper's prompt names its language and task), beam search of `beams`
 * (0: the config's num_beams; 1: greedy), at most `max_new_tokens` (0: the
 * config's, else 128, at most what the decoder's cache holds), then decoded as
 * decode(skip_special_tokens=True). *text is malloc'd (NUL-terminated; the
 * caller frees it). */
tfm_status_code tfm_seq2seq_text(tfm_model *model, const tfm_tensor *source,
                                 int32_t beams, int64_t max_new_tokens,
                                 const tfm_generation_rules *rules, char **text,
                                 tfm_status *status);

/* Beam search of an encoder-decoder, as transformers' generate(num_beams)
 * searches: the source is encoded once and its cross-attention cache
 * shared by every beam; each beam has its own self-attention cache: a
 * beam's first continuation takes it over, further ones copy the
 * positions written so far. Writes the best hypothesis's
 * tokens (after the decoder start token, ended by the end-of-sequence token
 * when it has one) to `out` (at most `capacity`; *count says how many). */
tfm_status_code tfm_seq2seq_beam_search(tfm_model *model,
                                        const int32_t *source, int64_t n,
                                        const tfm_beam_options *options,
                                        int32_t *out, int64_t capacity,
                                        int64_t *count, tfm_status *status);
/* The same from any source (see tfm_seq2seq_generate_from); a rules'
 * prompt is decoded first on one beam, as generate() does with
 * decoder_input_ids, and max_new_tokens count after it. */
tfm_status_code tfm_seq2seq_beam_search_from(tfm_model *model,
                                             const tfm_tensor *source,
                                             const tfm_beam_options *options,
                                             int32_t *out, int64_t capacity,
                                             int64_t *count,
                                             tfm_status *status);

/* Index of the largest of `n` values (the first on ties), as greedy decoding
 * picks the next token; -1 when there are none (NULL or n <= 0). */
int32_t tfm_argmax(const float *values, int64_t n);

/* The model's tokenizer, parsed on first use and owned by the model, or NULL
 * with TFM_ERROR_TOKENIZER when it was compiled without one. The first call
 * must not race with another on the same model. */
tfm_tokenizer *tfm_model_tokenizer(tfm_model *model, tfm_status *status);

/* Parses a tokenizer blob (tfm_format.h) into a tokenizer the caller owns;
 * TFM_ERROR_TOKENIZER names what is malformed. */
tfm_status_code tfm_tokenizer_new(const uint8_t *blob, uint64_t size,
                                  tfm_tokenizer **tokenizer,
                                  tfm_status *status);
void tfm_tokenizer_free(tfm_tokenizer *tokenizer);

/* Encodes UTF-8 `text` as llama2.c/SentencePiece BPE does (a leading dummy
 * space, byte fallback, merges by score), prefixed by `bos` when >= 0,
 * after the tokenizer's prompt replacements. At most `capacity` ids are
 * written; `*count` receives the number needed. */
tfm_status_code tfm_tokenizer_encode(const tfm_tokenizer *tokenizer,
                                     const char *text, int32_t bos,
                                     int32_t *ids, int64_t capacity,
                                     int64_t *count, tfm_status *status);

/* Encodes UTF-8 text as an encoder's input: [CLS] first [SEP] (an
 * encoder-decoder's source: first </s>, or BART's <s> first </s>), or with a
 * `second` text (NULL: none; cross-encoders) [CLS] first [SEP] second [SEP]
 * (RoBERTa: <s> first </s></s> second </s>). Special tokens spelled in the
 * text ([MASK], <mask>) stay whole. `token_types` (may be NULL) receives
 * each token's segment: 0 for the first, 1 for the second where the model
 * has token types. At most `capacity` of each are written; `*count`
 * receives the number needed. TFM_ERROR_TOKENIZER for a decoder's tokenizer
 * and for text that is not UTF-8 (WordPiece). */
tfm_status_code tfm_tokenizer_encode_text(const tfm_tokenizer *tokenizer,
                                          const char *first,
                                          const char *second, int32_t *ids,
                                          int32_t *token_types,
                                          int64_t capacity, int64_t *count,
                                          tfm_status *status);

/* The tokenizer's `index`-th prompt replacement (tfm_format.h): text that
 * tfm_tokenizer_encode replaces in a prompt before tokenizing it (*text)
 * and what replaces it (*replacement), such as Gemma 3's
 * "<start_of_image>" and its processor's expansion; both NULL past the
 * last. */
void tfm_tokenizer_prompt_replacement(const tfm_tokenizer *tokenizer,
                                      int32_t index, const char **text,
                                      const char **replacement);

/* Whether `id` is a special token of the tokenizer (matched whole in text:
 * </s>, <pad>, [MASK], T5's sentinels, ...; its framing tokens), which
 * decoding for display skips. */
int tfm_tokenizer_is_special(const tfm_tokenizer *tokenizer, int32_t id);

/* The bytes token `id` stands for after `previous` (a leading space after
 * BOS is dropped; "<0xAB>" becomes the byte 0xAB). Sets *size. Returns NULL
 * for an id out of range, which includes the rows a padded embedding table
 * has past its tokenizer: such ids decode to nothing. */
const char *tfm_tokenizer_decode(const tfm_tokenizer *tokenizer,
                                 int32_t previous, int32_t id, int32_t bos,
                                 size_t *size);

/* A speech model's input from an audio file (WAV, FLAC, Ogg, ... as
 * libsndfile reads them): channels mixed down to mono (their mean),
 * resampled to the model's rate with libsoxr (high quality) where it
 * differs, padded with silence or cut to the model's chunk (Whisper's 30
 * s), then tfm_log_mel (or, for the Audio Spectrogram Transformer,
 * tfm_kaldi_fbank) into `features` (`capacity` floats). TFM_ERROR_AUDIO
 * says what is wrong with the file (unknown format, truncated, no
 * samples, a rate outside 1 to 384 kHz, more than 8 channels, more than an
 * hour, a NaN or infinite sample: the header is checked before a sample is
 * decoded), TFM_ERROR_NOT_FOUND when the model takes no audio,
 * TFM_ERROR_INVALID_ARGUMENT when `capacity` is too small. */
tfm_status_code tfm_audio_load(const tfm_model *model, const char *path,
                               float *features, int64_t capacity,
                               tfm_status *status);

/* An audio file as mono samples at the model's rate (a waveform model's,
 * or a speech model's), read and resampled as tfm_audio_load does:
 * *samples (malloc'd; the caller frees it) and *n. A file is decoded only
 * as far as the model hears: a waveform model's file longer than its
 * longest clip is refused by its header's duration, Whisper's is cut to
 * its chunk. Errors as tfm_audio_load's. */
tfm_status_code tfm_audio_read(const tfm_model *model, const char *path,
                               float **samples, int64_t *n,
                               tfm_status *status);

/* Greedy CTC decoding of a speech recognizer's logits ([frames, labels],
 * f32): each frame's best label, repeats merged, the blank dropped, the
 * word delimiter spelled as a space, the ends trimmed, then
 * transformers' clean_up_tokenization (" ." -> ".", " 's" -> "'s", ...)
 * and lowercasing where the model's tokenizer does them, as
 * Wav2Vec2CTCTokenizer.decode does. *text is malloc'd (NUL-terminated; the
 * caller frees it). TFM_ERROR_NOT_FOUND for a model without CTC labels. */
tfm_status_code tfm_ctc_decode(const tfm_model *model, const float *logits,
                               int64_t frames, char **text,
                               tfm_status *status);

/* A speech recognizer's transcript of `n` mono samples at its rate
 * (tfm_audio_read): its entry point, then tfm_ctc_decode. A clip shorter
 * than the model's receptive field is TFM_ERROR_AUDIO; one longer than its
 * maximum, TFM_ERROR_CONTEXT_OVERFLOW. Thread-safe. */
tfm_status_code tfm_transcribe(tfm_model *model, const float *samples,
                               int64_t n, char **text, tfm_status *status);

/* How Whisper transcribes audio of any length (tfm_whisper_transcribe), as
 * OpenAI's transcribe() and transformers' sequential long-form generate()
 * do; tfm_whisper_options_default sets OpenAI's defaults. A threshold set
 * to NAN is off. */
typedef struct {
  /* A language code ("de"), English name ("german") or token ("<|de|>");
   * NULL: the model's forced language, else detected from the first 30 s
   * (the most likely language token after <|startoftranscript|>). */
  const char *language;
  /* "transcribe" or "translate" (into English); NULL: the model's. */
  const char *task;
  /* Text before the first window, conditioning it (OpenAI's
   * initial_prompt: <|startofprev|> and " " + the text); NULL: none. */
  const char *prompt;
  /* Each window after the first conditioned on the text so far (its last
   * 223 tokens), while the last window was decoded below temperature 0.5. */
  int condition_on_previous;
  /* Words with their times (tfm_transcript.words), from the alignment
   * heads' cross-attention (the model's @align, compiled where its
   * generation_config.json lists alignment_heads). */
  int word_timestamps;
  /* Each window is decoded at temperatures[0] (0: greedy), then at the
   * next where its tokens compress more than compression_ratio_threshold
   * (zlib) or average a log-probability below logprob_threshold. */
  const float *temperatures;
  int32_t temperature_count;
  double compression_ratio_threshold; /* 2.4 */
  double logprob_threshold;           /* -1 */
  /* A window more likely than this to hold no speech (<|nospeech|>'s
   * probability after <|startoftranscript|>) whose text also averages a
   * log-probability below logprob_threshold is skipped. */
  double no_speech_threshold; /* 0.6 */
  /* The seed of sampled windows' draws: torch.manual_seed(seed)'s, so
   * that they are torch.multinomial's on the same logits. */
  uint64_t seed;
  /* Called after each window with the seconds done and in all; NULL: none. */
  void (*on_progress)(void *user, double done, double total);
  void *user;
} tfm_whisper_options;

/* temperatures 0, 0.2, ..., 1.0; compression ratio 2.4, log-probability
 * -1, no speech 0.6; conditioned on previous text; seed 0. */
void tfm_whisper_options_default(tfm_whisper_options *options);

/* A stretch of a transcript: its times in seconds from the audio's start,
 * its text (special tokens skipped), its tokens (timestamps included), and
 * what its window was decoded with: the temperature, the tokens' average
 * log-probability and compression ratio, the no-speech probability. */
typedef struct {
  double start, end;
  int64_t seek; /* its window's first frame (100 a second) */
  char *text;
  int32_t *tokens;
  int64_t token_count;
  double temperature, avg_logprob, compression_ratio, no_speech_prob;
} tfm_transcript_segment;

/* A word of a transcript and its times in seconds (a CTC recognizer's:
 * from its first frame's start to its last frame's end; Whisper's: from
 * its first token's aligned start to the start of the token after it). */
typedef struct {
  char *word;
  double start, end;
} tfm_transcript_word;

typedef struct {
  char *language;  /* its code ("en"), "" where the model has no languages */
  char *task;      /* "transcribe" or "translate" */
  double duration; /* seconds of audio */
  char *text;      /* every segment's text, one after another */
  tfm_transcript_segment *segments;
  int64_t segment_count;
  tfm_transcript_word *words; /* NULL where there are none */
  int64_t word_count;
} tfm_transcript;

/* Whisper's transcript of log-mel features of any length (f32 [mel bins,
 * frames], tfm_log_mel_all): 30 s windows decoded with timestamps, each
 * starting where the last complete segment of the one before ended (or
 * after it, where its text ended with a lone timestamp), with the options'
 * language, task, prompt, temperature fallback and silence skipping.
 * *transcript is the caller's to free (tfm_transcript_free). Fails with
 * TFM_ERROR_NOT_FOUND for a model without Whisper's timestamp tokens, and
 * TFM_ERROR_INVALID_ARGUMENT naming an unknown language or task. */
tfm_status_code tfm_whisper_transcribe(tfm_model *model, const float *features,
                                       int64_t frames,
                                       const tfm_whisper_options *options,
                                       tfm_transcript **transcript,
                                       tfm_status *status);
void tfm_transcript_free(tfm_transcript *transcript);

typedef enum {
  TFM_TRANSCRIPT_TEXT = 0, /* the text, one line */
  TFM_TRANSCRIPT_JSON = 1, /* OpenAI's verbose_json */
  TFM_TRANSCRIPT_SRT = 2,  /* SubRip subtitles */
  TFM_TRANSCRIPT_VTT = 3   /* WebVTT subtitles */
} tfm_transcript_format;

/* How a CTC recognizer hears audio longer than it should take at once
 * (tfm_ctc_transcribe), as transformers' ASR pipeline chunks it: chunks of
 * `chunk_seconds` that overlap by `stride_seconds` on each side (negative:
 * a sixth of the chunk, the pipeline's default), each rounded to whole
 * frames; 0 seconds of chunk: the whole clip in one call. */
typedef struct {
  double chunk_seconds;
  double stride_seconds;
} tfm_ctc_chunking;

/* A CTC recognizer's transcript of `n` mono samples at its rate: each
 * chunk's frames but those of its strides (the neighbour hears them with
 * more context), the frames' labels joined and decoded as tfm_ctc_decode
 * decodes them, and each word's times from its frames
 * (Wav2Vec2CTCTokenizer's word offsets, times as the pipeline's
 * return_timestamps="word"). *transcript is the caller's to free
 * (tfm_transcript_free); it has words and no segments. */
tfm_status_code tfm_ctc_transcribe(tfm_model *model, const float *samples,
                                   int64_t n, const tfm_ctc_chunking *chunking,
                                   tfm_transcript **transcript,
                                   tfm_status *status);

/* The transcript written in `format` into *text (malloc'd, NUL-terminated;
 * the caller frees it). A transcript without segments (a CTC
 * recognizer's) has no subtitles: TFM_ERROR_INVALID_ARGUMENT for SRT and
 * WebVTT. */
tfm_status_code tfm_transcript_write(const tfm_transcript *transcript,
                                     tfm_transcript_format format, char **text,
                                     tfm_status *status);

/* Whisper's log-mel features of `n` mono samples at the model's rate,
 * padded with silence or cut to its chunk, as WhisperFeatureExtractor
 * computes them: a centered STFT (periodic Hann windows of n_fft samples
 * every hop_length, reflect-padded ends, FFTW), power spectra through Slaney
 * mel filters, log10 clamped at 1e-10 and to 8 below the maximum, (x + 4) /
 * 4; f32 [mel bins, chunk / hop_length] into `features`. */
tfm_status_code tfm_log_mel(const tfm_model *model, const float *samples,
                            int64_t n, float *features, int64_t capacity,
                            tfm_status *status);

/* tfm_log_mel of all `n` samples, however many: f32 [mel bins, n /
 * hop_length] into *features (malloc'd; the caller frees it) and their
 * count into *frames, normalized over all of them as
 * WhisperFeatureExtractor(truncation=False, padding="longest") does for
 * long-form transcription. TFM_ERROR_AUDIO for fewer samples than one hop. */
tfm_status_code tfm_log_mel_all(const tfm_model *model, const float *samples,
                                int64_t n, float **features, int64_t *frames,
                                tfm_status *status);

/* An audio file's mono samples at the model's rate, all of them: as
 * tfm_audio_read, but neither cut to Whisper's chunk nor bounded by a
 * waveform model's longest clip (for tfm_log_mel_all and Whisper's
 * windows, or a CTC recognizer's chunks); a file longer than `max_seconds`
 * (at most a day) is refused by its header's duration. */
tfm_status_code tfm_audio_read_all(const tfm_model *model, const char *path,
                                   double max_seconds, float **samples,
                                   int64_t *n, tfm_status *status);

/* The Audio Spectrogram Transformer's features of `n` mono samples at the
 * model's rate, as ASTFeatureExtractor computes them: Kaldi-style log
 * filterbanks (25 ms windows every 10 ms, the DC offset removed,
 * pre-emphasis, a symmetric Hann window, Kaldi's mel scale), zero-padded
 * or cut to the model's frames, normalized with its mean and std; f32
 * [mel bins, frames] into `features`. TFM_ERROR_AUDIO for a clip shorter
 * than one window. */
tfm_status_code tfm_kaldi_fbank(const tfm_model *model, const float *samples,
                                int64_t n, float *features, int64_t capacity,
                                tfm_status *status);

/* An image model's input from a PNG or JPEG file (or its bytes in
 * memory): decoded as Pillow decodes it and converted to RGB (gray
 * replicated, alpha dropped), then resized, center-cropped, rescaled and
 * normalized as the model's preprocessor_config.json says (recorded at
 * compile time; Pillow's resampling filters, exactly), into `pixels`, f32
 * [3, height, width] (`capacity` floats; the model's features input).
 * TFM_ERROR_IMAGE says what is wrong with the image, TFM_ERROR_IO when the
 * file cannot be read, TFM_ERROR_NOT_FOUND when the model is not an image
 * model, TFM_ERROR_INVALID_ARGUMENT when `capacity` is too small or the
 * model cuts images into tiles (tfm_image_tiles). */
tfm_status_code tfm_image_load(const tfm_model *model, const char *path,
                               float *pixels, int64_t capacity,
                               tfm_status *status);
tfm_status_code tfm_image_load_memory(const tfm_model *model,
                                      const uint8_t *data, size_t size,
                                      float *pixels, int64_t capacity,
                                      tfm_status *status);
/* An image's preprocessed tiles, @encode_image's inputs. A model whose
 * preprocessing has grid pinpoints (LLaVA-NeXT's any-resolution images) tiles
 * the decoded image as LlavaNextImageProcessor does: first the whole image
 * resized to the shortest edge's square, then the image resized keeping its
 * aspect into the pinpoint that fits it best (select_best_resolution), padded
 * centred with black and cut into tiles row by row; each is then preprocessed
 * as tfm_image_load preprocesses an image. Idefics3's (SmolVLM's, with
 * split_tiles) are as Idefics3ImageProcessor cuts them: the image resized
 * to its longest edge, then to multiples of a tile, cut row by row, the
 * whole squashed to a tile last. Other image models' one image is one
 * tile (a grid of 0 x 0). `tiles`: f32 [1 + grid[0] * grid[1], 3, height,
 * width], released with tfm_tensor_release; grid: the tiles down and across;
 * image_size: the decoded image's height and width. Errors as tfm_image_load's.
 * In libtfmrt_media. */
tfm_status_code tfm_image_tiles(const tfm_model *model, const uint8_t *data,
                                size_t size, tfm_tensor *tiles, int64_t grid[2],
                                int64_t image_size[2], tfm_status *status);
/* A vision-language model's tokens of an image file (or of its bytes):
 * its tiles (tfm_image_tiles) through @encode_image, [count, hidden] rows
 * for tfm_session_add_image and tfm_engine_request.image_rows. One tile
 * gives @encode_image's rows. LLaVA-NeXT's are arranged as its model
 * arranges them: the whole image's rows, then the tiles' patches as one
 * grid, cut to the image's aspect (unpad_image), with @encode_image's
 * second output (image_newline) after each row of it. `rows`: f32,
 * released with tfm_tensor_release; `grid` (or NULL): the tiles the image
 * was cut into, down and across (0 x 0: one image), for
 * tfm_image_prompt_ids. TFM_ERROR_NOT_FOUND when the model has no
 * @encode_image. In libtfmrt_media. */
tfm_status_code tfm_image_tokens(tfm_model *model, const char *path,
                                 tfm_tensor *rows, int64_t grid[2],
                                 tfm_status *status);
tfm_status_code tfm_image_tokens_memory(tfm_model *model, const uint8_t *data,
                                        size_t size, tfm_tensor *rows,
                                        int64_t grid[2], tfm_status *status);
/* Reads a PNG or JPEG file as RGB floats in [0, 1] ([height, width, 3],
 * *rgb malloc'd; the caller frees it), as Pillow's convert("RGB") then
 * / 255: an init image or a mask for tfm_image_generate. TFM_ERROR_IMAGE
 * says what is wrong with the file, TFM_ERROR_IO that it cannot be read.
 * Also in libtfmrt_media. */
tfm_status_code tfm_image_read(const char *path, float **rgb, int64_t *height,
                               int64_t *width, tfm_status *status);
/* Writes `rgb` ([height, width, 3] floats in [0, 1], as tfm_image_generate
 * gives) as an 8-bit RGB PNG: each value times 255, rounded, as diffusers'
 * numpy_to_pil. TFM_ERROR_IO names the file that cannot be written;
 * TFM_ERROR_INVALID_ARGUMENT a size out of PNG's range. Also in
 * libtfmrt_media. */
tfm_status_code tfm_image_write_png(const char *path, const float *rgb,
                                    int64_t height, int64_t width,
                                    tfm_status *status);
/* The PNG tfm_image_write_png writes, in memory: `*data` (allocated with
 * malloc, the caller frees it with free()) holds its `*size` bytes; both
 * are NULL and 0 after a failure. TFM_ERROR_INVALID_ARGUMENT for a size
 * out of PNG's range, TFM_ERROR_OUT_OF_MEMORY. Thread-safe. Also in
 * libtfmrt_media. */
tfm_status_code tfm_image_encode_png(const float *rgb, int64_t height,
                                     int64_t width, uint8_t **data,
                                     size_t *size, tfm_status *status);

/*===--------------------------------------------------------------------===
 * Images from text: a Stable Diffusion pipeline (desc->diffusion), its
 * sampling loop as diffusers' StableDiffusionPipeline runs it.
 *===--------------------------------------------------------------------===*/

typedef struct {
  const char *prompt;          /* UTF-8; past the text encoder's tokens it
                                  is cut, as diffusers cuts it */
  const char *negative_prompt; /* NULL: "" (the unconditional half) */
  int32_t steps;               /* inference steps; 0: 50, diffusers' */
  float guidance;              /* classifier-free guidance scale; at most 1:
                                  the prompt's half alone */
  uint64_t seed;               /* torch.Generator().manual_seed(seed) */
  /* A scheduler by name (tfm_image_scheduler_names), or NULL: the folder's
   * scheduler_config.json. */
  const char *scheduler;
  /* The initial latents [latent_channels, latent_height, latent_width]
   * before init_noise_sigma scales them (diffusers' `latents=`), or NULL:
   * torch.randn from the seed, as diffusers draws them on the CPU. */
  const float *noise;
  /* Called after each step (may be NULL). */
  void (*progress)(void *user, int32_t step, int32_t steps);
  void *user;
  /* Image-to-image (StableDiffusionImg2ImgPipeline): the image to start
   * from, [height, width, 3] in [0, 1] (NULL: text-to-image), redrawn by
   * `strength` in (0, 1] (0: diffusers' default, 0.8; 1.0 inpainting). */
  const float *init_image;
  float strength;
  /* Inpainting (StableDiffusionInpaintPipeline, a UNet of 9 input
   * channels): where to redraw, [height, width] in [0, 1], 0.5 and above
   * redrawn; needs init_image. */
  const float *mask;
} tfm_image_request;

/* Generates one image into `image`: [height, width, 3] floats in [0, 1]
 * (diffusers' output_type="np"), height and width the compiled
 * latent size times vae_scale_factor; `capacity` floats. Errors:
 * TFM_ERROR_NOT_FOUND (not a diffusion model), TFM_ERROR_INVALID_ARGUMENT
 * (steps, scheduler name, capacity, naming them), TFM_ERROR_TOKENIZER,
 * TFM_ERROR_OUT_OF_MEMORY. `*notes` (may be NULL) receives a line per
 * thing the caller should know (a prompt cut to the text encoder's
 * tokens), owned by the model until the next call. */
tfm_status_code tfm_image_generate(tfm_model *model,
                                   const tfm_image_request *request,
                                   float *image, int64_t capacity,
                                   const char **notes, tfm_status *status);
/* The scheduler names tfm_image_request.scheduler takes, comma-separated. */
const char *tfm_image_scheduler_names(void);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif

#endif /* TFM_RUNTIME_H */
