#!/usr/bin/env python3
"""bench/moe_decode.py: a mixture of experts' decode against its bandwidth
bound. A small Mixtral of random weights (make_random_model.py `mixtral`:
8 experts, top 2, 0.94 B parameters, bf16) compiled by tfmc as bf16, int8
and int4; for each, decode tokens/s over --new tokens after a --prompt-token
prompt, prefill tokens/s, the weight bytes a decode step reads (--stats'
weight_bytes_per_token: the routed experts counted by top_k / experts) and
decode as a fraction of the bound those bytes and the read bandwidth
measured around the run give, in --rounds rounds (the host's bandwidth
drifts).

    /usr/bin/python3 bench/moe_decode.py [--work DIR] [--formats bf16,int8]
"""
import argparse
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from compare_peers import hardware_limits, read_bandwidth  # noqa: E402
from compare_weight_formats import compile_tfmc, run_tfmc  # noqa: E402


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--work", default="/tmp/tfm-moe-bench")
    parser.add_argument("--formats", default="bf16,int8,int4")
    parser.add_argument("--prompt", type=int, default=16)
    parser.add_argument("--prefill", type=int, default=256)
    parser.add_argument("--new", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    limits = hardware_limits(args.work)
    model = os.path.join(args.work, "mixtral")
    if not os.path.exists(os.path.join(model, "model.safetensors")):
        subprocess.run(["/usr/bin/python3",
                        os.path.join(HERE, "make_random_model.py"), "mixtral",
                        model, "--dtype", "bf16"], check=True)
    vocab = 32000
    exes = {}
    for fmt in args.formats.split(","):
        exe, compiled = compile_tfmc(args.work, "mixtral", model, fmt)
        exes[fmt] = exe
        print(f"compiled {fmt}: {compiled['compile_seconds']:.0f} s, peak RSS "
              f"{compiled['compile_peak_rss'] / 2**30:.1f} GiB", flush=True)
    cells = {fmt: [] for fmt in exes}
    for round_ in range(args.rounds):
        for fmt, exe in exes.items():
            before = read_bandwidth(args.work)
            decode = run_tfmc(exe, args.prompt, args.new, vocab)
            after = read_bandwidth(args.work)
            prefill = run_tfmc(exe, args.prefill, 1, vocab)
            bandwidth = (before + after) / 2 * 1e9
            bound = bandwidth / decode["weight_bytes_per_token"]
            cells[fmt].append((decode["decode_tokens_per_s"],
                               prefill["prefill_tokens_per_s"],
                               decode["weight_bytes_per_token"],
                               bandwidth / 1e9,
                               decode["decode_tokens_per_s"] / bound))
            print(f"round {round_}: {fmt} decode "
                  f"{decode['decode_tokens_per_s']:.1f} tok/s, "
                  f"{decode['weight_bytes_per_token'] / 1e6:.0f} MB/token, "
                  f"bandwidth {bandwidth / 1e9:.1f} GB/s: "
                  f"{100 * cells[fmt][-1][4]:.0f}% of the bound", flush=True)
    print(f"\nhost: {limits['threads']} threads, read bandwidth "
          f"{limits['read_gb_per_s']:.1f} GB/s, FP32 peak "
          f"{limits['fp32_peak_gflops']:.0f} GFLOP/s")
    print("| format | decode tok/s | prefill tok/s | MB read/token | "
          "read GB/s | of the bandwidth bound |")
    print("|---|---|---|---|---|---|")
    for fmt, rows in cells.items():
        med = [statistics.median(r[i] for r in rows) for i in range(5)]
        print(f"| {fmt} | {med[0]:.1f} | {med[1]:.1f} | {med[2] / 1e6:.0f} | "
              f"{med[3]:.1f} | {100 * med[4]:.0f}% |")


if __name__ == "__main__":
    main()
