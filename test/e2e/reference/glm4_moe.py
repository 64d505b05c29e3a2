#!/usr/bin/env python3
"""NumPy reference for GLM-4.5/4.6/4.7 (transformers' glm4_moe): grouped-query
attention with biases on Q, K and V (attention_bias), optional RMSNorms of
each head of Q and K (use_qk_norm, before RoPE), RoPE's half-rotation on the
first partial_rotary_factor of each head's dimensions (the rest passed
through), scores scaled by head_dim^-0.5; then DeepSeek-V3's router and
shared experts after first_k_dense_replace dense layers (deepseek_v3.moe).

Transcribed from transformers' src/transformers/models/glm4_moe/
modeling_glm4_moe.py (stored version at commit 000c33fd):
Glm4MoeRotaryEmbedding.compute_default_rope_parameters (dim =
int(head_dim * partial_rotary_factor)), apply_rotary_pos_emb (rotary_dim
= cos.shape[-1]; q_rot, q_pass = q[..., :rotary_dim], q[..., rotary_dim:]),
Glm4MoeAttention (q/k/v bias=attention_bias, o_proj bias=False, q_norm and
k_norm with rms_norm_eps), and the router/MoE that equal DeepSeek-V3's.
Float64, one sequence, weights keyed as in the checkpoint without the
"model.layers.N." prefix."""

import numpy as np

import deepseek_v3 as ds
from common import rms_norm, softmax


def rope_tables(config, positions):
    head_dim = config["head_dim"]
    dim = int(head_dim * config.get("partial_rotary_factor", 0.5))
    inv = 1.0 / (float(config["rope_theta"]) ** (np.arange(0, dim, 2) / dim))
    freqs = np.asarray(positions, dtype=np.float64)[:, None] * inv[None, :]
    emb = np.concatenate([freqs, freqs], axis=-1)
    return np.cos(emb), np.sin(emb)


def apply_partial_rope(x, cos, sin):
    """x [T, heads, head_dim]: the first cos.shape[-1] dims rotated by halves."""
    rot = cos.shape[-1]
    c, s = cos[:, None, :], sin[:, None, :]
    x_rot, x_pass = x[..., :rot], x[..., rot:]
    return np.concatenate([x_rot * c + ds.rotate_half(x_rot) * s, x_pass], -1)


def attention(x, w, config, positions):
    H, KV, hd = (config["num_attention_heads"], config["num_key_value_heads"],
                 config["head_dim"])
    T = x.shape[0]

    def project(name, heads):
        y = x @ w[name + ".weight"].T
        if config.get("attention_bias"):
            y = y + w[name + ".bias"]
        return y.reshape(T, heads, hd)

    q, k, v = project("q_proj", H), project("k_proj", KV), project("v_proj", KV)
    if config.get("use_qk_norm"):
        q = rms_norm(q, w["q_norm.weight"], config["rms_norm_eps"])
        k = rms_norm(k, w["k_norm.weight"], config["rms_norm_eps"])
    cos, sin = rope_tables(config, positions)
    q, k = apply_partial_rope(q, cos, sin), apply_partial_rope(k, cos, sin)
    group = H // KV
    k, v = np.repeat(k, group, axis=1), np.repeat(v, group, axis=1)
    s = np.einsum("thd,shd->hts", q, k) * hd ** -0.5
    mask = np.asarray(positions)[None, :] <= np.asarray(positions)[:, None]
    p = softmax(np.where(mask[None], s, -np.inf), axis=-1)
    o = np.einsum("hts,shd->thd", p, v).reshape(T, H * hd)
    return o @ w["o_proj.weight"].T


def decoder_layer(x, weights, config, positions, layer_idx):
    """Glm4MoeDecoderLayer: h = x + attn(norm(x)); out = h + ffn(norm(h)),
    ffn the dense MLP before first_k_dense_replace, the MoE after."""
    eps = config["rms_norm_eps"]
    h = x + attention(rms_norm(x, weights["input_layernorm.weight"], eps),
                      weights["self_attn"], config, positions)
    f_in = rms_norm(h, weights["post_attention_layernorm.weight"], eps)
    if layer_idx >= config.get("first_k_dense_replace", 1):
        return h + ds.moe(f_in, weights["mlp"], config)
    return h + ds.mlp(f_in, weights["mlp"])


def random_attention(rng, config, scale=0.3):
    H, KV, hd = (config["num_attention_heads"], config["num_key_value_heads"],
                 config["head_dim"])
    D = config["hidden_size"]
    w = {"q_proj.weight": rng.standard_normal((H * hd, D)) * scale,
         "k_proj.weight": rng.standard_normal((KV * hd, D)) * scale,
         "v_proj.weight": rng.standard_normal((KV * hd, D)) * scale,
         "o_proj.weight": rng.standard_normal((D, H * hd)) * scale}
    if config.get("attention_bias"):
        for name, rows in (("q_proj", H * hd), ("k_proj", KV * hd),
                           ("v_proj", KV * hd)):
            w[name + ".bias"] = rng.standard_normal(rows) * 0.1
    if config.get("use_qk_norm"):
        w["q_norm.weight"] = 1.0 + 0.1 * rng.standard_normal(hd)
        w["k_norm.weight"] = 1.0 + 0.1 * rng.standard_normal(hd)
    return w


def random_layer(rng, config, moe_layer):
    """A layer's weights: GLM's attention, DeepSeek-V3's MoE (or dense MLP)."""
    D = config["hidden_size"]
    layer = {"input_layernorm.weight": 1.0 + 0.1 * rng.standard_normal(D),
             "post_attention_layernorm.weight":
                 1.0 + 0.1 * rng.standard_normal(D),
             "self_attn": random_attention(rng, config), "mlp": {}}
    m = layer["mlp"]
    if not moe_layer:
        ds._rand_mlp(rng, D, config["intermediate_size"], "", m)
        return layer
    E, width = config["n_routed_experts"], config["moe_intermediate_size"]
    m["gate.weight"] = rng.standard_normal((E, D)) * 0.5
    m["gate.e_score_correction_bias"] = 0.05 * rng.standard_normal(E)
    for e in range(E):
        ds._rand_mlp(rng, D, width, "experts.%d." % e, m)
    ds._rand_mlp(rng, D, width * config["n_shared_experts"],
                 "shared_experts.", m)
    return layer


if __name__ == "__main__":
    # Self-test: with every dimension rotated, no biases and no norms, the
    # attention is LLaMA's (rotate_half RoPE, GQA).
    cfg = dict(num_attention_heads=4, num_key_value_heads=2, head_dim=8,
               hidden_size=16, rope_theta=10000.0, rms_norm_eps=1e-6,
               partial_rotary_factor=1.0)
    rng = np.random.default_rng(0)
    w = random_attention(rng, cfg)
    x = rng.standard_normal((5, 16))
    pos = np.arange(5)
    out = attention(x, w, cfg, pos)
    # the same with a full-width rope done by hand
    inv = 1.0 / (10000.0 ** (np.arange(0, 8, 2) / 8))
    ang = pos[:, None] * inv[None]
    cos = np.concatenate([np.cos(ang)] * 2, -1)[:, None]
    sin = np.concatenate([np.sin(ang)] * 2, -1)[:, None]
    q = (x @ w["q_proj.weight"].T).reshape(5, 4, 8)
    k = (x @ w["k_proj.weight"].T).reshape(5, 2, 8)
    v = (x @ w["v_proj.weight"].T).reshape(5, 2, 8)
    q = q * cos + ds.rotate_half(q) * sin
    k = k * cos + ds.rotate_half(k) * sin
    k, v = np.repeat(k, 2, 1), np.repeat(v, 2, 1)
    s = np.einsum("thd,shd->hts", q, k) / np.sqrt(8)
    s = np.where(np.tril(np.ones((5, 5)))[None] > 0, s, -np.inf)
    o = np.einsum("hts,shd->thd", softmax(s), v).reshape(5, 32) @ w["o_proj.weight"].T
    err = np.abs(o - out).max()
    print(("PASS" if err < 1e-12 else "FAIL") + " full rotary == LLaMA attention", err)

    # Where transformers 4.40 overlaps: StableLM's attention is GLM's
    # (biases on Q, K and V, the half-rotation on the first
    # partial_rotary_factor of each head, GQA) when head_dim is
    # hidden / heads and there are no Q/K norms.
    try:
        import torch
        import transformers as tf
    except ImportError:
        print("SKIP StableLM comparison (no transformers)")
        raise SystemExit(0)
    cfg = dict(num_attention_heads=4, num_key_value_heads=2, head_dim=8,
               hidden_size=32, rope_theta=10000.0, rms_norm_eps=1e-6,
               partial_rotary_factor=0.5, attention_bias=True)
    w = random_attention(np.random.default_rng(1), cfg)
    x = np.random.default_rng(2).standard_normal((6, 32))
    ours = attention(x, w, cfg, np.arange(6))
    config = tf.StableLmConfig(hidden_size=32, num_attention_heads=4,
                               num_key_value_heads=2, partial_rotary_factor=0.5,
                               use_qkv_bias=True, rope_theta=10000.0,
                               max_position_embeddings=32)
    config._attn_implementation = "eager"
    module = tf.models.stablelm.modeling_stablelm.StableLmAttention(
        config, 0).double()
    with torch.no_grad():
        for name, value in w.items():
            dict(module.named_parameters())[name].copy_(torch.tensor(value))
        mask = torch.full((6, 6), float("-inf"), dtype=torch.float64).triu(1)[None, None]
        theirs = module(torch.tensor(x[None]), attention_mask=mask,
                        position_ids=torch.arange(6)[None])[0][0].double()
    err = np.abs(theirs.numpy() - ours).max()
    print(("PASS" if err < 1e-5 else "FAIL") +
          " partial rotary, biases, GQA == 4.40's StableLmAttention", err)
