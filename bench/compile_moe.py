#!/usr/bin/env python3
"""How long tfmc takes to compile a mixture of many experts, and its peak
memory: the conformance fixture of a published MoE config (its experts
and widths as published, 2 layers, random weights:
test/e2e/conformance/make_fixture.py), compiled to an executable with f32
weights as the conformance test compiles it. Each TFMC given is timed
the same way, so that two builds compare on one machine.

    compile_moe.py TFMC [TFMC...] [--model qwen3-30b-a3b] [--rounds 1]
                   [--work DIR]

Prints one row a TFMC: the median wall time, the fastest, the peak RSS
(/usr/bin/time's %M) and the executable's size.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
CONFORMANCE = os.path.join(HERE, "..", "test", "e2e", "conformance")
sys.path.insert(0, CONFORMANCE)
import make_fixture  # noqa: E402


def compile_once(tfmc, model, exe):
    """(wall seconds, peak RSS in MiB) of one compile."""
    timing = exe + ".time"
    subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", timing, tfmc,
                    model, "--weights-dtype=f32", "-q", "-o", exe],
                   check=True)
    wall, rss = open(timing).read().split()[-2:]
    return float(wall), int(rss) / 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tfmc", nargs="+")
    parser.add_argument("--model", default="qwen3-30b-a3b",
                        help="a manifest of test/e2e/conformance/Inputs")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--work")
    args = parser.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="tfm-compile-moe-")
    manifest = os.path.join(CONFORMANCE, "Inputs", args.model + ".json")
    model = os.path.join(work, args.model)
    make_fixture.write_fixture(manifest, model)
    print(f"{args.model}: {manifest}")
    print("| tfmc | wall, median | fastest | peak RSS | executable |")
    print("|---|---|---|---|---|")
    for index, tfmc in enumerate(args.tfmc):
        exe = os.path.join(work, f"model{index}")
        runs = [compile_once(tfmc, model, exe) for _ in range(args.rounds)]
        walls = [wall for wall, _ in runs]
        rss = max(peak for _, peak in runs)
        size = os.path.getsize(exe) / 2**20
        print(f"| {tfmc} | {statistics.median(walls):.1f} s | "
              f"{min(walls):.1f} s | {rss:.0f} MiB | {size:.1f} MiB |")


if __name__ == "__main__":
    main()
