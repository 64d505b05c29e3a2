"""Checks --stats of a model split over ranks against the same model's in
one process: each rank maps at most its 1/N of the split weights plus the
replicated ones, and the ranks ran the same all-reduces (tensor
parallelism) or, with --pipeline, none, and stage transfers as their
stages make them (pipeline stages: the first stage, rank 1, sends its rows;
the last, rank 0, receives them; each stage between does both). With
--pipeline and --tensor-ranks N, each stage is a group of N ranks: group g
the ranks [g·N, (g+1)·N), whose all-reduces are the group's, and each maps
at most 1/N of what the same model's rank g maps in stages alone
(--stage-stats). Prints
each rank's own work (its time in the model's code less its waits for the
others) against the mean: how evenly the split shares the work."""
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
    parser.add_argument("--tensor-ranks", type=int, default=1,
                        help="tensor-parallel ranks a pipeline stage")
    parser.add_argument("--stage-stats",
                        help="with --tensor-ranks: stderr of the model's "
                        "--stats split into the same stages alone")
    args = parser.parse_args()
    split, whole = last_json(args.split), last_json(args.whole)
    ranks = split["ranks"]
    n = len(ranks)
    replicated = split["replicated_weights_bytes"]
    total = whole["weights_bytes"]
    # Each weight starts 64-byte aligned in a blob: allow that per weight.
    bound = (total - replicated) / n + replicated + 64 * 64
    stages = last_json(args.stage_stats)["ranks"] if args.stage_stats else None
    for r in ranks:
        if stages:
            # Its stage's weights (as stages alone map them), split N ways
            # where tensor parallelism splits them.
            stage = stages[r["rank"] // args.tensor_ranks]["weights_bytes"]
            bound = (stage - replicated) / args.tensor_ranks + replicated + \
                64 * 64
        print(f"rank {r['rank']}: {r['weights_bytes']} weight bytes of "
              f"{total} ({replicated} replicated), bound {bound:.0f}, "
              f"{r['all_reduces']} all-reduces, "
              f"{r['stage_transfers']} stage transfers")
        if r["weights_bytes"] > bound:
            sys.exit(f"FAIL: rank {r['rank']} maps more than its part")
        if not args.pipeline:
            if r["all_reduces"] != ranks[0]["all_reduces"] or not r["all_reduces"]:
                sys.exit("FAIL: the ranks ran different all_reduces")
            continue
        # A call's transfers: one on the first and last stages, two
        # between.
        group = r["rank"] // args.tensor_ranks
        ends = group in (0, 1)
        expected = ranks[0]["stage_transfers"] * (1 if ends else 2)
        if r["stage_transfers"] != expected or not expected:
            sys.exit(f"FAIL: rank {r['rank']} made {r['stage_transfers']} "
                     f"stage transfers, expected {expected}")
        lead = ranks[group * args.tensor_ranks]
        if args.tensor_ranks == 1 and r["all_reduces"]:
            sys.exit("FAIL: pipeline stages ran all-reduces")
        if args.tensor_ranks > 1 and (not r["all_reduces"] or
                                      r["all_reduces"] != lead["all_reduces"]):
            sys.exit(f"FAIL: rank {r['rank']} ran other all-reduces than "
                     f"its stage's rank {lead['rank']}")
    # Each rank's own work: its time in the model's code less its waits
    # for the others (all-reduces, or the stage before). The slowest
    # rank's against the mean is what an uneven split costs.
    busy = [r["call_seconds"] - r["all_reduce_seconds"] -
            (r["stage_seconds"] if args.pipeline else 0) for r in ranks]
    if min(busy) <= 0:
        sys.exit(f"FAIL: a rank's own work is not positive: {busy}")
    mean = sum(busy) / n
    print("own work: " + ", ".join(
        f"rank {r['rank']} {b / mean:.2f}" for r, b in zip(ranks, busy)) +
        f" of the mean; slowest {max(busy) / mean:.2f}x")
    print(f"OK: {n} ranks each map their part")


if __name__ == "__main__":
    main()
