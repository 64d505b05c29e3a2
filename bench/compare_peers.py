#!/usr/bin/env python3
"""bench/compare_peers.py: tfmc against PyTorch and ONNX Runtime on the
same random fp32 weights and prompts, in one run, beside the machine's
measured limits.

Models (made by make_random_model.py into --work): (a) GPT-2 small (12
layers, 768 wide, 12 heads, vocab 50257) and (b) a LLaMA of similar size
with grouped-query attention (12 heads, 4 KV heads). For each: prefill
tokens/s at prompts of 128 and 512, decode tokens/s over 64 tokens after a
128-token prompt, peak RSS. Printed: ratios tfmc/peer, decode as a fraction
of the bandwidth bound (weight bytes per token / read bandwidth measured
before and after each decode run),
prefill GFLOP/s as a fraction of the measured FP32 peak, and tfmc's peak RSS
over what it holds by design (weights + KV cache + the peak of its
activation arena, from the executable's --stats).

    /usr/bin/python3 bench/compare_peers.py [--models gpt2,llama]

PyTorch runs at its fastest setting here (OPENBLAS_NUM_THREADS=2,
torch.set_num_threads(1)). ONNX Runtime (onnxruntime-node from npm, pinned
in bench/package.json, installed on first use with --ignore-scripts) runs
the model as export_onnx.py exports it with past key/values, on the CPU
with 2 intra-op threads.
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


def link_model_bench(work, model, harness, name, flags=()):
    """The model folder `model` compiled with --emit=staticlib (symbol
    model_model) and tfmc's `flags` into WORK/NAME-lib and linked into the
    C harness `harness` (bench/*.c); returns the executable."""
    lib = os.path.join(work, name + "-lib")
    os.makedirs(lib, exist_ok=True)
    subprocess.run([os.path.join(ROOT, "build", "bin", "tfmc"), model,
                    "--emit=staticlib", "--prefix", "model", *flags,
                    "-o", os.path.join(lib, "libmodel.a")], check=True)
    exe = os.path.join(lib, os.path.splitext(os.path.basename(harness))[0])
    # Huge-page segments for the weights, as tfmc links executables and as
    # the installed CMake/pkg-config files link static models.
    subprocess.run(["cc", "-O2", "-Wl,-z,max-page-size=0x200000",
                    os.path.join(HERE, harness), "-I" + lib,
                    "-I" + ROOT, "-I" + os.path.join(ROOT, "runtime", "include"),
                    os.path.join(lib, "libmodel.a"),
                    os.path.join(ROOT, "build", "lib", "libtfmrt.a"),
                    "-lopenblas", "-lutf8proc", "-lz", "-lm", "-lpthread", "-o", exe],
                   check=True)
    return exe


def torch_best_seconds(setup, call, reps):
    """The best seconds of `call` (a Python statement) over `reps` runs
    after one warm-up, in Debian's PyTorch with 2 threads (OpenBLAS's too)
    and no grad, after `setup` (which defines what `call` uses; `tf` is
    transformers)."""
    code = f"""
import json, time, torch, transformers as tf
torch.set_num_threads(2)
{setup}
times = []
with torch.no_grad():
    for r in range({reps} + 1):
        start = time.perf_counter()
        {call}
        times.append(time.perf_counter() - start)
print(json.dumps({{"seconds": min(times[1:])}}))
"""
    env = dict(os.environ, OPENBLAS_NUM_THREADS="2")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True,
                         text=True, env=env, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])["seconds"]


# What tfmc's GEMMs can multiply in (tfmc --compute-dtype).
COMPUTE_DTYPES = ("f32", "bf16", "int8")


def add_compute_dtype(parser):
    """tfmc's --compute-dtype for a bench's model (f32, bf16 or int8; with
    int8 the peers run int8 too: torch_quantization, peer_onnx)."""
    parser.add_argument("--compute-dtype", choices=COMPUTE_DTYPES,
                        default="f32",
                        help="what tfmc's GEMMs multiply in (bf16: weights "
                             "stored as bf16, vdpbf16ps where it pays; int8: "
                             "weights int8, activations quantized per call, "
                             "against PyTorch's and ONNX Runtime's "
                             "quantize_dynamic)")


def torch_quantization(dtype):
    """The line that makes a PyTorch peer's `model` int8 for an int8 cell:
    torch.quantization.quantize_dynamic (nn.Linear weights int8 per tensor,
    activations quantized at each call; Debian's torch runs it on oneDNN),
    on both threads; in place, since wav2vec2's weight-normed convolution
    cannot be deep-copied. Empty for other dtypes."""
    if dtype != "int8":
        return ""
    return ("model = torch.quantization.quantize_dynamic(model, "
            "{torch.nn.Linear}, dtype=torch.qint8, inplace=True)\n"
            "torch.set_num_threads(2)")


def peer_onnx(onnx, dtype):
    """The ONNX model a `dtype` cell's ONNX Runtime peer runs: the export,
    or for int8 what quantize_dynamic makes of it."""
    return quantized_onnx(onnx) if dtype == "int8" else onnx


def datapath_peak(limits, dtype):
    """(name, GFLOP/s or GOP/s) of the peak `dtype`'s GEMMs run against:
    BF16's where the CPU has vdpbf16ps, VNNI's int8 where it has vpdpbusd,
    else FP32's (the panels widened)."""
    if dtype == "bf16" and limits.get("bf16_peak_gflops"):
        return "BF16", limits["bf16_peak_gflops"]
    if dtype == "int8" and limits.get("int8_peak_gops"):
        return "VNNI int8", limits["int8_peak_gops"]
    return "FP32", limits["fp32_peak_gflops"]


def quantized_onnx(onnx):
    """The int8 model ONNX Runtime's quantize_dynamic makes of `onnx`
    (quantize_onnx_dynamic.py), written beside it once."""
    out = onnx[:-len(".onnx")] + "-int8.onnx"
    if not os.path.exists(out):
        done = subprocess.run(["/usr/bin/python3",
                               os.path.join(HERE, "quantize_onnx_dynamic.py"),
                               onnx, out], capture_output=True, text=True)
        if done.returncode:
            sys.exit(f"quantize_onnx_dynamic.py failed (it needs Debian's "
                     f"python3-onnx):\n{done.stderr}")
    return out


def hardware_limits(work):
    exe = os.path.join(work, "hwlimits")
    subprocess.run(["cc", "-O3", "-march=native", "-fopenmp",
                    os.path.join(HERE, "hwlimits.c"), "-lopenblas", "-o", exe],
                   check=True)
    return json.loads(subprocess.run([exe], capture_output=True, text=True,
                                     check=True).stdout)


# Seconds to let the host settle after the bandwidth probe: the kernel
# frees the probe's GiB of huge pages after it exits, and a decode run
# started at once was up to 17% slower (124M int4 on a Zen 2, 2 cores:
# 250-293 tok/s against 300-303 after 1-2 s).
PROBE_SETTLE_SECONDS = 2


def read_bandwidth(work):
    exe = os.path.join(work, "hwlimits")
    gb_per_s = json.loads(subprocess.run([exe, "--bandwidth"], capture_output=True, text=True,
                                         check=True).stdout)["read_gb_per_s"]
    time.sleep(PROBE_SETTLE_SECONDS)
    return gb_per_s


def model_numbers(directory):
    """Weight bytes one decode step reads, and matmul FLOPs per token."""
    with open(os.path.join(directory, "config.json")) as f:
        c = json.load(f)
    with open(os.path.join(directory, "model.safetensors"), "rb") as f:
        header = json.loads(f.read(int.from_bytes(f.read(8), "little")))
    sizes = {k: v["data_offsets"][1] - v["data_offsets"][0]
             for k, v in header.items() if k != "__metadata__"}
    total = sum(sizes.values())
    if c["model_type"] == "gpt2":
        # One row of each embedding table is read; wte is read again, whole,
        # as the tied LM head.
        read = total - sizes["wpe.weight"]
        d, layers = c["n_embd"], c["n_layer"]
        matmul_params = layers * 12 * d * d + c["vocab_size"] * d
    else:
        read = total - sizes["model.embed_tokens.weight"]
        d, layers, i = c["hidden_size"], c["num_hidden_layers"], c["intermediate_size"]
        kv = d // c["num_attention_heads"] * c["num_key_value_heads"]
        matmul_params = layers * (2 * d * d + 2 * kv * d + 3 * d * i)
        matmul_params += c["vocab_size"] * d
    head_params = c["vocab_size"] * d
    return c, read, matmul_params, head_params


def prompt_ids(length, vocab):
    rng = random.Random(length)
    return " ".join(str(rng.randrange(vocab)) for _ in range(length))


def run_tfmc(exe, prompt, new, vocab):
    # One untimed prefill first, as the peers warm up too.
    out = subprocess.run([exe, "--tokens", prompt_ids(prompt, vocab), "-n", str(new),
                          "--print-ids", "--ignore-eos", "--stats", "--warmup", "1"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stderr.strip().splitlines()[-1])


def run_torch(model, prompt, new):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="2")
    out = subprocess.run(["/usr/bin/python3", os.path.join(HERE, "torch_peer.py"),
                          model, "--prompt", str(prompt), "--new", str(new)],
                         capture_output=True, text=True, check=True, env=env)
    return json.loads(out.stdout.strip().splitlines()[-1])


def install_onnxruntime():
    """onnxruntime-node (package.json's pin) under bench/node_modules, once."""
    if not os.path.isdir(os.path.join(HERE, "node_modules", "onnxruntime-node")):
        subprocess.run(["npm", "install", "--ignore-scripts", "--no-audit", "--no-fund",
                        "--no-package-lock"],
                       cwd=HERE, check=True, capture_output=True)


def ort_unavailable(enabled):
    """Why the ONNX Runtime peer is skipped (printed once), or None once
    onnxruntime-node is installed."""
    reason = None if enabled else "--no-ort"
    if enabled:
        try:
            install_onnxruntime()
        except (subprocess.CalledProcessError, OSError) as e:
            reason = f"npm install failed ({e})"
    if reason:
        print(f"ONNX Runtime: skipped: {reason}")
    return reason


def ensure_ort(work, directory, kind, config):
    """Installs onnxruntime-node and exports the model, once."""
    install_onnxruntime()
    onnx = os.path.join(work, f"{kind}.onnx")
    if not os.path.exists(onnx):
        subprocess.run(["/usr/bin/python3", os.path.join(HERE, "export_onnx.py"),
                        directory, onnx], check=True, cwd=HERE, capture_output=True)
    return onnx


def run_ort(onnx, config, prompt, new):
    if config["model_type"] == "gpt2":
        layers, heads, kv_heads, d = (config["n_layer"], config["n_head"],
                                      config["n_head"], config["n_embd"])
    else:
        layers, heads, kv_heads, d = (config["num_hidden_layers"], config["num_attention_heads"],
                                      config["num_key_value_heads"], config["hidden_size"])
    out = subprocess.run(["node", os.path.join(HERE, "ort_peer.js"), onnx, str(layers),
                          str(kv_heads), str(d // heads), str(config["vocab_size"]),
                          "--prompt", str(prompt), "--new", str(new)],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def best(runs, key):
    return max(runs, key=lambda r: r[key])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tfmc", default=os.path.join(ROOT, "build", "bin", "tfmc"))
    parser.add_argument("--work", default=os.path.join(ROOT, "build", "bench"))
    parser.add_argument("--models", default="gpt2,llama")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--tfmc-flags", default="",
                        help="extra tfmc flags, e.g. '--no-fuse-qkv' to measure a pass")
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    hw = hardware_limits(args.work)
    print(f"machine: {hw['threads']} threads, read {hw['read_gb_per_s']} GB/s, "
          f"FP32 peak {hw['fp32_peak_gflops']} GFLOP/s, OpenBLAS SGEMM "
          f"128x2304x768 {hw['openblas_sgemm_128x2304x768_gflops']} GFLOP/s")
    for kind in args.models.split(","):
        directory = os.path.join(args.work, f"{kind}-random")
        # One executable per set of flags: a run with other flags must not
        # reuse it.
        suffix = "".join(c if c.isalnum() else "_" for c in args.tfmc_flags)
        exe = os.path.join(args.work, f"{kind}-tfmc{suffix}")
        if not os.path.exists(os.path.join(directory, "model.safetensors")):
            subprocess.run([sys.executable, os.path.join(HERE, "make_random_model.py"),
                            kind, directory], check=True)
        if not os.path.exists(exe) or os.path.getmtime(exe) < os.path.getmtime(args.tfmc):
            subprocess.run([args.tfmc, directory, "-o", exe] + args.tfmc_flags.split(),
                           check=True)
        config, read_bytes, matmul_params, head_params = model_numbers(directory)
        vocab = config["vocab_size"]
        onnx = ensure_ort(args.work, directory, kind, config)
        rows = []
        for prompt, new, what in ((128, 1, "prefill"), (512, 1, "prefill"), (128, 64, "decode")):
            key = f"{what}_tokens_per_s"
            # Round robin, so that the host's drift (memory bandwidth moves
            # by 2x within minutes here) spreads over all three; each tfmc
            # decode run is bracketed by bandwidth measurements, its bound.
            runs = {"tfmc": [], "torch": [], "ort": []}
            for _ in range(args.repeats):
                before = read_bandwidth(args.work) if what == "decode" else None
                ours = run_tfmc(exe, prompt, new, vocab)
                if before is not None:
                    ours["read_gb_per_s"] = (before + read_bandwidth(args.work)) / 2
                runs["tfmc"].append(ours)
                runs["torch"].append(run_torch(directory, prompt, new))
                runs["ort"].append(run_ort(onnx, config, prompt, new))
            rows.append((what, prompt, best(runs["tfmc"], key), best(runs["torch"], key),
                         best(runs["ort"], key), key))
        print(f"\n{kind}: {read_bytes / 1e6:.0f} MB read per decoded token")
        print(f"{'':>18} {'tfmc':>9} {'PyTorch':>9} {'ORT':>9} {'/PT':>6} {'/ORT':>6}"
              "  of the hardware limit")
        for what, prompt, ours, peer, ort, key in rows:
            rate = ours[key]
            if what == "prefill":
                # Every peer runs the LM head on the last position only.
                per_token = matmul_params - head_params + head_params / prompt
                gflops = 2 * per_token * rate / 1e9
                limit = f"{gflops:.0f} GFLOP/s = {gflops / hw['fp32_peak_gflops']:.0%} of FP32 peak"
                label = f"prefill @{prompt}"
            else:
                bound = ours["read_gb_per_s"] * 1e9 / read_bytes
                limit = (f"bound {bound:.1f} tok/s at {ours['read_gb_per_s']:.0f} GB/s "
                         f"(read around the run): {rate / bound:.0%} of it")
                label = f"decode 64 @{prompt}"
            print(f"{label:>18} {rate:>9.1f} {peer[key]:>9.1f} {ort[key]:>9.1f} "
                  f"{rate / peer[key]:>5.2f}x {rate / ort[key]:>5.2f}x  {limit}")
        rss = [max(r[i]["peak_rss_bytes"] for r in rows) / 1e6 for i in (2, 3, 4)]
        # tfmc's budget: weights + KV cache + the most its compiled code had
        # allocated at once (the arena), from the run with the highest RSS.
        worst = max((r[2] for r in rows), key=lambda o: o["peak_rss_bytes"])
        held = (worst["weights_bytes"] + worst["kv_cache_bytes"]
                + worst["activation_peak_bytes"]) / 1e6
        print(f"{'peak RSS (MB)':>18} {rss[0]:>9.0f} {rss[1]:>9.0f} {rss[2]:>9.0f} "
              f"{rss[0] / rss[1]:>5.2f}x {rss[0] / rss[2]:>5.2f}x  "
              f"{rss[0] / held:.2f} x (weights {worst['weights_bytes'] / 1e6:.0f} + KV "
              f"{worst['kv_cache_bytes'] / 1e6:.0f} + activations "
              f"{worst['activation_peak_bytes'] / 1e6:.0f} MB)")


if __name__ == "__main__":
    main()
