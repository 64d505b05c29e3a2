#!/usr/bin/env python3
"""How long tfmc takes to compile, and its peak memory, for each TFMC build
given (so that two builds compare on one machine, in one run):

- `gemma2`, `gpt-oss`: the families' small fixtures
  (test/e2e/families/Inputs) with --speculative, so that every entry point
  is derived (forward, prefill, decode, verify and the batched twins), as
  the speculative tests compile them;
- `gpt2`: GPT-2 small's shape, random f32 weights
  (bench/make_random_model.py);
- `qwen3-30b-a3b`: the conformance fixture of that published MoE config
  (its 128 experts and widths, 2 layers, random weights:
  test/e2e/conformance/make_fixture.py), f32 weights.

    compile_times.py TFMC [TFMC...] [--cases gemma2,gpt2] [--rounds 1]
                     [--work DIR]

Prints one row a case and TFMC: the median wall time, the fastest, the
peak RSS (/usr/bin/time's %M) and the executable's size.
"""
import argparse
import os
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
FAMILIES = os.path.join(HERE, "..", "test", "e2e", "families", "Inputs")
CONFORMANCE = os.path.join(HERE, "..", "test", "e2e", "conformance")
sys.path.insert(0, CONFORMANCE)
import make_fixture  # noqa: E402

CASES = ["gemma2", "gpt-oss", "gpt2", "qwen3-30b-a3b"]


def prepare(case, work):
    """(model path, extra tfmc flags) of a case, written under `work`."""
    if case in ("gemma2", "gpt-oss"):
        return os.path.join(FAMILIES, case), ["--speculative"]
    model = os.path.join(work, case)
    if case == "gpt2":
        if not os.path.isdir(model):
            subprocess.run([sys.executable,
                            os.path.join(HERE, "make_random_model.py"),
                            "gpt2", model], check=True)
        return model, []
    manifest = os.path.join(CONFORMANCE, "Inputs", case + ".json")
    make_fixture.write_fixture(manifest, model)
    return model, ["--weights-dtype=f32"]


def compile_once(tfmc, model, flags, exe):
    """(wall seconds, peak RSS in MiB) of one compile."""
    timing = exe + ".time"
    subprocess.run(["/usr/bin/time", "-f", "%e %M", "-o", timing, tfmc,
                    model, *flags, "-q", "-o", exe], check=True)
    wall, rss = open(timing).read().split()[-2:]
    return float(wall), int(rss) / 1024


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("tfmc", nargs="+")
    parser.add_argument("--cases", default=",".join(CASES),
                        help="comma-separated, of " + ", ".join(CASES))
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--work")
    args = parser.parse_args()
    work = args.work or tempfile.mkdtemp(prefix="tfm-compile-times-")
    os.makedirs(work, exist_ok=True)
    cases = args.cases.split(",")
    for case in cases:
        if case not in CASES:
            parser.error(f"unknown case '{case}' (known: {', '.join(CASES)})")
    print("| case | tfmc | wall, median | fastest | peak RSS | executable |")
    print("|---|---|---|---|---|---|")
    for case in cases:
        model, flags = prepare(case, work)
        for index, tfmc in enumerate(args.tfmc):
            exe = os.path.join(work, f"{case}-{index}")
            runs = [compile_once(tfmc, model, flags, exe)
                    for _ in range(args.rounds)]
            walls = [wall for wall, _ in runs]
            rss = max(peak for _, peak in runs)
            size = os.path.getsize(exe) / 2**20
            print(f"| {case} | {tfmc} | {statistics.median(walls):.1f} s | "
                  f"{min(walls):.1f} s | {rss:.0f} MiB | {size:.1f} MiB |",
                  flush=True)


if __name__ == "__main__":
    main()
