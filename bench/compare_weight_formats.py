#!/usr/bin/env python3
"""bench/compare_weight_formats.py: tfmc's weight formats (f32, bf16, int8,
int4; f16 on request) against llama.cpp's (F32, BF16, Q8_0, Q4_0; F16) on
the same random weights, in rounds, beside the read bandwidth measured in
each round.

Models (make_random_model.py, into --work): the 124 M LLaMA shape of
compare_peers.py (`llama`, f32 weights), TinyLlama-1.1B's shape
(`tinyllama`, bf16 weights) and a small Mixtral (`mixtral`: 8 experts, top
2, 0.94 B parameters, bf16; its decode bytes count the routed experts by
top_k / experts, for llama.cpp's file as for tfmc's --stats). For every engine and format: decode tokens/s
over --new tokens after a --prompt-token prompt, prefill tokens/s at
--prefill tokens, and decode as a fraction of its bandwidth bound (weight
bytes one decode step reads / the read bandwidth measured just before and
after it). tfmc's compile time and peak RSS (GNU time's, /usr/bin/time:
Debian's `time` package) are reported for each format.

With --gguf (and llama.cpp), tfmc also compiles llama.cpp's own GGUF files
(Q8_0, Q4_0, and Q4_K_M from llama-quantize) as they are (each tensor keeps
its format: Q4_K, Q5_K and Q6_K stay q4_k, q5_k and q6_k) and runs
beside llama.cpp on the very same file; --gguf-formats picks the files: any
type llama-quantize makes without an importance matrix (Q3_K_M and IQ4_XS
files hold formats tfmc requantizes to int8). --baseline-tfmc PATH
compiles them with another build's tfmc too
and runs it in the same rounds (a change's before and after).

The host's bandwidth drifts within minutes, so the engines run round robin
(--rounds) and the ratios are taken within each round; the table prints
each round's ratio and their median.

llama.cpp is optional: --llama-cpp BUILD_DIR (a CMake build of llama.cpp
with llama-bench and llama-quantize; its source's gguf-py writes the GGUF
files). node-llama-cpp's npm package carries that source as a git bundle:

    npm pack node-llama-cpp && tar xzf node-llama-cpp-*.tgz
    git clone package/llama/gitRelease.bundle llama.cpp
    cmake -S llama.cpp -B llama.cpp/build -G Ninja -DCMAKE_BUILD_TYPE=Release \\
        -DLLAMA_CURL=OFF -DGGML_NATIVE=ON
    ninja -C llama.cpp/build llama-bench llama-quantize

    /usr/bin/python3 bench/compare_weight_formats.py --llama-cpp llama.cpp/build

Issue 59's two cells (llama.cpp's Q4_K_M Mixtral and Q5_K_M TinyLlama,
round robin with tfmc on the same files):

    /usr/bin/python3 bench/compare_weight_formats.py --llama-cpp llama.cpp/build \
        --models mixtral --formats "" --gguf --gguf-formats Q4_K_M
    /usr/bin/python3 bench/compare_weight_formats.py --llama-cpp llama.cpp/build \
        --models tinyllama --formats "" --gguf --gguf-formats Q5_K_M
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from compare_peers import hardware_limits, prompt_ids, read_bandwidth  # noqa: E402
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
from write_gguf import gguf_name  # noqa: E402  (llama.cpp's tensor names)

# tfmc format -> llama.cpp's of the same bits (None: compared with none).
PEER_FORMAT = {"f32": "F32", "bf16": "BF16", "f16": "F16", "int8": "Q8_0",
               "int4": "Q4_0"}
# llama.cpp files tfmc compiles directly under --gguf.
GGUF_FORMATS = ["Q8_0", "Q4_0", "Q4_K_M"]


def run_measured(command):
    """Runs `command`; returns (seconds, peak RSS in bytes) of the child.
    The RSS comes from GNU time, which forks the command from its own small
    process: the kernel starts a child's peak RSS at its parent's size at
    the fork, so this (large) Python process's own wait4 figure would be at
    least its own RSS."""
    start = time.time()
    with tempfile.NamedTemporaryFile("r") as rss:
        child = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss.name] +
                               command, stdout=subprocess.DEVNULL)
        if child.returncode != 0:
            raise SystemExit(f"failed ({child.returncode}): {' '.join(command)}")
        return time.time() - start, int(rss.read().split()[-1]) * 1024


# Shapes whose checkpoints (and llama.cpp's source files) are bf16: the
# billion-parameter ones.
BF16_SHAPES = ("tinyllama", "mixtral")


def make_model(work, kind):
    directory = os.path.join(work, kind)
    if not os.path.exists(os.path.join(directory, "model.safetensors")):
        dtype = ["--dtype", "bf16"] if kind in BF16_SHAPES else []
        subprocess.run(["/usr/bin/python3", os.path.join(HERE, "make_random_model.py"),
                        kind, directory] + dtype, check=True)
    return directory


def compile_tfmc(work, kind, model, fmt, tfmc=None, suffix=""):
    """tfmc's `fmt` of `model`; fmt None: the checkpoint's own (a GGUF
    file's formats). `tfmc`: another build's compiler (its executables
    named with `suffix`)."""
    exe = os.path.join(work, (f"{kind}-{fmt}" if fmt else
                              os.path.basename(model).replace(".gguf", "-tfmc")) + suffix)
    dtype = [f"--weights-dtype={fmt}"] if fmt else []
    seconds, rss = run_measured([tfmc or os.path.join(ROOT, "build", "bin", "tfmc"),
                                 model, "-q", "-o", exe] + dtype)
    return exe, {"compile_seconds": seconds, "compile_peak_rss": rss,
                 "size": os.path.getsize(exe)}


def run_tfmc(exe, prompt, new, vocab):
    out = subprocess.run([exe, "--tokens", prompt_ids(prompt, vocab), "-n", str(new),
                          "--print-ids", "--ignore-eos", "--stats", "--warmup", "1"],
                         capture_output=True, text=True, check=True)
    return json.loads(out.stderr.strip().splitlines()[-1])


def tfmc_cell(exe, args, vocab, work):
    before = read_bandwidth(work)
    decode = run_tfmc(exe, args.prompt, args.new, vocab)
    after = read_bandwidth(work)
    prefill = run_tfmc(exe, args.prefill, 1, vocab)
    return {"decode": decode["decode_tokens_per_s"],
            "prefill": prefill["prefill_tokens_per_s"],
            "bytes": decode["weight_bytes_per_token"],
            "bandwidth": (before + after) / 2}


def write_gguf(llama_src, model, path, fmt, eos=2):
    """The model's weights as a GGUF file of llama.cpp's LLaMA (F32 or
    BF16), written with llama.cpp's own gguf-py; a vocabulary of
    placeholder pieces, since the weights are random. A Mixtral's experts
    as llama.cpp's converter writes them: the router as ffn_gate_inp, each
    layer's experts stacked in ffn_{gate,up,down}_exps [experts, rows,
    columns], expert_count and expert_used_count. `eos`: its end token
    (a run that cannot ignore it, llama-speculative's, names one the
    random weights are unlikely to choose)."""
    sys.path.insert(0, os.path.join(llama_src, "gguf-py"))
    import gguf  # noqa: E402
    import numpy as np  # noqa: E402
    with open(os.path.join(model, "config.json")) as f:
        c = json.load(f)
    with open(os.path.join(model, "model.safetensors"), "rb") as f:
        size = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(size))
        base = 8 + size
    writer = gguf.GGUFWriter(path, "llama")
    heads, kv = c["num_attention_heads"], c["num_key_value_heads"]
    writer.add_context_length(c["max_position_embeddings"])
    writer.add_embedding_length(c["hidden_size"])
    writer.add_block_count(c["num_hidden_layers"])
    writer.add_feed_forward_length(c["intermediate_size"])
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv)
    writer.add_layer_norm_rms_eps(c["rms_norm_eps"])
    writer.add_rope_freq_base(c["rope_theta"])
    writer.add_rope_dimension_count(c["hidden_size"] // heads)
    writer.add_file_type(gguf.LlamaFileType.MOSTLY_BF16 if fmt == "BF16"
                         else gguf.LlamaFileType.ALL_F32)
    experts = c.get("num_local_experts", 0)
    if experts:
        writer.add_expert_count(experts)
        writer.add_expert_used_count(c["num_experts_per_tok"])
    # <unk>, <s>, </s>, the 256 byte tokens (llama.cpp's SPM tokenizer
    # falls back on them for any text, a newline included), placeholders.
    vocab = c["vocab_size"]
    pieces = ["<unk>", "<s>", "</s>"] + [f"<0x{b:02X}>" for b in range(256)]
    types = ([gguf.TokenType.UNKNOWN, gguf.TokenType.CONTROL,
              gguf.TokenType.CONTROL] + [gguf.TokenType.BYTE] * 256)
    pieces += [f"<t{i}>" for i in range(len(pieces), vocab)]
    types += [gguf.TokenType.NORMAL] * (vocab - len(types))
    writer.add_tokenizer_model("llama")
    writer.add_token_list([piece.encode() for piece in pieces])
    writer.add_token_scores([0.0] * vocab)
    writer.add_token_types(types)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(eos)
    data = np.memmap(os.path.join(model, "model.safetensors"), dtype=np.uint8,
                     mode="r")

    def read(name):
        entry = header[name]
        begin, end = entry["data_offsets"]
        raw = data[base + begin:base + end]
        if entry["dtype"] == "BF16":
            values = (raw.view(np.uint16).astype(np.uint32) << 16).view(np.float32)
        else:
            values = raw.view(np.float32)
        return values.reshape(entry["shape"])

    tensors = []
    for name in header:
        if name == "__metadata__" or ".experts." in name:
            continue
        tensors.append((gguf_name(name), read(name)))
        if name.endswith("block_sparse_moe.gate.weight"):
            layer = name.split(".")[2]
            moe = f"model.layers.{layer}.block_sparse_moe.experts"
            for part, target in (("w1", "ffn_gate_exps"), ("w3", "ffn_up_exps"),
                                 ("w2", "ffn_down_exps")):
                tensors.append((f"blk.{layer}.{target}.weight", np.stack(
                    [read(f"{moe}.{e}.{part}.weight") for e in range(experts)])))
    for target, values in tensors:
        # llama.cpp's LLaMA permutes Q and K rows to its rotary layout
        # (convert_hf_to_gguf's LlamaModel.permute).
        if target.endswith(("attn_q.weight", "attn_k.weight")):
            n = heads if target.endswith("attn_q.weight") else kv
            values = (values.reshape(n, 2, values.shape[0] // n // 2, -1)
                      .swapaxes(1, 2).reshape(values.shape))
        if fmt == "BF16" and values.ndim >= 2:
            bits = np.ascontiguousarray(values).view(np.uint32)
            writer.add_tensor(target, (bits >> 16).astype(np.uint16),
                              raw_dtype=gguf.GGMLQuantizationType.BF16)
        else:
            writer.add_tensor(target, np.ascontiguousarray(values, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def gguf_decode_bytes(llama_src, path):
    """Bytes of tensors one decode step reads: all but the token table
    (of which it reads one row), stacked experts by the share a token is
    routed to (expert_used_count / expert_count), as tfmc's --stats counts
    them."""
    sys.path.insert(0, os.path.join(llama_src, "gguf-py"))
    import gguf  # noqa: E402
    reader = gguf.GGUFReader(path)
    share = 1.0
    count = reader.fields.get("llama.expert_count")
    used = reader.fields.get("llama.expert_used_count")
    if count and used:
        share = int(used.parts[-1][0]) / int(count.parts[-1][0])
    return sum(int(t.n_bytes) * (share if "_exps." in t.name else 1.0)
               for t in reader.tensors if t.name != "token_embd.weight")


def prepare_llama_cpp(args, work, kind, model, peer_formats):
    """GGUF files of the peer formats asked for (F32 or BF16 written from
    the checkpoint, the others by llama-quantize from it)."""
    src = os.path.dirname(os.path.abspath(args.llama_cpp.rstrip("/")))
    source = "BF16" if kind in BF16_SHAPES else "F32"
    files = {}
    base = os.path.join(work, f"{kind}-{source}.gguf")
    if not os.path.exists(base):
        write_gguf(src, model, base, source)
    files[source] = base
    for fmt in peer_formats:
        path = os.path.join(work, f"{kind}-{fmt}.gguf")
        if fmt not in files and not os.path.exists(path):
            subprocess.run([os.path.join(args.llama_cpp, "bin", "llama-quantize"),
                            base, path, fmt], check=True,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        files[fmt] = path
    return src, files


def llama_cpp_cell(args, src, path, work):
    bench = os.path.join(args.llama_cpp, "bin", "llama-bench")
    before = read_bandwidth(work)
    decode = json.loads(subprocess.run(
        [bench, "-m", path, "-t", str(args.threads), "-p", "0", "-n", str(args.new),
         "-d", str(args.prompt), "-r", "2", "-o", "json"],
        capture_output=True, text=True, check=True).stdout)
    after = read_bandwidth(work)
    prefill = json.loads(subprocess.run(
        [bench, "-m", path, "-t", str(args.threads), "-p", str(args.prefill), "-n", "0",
         "-r", "2", "-o", "json"],
        capture_output=True, text=True, check=True).stdout)
    return {"decode": decode[0]["avg_ts"], "prefill": prefill[0]["avg_ts"],
            "bytes": gguf_decode_bytes(src, path),
            "bandwidth": (before + after) / 2}


def median_of(rounds, value):
    return statistics.median(value(cells) for cells in rounds)


def fraction_of_bound(cell):
    return cell["decode"] * cell["bytes"] / (cell["bandwidth"] * 1e9)


def summary(rounds, fmt, formats, with_peer):
    """Lines for one format: tfmc's medians, and with the peer its medians
    and the ratios of each round."""
    mine = ("tfmc", fmt)
    lines = [f"  tfmc {fmt:5} decode {median_of(rounds, lambda c: c[mine]['decode']):7.1f}"
             f" ({median_of(rounds, lambda c: fraction_of_bound(c[mine])):.0%} of bound)"
             f"  prefill {median_of(rounds, lambda c: c[mine]['prefill']):7.1f}"]
    if fmt != "f32" and "f32" in formats:
        ratio = median_of(rounds, lambda c: c[mine]["decode"] / c[("tfmc", "f32")]["decode"])
        lines[0] += f"  decode / tfmc f32 {ratio:.2f}"
    if with_peer:
        peer = ("llama.cpp", PEER_FORMAT[fmt])
        decode = [c[mine]["decode"] / c[peer]["decode"] for c in rounds]
        prefill = [c[mine]["prefill"] / c[peer]["prefill"] for c in rounds]
        lines.append(f"  llama.cpp {peer[1]:5} decode {median_of(rounds, lambda c: c[peer]['decode']):7.1f}"
                     f" ({median_of(rounds, lambda c: fraction_of_bound(c[peer])):.0%} of bound)"
                     f"  prefill {median_of(rounds, lambda c: c[peer]['prefill']):7.1f}")
        lines.append(f"  tfmc / llama.cpp: decode {statistics.median(decode):.2f}"
                     f" (rounds {', '.join(f'{r:.2f}' for r in decode)}), prefill "
                     f"{statistics.median(prefill):.2f}"
                     f" (rounds {', '.join(f'{r:.2f}' for r in prefill)})")
    return "\n".join(lines)


def gguf_summary(rounds, fmt):
    """tfmc and llama.cpp on the same GGUF file (and the baseline tfmc's
    compile of it, where there is one)."""
    mine, peer, base = ("tfmc gguf", fmt), ("llama.cpp", fmt), ("tfmc base", fmt)
    decode = [c[mine]["decode"] / c[peer]["decode"] for c in rounds]
    prefill = [c[mine]["prefill"] / c[peer]["prefill"] for c in rounds]
    against_base = ""
    if base in rounds[0]:
        ratios = [c[mine]["decode"] / c[base]["decode"] for c in rounds]
        against_base = (
            f"\n    baseline tfmc decode {median_of(rounds, lambda c: c[base]['decode']):7.1f}"
            f" ({median_of(rounds, lambda c: c[base]['bytes']) / 1e6:.0f} MB/token against"
            f" {median_of(rounds, lambda c: c[mine]['bytes']) / 1e6:.0f}),"
            f" prefill {median_of(rounds, lambda c: c[base]['prefill']):7.1f};"
            f" tfmc / baseline decode {statistics.median(ratios):.2f}"
            f" (rounds {', '.join(f'{r:.2f}' for r in ratios)})")
    return (f"  {fmt} file: tfmc decode {median_of(rounds, lambda c: c[mine]['decode']):7.1f}"
            f" ({median_of(rounds, lambda c: fraction_of_bound(c[mine])):.0%} of bound)"
            f" prefill {median_of(rounds, lambda c: c[mine]['prefill']):7.1f};"
            f" llama.cpp decode {median_of(rounds, lambda c: c[peer]['decode']):7.1f}"
            f" prefill {median_of(rounds, lambda c: c[peer]['prefill']):7.1f};"
            f" tfmc / llama.cpp decode {statistics.median(decode):.2f},"
            f" prefill {statistics.median(prefill):.2f}" + against_base)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--work", default="/tmp/tfm-bench-formats")
    parser.add_argument("--models", default="llama,tinyllama")
    parser.add_argument("--formats", default="f32,bf16,int8,int4",
                        help="of f32, bf16, f16, int8, int4")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--prompt", type=int, default=128)
    parser.add_argument("--new", type=int, default=128,
                        help="tokens decoded per run (64 lasted 0.3 s on the 124M int8 "
                        "and a host hiccup moved a cell by a fifth)")
    parser.add_argument("--prefill", type=int, default=512)
    parser.add_argument("--llama-cpp", help="llama.cpp's CMake build directory")
    parser.add_argument("--threads", type=int, default=2,
                        help="threads of every engine and of the bandwidth "
                             "measurement (run under taskset to pin them)")
    parser.add_argument("--gguf", action="store_true",
                        help="also compile llama.cpp's GGUF files with tfmc")
    parser.add_argument("--gguf-formats", default=",".join(GGUF_FORMATS),
                        help="the llama.cpp files --gguf compiles")
    parser.add_argument("--baseline-tfmc", metavar="PATH",
                        help="another build's tfmc, compiling the --gguf files too")
    args = parser.parse_args()
    formats = [fmt for fmt in args.formats.split(",") if fmt]
    gguf_formats = [fmt for fmt in args.gguf_formats.split(",") if fmt]
    unknown = [fmt for fmt in formats if fmt not in PEER_FORMAT]
    if unknown:
        parser.error(f"--formats: unknown {', '.join(unknown)} "
                     f"(known: {', '.join(PEER_FORMAT)})")
    # tfmc's runtime, the bandwidth probe (OpenMP) and OpenBLAS inside it
    # read these; llama-bench gets -t.
    for variable in ("TFM_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        os.environ[variable] = str(args.threads)
    os.makedirs(args.work, exist_ok=True)
    limits = hardware_limits(args.work)
    print(f"machine: {json.dumps(limits)}", flush=True)
    for kind in args.models.split(","):
        model = make_model(args.work, kind)
        with open(os.path.join(model, "config.json")) as f:
            vocab = json.load(f)["vocab_size"]
        engines = {}
        for fmt in formats:
            exe, built = compile_tfmc(args.work, kind, model, fmt)
            print(f"{kind} tfmc {fmt}: compiled in {built['compile_seconds']:.1f} s, "
                  f"peak RSS {built['compile_peak_rss'] / 2**20:.0f} MiB, "
                  f"{built['size'] / 2**20:.0f} MiB", flush=True)
            engines[("tfmc", fmt)] = lambda exe=exe: tfmc_cell(exe, args, vocab, args.work)
        gguf = args.gguf and args.llama_cpp
        if args.llama_cpp:
            peers = [PEER_FORMAT[fmt] for fmt in formats]
            src, files = prepare_llama_cpp(
                args, args.work, kind, model,
                peers + [f for f in gguf_formats if gguf and f not in peers])
            for peer in peers + (gguf_formats if gguf else []):
                engines[("llama.cpp", peer)] = (
                    lambda path=files[peer]: llama_cpp_cell(args, src, path, args.work))
        for fmt in gguf_formats if gguf else []:
            for engine, tfmc, suffix in [("tfmc gguf", None, "")] + (
                    [("tfmc base", args.baseline_tfmc, "-baseline")]
                    if args.baseline_tfmc else []):
                exe, built = compile_tfmc(args.work, kind, files[fmt], None, tfmc, suffix)
                print(f"{kind} {engine} of llama.cpp's {fmt} file: compiled in "
                      f"{built['compile_seconds']:.1f} s, peak RSS "
                      f"{built['compile_peak_rss'] / 2**20:.0f} MiB", flush=True)
                engines[(engine, fmt)] = lambda exe=exe: tfmc_cell(exe, args, vocab, args.work)
        rounds = []
        for r in range(args.rounds):
            cells = {key: run() for key, run in engines.items()}
            rounds.append(cells)
            for (engine, fmt), cell in cells.items():
                bound = cell["bandwidth"] * 1e9 / cell["bytes"]
                print(f"{kind} round {r + 1} {engine:9} {fmt:5}: decode "
                      f"{cell['decode']:7.1f} tok/s ({cell['decode'] / bound:4.0%} of "
                      f"{bound:.0f} at {cell['bandwidth']:.1f} GB/s, "
                      f"{cell['bytes'] / 1e6:.0f} MB/token), prefill "
                      f"{cell['prefill']:7.1f} tok/s", flush=True)
        print(f"\n{kind}: medians over {args.rounds} rounds (ratios within each round)")
        for fmt in formats:
            print(summary(rounds, fmt, formats, args.llama_cpp))
        for fmt in gguf_formats if gguf else []:
            print(gguf_summary(rounds, fmt))

if __name__ == "__main__":
    main()
