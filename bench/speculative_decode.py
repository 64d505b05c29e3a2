#!/usr/bin/env python3
"""Speculative decoding on the 1.1B shape (TinyLlama-1.1B's widths, random
weights from make_random_model.py): plain decode against the same model
with drafts, each figure the median of --rounds runs of a fresh process.

    speculative_decode.py --work DIR [--tokens 128] [--targets bf16,f32]
                          [--drafts 2,4,6,8] [--rounds 3]

For each target weight format (--targets), one executable compiled with
--speculative, and the same checkpoint at --weights-dtype int4 as its own
draft (`--draft libdraft.so`, "self-speculation"):
  plain        the model alone, greedy;
  own text     the int4 draft drafting, with the text teacher-forced to
               the int4 model's own greedy continuation: the drafts then
               agree as often as int4 guesses its own text after the
               target's prefix (near-ties aside, always), which is what a
               trained model's agreement is made of. Random weights make
               no text worth agreeing on, so this stands in for it;
  free         the same draft, greedy, on the random model's own text:
               int4 rarely agrees with a random model (near-ties
               everywhere), so this is the cost of drafts that fail;
  lookup edit  --lookup-ngram 3 with no draft model, the text forced to
               a 200-token "file" from the prompt rewritten with three
               tokens changed, as a code edit repeats its input.
Each row: decode tokens/s, drafted and accepted tokens, the acceptance
rate, and the speed-up against plain. The draft's own decode rate is
printed first: speculation pays when the draft costs a small part of a
step (int4 reads 29% of bf16's bytes and 15% of f32's).
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TFMC = os.path.join(ROOT, "build", "bin", "tfmc")
PROMPT = [1, 450, 4996, 17354, 1701, 29916, 975, 278, 17366, 11203]


def run(cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True)


def stats_of(stderr):
    return json.loads([line for line in stderr.splitlines()
                       if line.startswith("{")][-1])


def timed(exe, args, rounds):
    """Median decode tokens/s over `rounds` runs, with the counts."""
    rates, stats = [], None
    for _ in range(rounds):
        stats = stats_of(run([exe, "--stats", "--warmup", "1"] + args).stderr)
        rates.append(stats["decode_tokens_per_s"])
    return statistics.median(rates), stats


def ids_text(ids):
    return " ".join(str(i) for i in ids)


def build(work, target_dtype):
    model = os.path.join(work, "tinyllama")
    if not os.path.exists(os.path.join(model, "model.safetensors")):
        run(["/usr/bin/python3", os.path.join(HERE, "make_random_model.py"),
             "tinyllama", model, "--dtype", "bf16"])
    target = os.path.join(work, f"target-{target_dtype}")
    if not os.path.exists(target):
        run([TFMC, model, "--speculative", "--weights-dtype", target_dtype,
             "--max-context", "1024", "-q", "-o", target])
    draft_lib = os.path.join(work, "libdraft.so")
    if not os.path.exists(draft_lib):
        run([TFMC, model, "--weights-dtype", "int4", "--max-context", "1024",
             "--emit=lib", "-q", "-o", draft_lib])
    draft_exe = os.path.join(work, "draft")
    if not os.path.exists(draft_exe):
        run([TFMC, model, "--weights-dtype", "int4", "--max-context", "1024",
             "-q", "-o", draft_exe])
    return target, draft_lib, draft_exe


def row(name, rate, stats, plain):
    drafted, accepted = stats["drafted_tokens"], stats["accepted_tokens"]
    rate_text = f"{accepted / drafted:6.0%}" if drafted else "     -"
    print(f"  {name:<22} {rate:7.2f} tok/s  drafted {drafted:4d}  "
          f"accepted {accepted:4d} {rate_text}  x{rate / plain:4.2f}",
          flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", required=True)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--targets", default="bf16,f32")
    parser.add_argument("--drafts", default="2,4,6,8")
    parser.add_argument("--rounds", type=int, default=3)
    a = parser.parse_args()
    os.makedirs(a.work, exist_ok=True)
    prompt = ["--tokens", ids_text(PROMPT)]
    lengths = [int(k) for k in a.drafts.split(",")]
    rng = random.Random(7)
    file_ids = [rng.randrange(3, 32000) for _ in range(200)]
    edited = list(file_ids)
    for at in (40, 110, 170):
        edited[at] = (edited[at] + 1) % 32000
    print(f"speculative_decode.py: {a.tokens} tokens, {a.rounds} rounds, "
          f"{os.cpu_count()} CPUs", flush=True)
    for dtype in a.targets.split(","):
        target, draft_lib, draft_exe = build(a.work, dtype)
        own = run([draft_exe, "--print-ids", "-n", str(a.tokens),
                   "--ignore-eos"] + prompt).stdout.split()
        forced = ["--force-tokens", " ".join(own)]
        draft_rate, _ = timed(draft_exe, prompt + ["-n", str(a.tokens),
                                                   "--ignore-eos"], a.rounds)
        print(f"target {dtype}, draft int4 alone {draft_rate:.2f} tok/s",
              flush=True)
        plain, stats = timed(target, prompt + forced, a.rounds)
        row("plain", plain, stats, plain)
        for k in lengths:
            rate, stats = timed(target, prompt + forced + [
                "--draft", draft_lib, "--draft-max", str(k),
                "--draft-p-min", "0"], a.rounds)
            row(f"own text, k={k}", rate, stats, plain)
        for k in lengths[:2]:
            rate, stats = timed(target, prompt + [
                "-n", str(a.tokens), "--ignore-eos", "--draft", draft_lib,
                "--draft-max", str(k), "--draft-p-min", "0"], a.rounds)
            row(f"free, k={k}", rate, stats, plain)
        edit_args = ["--tokens", ids_text(file_ids), "--force-tokens",
                     ids_text(edited)]
        edit_plain, stats = timed(target, edit_args, a.rounds)
        row("edit, plain", edit_plain, stats, edit_plain)
        for k in lengths:
            rate, stats = timed(target, edit_args + [
                "--lookup-ngram", "3", "--draft-max", str(k)], a.rounds)
            row(f"edit lookup, k={k}", rate, stats, edit_plain)
    return 0


if __name__ == "__main__":
    sys.exit(main())
