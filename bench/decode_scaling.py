#!/usr/bin/env python3
"""bench/decode_scaling: decode tokens/s of a tfmc-compiled GPT-2-small-shaped
model (random fp32 weights) after prompts of 32, 256 and 900 tokens.

A decode step reads every weight once and, in each layer, the cached keys
and values of the whole context. The script reports the measured slowdown
from 32 to 900 beside the slowdown that this extra memory traffic predicts
(weights + cache bytes at 900 over weights + cache bytes at 32): the KV
cache keeps decode O(context), so the two should be close.

    /usr/bin/python3 bench/decode_scaling.py [--tfmc build/bin/tfmc] [--work DIR]
"""
import argparse
import json
import os
import random
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def run_stats(exe, prompt_length, new_tokens, vocab):
    rng = random.Random(prompt_length)
    tokens = " ".join(str(rng.randrange(vocab)) for _ in range(prompt_length))
    out = subprocess.run([exe, "--tokens", tokens, "-n", str(new_tokens),
                          "--print-ids", "--ignore-eos", "--stats"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stderr.strip().splitlines()[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tfmc", default=os.path.join(ROOT, "build", "bin", "tfmc"))
    parser.add_argument("--work", default=os.path.join(ROOT, "build", "bench"))
    parser.add_argument("--new-tokens", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    model = os.path.join(args.work, "gpt2-small-random")
    exe = os.path.join(args.work, "gpt2-small")
    if not os.path.exists(os.path.join(model, "model.safetensors")):
        subprocess.run([sys.executable, os.path.join(HERE, "make_random_model.py"),
                        "gpt2", model], check=True)
    if not os.path.exists(exe):
        subprocess.run([args.tfmc, model, "-o", exe], check=True)
    with open(os.path.join(model, "config.json")) as f:
        config = json.load(f)
    d, layers, vocab = config["n_embd"], config["n_layer"], config["vocab_size"]
    weight_bytes = os.path.getsize(os.path.join(model, "model.safetensors"))
    cache_bytes_per_position = layers * 2 * d * 4  # K and V, f32

    print(f"GPT-2 small shape, fp32, {weight_bytes / 1e6:.0f} MB of weights; "
          f"{args.new_tokens} new tokens, best of {args.repeats}")
    print(f"{'prompt':>7} {'decode tok/s':>13} {'prefill tok/s':>14}")
    rates = {}
    for prompt in (32, 256, 900):
        best = max((run_stats(exe, prompt, args.new_tokens, vocab)
                    for _ in range(args.repeats)),
                   key=lambda s: s["decode_tokens_per_s"])
        rates[prompt] = best["decode_tokens_per_s"]
        print(f"{prompt:>7} {best['decode_tokens_per_s']:>13.2f} "
              f"{best['prefill_tokens_per_s']:>14.1f}")
    # Mean context over the decoded tokens.
    def traffic(prompt):
        return weight_bytes + cache_bytes_per_position * (prompt + args.new_tokens / 2)
    predicted = traffic(900) / traffic(32)
    measured = rates[32] / rates[900]
    print(f"slowdown 32 -> 900: measured {measured:.3f}x, predicted by memory "
          f"traffic {predicted:.3f}x")


if __name__ == "__main__":
    main()
