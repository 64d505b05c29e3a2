#!/usr/bin/env python3
"""Compares one field of two executables' --stats JSON (the last line of
each file): prints OK and exits 0 when the first is below the second times
--ratio, else prints both and exits 1."""
import argparse
import json
import sys


def field(path, key):
    with open(path) as f:
        return json.loads(f.read().strip().splitlines()[-1])[key]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("key")
    parser.add_argument("first")
    parser.add_argument("second")
    parser.add_argument("--ratio", type=float, default=1.0)
    args = parser.parse_args()
    a, b = field(args.first, args.key), field(args.second, args.key)
    if a < b * args.ratio:
        print(f"OK: {args.key} {a} < {args.ratio} x {b}")
        return 0
    print(f"FAIL: {args.key} {a} is not below {args.ratio} x {b}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
