#!/usr/bin/env python3
"""NumPy (float64) reference for gpt-oss (openai/gpt-oss-20b, -120b): attention
with sinks, alternating sliding/full layers, the top-k-then-softmax router, the
clamped SwiGLU experts with biases, and MXFP4 expert weights.

What it was transcribed from (docs/plans/gpt-oss-gemma4.md has the plan, the
GGUF layout and where the sources disagree):
  * Hugging Face transformers, src/transformers/models/gpt_oss/modeling_gpt_oss.py
    (stored versions at commits 00d4b3d2142cb4ced2f51b90614b5d26bc045015 and
    6edf5b311854175ff83c59179b3360beca1ceffc; the maths is the same in both):
    GptOssExperts, GptOssTopKRouter, _apply_rotary_emb, eager_attention_forward,
    GptOssDecoderLayer.
  * transformers src/transformers/integrations/mxfp4.py (commit
    0189b1d09a03a87ec4f59831acb93cc1832d14e7): FP4_VALUES, convert_moe_packed_tensors,
    Mxfp4GptOssExperts (the *_blocks / *_scales shapes).
  * transformers modeling_rope_utils.py _compute_yarn_parameters (truncate).
  * llama.cpp (local, de3ff81): src/models/openai-moe.cpp, src/llama-graph.cpp
    build_moe_ffn (LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX_WEIGHT, LLM_FFN_SWIGLU_OAI_MOE),
    ggml/src/ggml-cpu/ops.cpp (ggml_compute_forward_swiglu_oai_f32, soft_max with
    sinks, flash attention's sink step), conversion/gpt_oss.py (repack_mxfp4,
    transform_nibble_layout, the gate/up split), ggml/src/ggml-common.h
    (block_mxfp4, kvalues_mxfp4), ggml/src/ggml-quants.c (quantize_row_mxfp4_ref,
    dequantize_row_mxfp4), ggml/src/ggml-impl.h (ggml_e8m0_to_fp32{,_half}).

Conventions
  * One sequence, no batch axis: x is [T, hidden]. positions: int [T].
  * Weights are dicts keyed by Hugging Face names ("model.layers.N." dropped
    inside a layer). nn.Linear weights are [out, in] (y = x @ W.T + b). The
    experts are HF's bf16 layout: gate_up_proj [E, hidden, 2I] and down_proj
    [E, I, hidden], i.e. [in, out] (y = x @ W + b), gate and up INTERLEAVED in
    the last dim (gate = [..., ::2], up = [..., 1::2]).
  * Everything runs in float64. HF keeps the norms in fp32, RoPE's cos/sin in
    fp32 and the checkpoint's sinks in bf16; llama.cpp stores the sinks as f32.

Run:  /usr/bin/python3 test/e2e/reference/gpt_oss.py   (self-tests; prints PASS lines)
"""

import math

import numpy as np

from common import rms_norm, sigmoid, softmax, topk_indices, yarn_parameters

# ----------------------------------------------------------------------------
# small pieces
# ----------------------------------------------------------------------------


def layer_types(cfg):
    """GptOssConfig's default: even layers sliding, odd ones full (the 20b/120b
    configs list exactly that: ["sliding_attention", "full_attention"] * n/2)."""
    if cfg.get("layer_types"):
        return list(cfg["layer_types"])
    return ["sliding_attention" if (i + 1) % 2 else "full_attention" for i in range(cfg["num_hidden_layers"])]


def head_dim(cfg):
    return cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]


# ----------------------------------------------------------------------------
# RoPE with YaRN (gpt-oss: factor 32, original 4096, beta_fast 32, beta_slow 1,
# truncate false, theta 150000, rotary over the whole 64-wide head)
# ----------------------------------------------------------------------------


def yarn_inv_freq(cfg, truncate=None):
    """transformers _compute_yarn_parameters. Returns (inv_freq [d/2], attention_factor).

    The attention factor (0.1 ln(factor) + 1 = 1.3466 for gpt-oss) multiplies cos
    and sin, so the scores by its square."""
    base = float(cfg["rope_theta"])
    dim = head_dim(cfg)
    rs = cfg.get("rope_scaling")
    if not rs:
        return 1.0 / base ** (np.arange(0, dim, 2) / dim), 1.0
    return yarn_parameters(base, dim, rs, cfg.get("max_position_embeddings"), truncate)


def rope_cos_sin(positions, inv_freq, attention_factor):
    """GptOssRotaryEmbedding.forward: emb = freqs (NOT cat(freqs, freqs)): cos/sin are
    [T, d/2] and _apply_rotary_emb works on the two halves."""
    freqs = np.asarray(positions, dtype=np.float64)[:, None] * inv_freq[None, :]
    return np.cos(freqs) * attention_factor, np.sin(freqs) * attention_factor


def apply_rope(x, cos, sin):
    """_apply_rotary_emb on x [T, heads, d]: the pairs (i, i + d/2), i.e. rotate_half
    (GGUF: NeoX rope, LLM_ARCH_OPENAI_MOE in llama_model_rope_type)."""
    d2 = x.shape[-1] // 2
    first, second = x[..., :d2], x[..., d2:]
    c, s = cos[:, None, :], sin[:, None, :]
    return np.concatenate([first * c - second * s, second * c + first * s], axis=-1)


# ----------------------------------------------------------------------------
# Attention with sinks
# ----------------------------------------------------------------------------


def visible(q_pos, k_pos, window):
    """Causal, and for a sliding layer the `window` most recent keys including the
    query's own: HF's sliding mask keeps kv > q - window; llama.cpp masks
    p_q - p_k >= n_swa (llama_hparams::is_masked_swa, LLAMA_SWA_TYPE_STANDARD)."""
    ok = k_pos[None, :] <= q_pos[:, None]
    if window:
        ok &= k_pos[None, :] > q_pos[:, None] - window
    return ok


def attention_sinks_hf(q, k, v, sinks, scale, q_pos, k_pos, window=None):
    """eager_attention_forward: the sink of head h is one more logit column, appended
    AFTER the scores are scaled and masked (so it is neither scaled nor masked),
    the row max taken over it too, softmax, the column dropped. The kept
    probabilities sum to less than 1. Returns (out [S, H, dv], probs [H, S, T])."""
    S, H, _ = q.shape
    group = H // k.shape[1]
    kk, vv = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    logits = np.einsum("shd,thd->hst", q, kk) * scale
    logits = np.where(visible(q_pos, k_pos, window)[None], logits, -np.inf)
    if sinks is None:
        probs = softmax(logits)
    else:
        col = np.broadcast_to(np.asarray(sinks, dtype=np.float64)[:, None, None], (H, S, 1))
        combined = np.concatenate([logits, col], axis=-1)
        combined = combined - np.max(combined, axis=-1, keepdims=True)
        e = np.exp(combined)
        probs = (e / e.sum(-1, keepdims=True))[..., :-1]
    return np.einsum("hst,thd->shd", probs, vv), probs


def _partials(qh, kk, vv, scale, allowed):
    """One chunk's online-softmax state of one query: (max, sum, unnormalised o)."""
    s = np.where(allowed, kk @ qh * scale, -np.inf)
    m = np.max(s) if s.size else -np.inf
    if not np.isfinite(m):
        return -np.inf, 0.0, np.zeros(vv.shape[-1])
    p = np.exp(s - m)
    return m, p.sum(), p @ vv


def attention_sinks_online(q, k, v, sinks, scale, q_pos, k_pos, window=None, tile=3):
    """The flash form (ggml_compute_forward_flash_attn_ext's sink step; what
    runtime/kernels/attention_block.inc would do): keys a tile at a time with a
    running max m, sum l and output o, then the sink once, as a logit with no value:
    M = max(m, sink); o *= e^(m-M); l = l e^(m-M) + e^(sink-M); out = o / l."""
    S, H, _ = q.shape
    group = H // k.shape[1]
    ok = visible(q_pos, k_pos, window)
    out = np.zeros((S, H, v.shape[-1]))
    for h in range(H):
        kk, vv = k[:, h // group], v[:, h // group]
        for i in range(S):
            m, l, o = -np.inf, 0.0, np.zeros(v.shape[-1])
            for j0 in range(0, k.shape[0], tile):
                mc, lc, oc = _partials(q[i, h], kk[j0:j0 + tile], vv[j0:j0 + tile], scale, ok[i, j0:j0 + tile])
                new = max(m, mc)
                if not np.isfinite(new):
                    continue
                a, b = math.exp(m - new) if np.isfinite(m) else 0.0, math.exp(mc - new) if np.isfinite(mc) else 0.0
                m, l, o = new, l * a + lc * b, o * a + oc * b
            if sinks is not None:
                new = max(m, float(sinks[h]))
                a = math.exp(m - new) if np.isfinite(m) else 0.0
                m, l, o = new, l * a + math.exp(float(sinks[h]) - new), o * a
            out[i, h] = o / l if l > 0 else 0.0
    return out


def attention_sinks_chunked(q, k, v, sinks, scale, q_pos, k_pos, window=None, chunk=4):
    """The decode form (runtime/kernels/kernels_attention_decode.c merge_chunks, one
    query): chunks of keys give (max_c, sum_c, o_c); the merge takes M over the chunks'
    maxima AND the sink, total = sum_c e^(max_c - M) sum_c + e^(sink - M)."""
    S, H, _ = q.shape
    group = H // k.shape[1]
    ok = visible(q_pos, k_pos, window)
    out = np.zeros((S, H, v.shape[-1]))
    for h in range(H):
        kk, vv = k[:, h // group], v[:, h // group]
        for i in range(S):
            parts = [_partials(q[i, h], kk[c:c + chunk], vv[c:c + chunk], scale, ok[i, c:c + chunk])
                     for c in range(0, k.shape[0], chunk)]
            M = max([p[0] for p in parts] + ([float(sinks[h])] if sinks is not None else []))
            total, o = 0.0, np.zeros(v.shape[-1])
            for mc, lc, oc in parts:
                if np.isfinite(mc):
                    w = math.exp(mc - M)
                    total += w * lc
                    o += w * oc
            if sinks is not None:
                total += math.exp(float(sinks[h]) - M)
            out[i, h] = o / total if total > 0 else 0.0
    return out


# ----------------------------------------------------------------------------
# Router and experts
# ----------------------------------------------------------------------------


def router_hf(h, weight, bias, top_k):
    """GptOssTopKRouter: logits = x W^T + b; top-k of the LOGITS; softmax over the k
    selected only. Returns (scores [T, E], zero outside the chosen; indices [T, k])."""
    logits = h @ weight.T + bias
    idx = topk_indices(logits, top_k)
    top = np.take_along_axis(logits, idx, -1)
    scores = np.zeros_like(logits)
    np.put_along_axis(scores, idx, softmax(top), -1)
    return scores, idx


def router_ggml(logits, top_k):
    """build_moe_ffn with LLAMA_EXPERT_GATING_FUNC_TYPE_SOFTMAX_WEIGHT: probs = logits
    (biased by ffn_gate_inp.bias), argsort top-k, then softmax over the k weights."""
    idx = topk_indices(logits, top_k)
    return idx, softmax(np.take_along_axis(logits, idx, -1))


def router_tfm(logits, top_k):
    """tfm.moe / tfm.route with `normalize`: softmax over all experts, top-k,
    renormalised. Equal to the above: exp(l_i) / sum_{j in top-k} exp(l_j) either way,
    and softmax is monotone so the same k are chosen."""
    p = softmax(logits)
    idx = topk_indices(p, top_k)
    w = np.take_along_axis(p, idx, -1)
    return idx, w / w.sum(-1, keepdims=True)


def swiglu_oai(gate, up, alpha=1.702, limit=7.0):
    """GptOssExperts / ggml_compute_forward_swiglu_oai_f32: the gate clamped ABOVE
    only, up clamped both ways, and +1 on up:
        (clamp(up, -L, L) + 1) * g * sigmoid(alpha g),  g = min(gate, L)."""
    g = np.minimum(gate, limit)
    u = np.clip(up, -limit, limit)
    return (u + 1.0) * (g * sigmoid(alpha * g))


def quick_gelu(x):
    """tfm's ActivationKind::quick_gelu, x sigma(1.702 x): exactly gpt-oss's glu."""
    return x * sigmoid(1.702 * x)


def experts_hf(x, scores, gate_up, gate_up_bias, down, down_bias, limit=7.0, alpha=1.702):
    """GptOssExperts.forward (both paths): every expert times its routing score, which
    is 0 for the experts not chosen (so their biases do not leak in)."""
    out = np.zeros_like(x)
    for e in range(gate_up.shape[0]):
        if not np.any(scores[:, e]):
            continue
        gu = x @ gate_up[e] + gate_up_bias[e]
        gate, up = gu[..., ::2], gu[..., 1::2]
        gate = np.minimum(gate, limit)
        up = np.clip(up, -limit, limit)
        glu = gate * sigmoid(gate * alpha)
        o = ((up + 1.0) * glu) @ down[e] + down_bias[e]
        out += o * scores[:, e:e + 1]
    return out


def split_experts_hf(w, prefix="mlp.experts."):
    """conversion/gpt_oss.py for bf16 experts: gate_up_proj [E, H, 2I] transposed to
    [E, 2I, H] and split by rows ::2 (gate) / 1::2 (up); down_proj [E, I, H] transposed
    to [E, H, I]; biases split the same way. All [out, in] per expert, as GGUF's
    ffn_{gate,up,down}_exps (ne {H, I, E} / {I, H, E}) and tfm.moe want them."""
    gu = np.transpose(w[prefix + "gate_up_proj"], (0, 2, 1))
    b = w[prefix + "gate_up_proj_bias"]
    return {"gate": gu[:, ::2], "up": gu[:, 1::2], "gate_b": b[:, ::2], "up_b": b[:, 1::2],
            "down": np.transpose(w[prefix + "down_proj"], (0, 2, 1)), "down_b": w[prefix + "down_proj_bias"]}


def experts_routed(x, idx, weights, s, act):
    """Per token, its k experts: act(x W_gate^T + b_gate, x W_up^T + b_up) W_down^T + b_down,
    times the weight (llama.cpp's mul_mat_id + add_id; tfm's expanded experts)."""
    out = np.zeros_like(x)
    for t in range(x.shape[0]):
        for j in range(idx.shape[1]):
            e = idx[t, j]
            g = x[t] @ s["gate"][e].T + s["gate_b"][e]
            u = x[t] @ s["up"][e].T + s["up_b"][e]
            out[t] += weights[t, j] * (act(g, u) @ s["down"][e].T + s["down_b"][e])
    return out


def tfm_folded(s, limit=7.0):
    """What the frontend would give tfm.moe: up's bias + 1, so that the op computes
    quick_gelu(min(g, L)) * clamp(u', 1 - L, 1 + L) with u' = x W_up^T + (b_up + 1):
    clamp(u, -L, L) + 1 == clamp(u + 1, 1 - L, 1 + L)."""
    f = dict(s)
    f["up_b"] = s["up_b"] + 1.0

    def act(g, u):
        return quick_gelu(np.minimum(g, limit)) * np.clip(u, 1.0 - limit, 1.0 + limit)

    return f, act


def moe(h, w, cfg, form="hf"):
    k, limit = cfg["num_experts_per_tok"], cfg.get("swiglu_limit", 7.0)
    if form == "hf":
        scores, _ = router_hf(h, w["mlp.router.weight"], w["mlp.router.bias"], k)
        return experts_hf(h, scores, w["mlp.experts.gate_up_proj"], w["mlp.experts.gate_up_proj_bias"],
                          w["mlp.experts.down_proj"], w["mlp.experts.down_proj_bias"], limit)
    logits = h @ w["mlp.router.weight"].T + w["mlp.router.bias"]
    s = split_experts_hf(w)
    if form == "ggml":
        idx, wts = router_ggml(logits, k)
        return experts_routed(h, idx, wts, s, lambda g, u: swiglu_oai(g, u, 1.702, limit))
    idx, wts = router_tfm(logits, k)
    f, act = tfm_folded(s, limit)
    return experts_routed(h, idx, wts, f, act)


# ----------------------------------------------------------------------------
# Decoder layer and model
# ----------------------------------------------------------------------------


def attention_block(h, w, cfg, layer, positions, cache=None, form="hf"):
    """GptOssAttention: q/k/v/o projections all with biases (attention_bias true),
    RoPE on q and k, scale head_dim^-0.5, sinks, the sliding window (128) on the
    layers listed "sliding_attention". `cache`: {layer: (keys, values, key_positions)}
    updated in place; with cache["ring"] a sliding layer keeps only its window's
    last positions (what tfm-kv-cache's rings hold)."""
    T = h.shape[0]
    H, KV, d = cfg["num_attention_heads"], cfg["num_key_value_heads"], head_dim(cfg)
    q = (h @ w["self_attn.q_proj.weight"].T + w["self_attn.q_proj.bias"]).reshape(T, H, d)
    k = (h @ w["self_attn.k_proj.weight"].T + w["self_attn.k_proj.bias"]).reshape(T, KV, d)
    v = (h @ w["self_attn.v_proj.weight"].T + w["self_attn.v_proj.bias"]).reshape(T, KV, d)
    inv, af = yarn_inv_freq(cfg)
    cos, sin = rope_cos_sin(positions, inv, af)
    q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
    window = cfg["sliding_window"] if layer_types(cfg)[layer] == "sliding_attention" else None
    k_pos = np.asarray(positions)
    if cache is not None:
        pk, pv, pp = cache.get(layer, (np.zeros((0, KV, d)), np.zeros((0, KV, d)), np.zeros(0, dtype=int)))
        k, v, k_pos = np.concatenate([pk, k]), np.concatenate([pv, v]), np.concatenate([pp, k_pos])
        keep = slice(None)
        if window and cache.get("ring"):
            keep = slice(max(0, len(k_pos) - window), None)
        cache[layer] = (k[keep], v[keep], k_pos[keep])
    sinks = w["self_attn.sinks"]
    scale = d ** -0.5
    if form == "hf":
        o, _ = attention_sinks_hf(q, k, v, sinks, scale, np.asarray(positions), k_pos, window)
    elif form == "ggml":
        o = attention_sinks_online(q, k, v, sinks, scale, np.asarray(positions), k_pos, window)
    else:
        o = attention_sinks_chunked(q, k, v, sinks, scale, np.asarray(positions), k_pos, window)
    return o.reshape(T, H * d) @ w["self_attn.o_proj.weight"].T + w["self_attn.o_proj.bias"]


def decoder_layer(x, w, cfg, layer, positions, cache=None, form="hf"):
    """GptOssDecoderLayer: pre-norm attention and MoE, both residual. GGUF names the
    second norm blk.N.post_attention_norm (ATTN_POST_NORM) though it is the MoE's input
    norm (openai-moe.cpp: attn_post_norm)."""
    eps = cfg["rms_norm_eps"]
    h = rms_norm(x, w["input_layernorm.weight"], eps)
    x = x + attention_block(h, w, cfg, layer, positions, cache, form)
    h = rms_norm(x, w["post_attention_layernorm.weight"], eps)
    return x + moe(h, w, cfg, form)


def layer_weights(weights, layer):
    p = "model.layers.%d." % layer
    return {k[len(p):]: v for k, v in weights.items() if k.startswith(p)}


def forward(tokens, weights, cfg, cache=None, start=0, form="hf"):
    """GptOssForCausalLM: embeddings (not scaled), layers, final RMSNorm, untied
    lm_head (tie_word_embeddings false). Returns logits [T, vocab]."""
    positions = start + np.arange(len(tokens))
    x = weights["model.embed_tokens.weight"][np.asarray(tokens)]
    for layer in range(cfg["num_hidden_layers"]):
        x = decoder_layer(x, layer_weights(weights, layer), cfg, layer, positions, cache, form)
    x = rms_norm(x, weights["model.norm.weight"], cfg["rms_norm_eps"])
    return x @ weights["lm_head.weight"].T


# ----------------------------------------------------------------------------
# MXFP4
# ----------------------------------------------------------------------------

# transformers integrations/mxfp4.py FP4_VALUES: E2M1, index = sign bit (8) | 3-bit
# magnitude code. Code 8 is -0.0.
FP4_VALUES = np.array([+0.0, +0.5, +1.0, +1.5, +2.0, +3.0, +4.0, +6.0,
                       -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0])
# ggml-common.h kvalues_mxfp4 (= kvalues_fp4): the same table DOUBLED, as int8, so
# that the block scale is halved (GGML_E8M0_TO_FP32_HALF) to compensate.
KVALUES_MXFP4 = np.array([0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12], dtype=np.int8)
QK_MXFP4 = 32
BLOCK_BYTES = 1 + QK_MXFP4 // 2  # block_mxfp4: uint8 e; uint8 qs[16]  (17 bytes, 4.25 bits/weight)


def e8m0_to_fp32(e):
    """ggml_e8m0_to_fp32, bit for bit: 2^(e - 127); e = 0 is the denormal 2^-127
    (bits 0x00400000). e = 255 (NaN in the OCP spec) is refused by
    ggml_validate_row_data (validate_e_e8m0)."""
    e = np.asarray(e, dtype=np.uint32)
    bits = np.where(e == 0, np.uint32(0x00400000), e << np.uint32(23)).astype(np.uint32)
    return bits.view(np.float32).astype(np.float64)


def e8m0_to_fp32_half(e):
    """ggml_e8m0_to_fp32_half: 2^(e - 128); e < 2 are the denormals 0x00200000 << e."""
    e = np.asarray(e, dtype=np.uint32)
    bits = np.where(e < 2, np.uint32(0x00200000) << e, (e - np.uint32(1)) << np.uint32(23)).astype(np.uint32)
    return bits.view(np.float32).astype(np.float64)


def hf_dequant(blocks, scales):
    """convert_moe_packed_tensors: blocks [..., G, 16] uint8, scales [..., G] uint8
    (prefix [E, rows]); element 2j of a group is FP4_VALUES[byte j & 0xF], element
    2j + 1 FP4_VALUES[byte j >> 4] (LOW nibble first); times 2^(scale - 127) (ldexp
    with scales - 127); rows of G*32; then .transpose(1, 2): the result is [E, cols,
    rows] = [E, in, out], the bmm layout of GptOssExperts."""
    assert blocks.shape[:-1] == scales.shape
    exp = scales.astype(np.int64) - 127
    lo, hi = FP4_VALUES[blocks & 0x0F], FP4_VALUES[blocks >> 4]
    vals = np.empty(blocks.shape[:-1] + (32,))
    vals[..., 0::2], vals[..., 1::2] = lo, hi
    vals = np.ldexp(vals, exp[..., None])
    out = vals.reshape(blocks.shape[:-2] + (blocks.shape[-2] * 32,))
    return np.swapaxes(out, 1, 2)


def transform_nibble_layout(t):
    """conversion/gpt_oss.py GptOssModel.transform_nibble_layout, op for op (uint8
    arithmetic wraps as torch's does): HF's byte j = (element 2j low, 2j+1 high) becomes
    ggml's byte j = (element j low, element j + 16 high)."""
    t = np.asarray(t, dtype=np.uint8)
    assert t.shape[-1] == 16
    t_lo, t_hi = t & 0x0F, t & 0xF0
    t = ((t_lo << 4) | (t_hi >> 4)).astype(np.uint8)  # swap nibbles
    blk_a, blk_b = t[..., :8], t[..., 8:]
    a0, a1 = (blk_a & 0xF0).reshape(-1, 1), (blk_a << 4).astype(np.uint8).reshape(-1, 1)
    blk_a = np.stack((a0, a1), axis=2).reshape(t.shape)
    b0, b1 = (blk_b >> 4).reshape(-1, 1), (blk_b & 0x0F).reshape(-1, 1)
    blk_b = np.stack((b0, b1), axis=2).reshape(t.shape)
    out = (blk_a | blk_b).astype(np.uint8)
    return (((out & 0xF0) >> 4) | ((out & 0x0F) << 4)).astype(np.uint8)


def nibbles_hf_to_ggml(t):
    """The same reordering said plainly: unpack the 32 codes, repack (j, j + 16)."""
    t = np.asarray(t, dtype=np.uint8)
    codes = np.empty(t.shape[:-1] + (32,), dtype=np.uint8)
    codes[..., 0::2], codes[..., 1::2] = t & 0x0F, t >> 4
    return (codes[..., :16] | (codes[..., 16:] << 4)).astype(np.uint8)


def repack_mxfp4(blocks, scales):
    """GptOssModel.repack_mxfp4: [E, rows, G, 16] + [E, rows, G] -> bytes [E, rows, G*17],
    each block its E8M0 byte then its 16 re-nibbled bytes (block_mxfp4). The GGUF
    tensor is GGML_TYPE_MXFP4 (39) with ne {G*32, rows, E}."""
    data = np.concatenate([scales[..., None].astype(np.uint8), transform_nibble_layout(blocks)], axis=-1)
    return data.reshape(data.shape[0], data.shape[1], -1)


def ggml_dequant_row(row_bytes):
    """dequantize_row_mxfp4 over one row of blocks: element j < 16 of a block is
    kvalues[qs[j] & 0xF] * d, element j + 16 kvalues[qs[j] >> 4] * d, d =
    E8M0_TO_FP32_HALF(e)."""
    b = np.asarray(row_bytes, dtype=np.uint8).reshape(-1, BLOCK_BYTES)
    d = e8m0_to_fp32_half(b[:, 0])[:, None]
    qs = b[:, 1:]
    lo = KVALUES_MXFP4[qs & 0x0F].astype(np.float64)
    hi = KVALUES_MXFP4[qs >> 4].astype(np.float64)
    return (np.concatenate([lo, hi], axis=1) * d).reshape(-1)


def ggml_quantize_row(x):
    """quantize_row_mxfp4_ref: e = floor(log2(amax)) - 2 + 127 (0 for an all-zero block:
    the OCP rule, shared exponent = floor(log2 amax) - emax(E2M1) = ... - 2), d =
    2^(e - 128); each element the index of the nearest kvalues[i] * d, the first on
    ties (so never 8, the -0). Elements 0-15 in the low nibbles, 16-31 high."""
    x = np.asarray(x, dtype=np.float64).reshape(-1, QK_MXFP4)
    out = np.zeros((x.shape[0], BLOCK_BYTES), dtype=np.uint8)
    for i, blk in enumerate(x):
        amax = np.max(np.abs(blk))
        e = int(math.floor(math.log2(amax)) - 2 + 127) if amax > 0 else 0
        assert 0 <= e < 255, "a block of magnitude outside E8M0's range"
        d = float(e8m0_to_fp32_half(e))
        grid = KVALUES_MXFP4.astype(np.float64) * d
        idx = np.argmin(np.abs(grid[None, :] - blk[:, None]), axis=1)  # first minimum
        out[i, 0] = e
        out[i, 1:] = (idx[:16] | (idx[16:] << 4)).astype(np.uint8)
    return out.reshape(-1)


def ggml_to_hf_block(row_bytes):
    """One row of block_mxfp4 bytes back to HF's (blocks [G, 16], scales [G])."""
    b = np.asarray(row_bytes, dtype=np.uint8).reshape(-1, BLOCK_BYTES)
    qs = b[:, 1:]
    codes = np.concatenate([qs & 0x0F, qs >> 4], axis=1)
    return (codes[:, 0::2] | (codes[:, 1::2] << 4)).astype(np.uint8), b[:, 0].copy()


def mxfp4_experts(weights, cfg):
    """The stacked experts of every layer as the MXFP4 release stores them:
    each output row's blocks of 32 quantized as ggml's quantize_row_mxfp4_ref
    does (the one MXFP4 encoder at hand), then laid out as Hugging Face's
    *_blocks [E, rows, G, 16] (element 2j in byte j's low nibble) and
    *_scales [E, rows, G]. Returns (the uint8 arrays by name, the dequantized
    [in, out] stacks a reference multiplies)."""
    stored, values = {}, {}
    for l in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d.mlp.experts." % l
        for name in ("gate_up_proj", "down_proj"):
            rows = np.swapaxes(weights[p + name], 1, 2)  # [E, out, in]
            E, out, inp = rows.shape
            packed = np.stack([ggml_quantize_row(r).reshape(-1, BLOCK_BYTES)
                               for r in rows.reshape(E * out, inp)])
            blocks, scales = zip(*(ggml_to_hf_block(r) for r in packed))
            blocks = np.stack(blocks).reshape(E, out, inp // 32, 16)
            scales = np.stack(scales).reshape(E, out, inp // 32)
            stored[p + name + "_blocks"] = blocks
            stored[p + name + "_scales"] = scales
            values[p + name] = hf_dequant(blocks, scales)
    return stored, values


# ----------------------------------------------------------------------------
# random weights and self-tests
# ----------------------------------------------------------------------------


def small_config():
    return {
        "vocab_size": 50, "hidden_size": 32, "num_hidden_layers": 4,
        "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 8,
        "intermediate_size": 12, "num_local_experts": 4, "num_experts_per_tok": 2,
        "sliding_window": 4, "rms_norm_eps": 1e-5, "rope_theta": 150000.0,
        "max_position_embeddings": 256, "swiglu_limit": 7.0,
        "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "beta_fast": 32.0, "beta_slow": 1.0,
                         "original_max_position_embeddings": 16, "truncate": False},
    }


def random_weights(cfg, rng, scale=0.4):
    D, H, KV, d = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], head_dim(cfg)
    E, I, V = cfg["num_local_experts"], cfg["intermediate_size"], cfg["vocab_size"]
    n = lambda *s: rng.standard_normal(s) * scale
    w = {"model.embed_tokens.weight": n(V, D) * 3, "model.norm.weight": 1 + n(D) * 0.2, "lm_head.weight": n(V, D)}
    for l in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % l
        for name, out, inp in [("q", H * d, D), ("k", KV * d, D), ("v", KV * d, D), ("o", D, H * d)]:
            w[p + "self_attn.%s_proj.weight" % name] = n(out, inp)
            w[p + "self_attn.%s_proj.bias" % name] = n(out)
        w[p + "self_attn.sinks"] = n(H) * 4
        w[p + "input_layernorm.weight"] = 1 + n(D) * 0.2
        w[p + "post_attention_layernorm.weight"] = 1 + n(D) * 0.2
        w[p + "mlp.router.weight"] = n(E, D)
        w[p + "mlp.router.bias"] = n(E)
        # Large enough that the gate's and up's clamps at 7 bind.
        w[p + "mlp.experts.gate_up_proj"] = n(E, D, 2 * I) * 4
        w[p + "mlp.experts.gate_up_proj_bias"] = n(E, 2 * I) * 4
        w[p + "mlp.experts.down_proj"] = n(E, I, D) * 0.3
        w[p + "mlp.experts.down_proj_bias"] = n(E, D)
    return w


def _check(name, ok, detail=""):
    print(("PASS " if ok else "FAIL ") + name + ((": " + detail) if detail else ""))
    if not ok:
        raise SystemExit(1)


def _test_yarn():
    cfg = {"rope_theta": 150000.0, "hidden_size": 2880, "num_attention_heads": 64, "head_dim": 64,
           "rope_scaling": {"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0,
                            "original_max_position_embeddings": 4096, "truncate": False}}
    hf, af = yarn_inv_freq(cfg)
    ggml, _ = yarn_inv_freq(cfg, truncate=True)  # ggml_rope_yarn_corr_dims floors/ceils always
    rel = np.max(np.abs(hf - ggml) / hf)
    _check("yarn gpt-oss attention factor 0.1 ln 32 + 1", abs(af - (0.1 * math.log(32) + 1)) < 1e-15, "%.6f" % af)
    _check("yarn truncate=false (HF, gpt-oss) vs floor/ceil (llama.cpp) differ", rel > 1e-3,
           "max relative inv_freq difference %.3g" % rel)


def _test_sinks(rng):
    S, H, KV, d = 6, 4, 2, 8
    q, k, v = rng.standard_normal((S, H, d)), rng.standard_normal((S, KV, d)), rng.standard_normal((S, KV, d))
    sinks = rng.standard_normal(H) * 2
    pos = np.arange(S)
    for window in (None, 3):
        a, probs = attention_sinks_hf(q, k, v, sinks, 0.35, pos, pos, window)
        b = attention_sinks_online(q, k, v, sinks, 0.35, pos, pos, window, tile=2)
        c = attention_sinks_chunked(q, k, v, sinks, 0.35, pos, pos, window, chunk=2)
        err = max(np.max(np.abs(a - b)), np.max(np.abs(a - c)))
        _check("sinks: HF concatenated column == flash form == decode merge (window %s)" % window, err < 1e-13,
               "%.1e" % err)
    # The mass the keys keep: 1 / (1 + e^(sink - logsumexp(scores))) < 1.
    _, probs = attention_sinks_hf(q, k, v, sinks, 0.35, pos, pos, None)
    kk = np.repeat(k, 2, axis=1)
    logits = np.where(visible(pos, pos, None)[None], np.einsum("shd,thd->hst", q, kk) * 0.35, -np.inf)
    m = np.max(logits, -1)
    lse = m + np.log(np.sum(np.exp(logits - m[..., None]), -1))
    want = 1.0 / (1.0 + np.exp(sinks[:, None] - lse))
    got = probs.sum(-1)
    _check("sinks reduce attention mass: sum_j p_ij = 1/(1+e^(sink-lse)) < 1",
           np.max(np.abs(got - want)) < 1e-14 and np.all(got < 1), "min mass %.3f" % got.min())
    plain, _ = attention_sinks_hf(q, k, v, None, 0.35, pos, pos, None)
    gone, _ = attention_sinks_hf(q, k, v, np.full(H, -1e4), 0.35, pos, pos, None)
    big, _ = attention_sinks_hf(q, k, v, np.full(H, 60.0), 0.35, pos, pos, None)
    _check("sinks: -inf sink is plain softmax, a huge sink drives the output to 0",
           np.max(np.abs(gone - plain)) < 1e-14 and np.max(np.abs(big)) < 1e-20)


def _test_router_and_experts(rng):
    cfg = small_config()
    w = layer_weights(random_weights(cfg, rng), 0)
    x = rng.standard_normal((7, cfg["hidden_size"])) * 2
    logits = x @ w["mlp.router.weight"].T + w["mlp.router.bias"]
    scores, idx_hf = router_hf(x, w["mlp.router.weight"], w["mlp.router.bias"], 2)
    idx_g, w_g = router_ggml(logits, 2)
    idx_t, w_t = router_tfm(logits, 2)
    same = np.array_equal(idx_hf, idx_g) and np.array_equal(idx_hf, idx_t)
    err = max(np.max(np.abs(np.take_along_axis(scores, idx_hf, -1) - w_g)), np.max(np.abs(w_g - w_t)))
    _check("router: top-k of logits then softmax (HF, ggml) == softmax, top-k, renormalise (tfm.moe)",
           same and err < 1e-15, "%.1e" % err)
    u = rng.standard_normal(1000) * 10
    _check("clamp(u, -L, L) + 1 == clamp(u + 1, 1 - L, 1 + L); g sigma(1.702 g) == quick_gelu(g)",
           np.array_equal(np.clip(u, -7, 7) + 1, np.clip(u + 1, -6, 8)) and
           np.max(np.abs(swiglu_oai(u, u) - quick_gelu(np.minimum(u, 7)) * np.clip(u + 1, -6, 8))) < 1e-12)
    gu = x @ w["mlp.experts.gate_up_proj"][0] + w["mlp.experts.gate_up_proj_bias"][0]
    clamped = np.mean(gu[:, ::2] > 7) + np.mean(np.abs(gu[:, 1::2]) > 7)
    a, b, c = moe(x, w, cfg, "hf"), moe(x, w, cfg, "ggml"), moe(x, w, cfg, "tfm")
    err = max(np.max(np.abs(a - b)), np.max(np.abs(a - c)))
    _check("experts: HF interleaved gate_up [E,H,2I] == llama.cpp split + swiglu_oai == tfm folded",
           err < 1e-11 and clamped > 0.1, "%.1e (%.0f%% of gate/up past the clamp)" % (err, 50 * clamped))


def _test_layer_and_decode(rng):
    cfg = small_config()
    weights = random_weights(cfg, rng)
    tokens = rng.integers(0, cfg["vocab_size"], 11)
    pos = np.arange(6)
    x = rng.standard_normal((6, cfg["hidden_size"]))
    outs = [decoder_layer(x, layer_weights(weights, l), cfg, l, pos, None, f) for l in (0, 1) for f in ("hf", "ggml", "tfm")]
    err = max(np.max(np.abs(outs[0] - outs[i])) for i in (1, 2)) + max(np.max(np.abs(outs[3] - outs[i])) for i in (4, 5))
    _check("decoder layer (sliding 0, full 1): HF == ggml == tfm forms", err < 1e-11, "%.1e" % err)
    full = forward(tokens, weights, cfg)
    for ring in (False, True):
        cache = {"ring": ring}
        steps = [forward(tokens[:5], weights, cfg, cache, 0)]
        for t in range(5, len(tokens)):
            steps.append(forward(tokens[t:t + 1], weights, cfg, cache, t))
        got = np.concatenate(steps)
        err = np.max(np.abs(got - full))
        _check("prefill 5 then decode 6 == one forward (window 4 < 11%s)" % (", sliding layers in rings" if ring else ""),
               err < 1e-10, "%.1e" % err)


def _test_mxfp4_tables():
    e = np.arange(255)
    ok = np.array_equal(e8m0_to_fp32(e), np.ldexp(1.0, e - 127)) and \
        np.array_equal(e8m0_to_fp32_half(e), np.ldexp(1.0, e - 128))
    _check("E8M0: ggml's bit patterns are 2^(e-127) and its half 2^(e-128), e = 0..254", ok)
    _check("kvalues_mxfp4 == 2 * FP4_VALUES (so x = FP4[n] 2^(e-127) = kvalues[n] 2^(e-128))",
           np.array_equal(KVALUES_MXFP4.astype(np.float64), 2 * FP4_VALUES))


def _test_mxfp4_roundtrip(rng):
    x = rng.standard_normal(32 * 64) * np.repeat(np.exp(rng.uniform(-6, 6, 64)), 32)
    x[:32] = 0.0
    q = ggml_quantize_row(x)
    y = ggml_dequant_row(q)
    b = q.reshape(-1, BLOCK_BYTES)
    d = e8m0_to_fp32_half(b[:, 0])
    # Within half the widest gap of the grid (8d to 12d: 2d) except where the block saturates at 12d.
    blk = x.reshape(-1, 32)
    sat = np.abs(blk) > 12 * d[:, None]
    err = np.abs(blk - y.reshape(-1, 32))
    bound = np.where(sat, np.abs(blk) - 12 * d[:, None], 2 * d[:, None]) + 1e-300
    codes = np.concatenate([b[:, 1:] & 0xF, b[:, 1:] >> 4], axis=1)
    _check("MXFP4 encode/decode: error within half the coarsest gap (8d to 12d, d = 2^(e-128)) or the saturation excess",
           np.all(err <= bound + 1e-12 * np.abs(blk)),
           "max |error| / d %.3f outside saturation" % np.max(np.where(sat, 0, err / d[:, None])))
    _check("MXFP4 requantizing its own decoding gives the same bytes; code 8 (-0) never made",
           np.array_equal(ggml_quantize_row(y), q) and not np.any(codes == 8))
    hb, hs = ggml_to_hf_block(q)
    _check("MXFP4: HF (blocks, scales) of the same row decode alike",
           np.array_equal(hf_dequant(hb[None, None], hs[None, None])[0, :, 0], y))


def _test_hf_vs_gguf_layout(rng):
    E, I, H = 3, 4, 64
    G = H // 32
    # HF's checkpoint: gate_up_proj_blocks [E, 2I, H/32, 16], _scales [E, 2I, H/32] (rows = out).
    blocks = rng.integers(0, 256, (E, 2 * I, G, 16), dtype=np.uint8)
    scales = rng.integers(110, 140, (E, 2 * I, G), dtype=np.uint8)
    dense = hf_dequant(blocks, scales)  # [E, H, 2I]: GptOssExperts.gate_up_proj
    gate_hf, up_hf = np.transpose(dense[..., ::2], (0, 2, 1)), np.transpose(dense[..., 1::2], (0, 2, 1))
    # conversion/gpt_oss.py: blocks0, blocks1 = blocks[:, ::2], blocks[:, 1::2] (rows), repacked.
    g_bytes, u_bytes = repack_mxfp4(blocks[:, ::2], scales[:, ::2]), repack_mxfp4(blocks[:, 1::2], scales[:, 1::2])
    gate_gg = np.array([[ggml_dequant_row(g_bytes[e, r]) for r in range(I)] for e in range(E)])
    up_gg = np.array([[ggml_dequant_row(u_bytes[e, r]) for r in range(I)] for e in range(E)])
    _check("HF gate_up_proj_blocks/_scales == llama.cpp ffn_gate_exps/ffn_up_exps (MXFP4 blocks), bit for bit",
           np.array_equal(gate_hf, gate_gg) and np.array_equal(up_hf, up_gg) and g_bytes.shape == (E, I, G * 17))
    _check("transform_nibble_layout (transcribed) == plain (j, j+16) repacking",
           np.array_equal(transform_nibble_layout(blocks), nibbles_hf_to_ggml(blocks)))
    # down_proj_blocks [E, H, I/32, 16]: rows H (out), blocks over I (in); HF transposes to [E, I, H].
    db = rng.integers(0, 256, (E, H, 1, 16), dtype=np.uint8)
    ds = rng.integers(110, 140, (E, H, 1), dtype=np.uint8)
    down_hf = np.transpose(hf_dequant(db, ds), (0, 2, 1))  # back to [E, H(out), 32(in)]
    d_bytes = repack_mxfp4(db, ds)
    down_gg = np.array([[ggml_dequant_row(d_bytes[e, r]) for r in range(H)] for e in range(E)])
    _check("HF down_proj_blocks == llama.cpp ffn_down_exps", np.array_equal(down_hf, down_gg))


if __name__ == "__main__":
    rng = np.random.default_rng(20250805)
    _test_yarn()
    _test_sinks(rng)
    _test_router_and_experts(rng)
    _test_layer_and_decode(rng)
    _test_mxfp4_tables()
    _test_mxfp4_roundtrip(rng)
    _test_hf_vs_gguf_layout(rng)
