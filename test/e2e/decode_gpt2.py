#!/usr/bin/env python3
"""Decodes GPT-2 token ids with a vocab.json, as Hugging Face would (stdlib
only): undoes the byte-to-unicode spelling, stops at --eos. The reference
for the executables' text output."""
import argparse
import json
import sys


def unicode_to_bytes():
    bs = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1))
          + list(range(ord("®"), ord("ÿ") + 1)))
    cs, n = bs[:], 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {chr(c): b for b, c in zip(bs, cs)}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("vocab")
    parser.add_argument("ids_file")
    parser.add_argument("--eos", type=int, default=-1)
    args = parser.parse_args()
    with open(args.vocab, encoding="utf-8") as f:
        spelling = {i: s for s, i in json.load(f).items()}
    table = unicode_to_bytes()
    out = bytearray()
    for token in open(args.ids_file).read().split():
        if int(token) == args.eos:
            break
        out += bytes(table[c] for c in spelling[int(token)])
    sys.stdout.buffer.write(bytes(out) + b"\n")


if __name__ == "__main__":
    main()
