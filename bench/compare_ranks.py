#!/usr/bin/env python3
"""bench/compare_ranks: a model split over MPI ranks (tfmc --ranks) against
the same model in one process, on this machine, with ranks x threads = 2.

For the 124M LLaMA shape (12 heads / 4 KV heads), TinyLlama-1.1B's
(32 / 4, bf16) and a Mixtral-shaped mixture (8 experts of which 2 a token,
bf16; split by experts, E/N a rank), random weights: prefill and decode tokens/s at N = 1 (one
process, 2 threads) and N = 2 (mpirun -np 2, 1 thread each), the time the
ranks spend in all-reduces per decode step (two per layer, from --stats:
MPI_Allreduce timed through the MPI profiling interface), and each rank's
peak RSS. The machine's read bandwidth is measured in the same run
(hwlimits), since a decode step is bound by it.

    /usr/bin/python3 bench/compare_ranks.py [--models llama,tinyllama,mixtral]
                                            [--pipeline]

With --pipeline the same models also run split into 2 pipeline stages
(tfmc --pipeline-stages 2, the layers balanced by their weights), beside
the 2 tensor-parallel ranks, and into both (2 stages of 2 tensor-parallel
ranks, 4 processes); for them the communication column is rank 0's time in
stage transfers a generated token, waiting for the other stage included
(rank 0 runs the last stage), and for both its all-reduces' besides. With
--network too, they run over the namespaces as well, unshaped and at each
rate, a stage's two ranks in one namespace (its all-reduces on the host,
the stages' rows across the link).

With --network the ranks also run over a real network stack: a network
namespace each, joined by veth pairs to a bridge, Open MPI's TCP transport
alone (scripts/netns_ranks.py, as root), unshaped and with every link
capped by tc tbf (--rates, 10gbit,1gbit by default), at N = 2 and 4; the
all-reduce's cost per message is then set against docs/distributed.md's
model (2(N-1) steps of latency plus 2(N-1)/N of the row through a link).

NumPy for the random models: /usr/bin/python3 with python3-numpy.
"""
import argparse
import json
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe"]
MODELS = {"llama": ("124M LLaMA shape", "f32"),
          "tinyllama": ("TinyLlama-1.1B shape", "bf16"),
          "mixtral": ("Mixtral-shaped MoE", "bf16")}


NETNS = os.path.join(ROOT, "scripts", "netns_ranks.py")
sys.path.insert(0, os.path.dirname(NETNS))
from netns_ranks import tc_rate_bytes  # noqa: E402


def build(args, name, counts=(1, 2), stages=()):
    """The random model's folder and its executables at `counts` ranks,
    at `stages` pipeline stages (keyed "pN"), and at those stages of 2
    ranks each (keyed "pNx2")."""
    dtype = MODELS[name][1]
    model = os.path.join(args.work, f"ranks-{name}-random")
    if not os.path.exists(os.path.join(model, "model.safetensors")):
        subprocess.run([sys.executable, os.path.join(HERE, "make_random_model.py"),
                        name, model, "--dtype", dtype], check=True)
    exes = {}
    for ranks in counts:
        exe = os.path.join(args.work, f"ranks-{name}.{ranks}")
        if not os.path.exists(exe):
            subprocess.run([args.tfmc, model, "--ranks", str(ranks), "-q",
                            "-o", exe], check=True)
        exes[ranks] = exe
    for count in stages:
        for ranks, key in ((1, f"p{count}"), (2, f"p{count}x2")):
            exe = os.path.join(args.work, f"ranks-{name}.{key}")
            if not os.path.exists(exe):
                subprocess.run([args.tfmc, model, "--pipeline-stages",
                                str(count), "--ranks", str(ranks), "-q", "-o",
                                exe], check=True)
            exes[key] = exe
    with open(os.path.join(model, "config.json")) as f:
        return json.load(f), exes


def run(exe, ranks, prompt, new_tokens, link=None, per_host=1):
    """--stats of one run; `link`: None (one machine's shared memory), or
    over the namespaces "tcp" (unshaped) or a tc rate ("1gbit"), `per_host`
    ranks in each."""
    env = dict(os.environ, TFM_NUM_THREADS=str(max(1, 2 // ranks)))
    command = [exe, "--tokens", prompt, "-n", str(new_tokens), "--print-ids",
               "--ignore-eos", "--stats"]
    if link:
        shape = [] if link == "tcp" else ["--rate", link]
        command = ([sys.executable, NETNS, "run", "--ranks", str(ranks),
                    "--ranks-per-host", str(per_host)] +
                   shape + ["-x", "TFM_NUM_THREADS", "--"] + command)
    elif ranks > 1:
        command = MPIRUN + ["-np", str(ranks), "-x", "TFM_NUM_THREADS"] + command
    out = subprocess.run(command, capture_output=True, text=True, check=True,
                         env=env)
    return json.loads([line for line in out.stderr.splitlines()
                       if line.startswith("{")][-1])


def read_bandwidth(work):
    exe = os.path.join(work, "hwlimits")
    if not os.path.exists(exe):
        subprocess.run(["cc", "-O3", "-march=native", "-fopenmp",
                        os.path.join(HERE, "hwlimits.c"), "-lopenblas", "-o",
                        exe], check=True)
    out = subprocess.run([exe, "--bandwidth"], capture_output=True, text=True,
                         check=True).stdout
    time.sleep(2)  # the probe's huge pages freed before the next run
    return json.loads(out)["read_gb_per_s"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tfmc", default=os.path.join(ROOT, "build", "bin", "tfmc"))
    parser.add_argument("--work", default=os.path.join(ROOT, "build", "bench"))
    parser.add_argument("--models", default="llama,tinyllama")
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--network", action="store_true",
                        help="also over network namespaces (root)")
    parser.add_argument("--rates", default="10gbit,1gbit")
    parser.add_argument("--pipeline", action="store_true",
                        help="also split into 2 pipeline stages")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    print(f"read bandwidth: {read_bandwidth(args.work):.1f} GB/s; prompt "
          f"{args.prompt} tokens, {args.new_tokens} new, best of "
          f"{args.repeats}; ranks x threads = 2")
    print(f"{'model':<36} {'N':>2} {'prefill tok/s':>14} {'decode tok/s':>13} "
          f"{'comm ms/step':>19} {'peak RSS MB per rank':>22}")
    messages = []
    for name in args.models.split(","):
        counts = (1, 2, 4) if args.network else (1, 2)
        config, exes = build(args, name, counts,
                             (2,) if args.pipeline else ())
        rng = random.Random(0)
        prompt = " ".join(str(rng.randrange(config["vocab_size"]))
                          for _ in range(args.prompt))
        layers = config["num_hidden_layers"]
        rows = [(1, None), (2, None)]
        if args.pipeline:
            rows += [("p2", None), ("p2x2", None)]
        if args.network:
            links = ["tcp"] + args.rates.split(",")
            rows += [(n, link) for n in (2, 4) for link in links]
            if args.pipeline:
                rows += [(key, link) for key in ("p2", "p2x2")
                         for link in links]
        for key, link in rows:
            stages, _, group = str(key).lstrip("p").partition("x")
            ranks = int(stages) * int(group or 1)
            runs = [run(exes[key], ranks, prompt, args.new_tokens, link,
                        int(group or 1))
                    for _ in range(args.repeats)]
            best_decode = max(runs, key=lambda s: s["decode_tokens_per_s"])
            best_prefill = max(s["prefill_tokens_per_s"] for s in runs)
            per_rank = best_decode.get("ranks", [])
            step_ms = ""
            if per_rank and str(key).startswith("p"):
                r0 = per_rank[0]
                step_ms = (f"{1e3 * r0['stage_seconds'] / args.new_tokens:.3f}"
                           " (stage)")
                if group:
                    step_ms += (f" + {1e3 * r0['all_reduce_seconds'] / args.new_tokens:.3f}"
                                " (all-reduce)")
            elif per_rank:
                r0 = per_rank[0]
                each = (r0["all_reduce_seconds"] / r0["all_reduces"]
                        if r0["all_reduces"] else 0)
                step_ms = f"{1e3 * each * 2 * layers:.3f}" if each else ""
                if link:
                    messages.append((name, ranks, link, each,
                                     4 * config["hidden_size"]))
            rss = ([r["peak_rss_bytes"] for r in per_rank] if per_rank
                   else [best_decode["peak_rss_bytes"]])
            where = {None: "", "tcp": " tcp"}.get(link, f" {link}")
            if str(key).startswith("p"):
                where += " pipeline" + (" x 2" if group else "")
            print(f"{MODELS[name][0] + ' ' + MODELS[name][1] + where:<36} {ranks:>2} "
                  f"{best_prefill:>14.1f} "
                  f"{best_decode['decode_tokens_per_s']:>13.1f} {step_ms:>19} "
                  f"{' / '.join(f'{b / 1e6:.0f}' for b in rss):>22}")

    if messages:
        report_messages(messages)


def report_messages(messages):
    """Each all-reduce over the namespaces against the paper model: 2(N-1)
    steps of latency and 2(N-1)/N of the row through a link at its rate;
    the latency per step the unshaped runs measure."""
    print("\nall-reduce per message over the namespaces: measured, and the "
          "model's 2(N-1) x latency + 2(N-1)/N x row / rate (latency from "
          "the unshaped run at the same N)")
    # Each model's latency from its own unshaped run (its rows' size).
    latency = {(name, n): each / (2 * (n - 1))
               for name, n, link, each, _ in messages if link == "tcp"}
    for name, n, link, each, row in messages:
        rate = None if link == "tcp" else tc_rate_bytes(link)
        step = latency[(name, n)]
        model = 2 * (n - 1) * step + (
            2 * (n - 1) / n * row / rate if rate else 0)
        print(f"  {name:<10} N={n} {link:>7}: {1e6 * each:8.1f} us measured, "
              f"{1e6 * model:8.1f} us modelled ({row} B rows; "
              f"{1e6 * step:.1f} us a step)")


if __name__ == "__main__":
    main()
