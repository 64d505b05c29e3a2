#!/usr/bin/env python3
"""Hostile input to the Python package (hostile-input.test): a closed
model, a library cut inside its ELF image, engine options no block fits,
ids that do not fit 32 bits or are not integers, text holding NUL. Each
must raise TfmcError saying what and where, never crash, hang or answer
wrongly. Prints one line per check for FileCheck.

    check_hostile.py LIBRARY WORK

LIBRARY: the sorter example (tfmc --emit=lib), a llama with a tokenizer
and 48 positions.
"""
import os
import re
import shutil
import struct
import sys

import numpy as np

import tfmc


def attempt(label, action):
    try:
        result = action()
        print(f"{label}: no error: {result!r}")
    except tfmc.TfmcError as e:
        print(f"{label}: {e}")


def image_end(path):
    """Where a 64-bit ELF file's image ends: its section headers, last."""
    with open(path, "rb") as f:
        header = f.read(64)
    shoff, = struct.unpack_from("<Q", header, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", header, 0x3A)
    return shoff + shentsize * shnum


def closed_model(library):
    m = tfmc.load(library)
    m.close()
    m.close()  # twice is fine
    for label, action in [
            ("generate", lambda: m.generate("6 2 9 4 >", max_tokens=4)),
            ("stream", lambda: m.generate("6 2 >", max_tokens=4, stream=True)),
            ("tokenize", lambda: m.tokenize("6 2")),
            ("detokenize", lambda: m.detokenize([3, 4])),
            ("call", lambda: m.call("forward", [1, 3])),
            ("engine", lambda: tfmc.Engine(m))]:
        attempt("closed, " + label, action)
    # A generator made inside the block, consumed after it.
    with tfmc.load(library) as m:
        pending = m.generate("6 2 9 4 >", max_tokens=8, stream=True)
    attempt("closed, pending stream", lambda: list(pending))
    # Closed while its stream runs: the pieces so far, then the error (or
    # the whole text, where it was done first); never a crash.
    m = tfmc.load(library)
    whole = m.generate("6 2 9 4 >", max_tokens=12)
    running = m.generate("6 2 9 4 >", max_tokens=12, stream=True)
    pieces = [next(running)]
    m.close()
    try:
        pieces += list(running)
        print("closed while streaming: whole text", "".join(pieces) == whole)
    except tfmc.TfmcError as e:
        print("closed while streaming: a prefix of the text",
              whole.startswith("".join(pieces)), "then:", e)
    # Engines are closed with their model, and by themselves.
    m = tfmc.load(library)
    engine = tfmc.Engine(m, max_sequences=2)
    engine.submit("6 2 >", max_tokens=4)
    engine.step()
    m.close()
    attempt("engine of a closed model, step", engine.step)
    attempt("engine of a closed model, submit",
            lambda: engine.submit("6 2 >", max_tokens=4))
    m = tfmc.load(library)
    engine = tfmc.Engine(m)
    engine.close()
    attempt("closed engine, stats", engine.stats)
    m.close()


def truncated_library(library, work):
    """Cuts inside the image, from its ELF header to its section headers,
    and at its end (into the weights appended after it)."""
    size, end = os.path.getsize(library), image_end(library)
    print("image inside the file:", 0 < end < size)
    for name, cut in [("40", 40), ("4096", 4096), ("a quarter", end // 4),
                      ("a half", end // 2), ("the end - 1", end - 1),
                      ("the end", end)]:
        path = os.path.join(work, f"libcut{cut}.so")
        shutil.copyfile(library, path)
        os.truncate(path, cut)
        try:
            tfmc.load(path, symbol="sorter_model")
            print(f"cut at {name}: loaded")
        except tfmc.TfmcError as e:
            message = re.sub(rf"\b{cut}\b", "SIZE",
                             re.sub(rf"\b{end}\b", "END",
                                    str(e).replace(path, "CUT")))
            print(f"cut at {name}: {message}")


def main():
    library, work = sys.argv[1:3]
    closed_model(library)
    truncated_library(library, work)

    m = tfmc.load(library)
    vocab, context = m.description["vocab_size"], m.description["max_context"]
    print("sorter:", vocab, "ids,", context, "positions")
    for label, action in [
            # Blocks past the context: the engine's search spun forever.
            ("block_positions past the context",
             lambda: tfmc.Engine(m, block_positions=1000)),
            ("block_positions past 32 bits",
             lambda: tfmc.Engine(m, block_positions=2**32 + 8)),
            ("max_sequences negative",
             lambda: tfmc.Engine(m, max_sequences=-1)),
            # Ids ctypes or NumPy would have wrapped or truncated.
            ("generate, id past 32 bits",
             lambda: m.generate([1, 2**33 + 5], max_tokens=2)),
            ("generate, negative id", lambda: m.generate([1, -3])),
            ("generate, float id", lambda: m.generate([1, 2.0])),
            ("submit, id past 32 bits",
             lambda: tfmc.Engine(m).submit([2**33 + 1], max_tokens=2)),
            ("submit, max_tokens past 64 bits",
             lambda: tfmc.Engine(m).submit([1, 3], max_tokens=2**64 + 1)),
            ("detokenize, id past 32 bits",
             lambda: m.detokenize([3, 2**33 + 5])),
            ("call, float ids", lambda: m.call("forward", [1.9, 2.7])),
            ("call, int64 past int32",
             lambda: m.call("forward", np.array([1, 2**40 + 3], np.int64))),
            ("call, uint64 past int32",
             lambda: m.call("forward", np.array([1, 2**63], np.uint64))),
            ("call, bools", lambda: m.call("forward", [True, False])),
            ("call, strings", lambda: m.call("forward", ["1", "3"])),
            ("generate, seed past 64 bits",
             lambda: m.generate("6 2 >", seed=2**64)),
            # NUL ends a C string: the text after it was dropped silently.
            ("prompt with NUL", lambda: m.generate("6 2\x00 9 >")),
            ("stop string with NUL",
             lambda: m.generate("6 2 >", stop=["9", "a\0b"])),
            ("tokenize with NUL", lambda: m.tokenize("6\x002")),
            ("submit with NUL",
             lambda: tfmc.Engine(m).submit("6 2\x00", max_tokens=2)),
            ("lone surrogate", lambda: m.tokenize("6 \ud800")),
            ("audio path with NUL", lambda: m.read_audio("a.wav\x00.txt"))]:
        attempt(label, action)
    # What is fine stays fine: other integer widths in range, a string stop.
    logits = m.call("forward", np.array([1, 3, 4], np.uint8))["logits"]
    print("call, uint8 ids:", logits.shape,
          np.array_equal(logits, m.call("forward", [1, 3, 4])["logits"]))
    print("stop as one string:",
          m.generate("6 2 9 4 >", max_tokens=12, stop="9") ==
          m.generate("6 2 9 4 >", max_tokens=12, stop=["9"]))
    print("engine, blocks of the whole context:",
          tfmc.Engine(m, block_positions=context).stats()[
              "kv_block_positions"])
    m.close()


main()
