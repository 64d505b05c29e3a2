#!/usr/bin/env python3
"""Writes the inputs and golden ids of test/e2e/gemma4-tokenizer.test from
llama.cpp's own test vectors for Gemma 4's tokenizer: its
models/ggml-vocab-gemma-4.gguf (the published 262144-token vocabulary and
514906 merges) with ggml-vocab-gemma-4.gguf.inp/.out, the texts and the ids
Hugging Face's tokenizer gives them (llama.cpp's
convert_hf_to_gguf_update.py writes them with AutoTokenizer).

The vocabulary is too large to commit, so the fixture is the part of it
these texts reach. Gemma 4's BPE (llama.cpp's "gemma4": spaces spelled
"▁", text split into lines and runs of newlines, a run of newlines that is
a token taken whole, merges by rank from the characters, "<0xAB>" tokens
for characters without one) is run here on the whole vocabulary, checked
to give every vector's ids, and each merge it applies is recorded. The
fixture keeps those merges (in rank order), every token they and the ids
use, the characters of the texts, and the special and byte tokens. On it
the same merges apply, and no other: every merge it has is one of the
whole vocabulary's, and the one applied there at each step (the lowest
rank that applies) is in it. The script checks that too, and writes the
vectors' ids renumbered into the fixture's ids.

    (llama.cpp's source: npm pack node-llama-cpp; its
    llama/gitRelease.bundle is a git bundle)
    /usr/bin/python3 test/e2e/make_gemma4_tokenizer_fixture.py LLAMA_CPP_DIR

Writes Inputs/gemma4-tokenizer/: tokenizer.json (Hugging Face's shape for
Gemma 4, as transformers' GemmaTokenizer builds it: a BPE with
byte_fallback whose normalizer spells spaces "▁", a Split on " " left
nothing to split, the added tokens all special),
texts/NN.txt (one per non-empty vector) and ids.txt (a line per text: the
BOS id, then the text's ids).
"""
import json
import os
import re
import sys

from llama_vocab import read_vectors, vocab_fields, write_vectors

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "Inputs", "gemma4-tokenizer")
SPACE = "\u2581"
# llama.cpp's token types (gguf-py's TokenType).
NORMAL, CONTROL, USER_DEFINED, BYTE = 1, 3, 4, 6


def read_vocab(llama_cpp):
    fields, strings, numbers, number = vocab_fields(llama_cpp, "gemma-4")
    assert bytes(fields["tokenizer.ggml.model"].parts[
        fields["tokenizer.ggml.model"].data[0]]).decode() == "gemma4"
    merges = []
    for merge in strings("tokenizer.ggml.merges"):
        cut = merge.index(" ", 1)
        merges.append((merge[:cut], merge[cut + 1:]))
    special = {name: number("tokenizer.ggml.%s_token_id" % name)
               for name in ("bos", "eos", "unknown", "padding")}
    return (strings("tokenizer.ggml.tokens"),
            numbers("tokenizer.ggml.token_type"), merges, special)


def encode(text, ids, ranks, applied=None):
    """llama.cpp's gemma4 BPE (src/llama-vocab.cpp, llm_tokenizer_bpe with
    LLAMA_VOCAB_PRE_TYPE_GEMMA4); `applied` collects the merges made."""
    out = []
    for word in re.findall(r"[^\n]+|\n+", text.replace(" ", SPACE)):
        if set(word) == {"\n"} and word in ids:
            out.append(ids[word])
            continue
        symbols = list(word)
        while True:
            best = min(((ranks[pair], i) for i, pair in
                        enumerate(zip(symbols, symbols[1:])) if pair in ranks),
                       default=None)
            if best is None:
                break
            i = best[1]
            if applied is not None:
                applied.add((symbols[i], symbols[i + 1]))
            symbols[i:i + 2] = [symbols[i] + symbols[i + 1]]
        for symbol in symbols:
            if symbol in ids:
                out.append(ids[symbol])
            else:
                out += [ids["<0x%02X>" % b] for b in symbol.encode("utf-8")]
    return out


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    tokens, types, merges, special = read_vocab(sys.argv[1])
    texts, expected = read_vectors(sys.argv[1], "gemma-4")
    ids = {token: i for i, token in enumerate(tokens)}
    ranks = {pair: rank for rank, pair in enumerate(merges)}
    applied = set()
    for text, want in zip(texts, expected):
        got = encode(text, ids, ranks, applied)
        assert got == want, (text, got, want)

    keep = {i for i, kind in enumerate(types) if kind != NORMAL}
    keep |= set(special.values())
    for want in expected:
        keep |= set(want)
    for left, right in applied:
        keep |= {ids[left], ids[right], ids[left + right]}
    for text in texts:
        keep |= {ids[c] for c in text.replace(" ", SPACE) if c in ids}
    kept = sorted(keep)
    renumber = {old: new for new, old in enumerate(kept)}
    sub_tokens = [tokens[i] for i in kept]
    sub_merges = [pair for pair in merges if pair in applied]

    sub_ids = {token: i for i, token in enumerate(sub_tokens)}
    sub_ranks = {pair: rank for rank, pair in enumerate(sub_merges)}
    for text, want in zip(texts, expected):
        assert encode(text, sub_ids, sub_ranks) == [renumber[i] for i in want]

    added = [{"id": renumber[i], "content": tokens[i], "single_word": False,
              "lstrip": False, "rstrip": False, "normalized": False,
              "special": True}
             for i in kept if types[i] in (CONTROL, USER_DEFINED)]
    tokenizer = {
        "version": "1.0",
        "added_tokens": added,
        "normalizer": {"type": "Replace", "pattern": {"String": " "},
                       "content": SPACE},
        "pre_tokenizer": {"type": "Split", "pattern": {"String": " "},
                          "behavior": "MergedWithPrevious", "invert": False},
        "decoder": {"type": "Sequence", "decoders": [
            {"type": "Replace", "pattern": {"String": SPACE},
             "content": " "},
            {"type": "ByteFallback"}, {"type": "Fuse"}]},
        "model": {"type": "BPE", "dropout": None,
                  "unk_token": tokens[special["unknown"]],
                  "continuing_subword_prefix": None,
                  "end_of_word_suffix": None, "fuse_unk": True,
                  "byte_fallback": True, "ignore_merges": False,
                  "vocab": {t: i for i, t in enumerate(sub_tokens)},
                  "merges": [[left, right] for left, right in sub_merges]},
    }
    os.makedirs(os.path.join(OUT, "texts"), exist_ok=True)
    with open(os.path.join(OUT, "tokenizer.json"), "w",
              encoding="utf-8") as f:
        json.dump(tokenizer, f, ensure_ascii=False, indent=1)
        f.write("\n")
    bos = renumber[special["bos"]]
    write_vectors(OUT, texts, expected,
                  lambda want: [bos] + [renumber[i] for i in want])
    print("%d of %d tokens, %d of %d merges, %d texts" %
          (len(sub_tokens), len(tokens), len(sub_merges), len(merges),
           len(texts)))


if __name__ == "__main__":
    main()
