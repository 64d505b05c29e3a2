#!/usr/bin/env python3
"""Writes the inputs and golden ids of test/e2e/qwen35-tokenizer.test from
llama.cpp's own test vectors for Qwen3.5's pre-tokenizer: its
models/ggml-vocab-qwen35.gguf (a byte-level BPE of 151936 tokens and 151387
merges, tokenizer.ggml.pre "qwen35") with ggml-vocab-qwen35.gguf.inp/.out,
the texts and the ids Hugging Face's tokenizer gives them.

The vocabulary is too large to commit, so the fixture is the part of it the
vectors' ids reach: every token of the ids, and, again and again, the two
halves of each merge that makes a kept token. Every merge the whole
vocabulary applies to these texts makes a token that ends inside one of the
ids, so it is kept; a merge dropped was never the lowest-ranked one present
at any step, and dropping it changes no step. The kept merges keep their
order (their ranks' order). The 256 byte tokens and the added tokens stay.
tfmc's tokenizer is not needed to build the fixture: the test then checks
that it gives the vectors' ids, renumbered into the fixture's.

    (llama.cpp's source: npm pack node-llama-cpp; its
    llama/gitRelease.bundle is a git bundle)
    /usr/bin/python3 test/e2e/make_qwen35_tokenizer_fixture.py LLAMA_CPP_DIR

Writes Inputs/qwen35-tokenizer/: vocab.json and merges.txt (for
write_gguf.py --gpt2-tokenizer), texts/NN.txt (one per non-empty vector)
and ids.txt (a line per text: its ids; Qwen's files add no BOS).
"""
import json
import os
import sys

from llama_vocab import read_vectors, vocab_fields, write_vectors

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "Inputs", "qwen35-tokenizer")
NORMAL = 1  # gguf-py's TokenType.NORMAL


def read_vocab(llama_cpp):
    fields, strings, numbers, _ = vocab_fields(llama_cpp, "qwen35")
    pre = fields["tokenizer.ggml.pre"]
    assert bytes(pre.parts[pre.data[0]]).decode() == "qwen35"
    merges = [tuple(m.split(" ", 1)) for m in strings("tokenizer.ggml.merges")]
    return (strings("tokenizer.ggml.tokens"),
            numbers("tokenizer.ggml.token_type"), merges)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    tokens, types, merges = read_vocab(sys.argv[1])
    texts, expected = read_vectors(sys.argv[1], "qwen35")
    ids = {token: i for i, token in enumerate(tokens)}
    made_by = {}
    for pair in merges:
        made_by.setdefault(pair[0] + pair[1], []).append(pair)

    reached = set()
    pending = [tokens[i] for want in expected for i in want]
    while pending:
        token = pending.pop()
        if token in reached:
            continue
        reached.add(token)
        for left, right in made_by.get(token, []):
            pending += [left, right]
    keep = {ids[t] for t in reached}
    keep |= {i for i, t in enumerate(tokens) if len(t) == 1}  # the bytes
    keep |= {i for i, kind in enumerate(types) if kind != NORMAL}
    kept = sorted(keep)
    renumber = {old: new for new, old in enumerate(kept)}
    sub_merges = [(a, b) for a, b in merges if a + b in reached]

    os.makedirs(os.path.join(OUT, "texts"), exist_ok=True)
    # The added tokens (<|endoftext|> onwards) go to the GGUF file through
    # write_gguf.py's token types ("<|...|>" control); none is in the texts.
    with open(os.path.join(OUT, "vocab.json"), "w", encoding="utf-8") as f:
        json.dump({tokens[i]: renumber[i] for i in kept}, f,
                  ensure_ascii=False, indent=0)
        f.write("\n")
    with open(os.path.join(OUT, "merges.txt"), "w", encoding="utf-8") as f:
        f.write("#version: 0.2\n")
        f.writelines("%s %s\n" % pair for pair in sub_merges)
    write_vectors(OUT, texts, expected, lambda want: [renumber[i] for i in want])
    print("%d of %d tokens, %d of %d merges, %d texts" %
          (len(kept), len(tokens), len(sub_merges), len(merges), len(texts)))


if __name__ == "__main__":
    main()
