#!/usr/bin/env python3
"""A PEFT LoRA adapter of a LLaMA folder as llama.cpp's GGUF LoRA file, as
its convert_lora_to_gguf.py writes one: general.type "adapter",
adapter.type "lora", adapter.lora.alpha, and for each adapted weight its
GGUF name with .lora_a ([r, in]) and .lora_b ([out, r]), the B rows of Q
and K permuted as write_gguf.py permutes the model's (llama.cpp's layout).

    write_gguf_lora.py ADAPTER_DIR BASE_DIR OUT.gguf [--type F32|F16|BF16]
                       [--break model|q8|truncated|names]

BASE_DIR's config.json gives the heads. --break writes a file tfm_lora_load
must refuse: a model's general.type, a Q8_0 matrix, a file cut inside its
data, tensors named without .lora_a/.lora_b.
"""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "reference"))
import write_gguf  # noqa: E402
from checkpoint import read_safetensors, stored_values  # noqa: E402

WRAPPED = "base_model.model."


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("adapter")
    parser.add_argument("base")
    parser.add_argument("out")
    parser.add_argument("--type", default="F32")
    parser.add_argument("--break", dest="breakage")
    args = parser.parse_args()
    with open(os.path.join(args.adapter, "adapter_config.json")) as f:
        config = json.load(f)
    with open(os.path.join(args.base, "config.json")) as f:
        base = json.load(f)
    heads = base["num_attention_heads"]
    kv_heads = base.get("num_key_value_heads", heads)
    saved = read_safetensors(os.path.join(args.adapter,
                                          "adapter_model.safetensors"))
    tensors = []
    for name in sorted(saved):
        module, _, part = name[len(WRAPPED):].rpartition(".lora_")
        values = stored_values(saved[name])
        rows, cols = values.shape
        flat = [float(v) for v in values.reshape(-1)]
        if part == "B.weight" and module.endswith(("q_proj", "k_proj")):
            flat = write_gguf.permute_rows(
                flat, rows, cols,
                heads if module.endswith("q_proj") else kv_heads)
        suffix = ".lora_a" if part == "A.weight" else ".lora_b"
        if args.breakage == "names":
            suffix = ".a"
        ggml_type = "Q8_0" if args.breakage == "q8" else args.type
        tensors.append((write_gguf.gguf_name(module + ".weight") + suffix,
                        [rows, cols], ggml_type,
                        write_gguf.encode(flat, ggml_type)))
    metadata = {"general.architecture": "llama",
                "general.type": "model" if args.breakage == "model"
                else "adapter",
                "adapter.type": "lora",
                "adapter.lora.alpha": float(config["lora_alpha"])}
    write_gguf.write(args.out, metadata, tensors)
    if args.breakage == "truncated":
        with open(args.out, "r+b") as f:
            f.truncate(os.path.getsize(args.out) - 100)


if __name__ == "__main__":
    main()
