#!/usr/bin/env python3
"""Writes a Hugging Face model directory with random weights for the
benchmarks: `gpt2` (GPT-2 small: 12 layers, 768 wide, 12 heads, vocab 50257),
`llama` (a LLaMA of similar size with grouped-query attention: 12 heads,
4 KV heads), `moonlight` (Moonlight-16B-A3B's widths, multi-head latent
attention and DeepSeek-V3's router, cut to 4 layers and 8 experts of which
6 are used, vocab 32000), `tinyllama` (TinyLlama-1.1B's shape: 22 layers, 2048 wide,
32 heads / 4 KV heads, FFN 5632, vocab 32000) or `mixtral` (a small
Mixtral: 12 layers, 1024 wide, 16 heads / 4 KV heads, 8 experts of 2816,
top 2, vocab 32000: 0.94 B parameters, 0.33 B of them read per token). F32 by default, or BF16
(--dtype bf16), written a tensor at a time. NumPy: /usr/bin/python3 after
apt-get install python3-numpy.

    make_random_model.py gpt2 OUT_DIR
    make_random_model.py tinyllama OUT_DIR --dtype bf16

--tiled repeats one random block of 4096 values through every tensor: the
compiled model's weights then gzip a hundredfold, small enough to carry to
a GPU machine (bench/gpu_bench.sh), and as slow to stream as any others.
"""
import json
import os
import struct
import sys

import numpy as np

SHAPES = {
    "gpt2": {"model_type": "gpt2", "vocab_size": 50257, "n_embd": 768,
             "n_layer": 12, "n_head": 12, "n_positions": 1024,
             "layer_norm_epsilon": 1e-5, "activation_function": "gelu_new"},
    "llama": {"model_type": "llama", "vocab_size": 32000, "hidden_size": 768,
              "intermediate_size": 2048, "num_hidden_layers": 12,
              "num_attention_heads": 12, "num_key_value_heads": 4,
              "max_position_embeddings": 1024, "rms_norm_eps": 1e-5,
              "rope_theta": 10000.0, "hidden_act": "silu",
              "tie_word_embeddings": False},
    "tinyllama": {"model_type": "llama", "vocab_size": 32000,
                  "hidden_size": 2048, "intermediate_size": 5632,
                  "num_hidden_layers": 22, "num_attention_heads": 32,
                  "num_key_value_heads": 4, "max_position_embeddings": 2048,
                  "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
                  "hidden_act": "silu", "tie_word_embeddings": False},
    "mixtral": {"model_type": "mixtral", "vocab_size": 32000,
                "hidden_size": 1024, "intermediate_size": 2816,
                "num_hidden_layers": 12, "num_attention_heads": 16,
                "num_key_value_heads": 4, "max_position_embeddings": 2048,
                "rms_norm_eps": 1e-5, "rope_theta": 1e6, "hidden_act": "silu",
                "num_local_experts": 8, "num_experts_per_tok": 2,
                "sliding_window": None, "tie_word_embeddings": False},
    "moonlight": {"model_type": "deepseek_v3", "vocab_size": 32000,
                  "hidden_size": 2048, "intermediate_size": 11264,
                  "moe_intermediate_size": 1408, "num_hidden_layers": 4,
                  "num_attention_heads": 16, "num_key_value_heads": 16,
                  "q_lora_rank": None, "kv_lora_rank": 512,
                  "qk_nope_head_dim": 128, "qk_rope_head_dim": 64,
                  "v_head_dim": 128, "n_routed_experts": 8,
                  "num_experts_per_tok": 6, "n_group": 1, "topk_group": 1,
                  "topk_method": "noaux_tc", "scoring_func": "sigmoid",
                  "norm_topk_prob": True, "routed_scaling_factor": 2.446,
                  "n_shared_experts": 2, "first_k_dense_replace": 1,
                  "max_position_embeddings": 8192, "rms_norm_eps": 1e-5,
                  "rope_theta": 50000.0, "rope_scaling": None,
                  "hidden_act": "silu", "tie_word_embeddings": False},
}


def deepseek_tensors(c):
    """DeepSeek-V3's names without a query LoRA (Moonlight's): multi-head
    latent attention, a dense first layer, then routed and shared experts."""
    d, v, heads = c["hidden_size"], c["vocab_size"], c["num_attention_heads"]
    rank, rope = c["kv_lora_rank"], c["qk_rope_head_dim"]
    nope, value = c["qk_nope_head_dim"], c["v_head_dim"]
    expert, experts = c["moe_intermediate_size"], c["n_routed_experts"]
    shared = expert * c["n_shared_experts"]
    yield "model.embed_tokens.weight", (v, d)
    for l in range(c["num_hidden_layers"]):
        p = f"model.layers.{l}."
        a = p + "self_attn."
        yield from [(p + "input_layernorm.weight", (d,)),
                    (a + "q_proj.weight", (heads * (nope + rope), d)),
                    (a + "kv_a_proj_with_mqa.weight", (rank + rope, d)),
                    (a + "kv_a_layernorm.weight", (rank,)),
                    (a + "kv_b_proj.weight", (heads * (nope + value), rank)),
                    (a + "o_proj.weight", (d, heads * value)),
                    (p + "post_attention_layernorm.weight", (d,))]
        m = p + "mlp."
        if l < c["first_k_dense_replace"]:
            i = c["intermediate_size"]
            yield from [(m + "gate_proj.weight", (i, d)),
                        (m + "up_proj.weight", (i, d)),
                        (m + "down_proj.weight", (d, i))]
            continue
        yield from [(m + "gate.weight", (experts, d)),
                    (m + "gate.e_score_correction_bias", (experts,))]
        for e in range(experts):
            yield from [(f"{m}experts.{e}.gate_proj.weight", (expert, d)),
                        (f"{m}experts.{e}.up_proj.weight", (expert, d)),
                        (f"{m}experts.{e}.down_proj.weight", (d, expert))]
        yield from [(m + "shared_experts.gate_proj.weight", (shared, d)),
                    (m + "shared_experts.up_proj.weight", (shared, d)),
                    (m + "shared_experts.down_proj.weight", (d, shared))]
    yield "model.norm.weight", (d,)
    yield "lm_head.weight", (v, d)


def to_bf16_bytes(values):
    """f32 values as bfloat16, rounded to nearest even."""
    bits = values.astype("<f4").view("<u4").astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) >> 16
    return bits.astype("<u2").tobytes()


def tensors(kind, c):
    if kind == "moonlight":
        yield from deepseek_tensors(c)
        return
    if kind == "gpt2":
        d, v, n = c["n_embd"], c["vocab_size"], c["n_positions"]
        yield "wte.weight", (v, d)
        yield "wpe.weight", (n, d)
        for l in range(c["n_layer"]):
            h = f"h.{l}."
            yield from [(h + "ln_1.weight", (d,)), (h + "ln_1.bias", (d,)),
                        (h + "attn.c_attn.weight", (d, 3 * d)), (h + "attn.c_attn.bias", (3 * d,)),
                        (h + "attn.c_proj.weight", (d, d)), (h + "attn.c_proj.bias", (d,)),
                        (h + "ln_2.weight", (d,)), (h + "ln_2.bias", (d,)),
                        (h + "mlp.c_fc.weight", (d, 4 * d)), (h + "mlp.c_fc.bias", (4 * d,)),
                        (h + "mlp.c_proj.weight", (4 * d, d)), (h + "mlp.c_proj.bias", (d,))]
        yield "ln_f.weight", (d,)
        yield "ln_f.bias", (d,)
    else:
        d, i, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
        kv = c["num_key_value_heads"] * d // c["num_attention_heads"]
        yield "model.embed_tokens.weight", (v, d)
        for l in range(c["num_hidden_layers"]):
            p = f"model.layers.{l}."
            yield from [(p + "input_layernorm.weight", (d,)),
                        (p + "self_attn.q_proj.weight", (d, d)),
                        (p + "self_attn.k_proj.weight", (kv, d)),
                        (p + "self_attn.v_proj.weight", (kv, d)),
                        (p + "self_attn.o_proj.weight", (d, d)),
                        (p + "post_attention_layernorm.weight", (d,))]
            experts = c.get("num_local_experts", 0)
            if experts:
                moe = p + "block_sparse_moe."
                yield moe + "gate.weight", (experts, d)
                for e in range(experts):
                    yield from [(f"{moe}experts.{e}.w1.weight", (i, d)),
                                (f"{moe}experts.{e}.w3.weight", (i, d)),
                                (f"{moe}experts.{e}.w2.weight", (d, i))]
                continue
            yield from [(p + "mlp.gate_proj.weight", (i, d)),
                        (p + "mlp.up_proj.weight", (i, d)),
                        (p + "mlp.down_proj.weight", (d, i))]
        yield "model.norm.weight", (d,)
        yield "lm_head.weight", (v, d)


def main():
    kind, out = sys.argv[1], sys.argv[2]
    flags = sys.argv[3:]
    dtype = flags[flags.index("--dtype") + 1] if "--dtype" in flags else "f32"
    tiled = "--tiled" in flags
    width = 2 if dtype == "bf16" else 4
    config = dict(SHAPES[kind])
    if kind != "gpt2":
        config["torch_dtype"] = "bfloat16" if dtype == "bf16" else "float32"
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    rng = np.random.default_rng(0)
    block = rng.normal(0, 0.02, 4096).astype("<f4")
    header, offset, shapes = {}, 0, list(tensors(kind, config))
    for name, shape in shapes:
        size = width * int(np.prod(shape))
        header[name] = {"dtype": "BF16" if dtype == "bf16" else "F32",
                        "shape": list(shape),
                        "data_offsets": [offset, offset + size]}
        offset += size
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(out, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text)
        for name, shape in shapes:
            norm = name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight", "norm.weight"))
            if norm:
                data = np.ones(shape, "<f4")
            elif tiled:
                data = np.resize(block, shape)
            else:
                data = rng.normal(0, 0.02, shape).astype("<f4")
            f.write(to_bf16_bytes(data) if dtype == "bf16" else data.tobytes())
    print(f"wrote {out}: {offset / 1e6:.0f} MB of {dtype} weights")


if __name__ == "__main__":
    main()
