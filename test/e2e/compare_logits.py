#!/usr/bin/env python3
"""Compares two little-endian f32 files element by element (stdlib only, so
that CI needs no NumPy): exits 1 when the max abs difference exceeds --tol, the
sizes differ, or either file holds a NaN or an infinity (a NaN compares
false with everything, so it would otherwise slip past the tolerance),
printing where, so that a failure says by how much.
--expected-rows picks rows of a [rows, --row-size] expected file;
--same-argmax also requires each row's largest value at the same index
(greedy tokens unchanged; rows of --row-size values); --min-cosine each
row's cosine similarity to its expected row at least that (embeddings of
a narrower datapath)."""
import argparse
import array
import math
import sys


def load(path):
    values = array.array("f")
    with open(path, "rb") as f:
        values.frombytes(f.read())
    if sys.byteorder != "little":
        values.byteswap()
    return values


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("actual")
    parser.add_argument("expected")
    parser.add_argument("--tol", type=float, default=1e-4)
    parser.add_argument("--expected-rows", metavar="START:END",
                        help="compare with rows [START, END) of expected only")
    parser.add_argument("--row-size", type=int,
                        help="values per row (the vocabulary), for "
                        "--expected-rows and --same-argmax")
    parser.add_argument("--same-argmax", action="store_true",
                        help="each row's largest value at the same index")
    parser.add_argument("--min-cosine", type=float,
                        help="each row's cosine similarity at least this")
    args = parser.parse_args()
    actual, expected = load(args.actual), load(args.expected)
    if args.expected_rows:
        start, end = (int(x) for x in args.expected_rows.split(":"))
        expected = expected[start * args.row_size:end * args.row_size]
    if len(actual) != len(expected):
        print(f"size mismatch: {len(actual)} values, expected {len(expected)}")
        return 1
    for name, values in (("actual", actual), ("expected", expected)):
        bad = next((i for i, v in enumerate(values) if not math.isfinite(v)), None)
        if bad is not None:
            print(f"MISMATCH: {name} value {bad} is {values[bad]} (not finite)")
            return 1
    if args.same_argmax:
        size = args.row_size
        if not size or len(actual) % size:
            print(f"--same-argmax needs --row-size dividing {len(actual)} values")
            return 1
        for row in range(len(actual) // size):
            span = range(row * size, (row + 1) * size)
            got = max(span, key=lambda i: actual[i]) - row * size
            want = max(span, key=lambda i: expected[i]) - row * size
            if got != want:
                print(f"MISMATCH: row {row}'s largest value is at {got}, "
                      f"expected at {want}")
                return 1
    if args.min_cosine is not None:
        size = args.row_size
        if not size or len(actual) % size:
            print(f"--min-cosine needs --row-size dividing {len(actual)} values")
            return 1
        least = min(cosine(actual[row * size:(row + 1) * size],
                           expected[row * size:(row + 1) * size])
                    for row in range(len(actual) // size))
        verdict = "OK" if least >= args.min_cosine else "MISMATCH"
        print(f"{verdict}: least row cosine {least:.6f} over "
              f"{len(actual) // size} rows (at least {args.min_cosine:g})")
        if least < args.min_cosine:
            return 1
    worst = 0.0
    for a, e in zip(actual, expected):
        worst = max(worst, abs(a - e))
    verdict = "OK" if worst <= args.tol else "MISMATCH"
    print(f"{verdict}: max abs error {worst:.3g} over {len(actual)} values (tol {args.tol:g})")
    return 0 if worst <= args.tol else 1


def cosine(a, b):
    dot = sum(x * y for x, y in zip(a, b))
    norms = math.sqrt(sum(x * x for x in a)) * math.sqrt(sum(y * y for y in b))
    if norms:
        return dot / norms
    # A zero row is like only another zero row.
    return 1.0 if not any(a) and not any(b) else 0.0


if __name__ == "__main__":
    sys.exit(main())
