/*===- tfm_model_abi.h - what a compiled model exports -----------*- C -*-===//
 *
 * The contract between tfmc's generated code and the runtime. The model's
 * `forward` follows MLIR's C interface (`llvm.emit_c_interface`): memrefs are
 * passed as pointers to descriptors, and the result descriptor (logits
 * [positions, vocab], from _mlir_memref_to_llvm_alloc (buffer_cache.h), owned
 * by the caller)
 * comes first.
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_TFM_MODEL_ABI_H
#define TFM_RUNTIME_TFM_MODEL_ABI_H

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

/* Everything the runtime needs to know about one compiled model; tfmc
 * generates one constant instance per model. */
typedef struct tfm_model_desc {
  const char *name;
  int64_t vocab_size;
  int64_t max_context;
  int32_t bos_token; /* -1: none */
  int32_t eos_token; /* -1: none */
  /* Whether encoded prompts start with BOS (LLaMA's tokenizers do, GPT-2's
   * does not). */
  int32_t add_bos;
  /* Embedded weights, or NULL with `weights_file` naming the side file
   * (relative paths are resolved beside the executable). */
  const uint8_t *weights;
  const char *weights_file;
  uint64_t weights_size;
  uint64_t weights_checksum;
  /* Tokenizer blob (tfm_format.h), or NULL when compiled without one. */
  const uint8_t *tokenizer;
  uint64_t tokenizer_size;
  tfm_forward_fn forward;
  /* The KV cache [layers, 2, capacity, kv_heads, head_dim] of prefill and
   * decode; cache_layers is 0 (and both NULL) when compiled without. */
  int64_t cache_layers;
  int64_t cache_capacity;
  int64_t cache_kv_heads;
  int64_t cache_head_dim;
  tfm_prefill_fn prefill;
  tfm_prefill_fn decode;
  /* Sliding-window attention in every layer (0: none): the runtime then
   * keeps only the last window - 1 positions when the cache is full. */
  int64_t sliding_window;
} tfm_model_desc;

#ifdef __cplusplus
}
#endif

#endif /* TFM_RUNTIME_TFM_MODEL_ABI_H */
