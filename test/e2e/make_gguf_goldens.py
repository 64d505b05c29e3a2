#!/usr/bin/env python3
"""Writes the golden logits of test/e2e/gguf-blocks.test: each GGUF file the
test writes (write_gguf.py, same arguments) read back by llama.cpp's own
gguf-py (GGUFReader, and gguf.quants.dequantize for every block format: a
decoder independent of tfmc's), then run through a NumPy
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
from make_goldens import llama_forward  # noqa: E402
from write_gguf import HF_LAYER_NAMES, HF_NAMES, gguf_name  # noqa: E402

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
    "gguf-q4_k_m": ["--random", "256,2,4,1,256,32", "--seed", "5", "--type",
                    "Q4_K", "--type-for", "attn_v=Q6_K", "--type-for",
                    "ffn_down=Q6_K", "--edge-type", "Q6_K"],
    "gguf-q5-iq4": ["--random", "256,2,4,1,256,32", "--seed", "6", "--type",
                    "Q5_K", "--type-for", "attn_k=Q5_0", "--type-for",
                    "ffn_up=Q5_1", "--type-for", "attn_v=IQ4_NL",
                    "--type-for", "ffn_down=IQ4_XS", "--edge-type", "Q5_0"],
    "gguf-q2-q3": ["--random", "256,2,4,1,256,32", "--seed", "7", "--type",
                   "Q3_K", "--type-for", "ffn_gate=Q2_K", "--type-for",
                   "attn_output=Q2_K", "--edge-type", "Q6_K"],
    "gguf-q5_k_m": ["--random", "256,2,4,1,256,32", "--seed", "8", "--type",
                    "Q5_K", "--type-for", "attn_v=Q6_K", "--type-for",
                    "ffn_down=Q6_K", "--edge-type", "Q6_K", "--type-for",
                    "token_embd=Q5_K"],
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
    """make_goldens.py's LLaMA on llama.cpp's tensors: its names mapped
    back to Hugging Face's, RoPE on adjacent pairs."""
    hf_of = {gguf_name(n): n for n in HF_NAMES}
    layers = int(meta["llama.block_count"])
    for l in range(layers):
        for part in HF_LAYER_NAMES:
            hf = f"model.layers.{l}.{part}.weight"
            # The first HF name of a GGUF one: LLaMA's (ffn_up is also
            # Phi-3's fused gate_up_proj).
            hf_of.setdefault(gguf_name(hf), hf)
    cfg = {"hidden_size": int(meta["llama.embedding_length"]),
           "num_attention_heads": int(meta["llama.attention.head_count"]),
           "num_key_value_heads": int(meta["llama.attention.head_count_kv"]),
           "rms_norm_eps": float(meta["llama.attention.layer_norm_rms_epsilon"]),
           "rope_theta": float(meta["llama.rope.freq_base"]),
           "num_hidden_layers": layers, "rope_interleaved": True}
    return llama_forward({hf_of[n]: v for n, v in w.items()}, cfg, tokens)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--llama-cpp", required=True,
                        help="llama.cpp's source tree (for gguf-py)")
    parser.add_argument("names", nargs="*", help="only these (default: all)")
    args = parser.parse_args()
    sys.path.insert(0, os.path.join(args.llama_cpp, "gguf-py"))
    with tempfile.TemporaryDirectory() as work:
        for name, writer_args in MODELS.items():
            if args.names and name not in args.names:
                continue
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
