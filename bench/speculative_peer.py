#!/usr/bin/env python3
"""Speculative decoding against llama.cpp's llama-speculative on the same
GGUF files: the 1.1B shape (TinyLlama's widths, random weights from
make_random_model.py) as a BF16 target, with drafts of the same weights
at Q8_0 (which agrees with the target often) and Q4_0 (rarely), written by
llama.cpp's gguf-py and llama-quantize. Each engine runs greedy, plain and
with each draft (at most --draft-max drafts a step, no probability
cut-off), its decode tokens/s the median of --rounds fresh processes,
round robin; acceptance as each reports it.

    speculative_peer.py --llama-cpp BUILD_DIR --work DIR [--tokens 128]
                        [--draft-max 4] [--rounds 2] [--threads 2]

tfmc compiles the target GGUF with --speculative and each draft with
--emit=lib (`--draft lib.so`); llama.cpp runs llama-bench (-p 0) for its
plain decode and llama-speculative (-md) for the drafts. The random
weights' end token is one they are unlikely to choose (llama-speculative
cannot ignore it); tfmc runs with --ignore-eos.
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
TFMC = os.path.join(ROOT, "build", "bin", "tfmc")
sys.path.insert(0, HERE)
from compare_weight_formats import write_gguf  # noqa: E402
from speculative_decode import PROMPT, ids_text, stats_of  # noqa: E402

EOS = 31999


def run(cmd, env=None):
    # The random text may be no UTF-8 (byte tokens).
    return subprocess.run(cmd, check=True, capture_output=True, text=True,
                          errors="replace", env=env)


def files(a):
    """The target GGUF, its drafts, and tfmc's builds of them."""
    src = os.path.dirname(os.path.abspath(a.llama_cpp.rstrip("/")))
    model = os.path.join(a.work, "tinyllama")
    if not os.path.exists(os.path.join(model, "model.safetensors")):
        run(["/usr/bin/python3", os.path.join(HERE, "make_random_model.py"),
             "tinyllama", model, "--dtype", "bf16"])
    target = os.path.join(a.work, "target-BF16.gguf")
    if not os.path.exists(target):
        write_gguf(src, model, target, "BF16", eos=EOS)
    out = {"target": target, "drafts": {}}
    for fmt in ("Q8_0", "Q4_0"):
        path = os.path.join(a.work, f"draft-{fmt}.gguf")
        if not os.path.exists(path):
            run([os.path.join(a.llama_cpp, "bin", "llama-quantize"), target,
                 path, fmt])
        lib = os.path.join(a.work, f"libdraft-{fmt}.so")
        if not os.path.exists(lib):
            run([TFMC, path, "--emit=lib", "-q", "-o", lib])
        out["drafts"][fmt] = (path, lib)
    exe = os.path.join(a.work, "target")
    if not os.path.exists(exe):
        run([TFMC, target, "--speculative", "-q", "-o", exe])
    out["exe"] = exe
    return out


def tfmc_cell(f, a, draft):
    args = [f["exe"], "--tokens", ids_text(PROMPT), "-n", str(a.tokens),
            "--ignore-eos", "--stats"]
    if draft:
        args += ["--draft", f["drafts"][draft][1], "--draft-max",
                 str(a.draft_max), "--draft-p-min", "0"]
    env = dict(os.environ, TFM_NUM_THREADS=str(a.threads))
    s = stats_of(run(args, env).stderr)
    return s["decode_tokens_per_s"], s["drafted_tokens"], s["accepted_tokens"]


def llama_cell(f, a, draft):
    bin_dir = os.path.join(a.llama_cpp, "bin")
    if not draft:
        out = json.loads(run([os.path.join(bin_dir, "llama-bench"), "-m",
                              f["target"], "-t", str(a.threads), "-p", "0",
                              "-n", str(a.tokens), "-r", "1", "-o",
                              "json"]).stdout)
        return out[0]["avg_ts"], 0, 0
    log = run([os.path.join(bin_dir, "llama-speculative"), "-m", f["target"],
               "-md", f["drafts"][draft][0], "-p", "<t450> <t4996>",
               "-n", str(a.tokens), "--temp", "0", "--spec-draft-n-max",
               str(a.draft_max), "--spec-draft-n-min", "0",
               "--spec-draft-p-min", "0",
               "-t", str(a.threads), "-td", str(a.threads), "-c", "1024",
               "--seed", "1"]).stderr
    speed = float(re.search(r"decoded +\d+ tokens in +[\d.]+ seconds, "
                            r"speed: +([\d.]+) t/s", log).group(1))
    drafted = int(re.search(r"n_drafted = (\d+)", log).group(1))
    accepted = int(re.search(r"n_accept  = (\d+)", log).group(1))
    return speed, drafted, accepted


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--llama-cpp", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--tokens", type=int, default=128)
    parser.add_argument("--draft-max", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    a = parser.parse_args()
    os.makedirs(a.work, exist_ok=True)
    f = files(a)
    cells = [(engine, draft) for draft in (None, "Q8_0", "Q4_0")
             for engine in ("tfmc", "llama.cpp")]
    results = {cell: [] for cell in cells}
    for _ in range(a.rounds):  # round robin: drift hits every cell alike
        for engine, draft in cells:
            measure = tfmc_cell if engine == "tfmc" else llama_cell
            results[(engine, draft)].append(measure(f, a, draft))
    print(f"speculative_peer.py: {a.tokens} tokens, draft-max {a.draft_max}, "
          f"{a.rounds} rounds, {a.threads} threads")
    plain = {}
    for engine, draft in cells:
        rows = results[(engine, draft)]
        rate = statistics.median(r[0] for r in rows)
        drafted, accepted = rows[-1][1], rows[-1][2]
        if not draft:
            plain[engine] = rate
        share = f"{accepted / drafted:5.0%}" if drafted else "    -"
        print(f"  {engine:<10} {draft or 'plain':<6} {rate:7.2f} tok/s  "
              f"drafted {drafted:4d} accepted {accepted:4d} {share}  "
              f"x{rate / plain[engine]:4.2f} of its plain")
    return 0


if __name__ == "__main__":
    sys.exit(main())
