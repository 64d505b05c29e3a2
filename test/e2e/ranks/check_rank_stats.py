"""Checks --stats of a model split over ranks against the same model's in
one process: each rank maps at most its 1/N of the split weights plus the
replicated ones, and the ranks ran the same all-reduces (tensor
parallelism) or, with --pipeline, none and as many stage transfers each
(pipeline stages: a stage receives its rows and sends its own; rank 0
sends its rows and receives the logits)."""
import argparse
import json
import sys


def last_json(path):
    with open(path) as f:
        lines = [line for line in f if line.startswith("{")]
    return json.loads(lines[-1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("split", help="stderr of the split model's --stats")
    parser.add_argument("whole", help="stderr of the one-process model's")
    parser.add_argument("--pipeline", action="store_true",
                        help="split into pipeline stages")
    args = parser.parse_args()
    split, whole = last_json(args.split), last_json(args.whole)
    ranks = split["ranks"]
    n = len(ranks)
    replicated = split["replicated_weights_bytes"]
    total = whole["weights_bytes"]
    # Each weight starts 64-byte aligned in a blob: allow that per weight.
    bound = (total - replicated) / n + replicated + 64 * 64
    for r in ranks:
        print(f"rank {r['rank']}: {r['weights_bytes']} weight bytes of "
              f"{total} ({replicated} replicated), bound {bound:.0f}, "
              f"{r['all_reduces']} all-reduces, "
              f"{r['stage_transfers']} stage transfers")
        if r["weights_bytes"] > bound:
            sys.exit(f"FAIL: rank {r['rank']} maps more than its part")
        kind = "stage_transfers" if args.pipeline else "all_reduces"
        if r[kind] != ranks[0][kind] or not r[kind]:
            sys.exit(f"FAIL: the ranks ran different {kind}")
        if args.pipeline and r["all_reduces"]:
            sys.exit("FAIL: pipeline stages ran all-reduces")
    print(f"OK: {n} ranks each map their part")


if __name__ == "__main__":
    main()
