#!/usr/bin/env python3
"""bench/mla_prefill_forms.py: multi-head latent attention's two forms in
compiled models, for the prefills where tfm-expand-latent-attention chooses
between them (issue 73, part D).

One Moonlight-shaped model (bench/make_random_model.py moonlight: 16 heads,
latent 512, keys 128 + 64, values 128, 4 layers, int8 weights) compiled
twice: as tfmc builds it (the expanded form where its cost model says it
costs less) and with --no-expand-latent-attention (always absorbed). Both
run, round robin for --rounds rounds, on --threads threads:
* fresh prompts of --fresh lengths, after one untimed prefill of the same
  prompt (--warmup 1: the buffers in place, as a server's are);
* chunks: the last N tokens of a 4096-token prompt after the session of
  the rest (--prompt-cache), the case where a few hundred queries over
  thousands of cached keys may favour the absorbed form.
Prints prefill tokens/s per build and the ratio, with which form the
default build's run-time choice takes.

    /usr/bin/python3 bench/mla_prefill_forms.py [--model DIR] [--rounds 2]
"""
import argparse
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TFMC = os.path.join(ROOT, "build", "bin", "tfmc")
HEADS, LATENT, NOPE, ROPE, VALUE = 16, 512, 128, 64, 128
WEIGHT = 2  # ExpandLatentAttention.cpp's kExpandedPairWeight


def expanded_is_chosen(queries, keys):
    """The run-time choice tfm-expand-latent-attention compiles."""
    pairs = queries * keys - queries * (queries - 1) // 2
    saving = 2 * LATENT + ROPE - WEIGHT * (NOPE + ROPE + VALUE)
    return saving * pairs >= LATENT * (NOPE + VALUE) * (keys - queries)


def prefill_rate(binary, ids, threads, session=None):
    env = dict(os.environ, TFM_NUM_THREADS=str(threads))
    command = [binary, "--tokens", " ".join(map(str, ids)), "-n", "1",
               "--warmup", "1", "--stats"]
    if session:
        command += ["--prompt-cache", session]
    run = subprocess.run(command, env=env, capture_output=True, text=True,
                         check=True)
    return float(re.search(r'"prefill_tokens_per_s": ([0-9.]+)',
                           run.stderr).group(1))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="a Moonlight-shaped folder (default: "
                        "written with make_random_model.py)")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    parser.add_argument("--fresh", default="512,2048,4096")
    parser.add_argument("--chunks", default="256,512",
                        help="new tokens after 4096 - N cached")
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="mla-forms-")
    model = args.model or os.path.join(work, "moonlight")
    if not args.model:
        subprocess.run([sys.executable, os.path.join(HERE, "make_random_model.py"),
                        "moonlight", model], check=True)
    builds = {}
    for name, flags in (("chosen", []),
                        ("absorbed", ["--no-expand-latent-attention"])):
        builds[name] = os.path.join(work, name)
        subprocess.run([TFMC, model, "--weights-dtype", "int8", "-q", "-o",
                        builds[name]] + flags, check=True)
    rng = random.Random(1)
    prompt = [rng.randrange(3, 32000) for _ in range(4096)]
    cases = [(int(n), 0) for n in args.fresh.split(",")]
    cases += [(int(n), 4096 - int(n)) for n in args.chunks.split(",")]
    rates = {(case, name): [] for case in cases for name in builds}
    for _ in range(args.rounds):
        for case in cases:
            queries, cached = case
            ids = prompt[:queries + cached]
            for name, binary in builds.items():
                session = None
                if cached:
                    session = os.path.join(work, name + ".session")
                    if os.path.exists(session):
                        os.remove(session)
                    subprocess.run([binary, "--tokens",
                                    " ".join(map(str, prompt[:cached])),
                                    "-n", "0", "--prompt-cache", session],
                                   check=True, capture_output=True)
                rates[(case, name)].append(
                    prefill_rate(binary, ids, args.threads, session))
    print(f"Moonlight-shaped, 4 layers, int8 weights, {args.threads} threads, "
          f"median of {args.rounds} rounds (prefill tokens/s)\n")
    print("| queries | cached keys | chosen form | tfmc (chosen) | "
          "absorbed only | chosen / absorbed |")
    print("|---|---|---|---|---|---|")
    for case in cases:
        queries, cached = case
        chosen = statistics.median(rates[(case, "chosen")])
        absorbed = statistics.median(rates[(case, "absorbed")])
        form = ("expanded" if expanded_is_chosen(queries, queries + cached)
                else "absorbed")
        print(f"| {queries} | {cached} | {form} | {chosen:.1f} | "
              f"{absorbed:.1f} | {chosen / absorbed:.2f} |")


if __name__ == "__main__":
    main()
