#!/usr/bin/env python3
"""Writes the golden logits of test/e2e/gguf-blocks.test: each GGUF file the
test writes (write_gguf.py, same arguments) read back by llama.cpp's own
gguf-py (GGUFReader, and gguf.quants.dequantize for the Q8_0, Q4_0, Q4_1,
Q4_K and Q6_K blocks: a decoder independent of tfmc's), then run through a NumPy
LLaMA as llama.cpp computes it (RoPE on adjacent pairs, the layout its
converter permutes Q and K into). Needs NumPy and llama.cpp's source tree:

    /usr/bin/python3 test/e2e/make_gguf_goldens.py --llama-cpp /path/to/llama.cpp
"""
import argparse
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from make_goldens import causal_attention, rms_norm, rope, silu  # noqa: E402

TOKENS = [1, 17, 5, 30, 2, 9, 21, 0, 12, 28, 3, 14]
# name -> write_gguf.py arguments; gguf-blocks.test writes the same files.
MODELS = {
    "gguf-kquants": ["--random", "256,2,4,1,256,32", "--type", "Q4_K",
                     "--edge-type", "Q6_K"],
    "gguf-q4_0": ["--random", "256,2,4,1,256,32", "--seed", "2", "--type",
                  "Q4_0", "--edge-type", "Q8_0"],
    "gguf-bf16": ["--random", "256,2,4,1,256,32", "--seed", "3", "--type",
                  "BF16", "--edge-type", "F16"],
    "gguf-q4_1": ["--random", "256,2,4,1,256,32", "--seed", "4", "--type",
                  "Q4_1"],
}


def read_gguf(path):
    from gguf import GGUFReader
    from gguf.quants import dequantize
    reader = GGUFReader(path)
    weights = {}
    for tensor in reader.tensors:
        values = dequantize(tensor.data, tensor.tensor_type)
        shape = list(reversed([int(d) for d in tensor.shape]))
        weights[tensor.name] = np.asarray(values, np.float64).reshape(shape)
    meta = {}
    for field in reader.fields.values():
        if field.types and field.types[0] != 9:  # scalars only
            meta[field.name] = field.parts[field.data[0]][0]
    return weights, meta


def llama_cpp_forward(w, meta, tokens):
    arch = "llama."
    d = int(meta[arch + "embedding_length"])
    heads = int(meta[arch + "attention.head_count"])
    kvh = int(meta[arch + "attention.head_count_kv"])
    eps = float(meta[arch + "attention.layer_norm_rms_epsilon"])
    theta = float(meta[arch + "rope.freq_base"])
    hd, s = d // heads, len(tokens)
    x = w["token_embd.weight"][tokens]
    for l in range(int(meta[arch + "block_count"])):
        p = f"blk.{l}."
        a = rms_norm(x, w[p + "attn_norm.weight"], eps)
        q = (a @ w[p + "attn_q.weight"].T).reshape(s, heads, hd)
        k = (a @ w[p + "attn_k.weight"].T).reshape(s, kvh, hd)
        v = (a @ w[p + "attn_v.weight"].T).reshape(s, kvh, hd)
        q, k = rope(q, theta, True), rope(k, theta, True)
        att = causal_attention(q, k, v)
        x = x + att.reshape(s, d) @ w[p + "attn_output.weight"].T
        m = rms_norm(x, w[p + "ffn_norm.weight"], eps)
        g = silu(m @ w[p + "ffn_gate.weight"].T) * (m @ w[p + "ffn_up.weight"].T)
        x = x + g @ w[p + "ffn_down.weight"].T
    x = rms_norm(x, w["output_norm.weight"], eps)
    return x @ w.get("output.weight", w["token_embd.weight"]).T


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--llama-cpp", required=True,
                        help="llama.cpp's source tree (for gguf-py)")
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(args.llama_cpp, "gguf-py"))
    with tempfile.TemporaryDirectory() as work:
        for name, writer_args in MODELS.items():
            path = os.path.join(work, name + ".gguf")
            subprocess.run([sys.executable, os.path.join(HERE, "write_gguf.py"),
                            path] + writer_args, check=True)
            weights, meta = read_gguf(path)
            logits = llama_cpp_forward(weights, meta, TOKENS)
            out = os.path.join(HERE, "Inputs", name + ".logits.bin")
            logits.astype("<f4").tofile(out)
            print(f"{name}: {logits.shape} -> {out}")


if __name__ == "__main__":
    main()
