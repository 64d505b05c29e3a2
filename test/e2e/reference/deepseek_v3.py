#!/usr/bin/env python3
"""NumPy reference for one DeepSeek-V2/V3 decoder layer: MLA attention (naive
and absorbed/latent-cache forms) and the MoE routers.

What it was transcribed from (docs/plans/mla.md has the plan, the GGUF layout and where the sources disagree):
  * Hugging Face transformers, src/transformers/models/deepseek_v3/modeling_deepseek_v3.py
    (stored version at commit 00b676f8f0489b88652a31d70751cc540dd06305)
  * transformers deepseek_v2 port (commit 0233e509531ace915c8241b4c16c8032a583279c) for the
    softmax router; DeepSeek's own remote code semantics for norm_topk_prob / mscale.
  * llama.cpp (local llama.cpp (de3ff81)) src/models/deepseek2.cpp,
    src/llama-graph.cpp build_moe_ffn, conversion/deepseek.py, for the absorbed
    form, the cache row layout and the GGUF split of kv_b_proj.

Conventions
  * One sequence, no batch axis: x has shape [T, hidden].
  * Weights are dicts keyed by the Hugging Face parameter names with the
    "model.layers.N.self_attn." / "model.layers.N.mlp." prefixes dropped, in the
    torch nn.Linear layout [out_features, in_features]; y = x @ W.T.
  * Everything runs in float64.  HF runs the router in fp32 and RoPE cos/sin in
    fp32; nothing here models the bf16 roundings of the real checkpoints.
  * positions: int array [T], the absolute positions of the T rows of x.
    Causality is by position: a query at position p sees keys at positions <= p.

Run:  /usr/bin/python3 test/e2e/reference/deepseek_v3.py   (self-tests; prints PASS lines)
"""

import math

import numpy as np

from common import (config_value, rms_norm, silu, softmax, topk_indices,
                    yarn_mscale, yarn_parameters)

# ----------------------------------------------------------------------------
# small pieces
# ----------------------------------------------------------------------------


def mlp(x, w, prefix=""):
    """DeepseekV3MLP (L85-99): down(silu(gate(x)) * up(x))."""
    g = x @ w[prefix + "gate_proj.weight"].T
    u = x @ w[prefix + "up_proj.weight"].T
    return (silu(g) * u) @ w[prefix + "down_proj.weight"].T


# ----------------------------------------------------------------------------
# RoPE / YaRN
# ----------------------------------------------------------------------------


def rope_inv_freq(config):
    """Returns (inv_freq [d_rope/2], attention_factor).

    The rotary dim is qk_rope_head_dim (DeepseekV3Config sets head_dim =
    qk_rope_head_dim, and ROPE_INIT_FUNCTIONS use head_dim).
    'default': inv_freq_j = theta^(-2j/d), attention_factor = 1.
    'yarn': transformers modeling_rope_utils._compute_yarn_parameters (the
    mscale/mscale_all_dim/original_max_position_embeddings/truncate version).
    """
    d = config["qk_rope_head_dim"]
    base = float(config["rope_theta"])
    j = np.arange(0, d, 2, dtype=np.float64)
    pos_freqs = base ** (j / d)
    rs = config.get("rope_scaling")
    if not rs:
        return 1.0 / pos_freqs, 1.0
    rtype = rs.get("rope_type", rs.get("type"))
    if rtype != "yarn":
        raise NotImplementedError(rtype)
    return yarn_parameters(base, d, rs, config.get("max_position_embeddings"))


def rope_inv_freq_ggml(config):
    """The same table the way ggml computes it (ggml.c ggml_rope_yarn_corr_dims,
    ggml-cpu/ops.cpp rope_yarn/rope_yarn_ramp): theta_interp = theta/factor,
    ramp_mix = 1 - clamp((i0/2 - low)/max(0.001, high-low)), theta =
    interp*(1-ramp_mix) + extrap*ramp_mix.  Used only to cross-check."""
    d = config["qk_rope_head_dim"]
    base = float(config["rope_theta"])
    rs = config["rope_scaling"]
    factor = float(rs["factor"])
    orig = rs["original_max_position_embeddings"]
    bf, bs = rs.get("beta_fast") or 32, rs.get("beta_slow") or 1

    def cd(n_rot):
        return d * math.log(orig / (n_rot * 2 * math.pi)) / (2 * math.log(base))

    low = max(0, math.floor(cd(bf)))
    high = min(d - 1, math.ceil(cd(bs)))
    out = []
    for i0 in range(0, d, 2):
        extrap = base ** (-i0 / d)
        interp = extrap / factor
        y = (i0 // 2 - low) / max(0.001, high - low)
        ramp_mix = 1 - min(1, max(0, y))
        out.append(interp * (1 - ramp_mix) + extrap * ramp_mix)
    return np.array(out)


def softmax_scale(config, convention="deepseek"):
    """modeling_deepseek_v3.py L364-370:
        scale = qk_head_dim^-0.5
        if rope_scaling and rope_scaling.get('mscale_all_dim'):
            scale *= yarn_mscale(rope_scaling['factor'], mscale_all_dim)^2
    convention='hf_deepseek_v2_port' reproduces the transformers deepseek_v2
    port (stored commit 0233e509), which sets only qk_head_dim^-0.5 and so
    differs from DeepSeek's own V2 code and from llama.cpp for V2/V2-Lite."""
    qk_head_dim = config["qk_nope_head_dim"] + config["qk_rope_head_dim"]
    s = qk_head_dim ** -0.5
    rs = config.get("rope_scaling")
    if convention == "deepseek" and rs:
        m_all = rs.get("mscale_all_dim", 0)
        if m_all:
            m = yarn_mscale(rs["factor"], m_all)
            s = s * m * m
    return s


def rope_cos_sin(positions, inv_freq, attention_factor):
    """DeepseekV3RotaryEmbedding.forward (L71-82): freqs = pos*inv_freq,
    emb = cat(freqs, freqs); cos/sin multiplied by attention_scaling."""
    freqs = np.asarray(positions, dtype=np.float64)[:, None] * inv_freq[None, :]
    emb = np.concatenate([freqs, freqs], axis=-1)
    return np.cos(emb) * attention_factor, np.sin(emb) * attention_factor


def rotate_half(x):
    h = x.shape[-1] // 2
    return np.concatenate([-x[..., h:], x[..., :h]], axis=-1)


def apply_rope(x, cos, sin, interleave=True):
    """x: [T, ..., d]; cos/sin: [T, d].

    interleave=True  -> apply_rotary_pos_emb_interleave (L276-311): first
        de-interleave x (x.view(d/2,2).transpose -> [x0,x2,x4,...,x1,x3,...])
        then the half-rotation.  Output is in the DE-INTERLEAVED order:
          out[j]       = x[2j]   cos_j - x[2j+1] sin_j
          out[d/2 + j] = x[2j+1] cos_j + x[2j]   sin_j
    interleave=False -> apply_rotary_pos_emb (L211-235): plain NeoX half-rotation.
    """
    extra = x.ndim - 2
    c = cos.reshape(cos.shape[0], *([1] * extra), cos.shape[-1])
    s = sin.reshape(sin.shape[0], *([1] * extra), sin.shape[-1])
    if interleave:
        x = np.concatenate([x[..., 0::2], x[..., 1::2]], axis=-1)
    return x * c + rotate_half(x) * s


def apply_rope_gptj(x, positions, inv_freq, attention_factor):
    """ggml GGML_ROPE_TYPE_NORMAL (what llama.cpp uses for DEEPSEEK2,
    llama-model.cpp llama_model_rope_type): rotate consecutive pairs in place.
          out[2j]   = x[2j] cos_j - x[2j+1] sin_j
          out[2j+1] = x[2j] sin_j + x[2j+1] cos_j
    Equals apply_rope(..., interleave=True) followed by re-interleaving."""
    th = np.asarray(positions, dtype=np.float64)[:, None] * inv_freq[None, :]
    extra = x.ndim - 2
    c = (np.cos(th) * attention_factor).reshape(th.shape[0], *([1] * extra), th.shape[1])
    s = (np.sin(th) * attention_factor).reshape(th.shape[0], *([1] * extra), th.shape[1])
    x0, x1 = x[..., 0::2], x[..., 1::2]
    out = np.empty_like(x)
    out[..., 0::2] = x0 * c - x1 * s
    out[..., 1::2] = x0 * s + x1 * c
    return out


# ----------------------------------------------------------------------------
# MLA
# ----------------------------------------------------------------------------


def _dims(config):
    H = config["num_attention_heads"]
    dn, dr, dv = config["qk_nope_head_dim"], config["qk_rope_head_dim"], config["v_head_dim"]
    r = config["kv_lora_rank"]
    return H, dn, dr, dv, r


def _queries(x, w, config):
    """q = q_b(RMSNorm(q_a(x))) or q_proj(x); split per head into [nope | rope]
    (L385-390)."""
    H, dn, dr, dv, r = _dims(config)
    eps = config["rms_norm_eps"]
    if config.get("q_lora_rank") is None:
        q = x @ w["q_proj.weight"].T
    else:
        qa = x @ w["q_a_proj.weight"].T
        # DeepseekV3RMSNorm(config.q_lora_rank) is built WITHOUT eps (L343):
        # it uses the class default 1e-6, not config.rms_norm_eps.
        q = rms_norm(qa, w["q_a_layernorm.weight"], 1e-6) @ w["q_b_proj.weight"].T
    q = q.reshape(x.shape[0], H, dn + dr)
    return q[..., :dn], q[..., dn:]


def _latent(x, w, config):
    """compressed_kv = kv_a_proj_with_mqa(x) = [c (r) | k_pe (dr)] (L392-393);
    c is RMS-normed with kv_a_layernorm (L351/L395; again default eps 1e-6)."""
    H, dn, dr, dv, r = _dims(config)
    ckv = x @ w["kv_a_proj_with_mqa.weight"].T
    c, k_pe = ckv[:, :r], ckv[:, r:]
    c = rms_norm(c, w["kv_a_layernorm.weight"], 1e-6)
    return c, k_pe


def _kv_b_split(w, config):
    """kv_b_proj.weight [H*(dn+dv), r] -> W_UK [H, dn, r], W_UV [H, dv, r]
    (the .view(key_shape) split at L395-396: per head the first dn output rows
    are k_nope, the next dv are v)."""
    H, dn, dr, dv, r = _dims(config)
    kvb = w["kv_b_proj.weight"].reshape(H, dn + dv, r)
    return kvb[:, :dn, :], kvb[:, dn:, :]


def _causal_mask(q_pos, k_pos):
    return np.asarray(k_pos)[None, :] <= np.asarray(q_pos)[:, None]  # [Tq, Tk]


def mla_attention_naive(x, weights, config, positions):
    """HF DeepseekV3Attention.forward (L372-438) with eager attention, full
    prefill of x [T, hidden] at the given positions.  Returns [T, hidden]."""
    H, dn, dr, dv, r = _dims(config)
    T = x.shape[0]
    interleave = config.get("rope_interleave", True)
    inv_freq, af = rope_inv_freq(config)
    cos, sin = rope_cos_sin(positions, inv_freq, af)

    q_nope, q_pe = _queries(x, weights, config)               # [T,H,dn], [T,H,dr]
    c, k_pe = _latent(x, weights, config)                     # [T,r], [T,dr]
    kv = (c @ weights["kv_b_proj.weight"].T).reshape(T, H, dn + dv)
    k_nope, v = kv[..., :dn], kv[..., dn:]                    # [T,H,dn], [T,H,dv]

    q_pe = apply_rope(q_pe, cos, sin, interleave)             # [T,H,dr]
    k_pe = apply_rope(k_pe[:, None, :], cos, sin, interleave)  # [T,1,dr]
    k_pe = np.broadcast_to(k_pe, (T, H, dr))                  # k_rot.expand (L405)

    q = np.concatenate([q_nope, q_pe], axis=-1)               # [T,H,dn+dr]
    k = np.concatenate([k_nope, k_pe], axis=-1)
    scale = softmax_scale(config, config.get("scale_convention", "deepseek"))
    s = np.einsum("thd,shd->hts", q, k) * scale               # [H,Tq,Tk]
    s = np.where(_causal_mask(positions, positions)[None], s, -np.inf)
    p = softmax(s, axis=-1)
    o = np.einsum("hts,shv->thv", p, v).reshape(T, H * dv)
    return o @ weights["o_proj.weight"].T


def new_latent_cache(config):
    """Cache row = [RMSNorm(c_kv) (kv_lora_rank) | rope(k_pe) (qk_rope_head_dim)],
    576 wide for DeepSeek (llama.cpp deepseek2.cpp L572-581: Kcur =
    concat(kv_cmpr, k_pe); Vcur = kv_cmpr = the first 512 of the same row)."""
    H, dn, dr, dv, r = _dims(config)
    return {"rows": np.zeros((0, r + dr)), "pos": np.zeros((0,), dtype=np.int64)}


def mla_attention_absorbed(x, weights, config, positions, cache=None, rope_layout="hf"):
    """Weight-absorbed MLA over a latent cache (DeepSeek inference 'absorb',
    llama.cpp deepseek2.cpp L540-592).

      q_lat[t,h,:] = W_UK[h]^T q_nope[t,h]            (k_b absorbed into q)
      score[h,t,s] = (q_lat[t,h]·c[s] + q_pe[t,h]·k_pe[s]) * scale
      o_lat[t,h]   = sum_s p[h,t,s] c[s]
      o[t,h]       = W_UV[h] o_lat[t,h]                (v_b applied after attention)
      out          = o_proj(concat_h o[t,h])

    The new rows of x are appended to `cache` (dict from new_latent_cache) and
    attend to everything in the cache by position.  rope_layout 'hf' stores
    rope(k_pe) in HF's de-interleaved output order, 'gptj' in ggml NORMAL order
    (llama.cpp); the scores are identical, the cached bytes are a permutation.
    Returns (out [T, hidden], cache)."""
    H, dn, dr, dv, r = _dims(config)
    T = x.shape[0]
    if cache is None:
        cache = new_latent_cache(config)
    inv_freq, af = rope_inv_freq(config)
    interleave = config.get("rope_interleave", True)

    q_nope, q_pe = _queries(x, weights, config)
    c, k_pe = _latent(x, weights, config)
    if rope_layout == "hf":
        cos, sin = rope_cos_sin(positions, inv_freq, af)
        q_pe = apply_rope(q_pe, cos, sin, interleave)
        k_pe = apply_rope(k_pe, cos, sin, interleave)
    elif rope_layout == "gptj":
        if not interleave:
            raise ValueError("gptj layout only matches rope_interleave=True")
        q_pe = apply_rope_gptj(q_pe, positions, inv_freq, af)
        k_pe = apply_rope_gptj(k_pe, positions, inv_freq, af)
    else:
        raise ValueError(rope_layout)

    rows = np.concatenate([c, k_pe], axis=-1)                  # [T, r+dr]
    cache = {"rows": np.concatenate([cache["rows"], rows], axis=0),
             "pos": np.concatenate([cache["pos"], np.asarray(positions, dtype=np.int64)])}
    C, KPE = cache["rows"][:, :r], cache["rows"][:, r:]

    W_UK, W_UV = _kv_b_split(weights, config)                   # [H,dn,r], [H,dv,r]
    q_lat = np.einsum("thd,hdr->thr", q_nope, W_UK)             # [T,H,r]
    scale = softmax_scale(config, config.get("scale_convention", "deepseek"))
    s = (np.einsum("thr,sr->hts", q_lat, C) + np.einsum("thd,sd->hts", q_pe, KPE)) * scale
    s = np.where(_causal_mask(positions, cache["pos"])[None], s, -np.inf)
    p = softmax(s, axis=-1)
    o_lat = np.einsum("hts,sr->thr", p, C)                      # [T,H,r]
    o = np.einsum("thr,hvr->thv", o_lat, W_UV).reshape(T, H * dv)
    return o @ weights["o_proj.weight"].T, cache


# ----------------------------------------------------------------------------
# GGUF / llama.cpp layout helpers
# ----------------------------------------------------------------------------


def gguf_k_b_v_b(kv_b_proj_weight, config):
    """conversion/deepseek.py L433-450, in torch (row-major) order:
        kv_b = W.view(n_head_kv, dn+dv, r); k_b, v_b = split(kv_b, [dn, dv], dim=1)
        k_b = k_b.transpose(1, 2)          -> torch [H, r, dn]  = GGUF ne {dn, r, H}
        v_b                                 -> torch [H, dv, r]  = GGUF ne {r, dv, H}
    (n_head_kv is the ORIGINAL num_key_value_heads = num_attention_heads: the
    tensors are written in prepare_tensors() before set_gguf_parameters()
    overwrites it with 1, base.py L1191-1193.)"""
    H, dn, dr, dv, r = _dims(config)
    kvb = kv_b_proj_weight.reshape(H, dn + dv, r)
    return np.ascontiguousarray(kvb[:, :dn, :].transpose(0, 2, 1)), np.ascontiguousarray(kvb[:, dn:, :])


def ggml_mul_mat(a, b):
    """ggml_mul_mat(a, b) with a, b given in torch order (ne reversed):
    a torch [B, M, K] (ne {K, M, B}), b torch [B, N, K] (ne {K, N, B});
    result torch [B, N, M]: res[b,n,m] = sum_k a[b,m,k] * b[b,n,k]."""
    return np.einsum("bmk,bnk->bnm", a, b)


# ----------------------------------------------------------------------------
# routers and MoE
# ----------------------------------------------------------------------------


def router_v3(h, gate_weight, e_score_correction_bias, config, masked_fill=0.0):
    """DeepseekV3TopkRouter (L102-146), 'noaux_tc':
      logits = h @ W_gate^T (fp32); s = sigmoid(logits)                 [T,E]
      sc = s + bias                                   (selection only)
      group_score[g] = sum of the top-2 sc in group g  (E/n_group experts per group)
      keep the topk_group best groups; other experts' sc := masked_fill
      idx = top_k(sc);  w = s[idx]   (UNbiased)
      if norm_topk_prob: w /= (sum(w) + 1e-20)
      w *= routed_scaling_factor
    HF fills with 0.0 (L132); DeepSeek's inference code and llama.cpp
    (llama-graph.cpp L2101) use -inf.  They differ only when fewer than top_k
    experts of the kept groups have sc > 0."""
    E = config["n_routed_experts"]
    G, TG, K = config["n_group"], config["topk_group"], config["num_experts_per_tok"]
    logits = h @ gate_weight.T
    s = 1.0 / (1.0 + np.exp(-logits))
    sc = s + e_score_correction_bias[None, :]
    grp = sc.reshape(-1, G, E // G)
    top2 = np.sort(grp, axis=-1)[..., -2:].sum(-1)              # [T,G]
    gidx = topk_indices(top2, TG)
    gmask = np.zeros_like(top2, dtype=bool)
    np.put_along_axis(gmask, gidx, True, axis=-1)
    emask = np.repeat(gmask, E // G, axis=-1)
    sc = np.where(emask, sc, masked_fill)
    idx = topk_indices(sc, K)
    w = np.take_along_axis(s, idx, axis=-1)
    if config.get("norm_topk_prob", True):
        w = w / (w.sum(-1, keepdims=True) + 1e-20)
    return idx, w * config["routed_scaling_factor"]


def router_v2(h, gate_weight, config, convention="deepseek"):
    """DeepSeek-V2 / V2-Lite MoEGate (scoring_func 'softmax'):
      s = softmax(h @ W_gate^T)                                  [T,E]
      topk_method 'greedy':               idx = top_k(s)
      topk_method 'group_limited_greedy': group_score = MAX of s in the group,
                                          keep topk_group groups, fill others 0.0,
                                          idx = top_k
      w = s[idx]
      convention 'deepseek' (DeepSeek remote code):
          if top_k > 1 and norm_topk_prob: w /= sum(w) + 1e-20
          else:                            w *= routed_scaling_factor
      convention 'hf_port' (transformers deepseek_v2, commit 0233e509):
          w *= routed_scaling_factor  (norm_topk_prob ignored)
    Real V2 / V2-Lite checkpoints have norm_topk_prob=false, so both agree.
    ('gready' is the spelling in DeepSeek's original V2 file; treated as greedy.)"""
    E, K = config["n_routed_experts"], config["num_experts_per_tok"]
    s = softmax(h @ gate_weight.T, axis=-1)
    method = config.get("topk_method", "greedy")
    if method in ("greedy", "gready"):
        idx = topk_indices(s, K)
    elif method == "group_limited_greedy":
        G, TG = config["n_group"], config["topk_group"]
        gmax = s.reshape(-1, G, E // G).max(-1)
        gidx = topk_indices(gmax, TG)
        gmask = np.zeros_like(gmax, dtype=bool)
        np.put_along_axis(gmask, gidx, True, axis=-1)
        idx = topk_indices(np.where(np.repeat(gmask, E // G, axis=-1), s, 0.0), K)
    else:
        raise NotImplementedError(method)
    w = np.take_along_axis(s, idx, axis=-1)
    rsf = config_value(config, "routed_scaling_factor", 1.0)
    if convention == "deepseek":
        if K > 1 and config.get("norm_topk_prob", False):
            w = w / (w.sum(-1, keepdims=True) + 1e-20)
        else:
            w = w * rsf
    elif convention == "hf_port":
        w = w * rsf
    else:
        raise ValueError(convention)
    return idx, w


def moe(h, w, config):
    """DeepseekV3MoE.forward (L149-201): sum_k w_k * expert_{idx_k}(h) + shared(h).
    w keys: 'gate.weight' [E,hidden], 'gate.e_score_correction_bias' [E] (V3),
    'experts.{e}.{gate,up,down}_proj.weight', 'shared_experts.*'."""
    if config.get("model_type", "deepseek_v3") == "deepseek_v2":
        idx, wt = router_v2(h, w["gate.weight"], config)
    else:
        idx, wt = router_v3(h, w["gate.weight"], w["gate.e_score_correction_bias"], config)
    out = np.zeros_like(h)
    for t in range(h.shape[0]):
        for k in range(idx.shape[1]):
            out[t] += wt[t, k] * mlp(h[t:t + 1], w, "experts.%d." % idx[t, k])[0]
    if config_value(config, "n_shared_experts", 0):
        out = out + mlp(h, w, "shared_experts.")
    return out


def decoder_layer(x, weights, config, positions, layer_idx, cache=None, attn="absorbed"):
    """DeepseekV3DecoderLayer (L441-486):
        h   = x + Attn(RMSNorm_in(x))
        out = h + FFN(RMSNorm_post(h)),  FFN = MoE if layer_idx >= first_k_dense_replace else MLP
    weights: {'input_layernorm.weight', 'post_attention_layernorm.weight',
              'self_attn': {...}, 'mlp': {...}}.  Returns (out, cache)."""
    eps = config["rms_norm_eps"]
    a_in = rms_norm(x, weights["input_layernorm.weight"], eps)
    if attn == "naive":
        a = mla_attention_naive(a_in, weights["self_attn"], config, positions)
    else:
        a, cache = mla_attention_absorbed(a_in, weights["self_attn"], config, positions, cache)
    h = x + a
    f_in = rms_norm(h, weights["post_attention_layernorm.weight"], eps)
    if layer_idx >= config_value(config, "first_k_dense_replace", 0):
        f = moe(f_in, weights["mlp"], config)
    else:
        f = mlp(f_in, weights["mlp"])
    return h + f, cache


def naive_decoder_layer(x, layer, config, positions, l):
    """DeepseekV3DecoderLayer with MLA as transformers computes it."""
    return decoder_layer(x, layer, config, positions, l, attn="naive")[0]


def forward(tokens, tensors, layers, config, layer_fn=None):
    """DeepseekV3ForCausalLM over `tokens` (no cache): every position's
    logits. `layers` holds each layer's weights as decoder_layer takes them
    (nested_layers); `layer_fn` is GLM's decoder_layer for Glm4MoeForCausalLM."""
    layer_fn = layer_fn or naive_decoder_layer
    x = tensors["model.embed_tokens.weight"][np.asarray(tokens)]
    positions = np.arange(len(tokens))
    for l, layer in enumerate(layers):
        x = layer_fn(x, layer, config, positions, l)
    x = rms_norm(x, tensors["model.norm.weight"], config["rms_norm_eps"])
    return x @ tensors["lm_head.weight"].T


def model_weights(rng, config, random_layer=None):
    """Every tensor of a DeepseekV3ForCausalLM checkpoint (or, with GLM's
    `random_layer`, a Glm4MoeForCausalLM's), by name, and each layer's as
    decoder_layer takes them."""
    random_layer = random_layer or _rand_layer
    D, V = config["hidden_size"], config["vocab_size"]
    tensors = {"model.embed_tokens.weight": rng.standard_normal((V, D)),
               "model.norm.weight": 1.0 + 0.1 * rng.standard_normal(D),
               "lm_head.weight": rng.standard_normal((V, D)) * 0.3}
    layers = []
    for l in range(config["num_hidden_layers"]):
        layer = random_layer(rng, config,
                             moe_layer=l >= config["first_k_dense_replace"])
        if config.get("topk_method") == "greedy":
            layer["mlp"].pop("gate.e_score_correction_bias", None)
        layers.append(layer)
        prefix = "model.layers.%d." % l
        for name in ("input_layernorm.weight", "post_attention_layernorm.weight"):
            tensors[prefix + name] = layer[name]
        for group in ("self_attn", "mlp"):
            for name, value in layer[group].items():
                tensors[prefix + group + "." + name] = value
    # DeepSeek-V3's multi-token prediction layers follow the last, some of
    # their tensors here: in the checkpoint, not in the forward pass.
    for l in range(config["num_hidden_layers"],
                   config["num_hidden_layers"] +
                   config_value(config, "num_nextn_predict_layers", 0)):
        prefix = "model.layers.%d." % l
        tensors[prefix + "enorm.weight"] = np.ones(D)
        tensors[prefix + "hnorm.weight"] = np.ones(D)
        tensors[prefix + "eh_proj.weight"] = rng.standard_normal((D, 2 * D))
    return tensors, layers


def nested_layers(tensors, layers):
    """`layers`' structure (model_weights') filled from `tensors` by name:
    the values a checkpoint stores (rounded as tfmc reads them)."""
    return [{k: ({n: tensors["model.layers.%d.%s.%s" % (l, k, n)] for n in v}
                 if isinstance(v, dict) else tensors["model.layers.%d.%s" % (l, k)])
             for k, v in layer.items()}
            for l, layer in enumerate(layers)]


# ----------------------------------------------------------------------------
# self-tests
# ----------------------------------------------------------------------------


def _rand_attn_weights(rng, config, scale=0.3):
    H, dn, dr, dv, r = _dims(config)
    D = config["hidden_size"]
    w = {}
    if config.get("q_lora_rank") is None:
        w["q_proj.weight"] = rng.standard_normal((H * (dn + dr), D)) * scale
    else:
        ql = config["q_lora_rank"]
        w["q_a_proj.weight"] = rng.standard_normal((ql, D)) * scale
        w["q_a_layernorm.weight"] = 1.0 + 0.1 * rng.standard_normal(ql)
        w["q_b_proj.weight"] = rng.standard_normal((H * (dn + dr), ql)) * scale
    w["kv_a_proj_with_mqa.weight"] = rng.standard_normal((r + dr, D)) * scale
    w["kv_a_layernorm.weight"] = 1.0 + 0.1 * rng.standard_normal(r)
    w["kv_b_proj.weight"] = rng.standard_normal((H * (dn + dv), r)) * scale
    w["o_proj.weight"] = rng.standard_normal((D, H * dv)) * scale
    return w


def _rand_mlp(rng, D, I, prefix, w, scale=0.2):
    w[prefix + "gate_proj.weight"] = rng.standard_normal((I, D)) * scale
    w[prefix + "up_proj.weight"] = rng.standard_normal((I, D)) * scale
    w[prefix + "down_proj.weight"] = rng.standard_normal((D, I)) * scale


def _rand_layer(rng, config, moe_layer=True):
    D = config["hidden_size"]
    lw = {"input_layernorm.weight": 1.0 + 0.1 * rng.standard_normal(D),
          "post_attention_layernorm.weight": 1.0 + 0.1 * rng.standard_normal(D),
          "self_attn": _rand_attn_weights(rng, config), "mlp": {}}
    m = lw["mlp"]
    if moe_layer:
        E = config["n_routed_experts"]
        m["gate.weight"] = rng.standard_normal((E, D)) * 0.5
        m["gate.e_score_correction_bias"] = 0.05 * rng.standard_normal(E)
        for e in range(E):
            _rand_mlp(rng, D, config["moe_intermediate_size"], "experts.%d." % e, m)
        _rand_mlp(rng, D, config["moe_intermediate_size"] * config["n_shared_experts"], "shared_experts.", m)
    else:
        _rand_mlp(rng, D, config["intermediate_size"], "", m)
    return lw


CFG_V3_SMALL = dict(
    model_type="deepseek_v3", hidden_size=48, num_attention_heads=4, q_lora_rank=24,
    kv_lora_rank=16, qk_nope_head_dim=8, qk_rope_head_dim=8, v_head_dim=12,
    rope_theta=10000.0, rms_norm_eps=1e-6, max_position_embeddings=256, rope_interleave=True,
    rope_scaling=dict(type="yarn", factor=8.0, original_max_position_embeddings=32,
                      beta_fast=32, beta_slow=1, mscale=1.0, mscale_all_dim=1.0),
    n_routed_experts=16, num_experts_per_tok=4, n_group=4, topk_group=2, norm_topk_prob=True,
    routed_scaling_factor=2.5, n_shared_experts=1, moe_intermediate_size=10,
    intermediate_size=40, first_k_dense_replace=1,
)

CFG_V2LITE_SMALL = dict(
    model_type="deepseek_v2", hidden_size=40, num_attention_heads=3, q_lora_rank=None,
    kv_lora_rank=12, qk_nope_head_dim=10, qk_rope_head_dim=6, v_head_dim=10,
    rope_theta=10000.0, rms_norm_eps=1e-6, max_position_embeddings=256, rope_interleave=True,
    rope_scaling=dict(type="yarn", factor=40.0, original_max_position_embeddings=32,
                      beta_fast=32, beta_slow=1, mscale=0.707, mscale_all_dim=0.707),
    n_routed_experts=8, num_experts_per_tok=3, n_group=1, topk_group=1, topk_method="greedy",
    norm_topk_prob=False, routed_scaling_factor=1.0, n_shared_experts=2,
    moe_intermediate_size=8, intermediate_size=32, first_k_dense_replace=1,
)


def _check(name, ok, detail=""):
    print(("PASS " if ok else "FAIL ") + name + (("  " + detail) if detail else ""))
    if not ok:
        raise SystemExit(1)


def _test_rope_forms():
    cfg = CFG_V3_SMALL
    rng = np.random.default_rng(1)
    inv, af = rope_inv_freq(cfg)
    _check("yarn inv_freq HF == ggml formula",
           np.max(np.abs(inv - rope_inv_freq_ggml(cfg))) < 1e-15)
    pos = np.array([0, 3, 17, 100])
    x = rng.standard_normal((4, 2, cfg["qk_rope_head_dim"]))
    y = rng.standard_normal((4, 2, cfg["qk_rope_head_dim"]))
    cos, sin = rope_cos_sin(pos, inv, af)
    hf_x, hf_y = apply_rope(x, cos, sin, True), apply_rope(y, cos, sin, True)
    gj_x, gj_y = apply_rope_gptj(x, pos, inv, af), apply_rope_gptj(y, pos, inv, af)
    d = cfg["qk_rope_head_dim"]
    deint = np.concatenate([np.arange(0, d, 2), np.arange(1, d, 2)])
    _check("HF interleave rope == deinterleave(GPT-J/ggml NORMAL rope)",
           np.max(np.abs(hf_x - gj_x[..., deint])) < 1e-14)
    _check("rope dot products identical in both layouts",
           np.max(np.abs((hf_x * hf_y).sum(-1) - (gj_x * gj_y).sum(-1))) < 1e-13)
    neox = apply_rope(x, cos, sin, False)
    _check("rope_interleave=False (NeoX) is a different rotation",
           np.max(np.abs(neox - hf_x)) > 1e-3)
    # relative-position property of the rope part: depends on p_q - p_k only
    q = rng.standard_normal((1, d)); k = rng.standard_normal((1, d))
    def dot(pq, pk):
        cq, sq = rope_cos_sin([pq], inv, 1.0); ck, sk = rope_cos_sin([pk], inv, 1.0)
        return float((apply_rope(q, cq, sq) * apply_rope(k, ck, sk)).sum())
    _check("rope score depends on position difference only", abs(dot(7, 3) - dot(54, 50)) < 1e-12)


def _test_naive_vs_absorbed():
    for name, cfg in (("V3-like (q LoRA, yarn mscale=1)", CFG_V3_SMALL),
                      ("V2-Lite-like (no q LoRA, mscale=0.707)", CFG_V2LITE_SMALL)):
        rng = np.random.default_rng(2)
        w = _rand_attn_weights(rng, cfg)
        T = 11
        x = rng.standard_normal((T, cfg["hidden_size"]))
        pos = np.arange(5, 5 + T)
        a = mla_attention_naive(x, w, cfg, pos)
        b, cache = mla_attention_absorbed(x, w, cfg, pos)
        b2, cache2 = mla_attention_absorbed(x, w, cfg, pos, rope_layout="gptj")
        err = np.max(np.abs(a - b))
        _check("naive == absorbed, " + name, err < 1e-5, "max|diff|=%.2e" % err)
        _check("absorbed hf-layout == gptj-layout cache, " + name,
               np.max(np.abs(b - b2)) < 1e-12)
        _check("cache row width == kv_lora_rank + qk_rope_head_dim, " + name,
               cache["rows"].shape == (T, cfg["kv_lora_rank"] + cfg["qk_rope_head_dim"]))


def _test_prefill_then_decode():
    cfg = CFG_V3_SMALL
    rng = np.random.default_rng(3)
    w = _rand_attn_weights(rng, cfg)
    T, T0 = 12, 7
    x = rng.standard_normal((T, cfg["hidden_size"]))
    pos = np.arange(T)
    full = mla_attention_naive(x, w, cfg, pos)
    out0, cache = mla_attention_absorbed(x[:T0], w, cfg, pos[:T0])
    outs = [out0]
    for t in range(T0, T):
        o, cache = mla_attention_absorbed(x[t:t + 1], w, cfg, pos[t:t + 1], cache)
        outs.append(o)
    inc = np.concatenate(outs, 0)
    err = np.max(np.abs(inc - full))
    _check("attention: prefill(7) + 5 single-token decodes == full prefill", err < 1e-10, "max|diff|=%.2e" % err)

    # whole decoder layer, MoE layer and dense layer, chunked decode
    for layer_idx in (0, 1):
        lw = _rand_layer(np.random.default_rng(4 + layer_idx), cfg, moe_layer=(layer_idx >= cfg["first_k_dense_replace"]))
        full_l, _ = decoder_layer(x, lw, cfg, pos, layer_idx, attn="naive")
        full_a, _ = decoder_layer(x, lw, cfg, pos, layer_idx)
        cache = None
        outs = []
        for lo, hi in ((0, 5), (5, 6), (6, 9), (9, 10), (10, 12)):
            o, cache = decoder_layer(x[lo:hi], lw, cfg, pos[lo:hi], layer_idx, cache)
            outs.append(o)
        inc = np.concatenate(outs, 0)
        kind = "MoE" if layer_idx >= cfg["first_k_dense_replace"] else "dense"
        _check("decoder layer (%s): naive == absorbed" % kind, np.max(np.abs(full_l - full_a)) < 1e-10)
        _check("decoder layer (%s): chunked prefill/decode == full" % kind,
               np.max(np.abs(inc - full_l)) < 1e-10, "max|diff|=%.2e" % np.max(np.abs(inc - full_l)))


def _test_gguf_split():
    cfg = CFG_V3_SMALL
    H, dn, dr, dv, r = _dims(cfg)
    rng = np.random.default_rng(5)
    w = _rand_attn_weights(rng, cfg)
    k_b, v_b = gguf_k_b_v_b(w["kv_b_proj.weight"], cfg)
    _check("attn_k_b torch shape [H, r, dn] (GGUF ne {dn, r, H})", k_b.shape == (H, r, dn))
    _check("attn_v_b torch shape [H, dv, r] (GGUF ne {r, dv, H})", v_b.shape == (H, dv, r))
    T = 5
    q_nope = rng.standard_normal((T, H, dn))
    W_UK, W_UV = _kv_b_split(w, cfg)
    ref = np.einsum("thd,hdr->thr", q_nope, W_UK)
    # deepseek2.cpp L556-565: q_nope permuted to {dn, T, H} then mul_mat(wk_b, q_nope)
    got = ggml_mul_mat(k_b, q_nope.transpose(1, 0, 2)).transpose(1, 0, 2)   # [T,H,r]
    _check("ggml_mul_mat(attn_k_b, q_nope) == W_UK^T q_nope", np.max(np.abs(got - ref)) < 1e-12)
    lat = rng.standard_normal((T, H, r))
    ref_v = np.einsum("thr,hvr->thv", lat, W_UV)
    got_v = ggml_mul_mat(v_b, lat.transpose(1, 0, 2)).transpose(1, 0, 2)
    _check("ggml_mul_mat(attn_v_b, latent) == W_UV latent", np.max(np.abs(got_v - ref_v)) < 1e-12)


def _logit(p):
    p = np.asarray(p, dtype=np.float64)
    return np.log(p / (1 - p))


def _test_router():
    cfg = dict(n_routed_experts=8, n_group=4, topk_group=2, num_experts_per_tok=2,
               norm_topk_prob=True, routed_scaling_factor=2.5)
    Wg = np.eye(8)                                   # h == router logits
    # sigmoid scores per group (2 experts/group):
    #   g0 = [0.95, 0.05] top2-sum 1.00 (holds the single best expert)
    #   g1 = [0.60, 0.60] 1.20   g2 = [0.58, 0.52] 1.10   g3 = [0.10, 0.10] 0.20
    s = np.array([0.95, 0.05, 0.60, 0.60, 0.58, 0.52, 0.10, 0.10])
    h = _logit(s)[None, :]
    idx, w = router_v3(h, Wg, np.zeros(8), cfg)
    _check("V3 group-limited: groups {1,2} win on top-2 sum, expert 0 (0.95) excluded",
           sorted(idx[0].tolist()) == [2, 3], str(idx[0].tolist()))
    _check("V3 weights = s/sum(s) * 2.5", np.allclose(np.sort(w[0]), [1.25, 1.25]))

    # the correction bias decides selection only; weights come from unbiased s
    bias = np.array([0, 0, 0, 0, 0, 0, 0.9, 0.9])     # g3 top2 -> 2.0, wins
    idx, w = router_v3(h, Wg, bias, cfg)
    _check("V3 bias moves group 3 in and picks experts 6,7", sorted(idx[0].tolist()) == [6, 7],
           str(idx[0].tolist()))
    _check("V3 weights ignore the bias (0.1,0.1 -> 1.25 each)", np.allclose(w[0], [1.25, 1.25]))

    # without group limiting the best two experts would be 0 and 2/3
    cfg1 = dict(cfg, n_group=1, topk_group=1)
    idx1, _ = router_v3(h, Wg, np.zeros(8), cfg1)
    _check("V3 with n_group=1 is plain top-k (GLM-4.5 case)", sorted(idx1[0].tolist())[0] == 0)

    # HF masked_fill 0.0 vs -inf: differs only if < top_k kept experts have sc > 0
    # sc = [0.95,-0.55 | -0.1,-0.1 | -0.12,-0.18 | -0.4,-0.4]: groups 0,1 kept, only
    # expert 0 of them has sc > 0, so the 0.0 fill of experts 4..7 outranks -0.1.
    neg = np.array([0, -0.6, -0.7, -0.7, -0.7, -0.7, -0.5, -0.5])
    i_hf, _ = router_v3(h, Wg, neg, cfg)
    i_inf, _ = router_v3(h, Wg, neg, cfg, masked_fill=-np.inf)
    kept = set()
    gs = np.sort((s + neg).reshape(4, 2), -1)[:, -2:].sum(-1)
    for g in np.argsort(-gs)[:2]:
        kept |= {2 * g, 2 * g + 1}
    _check("masked_fill=-inf keeps the choice inside the kept groups",
           set(i_inf[0].tolist()) <= kept, str(i_inf[0].tolist()))
    _check("HF masked_fill=0.0 can pick an expert from a dropped group (documented quirk)",
           not set(i_hf[0].tolist()) <= kept, str(i_hf[0].tolist()))

    # V2 softmax routers
    cfg2 = dict(n_routed_experts=8, num_experts_per_tok=2, topk_method="greedy",
                norm_topk_prob=False, routed_scaling_factor=16.0)
    logits = np.array([[2.0, 0.1, 1.5, 1.4, 1.3, 0.0, -1.0, 0.2]])
    sm = softmax(logits)
    idx, w = router_v2(logits, np.eye(8), cfg2)
    _check("V2 greedy: top-2 of softmax", idx[0].tolist() == [0, 2])
    _check("V2 weights = softmax * routed_scaling_factor (norm_topk_prob=false)",
           np.allclose(w[0], sm[0, [0, 2]] * 16.0))
    cfg3 = dict(cfg2, topk_method="group_limited_greedy", n_group=4, topk_group=2)
    # groups (max): g0=max(2.0,0.1) g1=max(1.5,1.4) g2=max(1.3,0.0) g3=0.2 -> keep g0,g1
    idx, _ = router_v2(logits, np.eye(8), cfg3)
    _check("V2 group_limited_greedy uses per-group MAX", sorted(idx[0].tolist()) == [0, 2])
    logits4 = np.array([[2.0, -5.0, 1.2, 1.2, 1.3, -5.0, -5.0, -5.0]])
    # MAX rule: g0 (2.0) and g2 (1.3) kept -> experts {0, 4}.  The V3 top-2-SUM rule
    # (what llama.cpp applies whenever expert_group_count > 1) keeps g0 and g1.
    idx_max, _ = router_v2(logits4, np.eye(8), cfg3)
    s4 = softmax(logits4)
    sum_rule_groups = set(np.argsort(-np.sort(s4.reshape(4, 2), -1)[:, -2:].sum(-1))[:2].tolist())
    _check("V2 max rule picks {0,4}; top-2-sum rule would keep groups {0,1}",
           sorted(idx_max[0].tolist()) == [0, 4] and sum_rule_groups == {0, 1},
           str(sorted(idx_max[0].tolist())))
    cfg4 = dict(cfg2, norm_topk_prob=True)
    _, wn = router_v2(logits, np.eye(8), cfg4)
    _, wp = router_v2(logits, np.eye(8), cfg4, convention="hf_port")
    _check("V2 norm_topk_prob=true: DeepSeek code normalizes (no scaling), HF port only scales",
           np.isclose(wn[0].sum(), 1.0) and np.isclose(wp[0].sum(), sm[0, [0, 2]].sum() * 16.0))


def _test_scales():
    c = CFG_V3_SMALL
    s = softmax_scale(c)
    m = 0.1 * 1.0 * math.log(8.0) + 1.0
    _check("softmax scale = (dn+dr)^-0.5 * mscale(factor, mscale_all_dim)^2", np.isclose(s, 16 ** -0.5 * m * m))
    _, af = rope_inv_freq(c)
    _check("yarn attention_factor = 1 when mscale == mscale_all_dim", af == 1.0)
    real = dict(qk_nope_head_dim=128, qk_rope_head_dim=64,
                rope_scaling=dict(type="yarn", factor=40, mscale=1.0, mscale_all_dim=1.0))
    print("     DeepSeek-V3 numbers: mscale=%.6f  scale=%.8f  (1/sqrt(192)=%.8f)"
          % (yarn_mscale(40, 1.0), softmax_scale(real), 192 ** -0.5))
    lite = dict(real, rope_scaling=dict(type="yarn", factor=40, mscale=0.707, mscale_all_dim=0.707))
    print("     DeepSeek-V2-Lite:    mscale=%.6f  scale=%.8f  HF-v2-port scale=%.8f"
          % (yarn_mscale(40, 0.707), softmax_scale(lite), softmax_scale(lite, "hf_deepseek_v2_port")))


if __name__ == "__main__":
    _test_rope_forms()
    _test_scales()
    _test_naive_vs_absorbed()
    _test_prefill_then_decode()
    _test_gguf_split()
    _test_router()
    print("all self-tests passed")
