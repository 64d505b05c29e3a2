"""bench/gguf_peer.py: tfmc against llama.cpp on one GGUF file, the driver the
architecture benchmarks share (qwen35_peer.py, gpt_oss_peer.py). Each writes
its random-weight file with llama.cpp's gguf-py; this compiles it with
tfmc once per work directory and runs both engines round robin:

  * prefill tokens/s of a --prefill-token prompt, and of a quarter of it
    (tfmc's ratio of the two: 1.00 is linear in the prompt);
  * decode tokens/s of --decode tokens after --decode-after (tfmc's --stats
    decode_tokens_per_s; llama-bench -n with -d), beside the bound the
    machine's read bandwidth, measured at the start, sets on decode by the
    weight bytes one token reads (tfmc's weight_bytes_per_token).
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
from compare_peers import hardware_limits, prompt_ids  # noqa: E402


class RandomGguf:
    """A GGUF file of random weights being written with llama.cpp's
    gguf-py (from the llama.cpp source `llama_src`): `writer` for the
    architecture's metadata and tensors, a placeholder vocabulary of
    `vocab` tokens (the weights are random; added by `finish`), `rng` and
    `np` for the
    tensors' values, `matrix` for a random Q8_0 one (or another type
    gguf-py quantizes: MXFP4; its NumPy quantizer makes llama.cpp's own
    blocks); `finish` writes the file."""

    def __init__(self, llama_src, path, arch, vocab, seed=0):
        sys.path.insert(0, os.path.join(llama_src, "gguf-py"))
        import gguf  # noqa: E402
        import numpy as np  # noqa: E402
        self.gguf, self.np = gguf, np
        self.rng = np.random.default_rng(seed)
        self.writer = gguf.GGUFWriter(path, arch)
        self.vocab = vocab

    def matrix(self, name, *shape, scale=0.02, qtype="Q8_0"):
        values = self.rng.normal(0, scale, shape).astype(self.np.float32)
        kind = self.gguf.GGMLQuantizationType[qtype]
        self.writer.add_tensor(name, self.gguf.quants.quantize(values, kind),
                               raw_dtype=kind)

    def finish(self):
        """The placeholder vocabulary after the architecture's metadata,
        then the file."""
        w, vocab = self.writer, self.vocab
        w.add_tokenizer_model("llama")
        w.add_token_list([f"<t{i}>".encode() for i in range(vocab)])
        w.add_token_scores([0.0] * vocab)
        w.add_token_types([self.gguf.TokenType.NORMAL] * vocab)
        w.add_bos_token_id(1)
        w.add_eos_token_id(2)
        self.writer.write_header_to_file()
        self.writer.write_kv_data_to_file()
        self.writer.write_tensors_to_file()
        self.writer.close()


def arguments(work, layers):
    parser = argparse.ArgumentParser()
    parser.add_argument("--llama-cpp", required=True, help="llama.cpp build dir")
    parser.add_argument("--work", default=work)
    parser.add_argument("--layers", type=int, default=layers)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--prefill", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--decode", type=int, default=64)
    parser.add_argument("--decode-after", type=int, default=512)
    return parser


def tfmc_stats(exe, tokens, count, threads):
    out = subprocess.run(
        [exe, "--tokens", prompt_ids(tokens, 32000), "-n", str(count),
         "--ignore-eos", "--stats", "--warmup", "1"],
        capture_output=True, text=True, check=True,
        env=dict(os.environ, TFM_NUM_THREADS=str(threads)))
    return json.loads(out.stderr.strip().splitlines()[-1])


def llama_bench(bench, path, threads, prompt, count, depth=0):
    command = [bench, "-m", path, "-t", str(threads), "-r", "2", "-o", "json",
               "-p", str(prompt), "-n", str(count)]
    if depth:
        command += ["-d", str(depth)]
    return json.loads(subprocess.run(command, capture_output=True, text=True,
                                     check=True).stdout)[0]["avg_ts"]


def run(args, name, file_name, write_model):
    """Writes the file (write_model(llama.cpp source dir, path, layers))
    unless the work directory has it, compiles it, and prints each round and
    the medians."""
    os.makedirs(args.work, exist_ok=True)
    limits = hardware_limits(args.work)
    src = os.path.dirname(os.path.abspath(args.llama_cpp.rstrip("/")))
    path = os.path.join(args.work, file_name)
    if not os.path.exists(path):
        write_model(src, path, args.layers)
    exe = os.path.splitext(path)[0] + "-tfmc"
    if not os.path.exists(exe):  # compiled once per file
        subprocess.run([os.path.join(ROOT, "build", "bin", "tfmc"), path, "-q",
                        "-o", exe], check=True)
    bench = os.path.join(args.llama_cpp, "bin", "llama-bench")
    short = args.prefill // 4
    rounds = []
    for _ in range(args.rounds):
        decode = tfmc_stats(exe, args.decode_after, args.decode, args.threads)
        rounds.append({
            "tfmc": tfmc_stats(exe, args.prefill, 1,
                               args.threads)["prefill_tokens_per_s"],
            "tfmc_short": tfmc_stats(exe, short, 1,
                                     args.threads)["prefill_tokens_per_s"],
            "llama": llama_bench(bench, path, args.threads, args.prefill, 0),
            "llama_short": llama_bench(bench, path, args.threads, short, 0),
            "tfmc_decode": (decode["decode_tokens_per_s"],
                            decode["weight_bytes_per_token"]),
            "llama_decode": llama_bench(bench, path, args.threads, 0,
                                        args.decode, args.decode_after)})
    print(f"machine: read {limits.get('read_gb_per_s', 0):.1f} GB/s at start; "
          f"{name}, {args.layers} layers, {args.threads} threads")
    for i, r in enumerate(rounds):
        print(f"round {i}: prefill {args.prefill}: tfmc {r['tfmc']:.1f} tok/s, "
              f"llama.cpp {r['llama']:.1f} ({r['tfmc'] / r['llama']:.2f}x); "
              f"prefill {short}: tfmc {r['tfmc_short']:.1f}, llama.cpp "
              f"{r['llama_short']:.1f}")
    for i, r in enumerate(rounds):
        tokens_per_s, read = r["tfmc_decode"]
        bound = limits.get("read_gb_per_s", 0) * 1e9 / read if read else 0
        print(f"round {i}: decode {args.decode} after {args.decode_after}: "
              f"tfmc {tokens_per_s:.1f} tok/s ({read / 1e6:.1f} MB a token, "
              f"{tokens_per_s / bound if bound else 0:.0%} of the read bound "
              f"{bound:.1f}), llama.cpp {r['llama_decode']:.1f} "
              f"({tokens_per_s / r['llama_decode']:.2f}x)")
    median = lambda key: statistics.median(r[key] for r in rounds)  # noqa: E731
    decode = statistics.median(r["tfmc_decode"][0] for r in rounds)
    print(f"median: prefill {median('tfmc') / median('llama'):.2f}x llama.cpp; "
          f"tfmc's tok/s at {args.prefill} over {short}: "
          f"{median('tfmc') / median('tfmc_short'):.2f} (1.00: linear); "
          f"decode {decode / median('llama_decode'):.2f}x llama.cpp")
