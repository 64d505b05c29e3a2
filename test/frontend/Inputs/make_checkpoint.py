#!/usr/bin/env python3
"""Writes a tiny model directory (config.json + model.safetensors) or a
llama2.c checkpoint for the frontend tests, optionally broken in one named
way. Standard library only: it runs under lit's Python on CI.

  make_checkpoint.py OUT [--family llama|gpt2|llama2c] [--break MODE]
"""
import argparse
import json
import os
import struct

LLAMA = {"model_type": "llama", "vocab_size": 16, "hidden_size": 8,
         "intermediate_size": 12, "num_hidden_layers": 1,
         "num_attention_heads": 4, "num_key_value_heads": 2,
         "max_position_embeddings": 16, "rms_norm_eps": 1e-5,
         "rope_theta": 10000.0, "hidden_act": "silu",
         "tie_word_embeddings": True, "bos_token_id": 1, "eos_token_id": 2}
GPT2 = {"model_type": "gpt2", "vocab_size": 16, "n_embd": 8, "n_layer": 1,
        "n_head": 2, "n_positions": 16}


def llama_tensors(c):
    d, i, v = c["hidden_size"], c["intermediate_size"], c["vocab_size"]
    kv = c["num_key_value_heads"] * d // c["num_attention_heads"]
    t = {"model.embed_tokens.weight": [v, d], "model.norm.weight": [d]}
    p = "model.layers.0."
    t.update({p + "input_layernorm.weight": [d],
              p + "self_attn.q_proj.weight": [d, d],
              p + "self_attn.k_proj.weight": [kv, d],
              p + "self_attn.v_proj.weight": [kv, d],
              p + "self_attn.o_proj.weight": [d, d],
              p + "post_attention_layernorm.weight": [d],
              p + "mlp.gate_proj.weight": [i, d],
              p + "mlp.up_proj.weight": [i, d],
              p + "mlp.down_proj.weight": [d, i]})
    return t


def gpt2_tensors(c):
    d, v, n = c["n_embd"], c["vocab_size"], c["n_positions"]
    t = {"wte.weight": [v, d], "wpe.weight": [n, d], "ln_f.weight": [d],
         "ln_f.bias": [d]}
    h = "h.0."
    for name, shape in [("ln_1.weight", [d]), ("ln_1.bias", [d]),
                        ("attn.c_attn.weight", [d, 3 * d]),
                        ("attn.c_attn.bias", [3 * d]),
                        ("attn.c_proj.weight", [d, d]), ("attn.c_proj.bias", [d]),
                        ("ln_2.weight", [d]), ("ln_2.bias", [d]),
                        ("mlp.c_fc.weight", [d, 4 * d]), ("mlp.c_fc.bias", [4 * d]),
                        ("mlp.c_proj.weight", [4 * d, d]), ("mlp.c_proj.bias", [d])]:
        t[h + name] = shape
    return t


def count(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def write_safetensors(path, tensors, mode):
    header, offset = {}, 0
    for name, shape in tensors.items():
        size = 4 * count(shape)
        header[name] = {"dtype": "F32", "shape": shape,
                        "data_offsets": [offset, offset + size]}
        offset += size
    data = bytes(offset)
    names = list(header)
    if mode == "bad-dtype":
        header[names[0]]["dtype"] = "I8"
    if mode == "overlap":
        a, b = header[names[1]]["data_offsets"], header[names[2]]["data_offsets"]
        header[names[2]]["data_offsets"] = [a[0], a[0] + b[1] - b[0]]
    if mode == "offsets-mismatch":
        begin, end = header[names[0]]["data_offsets"]
        header[names[0]]["data_offsets"] = [begin, end - 4]
    text = json.dumps(header).encode()
    if mode == "bad-json":
        text = text[:-1] + b",}"
    length = len(text)
    if mode == "bad-header-length":
        length = 1 << 40
    blob = struct.pack("<Q", length) + text + data
    if mode == "truncated":
        blob = blob[:-100]
    with open(path, "wb") as f:
        f.write(blob)


def write_llama2c(path, mode):
    dim, hidden, layers, heads, kvh, vocab, seq = 8, 12, 1, 4, 2, 16, 16
    kv = kvh * dim // heads
    floats = (vocab * dim + layers * dim * 2 + layers * dim * dim * 2 +
              layers * kv * dim * 2 + layers * hidden * dim * 3 + dim +
              seq * (dim // heads))
    if mode == "heads-not-dividing":
        heads = 3
    blob = struct.pack("<7i", dim, hidden, layers, heads, kvh, vocab, seq)
    blob += bytes(4 * floats)
    if mode == "truncated":
        blob = blob[:-64]
    with open(path, "wb") as f:
        f.write(blob)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("out")
    parser.add_argument("--family", default="llama", choices=["llama", "gpt2", "llama2c"])
    parser.add_argument("--break", dest="mode", default="none")
    args = parser.parse_args()
    if args.family == "llama2c":
        write_llama2c(args.out, args.mode)
        return
    os.makedirs(args.out, exist_ok=True)
    config = dict(LLAMA if args.family == "llama" else GPT2)
    tensors = (llama_tensors if args.family == "llama" else gpt2_tensors)(config)
    if args.mode == "unknown-model-type":
        config["model_type"] = "mamba"
    if args.mode == "rope-scaling":
        config["rope_scaling"] = {"type": "mrope", "mrope_section": [2, 3, 3]}
    if args.mode == "heads-not-dividing":
        config["num_key_value_heads"] = 3
    if args.mode == "missing-field":
        del config["hidden_size"]
    if args.mode == "missing-tensor":
        del tensors["model.layers.0.mlp.up_proj.weight"]
    if args.mode == "unexpected-tensor":
        tensors["model.layers.0.self_attn.extra.weight"] = [4]
    if args.mode == "wrong-shape":
        tensors["model.layers.0.self_attn.k_proj.weight"] = [8, 8]
    if args.mode == "gpt2-wrong-conv1d":
        tensors["h.0.attn.c_attn.weight"] = [24, 8]
    with open(os.path.join(args.out, "config.json"), "w") as f:
        if args.mode == "bad-config-json":
            f.write('{"model_type": "llama",')
        else:
            json.dump(config, f)
    write_safetensors(os.path.join(args.out, "model.safetensors"), tensors, args.mode)


if __name__ == "__main__":
    main()
