#!/usr/bin/env python3
"""Writes the inputs and golden ids of test/e2e/bpe-splits.test: the
byte-level BPE vocabulary of Inputs/gpt2-bpe with merges added where the
splits differ (digits, contractions in capitals, newlines after
punctuation, a letter after a tab or an apostrophe) as vocab.json +
merges.txt and as the tokenizer.json of a Llama 3 and of a Qwen2 tokenizer
(their pre-tokenizers, and Qwen2's NFC normalizer); a few texts (one not in
NFC); and each text's ids from transformers' slow tokenizers (4.40.2,
../shared/reference): GPT2Tokenizer, Qwen2Tokenizer, and Qwen2Tokenizer
with Llama 3's pattern put in its place (Llama 3 has no slow tokenizer; the
rest of the algorithm is the same byte-level BPE, without the NFC step).

    bash ../shared/reference/setup.sh; source /tmp/tfm-hfref/env.sh
    /usr/bin/python3 test/e2e/make_bpe_split_goldens.py
"""
import json
import os

import regex
from transformers import GPT2Tokenizer, Qwen2Tokenizer

HERE = os.path.dirname(os.path.abspath(__file__))
VOCAB = os.path.join(HERE, "Inputs", "gpt2-bpe")
OUT = os.path.join(HERE, "Inputs", "bpe-splits")

QWEN2_PATTERN = (r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|"""
                 r"""\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+""")
LLAMA3_PATTERN = QWEN2_PATTERN.replace(r"\p{N}|", r"\p{N}{1,3}|", 1)

TEXTS = [
    "It's 12345 apples, ISN'T it? They'LL see.\n\n  Yes:\tword 3.14159!\r\n"
    "end  \n  x",
    "\u00bfQu\u00e9? \u65e5\u672c 2024\u5e74 caf\u00e9's 'quoted' HELLO'S  "
    "\n\n\n   spaced   out\t\ttabs",
    "cafe\u0301 and na\u00efve: decomposed then composed",
    "Emoji \U0001F600!!!\n\nnumbers 1,234,567.89 and x2y3z ...\n",
    "  leading, trailing  ",
]


# Merges (in GPT-2's byte spelling: Ġ space, Ċ newline, č return, ĉ tab)
# that join what one split keeps apart and another does not.
EXTRA_MERGES = [("1", "2"), ("12", "3"), ("4", "5"), ("123", "45"),
                ("1", "4"), ("14", "1"), ("141", "5"), ("2", "0"),
                ("Ġ", "1"), ("'", "S"), ("'", "L"), ("'L", "L"),
                ("Ċ", "Ċ"), ("!", "č"), ("!č", "Ċ"), ("ĉ", "w"),
                ("?", "Ċ"), ("'", "q"), ("Ġ", "Ġ"), ("ĠĠ", "Ġ"),
                ("ĠĠ", "Ċ")]


def write_vocabulary():
    """gpt2-bpe's vocabulary and merges, extended; returns (vocab, merges)."""
    with open(os.path.join(VOCAB, "vocab.json"), encoding="utf-8") as f:
        vocab = json.load(f)
    with open(os.path.join(VOCAB, "merges.txt"), encoding="utf-8") as f:
        merges = [tuple(line.split()) for line in f
                  if line.strip() and not line.startswith("#version")]
    for left, right in EXTRA_MERGES:
        assert left in vocab and right in vocab, (left, right)
        if left + right not in vocab:
            vocab[left + right] = len(vocab)
        merges.append((left, right))
    directory = os.path.join(OUT, "vocab")
    os.makedirs(directory, exist_ok=True)
    with open(os.path.join(directory, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(directory, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges))
    return vocab, merges


class Llama3Tokenizer(Qwen2Tokenizer):
    """Qwen2Tokenizer's byte-level BPE split by Llama 3's pattern, with no
    normalization."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.pat = regex.compile(LLAMA3_PATTERN)

    def prepare_for_tokenization(self, text, **kwargs):
        return text, kwargs


def tokenizer_json(vocab, merges, pattern, normalizer):
    return {
        "version": "1.0",
        "added_tokens": [],
        "normalizer": normalizer,
        "pre_tokenizer": {"type": "Sequence", "pretokenizers": [
            {"type": "Split", "pattern": {"Regex": pattern},
             "behavior": "Isolated", "invert": False},
            {"type": "ByteLevel", "add_prefix_space": False,
             "trim_offsets": False, "use_regex": False}]},
        "model": {"type": "BPE", "dropout": None, "unk_token": None,
                  "vocab": vocab, "merges": [f"{a} {b}" for a, b in merges]},
    }


def main():
    os.makedirs(os.path.join(OUT, "texts"), exist_ok=True)
    for i, text in enumerate(TEXTS):
        with open(os.path.join(OUT, "texts", f"{i}.txt"), "w",
                  encoding="utf-8", newline="") as f:
            f.write(text)
    vocab, merges = write_vocabulary()
    files = [os.path.join(OUT, "vocab", "vocab.json"),
             os.path.join(OUT, "vocab", "merges.txt")]
    for name, cls, pattern, normalizer in [
            ("gpt2", GPT2Tokenizer, None, None),
            ("qwen2", Qwen2Tokenizer, QWEN2_PATTERN, {"type": "NFC"}),
            ("llama3", Llama3Tokenizer, LLAMA3_PATTERN, None)]:
        if pattern:
            os.makedirs(os.path.join(OUT, name), exist_ok=True)
            with open(os.path.join(OUT, name, "tokenizer.json"), "w",
                      encoding="utf-8") as f:
                json.dump(tokenizer_json(vocab, merges, pattern, normalizer), f,
                          ensure_ascii=False)
        tokenizer = cls(*files, errors="replace")
        with open(os.path.join(OUT, f"{name}.ids.txt"), "w") as f:
            for text in TEXTS:
                ids = tokenizer(text, add_special_tokens=False)["input_ids"]
                f.write(" ".join(map(str, ids)) + "\n")
        print("wrote", name)


if __name__ == "__main__":
    main()
