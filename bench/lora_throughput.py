#!/usr/bin/env python3
"""Batched throughput with run-time LoRA adapters on the 1.1B shape
(TinyLlama-1.1B's widths, random weights from make_random_model.py): the
batch engine (Python's tfmc.Engine) runs the same requests on

  base         the model compiled without adapter slots
  slots, none  compiled with --lora-slots 8 --lora-rank 16, no adapter
  1 adapter    every request with one adapter
  8 adapters   the requests spread over 8 loaded adapters (rank 16, every
               projection of every layer: PEFT's all-linear)

and reports generated tokens per second over the whole run (prompts
prefilled in chunks beside the decoding requests) and each against base.
Issue 79's target: 8 adapters keep >= 80% of base.

    bench/lora_throughput.py --work DIR [--dtype bf16] [--requests 16]
        [--prompt 64] [--tokens 32] [--rounds 2]
"""
import argparse
import json
import os
import struct
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TFMC = os.path.join(ROOT, "build", "bin", "tfmc")
sys.path.insert(0, os.path.join(ROOT, "python"))
import tfmc  # noqa: E402

MODULES = ["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
           "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj",
           "mlp.down_proj"]


def run(cmd):
    subprocess.run(cmd, check=True)


def write_safetensors(path, tensors):
    header, offset, blobs = {}, 0, []
    for name, values in tensors.items():
        data = np.ascontiguousarray(values, dtype="<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(values.shape),
                        "data_offsets": [offset, offset + len(data)]}
        offset += len(data)
        blobs.append(data)
    text = json.dumps(header).encode()
    text += b" " * (-len(text) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def make_adapter(folder, config, rank, seed):
    """A random PEFT adapter of every projection of every layer."""
    if os.path.exists(os.path.join(folder, "adapter_model.safetensors")):
        return
    os.makedirs(folder, exist_ok=True)
    rng = np.random.default_rng(seed)
    width, ffn = config["hidden_size"], config["intermediate_size"]
    head = width // config["num_attention_heads"]
    kv = head * config["num_key_value_heads"]
    shapes = {"self_attn.q_proj": (width, width),
              "self_attn.k_proj": (kv, width), "self_attn.v_proj": (kv, width),
              "self_attn.o_proj": (width, width),
              "mlp.gate_proj": (ffn, width), "mlp.up_proj": (ffn, width),
              "mlp.down_proj": (width, ffn)}
    tensors = {}
    for layer in range(config["num_hidden_layers"]):
        for module in MODULES:
            out, inner = shapes[module]
            prefix = f"base_model.model.model.layers.{layer}.{module}."
            tensors[prefix + "lora_A.weight"] = rng.normal(
                0, 0.02, (rank, inner)).astype(np.float32)
            tensors[prefix + "lora_B.weight"] = rng.normal(
                0, 0.02, (out, rank)).astype(np.float32)
    write_safetensors(os.path.join(folder, "adapter_model.safetensors"),
                      tensors)
    with open(os.path.join(folder, "adapter_config.json"), "w") as f:
        json.dump({"peft_type": "LORA", "r": rank, "lora_alpha": 2 * rank,
                   "target_modules": [m.split(".")[1] for m in MODULES],
                   "bias": "none"}, f)


def build(work, dtype, rank):
    model = os.path.join(work, "tinyllama")
    if not os.path.exists(os.path.join(model, "model.safetensors")):
        run(["/usr/bin/python3", os.path.join(HERE, "make_random_model.py"),
             "tinyllama", model, "--dtype", "bf16"])
    libraries = {}
    for name, extra in (("base", []),
                        ("slots", ["--lora-slots", "8", "--lora-rank",
                                   str(rank)])):
        library = os.path.join(work, f"lib{name}-{dtype}.so")
        if not os.path.exists(library):
            run([TFMC, model, "--weights-dtype", dtype, "--max-context", "512",
                 "--emit=lib", "-q", "-o", library] + extra)
        libraries[name] = library
    with open(os.path.join(model, "config.json")) as f:
        config = json.load(f)
    adapters = [os.path.join(work, f"adapter{i}") for i in range(8)]
    for i, folder in enumerate(adapters):
        make_adapter(folder, config, rank, seed=i)
    return libraries, adapters


def throughput(model, prompts, tokens, adapters, rounds):
    """Best of `rounds`: generated tokens per second, every request at once
    in one engine, request i with adapters[i % len(adapters)]."""
    best = 0.0
    for _ in range(rounds):
        engine = tfmc.Engine(model, max_sequences=len(prompts))
        start = time.perf_counter()
        for i, prompt in enumerate(prompts):
            engine.submit(prompt, max_tokens=tokens, ignore_eos=True,
                          lora=adapters[i % len(adapters)])
        generated = 0
        while engine.pending():
            generated += sum(token is not None
                             for _, token, _ in engine.step())
        seconds = time.perf_counter() - start
        engine.close()
        best = max(best, generated / seconds)
    return best


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", required=True)
    parser.add_argument("--dtype", default="bf16")
    parser.add_argument("--rank", type=int, default=16)
    parser.add_argument("--requests", type=int, default=16)
    parser.add_argument("--prompt", type=int, default=64)
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument("--rounds", type=int, default=2)
    a = parser.parse_args()
    os.makedirs(a.work, exist_ok=True)
    libraries, folders = build(a.work, a.dtype, a.rank)
    rng = np.random.default_rng(1)
    prompts = [[int(t) for t in rng.integers(3, 32000, a.prompt)]
               for _ in range(a.requests)]
    print(f"lora_throughput.py: 1.1B shape, {a.dtype} weights, "
          f"{a.requests} requests of {a.prompt} prompt and {a.tokens} new "
          f"tokens, rank {a.rank}, {os.cpu_count()} CPUs", flush=True)
    base = tfmc.load(libraries["base"])
    rate = throughput(base, prompts, a.tokens, [0], a.rounds)
    base.close()
    print(f"  {'base':<12} {rate:7.2f} tok/s", flush=True)
    reference = rate
    slots = tfmc.load(libraries["slots"])
    ids = [slots.load_lora(folder) for folder in folders]
    for name, adapters in (("slots, none", [0]), ("1 adapter", ids[:1]),
                           ("8 adapters", ids)):
        rate = throughput(slots, prompts, a.tokens, adapters, a.rounds)
        print(f"  {name:<12} {rate:7.2f} tok/s  x{rate / reference:4.2f}",
              flush=True)
    slots.close()


if __name__ == "__main__":
    main()
