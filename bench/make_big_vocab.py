#!/usr/bin/env python3
"""Writes a byte-level BPE vocabulary of N tokens (GPT-2's vocab.json and
merges.txt) for benchmarks that need a real vocabulary's size: the 256
byte symbols, then every prefix of the words of a text (" word" with its
space, most frequent words first), each prefix one merge of the prefix
before it and its last symbol, then made-up words until N. Its trie is
as deep and as shared as a real BPE vocabulary's (Qwen2.5's has 151,643
tokens before its specials, 151,936 embedding rows).

    make_big_vocab.py OUT_DIR N [TEXT...]
"""
import collections
import json
import os
import random
import re
import sys


def bytes_to_unicode():
    """GPT-2's reversible byte -> symbol map."""
    printable = (list(range(ord("!"), ord("~") + 1)) +
                 list(range(ord("¡"), ord("¬") + 1)) +
                 list(range(ord("®"), ord("ÿ") + 1)))
    symbols, extra = printable[:], 0
    for b in range(256):
        if b not in printable:
            printable.append(b)
            symbols.append(256 + extra)
            extra += 1
    return {b: chr(s) for b, s in zip(printable, symbols)}


def main():
    out, n, texts = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    symbol = bytes_to_unicode()
    words = collections.Counter()
    for path in texts:
        with open(path, encoding="utf-8", errors="replace") as f:
            for word in re.findall(r" ?[A-Za-z]+| ?[0-9]{1,3}| ?[^\sA-Za-z0-9]+",
                                   f.read()):
                words[word] += 1
    rng = random.Random(1)
    ordered = [w for w, _ in words.most_common()]
    vocab = {symbol[b]: b for b in range(256)}
    vocab_order = [symbol[b] for b in range(256)]
    merges = []

    def add_word(word):
        spelled = "".join(symbol[b] for b in word.encode("utf-8"))
        for end in range(2, len(spelled) + 1):
            if len(vocab) >= n:
                return
            token = spelled[:end]
            if token not in vocab:
                merges.append(spelled[:end - 1] + " " + spelled[end - 1])
                vocab[token] = len(vocab)

    for word in ordered:
        if len(vocab) >= n:
            break
        add_word(word)
    letters = "abcdefghijklmnopqrstuvwxyz"
    while len(vocab) < n:
        length = rng.randint(3, 12)
        add_word((" " if rng.random() < 0.7 else "") +
                 "".join(rng.choice(letters) for _ in range(length)))
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump(vocab, f, ensure_ascii=False)
    with open(os.path.join(out, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n" + "\n".join(merges) + "\n")
    print(f"{out}: {len(vocab)} tokens, {len(merges)} merges, "
          f"{len(ordered)} distinct words in the texts")


if __name__ == "__main__":
    main()
