#!/usr/bin/env python3
"""NumPy (float64) reference for the Qwen3-Next / Qwen3.5 hybrid decoder: the
Gated DeltaNet ("linear_attention") layer, the gated full-attention layer, and
the pieces of the decoder layer that differ from Qwen3.

docs/plans/deltanet.md has the plan, the GGUF layout and where the sources
disagree. What this was transcribed from:
  * Hugging Face transformers (read through the code index, stored versions):
      - src/transformers/models/qwen3_next/modeling_qwen3_next.py at
        7515843b617551b008901620ca58f1208bbc330d (the 4.57-era file:
        Qwen3NextDynamicCache, deprecate_kwarg(version="4.58")) and at
        01cdc6081c7500f9e50c98b1b943c90ecb665db3 (a 5.x file: cache_params.layers).
      - src/transformers/models/qwen3_5/modeling_qwen3_5.py at
        009e78d6e89fd6f3e68cf81ba95ccc682c8cdda9 (newer main: split in_proj_qkv /
        in_proj_z / in_proj_b / in_proj_a, multi-token calls continue the cache),
        and LinearAttentionLayer.update_conv_state of cache_utils.py of the same era.
      - configuration_qwen3_next.py / configuration_qwen3_5.py /
        configuration_qwen3_5_moe.py at 008e574391258935f3ecc3035c882e73bbcac419,
        and the Qwen3_5MoeTopKRouter (softmax, top-k, always renormalized).
  * llama.cpp (local, de3ff81): src/models/qwen3next.cpp, qwen35.cpp, qwen35moe.cpp,
    delta-net-base.cpp, models.h (build_gdn_l2_norm), llama-model.cpp,
    ggml-cpu ops.cpp (ssm_conv), and conversion/qwen.py (Qwen3NextModel,
    _LinearAttentionVReorderBase, Qwen3_5TextModel, Qwen3_5MoeTextModel, Qwen2MoeModel).

Conventions
  * One sequence, no batch axis: x is [T, hidden]. positions: int [T].
  * Hugging Face weights are dicts keyed by the parameter names with the
    "model.layers.N." prefix dropped, torch nn.Linear layout [out, in]: y = x @ W.T.
    GGUF weights are dicts keyed by the tensor names with "blk.N." dropped, stored
    in torch order, i.e. the REVERSE of ggml's ne (ne {D, C} is an array [C, D]).
  * Everything is float64. HF runs the delta rule and the norms in fp32; nothing
    here models bf16 roundings.

Shapes (per linear-attention layer, per sequence):
  Hk = linear_num_key_heads, Hv = linear_num_value_heads (a multiple of Hk),
  dk = linear_key_head_dim, dv = linear_value_head_dim, K = linear_conv_kernel_dim,
  C = 2*Hk*dk + Hv*dv conv channels ([q | k | v] of every head).
  Recurrent state: S [Hv, dk, dv] (HF's layout; llama.cpp keeps S^T, [Hv, dv, dk])
  plus the conv state, the last K-1 inputs of the conv, here [K-1, C] (rows are
  positions; llama.cpp keeps [C, K-1]; HF keeps K columns [C, K], the oldest unused).

Multi-token calls with a cache (exactly what was read):
  * qwen3_next @7515843b (4.57 era) and @01cdc608: use_precomputed_states requires
    seq_len == 1. A multi-token call runs the conv from zeros and the chunked rule
    with initial_state=None, i.e. it RESTARTS the linear layers, then overwrites the
    cached conv state (the call's last K inputs) and recurrent state. Only
    prefill-then-single-token-decode is right there. (hf_gated_deltanet(version="v4.57"))
  * qwen3_5 @009e78d6 (newer main): use_precomputed_states = has_previous_state; a
    multi-token call prepends the cached conv inputs (update_conv_state) and runs the
    chunked rule with initial_state = the cached state: it CONTINUES. (version="main")
  * llama.cpp always continues (build_conv_state / build_rs), for any n_tokens.
  tfmc must continue (chunked prefill, prefill after generate).

Run:  /usr/bin/python3 test/e2e/reference/qwen3_next.py   (self-tests; prints PASS lines)
"""

import math

import numpy as np

from common import config_value, rms_norm, sigmoid, silu, softmax

# ----------------------------------------------------------------------------
# small pieces
# ----------------------------------------------------------------------------


def softplus(x):
    """torch.nn.functional.softplus (beta=1, threshold=20): x where x > 20.
    ggml_softplus is log(1 + exp(x)) without the threshold (equal in fp32)."""
    return np.where(x > 20.0, x, np.log1p(np.exp(np.minimum(x, 20.0))))


def rms_norm_zero_centered(x, weight, eps):
    """Qwen3NextRMSNorm / Qwen3_5RMSNorm: weight initialised to ZEROS and applied as
    (1 + w). Used for input_layernorm, post_attention_layernorm, q_norm, k_norm and
    the final norm; NOT for linear_attn.norm (gated, plain w, initialised to ones).
    convert_hf_to_gguf adds the 1 (Qwen3NextModel.modify_tensors)."""
    return rms_norm(x, 1.0 + weight, eps)


def gated_rms_norm(x, gate, weight, eps):
    """Qwen3NextRMSNormGated / Qwen3_5RMSNormGated: norm before gate,
    rms_norm(x) * w * silu(z); w plain (ones at init), over the last axis (dv)."""
    return rms_norm(x, weight, eps) * silu(gate)


def l2norm(x, eps=1e-6):
    """HF l2norm (FLA): x * rsqrt(sum(x^2) + eps), eps fixed at 1e-6."""
    return x / np.sqrt(np.sum(x * x, axis=-1, keepdims=True) + eps)


def l2norm_ggml(x, eps):
    """llama.cpp build_gdn_l2_norm: rms_norm(x, eps/n) / sqrt(n) == x / sqrt(sum x^2 + eps),
    with eps = rms_norm_eps (HF: 1e-6 fixed). Also what tfm.rms_norm with epsilon
    eps/n and a constant weight 1/sqrt(n) computes."""
    n = x.shape[-1]
    return rms_norm(x, np.full(n, 1.0 / math.sqrt(n)), eps / n)


def dims(cfg):
    Hk, Hv = cfg["linear_num_key_heads"], cfg["linear_num_value_heads"]
    dk, dv = cfg["linear_key_head_dim"], cfg["linear_value_head_dim"]
    K = cfg["linear_conv_kernel_dim"]
    assert Hv % Hk == 0
    return Hk, Hv, dk, dv, K, 2 * Hk * dk + Hv * dv


def state_shapes(cfg):
    """One sequence's recurrent state per linear-attention layer."""
    Hk, Hv, dk, dv, K, C = dims(cfg)
    return {"conv": (K - 1, C), "ssm": (Hv, dk, dv)}


def layer_types(cfg):
    lt = cfg.get("layer_types")
    if lt is None:  # __post_init__: full_attention every full_attention_interval-th layer
        n = config_value(cfg, "full_attention_interval", 4)
        lt = ["linear_attention" if (i + 1) % n else "full_attention"
              for i in range(cfg["num_hidden_layers"])]
    return lt


# ----------------------------------------------------------------------------
# causal depthwise conv1d with a carried state
# ----------------------------------------------------------------------------


def causal_conv1d(x, weight, state=None):
    """x [T, C], weight [C, K] (HF conv1d.weight [C, 1, K] squeezed; GGUF ssm_conv1d
    ne {K, C} read as [C, K]: the same array), state [K-1, C] (the previous K-1
    inputs, oldest first; None: zeros). Returns (pre-activation y [T, C], the new
    state [K-1, C]). y[t, c] = sum_j weight[c, j] * xp[t + j, c], xp = [state; x]:
    weight[:, K-1] multiplies the current input (F.conv1d with padding K-1, the
    first T outputs; ggml_ssm_conv)."""
    T, C = x.shape
    K = weight.shape[1]
    if state is None:
        state = np.zeros((K - 1, C))
    xp = np.concatenate([state, x], axis=0)
    y = np.zeros((T, C))
    for j in range(K):
        y += xp[j:j + T] * weight[:, j]
    return y, xp[T:].copy()  # the last K-1 rows


def hf_causal_conv1d_fn(x, weight):
    """HF causal_conv1d_fn / the torch fallback F.conv1d(padding=K-1)[..., :T]
    (no activation): zero left context. x [T, C] (HF: [B, C, T])."""
    return causal_conv1d(x, weight, None)[0]


def hf_causal_conv1d_update(x, conv_state, weight):
    """HF torch_causal_conv1d_update: conv_state [C, K] (HF keeps K columns),
    updated in place to the last K columns of [conv_state, x^T]; returns the
    pre-activation outputs of the T new positions."""
    T = x.shape[0]
    K = weight.shape[1]
    full = np.concatenate([conv_state, x.T], axis=1)  # [C, K + T]
    conv_state[...] = full[:, -conv_state.shape[1]:]
    out = np.zeros((T, x.shape[1]))
    L = full.shape[1]
    for t in range(T):  # F.conv1d without padding, last T outputs
        s = L - T + t - (K - 1)
        out[t] = np.sum(full[:, s:s + K] * weight, axis=1)
    return out


# ----------------------------------------------------------------------------
# gated delta rule
# ----------------------------------------------------------------------------
#
# Per value head h (q, k already l2-normalised and expanded to Hv heads), with
# g_t <= 0 (log decay) and beta_t in (0, 1):
#   S_t = exp(g_t) S_{t-1} + k_t (beta_t (v_t - (exp(g_t) S_{t-1})^T k_t))^T
#   o_t = scale * S_t^T q_t,   S [dk, dv], scale = dk^-0.5 by default.


def recurrent_gated_delta_rule(q, k, v, g, beta, initial_state=None, scale=None):
    """torch_recurrent_gated_delta_rule, one token at a time. q, k [T, H, dk];
    v [T, H, dv]; g, beta [T, H]; state [H, dk, dv]. Returns (o [T, H, dv], S)."""
    T, H, dk = k.shape
    dv = v.shape[-1]
    scale = dk ** -0.5 if scale is None else scale
    S = np.zeros((H, dk, dv)) if initial_state is None else initial_state.copy()
    out = np.zeros((T, H, dv))
    for t in range(T):
        S = S * np.exp(g[t])[:, None, None]
        kv_mem = np.einsum("hkv,hk->hv", S, k[t])
        delta = (v[t] - kv_mem) * beta[t][:, None]
        S = S + k[t][:, :, None] * delta[:, None, :]
        out[t] = np.einsum("hkv,hk->hv", S, q[t] * scale)
    return out, S


def chunk_gated_delta_rule(q, k, v, g, beta, initial_state=None, chunk_size=64, scale=None):
    """torch_chunk_gated_delta_rule (modeling_qwen3_next.py), transcribed: the
    sequence padded to chunks of `chunk_size`; within a chunk the WY/UT transform
    (I + tril(diag(beta) K K^T * decay, -1))^-1 by forward substitution; across
    chunks the state. Same arguments and results as recurrent_gated_delta_rule."""
    T, H, dk = k.shape
    dv = v.shape[-1]
    scale = dk ** -0.5 if scale is None else scale
    Cs = chunk_size
    q = np.transpose(q, (1, 0, 2)) * scale
    k = np.transpose(k, (1, 0, 2))
    v = np.transpose(v, (1, 0, 2))
    g = g.T
    beta = beta.T
    pad = (-T) % Cs
    if pad:  # padded rows: k = v = beta = 0, g = 0 -> no update, no decay
        q, k, v = (np.pad(a, ((0, 0), (0, pad), (0, 0))) for a in (q, k, v))
        g, beta = (np.pad(a, ((0, 0), (0, pad))) for a in (g, beta))
    N = (T + pad) // Cs
    v_beta = v * beta[..., None]
    k_beta = k * beta[..., None]
    q, k, v_beta, k_beta = (a.reshape(H, N, Cs, a.shape[-1]) for a in (q, k, v_beta, k_beta))
    g = g.reshape(H, N, Cs).cumsum(-1)
    decay = np.tril(np.exp(np.tril(g[..., :, None] - g[..., None, :])))
    attn = np.tril(-(k_beta @ np.swapaxes(k, -1, -2)) * decay, -1)
    for i in range(1, Cs):
        row = attn[..., i, :i].copy()
        sub = attn[..., :i, :i].copy()
        attn[..., i, :i] = row + (row[..., :, None] * sub).sum(-2)
    attn = attn + np.eye(Cs)
    value = attn @ v_beta
    k_cumdecay = attn @ (k_beta * np.exp(g)[..., None])
    S = np.zeros((H, dk, dv)) if initial_state is None else initial_state.copy()
    out = np.zeros((H, N, Cs, dv))
    for n in range(N):
        qi, ki, gi = q[:, n], k[:, n], g[:, n]
        a = np.tril(qi @ np.swapaxes(ki, -1, -2) * decay[:, n])
        v_new = value[:, n] - k_cumdecay[:, n] @ S
        inter = (qi * np.exp(gi)[..., None]) @ S
        out[:, n] = inter + a @ v_new
        S = (S * np.exp(gi[:, -1])[:, None, None]
             + np.swapaxes(ki * np.exp(gi[:, -1:] - gi)[..., None], -1, -2) @ v_new)
    out = out.reshape(H, N * Cs, dv)[:, :T]
    return np.transpose(out, (1, 0, 2)), S


def expand_key_heads(x, Hv, order):
    """[T, Hk, d] -> [T, Hv, d]. 'grouped': value head j reads key head j // (Hv/Hk)
    (HF repeat_interleave; llama.cpp qwen3next's interleaved repeat). 'tiled': key
    head j % Hk (llama.cpp qwen35/qwen35moe ggml_repeat_4d, after the converter's
    V-head reorder)."""
    r = Hv // x.shape[1]
    if r == 1:
        return x
    return np.repeat(x, r, axis=1) if order == "grouped" else np.tile(x, (1, r, 1))


# ----------------------------------------------------------------------------
# Gated DeltaNet layer, Hugging Face weights
# ----------------------------------------------------------------------------


def hf_linear_projections(x, w, cfg):
    """The input projections. Returns (mixed_qkv [T, C] in conv-channel order
    [q of every key head | k | v of every value head], z [T, Hv, dv], b [T, Hv],
    a [T, Hv]), value heads in HF's grouped order.
      qwen3_next: in_proj_qkvz [Hk*(2dk + 2r*dv), D] is PER KEY HEAD g:
        [q_g (dk), k_g (dk), v_g (r*dv), z_g (r*dv)]; in_proj_ba [Hk*2r, D] per g:
        [b_g (r), a_g (r)]  (fix_query_key_value_ordering).
      qwen3_5 / qwen3_5_moe: in_proj_qkv [2Hk*dk + Hv*dv, D] already [q | k | v];
        in_proj_z [Hv*dv, D]; in_proj_b, in_proj_a [Hv, D]."""
    Hk, Hv, dk, dv, K, C = dims(cfg)
    T, r = x.shape[0], Hv // Hk
    if "linear_attn.in_proj_qkvz.weight" in w:
        qkvz = (x @ w["linear_attn.in_proj_qkvz.weight"].T).reshape(T, Hk, 2 * dk + 2 * r * dv)
        ba = (x @ w["linear_attn.in_proj_ba.weight"].T).reshape(T, Hk, 2 * r)
        q, k = qkvz[..., :dk], qkvz[..., dk:2 * dk]
        v = qkvz[..., 2 * dk:2 * dk + r * dv].reshape(T, Hv, dv)
        z = qkvz[..., 2 * dk + r * dv:].reshape(T, Hv, dv)
        b, a = ba[..., :r].reshape(T, Hv), ba[..., r:].reshape(T, Hv)
        mixed = np.concatenate([q.reshape(T, -1), k.reshape(T, -1), v.reshape(T, -1)], axis=1)
    else:
        mixed = x @ w["linear_attn.in_proj_qkv.weight"].T
        z = (x @ w["linear_attn.in_proj_z.weight"].T).reshape(T, Hv, dv)
        b = x @ w["linear_attn.in_proj_b.weight"].T
        a = x @ w["linear_attn.in_proj_a.weight"].T
    return mixed, z, b, a


def _after_conv(conv_out, z, b, a, w, cfg):
    """SiLU after the conv, split q/k/v, beta = sigmoid(b),
    g = -exp(A_log) * softplus(a + dt_bias), q/k expanded to Hv heads (grouped)."""
    Hk, Hv, dk, dv, K, C = dims(cfg)
    T = conv_out.shape[0]
    mixed = silu(conv_out)
    q = mixed[:, :Hk * dk].reshape(T, Hk, dk)
    k = mixed[:, Hk * dk:2 * Hk * dk].reshape(T, Hk, dk)
    v = mixed[:, 2 * Hk * dk:].reshape(T, Hv, dv)
    beta = sigmoid(b)
    g = -np.exp(w["linear_attn.A_log"]) * softplus(a + w["linear_attn.dt_bias"])
    q = l2norm(expand_key_heads(q, Hv, "grouped"))
    k = l2norm(expand_key_heads(k, Hv, "grouped"))
    return q, k, v, g, beta


def _output(core, z, w, cfg):
    Hk, Hv, dk, dv, K, C = dims(cfg)
    T = core.shape[0]
    o = gated_rms_norm(core, z, w["linear_attn.norm.weight"], cfg["rms_norm_eps"])
    return o.reshape(T, Hv * dv) @ w["linear_attn.out_proj.weight"].T


def gated_deltanet(x, w, cfg, state=None, form="chunked", chunk_size=64):
    """The Gated DeltaNet layer in the form tfmc is to compute it: the conv and the
    delta rule start from `state` ({"conv": [K-1, C], "ssm": [Hv, dk, dv]}; None:
    zeros, a new sequence) and return the state after the T positions, for any T.
    Returns (out [T, hidden], new_state)."""
    mixed, z, b, a = hf_linear_projections(x, w, cfg)
    conv_w = w["linear_attn.conv1d.weight"][:, 0, :]
    y, conv_state = causal_conv1d(mixed, conv_w, None if state is None else state["conv"])
    q, k, v, g, beta = _after_conv(y, z, b, a, w, cfg)
    s0 = None if state is None else state["ssm"]
    if form == "chunked":
        core, S = chunk_gated_delta_rule(q, k, v, g, beta, s0, chunk_size)
    else:
        core, S = recurrent_gated_delta_rule(q, k, v, g, beta, s0)
    return _output(core, z, w, cfg), {"conv": conv_state, "ssm": S}


def hf_gated_deltanet(x, w, cfg, cache=None, version="main"):
    """Qwen3NextGatedDeltaNet / Qwen3_5GatedDeltaNet.forward with a cache dict
    {"conv": [C, K] HF layout or None, "ssm": [Hv, dk, dv] or None} updated in place
    (None: no cache). version "main" = qwen3_5 @009e78d6 (continues a cached state
    on multi-token calls); "v4.57" = qwen3_next @7515843b (restarts them)."""
    Hk, Hv, dk, dv, K, C = dims(cfg)
    T = x.shape[0]
    mixed, z, b, a = hf_linear_projections(x, w, cfg)
    conv_w = w["linear_attn.conv1d.weight"][:, 0, :]
    has_prev = cache is not None and cache.get("conv") is not None
    if version == "main":
        use_pre = has_prev
        if use_pre and T == 1:
            y = hf_causal_conv1d_update(mixed, cache["conv"], conv_w)
        else:
            if cache is not None:  # LinearAttentionLayer.update_conv_state
                if not has_prev:
                    full = mixed.T
                    if full.shape[1] < K:
                        full = np.pad(full, ((0, 0), (K - full.shape[1], 0)))
                else:
                    full = np.concatenate([cache["conv"], mixed.T], axis=1)
                cache["conv"] = full[:, -K:].copy()
                y = hf_causal_conv1d_fn(full.T, conv_w)[-T:]
            else:
                y = hf_causal_conv1d_fn(mixed, conv_w)
        q, k, v, g, beta = _after_conv(y, z, b, a, w, cfg)
        s0 = cache["ssm"] if use_pre else None
        if use_pre and T == 1:
            core, S = recurrent_gated_delta_rule(q, k, v, g, beta, s0)
        else:
            core, S = chunk_gated_delta_rule(q, k, v, g, beta, s0)
    elif version == "v4.57":
        use_pre = has_prev and T == 1
        if use_pre:
            y = hf_causal_conv1d_update(mixed, cache["conv"], conv_w)
        else:
            if cache is not None:  # F.pad(mixed_qkv, (K - T, 0)): the last K inputs
                full = mixed.T
                cache["conv"] = (np.pad(full, ((0, 0), (K - T, 0))) if T < K else full[:, -K:]).copy()
            y = hf_causal_conv1d_fn(mixed, conv_w)  # from zeros, whatever the cache holds
        q, k, v, g, beta = _after_conv(y, z, b, a, w, cfg)
        if use_pre:
            core, S = recurrent_gated_delta_rule(q, k, v, g, beta, cache["ssm"])
        else:
            core, S = chunk_gated_delta_rule(q, k, v, g, beta, None)  # initial_state=None
    else:
        raise ValueError(version)
    if cache is not None:
        cache["ssm"] = S
    return _output(core, z, w, cfg)


# ----------------------------------------------------------------------------
# gated full attention (Qwen3 attention plus an output gate and partial RoPE)
# ----------------------------------------------------------------------------


def rope_inv_freq(cfg):
    """compute_default_rope_parameters: rotary dim = int(head_dim *
    partial_rotary_factor) (0.25: 64 of 256), theta^(-2i/dim). Qwen3.5's interleaved
    MRoPE (mrope_section [11, 11, 10]) equals this for text, whose three position
    streams are equal."""
    hd = cfg["head_dim"]
    rot = int(hd * config_value(cfg, "partial_rotary_factor", 0.25))
    return 1.0 / (cfg["rope_theta"] ** (np.arange(0, rot, 2) / rot))


def apply_partial_rope(x, positions, inv_freq):
    """NeoX rotate_half on the FIRST rot dims of each head, the rest passed through
    (apply_rotary_pos_emb; ggml_rope_ext NEOX with n_rot = rope.dimension_count)."""
    rot = 2 * inv_freq.shape[0]
    freqs = np.asarray(positions, dtype=np.float64)[:, None] * inv_freq[None, :]
    emb = np.concatenate([freqs, freqs], axis=-1)
    cos, sin = np.cos(emb)[:, None, :], np.sin(emb)[:, None, :]
    xr, xp = x[..., :rot], x[..., rot:]
    half = rot // 2
    rotated = np.concatenate([-xr[..., half:], xr[..., :half]], axis=-1)
    return np.concatenate([xr * cos + rotated * sin, xp], axis=-1)


def _attend(q, k, v, q_pos, k_pos, scale):
    """Causal GQA softmax attention by position. q [T, H, d], k/v [S, Hkv, d]."""
    H, Hkv = q.shape[1], k.shape[1]
    k = np.repeat(k, H // Hkv, axis=1)
    v = np.repeat(v, H // Hkv, axis=1)
    s = np.einsum("thd,shd->hts", q, k) * scale
    s = np.where(np.asarray(k_pos)[None, None, :] <= np.asarray(q_pos)[None, :, None], s, -np.inf)
    return np.einsum("hts,shd->thd", softmax(s, -1), v)


def hf_gated_attention(x, w, cfg, positions, cache=None, norm=rms_norm_zero_centered, prefix="self_attn."):
    """Qwen3NextAttention / Qwen3_5Attention. q_proj [H*hd*2, D] gives, PER HEAD,
    [query (hd) | gate (hd)] (view(..., -1, 2*hd) then chunk); q_norm/k_norm (1+w)
    per head before RoPE; scale hd^-0.5; attn_output * sigmoid(gate) before o_proj.
    cache: {"k": [S, Hkv, hd], "v": ..., "pos": [S]} appended in place."""
    T = x.shape[0]
    H, Hkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps = cfg["rms_norm_eps"]
    qg = (x @ w[prefix + "q_proj.weight"].T).reshape(T, H, 2 * hd)
    q, gate = qg[..., :hd], qg[..., hd:].reshape(T, H * hd)
    q = norm(q, w[prefix + "q_norm.weight"], eps)
    k = norm((x @ w[prefix + "k_proj.weight"].T).reshape(T, Hkv, hd), w[prefix + "k_norm.weight"], eps)
    v = (x @ w[prefix + "v_proj.weight"].T).reshape(T, Hkv, hd)
    inv = rope_inv_freq(cfg)
    q, k = apply_partial_rope(q, positions, inv), apply_partial_rope(k, positions, inv)
    kpos = np.asarray(positions)
    if cache is not None:
        if cache.get("k") is not None:
            k = np.concatenate([cache["k"], k]); v = np.concatenate([cache["v"], v])
            kpos = np.concatenate([cache["pos"], kpos])
        cache.update(k=k, v=v, pos=kpos)
    o = _attend(q, k, v, positions, kpos, hd ** -0.5).reshape(T, H * hd)
    return (o * sigmoid(gate)) @ w[prefix + "o_proj.weight"].T


# ----------------------------------------------------------------------------
# MLPs and the decoder layer
# ----------------------------------------------------------------------------


def swiglu(x, gate_w, up_w, down_w):
    return (silu(x @ gate_w.T) * (x @ up_w.T)) @ down_w.T


def hf_mlp(x, w, cfg):
    """Qwen3_5MLP (dense), or Qwen3NextSparseMoeBlock / Qwen3_5MoeSparseMoeBlock:
    softmax over experts, top-k, renormalised (qwen3_next: if norm_topk_prob, true in
    the checkpoints; qwen3_5_moe: always), plus the shared expert scaled by
    sigmoid(shared_expert_gate . x) (shared_expert_gate.weight [1, D])."""
    if "mlp.gate.weight" not in w:
        return swiglu(x, w["mlp.gate_proj.weight"], w["mlp.up_proj.weight"], w["mlp.down_proj.weight"])
    E, k = cfg["num_experts"], cfg["num_experts_per_tok"]
    probs = softmax(x @ w["mlp.gate.weight"].T, -1)
    out = np.zeros_like(x)
    for t in range(x.shape[0]):
        top = np.argsort(-probs[t], kind="stable")[:k]
        wt = probs[t, top]
        if config_value(cfg, "norm_topk_prob", True):
            wt = wt / wt.sum()
        for e, we in zip(top, wt):
            p = "mlp.experts.%d." % e
            out[t] += we * swiglu(x[t:t + 1], w[p + "gate_proj.weight"], w[p + "up_proj.weight"],
                                  w[p + "down_proj.weight"])[0]
    s = "mlp.shared_expert."
    shared = swiglu(x, w[s + "gate_proj.weight"], w[s + "up_proj.weight"], w[s + "down_proj.weight"])
    return out + sigmoid(x @ w["mlp.shared_expert_gate.weight"].T) * shared


def hf_decoder_layer(x, w, cfg, layer_idx, positions, cache=None, version="main"):
    """Qwen3NextDecoderLayer / Qwen3_5DecoderLayer: pre-norm residual blocks as in
    Qwen3, with (1+w) norms and the token mixer chosen by layer_types[layer_idx]."""
    eps = cfg["rms_norm_eps"]
    h = rms_norm_zero_centered(x, w["input_layernorm.weight"], eps)
    if layer_types(cfg)[layer_idx] == "linear_attention":
        h = hf_gated_deltanet(h, w, cfg, cache, version)
    else:
        h = hf_gated_attention(h, w, cfg, positions, cache)
    x = x + h
    return x + hf_mlp(rms_norm_zero_centered(x, w["post_attention_layernorm.weight"], eps), w, cfg)


def forward(tokens, tensors, cfg, prefix="model."):
    """Qwen3NextForCausalLM / Qwen3_5ForCausalLM over `tokens` (no cache):
    every position's logits. `tensors` are the checkpoint's, by name, the
    text model's under `prefix`; the head is lm_head's, else the tied
    embeddings'."""
    x = tensors[prefix + "embed_tokens.weight"][np.asarray(tokens)]
    positions = np.arange(len(tokens))
    for l in range(cfg["num_hidden_layers"]):
        p = prefix + "layers.%d." % l
        w = {k[len(p):]: v for k, v in tensors.items() if k.startswith(p)}
        x = hf_decoder_layer(x, w, cfg, l, positions)
    x = rms_norm_zero_centered(x, tensors[prefix + "norm.weight"], cfg["rms_norm_eps"])
    head = tensors.get("lm_head.weight", tensors[prefix + "embed_tokens.weight"])
    return x @ head.T


def stacked_experts(tensors, prefix, layers, experts):
    """transformers 5's form of the experts: per layer mlp.experts.gate_up_proj
    [E, 2I, D] (each expert's gate rows, then its up rows) and
    mlp.experts.down_proj [E, D, I], in place of per-expert tensors."""
    saved = dict(tensors)
    for l in range(layers):
        p = prefix + "layers.%d.mlp.experts." % l
        take = lambda e, part: saved.pop(p + "%d.%s.weight" % (e, part))  # noqa: E731
        gate_up, down = [], []
        for e in range(experts):
            gate_up.append(np.concatenate([take(e, "gate_proj"), take(e, "up_proj")]))
            down.append(take(e, "down_proj"))
        saved[p + "gate_up_proj"] = np.stack(gate_up)
        saved[p + "down_proj"] = np.stack(down)
    return saved


# ----------------------------------------------------------------------------
# GGUF: convert_hf_to_gguf's transforms, and llama.cpp's graph on the result
# ----------------------------------------------------------------------------

GGUF_ARCH = {"qwen3_next": "qwen3next", "qwen3_5": "qwen35", "qwen3_5_moe": "qwen35moe"}


def reorder_v_heads(t, axis, num_k_heads, num_v_per_k, head_dim):
    """_LinearAttentionVReorderBase._reorder_v_heads: along `axis`, value heads from
    grouped (g*r + i) to tiled (i*Hk + g) order."""
    shape = list(t.shape)
    axis = axis % len(shape)
    t = t.reshape(shape[:axis] + [num_k_heads, num_v_per_k, head_dim] + shape[axis + 1:])
    return np.swapaxes(t, axis, axis + 1).reshape(shape)


def gguf_hparams(cfg):
    """The GGUF keys convert_hf_to_gguf writes that these layers read
    ({a} = general.architecture)."""
    a = GGUF_ARCH[cfg["model_type"]]
    Hk, Hv, dk, dv, K, C = dims(cfg)
    lt = layer_types(cfg)
    hp = {
        "general.architecture": a,
        a + ".block_count": cfg["num_hidden_layers"],  # + MTP layers when the checkpoint has them
        a + ".embedding_length": cfg["hidden_size"],
        a + ".attention.head_count": cfg["num_attention_heads"],
        a + ".attention.head_count_kv": cfg["num_key_value_heads"],
        a + ".attention.key_length": cfg["head_dim"],
        a + ".attention.value_length": cfg["head_dim"],
        a + ".attention.layer_norm_rms_epsilon": cfg["rms_norm_eps"],
        a + ".rope.freq_base": cfg["rope_theta"],
        a + ".rope.dimension_count": int(cfg["head_dim"] * config_value(cfg, "partial_rotary_factor", 0.25)),
        a + ".ssm.conv_kernel": K,
        a + ".ssm.state_size": dk,
        a + ".ssm.group_count": Hk,
        a + ".ssm.time_step_rank": Hv,
        a + ".ssm.inner_size": dv * Hv,
        a + ".attention.recurrent_layers": [t == "linear_attention" for t in lt],
        a + ".full_attention_interval": config_value(cfg, "full_attention_interval", 4),
    }
    if a != "qwen3next":
        hp[a + ".rope.dimension_sections"] = [11, 11, 10, 0]
    if config_value(cfg, "num_experts", 0):
        hp[a + ".expert_count"] = cfg["num_experts"]
        hp[a + ".expert_used_count"] = cfg["num_experts_per_tok"]
        hp[a + ".expert_feed_forward_length"] = cfg["moe_intermediate_size"]
        hp[a + ".expert_shared_feed_forward_length"] = cfg["shared_expert_intermediate_size"]
    return hp


def hf_to_gguf_layer(w, cfg):
    """One layer's tensors as convert_hf_to_gguf.py writes them (arrays in torch
    order). Qwen3NextModel.modify_tensors: A_log -> ssm_a = -exp(A_log); dt_bias ->
    ssm_dt.bias; conv1d squeezed; every "*norm.weight" but linear_attn.norm + 1;
    in_proj_qkvz regrouped to attn_qkv [q all | k all | v all] + attn_gate (z).
    _LinearAttentionVReorderBase (qwen35, qwen35moe) when Hk != Hv: value heads to
    tiled order in in_proj_qkv's V rows, in_proj_z, in_proj_a/b, A_log, dt_bias,
    conv1d's V channels and out_proj's columns. qwen3next keeps grouped order."""
    Hk, Hv, dk, dv, K, C = dims(cfg)
    r = Hv // Hk
    a = GGUF_ARCH[cfg["model_type"]]
    w = dict(w)
    if a != "qwen3next" and Hk != Hv and "linear_attn.in_proj_qkv.weight" in w:
        W = w["linear_attn.in_proj_qkv.weight"]
        w["linear_attn.in_proj_qkv.weight"] = np.concatenate(
            [W[:2 * Hk * dk], reorder_v_heads(W[2 * Hk * dk:], 0, Hk, r, dv)])
        w["linear_attn.in_proj_z.weight"] = reorder_v_heads(w["linear_attn.in_proj_z.weight"], 0, Hk, r, dv)
        for n in ("linear_attn.in_proj_b.weight", "linear_attn.in_proj_a.weight"):
            w[n] = reorder_v_heads(w[n], 0, Hk, r, 1)
        for n in ("linear_attn.A_log", "linear_attn.dt_bias"):
            w[n] = reorder_v_heads(w[n][:, None], 0, Hk, r, 1)[:, 0]
        cw = w["linear_attn.conv1d.weight"]
        w["linear_attn.conv1d.weight"] = np.concatenate(
            [cw[:2 * Hk * dk], reorder_v_heads(cw[2 * Hk * dk:], 0, Hk, r, dv)])
        w["linear_attn.out_proj.weight"] = reorder_v_heads(w["linear_attn.out_proj.weight"], 1, Hk, r, dv)
    g = {}
    names = {
        "input_layernorm.weight": "attn_norm.weight",
        # NB: llama.cpp's "post_attention_norm" is HF's post_attention_layernorm, the
        # norm BEFORE the MLP (LLM_TENSOR_ATTN_POST_NORM, used as the FFN input norm).
        "post_attention_layernorm.weight": "post_attention_norm.weight",
        "self_attn.q_proj.weight": "attn_q.weight", "self_attn.k_proj.weight": "attn_k.weight",
        "self_attn.v_proj.weight": "attn_v.weight", "self_attn.o_proj.weight": "attn_output.weight",
        "self_attn.q_norm.weight": "attn_q_norm.weight", "self_attn.k_norm.weight": "attn_k_norm.weight",
        "linear_attn.in_proj_qkv.weight": "attn_qkv.weight", "linear_attn.in_proj_z.weight": "attn_gate.weight",
        "linear_attn.in_proj_b.weight": "ssm_beta.weight", "linear_attn.in_proj_a.weight": "ssm_alpha.weight",
        "linear_attn.in_proj_ba.weight": "ssm_ba.weight",
        "linear_attn.norm.weight": "ssm_norm.weight", "linear_attn.out_proj.weight": "ssm_out.weight",
        "mlp.gate_proj.weight": "ffn_gate.weight", "mlp.up_proj.weight": "ffn_up.weight",
        "mlp.down_proj.weight": "ffn_down.weight", "mlp.gate.weight": "ffn_gate_inp.weight",
        "mlp.shared_expert.gate_proj.weight": "ffn_gate_shexp.weight",
        "mlp.shared_expert.up_proj.weight": "ffn_up_shexp.weight",
        "mlp.shared_expert.down_proj.weight": "ffn_down_shexp.weight",
    }
    for n, t in w.items():
        if n == "linear_attn.A_log":
            g["ssm_a"] = -np.exp(t)
        elif n == "linear_attn.dt_bias":
            g["ssm_dt.bias"] = t.copy()
        elif n == "linear_attn.conv1d.weight":
            g["ssm_conv1d.weight"] = t[:, 0, :].copy()  # [C, 1, K] -> [C, K]: ne {K, C}
        elif n == "linear_attn.in_proj_qkvz.weight":
            D = t.shape[1]
            tt = t.T.reshape(D, Hk, 2 * dk + 2 * r * dv)
            q, k = tt[..., :dk], tt[..., dk:2 * dk]
            v, z = tt[..., 2 * dk:2 * dk + r * dv], tt[..., 2 * dk + r * dv:]
            g["attn_qkv.weight"] = np.concatenate(
                [q.reshape(D, -1), k.reshape(D, -1), v.reshape(D, -1)], axis=-1).T.copy()
            g["attn_gate.weight"] = z.reshape(D, -1).T.copy()
        elif n == "mlp.shared_expert_gate.weight":
            g["ffn_gate_inp_shexp.weight"] = t.reshape(-1).copy()  # [1, D] -> ne {D}
        elif n.startswith("mlp.experts."):
            continue
        elif n in names:
            plus = n.endswith("norm.weight") and n != "linear_attn.norm.weight"
            g[names[n]] = t + 1.0 if plus else t.copy()
        else:
            raise KeyError(n)
    if "mlp.gate.weight" in w:  # per-expert tensors stacked on a leading axis
        E = w["mlp.gate.weight"].shape[0]
        for hf, gg in (("gate_proj", "ffn_gate_exps"), ("up_proj", "ffn_up_exps"),
                       ("down_proj", "ffn_down_exps")):
            g[gg + ".weight"] = np.stack([w["mlp.experts.%d.%s.weight" % (e, hf)] for e in range(E)])
    return g


def gguf_linear_attention(x, g, hp, state=None):
    """llama.cpp build_layer_attn_linear (qwen3next.cpp / qwen35.cpp) on GGUF
    tensors. state: llama.cpp layouts {"conv": [C, K-1], "ssm": [Hv, dv, dk]}
    (ggml ne {K-1, C} and {dk, dv, Hv}); None: zeros. Returns (out, new_state)."""
    a = hp["general.architecture"]
    Hk, Hv = hp[a + ".ssm.group_count"], hp[a + ".ssm.time_step_rank"]
    dk = hp[a + ".ssm.state_size"]
    dv = hp[a + ".ssm.inner_size"] // Hv
    K = hp[a + ".ssm.conv_kernel"]
    eps = hp[a + ".attention.layer_norm_rms_epsilon"]
    T, r = x.shape[0], Hv // Hk
    qkv = x @ g["attn_qkv.weight"].T
    z = (x @ g["attn_gate.weight"].T).reshape(T, Hv, dv)
    if a == "qwen3next":  # ssm_ba per key head: [b (r) | a (r)]
        ba = (x @ g["ssm_ba.weight"].T).reshape(T, Hk, 2 * r)
        b, al = ba[..., :r].reshape(T, Hv), ba[..., r:].reshape(T, Hv)
    else:
        b, al = x @ g["ssm_beta.weight"].T, x @ g["ssm_alpha.weight"].T
    beta = sigmoid(b)
    gate = softplus(al + g["ssm_dt.bias"]) * g["ssm_a"]  # ssm_a = -exp(A_log)
    C = qkv.shape[1]
    conv_state = np.zeros((C, K - 1)) if state is None else state["conv"]
    inp = np.concatenate([conv_state, qkv.T], axis=1)  # build_conv_state: [C, K-1+T]
    wc = g["ssm_conv1d.weight"]  # [C, K]
    y = np.stack([np.sum(inp[:, t:t + K] * wc, axis=1) for t in range(T)])  # ggml_ssm_conv
    y = silu(y)
    q = l2norm_ggml(y[:, :Hk * dk].reshape(T, Hk, dk), eps)
    k = l2norm_ggml(y[:, Hk * dk:2 * Hk * dk].reshape(T, Hk, dk), eps)
    v = y[:, 2 * Hk * dk:].reshape(T, Hv, dv)
    order = "grouped" if a == "qwen3next" else "tiled"
    q, k = expand_key_heads(q, Hv, order), expand_key_heads(k, Hv, order)
    s0 = None if state is None else np.swapaxes(state["ssm"], -1, -2)
    core, S = (recurrent_gated_delta_rule if T == 1 else chunk_gated_delta_rule)(q, k, v, gate, beta, s0)
    o = rms_norm(core, g["ssm_norm.weight"], eps) * silu(z)
    out = o.reshape(T, Hv * dv) @ g["ssm_out.weight"].T
    return out, {"conv": inp[:, -(K - 1):].copy(), "ssm": np.swapaxes(S, -1, -2).copy()}


def gguf_attention(x, g, hp, positions, cache=None):
    """llama.cpp build_layer_attn: attn_q's rows are [q | gate] per head (no
    transform), q/k norms with the +1 baked in, NEOX rope on rope.dimension_count
    dims (qwen35: IMROPE with sections, equal for text), sigmoid gate."""
    a = hp["general.architecture"]
    cfg = {"num_attention_heads": hp[a + ".attention.head_count"],
           "num_key_value_heads": hp[a + ".attention.head_count_kv"],
           "head_dim": hp[a + ".attention.key_length"],
           "rms_norm_eps": hp[a + ".attention.layer_norm_rms_epsilon"],
           "rope_theta": hp[a + ".rope.freq_base"],
           "partial_rotary_factor": hp[a + ".rope.dimension_count"] / hp[a + ".attention.key_length"]}
    gw = {"q_proj.weight": g["attn_q.weight"], "k_proj.weight": g["attn_k.weight"],
          "v_proj.weight": g["attn_v.weight"], "o_proj.weight": g["attn_output.weight"],
          "q_norm.weight": g["attn_q_norm.weight"], "k_norm.weight": g["attn_k_norm.weight"]}
    return hf_gated_attention(x, gw, cfg, positions, cache, norm=rms_norm, prefix="")


def gguf_ffn(x, g, hp):
    """build_layer_ffn: llama.cpp always renormalises the top-k weights (norm_w =
    true, softmax gating); shared expert scaled by sigmoid(ffn_gate_inp_shexp . x)."""
    if "ffn_gate_inp.weight" not in g:
        return swiglu(x, g["ffn_gate.weight"], g["ffn_up.weight"], g["ffn_down.weight"])
    a = hp["general.architecture"]
    k = hp[a + ".expert_used_count"]
    probs = softmax(x @ g["ffn_gate_inp.weight"].T, -1)
    out = np.zeros_like(x)
    for t in range(x.shape[0]):
        top = np.argsort(-probs[t], kind="stable")[:k]
        wt = probs[t, top] / probs[t, top].sum()
        for e, we in zip(top, wt):
            out[t] += we * swiglu(x[t:t + 1], g["ffn_gate_exps.weight"][e], g["ffn_up_exps.weight"][e],
                                  g["ffn_down_exps.weight"][e])[0]
    shared = swiglu(x, g["ffn_gate_shexp.weight"], g["ffn_up_shexp.weight"], g["ffn_down_shexp.weight"])
    return out + sigmoid(x @ g["ffn_gate_inp_shexp.weight"])[:, None] * shared


def gguf_decoder_layer(x, g, hp, layer_idx, positions, cache):
    """One layer of llama_model_qwen3next::graph / qwen35 / qwen35moe. cache: a dict,
    {"state": ...} for recurrent layers, the KV dict for attention layers."""
    a = hp["general.architecture"]
    eps = hp[a + ".attention.layer_norm_rms_epsilon"]
    h = rms_norm(x, g["attn_norm.weight"], eps)
    if hp[a + ".attention.recurrent_layers"][layer_idx]:
        h, cache["state"] = gguf_linear_attention(h, g, hp, cache.get("state"))
    else:
        h = gguf_attention(h, g, hp, positions, cache)
    x = x + h
    return x + gguf_ffn(rms_norm(x, g["post_attention_norm.weight"], eps), g, hp)


# ----------------------------------------------------------------------------
# configurations
# ----------------------------------------------------------------------------

# The published models (docs/plans/deltanet.md says which values were verified).
MODELS = {
    "Qwen3.5-0.8B": dict(model_type="qwen3_5", hidden_size=1024, num_hidden_layers=24,
                         num_attention_heads=8, num_key_value_heads=2, head_dim=256,
                         linear_num_key_heads=16, linear_num_value_heads=16,
                         linear_key_head_dim=128, linear_value_head_dim=128,
                         linear_conv_kernel_dim=4, full_attention_interval=4),
    "Qwen3.5-35B-A3B": dict(model_type="qwen3_5_moe", hidden_size=2048, num_hidden_layers=40,
                            num_attention_heads=16, num_key_value_heads=2, head_dim=256,
                            linear_num_key_heads=16, linear_num_value_heads=32,
                            linear_key_head_dim=128, linear_value_head_dim=128,
                            linear_conv_kernel_dim=4, full_attention_interval=4),
    "Qwen3-Next-80B-A3B": dict(model_type="qwen3_next", hidden_size=2048, num_hidden_layers=48,
                               num_attention_heads=16, num_key_value_heads=2, head_dim=256,
                               linear_num_key_heads=16, linear_num_value_heads=32,
                               linear_key_head_dim=128, linear_value_head_dim=128,
                               linear_conv_kernel_dim=4, full_attention_interval=4),
}


def state_bytes(cfg, elem=4):
    """Per sequence: recurrent state of every linear layer (f32), and KV bytes per
    position of the full-attention layers (f32)."""
    lt = layer_types(cfg)
    n_lin = sum(t == "linear_attention" for t in lt)
    sh = state_shapes(cfg)
    per_layer = (np.prod(sh["conv"]) + np.prod(sh["ssm"])) * elem
    kv = (len(lt) - n_lin) * 2 * cfg["num_key_value_heads"] * cfg["head_dim"] * elem
    return n_lin, int(per_layer), int(per_layer * n_lin), kv


def small_config(model_type, Hk=2, Hv=4, experts=0):
    cfg = dict(model_type=model_type, hidden_size=48, num_hidden_layers=4, num_attention_heads=4,
               num_key_value_heads=2, head_dim=16, rms_norm_eps=1e-6, rope_theta=10000.0,
               partial_rotary_factor=0.25, linear_num_key_heads=Hk, linear_num_value_heads=Hv,
               linear_key_head_dim=8, linear_value_head_dim=12, linear_conv_kernel_dim=4,
               full_attention_interval=4, intermediate_size=40)
    if experts:
        cfg.update(num_experts=experts, num_experts_per_tok=2, moe_intermediate_size=16,
                   shared_expert_intermediate_size=20, norm_topk_prob=True)
    return cfg


def random_layer(rng, cfg, kind, scale=0.2):
    """Random HF weights of one layer; norms nonzero so that the (1+w) matters."""
    D = cfg["hidden_size"]
    Hk, Hv, dk, dv, K, C = dims(cfg)
    n = lambda *s: rng.standard_normal(s) * scale
    w = {"input_layernorm.weight": n(D), "post_attention_layernorm.weight": n(D)}
    if kind == "linear_attention":
        if cfg["model_type"] == "qwen3_next":
            w["linear_attn.in_proj_qkvz.weight"] = n(2 * Hk * dk + 2 * Hv * dv, D)
            w["linear_attn.in_proj_ba.weight"] = n(2 * Hv, D)
        else:
            w["linear_attn.in_proj_qkv.weight"] = n(C, D)
            w["linear_attn.in_proj_z.weight"] = n(Hv * dv, D)
            w["linear_attn.in_proj_b.weight"] = n(Hv, D)
            w["linear_attn.in_proj_a.weight"] = n(Hv, D)
        w["linear_attn.conv1d.weight"] = rng.standard_normal((C, 1, K)) * 0.5
        w["linear_attn.dt_bias"] = 1.0 + n(Hv)
        w["linear_attn.A_log"] = np.log(rng.uniform(0.5, 4.0, Hv))
        w["linear_attn.norm.weight"] = 1.0 + n(dv)
        w["linear_attn.out_proj.weight"] = n(D, Hv * dv)
    else:
        H, Hkv, hd = cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
        w["self_attn.q_proj.weight"] = n(2 * H * hd, D)
        w["self_attn.k_proj.weight"] = n(Hkv * hd, D)
        w["self_attn.v_proj.weight"] = n(Hkv * hd, D)
        w["self_attn.o_proj.weight"] = n(D, H * hd)
        w["self_attn.q_norm.weight"] = n(hd)
        w["self_attn.k_norm.weight"] = n(hd)
    if config_value(cfg, "num_experts", 0):
        E, I, Is = cfg["num_experts"], cfg["moe_intermediate_size"], cfg["shared_expert_intermediate_size"]
        w["mlp.gate.weight"] = n(E, D) * 5
        for e in range(E):
            p = "mlp.experts.%d." % e
            w[p + "gate_proj.weight"], w[p + "up_proj.weight"], w[p + "down_proj.weight"] = n(I, D), n(I, D), n(D, I)
        s = "mlp.shared_expert."
        w[s + "gate_proj.weight"], w[s + "up_proj.weight"], w[s + "down_proj.weight"] = n(Is, D), n(Is, D), n(D, Is)
        w["mlp.shared_expert_gate.weight"] = n(1, D)
    else:
        I = cfg["intermediate_size"]
        w["mlp.gate_proj.weight"], w["mlp.up_proj.weight"], w["mlp.down_proj.weight"] = n(I, D), n(I, D), n(D, I)
    return w


# ----------------------------------------------------------------------------
# self-tests
# ----------------------------------------------------------------------------


def _check(name, ok, detail=""):
    print(("PASS " if ok else "FAIL ") + name + (("  " + detail) if detail else ""))
    if not ok:
        raise SystemExit(1)


def _rand_rule_inputs(rng, T, H, dk, dv):
    q = l2norm(rng.standard_normal((T, H, dk)))
    k = l2norm(rng.standard_normal((T, H, dk)))
    v = rng.standard_normal((T, H, dv))
    g = -np.exp(rng.standard_normal((T, H)) - 1.0)  # log decay, < 0
    beta = sigmoid(rng.standard_normal((T, H)))
    s0 = rng.standard_normal((H, dk, dv)) * 0.3
    return q, k, v, g, beta, s0


def _test_delta_rule():
    rng = np.random.default_rng(1)
    for (T, H, dk, dv) in ((150, 3, 16, 16), (64, 2, 8, 12), (5, 4, 8, 8), (129, 2, 16, 8)):
        q, k, v, g, beta, s0 = _rand_rule_inputs(rng, T, H, dk, dv)
        for init in (None, s0):
            o_r, s_r = recurrent_gated_delta_rule(q, k, v, g, beta, init)
            o_c, s_c = chunk_gated_delta_rule(q, k, v, g, beta, init, 64)
            err = max(np.max(np.abs(o_r - o_c)), np.max(np.abs(s_r - s_c)))
            _check("chunked(64) == recurrent, T=%d H=%d dk=%d dv=%d %s" % (
                T, H, dk, dv, "zero state" if init is None else "given state"), err < 1e-10, "max|diff|=%.1e" % err)
    q, k, v, g, beta, s0 = _rand_rule_inputs(rng, 150, 2, 8, 8)
    o_a, s_a = chunk_gated_delta_rule(q, k, v, g, beta, s0, 64)
    o_b, s_b = chunk_gated_delta_rule(q, k, v, g, beta, s0, 16)
    _check("chunk size 16 == chunk size 64", max(np.max(np.abs(o_a - o_b)), np.max(np.abs(s_a - s_b))) < 1e-10)
    o1, s1 = chunk_gated_delta_rule(q[:70], k[:70], v[:70], g[:70], beta[:70], s0)
    o2, s2 = chunk_gated_delta_rule(q[70:], k[70:], v[70:], g[70:], beta[70:], s1)
    err = max(np.max(np.abs(np.concatenate([o1, o2]) - o_a)), np.max(np.abs(s2 - s_a)))
    _check("chunked(70) then chunked(80) from its state == chunked(150)", err < 1e-10, "max|diff|=%.1e" % err)
    # beta = 1, g = 0: S k = v after the update (the delta rule writes v at key k)
    ku = k[:1] / np.linalg.norm(k[:1], axis=-1, keepdims=True)  # exactly unit keys
    _, S = recurrent_gated_delta_rule(q[:1], ku, v[:1], np.zeros((1, 2)), np.ones((1, 2)), s0)
    _check("delta rule with beta=1, g=0 stores v at k", np.max(np.abs(np.einsum("hkv,hk->hv", S, ku[0]) - v[0])) < 1e-12)


def _test_conv():
    rng = np.random.default_rng(2)
    T, C, K = 23, 7, 4
    x, wc = rng.standard_normal((T, C)), rng.standard_normal((C, K))
    full, st_full = causal_conv1d(x, wc)
    ref = np.stack([sum(wc[:, j] * (x[t - (K - 1) + j] if t - (K - 1) + j >= 0 else 0) for j in range(K))
                    for t in range(T)])
    _check("causal_conv1d == F.conv1d(padding=K-1)[:T] (weight[:, K-1] on the current input)",
           np.max(np.abs(full - ref)) < 1e-12)
    for splits in ((10, 13), (1, 1, 1, 20), (2, 1, 5, 15), (22, 1), (3, 3, 3, 3, 11)):
        st, outs, at = None, [], 0
        for n in splits:
            y, st = causal_conv1d(x[at:at + n], wc, st)
            outs.append(y)
            at += n
        err = max(np.max(np.abs(np.concatenate(outs) - full)), np.max(np.abs(st - st_full)))
        _check("conv1d with carried [K-1, C] state, chunks %s == whole" % (splits,), err < 1e-12)
    # HF's decode path keeps K columns [C, K]; the oldest is never read.
    hf = np.pad(x[:10].T, ((0, 0), (K - 10, 0))) if 10 < K else x[:10].T[:, -K:].copy()
    outs = [hf_causal_conv1d_fn(x[:10], wc)]
    for t in range(10, T):
        outs.append(hf_causal_conv1d_update(x[t:t + 1], hf, wc))
    _check("HF causal_conv1d_update with a [C, K] state == carried [K-1, C] state",
           np.max(np.abs(np.concatenate(outs) - full)) < 1e-12)
    _check("state shapes: conv [K-1, C], ssm [Hv, dk, dv]",
           state_shapes(small_config("qwen3_5")) == {"conv": (3, 2 * 2 * 8 + 4 * 12), "ssm": (4, 8, 12)})


def _run_split(fn, x, splits):
    outs, at = [], 0
    for n in splits:
        outs.append(fn(x[at:at + n], np.arange(at, at + n)))
        at += n
    return np.concatenate(outs)


def _test_prefill_then_decode():
    splits = (37, 1, 1, 30, 1, 1, 70, 1)  # prefill, decodes, multi-token continuations
    T = sum(splits)
    for mt, Hk, Hv, experts in (("qwen3_next", 2, 4, 4), ("qwen3_5", 2, 4, 0), ("qwen3_5", 3, 3, 0),
                                ("qwen3_5_moe", 2, 4, 4)):
        cfg = small_config(mt, Hk, Hv, experts)
        rng = np.random.default_rng(3)
        x = rng.standard_normal((T, cfg["hidden_size"]))
        pos = np.arange(T)
        for li in (0, 3):  # layer_types: linear, linear, linear, full
            kind = layer_types(cfg)[li]
            w = random_layer(rng, cfg, kind)
            full = hf_decoder_layer(x, w, cfg, li, pos)
            cache = {}
            inc = _run_split(lambda xs, ps: hf_decoder_layer(xs, w, cfg, li, ps, cache), x, splits)
            err = np.max(np.abs(inc - full))
            _check("%s Hk=%d Hv=%d %s layer%s: prefill+decode+continuations %s == full prefill (HF main)" % (
                mt, Hk, Hv, kind, " +MoE" if experts else "", splits), err < 1e-10, "max|diff|=%.1e" % err)
            if kind != "linear_attention":
                continue
            st = [None]

            def tfmc(xs, ps, form):
                h = rms_norm_zero_centered(xs, w["input_layernorm.weight"], cfg["rms_norm_eps"])
                o, st[0] = gated_deltanet(h, w, cfg, st[0], form if len(xs) > 1 else "recurrent")
                xs = xs + o
                return xs + hf_mlp(rms_norm_zero_centered(xs, w["post_attention_layernorm.weight"],
                                                          cfg["rms_norm_eps"]), w, cfg)
            for form in ("chunked", "recurrent"):
                st[0] = None
                err = np.max(np.abs(_run_split(lambda a, b: tfmc(a, b, form), x, splits) - full))
                _check("  tfmc form (state in, state out; %s prefill) == full prefill" % form, err < 1e-10,
                       "max|diff|=%.1e" % err)
            cache = {}
            old = _run_split(lambda xs, ps: hf_decoder_layer(xs, w, cfg, li, ps, cache, "v4.57"), x, splits)
            ok_prefix = np.max(np.abs(old[:39] - full[:39])) < 1e-10
            diff = np.max(np.abs(old[39:69] - full[39:69]))
            _check("  HF v4.57 semantics: prefill+single decodes right, multi-token continuation restarts",
                   ok_prefix and diff > 1e-3, "continuation max|diff|=%.2f" % diff)


def _test_gguf_round_trip():
    splits = (20, 1, 1, 9, 1)
    T = sum(splits)
    for mt, Hk, Hv, experts in (("qwen3_next", 2, 4, 4), ("qwen3_next", 2, 2, 0), ("qwen3_5", 2, 4, 0),
                                ("qwen3_5", 3, 3, 0), ("qwen3_5_moe", 2, 6, 4)):
        cfg = small_config(mt, Hk, Hv, experts)
        hp = gguf_hparams(cfg)
        rng = np.random.default_rng(4)
        x = rng.standard_normal((T, cfg["hidden_size"]))
        for li in (0, 3):
            kind = layer_types(cfg)[li]
            w = random_layer(rng, cfg, kind)
            g = hf_to_gguf_layer(w, cfg)
            hc, gc = {}, {}
            a = _run_split(lambda xs, ps: hf_decoder_layer(xs, w, cfg, li, ps, hc), x, splits)
            b = _run_split(lambda xs, ps: gguf_decoder_layer(xs, g, hp, li, ps, gc), x, splits)
            err = np.max(np.abs(a - b))
            _check("GGUF %s Hk=%d Hv=%d %s layer: HF weights -> GGUF layout -> same outputs" % (
                hp["general.architecture"], Hk, Hv, kind), err < 1e-10, "max|diff|=%.1e" % err)
            if kind == "linear_attention":
                Hk_, Hv_, dk, dv, K, C = dims(cfg)
                S = hc["ssm"]  # HF [Hv, dk, dv], grouped heads
                gS = np.swapaxes(gc["state"]["ssm"], -1, -2)  # llama.cpp [Hv, dv, dk] -> [Hv, dk, dv]
                if hp["general.architecture"] != "qwen3next" and Hk != Hv:
                    S = reorder_v_heads(S, 0, Hk, Hv // Hk, 1)
                conv_hf = hc["conv"][:, 1:]  # HF keeps K columns; the last K-1 are the state
                if hp["general.architecture"] != "qwen3next" and Hk != Hv:
                    conv_hf = np.concatenate([conv_hf[:2 * Hk * dk], reorder_v_heads(conv_hf[2 * Hk * dk:], 0, Hk, Hv // Hk, dv)])
                err = max(np.max(np.abs(S - gS)), np.max(np.abs(conv_hf - gc["state"]["conv"])))
                _check("  recurrent state: HF [Hv,dk,dv] == llama.cpp [Hv,dv,dk]^T, conv [C,K][:,1:] == [C,K-1]"
                       " (V heads retiled for qwen35)", err < 1e-10)
    # the converter's V reorder is a permutation, grouped (g*r+i) -> tiled (i*Hk+g)
    idx = reorder_v_heads(np.arange(6), 0, 2, 3, 1)
    _check("V-head reorder: tiled position i*Hk+g holds grouped head g*r+i", list(idx) == [0, 3, 1, 4, 2, 5])


def _test_l2norm_and_softplus():
    rng = np.random.default_rng(5)
    x = rng.standard_normal((5, 3, 128))
    _check("l2norm == rms_norm(eps/n) / sqrt(n) (llama.cpp; tfm.rms_norm with constant weight)",
           np.max(np.abs(l2norm(x, 1e-6) - l2norm_ggml(x, 1e-6))) < 1e-15)
    _check("softplus threshold (HF: x above 20) within 3e-9 of log1p(exp(x))",
           abs(softplus(np.array([21.0]))[0] - np.log1p(np.exp(21.0))) < 3e-9)


def _report_sizes():
    for name, cfg in MODELS.items():
        n_lin, per_layer, total, kv = state_bytes(cfg)
        print("INFO %-19s %2d linear layers, state %.2f MiB each (conv %s + ssm %s f32), %.2f MiB a sequence;"
              " KV %d KiB a position (f32)" % (name, n_lin, per_layer / 2 ** 20, state_shapes(cfg)["conv"],
                                               state_shapes(cfg)["ssm"], total / 2 ** 20, kv // 1024))


if __name__ == "__main__":
    _test_delta_rule()
    _test_conv()
    _test_l2norm_and_softplus()
    _test_prefill_then_decode()
    _test_gguf_round_trip()
    _report_sizes()
