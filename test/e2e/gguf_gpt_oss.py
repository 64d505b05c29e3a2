"""llama.cpp's conversion of gpt-oss from its Hugging Face releases
(conversion/gpt_oss.py at de3ff81: BF16, and MXFP4's repack_mxfp4), for
write_gguf.py: GGUF architecture gpt-oss. Plain Python (no NumPy), as
write_gguf.py is; reference/gpt_oss.py (split_experts_hf, repack_mxfp4) is
the same in NumPy.

What the converter changes:
  * the stacked experts, gate_up_proj [E, hidden, 2I] with gate and up
    interleaved in the last dim, become ffn_gate_exps and ffn_up_exps [E,
    I, hidden] (columns ::2 and 1::2, transposed), their biases
    ffn_{gate,up}_exps.bias [E, I]; down_proj [E, I, hidden] becomes
    ffn_down_exps [E, hidden, I];
  * the MXFP4 release's gate_up_proj_blocks/_scales [E, 2I, hidden / 32,
    16] and [E, 2I, hidden / 32] (rows are outputs, gate and up
    interleaved by row) become ffn_gate_exps and ffn_up_exps in GGML's
    MXFP4 (rows ::2 and 1::2, each block its E8M0 byte then its nibbles
    reordered: element j in byte j's low nibble, j + 16 in its high one);
    down_proj_blocks/_scales become ffn_down_exps;
  * self_attn.sinks becomes attn_sinks.weight, the router ffn_gate_inp
    (weight and bias), the MoE's input norm post_attention_norm.
"""

ARCHES = ("gpt-oss",)


class Encoded:
    """A tensor's bytes already in a GGML type (write_gguf.py copies them)."""

    def __init__(self, ggml_type, data):
        self.ggml_type, self.data = ggml_type, data


def repacked_mxfp4(shape, blocks, scales, first, step):
    """Rows first, first + step, ... of each expert of HF's MXFP4 pair
    (blocks [E, rows, G, 16], scales [E, rows, G]) as GGML MXFP4 rows:
    ([E, picked rows, G·32], Encoded)."""
    experts, rows, groups, _ = shape
    out = bytearray()
    for e in range(experts):
        for r in range(first, rows, step):
            for g in range((e * rows + r) * groups, (e * rows + r + 1) * groups):
                codes = []
                for byte in blocks[16 * g:16 * g + 16]:
                    codes += [byte & 0x0F, byte >> 4]
                out.append(scales[g])
                out += bytes(codes[j] | codes[j + 16] << 4 for j in range(16))
    return ([experts, len(range(first, rows, step)), 32 * groups],
            Encoded("MXFP4", bytes(out)))

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
        if part.endswith("_scales"):
            continue  # with its blocks
        if part.endswith("_blocks"):
            scales = tensors[name[:-len("_blocks")] + "_scales"][1]
            picks = ((0, 2, "ffn_gate_exps"), (1, 2, "ffn_up_exps")) \
                if "gate_up" in part else ((0, 1, "ffn_down_exps"),)
            for first, step, target in picks:
                s, v = repacked_mxfp4(shape, values, scales, first, step)
                out.append((block + target + ".weight", s, v))
            continue
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
