#!/usr/bin/env python3
"""Compares the executable's text-image scores (lines "  SCORE  logit LOGIT
TEXT" under an image's name) with a golden file of "SCORE  logit LOGIT
TEXT" lines, in order: each score and logit within TOL (1e-4).

    compare_scores.py GOT GOLDEN [--tol TOL]
"""
import argparse
import sys


def parse(path):
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            fields = line.split(None, 3)
            if len(fields) == 4 and fields[1] == "logit":
                rows.append((float(fields[0]), float(fields[2]),
                             fields[3].rstrip("\n")))
    return rows


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("got")
    parser.add_argument("golden")
    parser.add_argument("--tol", type=float, default=1e-4)
    args = parser.parse_args()
    got, golden = parse(args.got), parse(args.golden)
    equal = 0
    for (score, logit, text), (want_score, want_logit, want_text) in zip(
            got, golden):
        if (text == want_text and abs(score - want_score) <= args.tol and
                abs(logit - want_logit) <= args.tol):
            equal += 1
        else:
            print("DIFFERS: %s: %.4f logit %.4f, golden %.4f logit %.4f (%s)"
                  % (text, score, logit, want_score, want_logit, want_text))
    print("scores equal within %g: %d of %d" % (args.tol, equal, len(golden)))
    return 0 if equal == len(golden) == len(got) else 1


if __name__ == "__main__":
    sys.exit(main())
