#!/usr/bin/env python3
"""NumPy (float64) reference for the Gemma 4 text decoder (E2B/E4B, 26B-A4B, 31B):
what differs from Gemma 3.

What it was transcribed from (docs/plans/gpt-oss-gemma4.md has the plan, the
GGUF layout and where the sources disagree):
  * Hugging Face transformers, src/transformers/models/gemma4/modeling_gemma4.py
    (stored version at commit c308a309e651a7e033f683353f3f75aa66d29502):
    Gemma4RMSNorm, Gemma4TextAttention (per-layer head_dim / KV heads,
    attention_k_eq_v, v_norm, the shared KV of the last num_kv_shared_layers),
    Gemma4TextMLP (use_double_wide_mlp), Gemma4TextRouter, Gemma4TextExperts,
    Gemma4TextDecoderLayer, Gemma4TextModel (per-layer inputs),
    Gemma4ForCausalLM (final_logit_softcapping).
  * transformers configuration_gemma4.py (commit 008e574391258935f3ecc3035c882e73bbcac419:
    defaults, layer_types, rope_parameters, global_head_dim / per_layer_config) and
    modeling_rope_utils.py _compute_proportional_rope_parameters.
  * llama.cpp (local, de3ff81): src/models/gemma4.cpp, conversion/gemma.py
    Gemma4Model (rope_freqs for "proportional", per_expert_scale as
    ffn_down_exps.scale, router.scale as ffn_gate_inp.scale), src/llama-model.cpp
    (the KV-reuse rule of Gemma 3n/4), src/llama-graph.cpp build_moe_ffn.

Conventions
  * One sequence, no batch axis: x is [T, hidden]; positions int [T].
  * Weights are dicts keyed by the text model's HF names (Gemma4ForCausalLM:
    "model.layers.N..."; a Gemma4ForConditionalGeneration checkpoint puts them under
    "model.language_model."). nn.Linear weights are [out, in]; the experts are HF's
    gate_up_proj [E, 2I, hidden] (gate rows FIRST, then up: .chunk(2)) and
    down_proj [E, hidden, I], both [out, in].
  * float64 throughout. HF runs the norms in fp32 and multiplies the embeddings by
    sqrt(hidden) cast to the weights' dtype (bf16: sqrt(1536) = 39.19 -> 39.25);
    llama.cpp uses the f32 sqrt. Here the exact value, bf16_round() shows the other.

Run:  /usr/bin/python3 test/e2e/reference/gemma4.py   (self-tests; prints PASS lines)
"""

import math

import numpy as np

from common import softmax, topk_indices

# ----------------------------------------------------------------------------
# small pieces
# ----------------------------------------------------------------------------


def rms_norm(x, weight, eps):
    """Gemma4RMSNorm: x * (mean(x^2) + eps)^-0.5 * w, in fp32. The scale is w, NOT
    Gemma 3's 1 + w (llama.cpp's Gemma4Model.norm_shift is 0.0); weight None: the
    with_scale=False norms (v_norm, the router's norm, the multimodal embedder's)."""
    out = x * np.power(np.mean(x * x, axis=-1, keepdims=True) + eps, -0.5)
    return out if weight is None else out * weight


def gelu_tanh(x):
    """gelu_pytorch_tanh (hidden_activation of every Gemma 4 config)."""
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


def bf16_round(x):
    """Round-to-nearest-even to bfloat16 (what `embed_scale.to(weight.dtype)` does)."""
    b = np.atleast_1d(np.asarray(x, dtype=np.float32)).view(np.uint32).astype(np.uint64)
    b = (b + np.uint64(0x7FFF) + ((b >> np.uint64(16)) & np.uint64(1))) & np.uint64(0xFFFF0000)
    out = b.astype(np.uint32).view(np.float32).astype(np.float64)
    return out if np.ndim(x) else float(out[0])


# ----------------------------------------------------------------------------
# per-layer geometry
# ----------------------------------------------------------------------------


def layer_types(cfg):
    """Gemma4TextConfig: layer_types, else 5 sliding : 1 full; the last layer is
    forced to full_attention."""
    types = list(cfg.get("layer_types") or
                 ["sliding_attention" if (i + 1) % 6 else "full_attention" for i in range(cfg["num_hidden_layers"])])
    types[-1] = "full_attention"
    return types


def kv_source(cfg, layer):
    """Gemma4TextAttention: layers >= L - num_kv_shared_layers (when that is > 0)
    compute no K or V; they read those of the LAST non-shared layer OF THEIR TYPE."""
    types = layer_types(cfg)
    first = cfg["num_hidden_layers"] - cfg.get("num_kv_shared_layers", 0)
    if not (layer >= first > 0):
        return None
    prev = types[:first]
    return len(prev) - 1 - prev[::-1].index(types[layer])


def kv_source_llama_cpp(cfg, layer):
    """llama.cpp's reuse callback (llama-model.cpp, GEMMA3N/GEMMA4):
    n_layer_kv_from_start - (is_swa ? 2 : 1). It assumes the last non-shared layer is
    full and the one before it sliding (true of E2B and E4B)."""
    first = cfg["num_hidden_layers"] - cfg.get("num_kv_shared_layers", 0)
    if layer < first:
        return None
    return first - (2 if layer_types(cfg)[layer] == "sliding_attention" else 1)


def geometry(cfg, layer):
    """What one layer's attention and MLP look like."""
    sliding = layer_types(cfg)[layer] == "sliding_attention"
    hd = cfg["global_head_dim"] if (not sliding and cfg.get("global_head_dim")) else cfg["head_dim"]
    k_eq_v = bool(cfg.get("attention_k_eq_v")) and not sliding
    kv_heads = cfg["num_global_key_value_heads"] if k_eq_v else cfg["num_key_value_heads"]
    src = kv_source(cfg, layer)
    wide = cfg.get("use_double_wide_mlp") and src is not None
    return {"sliding": sliding, "head_dim": hd, "kv_heads": kv_heads, "k_eq_v": k_eq_v, "src": src,
            "window": cfg["sliding_window"] if sliding else None,
            "intermediate": cfg["intermediate_size"] * (2 if wide else 1)}


# ----------------------------------------------------------------------------
# RoPE: default on sliding layers, "proportional" on full ones
# ----------------------------------------------------------------------------


def inv_freq_default(theta, dim):
    return 1.0 / theta ** (np.arange(0, dim, 2) / dim)


def inv_freq_proportional(theta, head_dim, partial, factor=1.0):
    """_compute_proportional_rope_parameters with head_dim_key="global_head_dim":
    rope_angles = int(partial * head_dim // 2) pairs rotate with theta^(-2i/head_dim)
    (the exponent's denominator is the WHOLE head, not the rotated part), the other
    head_dim/2 - rope_angles get frequency 0 (cos 1, sin 0); all / factor. With
    rotate_half over the whole head this rotates dims [0, a) with [d/2, d/2 + a)."""
    angles = int(partial * head_dim // 2)
    rot = 1.0 / theta ** (np.arange(0, 2 * angles, 2) / head_dim)
    return np.concatenate([rot, np.zeros(head_dim // 2 - angles)]) / factor


def layer_inv_freq(cfg, layer):
    """Gemma4TextRotaryEmbedding: one set per layer type from rope_parameters."""
    kind = layer_types(cfg)[layer]
    rp = cfg["rope_parameters"][kind]
    if rp.get("rope_type", "default") == "proportional":
        hd = cfg["global_head_dim"] if kind == "full_attention" else cfg["head_dim"]
        return inv_freq_proportional(rp["rope_theta"], hd, rp.get("partial_rotary_factor", 1.0), rp.get("factor", 1.0))
    return inv_freq_default(rp["rope_theta"], cfg["head_dim"])  # config.head_dim, the sliding one


def apply_rope(x, positions, inv_freq):
    """apply_rotary_pos_emb with emb = cat(freqs, freqs): x * cos + rotate_half(x) * sin
    on x [T, heads, d] (tfm.rope rotate_half)."""
    f = np.asarray(positions, dtype=np.float64)[:, None] * inv_freq[None, :]
    cos, sin = np.cos(np.concatenate([f, f], -1))[:, None], np.sin(np.concatenate([f, f], -1))[:, None]
    d2 = x.shape[-1] // 2
    rot = np.concatenate([-x[..., d2:], x[..., :d2]], axis=-1)
    return x * cos + rot * sin


def rope_neox_freq_factors(x, positions, n_dims, base, freq_factors):
    """ggml_rope_ext, NeoX (pairs (i, i + n_dims/2)), with freq_factors: theta_i =
    p * base^(-2i/n_dims) / ff_i. llama.cpp's full layers: n_dims = global_head_dim and
    rope_freqs = [1.0] * a + [1e30] * (d/2 - a) (conversion/gemma.py
    Gemma4Model.generate_extra_tensors)."""
    i = np.arange(n_dims // 2)
    theta = np.asarray(positions, dtype=np.float64)[:, None] * base ** (-2.0 * i / n_dims) / freq_factors
    c, s = np.cos(theta)[:, None], np.sin(theta)[:, None]
    a, b = x[..., :n_dims // 2], x[..., n_dims // 2:n_dims]
    return np.concatenate([a * c - b * s, b * c + a * s, x[..., n_dims:]], axis=-1)


def rope_partial(x, positions, theta, rotary_dim):
    """The usual partial rotary (tfm.rope's rotary_dim; GLM, Phi): the first
    rotary_dim dims, pairs (i, i + rotary_dim/2), theta^(-2i/rotary_dim). NOT Gemma 4's."""
    r = rotary_dim
    return np.concatenate([apply_rope(x[..., :r], positions, inv_freq_default(theta, r)), x[..., r:]], axis=-1)


# ----------------------------------------------------------------------------
# attention, MLP, MoE
# ----------------------------------------------------------------------------


def attend(q, k, v, q_pos, k_pos, window, scale=1.0):
    """Scores scaled by 1.0 (Gemma4TextAttention.scaling; q_norm and k_norm set the
    magnitudes), no soft-capping of the scores, causal, the sliding layers'
    window (sliding_window keys including the query's own)."""
    H, group = q.shape[1], q.shape[1] // k.shape[1]
    kk, vv = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = np.einsum("shd,thd->hst", q, kk) * scale
    ok = k_pos[None, :] <= q_pos[:, None]
    if window:
        ok &= k_pos[None, :] > q_pos[:, None] - window
    return np.einsum("hst,thd->shd", softmax(np.where(ok[None], s, -np.inf)), vv)


def attention(h, w, cfg, layer, positions, kv, cache=None):
    """Gemma4TextAttention. `kv`: {layer: (k, v, key positions)} of this call's
    non-shared layers (HF's shared_kv_states, post cache update); `cache`:
    {"layers": {...}, "ring": bool} kept across calls."""
    g, eps, T, H = geometry(cfg, layer), cfg["rms_norm_eps"], h.shape[0], cfg["num_attention_heads"]
    hd, inv, pos = g["head_dim"], layer_inv_freq(cfg, layer), np.asarray(positions)
    q = (h @ w["self_attn.q_proj.weight"].T).reshape(T, H, hd)
    q = apply_rope(rms_norm(q, w["self_attn.q_norm.weight"], eps), pos, inv)
    if g["src"] is not None:
        k, v, k_pos = kv[g["src"]]
    else:
        k_raw = (h @ w["self_attn.k_proj.weight"].T).reshape(T, g["kv_heads"], hd)
        # attention_k_eq_v (full layers of 26B-A4B and 31B): no v_proj; V is the RAW
        # K projection (before k_norm and RoPE), then the weightless v_norm.
        v_raw = k_raw if g["k_eq_v"] else (h @ w["self_attn.v_proj.weight"].T).reshape(T, g["kv_heads"], hd)
        k = apply_rope(rms_norm(k_raw, w["self_attn.k_norm.weight"], eps), pos, inv)
        v = rms_norm(v_raw, None, eps)
        k_pos = pos
        if cache is not None:
            layers = cache.setdefault("layers", {})
            if layer in layers:
                pk, pv, pp = layers[layer]
                k, v, k_pos = np.concatenate([pk, k]), np.concatenate([pv, v]), np.concatenate([pp, k_pos])
            keep = slice(max(0, len(k_pos) - g["window"]), None) if g["window"] and cache.get("ring") else slice(None)
            layers[layer] = (k[keep], v[keep], k_pos[keep])
        kv[layer] = (k, v, k_pos)
    o = attend(q, k, v, pos, k_pos, g["window"])
    return o.reshape(T, H * hd) @ w["self_attn.o_proj.weight"].T


def mlp(h, w, prefix="mlp."):
    """Gemma4TextMLP: down(gelu_tanh(gate(h)) * up(h)); twice as wide in the
    KV-shared layers where use_double_wide_mlp (E2B)."""
    return (gelu_tanh(h @ w[prefix + "gate_proj.weight"].T) * (h @ w[prefix + "up_proj.weight"].T)) @ \
        w[prefix + "down_proj.weight"].T


def router_hf(x, w, cfg):
    """Gemma4TextRouter on the residual stream x (NOT on pre_feedforward_layernorm's
    output): weightless RMSNorm, times router.scale [D] and hidden^-0.5, proj [E, D];
    softmax over ALL experts, top_k_experts, renormalised to sum 1, then times
    per_expert_scale[expert]. Returns (weights [T, k], indices [T, k])."""
    n = rms_norm(x, None, cfg["rms_norm_eps"]) * w["router.scale"] * cfg["hidden_size"] ** -0.5
    p = softmax(n @ w["router.proj.weight"].T)
    idx = topk_indices(p, cfg["top_k_experts"])
    wts = np.take_along_axis(p, idx, -1)
    wts = wts / wts.sum(-1, keepdims=True)
    return wts * w["router.per_expert_scale"][idx], idx


def experts(h, idx, wts, w, per_expert_out_scale=None):
    """Gemma4TextExperts: gate, up = (h gate_up_proj[e]^T).chunk(2) (gate the first I
    rows); down(gelu_tanh(gate) * up) times the token's weight. llama.cpp instead
    scales each expert's down output by ffn_down_exps.scale (per_expert_out_scale)."""
    out = np.zeros_like(h)
    I = w["experts.down_proj"].shape[-1]
    for t in range(h.shape[0]):
        for j in range(idx.shape[1]):
            e = idx[t, j]
            gu = w["experts.gate_up_proj"][e] @ h[t]
            y = w["experts.down_proj"][e] @ (gelu_tanh(gu[:I]) * gu[I:])
            if per_expert_out_scale is not None:
                y = y * per_expert_out_scale[e]
            out[t] += wts[t, j] * y
    return out


def moe_branch(x, w, cfg, form="hf"):
    """The MoE half of a 26B-A4B layer, from the residual x: experts on
    pre_feedforward_layernorm_2(x), post_feedforward_layernorm_2 after."""
    eps = cfg["rms_norm_eps"]
    h2 = rms_norm(x, w["pre_feedforward_layernorm_2.weight"], eps)
    if form == "hf":
        wts, idx = router_hf(x, w, cfg)
        y = experts(h2, idx, wts, w)
    elif form == "ggml":
        # gemma4.cpp: tmp = rms_norm(attn_out) / sqrt(n_embd) * ffn_gate_inp.scale; logits
        # = ffn_gate_inp tmp; build_moe_ffn(SOFTMAX, norm_w = true); ffn_down_exps.scale
        # (per_expert_scale) on each expert's output.
        tmp = rms_norm(x, None, eps) * (1.0 / math.sqrt(cfg["hidden_size"])) * w["router.scale"]
        p = softmax(tmp @ w["router.proj.weight"].T)
        idx = topk_indices(p, cfg["top_k_experts"])
        wts = np.take_along_axis(p, idx, -1)
        wts = wts / np.maximum(wts.sum(-1, keepdims=True), 6.103515625e-5)
        y = experts(h2, idx, wts, w, per_expert_out_scale=w["router.per_expert_scale"])
    else:
        # tfm: the router is tfm.rms_norm with gamma = scale * hidden^-0.5 (folded at load)
        # then tfm.linear; tfm.moe {normalize} with per-expert scales on the routing
        # weights (the proposed expert_scales operand).
        gamma = w["router.scale"] * cfg["hidden_size"] ** -0.5
        logits = rms_norm(x, gamma, eps) @ w["router.proj.weight"].T
        p = softmax(logits)
        idx = topk_indices(p, cfg["top_k_experts"])
        wts = np.take_along_axis(p, idx, -1)
        wts = wts / wts.sum(-1, keepdims=True) * w["router.per_expert_scale"][idx]
        y = experts(h2, idx, wts, w)
    return rms_norm(y, w["post_feedforward_layernorm_2.weight"], eps)


# ----------------------------------------------------------------------------
# layer and model
# ----------------------------------------------------------------------------


def decoder_layer(x, w, cfg, layer, positions, per_layer_input, kv, cache=None, moe_form="hf"):
    """Gemma4TextDecoderLayer."""
    eps = cfg["rms_norm_eps"]
    a = attention(rms_norm(x, w["input_layernorm.weight"], eps), w, cfg, layer, positions, kv, cache)
    x = x + rms_norm(a, w["post_attention_layernorm.weight"], eps)
    m = mlp(rms_norm(x, w["pre_feedforward_layernorm.weight"], eps), w)
    if cfg.get("enable_moe_block"):
        # The dense MLP (llama.cpp: "shared expert") and the experts run side by side on
        # the same residual, each with its own post-norm, summed, then the common one.
        m = rms_norm(m, w["post_feedforward_layernorm_1.weight"], eps) + moe_branch(x, w, cfg, moe_form)
    x = x + rms_norm(m, w["post_feedforward_layernorm.weight"], eps)
    if cfg.get("hidden_size_per_layer_input"):
        # Per-layer input: gelu_tanh(gate(x)) * this layer's slice, projected back to
        # hidden, normed, added.
        g = gelu_tanh(x @ w["per_layer_input_gate.weight"].T) * per_layer_input
        x = x + rms_norm(g @ w["per_layer_projection.weight"].T, w["post_per_layer_input_norm.weight"], eps)
    # layer_scalar: a persistent [1] buffer in the checkpoint (GGUF
    # blk.N.layer_output_scale); it multiplies the whole residual stream.
    return x * w["layer_scalar"]


def per_layer_inputs(ids, x_emb, weights, cfg):
    """Gemma4TextModel.get_per_layer_inputs + project_per_layer_inputs:
    embed_tokens_per_layer [V_pl, L*P] rows times sqrt(P), as [T, L, P];
    per_layer_model_projection(x_emb) [L*P, D] times hidden^-0.5, as [T, L, P],
    RMSNorm over P (per_layer_projection_norm [P]); (proj + emb) * 2^-0.5. x_emb is
    the SCALED token embedding."""
    L, P, D = cfg["num_hidden_layers"], cfg["hidden_size_per_layer_input"], cfg["hidden_size"]
    T = len(ids)
    emb = weights["model.embed_tokens_per_layer.weight"][np.asarray(ids)] * math.sqrt(P)
    proj = (x_emb @ weights["model.per_layer_model_projection.weight"].T) * D ** -0.5
    proj = rms_norm(proj.reshape(T, L, P), weights["model.per_layer_projection_norm.weight"], cfg["rms_norm_eps"])
    return (proj + emb.reshape(T, L, P)) * 2.0 ** -0.5


def layer_weights(weights, layer):
    p = "model.layers.%d." % layer
    return {k[len(p):]: v for k, v in weights.items() if k.startswith(p)}


def forward(ids, weights, cfg, cache=None, start=0, moe_form="hf", embed_scale=None):
    """Gemma4ForCausalLM: scaled embeddings, per-layer inputs, layers, final norm,
    tied head (tie_word_embeddings), final_logit_softcapping (30.0)."""
    positions = start + np.arange(len(ids))
    scale = math.sqrt(cfg["hidden_size"]) if embed_scale is None else embed_scale
    x = weights["model.embed_tokens.weight"][np.asarray(ids)] * scale
    pli = per_layer_inputs(ids, x, weights, cfg) if cfg.get("hidden_size_per_layer_input") else None
    kv = {}
    for layer in range(cfg["num_hidden_layers"]):
        x = decoder_layer(x, layer_weights(weights, layer), cfg, layer, positions,
                          None if pli is None else pli[:, layer], kv, cache, moe_form)
    x = rms_norm(x, weights["model.norm.weight"], cfg["rms_norm_eps"])
    logits = x @ weights["model.embed_tokens.weight"].T
    cap = cfg.get("final_logit_softcapping")
    return np.tanh(logits / cap) * cap if cap else logits


# ----------------------------------------------------------------------------
# configs, random weights, self-tests
# ----------------------------------------------------------------------------

ROPE = {"sliding_attention": {"rope_type": "default", "rope_theta": 10000.0},
        "full_attention": {"rope_type": "proportional", "partial_rotary_factor": 0.25, "rope_theta": 1000000.0}}


def e2b_like():
    """E2B's features: PLE, KV sharing (first shared layer's sources: sliding 2, full
    3, as E2B's 13 and 14), double-wide MLPs there, no k_eq_v, 1 KV head."""
    s, f = "sliding_attention", "full_attention"
    return {"vocab_size": 64, "hidden_size": 32, "num_hidden_layers": 8, "num_attention_heads": 4,
            "num_key_value_heads": 1, "head_dim": 8, "global_head_dim": 16, "attention_k_eq_v": False,
            "layer_types": [s, s, s, f, s, s, s, f], "sliding_window": 3, "intermediate_size": 24,
            "use_double_wide_mlp": True, "num_kv_shared_layers": 4, "hidden_size_per_layer_input": 6,
            "vocab_size_per_layer_input": 64, "final_logit_softcapping": 30.0, "rms_norm_eps": 1e-6,
            "rope_parameters": ROPE}


def a4b_like():
    """26B-A4B's features: a dense MLP plus 128 -> 4 experts, k_eq_v on full layers
    with fewer KV heads there (num_global_key_value_heads), no PLE, no sharing."""
    s, f = "sliding_attention", "full_attention"
    return {"vocab_size": 64, "hidden_size": 32, "num_hidden_layers": 6, "num_attention_heads": 4,
            "num_key_value_heads": 2, "num_global_key_value_heads": 1, "head_dim": 8, "global_head_dim": 16,
            "attention_k_eq_v": True, "layer_types": [s, s, f, s, s, f], "sliding_window": 3,
            "intermediate_size": 12, "enable_moe_block": True, "num_experts": 4, "top_k_experts": 2,
            "moe_intermediate_size": 10, "hidden_size_per_layer_input": 0, "final_logit_softcapping": 30.0,
            "rms_norm_eps": 1e-6, "rope_parameters": ROPE}


def dense31b_like():
    cfg = a4b_like()
    cfg.update({"enable_moe_block": False, "intermediate_size": 40})
    return cfg


def random_weights(cfg, rng, scale=0.35):
    D, H, L, V = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_hidden_layers"], cfg["vocab_size"]
    n = lambda *s: rng.standard_normal(s) * scale
    w = {"model.embed_tokens.weight": n(V, D), "model.norm.weight": 1 + n(D) * 0.3}
    P = cfg.get("hidden_size_per_layer_input")
    if P:
        w["model.embed_tokens_per_layer.weight"] = n(cfg["vocab_size_per_layer_input"], L * P)
        w["model.per_layer_model_projection.weight"] = n(L * P, D)
        w["model.per_layer_projection_norm.weight"] = 1 + n(P) * 0.3
    for l in range(L):
        g, p = geometry(cfg, l), "model.layers.%d." % l
        hd = g["head_dim"]
        w[p + "self_attn.q_proj.weight"] = n(H * hd, D)
        w[p + "self_attn.o_proj.weight"] = n(D, H * hd)
        w[p + "self_attn.q_norm.weight"] = 1 + n(hd) * 0.3
        if g["src"] is None:
            w[p + "self_attn.k_proj.weight"] = n(g["kv_heads"] * hd, D)
            w[p + "self_attn.k_norm.weight"] = 1 + n(hd) * 0.3
            if not g["k_eq_v"]:
                w[p + "self_attn.v_proj.weight"] = n(g["kv_heads"] * hd, D)
        for norm in ("input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                     "post_feedforward_layernorm"):
            w[p + norm + ".weight"] = 1 + n(D) * 0.3
        I = g["intermediate"]
        w[p + "mlp.gate_proj.weight"], w[p + "mlp.up_proj.weight"], w[p + "mlp.down_proj.weight"] = \
            n(I, D), n(I, D), n(D, I)
        if cfg.get("enable_moe_block"):
            E, Ie = cfg["num_experts"], cfg["moe_intermediate_size"]
            w[p + "router.proj.weight"] = n(E, D) * 4
            w[p + "router.scale"] = 1 + n(D) * 0.3
            w[p + "router.per_expert_scale"] = 1 + n(E) * 0.5
            w[p + "experts.gate_up_proj"] = n(E, 2 * Ie, D)
            w[p + "experts.down_proj"] = n(E, D, Ie)
            for norm in ("post_feedforward_layernorm_1", "post_feedforward_layernorm_2", "pre_feedforward_layernorm_2"):
                w[p + norm + ".weight"] = 1 + n(D) * 0.3
        if P:
            w[p + "per_layer_input_gate.weight"] = n(P, D)
            w[p + "per_layer_projection.weight"] = n(D, P)
            w[p + "post_per_layer_input_norm.weight"] = 1 + n(D) * 0.3
        w[p + "layer_scalar"] = np.array([0.6 + 0.8 * rng.random()])
    return w


def _check(name, ok, detail=""):
    print(("PASS " if ok else "FAIL ") + name + ((": " + detail) if detail else ""))
    if not ok:
        raise SystemExit(1)


def _test_rope(rng):
    hd, theta, T = 512, 1e6, 9
    x, pos = rng.standard_normal((T, 2, hd)), np.arange(T) * 37
    inv = inv_freq_proportional(theta, hd, 0.25)
    hf = apply_rope(x, pos, inv)
    a = int(hd * 0.25 / 2)
    ff = np.array([1.0] * a + [1e30] * (hd // 2 - a))
    gg = rope_neox_freq_factors(x, pos, hd, theta, ff)
    moved = np.any(hf != x, axis=(0, 1))
    _check("proportional RoPE (HF: zero frequencies) == llama.cpp rope_freqs 1e30 factors",
           np.max(np.abs(hf - gg)) < 1e-12, "%.1e" % np.max(np.abs(hf - gg)))
    _check("proportional RoPE rotates dims [0,64) and [256,320) of 512, nothing else",
           np.array_equal(np.flatnonzero(moved), np.r_[0:64, 256:320]) and np.count_nonzero(inv) == 64)
    part = rope_partial(x, pos, theta, 128)
    _check("proportional RoPE != the usual partial rotary of 128 dims", np.max(np.abs(part - hf)) > 0.1)
    _check("sliding layers: default RoPE, theta 1e4 over head_dim 256",
           np.allclose(layer_inv_freq(e2b_like(), 0), inv_freq_default(1e4, 8)))


def _test_kv_sources():
    s, f = "sliding_attention", "full_attention"
    e2b = {"num_hidden_layers": 35, "num_kv_shared_layers": 20, "layer_types": ([s] * 4 + [f]) * 7}
    hf = [kv_source(e2b, l) for l in range(35)]
    want = [None] * 15 + [14 if l % 5 == 4 else 13 for l in range(15, 35)]
    _check("E2B: layers 15-34 read layer 13 (sliding) or 14 (full)", hf == want)
    _check("E2B: llama.cpp's n_kv_from_start - (2 or 1) rule agrees",
           [kv_source_llama_cpp(e2b, l) for l in range(35)] == hf)
    e4b = {"num_hidden_layers": 42, "num_kv_shared_layers": 18, "layer_types": ([s] * 5 + [f]) * 7}
    _check("E4B-shaped (42 layers, 18 shared, a 5:1 pattern assumed): sources 22 and 23, llama.cpp agrees",
           [kv_source(e4b, l) for l in range(24, 42)] == [kv_source_llama_cpp(e4b, l) for l in range(24, 42)]
           and {kv_source(e4b, l) for l in range(24, 42)} == {22, 23})
    odd = {"num_hidden_layers": 8, "num_kv_shared_layers": 3, "layer_types": [s, s, f, s, s, s, s, f]}
    _check("where the last non-shared layer is sliding, HF and llama.cpp's rule differ",
           kv_source(odd, 5) == 4 and kv_source_llama_cpp(odd, 5) == 3)


def _test_pieces(rng):
    x, c, eps = rng.standard_normal((5, 12)), 1536 ** -0.5, 1e-6
    g = 1 + rng.standard_normal(12)
    _check("RMSNorm(c x, eps) == RMSNorm(x, eps / c^2): hidden^-0.5 before per_layer_projection_norm folds",
           np.max(np.abs(rms_norm(c * x, g, eps) - rms_norm(x, g, eps / c ** 2))) < 1e-13)
    v = rms_norm(rng.standard_normal((4, 2, 16)) * 3, None, eps)
    _check("v_norm has no weight: every V head row has RMS 1", np.allclose(np.sqrt(np.mean(v * v, -1)), 1, atol=1e-6))
    cfg = a4b_like()
    w = layer_weights(random_weights(cfg, rng), 2)
    wv = dict(w)
    wv["self_attn.v_proj.weight"] = w["self_attn.k_proj.weight"]
    cfg_no = dict(cfg, attention_k_eq_v=False, num_key_value_heads=cfg["num_global_key_value_heads"])
    h, pos = rng.standard_normal((5, cfg["hidden_size"])), np.arange(5)
    a = attention(h, w, cfg, 2, pos, {})
    b = attention(h, wv, cfg_no, 2, pos, {})
    _check("attention_k_eq_v == v_proj set to k_proj (V from the raw K, v_norm, no RoPE)",
           np.max(np.abs(a - b)) < 1e-13)
    sq = math.sqrt(1536)
    _check("embedding scale: HF in bf16 uses bf16(sqrt(1536)) = 39.25, llama.cpp sqrt = %.4f" % sq,
           bf16_round(sq) == 39.25 and bf16_round(16.0) == 16.0)


def _test_moe(rng):
    cfg = a4b_like()
    w = layer_weights(random_weights(cfg, rng), 0)
    x = rng.standard_normal((6, cfg["hidden_size"])) * 3
    a, b, c = (moe_branch(x, w, cfg, f) for f in ("hf", "ggml", "tfm"))
    err = max(np.max(np.abs(a - b)), np.max(np.abs(a - c)))
    _check("26B-A4B experts: HF router/per_expert_scale == llama.cpp (scale on down output) == tfm folded",
           err < 1e-12, "%.1e" % err)


def _test_prefill_decode(rng):
    for name, cfg in (("E2B-like (PLE, KV sharing, double-wide)", e2b_like()),
                      ("26B-A4B-like (MoE, k_eq_v, global KV heads)", a4b_like()),
                      ("31B-like (dense, k_eq_v)", dense31b_like())):
        w = random_weights(cfg, rng)
        ids = rng.integers(0, cfg["vocab_size"], 10)
        full = forward(ids, w, cfg)
        for ring in (False, True):
            cache = {"ring": ring}
            out = [forward(ids[:4], w, cfg, cache, 0)]
            out += [forward(ids[t:t + 1], w, cfg, cache, t) for t in range(4, len(ids))]
            err = np.max(np.abs(np.concatenate(out) - full))
            cached = sorted(cache["layers"])
            owners = [l for l in range(cfg["num_hidden_layers"]) if kv_source(cfg, l) is None]
            _check("%s: prefill 4 then decode 6 == one forward%s" % (name, " (sliding layers in rings)" if ring else ""),
                   err < 1e-11 and cached == owners, "%.1e, %d of %d layers cached" % (err, len(cached),
                                                                                    cfg["num_hidden_layers"]))
    cfg = e2b_like()
    w = random_weights(cfg, rng)
    ids = rng.integers(0, cfg["vocab_size"], 6)
    logits = forward(ids, w, cfg)
    _check("final_logit_softcapping: |logits| < 30", np.all(np.abs(logits) < 30))


if __name__ == "__main__":
    rng = np.random.default_rng(20260402)
    _test_rope(rng)
    _test_kv_sources()
    _test_pieces(rng)
    _test_moe(rng)
    _test_prefill_decode(rng)
