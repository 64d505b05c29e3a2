"""llama.cpp's conversion of the Gated DeltaNet hybrids (convert_hf_to_gguf's
Qwen3NextModel, Qwen3_5TextModel and Qwen3_5MoeTextModel at de3ff81), for
write_gguf.py: GGUF architectures qwen3next, qwen35 and qwen35moe. Plain
Python (no NumPy), as write_gguf.py is. reference/qwen3_next.py
(hf_to_gguf_layer, gguf_hparams) is the same conversion in NumPy, checked
there against llama.cpp's graph.

What the converter changes:
  * every RMSNorm weight but linear_attn.norm gets its 1 (Qwen's (1 + w));
  * A_log becomes ssm_a = -exp(A_log), dt_bias ssm_dt.bias, conv1d.weight
    [C, 1, K] ssm_conv1d [C, K];
  * qwen3next: in_proj_qkvz ([q, k, v, z] of each key head) regrouped into
    attn_qkv [q of every head | k | v] and attn_gate (z); in_proj_ba kept
    as ssm_ba;
  * qwen35, qwen35moe with more value heads than key heads: the value
    heads reordered from grouped (g * r + i) to tiled (i * Hk + g) in
    every tensor that has them (_LinearAttentionVReorderBase).
"""
import math

ARCHES = ("qwen3next", "qwen35", "qwen35moe")

LAYER_NAMES = {
    "input_layernorm.weight": "attn_norm.weight",
    # llama.cpp's post_attention_norm is the norm before the MLP.
    "post_attention_layernorm.weight": "post_attention_norm.weight",
    "self_attn.q_proj.weight": "attn_q.weight",
    "self_attn.k_proj.weight": "attn_k.weight",
    "self_attn.v_proj.weight": "attn_v.weight",
    "self_attn.o_proj.weight": "attn_output.weight",
    "self_attn.q_norm.weight": "attn_q_norm.weight",
    "self_attn.k_norm.weight": "attn_k_norm.weight",
    "linear_attn.in_proj_qkv.weight": "attn_qkv.weight",
    "linear_attn.in_proj_z.weight": "attn_gate.weight",
    "linear_attn.in_proj_b.weight": "ssm_beta.weight",
    "linear_attn.in_proj_a.weight": "ssm_alpha.weight",
    "linear_attn.in_proj_ba.weight": "ssm_ba.weight",
    "linear_attn.norm.weight": "ssm_norm.weight",
    "linear_attn.out_proj.weight": "ssm_out.weight",
    "linear_attn.A_log": "ssm_a",
    "linear_attn.dt_bias": "ssm_dt.bias",
    "linear_attn.conv1d.weight": "ssm_conv1d.weight",
    "mlp.gate_proj.weight": "ffn_gate.weight",
    "mlp.up_proj.weight": "ffn_up.weight",
    "mlp.down_proj.weight": "ffn_down.weight",
    "mlp.gate.weight": "ffn_gate_inp.weight",
    "mlp.shared_expert.gate_proj.weight": "ffn_gate_shexp.weight",
    "mlp.shared_expert.up_proj.weight": "ffn_up_shexp.weight",
    "mlp.shared_expert.down_proj.weight": "ffn_down_shexp.weight",
    "mlp.shared_expert_gate.weight": "ffn_gate_inp_shexp.weight",
}
EXPERT_PARTS = {"gate_proj": "ffn_gate_exps", "up_proj": "ffn_up_exps",
                "down_proj": "ffn_down_exps"}


def text_config(config):
    """The text model's fields (Qwen3.5's image-text configs nest them in
    text_config) with RoPE's at the top, and its tensors' prefix."""
    if "text_config" not in config:
        return dict(config), "model."
    text = dict(config, **config["text_config"])
    text.update(text.get("rope_parameters") or {})
    return text, "model.language_model."


def tiled_rows(key_heads, per_key, width):
    """The grouped row each tiled row reads: value head i * Hk + g is
    grouped head g * r + i, each `width` rows."""
    return [(g * per_key + i) * width + j
            for i in range(per_key) for g in range(key_heads)
            for j in range(width)]


def take_rows(values, cols, rows):
    return [v for r in rows for v in values[r * cols:(r + 1) * cols]]


def retile(shape, values, first, key_heads, per_key, width, columns=False):
    """Rows (or columns) [first, ...) of a [rows, cols] tensor in tiled
    order, those before `first` kept."""
    rows, cols = shape[0], (shape[1] if len(shape) > 1 else 1)
    for d in shape[2:]:
        cols *= d
    order = tiled_rows(key_heads, per_key, width)
    if not columns:
        return take_rows(values, cols, list(range(first)) +
                         [first + r for r in order])
    picked = list(range(first)) + [first + c for c in order]
    return [values[r * cols + c] for r in range(rows) for c in picked]


def convert(config, tensors, arch):
    """(metadata without the arch prefix, [(name, shape, values)]) of the
    GGUF file llama.cpp's converter writes."""
    text, prefix = text_config(config)
    Hk, Hv = text["linear_num_key_heads"], text["linear_num_value_heads"]
    dk, dv = text["linear_key_head_dim"], text["linear_value_head_dim"]
    K = text.get("linear_conv_kernel_dim", 4)
    r = Hv // Hk
    layers = text["num_hidden_layers"]
    if "layer_types" in text:
        recurrent = [t == "linear_attention" for t in text["layer_types"]]
    else:
        every = text.get("full_attention_interval", 4)
        recurrent = [(l + 1) % every != 0 for l in range(layers)]
    retiled = arch != "qwen3next" and Hk != Hv
    out = []
    experts = {}
    for name, (shape, values) in tensors.items():
        if name.startswith("model.visual.") or name.startswith("mtp."):
            continue
        if name == prefix + "embed_tokens.weight":
            out.append(("token_embd.weight", shape, values))
            continue
        if name == prefix + "norm.weight":
            out.append(("output_norm.weight", shape, [v + 1 for v in values]))
            continue
        if name == "lm_head.weight":
            out.append(("output.weight", shape, values))
            continue
        layer, part = name[len(prefix + "layers."):].split(".", 1)
        block = f"blk.{layer}."
        if part in ("mlp.experts.gate_up_proj", "mlp.experts.down_proj"):
            # transformers 5's stacked experts: [E, 2I, D] (gate rows,
            # then up rows) and [E, D, I].
            count, rows, cols = shape
            if part.endswith("down_proj"):
                out.append((block + "ffn_down_exps.weight", shape, values))
                continue
            half = rows // 2 * cols
            for first, target in ((0, "ffn_gate_exps"), (half, "ffn_up_exps")):
                out.append((block + target + ".weight", [count, rows // 2, cols],
                            [v for e in range(count) for v in
                             values[e * 2 * half + first:e * 2 * half + first + half]]))
            continue
        if part.startswith("mlp.experts."):
            expert, hf = part[len("mlp.experts."):].split(".", 1)
            experts.setdefault((layer, hf.split(".")[0]), {})[int(expert)] = \
                (shape, values)
            continue
        if part == "linear_attn.in_proj_qkvz.weight":
            cols = shape[1]
            per_head = 2 * dk + 2 * r * dv
            def pick(first, count):
                return [g * per_head + first + i
                        for g in range(Hk) for i in range(count)]
            qkv = pick(0, dk) + pick(dk, dk) + pick(2 * dk, r * dv)
            out.append((block + "attn_qkv.weight", [len(qkv), cols],
                        take_rows(values, cols, qkv)))
            z = pick(2 * dk + r * dv, r * dv)
            out.append((block + "attn_gate.weight", [len(z), cols],
                        take_rows(values, cols, z)))
            continue
        if retiled:
            if part in ("linear_attn.in_proj_qkv.weight",
                        "linear_attn.conv1d.weight"):
                values = retile(shape, values, 2 * Hk * dk, Hk, r, dv)
            elif part == "linear_attn.in_proj_z.weight":
                values = retile(shape, values, 0, Hk, r, dv)
            elif part in ("linear_attn.in_proj_b.weight",
                          "linear_attn.in_proj_a.weight",
                          "linear_attn.A_log", "linear_attn.dt_bias"):
                values = retile(shape, values, 0, Hk, r, 1)
            elif part == "linear_attn.out_proj.weight":
                values = retile(shape, values, 0, Hk, r, dv, columns=True)
        if part == "linear_attn.A_log":
            values = [-math.exp(v) for v in values]
        elif part == "linear_attn.conv1d.weight":
            shape = [shape[0], shape[2]]
        elif part == "mlp.shared_expert_gate.weight":
            shape = shape[1:]
        elif part.endswith("norm.weight") and part != "linear_attn.norm.weight":
            values = [v + 1 for v in values]
        out.append((block + LAYER_NAMES[part], shape, values))
    for (layer, hf), by_expert in experts.items():
        shape = [len(by_expert)] + by_expert[0][0]
        values = [v for e in sorted(by_expert) for v in by_expert[e][1]]
        out.append((f"blk.{layer}.{EXPERT_PARTS[hf]}.weight", shape, values))
    head_dim = text["head_dim"]
    partial = text.get("partial_rotary_factor", 0.25)
    hp = {"context_length": text["max_position_embeddings"],
          "embedding_length": text["hidden_size"],
          "block_count": layers,
          "attention.head_count": text["num_attention_heads"],
          "attention.head_count_kv": text["num_key_value_heads"],
          "attention.key_length": head_dim,
          "attention.value_length": head_dim,
          "attention.layer_norm_rms_epsilon": text["rms_norm_eps"],
          "rope.freq_base": float(text.get("rope_theta", 10000.0)),
          "rope.dimension_count": int(head_dim * partial),
          "ssm.conv_kernel": K, "ssm.state_size": dk, "ssm.group_count": Hk,
          "ssm.time_step_rank": Hv, "ssm.inner_size": dv * Hv,
          "attention.recurrent_layers": recurrent,
          "full_attention_interval": text.get("full_attention_interval", 4)}
    if "intermediate_size" in text:
        hp["feed_forward_length"] = text["intermediate_size"]
    if arch != "qwen3next":
        # The config's multimodal sections, four of them ([11, 11, 10, 0]
        # where the config has none).
        sections = list(text.get("mrope_section") or [11, 11, 10])
        hp["rope.dimension_sections"] = (sections + [0] * 4)[:4]
    if text.get("num_experts"):
        hp["expert_count"] = text["num_experts"]
        hp["expert_used_count"] = text["num_experts_per_tok"]
        hp["expert_feed_forward_length"] = text["moe_intermediate_size"]
        hp["expert_shared_feed_forward_length"] = \
            text["shared_expert_intermediate_size"]
    return hp, out
