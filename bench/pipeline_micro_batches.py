#!/usr/bin/env python3
"""The batch engine on a model in 2 pipeline stages, with and without
micro-batches, its layers split evenly (6 and 6) and balanced by their
weights (tfmc's default: 8 and 4, since the last stage also holds the LM
head, 3.5 layers' weights), against the same model in one process: prompt
tokens/s of a batch of prompts prefilled, and aggregate decode tokens/s.

Each process runs one thread on a core of its own (mpirun --bind-to core,
TFM_NUM_THREADS=1), as each stage would have a machine of its own: one
process on one core is the baseline a stage's core is measured against.
Without micro-batches a call runs the stages one after another, one core
busy at a time; with them a step's chunks run as micro-batches of at least
--micro-batch-rows rows, the first stage on the second while the last
stage works on the first (docs/distributed.md, "Pipeline stages").

    pipeline_micro_batches.py [--tfmc build/bin/tfmc] [--work build/bench]
        [--batch 8] [--prompt 128] [--chunk 512] [--micro-batch-rows 64]
        [--decode-batch 16] [--steps 32] [--repeats 3]

The model: bench/make_random_model.py's `llama` (a 124M LLaMA shape, f32
weights). NumPy for it: /usr/bin/python3 with python3-numpy.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe",
          "--bind-to", "core", "-x", "TFM_NUM_THREADS"]
# micro_batch_rows past any step's rows: every step one call.
NO_MICRO_BATCHES = 1 << 40
# One process; 2 stages of 6 layers each; 2 stages as tfmc balances them.
SPLITS = ("one", "even", "balanced")


def build(args):
    model = os.path.join(args.work, "llama-random")
    if not os.path.exists(os.path.join(model, "model.safetensors")):
        subprocess.run([sys.executable,
                        os.path.join(HERE, "make_random_model.py"), "llama",
                        model], check=True)
    libraries = {}
    for split in SPLITS:
        library = os.path.join(args.work, f"libllama-{split}.so")
        flags = []
        if split != "one":
            flags = ["--pipeline-stages", "2"]
        if split == "even":
            flags += ["--pipeline-layers", "6,6"]
        subprocess.run([args.tfmc, model, "--emit=lib", "-q", "--prefix=llama",
                        *flags, "-o", library], check=True)
        libraries[split] = library
    bench = os.path.join(args.work, "engine_bench")
    lib_dir = os.path.join(ROOT, "build", "lib")
    subprocess.run(["cc", "-O2", os.path.join(HERE, "engine_bench.c"),
                    "-I", os.path.join(ROOT, "runtime", "include"), "-L",
                    lib_dir, "-ltfmrt", "-Wl,-rpath," + lib_dir, "-ldl", "-o",
                    bench], check=True)
    return libraries, bench


def engine(bench, library, stages, *arguments):
    command = [bench, library, "llama_model"] + [str(a) for a in arguments]
    if stages > 1:
        command = MPIRUN + ["-np", str(stages)] + command
    env = dict(os.environ, TFM_NUM_THREADS="1")
    out = subprocess.run(command, check=True, capture_output=True, text=True,
                         env=env).stdout
    return json.loads([line for line in out.splitlines()
                       if line.startswith("{")][-1])


def median_run(args, bench, library, stages, mode, *arguments):
    """The median of --repeats runs, by the rate, with its calls."""
    key = "prompt_tokens_per_s" if mode == "prefill" else "tokens_per_s"
    runs = [engine(bench, library, stages, mode, *arguments)
            for _ in range(args.repeats)]
    runs.sort(key=lambda r: r[key])
    return runs[len(runs) // 2], key


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tfmc",
                        default=os.path.join(ROOT, "build", "bin", "tfmc"))
    parser.add_argument("--work", default=os.path.join(ROOT, "build", "bench"))
    parser.add_argument("--batch", type=int, default=8)
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--chunk", type=int, default=512)
    parser.add_argument("--micro-batch-rows", type=int, default=64)
    parser.add_argument("--decode-batch", type=int, default=16)
    parser.add_argument("--steps", type=int, default=32)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    libraries, bench = build(args)

    micro = f"micro-batches of >= {args.micro_batch_rows} rows"
    rows = [("one process, 1 core", "one", 1, NO_MICRO_BATCHES)]
    for split, layers in (("even", "6 + 6"), ("balanced", "8 + 4")):
        rows += [(f"2 stages ({layers} layers), 1 core each, no "
                  f"micro-batches", split, 2, NO_MICRO_BATCHES),
                 (f"2 stages ({layers} layers), 1 core each, {micro}", split,
                  2, args.micro_batch_rows)]
    print(f"| | prefill {args.batch} x {args.prompt} tokens (chunk "
          f"{args.chunk}), tok/s | calls / steps | decode batch "
          f"{args.decode_batch}, tok/s | calls / steps |")
    print("|---|---|---|---|---|")
    baseline = {}
    for name, split, stages, micro in rows:
        prefill, prefill_key = median_run(
            args, bench, libraries[split], stages, "prefill", args.batch,
            args.prompt, args.chunk, micro)
        decode, decode_key = median_run(
            args, bench, libraries[split], stages, "decode",
            args.decode_batch, 16, args.steps, micro)
        baseline = baseline or {"prefill": prefill[prefill_key],
                                "decode": decode[decode_key]}
        print(f"| {name} | {prefill[prefill_key]:.1f} "
              f"({prefill[prefill_key] / baseline['prefill']:.2f}x) | "
              f"{prefill['model_calls']} / {prefill['steps']} | "
              f"{decode[decode_key]:.1f} "
              f"({decode[decode_key] / baseline['decode']:.2f}x) | "
              f"{decode['model_calls']} / {args.steps} |", flush=True)


if __name__ == "__main__":
    main()
