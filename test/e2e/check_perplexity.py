#!/usr/bin/env python3
"""Checks a compiled model's --perplexity line against the reference's
(make_perplexity_golden.py): the same tokens scored, and a perplexity at
most --max-increase percent above the reference's (and, with --tol, within
that relative difference of it either way). Stdlib only. Prints what it
found; exits 1 when a check fails."""
import argparse
import json
import sys


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("actual")
    parser.add_argument("expected")
    parser.add_argument("--max-increase", type=float, default=0.0,
                        help="percent the perplexity may exceed the reference's")
    parser.add_argument("--tol", type=float,
                        help="relative difference allowed either way")
    args = parser.parse_args()
    with open(args.actual) as f:
        actual = json.loads(f.read().strip().splitlines()[-1])
    with open(args.expected) as f:
        expected = json.load(f)
    if actual["tokens"] != expected["tokens"]:
        print(f"FAIL: {actual['tokens']} tokens scored, the reference scored "
              f"{expected['tokens']}")
        return 1
    increase = 100.0 * (actual["perplexity"] / expected["perplexity"] - 1.0)
    ok = increase <= args.max_increase
    if args.tol is not None:
        ok = ok and abs(increase) <= 100.0 * args.tol
    print(f"{'OK' if ok else 'FAIL'}: perplexity {actual['perplexity']:.4f}, "
          f"{increase:+.2f}% against the reference's "
          f"{expected['perplexity']:.4f} (limit +{args.max_increase}%)")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
