#!/usr/bin/env python3
"""Writes a real-shaped checkpoint directory from a manifest (stdlib only,
so that CI builds the fixtures without a Python ML stack):

    make_fixture.py Inputs/NAME.json OUT_DIR

A manifest holds a published model's config.json, generation_config.json
and tokenizer_config.json values (only depth and width cut down), its
tokenizer's shape (kind, size, special tokens at their published ids) and
the checkpoint's tensor names and shapes (as transformers saves the cut
config). The weights are random bf16 drawn from a seed, the same on every
machine: make_conformance_goldens.py builds the fixture with this script
and runs transformers on it.

The tokenizer is the published one's shape, not its vocabulary: byte-level
BPE with GPT-2's 256 byte tokens, then filler tokens up to the published
count of normal tokens, then the added tokens at their published ids (as
tokenizer.json lists them), and the published pre-tokenizer and
normalizer.

    make_fixture.py --columns VOCAB           the logits columns goldens keep
    make_fixture.py --select FILE VOCAB OUT   those columns of a logits file
"""
import array
import json
import os
import random
import struct
import sys
import wave


def byte_alphabet():
    """GPT-2's bytes_to_unicode: the spelling of each byte."""
    printable = (list(range(ord("!"), ord("~") + 1)) +
                 list(range(ord("\u00a1"), ord("\u00ac") + 1)) +
                 list(range(ord("\u00ae"), ord("\u00ff") + 1)))
    spelled, extra = {}, 0
    for b in range(256):
        if b in printable:
            spelled[b] = chr(b)
        else:
            spelled[b] = chr(256 + extra)
            extra += 1
    return [spelled[b] for b in range(256)]


def filler(i):
    """The i-th filler token: letters that no merge reaches."""
    letters = "abcdefghijklmnopqrstuvwxyz"
    word = ""
    i += 1
    while i:
        i, r = divmod(i - 1, 26)
        word = letters[r] + word
    return "\u0120" + word + "\u0120"  # Ġword Ġ: unique, never a text's piece


def tokenizer_json(spec):
    """tokenizer.json of a byte-level BPE of the published shape: the
    normal tokens take the ids the added ones leave free, in order."""
    taken = {int(i) for i in spec["added_tokens"]}
    free = (i for i in range(spec["normal_tokens"] + len(taken)) if i not in taken)
    vocab = {}
    for piece in byte_alphabet():
        vocab[piece] = next(free)
    merges = [["\u0120", "t"], ["h", "e"], ["\u0120t", "he"]]
    for a, b in merges:
        vocab.setdefault(a + b, next(free))
    while len(vocab) < spec["normal_tokens"]:
        vocab[filler(len(vocab))] = next(free)
    added = [{"id": int(i), "content": t["content"], "single_word": False,
              "lstrip": t.get("lstrip", False), "rstrip": t.get("rstrip", False),
              "normalized": t.get("normalized", False),
              "special": t.get("special", True)}
             for i, t in sorted(spec["added_tokens"].items(), key=lambda kv: int(kv[0]))]
    return {"version": "1.0", "truncation": None, "padding": None,
            "added_tokens": added, "normalizer": spec.get("normalizer"),
            "pre_tokenizer": spec["pre_tokenizer"],
            "post_processor": spec.get("post_processor"),
            "decoder": {"type": "ByteLevel"},
            "model": {"type": "BPE", "dropout": None, "unk_token": None,
                      "continuing_subword_prefix": None,
                      "end_of_word_suffix": None, "fuse_unk": False,
                      "byte_fallback": False,
                      "ignore_merges": spec.get("ignore_merges", False),
                      "vocab": vocab,
                      "merges": [f"{a} {b}" for a, b in merges]}}


def random_bf16(rng, count):
    """`count` bf16 values of magnitude 1/8 to 1/2, random signs: random
    bytes whose high byte keeps the sign and sets the exponent."""
    data = bytearray(rng.randbytes(2 * count))
    high = bytes((b & 0x80) | 0x3E for b in range(256))
    data[1::2] = bytes(data[1::2]).translate(high)
    return bytes(data)


def write_safetensors(path, tensors, seed):
    rng = random.Random(seed)
    header, blobs, offset = {}, [], 0
    for name, shape in tensors:
        count = 1
        for d in shape:
            count *= d
        blob = random_bf16(rng, count)
        header[name] = {"dtype": "BF16", "shape": shape,
                        "data_offsets": [offset, offset + len(blob)]}
        blobs.append(blob)
        offset += len(blob)
    header["__metadata__"] = {"format": "pt"}
    encoded = json.dumps(header).encode()
    encoded += b" " * (-len(encoded) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(encoded)))
        f.write(encoded)
        for blob in blobs:
            f.write(blob)


def write_fixture(manifest_path, out):
    with open(manifest_path, encoding="utf-8") as f:
        manifest = json.load(f)
    os.makedirs(out, exist_ok=True)
    for name in ("config", "generation_config", "tokenizer_config",
                 "preprocessor_config"):
        if name in manifest:
            with open(os.path.join(out, name + ".json"), "w",
                      encoding="utf-8") as f:
                json.dump(manifest[name], f, indent=2, ensure_ascii=False)
    if "vocab" in manifest:  # a CTC head's Wav2Vec2CTCTokenizer
        with open(os.path.join(out, "vocab.json"), "w",
                  encoding="utf-8") as f:
            json.dump(manifest["vocab"], f, ensure_ascii=False)
    if "tokenizer" in manifest:
        with open(os.path.join(out, "tokenizer.json"), "w",
                  encoding="utf-8") as f:
            json.dump(tokenizer_json(manifest["tokenizer"]), f,
                      ensure_ascii=False)
    write_safetensors(os.path.join(out, "model.safetensors"),
                      manifest["tensors"], manifest["seed"])
    if "audio" in manifest:
        # A waveform model's input: clip.wav, 16-bit mono noise.
        count, seed = manifest["audio"]
        rng = random.Random(seed)
        samples = array.array("h", (round(rng.uniform(-0.5, 0.5) * 32767)
                                    for _ in range(count)))
        if sys.byteorder != "little":
            samples.byteswap()
        with wave.open(os.path.join(out, "clip.wav"), "wb") as w:
            w.setnchannels(1)
            w.setsampwidth(2)
            w.setframerate(manifest["preprocessor_config"]["sampling_rate"])
            w.writeframes(samples.tobytes())
    if "features" in manifest:
        # A speech model's log-mel-like input, an image model's pixels:
        # values in [-1, 1].
        rows, columns_, seed = manifest["features"]
        rng = random.Random(seed)
        values = array.array("f", (rng.uniform(-1, 1)
                                   for _ in range(rows * columns_)))
        if sys.byteorder != "little":
            values.byteswap()
        with open(os.path.join(out, "features.bin"), "wb") as f:
            f.write(values.tobytes())


def output_width(config):
    """The width of a model's logits: its vocabulary, or its labels."""
    if "vocab_size" in config:
        return config["vocab_size"]
    return len(config["id2label"])


def columns(vocab):
    """The logits columns a golden keeps: every (vocab // 200)-th, and the
    last 64 (a padded table's rows past the tokenizer)."""
    step = max(1, vocab // 200)
    keep = set(range(0, vocab, step)) | set(range(max(0, vocab - 64), vocab))
    return sorted(keep)


def select(path, vocab, out):
    values = array.array("f")
    with open(path, "rb") as f:
        values.frombytes(f.read())
    if sys.byteorder != "little":
        values.byteswap()
    keep = columns(vocab)
    rows = len(values) // vocab
    picked = array.array("f", (values[r * vocab + c]
                               for r in range(rows) for c in keep))
    if sys.byteorder != "little":
        picked.byteswap()
    with open(out, "wb") as f:
        f.write(picked.tobytes())


def main(argv):
    if argv[:1] == ["--columns"]:
        print(" ".join(map(str, columns(int(argv[1])))))
    elif argv[:1] == ["--select"]:
        select(argv[1], int(argv[2]), argv[3])
    else:
        write_fixture(argv[0], argv[1])


if __name__ == "__main__":
    main(sys.argv[1:])
