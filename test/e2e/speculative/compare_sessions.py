#!/usr/bin/env python3
"""Compares two session files (tfm_session_save, runtime/core/session_file.c)
of one model: the same tokens, length and cache rows in use, neither stale,
and every cached row, ring row and recurrent state element within --tol of
the other's (f32; an int8 cache's rows dequantized from their codes and
scale). A speculative
run's session after its rejected drafts were dropped against a run without
drafts: a ring row left holding a rejected draft, or a state that folded
one in, differs by far more than rounding. Prints "OK: ..." or the first difference, and exits 1 on one.

    compare_sessions.py A B [--tol 1e-3]
"""
import argparse
import struct
import sys

import numpy

HEADER = struct.Struct("<8sq64s" + "q" * 17)
DTYPES = {0: numpy.float32, 3: numpy.int8, 4: numpy.uint16, 5: numpy.float16}


def read(path):
    data = open(path, "rb").read()
    fields = HEADER.unpack_from(data)
    (magic, version, name, vocab, capacity, c0, c1, c2, c3, c4, dtype,
     r0, r1, r2, r3, r4, state, length, used, stale) = fields
    if magic != b"TFMSESS\n":
        sys.exit(f"{path}: not a session file")
    at = HEADER.size
    tokens = numpy.frombuffer(data, numpy.int32, length, at)
    at += 4 * length
    element = numpy.dtype(DTYPES[dtype]).itemsize
    row = c3 * c4 * element  # one position of one plane
    cache = numpy.frombuffer(data, numpy.uint8, c0 * c1 * used * row, at)
    at += cache.size
    ring_bytes = r0 * r1 * r2 * r3 * r4 * element
    rings = numpy.frombuffer(data, numpy.uint8, ring_bytes, at)
    at += ring_bytes
    states = numpy.frombuffer(data, numpy.float32, state, at)
    return dict(length=length, used=used, stale=stale, tokens=tokens,
                dtype=dtype, kv_heads=c3, width=c4, cache=cache,
                rings=rings, ring_shape=(r0, r1, r2, r3, r4), states=states)


def values(raw, dtype, width):
    """The rows' values as f32 (int8 rows: head_dim codes, then an f32
    scale, `width` bytes a row)."""
    if dtype == 0:
        return raw.view(numpy.float32)
    if dtype == 5:
        return raw.view(numpy.float16).astype(numpy.float32)
    if dtype == 4:
        return (raw.view(numpy.uint16).astype(numpy.uint32) << 16).view(
            numpy.float32)
    rows = raw.reshape(-1, width)
    codes = rows[:, :width - 4].view(numpy.int8).astype(numpy.float32)
    scales = rows[:, width - 4:].copy().view(numpy.float32)
    return (codes * scales).reshape(-1)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("a")
    parser.add_argument("b")
    parser.add_argument("--tol", type=float, default=1e-3)
    args = parser.parse_args()
    a, b = read(args.a), read(args.b)
    for key in ("length", "used", "stale", "dtype", "ring_shape"):
        if a[key] != b[key]:
            sys.exit(f"DIFFERENT: {key} {a[key]} and {b[key]}")
    if a["stale"]:
        sys.exit("DIFFERENT: both sessions are stale (nothing cached to "
                 "compare)")
    if not numpy.array_equal(a["tokens"], b["tokens"]):
        sys.exit("DIFFERENT: tokens")
    worst = 0.0
    # Gemma 4's rings are rows of their own width.
    for part, width in (("cache", a["width"]), ("rings", a["ring_shape"][4])):
        x = values(a[part], a["dtype"], width)
        y = values(b[part], b["dtype"], width)
        if x.size:
            error = float(numpy.max(numpy.abs(x - y)))
            if not error <= args.tol:
                sys.exit(f"DIFFERENT: {part} rows differ by {error:.3g}")
            worst = max(worst, error)
    if a["states"].size:
        error = float(numpy.max(numpy.abs(a["states"] - b["states"])))
        if not error <= args.tol:
            sys.exit(f"DIFFERENT: recurrent states differ by {error:.3g}")
        worst = max(worst, error)
    print(f"OK: {a['length']} positions, cache, {a['ring_shape'][0]} rings "
          f"and {a['states'].size} state elements within {worst:.2g}")


main()
