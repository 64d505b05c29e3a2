#!/usr/bin/env python3
"""How long tfmc takes to read a model folder whose tokenizer.json is a
real vocabulary's size: a Qwen2-style folder (the qwen2 family fixture's
one tiny layer, its embeddings and head widened to the vocabulary) with a
fast tokenizer of N byte-level BPE tokens (bench/make_big_vocab.py's) and
Qwen2's pre-tokenizer, compiled to the tfm dialect only (--emit=tfm: the
frontend's time, nothing of codegen's). NumPy: /usr/bin/python3.

    compile_big_tokenizer.py TFMC [--tokens 151643] [--rounds 5] [--work DIR]
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
FIXTURE = os.path.join(HERE, "..", "test", "e2e", "families", "Inputs", "qwen2")
SPLIT = os.path.join(HERE, "..", "test", "e2e", "Inputs", "bpe-splits",
                     "qwen2", "tokenizer.json")


def write_folder(work, tokens):
    vocab_dir = os.path.join(work, "vocab")
    subprocess.run([sys.executable, os.path.join(HERE, "make_big_vocab.py"),
                    vocab_dir, str(tokens)], check=True,
                   stdout=subprocess.DEVNULL)
    vocab = json.load(open(os.path.join(vocab_dir, "vocab.json")))
    merges = [line.rstrip("\n") for line in
              open(os.path.join(vocab_dir, "merges.txt"), encoding="utf-8")
              if line.strip() and not line.startswith("#version")]
    tokenizer = json.load(open(SPLIT))
    tokenizer["model"]["vocab"], tokenizer["model"]["merges"] = vocab, merges
    tokenizer["added_tokens"] = [{"id": len(vocab), "content": "<|endoftext|>",
                                  "single_word": False, "lstrip": False,
                                  "rstrip": False, "normalized": False,
                                  "special": True}]
    folder = os.path.join(work, "model")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "tokenizer.json"), "w") as f:
        json.dump(tokenizer, f, ensure_ascii=False)
    # Embedding rows rounded up past the tokens, as Qwen2's 151,936 are.
    rows = (len(vocab) + 1 + 127) // 128 * 128
    config = json.load(open(os.path.join(FIXTURE, "config.json")))
    old_rows = config["vocab_size"]
    config["vocab_size"] = rows
    json.dump(config, open(os.path.join(folder, "config.json"), "w"))
    data = open(os.path.join(FIXTURE, "model.safetensors"), "rb").read()
    header = json.loads(data[8:8 + struct.unpack("<Q", data[:8])[0]])
    rng = np.random.default_rng(0)
    layout, blobs, offset = {}, [], 0
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        shape = list(entry["shape"])
        if shape and shape[0] == old_rows:
            shape[0] = rows
        blob = (rng.standard_normal(shape) * 0.02).astype(np.float32).tobytes()
        layout[name] = {"dtype": "F32", "shape": shape,
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    text = json.dumps(layout).encode()
    text += b" " * (-len(text) % 8)
    with open(os.path.join(folder, "model.safetensors"), "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))
    return folder, os.path.getsize(os.path.join(folder, "tokenizer.json"))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("tfmc")
    parser.add_argument("--tokens", type=int, default=151643)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--work", default="/tmp/tfm-big-tokenizer")
    args = parser.parse_args()
    folder, size = write_folder(args.work, args.tokens)
    times = []
    for _ in range(args.rounds):
        start = time.perf_counter()
        subprocess.run([args.tfmc, folder, "--emit=tfm"], check=True,
                       stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
    times.sort()
    print(f"tokenizer.json of {args.tokens} tokens ({size / 1e6:.2f} MB): "
          f"tfmc --emit=tfm median {times[len(times) // 2]:.3f} s, "
          f"fastest {times[0]:.3f} s over {args.rounds} rounds")


if __name__ == "__main__":
    main()
