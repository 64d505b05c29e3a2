#!/usr/bin/env python3
"""bench/compare_serving.py: serving many sequences, in one run.

On the 124 M LLaMA shape of compare_peers.py (random f32 weights, made by
make_random_model.py), compiled with --emit=lib:

1. Batched decoding (engine_bench.c, no HTTP): aggregate decode tokens/s
   of the batch engine at B = 1, 4, 8, 16 sequences after 128-token
   prompts, and each B's ratio to B = 1; the machine's read bandwidth and
   FP32 peak measured in the same run (the limits: B = 1 reads every
   weight per token, large B is bound by the multiply rate). Each KV
   cache dtype of --kv-dtypes (f32, bf16, f16, int8: tfmc --kv-dtype) is a library
   of its own, measured in the same rounds.
2. Prefix sharing: KV bytes of 16 sequences sharing a 512-token prefix
   (each with a few tokens of its own) against one sequence's.
3. Servers: tfm-serve against llama.cpp's llama-server (built from source:
   --llama-cpp BUILD_DIR; skipped without) on the same weights (a GGUF
   written by llama.cpp's gguf-py), both with 2 threads and 32 parallel
   sequences; 32 clients each stream one completion of --new tokens after
   a --prompt-token prompt at once. Reported: aggregate tokens/s, and the
   p50/p99 over requests of the time per output token (time from the
   first token to the last / tokens after the first). Rounds alternate the
   servers (this host's bandwidth drifts within minutes).

    /usr/bin/python3 bench/compare_serving.py [--llama-cpp DIR] [--rounds 2]
        [--kv-dtypes f32 int8]
"""
import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import threading
import time
import http.client

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from compare_peers import hardware_limits, read_bandwidth  # noqa: E402
from compare_weight_formats import write_gguf  # noqa: E402


def build(args):
    """The model directory, its library, and engine_bench."""
    model = os.path.join(args.work, "llama-random")
    if not os.path.exists(os.path.join(model, "model.safetensors")):
        subprocess.run([sys.executable, os.path.join(HERE, "make_random_model.py"),
                        "llama", model], check=True)
    libraries = {}
    for kv in args.kv_dtypes:
        library = os.path.join(args.work, "libllama.so" if kv == "f32"
                               else f"libllama-kv-{kv}.so")
        if (not os.path.exists(library) or
                os.path.getmtime(library) < os.path.getmtime(args.tfmc)):
            # One prefix for all: engine_bench finds llama_model in each.
            subprocess.run([args.tfmc, model, "--emit=lib", "-q",
                            f"--kv-dtype={kv}", "--prefix=llama", "-o",
                            library], check=True)
        libraries[kv] = library
    bench = os.path.join(args.work, "engine_bench")
    lib_dir = os.path.join(ROOT, "build", "lib")
    subprocess.run(["cc", "-O2", os.path.join(HERE, "engine_bench.c"),
                    "-I", ROOT, "-L", lib_dir, "-ltfmrt",
                    "-Wl,-rpath," + lib_dir, "-ldl", "-o", bench], check=True)
    return model, libraries, bench


def engine(bench, library, *arguments):
    out = subprocess.run([bench, library, "llama_model"] +
                         [str(a) for a in arguments],
                         check=True, capture_output=True, text=True).stdout
    return json.loads(out)


def start_server(command, banner_pattern, port_hint=None):
    server = subprocess.Popen(command, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True)
    deadline = time.time() + 120
    port = port_hint
    while time.time() < deadline:
        line = server.stdout.readline()
        if not line:
            break
        found = re.search(banner_pattern, line)
        if found:
            port = port or int(found.group(1))
            # Drain the rest so the server never blocks on a full pipe.
            threading.Thread(target=server.stdout.read, daemon=True).start()
            return server, port
    server.kill()
    raise RuntimeError("server did not start: " + " ".join(command))


def stream_one(port, prompt, new, results, index):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    body = {"prompt": prompt, "max_tokens": new, "temperature": 0,
            "ignore_eos": True, "stream": True}
    connection.request("POST", "/v1/completions", json.dumps(body),
                       {"Content-Type": "application/json"})
    response = connection.getresponse()
    stamps, tokens = [], 0
    while True:
        line = response.readline()
        if not line:
            break
        line = line.decode().strip()
        if not line.startswith("data: ") or line == "data: [DONE]":
            continue
        chunk = json.loads(line[6:])
        choice = chunk["choices"][0]
        # tfm-serve lists each chunk's tokens; llama-server sends one a chunk.
        count = len(choice.get("token_ids", [0]))
        if count:
            stamps.append(time.time())
            tokens += count
    connection.close()
    results[index] = (stamps, tokens)


def load(port, clients, prompt_tokens, new, vocab):
    rng = random.Random(1)
    prompts = [[1] + [rng.randrange(3, vocab) for _ in range(prompt_tokens - 1)]
               for _ in range(clients)]
    results = [None] * clients
    threads = [threading.Thread(target=stream_one,
                                args=(port, prompts[i], new, results, i))
               for i in range(clients)]
    start = time.time()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    end = time.time()
    total = sum(r[1] for r in results)
    per_request = [(r[0][-1] - r[0][0]) / max(r[1] - 1, 1) for r in results
                   if len(r[0]) > 1]
    per_request.sort()
    return {"tokens": total, "seconds": end - start,
            "tokens_per_s": total / (end - start),
            "tpot_p50_ms": 1e3 * statistics.median(per_request),
            "tpot_p99_ms": 1e3 * per_request[min(len(per_request) - 1,
                                                 int(0.99 * len(per_request)))]}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--tfmc", default=os.path.join(ROOT, "build", "bin", "tfmc"))
    parser.add_argument("--serve", default=os.path.join(ROOT, "build", "bin", "tfm-serve"))
    parser.add_argument("--work", default=os.path.join(ROOT, "build", "bench"))
    parser.add_argument("--llama-cpp", help="llama.cpp's CMake build directory")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--kv-dtypes", nargs="+", default=["f32", "int8"],
                        help="KV cache dtypes to compile and compare")
    parser.add_argument("--serve-blocks", nargs="+", type=int, default=[0],
                        help="tfm-serve --block-positions values to serve "
                        "with, each a server of its own (0: the default)")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--new", type=int, default=128)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    model, libraries, bench = build(args)
    with open(os.path.join(model, "config.json")) as f:
        vocab = json.load(f)["vocab_size"]
    hw = hardware_limits(args.work)
    print(f"machine: {hw['threads']} threads, read {hw['read_gb_per_s']} GB/s, "
          f"FP32 peak {hw['fp32_peak_gflops']} GFLOP/s")

    # 1. Batched decoding.
    batches = (1, 4, 8, 16)
    rates = {(kv, b): [] for kv in libraries for b in batches}
    bandwidth = []
    for _ in range(args.rounds):
        bandwidth.append(read_bandwidth(args.work))
        for b in batches:
            for kv, library in libraries.items():
                rates[kv, b].append(engine(bench, library, "decode", b, 128,
                                           64)["tokens_per_s"])
    weights = os.path.getsize(os.path.join(model, "model.safetensors"))
    gb = statistics.median(bandwidth)
    print(f"\nbatched decode (engine, 124M LLaMA f32, {weights / 1e6:.0f} MB of "
          f"weights, read {gb:.0f} GB/s: B = 1 bound {gb * 1e9 / weights:.0f} tok/s)")
    flops = 2 * weights / 4
    for kv in libraries:
        one = statistics.median(rates[kv, 1])
        print(f"  KV cache {kv}:")
        for b in batches:
            rate = statistics.median(rates[kv, b])
            print(f"  B = {b:2d}: {rate:7.1f} tok/s  {rate / one:4.2f}x B = 1  "
                  f"{rate * flops / 1e9:5.0f} GFLOP/s = "
                  f"{rate * flops / 1e9 / hw['fp32_peak_gflops']:.0%} of FP32 peak"
                  + (f"  {rate / statistics.median(rates['f32', b]):.2f}x f32 KV"
                     if kv != "f32" and "f32" in libraries else ""))

    # 2. Prefix sharing.
    print("\nprefix sharing: 16 sequences, a 512-token common prefix")
    for kv, library in libraries.items():
        for own, block in ((4, 8), (4, 16), (16, 8)):
            r = engine(bench, library, "share", 16, 512, own, block)
            print(f"  KV {kv:4s} {own:2d} own tokens each, blocks of "
                  f"{r['block_positions']:3d}: "
                  f"{r['all_bytes'] / 2**20:6.1f} MiB against one sequence's "
                  f"{r['one_bytes'] / 2**20:5.1f} MiB = {r['ratio']:.2f}x "
                  f"({r['prompt_tokens_reused']} prompt tokens not prefilled)")

    # 3. Servers.
    print(f"\nservers: {args.clients} clients at once, {args.prompt}-token "
          f"prompts, {args.new} tokens each, 2 threads")
    def tfm_serve(library, block):
        return lambda: start_server(
            [args.serve, library, "--port", "0", "--name", "llama",
             "--model-symbol", "llama_model",
             "--max-sequences", str(args.clients), "--max-waiting", "0"]
            + (["--block-positions", str(block)] if block else []),
            r"on http://127\.0\.0\.1:(\d+)")
    servers = {}
    for kv, library in libraries.items():
        for block in args.serve_blocks:
            name = ("tfm-serve" + ("" if kv == "f32" else f" {kv} KV")
                    + (f" blocks {block}" if block else ""))
            servers[name] = tfm_serve(library, block)
    if args.llama_cpp:
        gguf = os.path.join(args.work, "llama-F32.gguf")
        if not os.path.exists(gguf):
            write_gguf(os.path.dirname(os.path.abspath(args.llama_cpp.rstrip("/"))),
                       model, gguf, "F32")
        port = 18000 + os.getpid() % 1000
        servers["llama-server"] = lambda: start_server(
            [os.path.join(args.llama_cpp, "bin", "llama-server"), "-m", gguf,
             "-t", "2", "-np", str(args.clients), "-c",
             str(args.clients * (args.prompt + args.new + 8)), "-cb",
             "--port", str(port), "--host", "127.0.0.1"],
            r"server is listening|listening on", port)
    else:
        print("  (llama-server skipped: no --llama-cpp build directory)")
    results = {name: [] for name in servers}
    for _ in range(args.rounds):
        for name, start in servers.items():
            server, port = start()
            try:
                load(port, 2, 8, 4, vocab)  # warm up
                results[name].append(load(port, args.clients, args.prompt,
                                          args.new, vocab))
            finally:
                server.terminate()
                server.wait(timeout=60)
    summary = {}
    for name, runs in results.items():
        summary[name] = {key: statistics.median(r[key] for r in runs)
                         for key in runs[0]}
        s = summary[name]
        print(f"  {name:20s} {s['tokens_per_s']:7.1f} tok/s  time per output "
              f"token p50 {s['tpot_p50_ms']:6.1f} ms  p99 {s['tpot_p99_ms']:6.1f} ms"
              f"  ({s['tokens']:.0f} tokens in {s['seconds']:.1f} s)")
    if "llama-server" in summary:
        peer = summary["llama-server"]
        for name, ours in summary.items():
            if name.startswith("tfm-serve"):
                print(f"  {name} / llama-server: "
                      f"{ours['tokens_per_s'] / peer['tokens_per_s']:.2f}x "
                      f"throughput, p99 {ours['tpot_p99_ms'] / peer['tpot_p99_ms']:.2f}x")


if __name__ == "__main__":
    main()
