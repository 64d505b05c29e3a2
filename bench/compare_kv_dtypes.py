#!/usr/bin/env python3
"""bench/compare_kv_dtypes.py: decode speed by KV cache storage (tfmc
--kv-dtype f32, bf16, f16, int8) at growing depths of the cache, beside
llama.cpp's F16 and Q8_0 caches on the same weights, in rounds.

A decode step reads every weight once and the whole cache once: after a
D-token prompt the 124 M LLaMA shape (12 layers, 4 KV heads of 64) reads
2 KiB of f32 keys and values a position and layer, 24 MiB at D = 1024,
against 106 MB of int8 weights. This bench decodes --new tokens after
prompts of each --depths length with every cache dtype (same weights,
--weights-dtype, int8 by default: llama.cpp's Q8_0), and prints tokens/s,
the bytes one step reads (weights + cache at the decode's middle
position), and each engine's ratio to tfmc's f32 cache within each round.
llama.cpp (optional: --llama-cpp BUILD_DIR, see compare_weight_formats.py)
decodes with llama-bench's -d (depth) and its default F16 cache, and its
Q8_0 cache (-ctk/-ctv q8_0, with flash attention, which a quantized V
cache needs).

    /usr/bin/python3 bench/compare_kv_dtypes.py --llama-cpp llama.cpp/build
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from compare_peers import hardware_limits, prompt_ids, read_bandwidth  # noqa: E402
from compare_weight_formats import (PEER_FORMAT, gguf_decode_bytes,  # noqa: E402
                                    make_model, prepare_llama_cpp)

# Bytes a cached position takes per KV head and per key or value row of
# head_dim values, by tfmc dtype (int8: codes and an f32 scale).
ROW_BYTES = {"f32": lambda d: 4 * d, "bf16": lambda d: 2 * d,
             "f16": lambda d: 2 * d, "int8": lambda d: d + 4}
# llama.cpp's caches: F16 (its default), and Q8_0 (34 bytes per 32 values).
PEER_CACHES = {"F16": ([], lambda d: 2 * d),
               "Q8_0": (["-ctk", "q8_0", "-ctv", "q8_0", "-fa", "1"],
                        lambda d: d // 32 * 34)}


def cache_bytes(config, row_bytes, position):
    """Keys and values one decode step reads at `position`."""
    head_dim = config["hidden_size"] // config["num_attention_heads"]
    return (2 * config["num_hidden_layers"] * config["num_key_value_heads"] *
            row_bytes(head_dim) * position)


def tfmc_decode(exe, depth, new, vocab):
    out = subprocess.run([exe, "--tokens", prompt_ids(depth, vocab), "-n", str(new),
                          "--ignore-eos", "--stats", "--warmup", "1"],
                         capture_output=True, text=True, check=True)
    stats = json.loads(out.stderr.strip().splitlines()[-1])
    return stats["decode_tokens_per_s"], stats["weight_bytes_per_token"]


def llama_cpp_decode(args, path, depth, options):
    bench = os.path.join(args.llama_cpp, "bin", "llama-bench")
    result = json.loads(subprocess.run(
        [bench, "-m", path, "-t", str(args.threads), "-p", "0", "-n", str(args.new),
         "-d", str(depth), "-r", "2", "-o", "json"] + options,
        capture_output=True, text=True, check=True).stdout)
    return result[0]["avg_ts"]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", default="/tmp/tfm-bench-formats")
    parser.add_argument("--weights-dtype", default="int8",
                        choices=sorted(PEER_FORMAT))
    parser.add_argument("--kv-dtypes", default="f32,bf16,f16,int8")
    parser.add_argument("--depths", default="128,512,896",
                        help="prompt lengths (the model's context is 1024)")
    parser.add_argument("--new", type=int, default=64)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--llama-cpp", help="llama.cpp's CMake build directory")
    args = parser.parse_args()
    kv_dtypes = args.kv_dtypes.split(",")
    unknown = [kv for kv in kv_dtypes if kv not in ROW_BYTES]
    if unknown or "f32" not in kv_dtypes:
        parser.error(f"--kv-dtypes: of {', '.join(ROW_BYTES)}, with f32 "
                     f"(the ratios' base)")
    depths = [int(d) for d in args.depths.split(",")]
    for variable in ("TFM_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[variable] = str(args.threads)
    os.makedirs(args.work, exist_ok=True)
    print(f"machine: {json.dumps(hardware_limits(args.work))}", flush=True)
    model = make_model(args.work, "llama")
    with open(os.path.join(model, "config.json")) as f:
        config = json.load(f)
    if max(depths) + args.new > config["max_position_embeddings"]:
        parser.error(f"--depths: {max(depths)} + {args.new} new tokens pass the "
                     f"context of {config['max_position_embeddings']}")

    engines = {}  # name -> (run(depth) -> tok/s, step bytes(depth))
    for kv in kv_dtypes:
        exe = os.path.join(args.work, f"llama-{args.weights_dtype}-kv-{kv}")
        subprocess.run([os.path.join(ROOT, "build", "bin", "tfmc"), model, "-q",
                        f"--weights-dtype={args.weights_dtype}", f"--kv-dtype={kv}",
                        "-o", exe], check=True)
        weights = tfmc_decode(exe, 8, 4, config["vocab_size"])[1]
        engines[f"tfmc {kv}"] = (
            lambda depth, exe=exe: tfmc_decode(exe, depth, args.new,
                                               config["vocab_size"])[0],
            lambda depth, kv=kv, weights=weights: weights + cache_bytes(
                config, ROW_BYTES[kv], depth + args.new // 2))
    if args.llama_cpp:
        peer = PEER_FORMAT[args.weights_dtype]
        src, files = prepare_llama_cpp(args, args.work, "llama", model, [peer])
        weights = gguf_decode_bytes(src, files[peer])
        for cache, (options, row_bytes) in PEER_CACHES.items():
            engines[f"llama.cpp {cache}"] = (
                lambda depth, options=options: llama_cpp_decode(
                    args, files[peer], depth, options),
                lambda depth, row_bytes=row_bytes: weights + cache_bytes(
                    config, row_bytes, depth + args.new // 2))

    rounds = []
    for r in range(args.rounds):
        bandwidth = read_bandwidth(args.work)
        cells = {(name, depth): run(depth)
                 for depth in depths for name, (run, _) in engines.items()}
        rounds.append(cells)
        print(f"round {r + 1}: read {bandwidth:.1f} GB/s; " + ", ".join(
            f"{name} @{depth} {tps:.1f}" for (name, depth), tps in cells.items()),
            flush=True)

    print(f"\ndecode tok/s after D-token prompts ({args.weights_dtype} weights, "
          f"{args.new} new tokens; medians of {args.rounds} rounds; ratio to tfmc "
          f"f32's cache within each round):")
    for depth in depths:
        print(f"  D = {depth}:")
        for name, (_, step_bytes) in engines.items():
            tps = statistics.median(c[(name, depth)] for c in rounds)
            ratio = [c[(name, depth)] / c[("tfmc f32", depth)] for c in rounds]
            print(f"    {name:15} {tps:7.1f} tok/s, {step_bytes(depth) / 1e6:6.1f} MB a "
                  f"step, {statistics.median(ratio):.2f}x tfmc f32 (rounds "
                  f"{', '.join(f'{x:.2f}' for x in ratio)})")


if __name__ == "__main__":
    main()
