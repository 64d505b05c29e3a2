"""llama.cpp's conversion of gpt-oss from its BF16 Hugging Face release
(conversion/gpt_oss.py at de3ff81, the unquantized path), for write_gguf.py:
GGUF architecture gpt-oss. Plain Python (no NumPy), as write_gguf.py is;
reference/gpt_oss.py (split_experts_hf) is the same split in NumPy.

What the converter changes:
  * the stacked experts, gate_up_proj [E, hidden, 2I] with gate and up
    interleaved in the last dim, become ffn_gate_exps and ffn_up_exps [E,
    I, hidden] (columns ::2 and 1::2, transposed), their biases
    ffn_{gate,up}_exps.bias [E, I]; down_proj [E, I, hidden] becomes
    ffn_down_exps [E, hidden, I];
  * self_attn.sinks becomes attn_sinks.weight, the router ffn_gate_inp
    (weight and bias), the MoE's input norm post_attention_norm.
"""

ARCHES = ("gpt-oss",)

LAYER_NAMES = {
    "input_layernorm.weight": "attn_norm.weight",
    "post_attention_layernorm.weight": "post_attention_norm.weight",
    "self_attn.sinks": "attn_sinks.weight",
    "mlp.router.weight": "ffn_gate_inp.weight",
    "mlp.router.bias": "ffn_gate_inp.bias",
}
for _hf, _gguf in (("q", "attn_q"), ("k", "attn_k"), ("v", "attn_v"),
                   ("o", "attn_output")):
    for _part in ("weight", "bias"):
        LAYER_NAMES[f"self_attn.{_hf}_proj.{_part}"] = f"{_gguf}.{_part}"


def transposed_columns(shape, values, first, step):
    """Of a stacked [E, rows, cols] tensor, each expert's columns first,
    first + step, ... as rows: [E, cols / step, rows]."""
    experts, rows, cols = shape
    picked = range(first, cols, step)
    out = []
    for e in range(experts):
        base = e * rows * cols
        for c in picked:
            out.extend(values[base + r * cols + c] for r in range(rows))
    return [experts, len(picked), rows], out


def every_other(shape, values, first):
    """Of a stacked [E, n] bias, each expert's elements first, first + 2,
    ...: [E, n / 2]."""
    experts, n = shape
    return [experts, n // 2], [values[e * n + i] for e in range(experts)
                               for i in range(first, n, 2)]


def convert(config, tensors, arch):
    """(metadata without the arch prefix, [(name, shape, values)]) of the
    GGUF file llama.cpp's converter writes."""
    out = []
    for name, (shape, values) in tensors.items():
        if name == "model.embed_tokens.weight":
            out.append(("token_embd.weight", shape, values))
            continue
        if name == "model.norm.weight":
            out.append(("output_norm.weight", shape, values))
            continue
        if name == "lm_head.weight":
            out.append(("output.weight", shape, values))
            continue
        layer, part = name[len("model.layers."):].split(".", 1)
        block = f"blk.{layer}."
        if part == "mlp.experts.gate_up_proj":
            for first, target in ((0, "ffn_gate_exps"), (1, "ffn_up_exps")):
                s, v = transposed_columns(shape, values, first, 2)
                out.append((block + target + ".weight", s, v))
        elif part == "mlp.experts.gate_up_proj_bias":
            for first, target in ((0, "ffn_gate_exps"), (1, "ffn_up_exps")):
                s, v = every_other(shape, values, first)
                out.append((block + target + ".bias", s, v))
        elif part == "mlp.experts.down_proj":
            s, v = transposed_columns(shape, values, 0, 1)
            out.append((block + "ffn_down_exps.weight", s, v))
        elif part == "mlp.experts.down_proj_bias":
            out.append((block + "ffn_down_exps.bias", shape, values))
        else:
            out.append((block + LAYER_NAMES[part], shape, values))
    scaling = config["rope_scaling"]
    head_dim = config["head_dim"]
    hp = {"context_length": config["max_position_embeddings"],
          "embedding_length": config["hidden_size"],
          "block_count": config["num_hidden_layers"],
          "feed_forward_length": config["intermediate_size"],
          "expert_feed_forward_length": config["intermediate_size"],
          "attention.head_count": config["num_attention_heads"],
          "attention.head_count_kv": config["num_key_value_heads"],
          "attention.key_length": head_dim,
          "attention.value_length": head_dim,
          "attention.layer_norm_rms_epsilon": config["rms_norm_eps"],
          "attention.sliding_window": config["sliding_window"],
          "rope.freq_base": float(config["rope_theta"]),
          "rope.scaling.type": "yarn",
          "rope.scaling.factor": float(scaling["factor"]),
          "rope.scaling.original_context_length":
              scaling["original_max_position_embeddings"],
          "expert_count": config["num_local_experts"],
          "expert_used_count": config["num_experts_per_tok"]}
    return hp, out
