/*===- runtime_kernels.h - what generated code calls -------------*- C -*-===//
 *
 * Every runtime function that tfmc's generated code may call, and the
 * constants codegen and the runtime must agree on. Codegen (the lowering
 * that selects kernels, the weight layout), the runtime's kernels and the
 * tests include this one header, so that a change shows everywhere at once.
 * The allocation functions are in buffer_cache.h, the call frame in
 * tfm_model_abi.h. Exported from libtfmrt.so (TFM_EXPORT).
 *
 *===----------------------------------------------------------------------===*/

#ifndef TFM_RUNTIME_KERNELS_H
#define TFM_RUNTIME_KERNELS_H

#include "tfm/tfm_model_abi.h"

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Rows of a weight matrix per panel (out[p][k][j] = W[32p + j][k]): the
 * packager stores linear weights that way and the panel GEMM reads them. */
#define TFM_PANEL_WIDTH 32

/* C[m, n] += A[m, k] · B[n, k]ᵀ (B row-major, as linear weights are): it
 * adds to C, as the linalg.matmul it replaces adds to its init. */
TFM_EXPORT void _mlir_ciface_tfm_rt_matmul_nt(tfm_memref2d_f32 *a,
                                              tfm_memref2d_f32 *b,
                                              tfm_memref2d_f32 *c);
/* C = A · Wᵀ (+ bias) with W stored as panels [n / 32, k, 32]. */
TFM_EXPORT void _mlir_ciface_tfm_rt_linear_panels(tfm_memref2d_f32 *a,
                                                  tfm_memref3d_f32 *panels,
                                                  tfm_memref2d_f32 *c);
TFM_EXPORT void _mlir_ciface_tfm_rt_linear_panels_bias(
    tfm_memref2d_f32 *a, tfm_memref3d_f32 *panels, tfm_memref1d_f32 *bias,
    tfm_memref2d_f32 *c);
/* The same over bf16 and f16 panels (the raw 16-bit patterns). */
typedef TFM_MEMREF(uint16_t, 3) tfm_memref3d_u16;
TFM_EXPORT void _mlir_ciface_tfm_rt_linear_panels_bf16(
    tfm_memref2d_f32 *a, tfm_memref3d_u16 *panels, tfm_memref2d_f32 *c);
TFM_EXPORT void _mlir_ciface_tfm_rt_linear_panels_bf16_bias(
    tfm_memref2d_f32 *a, tfm_memref3d_u16 *panels, tfm_memref1d_f32 *bias,
    tfm_memref2d_f32 *c);
/* bf16 panels with every product in f32 (tfmc --compute-dtype f32): the
 * panels widened, the activations never rounded to bf16, so that a row's
 * outputs agree to f32's rounding however many rows the call has. */
TFM_EXPORT void _mlir_ciface_tfm_rt_linear_panels_bf16_widened(
    tfm_memref2d_f32 *a, tfm_memref3d_u16 *panels, tfm_memref2d_f32 *c);
TFM_EXPORT void _mlir_ciface_tfm_rt_linear_panels_bf16_widened_bias(
    tfm_memref2d_f32 *a, tfm_memref3d_u16 *panels, tfm_memref1d_f32 *bias,
    tfm_memref2d_f32 *c);
TFM_EXPORT void _mlir_ciface_tfm_rt_linear_panels_f16(
    tfm_memref2d_f32 *a, tfm_memref3d_u16 *panels, tfm_memref2d_f32 *c);
TFM_EXPORT void _mlir_ciface_tfm_rt_linear_panels_f16_bias(
    tfm_memref2d_f32 *a, tfm_memref3d_u16 *panels, tfm_memref1d_f32 *bias,
    tfm_memref2d_f32 *c);
/* C = A · Wᵀ (+ bias) with W [n, k] in block panels of `format` (a
 * tfm_weight_format; runtime/include/tfm/weight_formats.h), `bytes` their
 * bytes. */
typedef TFM_MEMREF(int8_t, 1) tfm_memref1d_i8;
TFM_EXPORT void _mlir_ciface_tfm_rt_linear_blocks(tfm_memref2d_f32 *a,
                                                  tfm_memref1d_i8 *bytes,
                                                  tfm_memref2d_f32 *c,
                                                  int64_t format);
TFM_EXPORT void _mlir_ciface_tfm_rt_linear_blocks_bias(
    tfm_memref2d_f32 *a, tfm_memref1d_i8 *bytes, tfm_memref1d_f32 *bias,
    tfm_memref2d_f32 *c, int64_t format);
/* tfm.head_linear over block panels: C[i, h, :] = A[i, h, :] · W_hᵀ for A
 * [m, heads, k] and C [m, heads, n], W_h rows [h·n, (h+1)·n) of one
 * [heads·n, k] matrix in block panels of `format`; n a multiple of
 * TFM_BLOCK_PANEL_ROWS. */
TFM_EXPORT void _mlir_ciface_tfm_rt_head_linear_blocks(tfm_memref3d_f32 *a,
                                                       tfm_memref1d_i8 *bytes,
                                                       tfm_memref3d_f32 *c,
                                                       int64_t format);
/* tfm.lora: out = projected + each row's adapter update B·(A·x), for x
 * [rows, in] and projected and out [rows, out], A and B LoRA target
 * `target`'s in the slot the runtime bound to the row for this call
 * (runtime/core/lora_bank.h); rows without one are copied. */
TFM_EXPORT void _mlir_ciface_tfm_rt_lora(tfm_memref2d_f32 *x,
                                         tfm_memref2d_f32 *projected,
                                         tfm_memref2d_f32 *out, int64_t target);
/* Gated DeltaNet's recurrence (tfm.gated_delta_rule): query and key [s,
 * Hk, dk], value [s, Hv, dv], alpha and beta [s, Hv], decay [Hv], the state
 * it starts from [Hv, dk, dv]; writes every position's read to out [s, Hv,
 * dv] and the final state to `state` (fresh, contiguous). Value head h
 * reads key head h mod Hk where `tiled`, else h / (Hv / Hk). `reset`: start
 * from zeros instead (a cached state at a sequence's first call). */
TFM_EXPORT void _mlir_ciface_tfm_rt_gated_delta_rule(
    tfm_memref3d_f32 *query, tfm_memref3d_f32 *key, tfm_memref3d_f32 *value,
    tfm_memref2d_f32 *alpha, tfm_memref1d_f32 *decay, tfm_memref2d_f32 *beta,
    tfm_memref3d_f32 *start, tfm_memref3d_f32 *out, tfm_memref3d_f32 *state,
    float scale, int64_t tiled, int64_t reset);
/* Fused attention over [seq, heads, head_dim] queries and [keys, kv_heads,
 * head_dim] keys and values (grouped-query when heads > kv_heads); causal
 * and windowed (0: no window) masks without materialized scores (a window
 * hides the keys that many positions or more behind a query; without
 * causal, every later key stays seen: Gemma 3's image rows); scores
 * soft-capped to softcap · tanh(score / softcap) where softcap > 0 (Gemma
 * 2). `sinks` ([heads], or [0]: none) adds e^(sinks[h]) to head h's softmax
 * denominator (gpt-oss's attention sinks). */
TFM_EXPORT void
_mlir_ciface_tfm_rt_attention(tfm_memref3d_f32 *q, tfm_memref3d_f32 *k,
                              tfm_memref3d_f32 *v, tfm_memref1d_f32 *sinks,
                              tfm_memref3d_f32 *out, float scale,
                              int64_t causal, int64_t window, float softcap);
/* The same with the prefill's two products, the scores q·k and the
 * weighted values, by AVX512-BF16's vdpbf16ps over queries, keys,
 * probabilities and values rounded to bf16, where the GEMMs' dot product
 * runs (f32 FMAs elsewhere); the softmax in f32 (--compute-dtype bf16 or
 * int8). */
TFM_EXPORT void _mlir_ciface_tfm_rt_attention_bf16_dot(
    tfm_memref3d_f32 *q, tfm_memref3d_f32 *k, tfm_memref3d_f32 *v,
    tfm_memref1d_f32 *sinks, tfm_memref3d_f32 *out, float scale, int64_t causal,
    int64_t window, float softcap);
/* The same plus relative-position terms by distance (T5), `distance_bias`
 * [heads, s + t - 1]: query i and key j add column t - 1 + i - j. */
TFM_EXPORT void _mlir_ciface_tfm_rt_attention_biased(
    tfm_memref3d_f32 *q, tfm_memref3d_f32 *k, tfm_memref3d_f32 *v,
    tfm_memref2d_f32 *distance_bias, tfm_memref1d_f32 *sinks,
    tfm_memref3d_f32 *out, float scale, int64_t causal, int64_t window,
    float softcap);
/* The same over keys and values cached as int8 rows (an int8 KV cache,
 * tfm.quantize_rows): [keys, kv_heads, head_dim + 4] bytes, each row its
 * codes and then its f32 scale; widened a tile at a time. */
typedef TFM_MEMREF(int8_t, 3) tfm_memref3d_i8;
TFM_EXPORT void _mlir_ciface_tfm_rt_attention_rows_i8(
    tfm_memref3d_f32 *q, tfm_memref3d_i8 *k, tfm_memref3d_i8 *v,
    tfm_memref1d_f32 *sinks, tfm_memref3d_f32 *out, float scale, int64_t causal,
    int64_t window, float softcap);
TFM_EXPORT void _mlir_ciface_tfm_rt_attention_biased_rows_i8(
    tfm_memref3d_f32 *q, tfm_memref3d_i8 *k, tfm_memref3d_i8 *v,
    tfm_memref2d_f32 *distance_bias, tfm_memref1d_f32 *sinks,
    tfm_memref3d_f32 *out, float scale, int64_t causal, int64_t window,
    float softcap);
/* The same over a bf16 or f16 KV cache's values: [keys, kv_heads,
 * head_dim] 16-bit elements, widened a tile at a time. */
TFM_EXPORT void _mlir_ciface_tfm_rt_attention_rows_bf16(
    tfm_memref3d_f32 *q, tfm_memref3d_u16 *k, tfm_memref3d_u16 *v,
    tfm_memref1d_f32 *sinks, tfm_memref3d_f32 *out, float scale, int64_t causal,
    int64_t window, float softcap);
TFM_EXPORT void _mlir_ciface_tfm_rt_attention_biased_rows_bf16(
    tfm_memref3d_f32 *q, tfm_memref3d_u16 *k, tfm_memref3d_u16 *v,
    tfm_memref2d_f32 *distance_bias, tfm_memref1d_f32 *sinks,
    tfm_memref3d_f32 *out, float scale, int64_t causal, int64_t window,
    float softcap);
TFM_EXPORT void _mlir_ciface_tfm_rt_attention_rows_f16(
    tfm_memref3d_f32 *q, tfm_memref3d_u16 *k, tfm_memref3d_u16 *v,
    tfm_memref1d_f32 *sinks, tfm_memref3d_f32 *out, float scale, int64_t causal,
    int64_t window, float softcap);
TFM_EXPORT void _mlir_ciface_tfm_rt_attention_biased_rows_f16(
    tfm_memref3d_f32 *q, tfm_memref3d_u16 *k, tfm_memref3d_u16 *v,
    tfm_memref2d_f32 *distance_bias, tfm_memref1d_f32 *sinks,
    tfm_memref3d_f32 *out, float scale, int64_t causal, int64_t window,
    float softcap);
/* The same over several sequences packed end to end (s = t rows, `lengths`
 * of them summing to s): a query sees only its own sequence's keys. */
typedef TFM_MEMREF(int32_t, 1) tfm_memref1d_i32;
TFM_EXPORT void _mlir_ciface_tfm_rt_attention_packed(
    tfm_memref3d_f32 *q, tfm_memref3d_f32 *k, tfm_memref3d_f32 *v,
    tfm_memref1d_i32 *lengths, tfm_memref1d_f32 *sinks, tfm_memref3d_f32 *out,
    float scale, int64_t causal, int64_t window, float softcap);
/* And with bf16 products, as tfm_rt_attention_bf16_dot. */
TFM_EXPORT void _mlir_ciface_tfm_rt_attention_packed_bf16_dot(
    tfm_memref3d_f32 *q, tfm_memref3d_f32 *k, tfm_memref3d_f32 *v,
    tfm_memref1d_i32 *lengths, tfm_memref1d_f32 *sinks, tfm_memref3d_f32 *out,
    float scale, int64_t causal, int64_t window, float softcap);
/* Attention within windows of `window` consecutive rows (tfm.window_attention,
 * Swin), window w of head h adding bias[w mod b, h] ([b, heads, window,
 * window]) to its scores; window <= 256 and head_dim <= 256. */
typedef TFM_MEMREF(float, 4) tfm_memref4d_f32;
TFM_EXPORT void _mlir_ciface_tfm_rt_window_attention(
    tfm_memref3d_f32 *q, tfm_memref3d_f32 *k, tfm_memref3d_f32 *v,
    tfm_memref4d_f32 *bias, tfm_memref3d_f32 *out, float scale, int64_t window);
/* Longformer's attention (tfm.sparse_attention) over s rows: a query that
 * is not global sees the keys within `window` on either side and every
 * global key; a global query sees every key through gq, gk and gv. Global:
 * global[j] != 0 (when `global` has s entries; an empty one: none) or
 * j < global_prefix. */
TFM_EXPORT void _mlir_ciface_tfm_rt_sparse_attention(
    tfm_memref3d_f32 *q, tfm_memref3d_f32 *k, tfm_memref3d_f32 *v,
    tfm_memref3d_f32 *gq, tfm_memref3d_f32 *gk, tfm_memref3d_f32 *gv,
    tfm_memref1d_i32 *global, tfm_memref3d_f32 *out, float scale,
    int64_t window, int64_t global_prefix);

/* out[i, :] = W[ids[i], :] · scale for W in block panels (an embedding
 * table stored in blocks); ids were range-checked by the caller. */
TFM_EXPORT void _mlir_ciface_tfm_rt_embedding_blocks(tfm_memref1d_i32 *ids,
                                                     tfm_memref1d_i8 *bytes,
                                                     tfm_memref2d_f32 *out,
                                                     int64_t format,
                                                     float scale);
/* out = W, the whole matrix in f32 (where no kernel reads the blocks). */
TFM_EXPORT void _mlir_ciface_tfm_rt_dequantize_blocks(tfm_memref1d_i8 *bytes,
                                                      tfm_memref2d_f32 *out,
                                                      int64_t format);

/* MLIR's memref.copy of any rank (an unranked descriptor: rank, then a
 * pointer to the ranked one). */
typedef struct {
  int64_t rank;
  void *descriptor;
} tfm_unranked_memref;
TFM_EXPORT void memrefCopy(int64_t elem_size, tfm_unranked_memref *src,
                           tfm_unranked_memref *dst);

/* A parallel loop's body (tfm-parallelize-loops): iterations [begin, end)
 * on thread `thread`. */
typedef void (*tfm_parallel_body)(void *context, int64_t begin, int64_t end,
                                  int thread);
/* `n` independent iterations of about `iteration_cost` operations each. */
TFM_EXPORT void tfm_rt_parallel_loop(int64_t n, int64_t iteration_cost,
                                     tfm_parallel_body body, void *context);

/* Pipeline stages (tfmc --pipeline-stages; libtfmrt_mpi): every rank runs
 * the same code, stage s on group (s + 1) mod P of the ranks (a group: the
 * stage's tensor-parallel ranks, tfmc --ranks), so the last on rank 0's.
 * receive: the first stage's out is `in`, stage s's the rows stage s - 1
 * sent; send: stage s sends `in` to stage s + 1 (the last sends nothing).
 * Rows [rows, features] of the operand's shape. */
TFM_EXPORT void _mlir_ciface_tfm_rt_pipeline_receive(tfm_memref2d_f32 *in,
                                                     tfm_memref2d_f32 *out);
TFM_EXPORT void _mlir_ciface_tfm_rt_pipeline_send(tfm_memref2d_f32 *in);
/* This rank's stage, 0 to P - 1 (the code of stages of unequal layers
 * picks its count by it: tfm.pipeline_stage_layers). */
TFM_EXPORT int64_t tfm_rt_pipeline_stage(void);
/* 1 on the ranks of the last stage (rank 0's group), else 0. */
TFM_EXPORT int64_t tfm_rt_pipeline_last_stage(void);
/* The communicator of this rank's stage's tensor-parallel ranks, which the
 * model's all-reduces run on (MPI_COMM_WORLD where a stage is one rank), as
 * the handle MPI_Comm is, carried in an int64_t. */
TFM_EXPORT int64_t tfm_rt_stage_comm(void);

#ifdef __cplusplus
}
#endif

#endif /* TFM_RUNTIME_KERNELS_H */
