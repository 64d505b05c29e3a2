#!/usr/bin/env python3
"""bench/qwen35_peer.py: tfmc against llama.cpp on one GGUF file of
Qwen3.5's architecture (llama.cpp's qwen35): Gated DeltaNet layers, three
in four, between layers of gated full attention.

The model is Qwen3.5-0.8B's widths (hidden 1024; 8 heads of 256, 2 KV
heads, RoPE on 64 dims; 16 key and 16 value heads of 128 in the DeltaNet
layers, a convolution of 4; an MLP of 3584; a tied head over the real
248320-token vocabulary), cut to --layers layers, random weights, Q8_0
(written with llama.cpp's gguf-py, whose NumPy quantizer makes llama.cpp's
Q8_0 blocks; norms and the DeltaNet's small tensors f32). Both engines run
the same file on --threads threads, round robin for --rounds rounds, and
report prefill tokens/s of a --prefill-token prompt, how prefill scales
from --prefill / 4 tokens to --prefill (linear: the same tokens/s), and
decode tokens/s of --decode tokens after a --decode-after-token prompt
(tfmc's @decode, the recurrent states and the KV rows cached; llama.cpp's
llama-bench -n with -d), beside the bound the machine's read bandwidth
sets on decode by the weights one token reads (the states, 1.07 MiB a
DeltaNet layer read and written, and the KV rows add a few percent).

    /usr/bin/python3 bench/qwen35_peer.py --llama-cpp LLAMA_BUILD [--layers 8]

LLAMA_BUILD is a CMake build of llama.cpp with llama-bench (see
bench/compare_weight_formats.py for building it from node-llama-cpp's
bundle); its source's gguf-py writes the file.
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

HIDDEN, HEADS, KV_HEADS, HEAD_DIM, ROPE = 1024, 8, 2, 256, 64
KEY_HEADS, VALUE_HEADS, STATE, CONV, FFN = 16, 16, 128, 4, 3584
VOCAB = 248320


def write_model(llama_src, path, layers, seed=0):
    """The random Q8_0 qwen35 file: every fourth layer attends."""
    sys.path.insert(0, os.path.join(llama_src, "gguf-py"))
    import gguf  # noqa: E402
    import numpy as np  # noqa: E402
    rng = np.random.default_rng(seed)
    writer = gguf.GGUFWriter(path, "qwen35")
    a = "qwen35."
    for key, value in {
            "context_length": 262144, "embedding_length": HIDDEN,
            "block_count": layers, "feed_forward_length": FFN,
            "attention.head_count": HEADS, "attention.head_count_kv": KV_HEADS,
            "attention.key_length": HEAD_DIM, "attention.value_length": HEAD_DIM,
            "rope.dimension_count": ROPE, "ssm.conv_kernel": CONV,
            "ssm.state_size": STATE, "ssm.group_count": KEY_HEADS,
            "ssm.time_step_rank": VALUE_HEADS,
            "ssm.inner_size": VALUE_HEADS * STATE,
            "full_attention_interval": 4}.items():
        writer.add_uint32(a + key, value)
    writer.add_array(a + "rope.dimension_sections", [11, 11, 10, 0])
    writer.add_float32(a + "attention.layer_norm_rms_epsilon", 1e-6)
    writer.add_float32(a + "rope.freq_base", 10000000.0)
    # Placeholder pieces: the weights are random.
    writer.add_tokenizer_model("llama")
    writer.add_token_list([f"<t{i}>".encode() for i in range(VOCAB)])
    writer.add_token_scores([0.0] * VOCAB)
    writer.add_token_types([gguf.TokenType.NORMAL] * VOCAB)
    writer.add_bos_token_id(1)
    writer.add_eos_token_id(2)

    def matrix(name, *shape, scale=0.02):
        values = rng.normal(0, scale, shape).astype(np.float32)
        writer.add_tensor(name, gguf.quants.quantize(values, gguf.GGMLQuantizationType.Q8_0),
                          raw_dtype=gguf.GGMLQuantizationType.Q8_0)

    def vector(name, values):
        writer.add_tensor(name, np.asarray(values, np.float32))

    conv_channels = 2 * KEY_HEADS * STATE + VALUE_HEADS * STATE
    matrix("token_embd.weight", VOCAB, HIDDEN)
    vector("output_norm.weight", np.ones(HIDDEN))
    for l in range(layers):
        b = f"blk.{l}."
        vector(b + "attn_norm.weight", np.ones(HIDDEN))
        vector(b + "post_attention_norm.weight", np.ones(HIDDEN))
        if (l + 1) % 4:
            matrix(b + "attn_qkv.weight", conv_channels, HIDDEN)
            matrix(b + "attn_gate.weight", VALUE_HEADS * STATE, HIDDEN)
            matrix(b + "ssm_beta.weight", VALUE_HEADS, HIDDEN)
            matrix(b + "ssm_alpha.weight", VALUE_HEADS, HIDDEN)
            vector(b + "ssm_dt.bias", rng.normal(1, 0.1, VALUE_HEADS))
            vector(b + "ssm_a", -rng.uniform(0.5, 4, VALUE_HEADS))
            vector(b + "ssm_conv1d.weight",
                   rng.normal(0, 0.3, (conv_channels, CONV)))
            vector(b + "ssm_norm.weight", np.ones(STATE))
            matrix(b + "ssm_out.weight", HIDDEN, VALUE_HEADS * STATE)
        else:
            matrix(b + "attn_q.weight", 2 * HEADS * HEAD_DIM, HIDDEN)
            matrix(b + "attn_k.weight", KV_HEADS * HEAD_DIM, HIDDEN)
            matrix(b + "attn_v.weight", KV_HEADS * HEAD_DIM, HIDDEN)
            matrix(b + "attn_output.weight", HIDDEN, HEADS * HEAD_DIM)
            vector(b + "attn_q_norm.weight", np.ones(HEAD_DIM))
            vector(b + "attn_k_norm.weight", np.ones(HEAD_DIM))
        matrix(b + "ffn_gate.weight", FFN, HIDDEN)
        matrix(b + "ffn_up.weight", FFN, HIDDEN)
        matrix(b + "ffn_down.weight", HIDDEN, FFN)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def tfmc_prefill(exe, tokens, threads):
    out = subprocess.run(
        [exe, "--tokens", prompt_ids(tokens, 32000), "-n", "1", "--ignore-eos",
         "--stats", "--warmup", "1"],
        capture_output=True, text=True, check=True,
        env=dict(os.environ, TFM_NUM_THREADS=str(threads)))
    return json.loads(out.stderr.strip().splitlines()[-1])["prefill_tokens_per_s"]


def tfmc_decode(exe, after, count, threads):
    """Decode tokens/s and the weight bytes one decoded token reads
    (--stats)."""
    out = subprocess.run(
        [exe, "--tokens", prompt_ids(after, 32000), "-n", str(count),
         "--ignore-eos", "--stats", "--warmup", "1"],
        capture_output=True, text=True, check=True,
        env=dict(os.environ, TFM_NUM_THREADS=str(threads)))
    stats = json.loads(out.stderr.strip().splitlines()[-1])
    return stats["decode_tokens_per_s"], stats["weight_bytes_per_token"]


def llama_prefill(bench, path, tokens, threads):
    return json.loads(subprocess.run(
        [bench, "-m", path, "-t", str(threads), "-r", "2", "-o", "json",
         "-p", str(tokens), "-n", "0"],
        capture_output=True, text=True, check=True).stdout)[0]["avg_ts"]


def llama_decode(bench, path, after, count, threads):
    return json.loads(subprocess.run(
        [bench, "-m", path, "-t", str(threads), "-r", "2", "-o", "json",
         "-p", "0", "-n", str(count), "-d", str(after)],
        capture_output=True, text=True, check=True).stdout)[0]["avg_ts"]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--llama-cpp", required=True, help="llama.cpp build dir")
    parser.add_argument("--work", default="/tmp/tfm-qwen35-bench")
    parser.add_argument("--layers", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--prefill", type=int, default=512)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--decode", type=int, default=64)
    parser.add_argument("--decode-after", type=int, default=512)
    args = parser.parse_args()
    os.makedirs(args.work, exist_ok=True)
    limits = hardware_limits(args.work)
    src = os.path.dirname(os.path.abspath(args.llama_cpp.rstrip("/")))
    path = os.path.join(args.work, f"qwen35-{args.layers}-q8_0.gguf")
    if not os.path.exists(path):
        write_model(src, path, args.layers)
    exe = os.path.join(args.work, "tfmc-model")
    if not os.path.exists(exe):  # compiled once per work directory
        subprocess.run([os.path.join(ROOT, "build", "bin", "tfmc"), path, "-q",
                        "-o", exe], check=True)
    bench = os.path.join(args.llama_cpp, "bin", "llama-bench")
    short = args.prefill // 4
    rounds = []
    for _ in range(args.rounds):
        rounds.append({
            "tfmc": tfmc_prefill(exe, args.prefill, args.threads),
            "tfmc_short": tfmc_prefill(exe, short, args.threads),
            "llama": llama_prefill(bench, path, args.prefill, args.threads),
            "llama_short": llama_prefill(bench, path, short, args.threads),
            "tfmc_decode": tfmc_decode(exe, args.decode_after, args.decode,
                                       args.threads),
            "llama_decode": llama_decode(bench, path, args.decode_after,
                                         args.decode, args.threads)})
    print(f"machine: read {limits.get('read_gb_per_s', 0):.1f} GB/s at start; "
          f"Qwen3.5-0.8B widths, {args.layers} layers, Q8_0, "
          f"{args.threads} threads")
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


if __name__ == "__main__":
    main()
